// The acemq-broker program (tools/acemq-broker.cpp), run as a user runs it: its command line,
// its exit status, what it prints, --generate-keys, --ready-file and a clean stop on SIGTERM
// and SIGINT; its JSON log lines, readiness told to systemd (a NOTIFY_SOCKET of the test's),
// and its Prometheus endpoint. ACEMQ_BROKER_PROGRAM is its path (tests/zmq/meson.build sets it).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include <acemq/bus.hpp>
#include <acemq/config.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/zmq.hpp>

#include "../support/temp_dir.hpp"
#include "zmq/keys.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing_support::TempDir;

// Every wait is bounded; a program that overruns one is killed and the test fails.
constexpr auto exit_bound = 20s;
constexpr auto ready_bound = 20s;

std::string broker_program() {
    const char* path = std::getenv("ACEMQ_BROKER_PROGRAM");
    if (path == nullptr || *path == '\0') FAIL("ACEMQ_BROKER_PROGRAM is not set: give the path of acemq-broker");
    return path;
}

using testing_support::contents;

// acemq-broker with `arguments`, its stdout and stderr going to files in `dir`.
class Broker {
public:
    Broker(const TempDir& dir, std::vector<std::string> arguments)
        : out_(dir.path() / ("out-" + std::to_string(++runs_))), err_(dir.path() / ("err-" + std::to_string(runs_))) {
        std::vector<std::string> all{broker_program()};
        all.insert(all.end(), arguments.begin(), arguments.end());
        std::vector<char*> argv;
        for (std::string& argument : all) argv.push_back(argument.data());
        argv.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ < 0) FAIL("fork failed");
        if (pid_ == 0) {
            const int out = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            const int err = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(126);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
    }
    ~Broker() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    Broker(const Broker&) = delete;
    Broker& operator=(const Broker&) = delete;

    // The exit status, once it has exited; nothing while it runs.
    std::optional<int> poll() {
        if (status_) return status_;
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
        pid_ = -1;
        if (!WIFEXITED(status)) FAIL("acemq-broker did not exit but was killed by signal " << WTERMSIG(status));
        status_ = WEXITSTATUS(status);
        return status_;
    }

    int wait_exit() {
        const auto deadline = std::chrono::steady_clock::now() + exit_bound;
        while (!poll()) {
            if (std::chrono::steady_clock::now() > deadline) {
                ::kill(pid_, SIGKILL);
                FAIL("acemq-broker did not exit in time; killed. stderr: " << err());
            }
            std::this_thread::sleep_for(10ms);
        }
        return *status_;
    }

    // The lines of `ready_file`, once it has appeared.
    std::vector<std::string> wait_ready(const fs::path& ready_file) {
        const auto deadline = std::chrono::steady_clock::now() + ready_bound;
        while (!fs::exists(ready_file)) {
            if (poll()) FAIL("acemq-broker exited with " << *status_ << " before it was ready. stderr: " << err());
            if (std::chrono::steady_clock::now() > deadline) FAIL("acemq-broker wrote no ready file in time");
            std::this_thread::sleep_for(10ms);
        }
        std::vector<std::string> lines;
        std::ifstream in(ready_file);
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        return lines;
    }

    void signal(int number) { ::kill(pid_, number); }
    std::string out() const { return contents(out_); }
    std::string err() const { return contents(err_); }

private:
    static inline int runs_ = 0;
    fs::path out_;
    fs::path err_;
    pid_t pid_ = -1;
    std::optional<int> status_;
};

// A port of the tcp endpoint, or 0 when the endpoint is not tcp://127.0.0.1:PORT.
int port_of(const std::string& endpoint) {
    const std::string prefix = "tcp://127.0.0.1:";
    if (!endpoint.starts_with(prefix)) return 0;
    return std::atoi(endpoint.c_str() + prefix.size());
}

}  // namespace

TEST_CASE("--help and --version print and exit 0") {
    TempDir dir;
    Broker help(dir, {"--help"});
    CHECK(help.wait_exit() == 0);
    CHECK_THAT(help.out(), Catch::Contains("--listen") && Catch::Contains("--curve-secret"));

    Broker version(dir, {"--version"});
    CHECK(version.wait_exit() == 0);
    CHECK_THAT(version.out(), Catch::Contains(ACEMQ_VERSION));
}

TEST_CASE("a bad command line exits 2 naming what was wrong") {
    TempDir dir;
    using Case = std::pair<std::vector<std::string>, std::string>;
    const auto [arguments, named] =
        GENERATE(Case{{"--bogus"}, "--bogus"}, Case{{"--listen"}, "--listen"},
                 Case{{"--curve-secret", "x.key"}, "--curve-allow"}, Case{{"--curve-allow", "x.pub"}, "--curve-secret"},
                 Case{{"--heartbeat-ms", "soon"}, "--heartbeat-ms"},
                 Case{{"--max-frame-bytes", "0"}, "--max-frame-bytes"}, Case{{"--help=yes"}, "--help"});
    Broker broker(dir, arguments);
    CHECK(broker.wait_exit() == 2);
    CHECK_THAT(broker.err(), Catch::Contains(named) && Catch::Contains("see --help"));
}

TEST_CASE("--generate-keys writes BASE.pub and a 0600 BASE.key, prints the paths and never the keys") {
    TempDir dir;
    const fs::path base = dir.path() / "broker";
    Broker generate(dir, {"--generate-keys", base.string()});
    REQUIRE(generate.wait_exit() == 0);
    const fs::path public_file = dir.path() / "broker.pub";
    const fs::path secret_file = dir.path() / "broker.key";
    REQUIRE(fs::is_regular_file(public_file));
    REQUIRE(fs::is_regular_file(secret_file));
    CHECK(fs::status(secret_file).permissions() == (fs::perms::owner_read | fs::perms::owner_write));

    const std::string secret_key = acemq::zmq::read_secret_key(secret_file);
    const std::string public_key = acemq::zmq::read_public_key(public_file);
    CHECK(acemq::zmq::public_key_of(secret_key) == public_key);
    const std::string printed = generate.out() + generate.err();
    CHECK_THAT(printed, Catch::Contains(public_file.string()) && Catch::Contains(secret_file.string()));
    CHECK_THAT(printed, !Catch::Contains(secret_key) && !Catch::Contains(public_key));

    SECTION("a second run keeps the pair and exits 1") {
        Broker again(dir, {"--generate-keys", base.string()});
        CHECK(again.wait_exit() == 1);
        CHECK_THAT(again.err(), Catch::Contains(public_file.string()));
        CHECK(acemq::zmq::read_secret_key(secret_file) == secret_key);
    }
}

TEST_CASE("acemq-broker serves on the port it chose, writes it to the ready file and stops cleanly on a signal") {
    TempDir dir;
    const fs::path ready = dir.path() / "ready";
    const int stop_signal = GENERATE(SIGTERM, SIGINT);
    Broker broker(dir, {"--listen", "tcp://127.0.0.1:0", "--listen", "ipc://" + (dir.path() / "b.sock").string(),
                        "--ready-file", ready.string(), "--name", "program-test"});
    const auto endpoints = broker.wait_ready(ready);
    REQUIRE(endpoints.size() == 2);
    CHECK(port_of(endpoints[0]) > 0);
    CHECK(endpoints[1] == "ipc://" + (dir.path() / "b.sock").string());

    broker.signal(stop_signal);
    CHECK(broker.wait_exit() == 0);
    const std::string log = broker.err();
    CHECK_THAT(log, Catch::Contains(endpoints[0]) && Catch::Contains("CurveZMQ off"));
    CHECK_THAT(log, Catch::Contains(stop_signal == SIGTERM ? "stopped on SIGTERM" : "stopped on SIGINT"));
    CHECK_THAT(log, Catch::Contains("sessions open at stop 0"));
    CHECK_FALSE(fs::exists(ready));
}

TEST_CASE("acemq-broker exits 1 when it cannot bind, with the library's reason") {
    TempDir dir;
    const fs::path ready = dir.path() / "ready";
    Broker first(dir, {"--listen", "tcp://127.0.0.1:0", "--ready-file", ready.string()});
    const std::string endpoint = first.wait_ready(ready).at(0);

    Broker second(dir, {"--listen", endpoint});
    CHECK(second.wait_exit() == 1);
    CHECK_THAT(second.err(), Catch::Contains(endpoint));

    Broker remote(dir, {"--listen", "tcp://192.0.2.1:5680"});
    CHECK(remote.wait_exit() == 1);
    CHECK_THAT(remote.err(), Catch::Contains("--allow-remote"));

    first.signal(SIGTERM);
    CHECK(first.wait_exit() == 0);
}

TEST_CASE("acemq-broker that cannot bind leaves no data file behind") {
    TempDir dir;
    const fs::path ready = dir.path() / "ready";
    Broker first(dir, {"--listen", "tcp://127.0.0.1:0", "--ready-file", ready.string()});
    const std::string endpoint = first.wait_ready(ready).at(0);

    const fs::path data = dir.path() / "second.db";
    Broker second(dir, {"--listen", endpoint, "--data", data.string()});
    CHECK(second.wait_exit() == 1);
    CHECK_THAT(second.err(), Catch::Contains(endpoint));
    for (const auto& entry : fs::directory_iterator(dir.path()))
        CHECK_FALSE(entry.path().filename().string().starts_with("second.db"));

    first.signal(SIGTERM);
    CHECK(first.wait_exit() == 0);
}

TEST_CASE("acemq-broker --listen tcp://localhost:PORT binds the loopback address, and clients reach it as localhost") {
    TempDir dir;
    const fs::path ready = dir.path() / "ready";
    Broker broker(dir, {"--listen", "tcp://localhost:0", "--ready-file", ready.string()});
    const auto endpoints = broker.wait_ready(ready);
    REQUIRE(endpoints.size() == 1);
    const int port = port_of(endpoints[0]);
    REQUIRE(port > 0);
    auto transport =
        acemq::zmq::open("zmq+tcp://localhost:" + std::to_string(port), {.session = {.connect_timeout = 10s}});
    CHECK(transport->check_health(10s).status == acemq::Health::Status::up);
    transport->close();
    broker.signal(SIGTERM);
    CHECK(broker.wait_exit() == 0);
}

TEST_CASE("with CurveZMQ keys acemq-broker says Curve is on and never prints a key") {
    TempDir dir;
    const auto broker_keys = acemq::zmq::generate_key_pair(dir.path() / "broker");
    const auto client_keys = acemq::zmq::generate_key_pair(dir.path() / "client");
    const fs::path ready = dir.path() / "ready";
    Broker broker(dir, {"--listen", "tcp://127.0.0.1:0", "--ready-file", ready.string(), "--curve-secret",
                        broker_keys.secret_key.string(), "--curve-allow", client_keys.public_key.string()});
    broker.wait_ready(ready);
    broker.signal(SIGTERM);
    CHECK(broker.wait_exit() == 0);
    const std::string log = broker.out() + broker.err();
    CHECK_THAT(log, Catch::Contains("CurveZMQ on"));
    for (const auto& file : {broker_keys.secret_key, client_keys.public_key}) {
        const std::string key = contents(file).substr(0, 40);
        CHECK_THAT(log, !Catch::Contains(key));
    }

    SECTION("a secret key file others can read stops it at start") {
        fs::permissions(broker_keys.secret_key, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
        Broker exposed(dir, {"--listen", "tcp://127.0.0.1:0", "--curve-secret", broker_keys.secret_key.string(),
                             "--curve-allow", client_keys.public_key.string()});
        CHECK(exposed.wait_exit() == 1);
        CHECK_THAT(exposed.err(), Catch::Contains("chmod 600"));
    }
}

TEST_CASE("--help lists the exit codes and the operator's options") {
    TempDir dir;
    Broker help(dir, {"--help"});
    CHECK(help.wait_exit() == 0);
    CHECK_THAT(help.out(), Catch::Contains("Exit status:") && Catch::Contains("0  a clean stop") &&
                               Catch::Contains("2  a bad command line") && Catch::Contains("--no-management") &&
                               Catch::Contains("--log-format") && Catch::Contains("--metrics"));
    Broker bad(dir, {"--log-format", "xml"});
    CHECK(bad.wait_exit() == 2);
    CHECK_THAT(bad.err(), Catch::Contains("--log-format") && Catch::Contains("see --help"));
}

TEST_CASE("with --log-format json every line acemq-broker writes is a JSON object with time, level and component") {
    TempDir dir;
    const fs::path ready = dir.path() / "ready";
    Broker broker(dir, {"--listen", "tcp://127.0.0.1:0", "--ready-file", ready.string(), "--log-format", "json",
                        "--no-management"});
    const std::string endpoint = broker.wait_ready(ready).at(0);
    {
        auto transport = acemq::zmq::open("zmq+" + endpoint, {.session = {.name = "json-client"}});
        transport->close();
    }
    broker.signal(SIGTERM);
    CHECK(broker.wait_exit() == 0);
    std::istringstream lines(broker.err());
    std::vector<std::string> components, messages;
    for (std::string line; std::getline(lines, line);) {
        INFO(line);
        const acemq::Value parsed = acemq::JsonCodec().decode(std::as_bytes(std::span(line)), "application/json");
        REQUIRE(parsed.find("time") != nullptr);
        CHECK(parsed.find("time")->as_string().ends_with("Z"));
        REQUIRE(parsed.find("level") != nullptr);
        components.push_back(parsed.find("component")->as_string());
        messages.push_back(parsed.find("message")->as_string());
    }
    REQUIRE(messages.size() >= 4);  // serving, the session opened and closed, stopped
    CHECK(components.front() == "acemq-broker");
    CHECK_THAT(messages.front(), Catch::Contains(endpoint) && Catch::Contains("management commands refused"));
    CHECK(std::count(components.begin(), components.end(), "zmq-broker") >= 2);
    CHECK_THAT(messages.back(), Catch::Contains("stopped on SIGTERM"));
}

TEST_CASE("acemq-broker tells systemd READY=1 once its endpoint accepts, when the ready file appears") {
    TempDir dir;
    const fs::path socket_path = dir.path() / "notify.sock";
    const int notify = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(notify >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
    REQUIRE(::bind(notify, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    const fs::path ready = dir.path() / "ready";
    ::setenv("NOTIFY_SOCKET", socket_path.c_str(), 1);
    Broker broker(dir, {"--listen", "tcp://127.0.0.1:0", "--ready-file", ready.string()});
    ::unsetenv("NOTIFY_SOCKET");

    std::string told;
    pollfd waiting{notify, POLLIN, 0};
    REQUIRE(::poll(&waiting, 1, static_cast<int>(std::chrono::milliseconds(ready_bound).count())) == 1);
    char datagram[4096];
    const ssize_t size = ::recv(notify, datagram, sizeof datagram, 0);
    REQUIRE(size > 0);
    told.assign(datagram, static_cast<std::size_t>(size));
    CHECK_THAT(told, Catch::Contains("READY=1"));
    // Told ready, it is ready: the ready file is there and the endpoint takes a client.
    REQUIRE(fs::exists(ready));
    const std::string endpoint = broker.wait_ready(ready).at(0);
    CHECK_THAT(told, Catch::Contains(endpoint));
    auto transport = acemq::zmq::open("zmq+" + endpoint, {.session = {.connect_timeout = 5s}});
    transport->close();

    broker.signal(SIGTERM);
    REQUIRE(::poll(&waiting, 1, static_cast<int>(std::chrono::milliseconds(exit_bound).count())) == 1);
    const ssize_t stopping = ::recv(notify, datagram, sizeof datagram, 0);
    CHECK(std::string(datagram, static_cast<std::size_t>(std::max<ssize_t>(stopping, 0))) == "STOPPING=1");
    CHECK(broker.wait_exit() == 0);
    ::close(notify);
}

TEST_CASE("acemq-broker --metrics serves each queue's depth, unacked and consumers, and the broker's totals") {
    TempDir dir;
    const fs::path ready = dir.path() / "ready";
    Broker broker(dir, {"--listen", "tcp://127.0.0.1:0", "--ready-file", ready.string(), "--metrics", "127.0.0.1:0",
                        "--data", (dir.path() / "broker.db").string()});
    const std::string endpoint = broker.wait_ready(ready).at(0);
    const std::string log = broker.err();
    const auto at = log.find("metrics on http://127.0.0.1:");
    REQUIRE(at != std::string::npos);
    const int port = std::atoi(log.c_str() + at + std::string_view("metrics on http://127.0.0.1:").size());
    REQUIRE(port > 0);

    acemq::Bus bus = acemq::connect("zmq+" + endpoint);
    bus.declare(acemq::Topology{}.queue("orders.new"));
    const acemq::Publisher publisher = bus.publisher_to_queue("orders.new");
    for (int i = 0; i < 3; ++i) publisher.send(std::string("order"));
    httplib::Client client("127.0.0.1", port);
    const auto scraped = client.Get("/metrics");
    REQUIRE(scraped);
    CHECK(scraped->status == 200);
    CHECK_THAT(scraped->body, Catch::Contains("acemq_broker_queue_messages_ready{queue=\"orders.new\"} 3") &&
                                  Catch::Contains("acemq_broker_queue_consumers{queue=\"orders.new\"} 0") &&
                                  Catch::Contains("acemq_broker_published_total 3") &&
                                  Catch::Contains("acemq_broker_sessions 1") &&
                                  Catch::Contains("# TYPE acemq_broker_data_bytes gauge"));
    bus.close();
    broker.signal(SIGTERM);
    CHECK(broker.wait_exit() == 0);
}
