// Suite zmq-faults: the ZeroMQ broker and its clients when things go wrong — a consumer
// killed mid-handling, the broker killed and restarted, frames that break the protocol, and
// CurveZMQ keys the broker does not admit.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <zmq.hpp>

#include <acemq/acemq.hpp>
#include <acemq/zmq.hpp>

#include "../support/wait.hpp"
#include "broker_process.hpp"
#include "raw_answer.hpp"
#include "zmq/protocol.hpp"

using namespace std::chrono_literals;
using zmq_test::BrokerProcess;
using zmq_test::ThreadBroker;

namespace {

acemq::Topology work_queue(const std::string& name) {
    return acemq::Topology{}.queue(name, {.type = acemq::QueueType::classic});
}

acemq::OutboundMessage message_to(const std::string& queue, int number) {
    const std::string text = "message " + std::to_string(number);
    const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
    return {
        .routing_key = queue, .body = acemq::Bytes(bytes, bytes + text.size()), .message_id = std::to_string(number)};
}

using testing_support::eventually;

// Collects what a subscription delivers, acking each.
struct Collector {
    std::mutex mutex;
    std::map<std::string, bool> redelivered_by_id;
    acemq::DeliverFn fn() {
        return [this](acemq::Delivery delivery) {
            {
                std::lock_guard lock(mutex);
                redelivered_by_id[std::string(delivery.message().message_id())] = delivery.message().redelivered();
            }
            delivery.ack();
        };
    }
    std::size_t count() {
        std::lock_guard lock(mutex);
        return redelivered_by_id.size();
    }
};

}  // namespace

namespace {

// A child process whose standard output the test reads; killed (SIGKILL) and reaped when the
// test ends, however it ends.
class WorkerProcess {
public:
    explicit WorkerProcess(std::vector<std::string> argv) {
        int pipe_ends[2];
        REQUIRE(::pipe(pipe_ends) == 0);
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::dup2(pipe_ends[1], STDOUT_FILENO);
            std::vector<char*> arguments;
            for (std::string& argument : argv) arguments.push_back(argument.data());
            arguments.push_back(nullptr);
            ::execv(arguments[0], arguments.data());
            ::_exit(127);
        }
        ::close(pipe_ends[1]);
        output_ = pipe_ends[0];
    }
    ~WorkerProcess() {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        ::close(output_);
    }
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;

    void signal(int number) { ::kill(pid_, number); }

    // True once the worker has printed `expected` as a line; false when it exits first or
    // `limit` passes.
    bool wait_for_line(const std::string& expected, std::chrono::milliseconds limit = 15s) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        std::string pending;
        for (;;) {
            for (std::size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1))
                if (pending.compare(0, end, expected) == 0) return true;
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            pollfd readable{output_, POLLIN, 0};
            if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) <= 0) return false;
            char chunk[256];
            const ssize_t got = ::read(output_, chunk, sizeof chunk);
            if (got <= 0) return false;
            pending.append(chunk, static_cast<std::size_t>(got));
        }
    }

private:
    pid_t pid_ = -1;
    int output_ = -1;
};

// A consumer process (zmq_fault_worker) that took 4 of the 10 messages of `queue` and holds
// them unsettled, then is made to vanish with `signal`; the test consumes what comes back.
void vanishing_consumer(int signal, std::string_view name) {
    ThreadBroker broker(zmq_test::fresh_ipc_endpoint(name));
    auto transport = acemq::zmq::open(broker.url());
    const std::string queue = "faults." + std::string(name);
    transport->declare(work_queue(queue));
    for (int i = 0; i < 10; ++i) REQUIRE(transport->publish(message_to(queue, i)).confirmed);

    WorkerProcess worker({ACEMQ_ZMQ_FAULT_WORKER, broker.url(), queue, "4"});
    REQUIRE(worker.wait_for_line("holding 4"));
    REQUIRE(eventually([&] { return transport->queue_depth(queue) == 6; }));

    worker.signal(signal);
    Collector collector;
    auto subscription = transport->consume(queue, {.prefetch = 20}, collector.fn());
    REQUIRE(eventually([&] { return collector.count() == 10; }));
    std::lock_guard lock(collector.mutex);
    int redelivered = 0;
    for (const auto& [id, again] : collector.redelivered_by_id) redelivered += again ? 1 : 0;
    CHECK(redelivered == 4);  // exactly what the vanished worker held
    CHECK(broker.server().stats().sessions_ended >= 1);
}

}  // namespace

TEST_CASE("a consumer process SIGKILLed mid-handling: its deliveries come back, redelivered, to another consumer") {
    vanishing_consumer(SIGKILL, "kill-consumer");
}

TEST_CASE(
    "a consumer process gone silent (SIGSTOP, as if its network went): its heartbeats stop, its deliveries come back") {
    vanishing_consumer(SIGSTOP, "silent-consumer");
}

TEST_CASE("the broker SIGKILLed and restarted: publishes in flight are reported unconfirmed, clients recover") {
    const std::string endpoint = zmq_test::fresh_ipc_endpoint("restart");
    BrokerProcess broker(ACEMQ_BROKER_PROGRAM, {"--listen", endpoint, "--heartbeat-ms", "200"});
    std::mutex events_mutex;
    std::vector<acemq::ConnectionEvent::Kind> events;
    auto transport = acemq::zmq::open(
        broker.url(),
        {.session = {.confirm_timeout = 20s, .heartbeat = 200ms, .on_event = [&](const acemq::ConnectionEvent& event) {
                         std::lock_guard lock(events_mutex);
                         events.push_back(event.kind);
                     }}});
    const std::string queue = "faults.restart";
    transport->declare(work_queue(queue));
    Collector collector;
    auto subscription = transport->consume(queue, {.prefetch = 10}, collector.fn());
    REQUIRE(transport->publish(message_to(queue, 0)).confirmed);
    REQUIRE(eventually([&] { return collector.count() == 1; }));

    // Frozen, the broker takes the publishes in but confirms none; then it dies.
    ::kill(broker.pid(), SIGSTOP);
    REQUIRE(eventually([&] { return zmq_test::is_stopped(broker.pid()); }));
    std::vector<acemq::OutboundMessage> batch;
    for (int i = 1; i <= 20; ++i) batch.push_back(message_to(queue, i));
    auto in_flight = std::async(std::launch::async, [&] { return transport->publish_batch(std::move(batch)); });
    std::this_thread::sleep_for(100ms);
    broker.stop(SIGKILL);
    const auto results = in_flight.get();
    REQUIRE(results.size() == 20);
    for (const acemq::PublishResult& result : results) {
        INFO(result.return_reason);
        REQUIRE_FALSE(result.confirmed);
        CHECK((result.why == acemq::PublishResult::Unconfirmed::lost ||
               result.why == acemq::PublishResult::Unconfirmed::unsent));
    }
    CHECK(transport->check_health(1s).status == acemq::Health::Status::down);

    broker.start();  // a new, empty broker on the same endpoint
    REQUIRE(eventually(
        [&] {
            std::lock_guard lock(events_mutex);
            return std::find(events.begin(), events.end(), acemq::ConnectionEvent::Kind::recovered) != events.end();
        },
        20s));
    // The topology came back with the client, and so did its consumer.
    CHECK(transport->queue_exists(queue));
    REQUIRE(transport->publish(message_to(queue, 100)).confirmed);
    REQUIRE(eventually([&] { return collector.count() == 2; }));
    CHECK(transport->check_health(1s).status == acemq::Health::Status::up);
    {
        std::lock_guard lock(events_mutex);
        CHECK(std::find(events.begin(), events.end(), acemq::ConnectionEvent::Kind::lost) != events.end());
    }
}

namespace {

// Sends raw `bytes` as one frame from a DEALER and returns the broker's answer, read as a frame.
std::optional<acemq::zmq::wire::ErrorFrame> answer_to(::zmq::socket_t& dealer, const std::vector<std::uint8_t>& bytes) {
    dealer.send(::zmq::buffer(bytes.data(), bytes.size()), ::zmq::send_flags::none);
    const auto reply = zmq_test::next_answer(dealer);
    if (!reply) return std::nullopt;
    const auto frame = acemq::zmq::wire::Frame::parse(*reply);
    REQUIRE(frame.command() == acemq::zmq::wire::Command::error);
    return acemq::zmq::wire::read_error(frame);
}

std::vector<std::uint8_t> bytes_of(const msgpack::sbuffer& buffer) {
    return {reinterpret_cast<const std::uint8_t*>(buffer.data()),
            reinterpret_cast<const std::uint8_t*>(buffer.data()) + buffer.size()};
}

}  // namespace

TEST_CASE("frames that break the protocol get an error frame back; the broker keeps serving and loses nothing") {
    ThreadBroker broker(zmq_test::fresh_ipc_endpoint("garbage"), {.max_frame_bytes = 1024 * 1024});
    auto transport = acemq::zmq::open(broker.url());
    const std::string queue = "faults.garbage";
    transport->declare(work_queue(queue));
    for (int i = 0; i < 5; ++i) REQUIRE(transport->publish(message_to(queue, i)).confirmed);

    ::zmq::context_t context;
    ::zmq::socket_t dealer(context, ::zmq::socket_type::dealer);
    dealer.set(::zmq::sockopt::linger, 0);
    dealer.connect(broker.endpoint());
    using acemq::zmq::wire::ErrorCode;

    // Before a hello, a well-formed request is refused for want of a session.
    const auto no_session =
        answer_to(dealer, bytes_of(acemq::zmq::wire::encode_queue_request(acemq::zmq::wire::Command::depth, 7, queue)));
    REQUIRE(no_session);
    CHECK(no_session->code == ErrorCode::no_session);
    CHECK(no_session->request == 7);

    // No heartbeats from this peer: a minute's interval keeps its session through a slow run.
    const auto hello = bytes_of(acemq::zmq::wire::encode_hello(1, "garbage", 60000));
    dealer.send(::zmq::buffer(hello.data(), hello.size()), ::zmq::send_flags::none);
    REQUIRE(zmq_test::next_answer(dealer));  // the welcome

    struct Case {
        const char* what;
        std::vector<std::uint8_t> bytes;
        ErrorCode code;
    };
    std::vector<Case> cases{
        {"empty", {}, ErrorCode::malformed},
        {"not msgpack", {0xc1}, ErrorCode::malformed},
        {"not an array", {0xa3, 'a', 'b', 'c'}, ErrorCode::malformed},
        {"wrong version", {0x93, 0x07, 0x0d, 0x01}, ErrorCode::unsupported_version},
        {"unknown command", {0x93, 0x01, 0x7f, 0x01}, ErrorCode::unknown_command},
        {"huge array length", {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrorCode::malformed},
        {"huge bin length", {0x94, 0x01, 0x03, 0x01, 0xc6, 0xff, 0xff, 0xff, 0xff}, ErrorCode::malformed},
        {"huge map length", {0x93, 0x01, 0x03, 0xdf, 0xff, 0xff, 0xff, 0xff}, ErrorCode::malformed},
        {"a command the broker sends", bytes_of(acemq::zmq::wire::encode_reply_nil(3)), ErrorCode::unknown_command},
        {"ack of a tag never handed out", bytes_of(acemq::zmq::wire::encode_settle(999, std::nullopt)),
         ErrorCode::malformed},
    };
    const auto publish = bytes_of(acemq::zmq::wire::encode_publish(5, message_to(queue, 99)));
    for (std::size_t cut = 1; cut < publish.size(); cut += 7)
        cases.push_back(
            {"truncated publish", std::vector(publish.begin(), publish.begin() + cut), ErrorCode::malformed});
    auto trailing = publish;
    trailing.push_back(0x00);
    cases.push_back({"bytes after the frame", trailing, ErrorCode::malformed});
    std::mt19937 random(20261202);
    for (int i = 0; i < 50; ++i) {
        std::vector<std::uint8_t> noise(1 + random() % 200);
        for (auto& byte : noise) byte = static_cast<std::uint8_t>(random());
        noise[0] = 0x80 | (noise[0] & 0x7f);  // a fixmap or fixarray, so it does not parse as one plain value
        cases.push_back({"random bytes", noise, ErrorCode::malformed});
    }
    for (const Case& c : cases) {
        INFO(c.what);
        const auto error = answer_to(dealer, c.bytes);
        REQUIRE(error);
        if (std::string_view(c.what) != "random bytes") CHECK(error->code == c.code);
        CHECK_FALSE(error->text.empty());
    }
    // Two frames in one message.
    dealer.send(::zmq::buffer(std::string("a")), ::zmq::send_flags::sndmore);
    const auto two = answer_to(dealer, {0x90});
    REQUIRE(two);
    CHECK(two->text.find("one frame") != std::string::npos);

    // A frame over the limit: libzmq drops that connection before allocating it.
    std::vector<std::uint8_t> huge(2 * 1024 * 1024, 0x00);
    dealer.send(::zmq::buffer(huge.data(), huge.size()), ::zmq::send_flags::none);

    CHECK(transport->queue_depth(queue) == 5);
    REQUIRE(transport->publish(message_to(queue, 5)).confirmed);
    CHECK(transport->queue_depth(queue) == 6);
    CHECK(broker.server().stats().frames_refused >= cases.size());
}

namespace {

struct KeyPair {
    std::filesystem::path pub, key;
};

KeyPair make_keys(const std::filesystem::path& directory, const std::string& name) {
    const auto files = acemq::zmq::generate_key_pair(directory / name);
    return {files.public_key, files.secret_key};
}

}  // namespace

TEST_CASE("CurveZMQ: the broker admits only the client keys it was given") {
    const auto directory = std::filesystem::temp_directory_path() / ("acemq-keys-" + acemq::new_uuid().substr(0, 8));
    std::filesystem::create_directories(directory);
    const KeyPair server = make_keys(directory, "broker"), known = make_keys(directory, "known"),
                  stranger = make_keys(directory, "stranger");
    const std::string endpoint = "tcp://127.0.0.1:0";
    ThreadBroker broker(
        endpoint, {.curve = acemq::zmq::ServerCurve{.secret_key = server.key, .allowed_client_keys = {known.pub}}});

    auto admitted = acemq::zmq::open(broker.url(), {.curve = acemq::zmq::ClientCurve{server.pub, known.key}});
    admitted->declare(work_queue("curve.orders"));
    CHECK(admitted->publish(message_to("curve.orders", 1)).confirmed);

    try {
        acemq::zmq::open(broker.url(), {.curve = acemq::zmq::ClientCurve{server.pub, stranger.key},
                                        .session = {.connect_timeout = 5s}});
        FAIL("a client whose key the broker was not given got in");
    } catch (const acemq::ConnectionError& error) {
        CHECK_THAT(error.what(), Catch::Contains("refused this client's CurveZMQ key"));
    }
    CHECK(broker.server().stats().clients_refused >= 1);
    // Without Curve at all, no session either.
    CHECK_THROWS_AS(acemq::zmq::open(broker.url(), {.session = {.connect_timeout = 2s}}), acemq::ConnectionError);
    CHECK(admitted->queue_depth("curve.orders") == 1);
    std::filesystem::remove_all(directory);
}

TEST_CASE("CurveZMQ: libzmq alone admits any key when no ZAP handler is bound; the acemq broker binds one") {
    // The trap, shown on raw libzmq: a Curve server with no ZAP handler lets a stranger in.
    char server_public[41], server_secret[41], stranger_public[41], stranger_secret[41];
    REQUIRE(zmq_curve_keypair(server_public, server_secret) == 0);
    REQUIRE(zmq_curve_keypair(stranger_public, stranger_secret) == 0);
    ::zmq::context_t context;
    ::zmq::socket_t raw_server(context, ::zmq::socket_type::router);
    raw_server.set(::zmq::sockopt::curve_server, true);
    raw_server.set(::zmq::sockopt::curve_secretkey, std::string(server_secret));
    raw_server.bind("tcp://127.0.0.1:0");
    ::zmq::socket_t stranger(context, ::zmq::socket_type::dealer);
    stranger.set(::zmq::sockopt::linger, 0);
    stranger.set(::zmq::sockopt::curve_serverkey, std::string(server_public));
    stranger.set(::zmq::sockopt::curve_publickey, std::string(stranger_public));
    stranger.set(::zmq::sockopt::curve_secretkey, std::string(stranger_secret));
    stranger.connect(raw_server.get(::zmq::sockopt::last_endpoint));
    stranger.send(::zmq::str_buffer("in"), ::zmq::send_flags::none);
    std::vector<::zmq::pollitem_t> items{{raw_server.handle(), 0, ZMQ_POLLIN, 0}};
    REQUIRE(::zmq::poll(items, 5s) == 1);  // the stranger got through

    // The same stranger against the acemq broker with the same kind of keys: refused.
    const auto directory = std::filesystem::temp_directory_path() / ("acemq-keys-" + acemq::new_uuid().substr(0, 8));
    std::filesystem::create_directories(directory);
    const KeyPair server = make_keys(directory, "broker"), known = make_keys(directory, "known"),
                  other = make_keys(directory, "other");
    ThreadBroker broker("tcp://127.0.0.1:0", {.curve = acemq::zmq::ServerCurve{.secret_key = server.key,
                                                                               .allowed_client_keys = {known.pub}}});
    CHECK_THROWS_AS(acemq::zmq::open(broker.url(), {.curve = acemq::zmq::ClientCurve{server.pub, other.key},
                                                    .session = {.connect_timeout = 5s}}),
                    acemq::ConnectionError);
    CHECK(broker.server().stats().sessions == 0);
    // And a server told to use Curve with no allowed keys refuses to start rather than admit all.
    CHECK_THROWS_AS(
        acemq::zmq::serve(acemq::inproc::broker("zmq-no-keys"), {"tcp://127.0.0.1:0"},
                          {.curve = acemq::zmq::ServerCurve{.secret_key = server.key, .allowed_client_keys = {}}}),
        acemq::InvalidArgument);
    std::filesystem::remove_all(directory);
}
