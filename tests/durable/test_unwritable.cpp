// A durable acemq-broker whose data file cannot be written says why, naming the cause an
// operator can act on, not SQLite's "disk I/O error". The read-only file system is a tmpfs
// mounted in a mount namespace of the test's own (unshare -rm: no real root needed, and
// nothing outside the namespace sees it).
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "../support/temp_dir.hpp"

namespace {

struct Ran {
    int status;
    std::string output;
};

Ran run_shell(const std::string& script, const std::string& output_file) {
    const std::string command = "unshare -rm sh -c '" + script + "' > '" + output_file + "' 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream in(output_file);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
            std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>())};
}

}  // namespace

TEST_CASE("acemq-broker on a read-only file system names it, for a new data file and for an existing one") {
    testing_support::TempDir directory("unwritable");
    const std::string mount = (directory.path() / "disk").string();
    const std::string out = (directory.path() / "out.txt").string();
    const std::string broker = ACEMQ_BROKER_PROGRAM;
    REQUIRE(std::system(("mkdir -p '" + mount + "'").c_str()) == 0);
    // A broker that did start (the failure) is ended by the timeout, with exit status 124.
    const std::string start = "timeout 10 " + broker + " --listen tcp://127.0.0.1:0 --data " + mount + "/";

    SECTION("a new file") {
        const Ran ran = run_shell("mount -t tmpfs -o ro,size=1m tmpfs " + mount + " && " + start + "new.db", out);
        INFO(ran.output);
        CHECK(ran.status == 1);
        CHECK_THAT(ran.output, Catch::Contains("new.db") && Catch::Contains("mounted read-only"));
    }
    SECTION("an existing file") {
        // The first broker makes old.db and says so in its ready file; then it stops cleanly.
        const std::string ready = mount + "/ready";
        const Ran ran = run_shell("mount -t tmpfs -o size=1m tmpfs " + mount + " && (" + start +
                                      "old.db --ready-file " + ready + " & for i in $(seq 200); do [ -s " + ready +
                                      " ] && break; sleep 0.1; done; kill -TERM $!; wait) && test -s " + mount +
                                      "/old.db && mount -o remount,ro " + mount + " && " + start + "old.db",
                                  out);
        INFO(ran.output);
        CHECK(ran.status == 1);  // not 0 (a broker on a read-only file), nor the shell's own failures
        CHECK_THAT(ran.output, Catch::Contains("serving"));  // the first broker did make the file
        CHECK_THAT(ran.output,
                   Catch::Contains("old.db") && Catch::Contains("mounted read-only") && !Catch::Contains("damaged"));
    }
}
