// Suite `amqp-faults`: the AMQP transport against a real RabbitMQ that misbehaves on
// purpose. The broker is restarted under a running publisher and consumer, its memory
// alarm is raised, its TLS listener is offered the wrong CA, and a login is refused. These
// tests change the whole node (a restart, an alarm, every connection closed), so the
// suite runs alone (is_parallel: false) against the broker scripts/test starts:
//
//   ACEMQ_TEST_AMQP_URL     amqp://guest:guest@127.0.0.1:PORT/
//   ACEMQ_TEST_AMQPS_URL    amqps://127.0.0.1:TLSPORT/
//   ACEMQ_TEST_TLS_DIR      ca.pem, other-ca.pem, client.pem, client-key.pem (the test CA's)
//   ACEMQ_TEST_RABBITMQCTL  rabbitmqctl for that node (stop_app, start_app, ...)
//
// A missing variable fails the test, never skips it. Every wait is bounded; rabbitmqctl
// runs under `timeout`. Figures (recovery time, refusal time) are printed as "figure: ...".
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <acemq/amqp.hpp>
#include "amqp/address.hpp"

#include <sys/wait.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include "../support/rabbitmq.hpp"
#include "../support/wait.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using acemq::ConnectionError;
using acemq::ConnectionEvent;
using acemq::amqp::Credentials;
using acemq::amqp::Options;
using acemq::amqp::Tls;
using Kind = acemq::ConnectionEvent::Kind;

struct Tick {
    std::string id;
    std::int64_t n = 0;
};

using testing_support::amqp_url;
using testing_support::amqps_url;
using testing_support::rabbitmq_variable;
std::string tls_file(const char* name) {
    return (std::filesystem::path(rabbitmq_variable("ACEMQ_TEST_TLS_DIR")) / name).string();
}

// The plain listener without the URL's user and password, for tests that give their own.
std::string plain_endpoint() {
    const acemq::amqp::Address address = acemq::amqp::parse_address(amqp_url());
    return "amqp://" + address.host + ":" + std::to_string(address.port) + "/";
}

// The same listener as amqps://, and the TLS listener as amqp://: each the wrong protocol.
std::string tls_to_plain_port() {
    const acemq::amqp::Address address = acemq::amqp::parse_address(amqp_url());
    return "amqps://" + address.host + ":" + std::to_string(address.port) + "/";
}
std::string plain_to_tls_port() {
    const acemq::amqp::Address address = acemq::amqp::parse_address(amqps_url());
    return "amqp://" + address.host + ":" + std::to_string(address.port) + "/";
}

std::string unique(std::string_view base) {
    return "faults." + std::string(base) + "." + acemq::new_uuid().substr(0, 8);
}

struct CommandResult {
    int status = -1;
    std::string output;
};

// Runs `$ACEMQ_TEST_RABBITMQCTL arguments`, at most `limit` (then the command is killed and
// the status is 124). The arguments are the test's own words, never user input.
CommandResult rabbitmqctl(const std::string& arguments, std::chrono::seconds limit = 120s) {
    const std::string command = "timeout -k 5 " + std::to_string(limit.count()) + " '" +
                                rabbitmq_variable("ACEMQ_TEST_RABBITMQCTL") + "' " + arguments + " 2>&1";
    CommandResult result;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("cannot run " + command);
    char buffer[4096];
    std::size_t read;
    while ((read = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, read);
    const int status = ::pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

void require_rabbitmqctl(const std::string& arguments) {
    const CommandResult result = rabbitmqctl(arguments);
    INFO("rabbitmqctl " << arguments << " said: " << result.output);
    REQUIRE(result.status == 0);
}

// The names of the queues on the broker's default vhost.
std::vector<std::string> queue_names() {
    const CommandResult result = rabbitmqctl("list_queues -q --no-table-headers name");
    INFO("rabbitmqctl list_queues said: " << result.output);
    REQUIRE(result.status == 0);
    std::vector<std::string> names;
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) names.push_back(line);
    return names;
}

using testing_support::eventually;

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

void figure(const std::string& text) { std::cout << "figure: " << text << std::endl; }

// What Options::on_event reported, with when; filled on the transport's I/O thread.
class EventLog {
public:
    std::function<void(const ConnectionEvent&)> sink() {
        return [this](const ConnectionEvent& event) {
            std::lock_guard lock(mutex_);
            events_.push_back({event, Clock::now()});
        };
    }
    std::size_t count(Kind kind) const {
        std::lock_guard lock(mutex_);
        return static_cast<std::size_t>(
            std::count_if(events_.begin(), events_.end(), [&](const auto& entry) { return entry.event.kind == kind; }));
    }
    std::optional<Clock::time_point> first(Kind kind) const {
        std::lock_guard lock(mutex_);
        for (const auto& entry : events_)
            if (entry.event.kind == kind) return entry.at;
        return std::nullopt;
    }
    std::string all_text() const {
        std::lock_guard lock(mutex_);
        std::string text;
        for (const auto& entry : events_)
            text += std::string(acemq::to_string(entry.event.kind)) + " #" + std::to_string(entry.event.attempt) +
                    ": " + entry.event.detail + "\n";
        return text;
    }

private:
    struct Entry {
        ConnectionEvent event;
        Clock::time_point at;
    };
    mutable std::mutex mutex_;
    std::vector<Entry> events_;
};

// Raises the memory alarm (watermark 0) and always lowers it again, also when the test
// fails half-way: another test on a node in alarm would hang on its first publish.
class MemoryAlarm {
public:
    MemoryAlarm() { require_rabbitmqctl("set_vm_memory_high_watermark 0"); }
    ~MemoryAlarm() { clear(); }
    MemoryAlarm(const MemoryAlarm&) = delete;
    MemoryAlarm& operator=(const MemoryAlarm&) = delete;
    // Returns whether rabbitmqctl agreed; idempotent.
    bool clear() {
        if (cleared_) return true;
        const CommandResult result = rabbitmqctl("set_vm_memory_high_watermark 0.4");
        cleared_ = result.status == 0;
        if (!cleared_) std::cerr << "could not restore the memory watermark: " << result.output << std::endl;
        return cleared_;
    }

private:
    bool cleared_ = false;
};

// Stops and starts the broker's application, timing each step; starts it again when a test
// that stopped it fails before it did.
class BrokerApp {
public:
    BrokerApp() = default;
    BrokerApp(const BrokerApp&) = delete;
    BrokerApp& operator=(const BrokerApp&) = delete;
    ~BrokerApp() {
        if (!down_) return;
        (void)rabbitmqctl("start_app");
        (void)rabbitmqctl("await_startup");
    }
    void stop() {
        stop_called = Clock::now();
        require_rabbitmqctl("stop_app");
        down_ = true;
        stopped = Clock::now();
    }
    void start() {
        start_called = Clock::now();
        require_rabbitmqctl("start_app");
        start_returned = Clock::now();
        down_ = false;
        require_rabbitmqctl("await_startup");
        started = Clock::now();
    }
    Clock::time_point stop_called, stopped, start_called, start_returned, started;

private:
    bool down_ = false;
};

// A file in a fresh temporary folder, removed with the folder.
class TempDir {
public:
    TempDir() : dir_(std::filesystem::temp_directory_path() / ("acemq-faults-" + acemq::new_uuid().substr(0, 8))) {
        std::filesystem::create_directories(dir_);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::filesystem::path file(const std::string& name, const std::string& contents) const {
        const std::filesystem::path path = dir_ / name;
        std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
        return path;
    }
    const std::filesystem::path& path() const { return dir_; }

private:
    std::filesystem::path dir_;
};

// A message sent through the bus on `transport` comes back out of a fresh queue.
void round_trip(const std::shared_ptr<acemq::Transport>& transport) {
    acemq::Bus bus = acemq::connect(transport, {.origin = "faults@test"});
    const std::string queue = unique("round-trip");
    bus.declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic, .durable = false}));
    const auto sent = bus.publisher_to_queue(queue).send(Tick{"hello", 42});
    CHECK(sent.confirmed);
    std::optional<acemq::Delivery> delivery;
    REQUIRE(eventually([&] { return (delivery = transport->pull(queue)).has_value(); }, 10s));
    const Tick got =
        acemq::decode<Tick>(*acemq::default_codec(), delivery->message().body(), delivery->message().content_type());
    CHECK(got.id == "hello");
    CHECK(got.n == 42);
    delivery->ack();
    transport->delete_queue(queue);
    bus.close();
}

// The ConnectionError that open() throws; fails the test when it connects.
std::string connect_refusal(const std::string& url, Options options) {
    if (!options.session.connect_timeout) options.session.connect_timeout = 10s;
    try {
        auto transport = acemq::amqp::open(url, std::move(options));
        transport->close();
        FAIL("open(\"" << url << "\") connected");
    } catch (const ConnectionError& error) {
        return error.what();
    }
    return {};
}

}  // namespace

TEST_CASE("a broker restart mid-stream: publisher and consumer recover, and nothing confirmed is missing") {
    EventLog events;
    std::atomic<bool> recovered{false};
    auto log_sink = events.sink();
    auto transport = acemq::amqp::open(amqp_url(), {.session = {.confirm_timeout = 5s,
                                                                .first_recovery_delay = 200ms,
                                                                .max_recovery_delay = 1s,
                                                                .name = "acemq-faults-restart",
                                                                .on_event = [&](const ConnectionEvent& event) {
                                                                    log_sink(event);
                                                                    if (event.kind == Kind::recovered)
                                                                        recovered.store(true);
                                                                }}});
    acemq::Bus bus = acemq::connect(transport, {.origin = "faults@test"});
    const std::string queue = unique("restart");
    bus.declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::quorum}));

    std::mutex lock;
    std::set<std::string> received;
    std::size_t deliveries = 0, received_after_recovery = 0;
    auto consumer = bus.consume<Tick>(queue,
                                      [&](const acemq::Message<Tick>& message) {
                                          const bool after = recovered.load();
                                          std::lock_guard guard(lock);
                                          received.insert(message.envelope.id);
                                          ++deliveries;
                                          if (after) ++received_after_recovery;
                                          return acemq::accept();
                                      },
                                      {.declare = false});

    std::vector<std::string> confirmed, failed, other_errors;
    std::size_t confirmed_after_recovery = 0;
    std::atomic<bool> stop{false};
    std::thread publisher_thread([&] {
        const acemq::Publisher publisher = bus.publisher_to_queue(queue);
        for (std::int64_t n = 0; !stop.load(); ++n) {
            const std::string id = "tick-" + std::to_string(n);
            const bool after = recovered.load();
            try {
                publisher.send(Tick{id, n}, {.message_id = id});
                std::lock_guard guard(lock);
                confirmed.push_back(id);
                if (after) ++confirmed_after_recovery;
            } catch (const acemq::PublishError&) {
                std::lock_guard guard(lock);
                failed.push_back(id);
            } catch (const std::exception& error) {
                std::lock_guard guard(lock);
                other_errors.push_back(error.what());
            }
            std::this_thread::sleep_for(2ms);
        }
    });
    // Joins the publisher however the test ends.
    struct Joiner {
        std::atomic<bool>& stop;
        std::thread& thread;
        ~Joiner() {
            stop.store(true);
            if (thread.joinable()) thread.join();
        }
    } joiner{stop, publisher_thread};
    auto under_lock = [&](auto read) {
        std::lock_guard guard(lock);
        return read();
    };

    REQUIRE(
        eventually([&] { return under_lock([&] { return confirmed.size() >= 100 && received.size() >= 50; }); }, 30s));
    CHECK(transport->check_health().status == acemq::Health::Status::up);

    BrokerApp broker;
    broker.stop();
    REQUIRE(eventually([&] { return events.count(Kind::lost) >= 1; }, 30s));
    // While the broker is away, health says down, and a publish fails as a PublishError
    // (counted by the publisher thread) rather than hanging or passing as sent.
    {
        const auto health = transport->check_health(1s);
        CHECK(health.status == acemq::Health::Status::down);
        CHECK_FALSE(acemq::amqp::state(*transport).connected);
    }
    std::this_thread::sleep_for(1500ms);
    broker.start();

    REQUIRE(eventually([&] { return events.count(Kind::recovered) >= 1; }, 60s));
    const auto recovered_at = *events.first(Kind::recovered);
    CHECK(*events.first(Kind::lost) < recovered_at);
    CHECK(acemq::amqp::state(*transport).connected);

    // After recovery both halves carry on: the publisher has its sends confirmed and the
    // consumer (consuming again with its tag) receives.
    const bool carried_on = eventually(
        [&] { return under_lock([&] { return confirmed_after_recovery >= 100 && received_after_recovery >= 50; }); },
        60s);
    stop.store(true);
    publisher_thread.join();

    // Everything the broker confirmed arrives, within a bound; duplicates are allowed (a
    // delivery whose ack was lost with the connection comes again).
    auto missing = [&] {
        std::vector<std::string> out;
        for (const auto& id : confirmed)
            if (!received.contains(id)) out.push_back(id);
        return out;
    };
    const bool all_arrived = eventually([&] { return under_lock([&] { return missing().empty(); }); }, 60s);
    CHECK(consumer.close());

    std::lock_guard guard(lock);
    const std::vector<std::string> still_missing = missing();
    figure("restart: stop_app took " + std::to_string(seconds_between(broker.stop_called, broker.stopped)) +
           " s, start_app " + std::to_string(seconds_between(broker.start_called, broker.start_returned)) + " s");
    figure("restart: recovered " + std::to_string(seconds_between(broker.start_returned, recovered_at)) +
           " s after start_app returned (" + std::to_string(seconds_between(broker.start_called, recovered_at)) +
           " s after it was called), " + std::to_string(seconds_between(broker.stopped, recovered_at)) +
           " s after the broker stopped; " + std::to_string(events.count(Kind::retrying)) + " attempts");
    figure("restart: " + std::to_string(confirmed.size()) + " confirmed (" + std::to_string(confirmed_after_recovery) +
           " after recovery), " + std::to_string(failed.size()) + " failed with PublishError, " +
           std::to_string(received.size()) + " distinct received (" + std::to_string(deliveries) + " deliveries, " +
           std::to_string(received_after_recovery) + " after recovery), " + std::to_string(still_missing.size()) +
           " confirmed but missing");
    INFO("events:\n" << events.all_text());
    INFO("first missing: " << (still_missing.empty() ? std::string("none") : still_missing.front()));
    INFO("first other error: " << (other_errors.empty() ? std::string("none") : other_errors.front()));
    CHECK(carried_on);
    CHECK(all_arrived);
    CHECK(still_missing.empty());
    CHECK(other_errors.empty());
    CHECK(events.count(Kind::lost) >= 1);
    CHECK(events.count(Kind::retrying) >= 1);
    CHECK(events.count(Kind::recovered) >= 1);
    CHECK(confirmed_after_recovery >= 100);
    CHECK(received_after_recovery >= 50);

    transport->delete_queue(queue);
    bus.close();
}

TEST_CASE("TLS: the test CA is trusted, other CAs and names are refused") {
    const std::string url = amqps_url();
    const std::string ca = tls_file("ca.pem");

    SECTION("the CA that signed the broker's certificate: connects and a message goes round") {
        auto transport = acemq::amqp::open(url, {.tls = Tls{}.ca_file(ca)});
        CHECK(acemq::amqp::state(*transport).connected);
        round_trip(transport);
    }
    SECTION("a client certificate from the same CA is accepted") {
        auto transport = acemq::amqp::open(
            url, {.tls = Tls{}.ca_file(ca).client_certificate(tls_file("client.pem"), tls_file("client-key.pem"))});
        round_trip(transport);
    }
    SECTION("the host name in the URL is checked too (localhost is in the certificate)") {
        const acemq::amqp::Address address = acemq::amqp::parse_address(url);
        auto transport =
            acemq::amqp::open("amqps://localhost:" + std::to_string(address.port) + "/", {.tls = Tls{}.ca_file(ca)});
        round_trip(transport);
    }
    SECTION("server_name: connect to the address, expect the name the certificate carries") {
        auto transport = acemq::amqp::open(url, {.tls = Tls{}.ca_file(ca).server_name("localhost")});
        round_trip(transport);
    }
    SECTION("without verification it connects even with no CA at all") {
        auto transport = acemq::amqp::open(url, {.tls = Tls::without_verification_insecure()});
        round_trip(transport);
    }
    SECTION("another CA is refused: the certificate was not accepted") {
        const auto started = Clock::now();
        const std::string text = connect_refusal(url, {.tls = Tls{}.ca_file(tls_file("other-ca.pem"))});
        figure("tls: a wrong CA is refused in " + std::to_string(seconds_between(started, Clock::now())) + " s");
        CHECK_THAT(text, Catch::Contains("certificate was not accepted") && Catch::Contains(url));
    }
    SECTION("the system's trust store does not hold the test CA: refused") {
        CHECK_THAT(connect_refusal(url, {.tls = Tls{}}), Catch::Contains("certificate was not accepted"));
        CHECK_THAT(connect_refusal(url, {}), Catch::Contains("certificate was not accepted"));
    }
    SECTION("a server name the certificate does not carry is refused") {
        CHECK_THAT(connect_refusal(url, {.tls = Tls{}.ca_file(ca).server_name("not-the-broker")}),
                   Catch::Contains("certificate was not accepted"));
    }
    SECTION("TLS settings for a plaintext URL are refused before any connect") {
        CHECK_THROWS_AS(acemq::amqp::open(amqp_url(), {.tls = Tls{}.ca_file(ca)}), acemq::InvalidArgument);
        CHECK_THROWS_AS(acemq::amqp::open(plain_to_tls_port(), {.tls = Tls::without_verification_insecure()}),
                        acemq::InvalidArgument);
    }
    SECTION("the wrong protocol on either listener is a ConnectionError naming the listener to use") {
        // TLS spoken to the plain listener: the handshake fails, and the text says which
        // port to use rather than blaming the certificate. Each attempt is bounded by its
        // connect timeout.
        CHECK_THAT(connect_refusal(tls_to_plain_port(), {.tls = Tls{}.ca_file(ca), .session = {.connect_timeout = 5s}}),
                   Catch::Contains("handshake failed") && Catch::Contains("the broker's TLS listener") &&
                       !Catch::Contains("certificate was not accepted"));
        // Plain AMQP spoken to the TLS listener: the listener hangs up, which is not a
        // matter of credentials.
        CHECK_THAT(connect_refusal(plain_to_tls_port(), {.session = {.connect_timeout = 5s}}),
                   Catch::Contains("plain AMQP listener") && !Catch::Contains("check the credentials"));
    }
    SECTION("a client certificate the broker's CA did not sign is refused") {
        TempDir dir;
        const std::string key = (dir.path() / "stranger-key.pem").string();
        const std::string certificate = (dir.path() / "stranger.pem").string();
        const std::string command =
            "openssl req -x509 -days 1 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
            "-subj /CN=acemq-stranger -keyout '" +
            key + "' -out '" + certificate + "' >/dev/null 2>&1";
        REQUIRE(std::system(command.c_str()) == 0);
        // Under TLS 1.3 the broker's verdict on a client certificate comes after the client
        // finished its handshake, so the refusal surfaces at login; either way it says so.
        CHECK_THAT(connect_refusal(url, {.tls = Tls{}.ca_file(ca).client_certificate(certificate, key),
                                         .session = {.connect_timeout = 10s}}),
                   Catch::Contains(url) && Catch::Contains("Tls::client_certificate") &&
                       !Catch::Contains("check the credentials"));
    }
}

TEST_CASE("credentials: a refused login never shows the password; environment and file logins work") {
    const std::string endpoint = plain_endpoint();
    const std::string wrong = "Wr0ng-Passw0rd-" + acemq::new_uuid().substr(0, 8);

    SECTION("a wrong password, given in Options or in the URL, is a ConnectionError without it") {
        const std::string from_options = connect_refusal(endpoint, {.credentials = Credentials::plain("guest", wrong)});
        CHECK_THAT(from_options,
                   Catch::Contains("cannot log in") && Catch::Contains("guest") && !Catch::Contains(wrong));
        const acemq::amqp::Address address = acemq::amqp::parse_address(endpoint);
        const std::string url = "amqp://guest:" + wrong + "@" + address.host + ":" + std::to_string(address.port) + "/";
        const std::string from_url = connect_refusal(url, {});
        CHECK_THAT(from_url, Catch::Contains("cannot log in") && !Catch::Contains(wrong));
        try {
            (void)acemq::connect(url);
            FAIL("connect(url) logged in with a wrong password");
        } catch (const ConnectionError& error) {
            CHECK_THAT(error.what(), !Catch::Contains(wrong));
        }
    }
    SECTION("from the environment") {
        const std::string tag = acemq::new_uuid().substr(0, 8);
        const std::string user = "ACEMQ_FAULTS_USER_" + tag, password = "ACEMQ_FAULTS_PASSWORD_" + tag;
        ::setenv(user.c_str(), "guest", 1);
        ::setenv(password.c_str(), "guest", 1);
        auto transport = acemq::amqp::open(endpoint, {.credentials = Credentials::from_environment(user, password)});
        CHECK(transport->check_health().status == acemq::Health::Status::up);
        transport->close();
        ::setenv(password.c_str(), wrong.c_str(), 1);
        CHECK_THAT(connect_refusal(endpoint, {.credentials = Credentials::from_environment(user, password)}),
                   Catch::Contains("cannot log in") && !Catch::Contains(wrong));
        ::unsetenv(user.c_str());
        ::unsetenv(password.c_str());
    }
    SECTION("from a file, read again at each connect: a rotated secret is used on reconnect") {
        TempDir dir;
        const std::filesystem::path file = dir.file("credentials", "guest\nguest\n");
        EventLog events;
        auto transport = acemq::amqp::open(endpoint, {.credentials = Credentials::from_file(file),
                                                      .session = {.first_recovery_delay = 200ms,
                                                                  .max_recovery_delay = 500ms,
                                                                  .name = "acemq-faults-rotation",
                                                                  .on_event = events.sink()}});
        CHECK(transport->check_health().status == acemq::Health::Status::up);

        // The file now holds a password the broker does not take, and the connection goes.
        dir.file("credentials", "guest\n" + wrong + "\n");
        require_rabbitmqctl("close_all_connections 'acemq faults test: credentials rotation'");
        REQUIRE(eventually([&] { return events.count(Kind::lost) >= 1; }, 30s));
        // It keeps trying (each attempt reads the file and is refused) and does not recover.
        REQUIRE(eventually([&] { return events.count(Kind::retrying) >= 3; }, 30s));
        CHECK(events.count(Kind::recovered) == 0);
        CHECK_FALSE(acemq::amqp::state(*transport).connected);

        // The secret is put right: the next attempt reads it and gets in.
        dir.file("credentials", "guest\nguest\n");
        REQUIRE(eventually([&] { return events.count(Kind::recovered) >= 1; }, 30s));
        CHECK(transport->check_health().status == acemq::Health::Status::up);
        CHECK_THAT(events.all_text(), !Catch::Contains(wrong));
        transport->close();
    }
}

TEST_CASE("a connection the broker blocks refuses publishes at once, and health says why") {
    EventLog events;
    auto transport = acemq::amqp::open(
        amqp_url(), {.session = {.confirm_timeout = 5s, .name = "acemq-faults-blocked", .on_event = events.sink()}});
    acemq::Bus bus = acemq::connect(transport, {.origin = "faults@test"});
    const std::string queue = unique("blocked");
    bus.declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic, .durable = false}));
    const acemq::Publisher publisher = bus.publisher_to_queue(queue);
    CHECK(publisher.send(Tick{"before", 0}).confirmed);

    {
        MemoryAlarm alarm;
        // RabbitMQ blocks a connection (and says so) when it next publishes after the alarm:
        // publish until the transport has been told. The publish that trips it is taken.
        std::size_t probes = 0;
        const bool blocked = eventually(
            [&] {
                if (acemq::amqp::state(*transport).blocked) return true;
                ++probes;
                acemq::OutboundMessage probe;
                probe.routing_key = queue;
                probe.body = acemq::Bytes{std::byte{'p'}};
                (void)transport->publish(std::move(probe));
                return acemq::amqp::state(*transport).blocked;
            },
            30s, 100ms);
        REQUIRE(blocked);
        const std::string reason = acemq::amqp::state(*transport).blocked_reason;
        figure("blocked: the transport knew after " + std::to_string(probes) + " probe publishes; reason \"" + reason +
               "\"");
        CHECK(events.count(Kind::blocked) == 1);

        const auto started = Clock::now();
        try {
            publisher.send(Tick{"while-blocked", 1});
            FAIL("a publish on a blocked connection returned normally");
        } catch (const acemq::PublishError& error) {
            const auto took = Clock::now() - started;
            figure("blocked: a publish was refused in " +
                   std::to_string(std::chrono::duration<double, std::milli>(took).count()) + " ms");
            CHECK(error.reason() == acemq::PublishError::Reason::paused);
            CHECK_THAT(error.what(),
                       Catch::StartsWith("acemq: publishing is paused because the broker blocked this connection (") &&
                           Catch::Contains(reason.empty() ? std::string("(") : reason));
        }
        // The transport's own answer: not confirmed, paused, nothing written.
        acemq::OutboundMessage raw;
        raw.routing_key = queue;
        const acemq::PublishResult result = transport->publish(std::move(raw));
        CHECK_FALSE(result.confirmed);
        CHECK(result.why == acemq::PublishResult::Unconfirmed::paused);

        const auto health = transport->check_health();
        CHECK(health.status == acemq::Health::Status::up);
        CHECK(health.blocked);
        CHECK_THAT(health.detail, Catch::StartsWith("the broker has blocked this connection; publishing is paused"));

        REQUIRE(alarm.clear());
        REQUIRE(eventually([&] { return !acemq::amqp::state(*transport).blocked; }, 30s));
        CHECK(events.count(Kind::unblocked) == 1);
    }
    CHECK(publisher.send(Tick{"after", 2}).confirmed);
    const auto health = transport->check_health();
    CHECK(health.status == acemq::Health::Status::up);
    CHECK_FALSE(health.blocked);
    transport->delete_queue(queue);
    bus.close();
}

TEST_CASE("a blocked connection that is lost is down, not blocked, and publishes again once recovered") {
    EventLog events;
    auto transport = acemq::amqp::open(amqp_url(), {.session = {.confirm_timeout = 2s,
                                                                .first_recovery_delay = 200ms,
                                                                .max_recovery_delay = 1s,
                                                                .name = "acemq-faults-blocked-lost",
                                                                .on_event = events.sink()}});
    const std::string queue = unique("blocked-lost");
    transport->declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::quorum}));
    auto probe = [&] {
        acemq::OutboundMessage message;
        message.routing_key = queue;
        message.body = acemq::Bytes{std::byte{'p'}};
        return transport->publish(std::move(message));
    };

    MemoryAlarm alarm;
    REQUIRE(eventually(
        [&] {
            (void)probe();
            return acemq::amqp::state(*transport).blocked;
        },
        30s, 100ms));

    BrokerApp broker;
    broker.stop();
    REQUIRE(eventually([&] { return events.count(Kind::lost) >= 1; }, 30s));
    CHECK_FALSE(acemq::amqp::state(*transport).blocked);
    const auto health = transport->check_health(1s);
    CHECK(health.status == acemq::Health::Status::down);
    CHECK_FALSE(health.blocked);
    // Not refused as paused: it waits for a connection and is unconfirmed as lost.
    const acemq::PublishResult during = probe();
    CHECK_FALSE(during.confirmed);
    CHECK(during.why == acemq::PublishResult::Unconfirmed::lost);

    broker.start();
    REQUIRE(alarm.clear());
    REQUIRE(eventually([&] { return events.count(Kind::recovered) >= 1; }, 60s));
    // The first publishes after start_app may meet a quorum queue still electing its leader.
    CHECK(eventually([&] { return probe().confirmed; }, 30s, 100ms));
    figure("blocked and lost: stop_app took " + std::to_string(seconds_between(broker.stop_called, broker.stopped)) +
           " s, start_app and await_startup " + std::to_string(seconds_between(broker.start_called, broker.started)) +
           " s; publishing again " + std::to_string(seconds_between(broker.started, Clock::now())) + " s later");
    CHECK_FALSE(acemq::amqp::state(*transport).blocked);
    CHECK(transport->check_health().status == acemq::Health::Status::up);
    transport->delete_queue(queue);
    transport->close();
}

TEST_CASE("health: up on a good connection, creates nothing, down once closed") {
    const std::vector<std::string> before = queue_names();
    auto transport = acemq::amqp::open(amqp_url(), {.session = {.name = "acemq-faults-health"}});
    for (int i = 0; i < 5; ++i) {
        const auto health = transport->check_health();
        CHECK(health.status == acemq::Health::Status::up);
        CHECK_FALSE(health.blocked);
        CHECK(health.round_trip > std::chrono::microseconds(0));
    }
    const std::vector<std::string> after = queue_names();
    CHECK(after.size() == before.size());
    for (const auto& name : after) CHECK_THAT(name, !Catch::StartsWith("acemq-health"));

    transport->close();
    const auto closed = transport->check_health();
    CHECK(closed.status == acemq::Health::Status::down);
    CHECK(closed.detail == "the connection has been closed");
    CHECK_FALSE(acemq::amqp::state(*transport).connected);
}

TEST_CASE("an ack made just before close() reaches the broker: the message is not handed out again") {
    const std::string queue = "acemq-faults-ack-then-close";
    auto operator_side = acemq::amqp::open(amqp_url(), {.session = {.name = "acemq-faults-ack-then-close-setup"}});
    operator_side->delete_queue(queue);
    operator_side->declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    // Each round races the ack's hand-off to the I/O thread against close(); before close()
    // flushed what was posted, an ack could be dropped unsent and the message came back.
    for (int round = 0; round < 20; ++round) {
        const std::string body = "round " + std::to_string(round);
        acemq::OutboundMessage message{.routing_key = queue};
        for (char c : body) message.body.push_back(static_cast<std::byte>(c));
        REQUIRE(operator_side->publish(std::move(message)).confirmed);
        auto consumer = acemq::amqp::open(amqp_url(), {.session = {.name = "acemq-faults-ack-then-close"}});
        std::mutex lock;
        std::optional<acemq::Delivery> delivered;
        auto subscription = consumer->consume(queue, {.prefetch = 1}, [&](acemq::Delivery delivery) {
            std::lock_guard guard(lock);
            delivered.emplace(std::move(delivery));
        });
        REQUIRE(testing_support::eventually([&] {
            std::lock_guard guard(lock);
            return delivered.has_value();
        }));
        {
            std::lock_guard guard(lock);
            delivered->ack();
        }
        consumer->close();
        INFO("round " << round);
        CHECK(operator_side->queue_depth(queue) == 0);
    }
    // A dropped ack shows once the closed channel's unacked message is requeued: give that
    // half a second to happen (it is what this case exists to catch, not a speed).
    CHECK_FALSE(testing_support::eventually([&] { return operator_side->queue_depth(queue) > 0; }, 500ms));
    operator_side->delete_queue(queue);
}

TEST_CASE("health: a consumer whose queue is deleted under it has stopped reading, and health says degraded") {
    auto transport = acemq::amqp::open(amqp_url(), {.session = {.name = "acemq-faults-degraded"}});
    acemq::Bus bus = acemq::connect(transport);
    const std::string queue = "faults-degraded-" + acemq::new_uuid().substr(0, 8);
    bus.declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    acemq::Consumer consumer =
        bus.consume_raw(queue, [](const acemq::Message<acemq::Bytes>&) { return acemq::accept(); }, {.declare = false});
    CHECK(bus.health().status == acemq::Health::Status::up);

    // Deleted by someone else, as an operator would: the broker cancels our consumer.
    auto other = acemq::amqp::open(amqp_url(), {.session = {.name = "acemq-faults-degraded-operator"}});
    other->delete_queue(queue);
    const auto deadline = Clock::now() + 10s;
    while (acemq::amqp::state(*transport).stopped_queues.empty() && Clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    REQUIRE(acemq::amqp::state(*transport).stopped_queues == std::vector<std::string>{queue});
    const acemq::Health health = bus.health();
    CHECK(health.status == acemq::Health::Status::degraded);
    CHECK(health.detail == "these consumers have stopped reading: " + queue);

    // Closing that consumer ends the report: nothing is left that should be reading.
    consumer.close();
    CHECK(acemq::amqp::state(*transport).stopped_queues.empty());
    CHECK(bus.health().status == acemq::Health::Status::up);
}

TEST_CASE("an idle connection stays up: heartbeats go out while nothing else happens") {
    EventLog events;
    // One-second heartbeats: the broker drops a connection that stays silent for two of them.
    auto transport = acemq::amqp::open(
        amqp_url(), {.session = {.heartbeat = 1s, .name = "acemq-faults-idle", .on_event = events.sink()}});
    std::this_thread::sleep_for(5s);  // no publish, no consumer: only the I/O thread's ticks
    CHECK(events.count(Kind::lost) == 0);
    CHECK(acemq::amqp::state(*transport).connected);
    round_trip(transport);
    CHECK(events.count(Kind::lost) == 0);
}
