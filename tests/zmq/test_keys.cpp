// CurveZMQ key files (transports/zmq/keys.hpp): generate_key_pair writes a pair the readers
// accept, never overwrites one, and the readers refuse what is not a key or is exposed,
// naming the file and never its content.
#include <catch2/catch.hpp>

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "../support/temp_dir.hpp"
#include "../support/thrown.hpp"
#include "zmq/keys.hpp"

namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;
using testing_support::what_of;

using testing_support::contents;

void write_file(const fs::path& file, const std::string& text, fs::perms perms) {
    std::ofstream(file, std::ios::binary) << text;
    fs::permissions(file, perms);
}

fs::perms perms_of(const fs::path& file) { return fs::status(file).permissions(); }

constexpr auto owner_rw = fs::perms::owner_read | fs::perms::owner_write;

// The text of the InvalidArgument that reading the secret key of `files` (in `dir`) throws.
// Root reads any file, so as root the key is read in a child that has given up root for
// nobody's ids (65534), where it meets the permission check any other user meets. The
// directory is opened to others for the child to reach the files, and the child reads the
// public key first, so a refusal is the secret key file's own. The child writes the text,
// or what went wrong instead, to a pipe, and exits 0 only for the refusal.
std::string unreadable_key_message(const fs::path& dir, const acemq::zmq::KeyFiles& files) {
    const auto read_secret = [&] { acemq::zmq::read_secret_key(files.secret_key); };
    if (geteuid() != 0) return what_of<acemq::InvalidArgument>(read_secret);
    constexpr uid_t nobody = 65534;
    fs::permissions(dir, fs::perms::others_exec, fs::perm_options::add);
    int ends[2];
    REQUIRE(pipe(ends) == 0);
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(ends[0]);
        std::string text;
        int code = 1;
        if (setgroups(0, nullptr) != 0 || setgid(nobody) != 0 || setuid(nobody) != 0) {
            text = "could not give up root: " + std::string(std::strerror(errno));
        } else {
            try {
                (void)acemq::zmq::read_public_key(files.public_key);
                read_secret();
                text = "nobody read the secret key";
            } catch (const acemq::InvalidArgument& error) {
                text = error.what();
                code = 0;
            }
        }
        const bool written = write(ends[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
        _exit(written ? code : 1);
    }
    close(ends[1]);
    std::string text;
    char buffer[512];
    for (ssize_t got = 0; (got = read(ends[0], buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(got));
    close(ends[0]);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    INFO("the unprivileged child: " << text);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return text;
}

}  // namespace

TEST_CASE("generate_key_pair writes a .pub and a 0600 .key that read back as a matching pair") {
    TempDir dir;
    const auto files = acemq::zmq::generate_key_pair(dir.path() / "broker");
    CHECK(files.public_key == dir.path() / "broker.pub");
    CHECK(files.secret_key == dir.path() / "broker.key");
    REQUIRE(fs::is_regular_file(files.public_key));
    REQUIRE(fs::is_regular_file(files.secret_key));
    CHECK(perms_of(files.secret_key) == owner_rw);

    const std::string public_key = acemq::zmq::read_public_key(files.public_key);
    const std::string secret_key = acemq::zmq::read_secret_key(files.secret_key);
    CHECK(public_key.size() == 40);
    CHECK(secret_key.size() == 40);
    CHECK(public_key != secret_key);
    CHECK(contents(files.public_key) == public_key + "\n");
    CHECK(acemq::zmq::public_key_of(secret_key) == public_key);

    const auto other = acemq::zmq::generate_key_pair(dir.path() / "client");
    CHECK(acemq::zmq::read_public_key(other.public_key) != public_key);
}

TEST_CASE("generate_key_pair never overwrites a key file and leaves nothing behind when one exists") {
    TempDir dir;
    const auto first = acemq::zmq::generate_key_pair(dir.path() / "broker");
    const std::string public_before = contents(first.public_key);
    const std::string secret_before = contents(first.secret_key);

    const std::string message =
        what_of<acemq::InvalidArgument>([&] { acemq::zmq::generate_key_pair(dir.path() / "broker"); });
    CHECK_THAT(message, Catch::Contains((dir.path() / "broker.pub").string()));
    CHECK_THAT(message, Catch::Contains("never overwritten"));
    CHECK(contents(first.public_key) == public_before);
    CHECK(contents(first.secret_key) == secret_before);

    SECTION("only the .key exists: it is named, kept, and no .pub is left behind") {
        fs::remove(first.public_key);
        const std::string only_key =
            what_of<acemq::InvalidArgument>([&] { acemq::zmq::generate_key_pair(dir.path() / "broker"); });
        CHECK_THAT(only_key, Catch::Contains((dir.path() / "broker.key").string()));
        CHECK_FALSE(fs::exists(first.public_key));
        CHECK(contents(first.secret_key) == secret_before);
    }
}

TEST_CASE("generate_key_pair names a directory it cannot write into") {
    TempDir dir;
    const fs::path base = dir.path() / "missing" / "broker";
    const std::string message = what_of<acemq::InvalidArgument>([&] { acemq::zmq::generate_key_pair(base); });
    CHECK_THAT(message, Catch::Contains(base.string() + ".pub"));
}

TEST_CASE("a secret key file its group or others can read is refused") {
    TempDir dir;
    const auto files = acemq::zmq::generate_key_pair(dir.path() / "broker");
    const std::string secret_key = contents(files.secret_key);

    fs::permissions(files.secret_key, owner_rw | fs::perms::group_read | fs::perms::others_read);
    std::string message = what_of<acemq::InvalidArgument>([&] { acemq::zmq::read_secret_key(files.secret_key); });
    CHECK_THAT(message, Catch::Contains(files.secret_key.string()));
    CHECK_THAT(message, Catch::Contains("readable by others; chmod 600 it"));
    CHECK_THAT(message, !Catch::Contains(secret_key.substr(0, 40)));

    fs::permissions(files.secret_key, owner_rw | fs::perms::group_read);
    message = what_of<acemq::InvalidArgument>([&] { acemq::zmq::read_secret_key(files.secret_key); });
    CHECK_THAT(message, Catch::Contains("chmod 600"));

    // A public key is public: the same mode is fine for the .pub.
    CHECK(perms_of(files.public_key) != owner_rw);
    CHECK(acemq::zmq::read_public_key(files.public_key).size() == 40);
}

TEST_CASE("key files that do not hold a Z85 key are refused without quoting them") {
    TempDir dir;
    const fs::path file = dir.path() / "bad.key";
    const std::string garbage = GENERATE(std::string("not a key at all, and secret-looking text"), std::string(""),
                                         std::string(39, 'a'), std::string(41, 'a'), std::string(40, ' ') + "\n",
                                         std::string(20, 'a') + " " + std::string(19, 'a'), std::string(39, 'a') + "\"",
                                         // Every character is in the alphabet, but the groups overflow 32 bits.
                                         std::string(40, '#'), std::string(5000, 'a'));
    write_file(file, garbage, owner_rw);
    for (const bool secret : {true, false}) {
        const std::string message = what_of<acemq::InvalidArgument>([&] {
            if (secret)
                acemq::zmq::read_secret_key(file);
            else
                acemq::zmq::read_public_key(file);
        });
        CHECK_THAT(message, Catch::Contains(file.string()));
        CHECK_THAT(message, Catch::Contains("does not hold a key"));
        if (garbage.size() >= 8) CHECK_THAT(message, !Catch::Contains(garbage.substr(0, 8)));
    }
}

TEST_CASE("trailing whitespace after a key is tolerated, leading is not") {
    TempDir dir;
    const auto files = acemq::zmq::generate_key_pair(dir.path() / "broker");
    const std::string key = acemq::zmq::read_public_key(files.public_key);

    write_file(files.public_key, key + " \t\r\n\n", owner_rw);
    CHECK(acemq::zmq::read_public_key(files.public_key) == key);
    write_file(files.public_key, key, owner_rw);
    CHECK(acemq::zmq::read_public_key(files.public_key) == key);
    write_file(files.public_key, " " + key, owner_rw);
    CHECK_THROWS_AS(acemq::zmq::read_public_key(files.public_key), acemq::InvalidArgument);
}

TEST_CASE("a missing key file or a directory is named") {
    TempDir dir;
    const fs::path missing = dir.path() / "nobody.pub";
    std::string message = what_of<acemq::InvalidArgument>([&] { acemq::zmq::read_public_key(missing); });
    CHECK_THAT(message, Catch::Contains(missing.string()));
    CHECK_THAT(message, Catch::Contains("does not exist"));

    message = what_of<acemq::InvalidArgument>([&] { acemq::zmq::read_secret_key(dir.path()); });
    CHECK_THAT(message, Catch::Contains(dir.path().string()));
}

TEST_CASE("an unreadable key file is named") {
    TempDir dir;
    const auto files = acemq::zmq::generate_key_pair(dir.path() / "broker");
    fs::permissions(files.secret_key, fs::perms::none);
    const std::string message = unreadable_key_message(dir.path(), files);
    CHECK_THAT(message, Catch::Contains(files.secret_key.string()));
    CHECK_THAT(message, Catch::Contains("cannot read"));
    CHECK_THAT(message, Catch::Contains("Permission denied"));
}

TEST_CASE("public_key_of refuses what is not a secret key") {
    CHECK_THROWS_AS(acemq::zmq::public_key_of(""), acemq::InvalidArgument);
    CHECK_THROWS_AS(acemq::zmq::public_key_of(std::string(40, '#')), acemq::InvalidArgument);
    CHECK_THROWS_AS(acemq::zmq::public_key_of(std::string(41, 'a')), acemq::InvalidArgument);
}
