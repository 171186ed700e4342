// Suite `reliability` (ZeroMQ part): what the broker's frame limit does to a publish, and
// how errors over ZeroMQ name the broker. A client refuses a publish past the limit before
// sending it, so the session and the publishes beside it go on; a broker sent such a frame
// anyway (by a raw peer) logs who sent it and how large it was, and answers it. Every test
// uses a 1 MiB limit, so that none moves the 64 MiB of the default.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include <acemq/acemq.hpp>
#include <acemq/zmq.hpp>

#include "../../support/handmade.hpp"
#include "../../support/wait.hpp"
#include "../../zmq/broker_process.hpp"
#include "../../zmq/raw_answer.hpp"
#include "zmq/protocol.hpp"

using namespace std::chrono_literals;

namespace zmq_limits {

using zmq_test::next_answer;

constexpr std::size_t limit = 1024 * 1024;

acemq::OutboundMessage sized_message(const std::string& queue, std::size_t body_bytes) {
    return {.routing_key = queue, .body = acemq::Bytes(body_bytes, std::byte{'b'}), .content_type = "text/plain"};
}

std::span<const std::byte> span_of(const msgpack::sbuffer& buffer) {
    return {reinterpret_cast<const std::byte*>(buffer.data()), buffer.size()};
}

void send_frame(::zmq::socket_t& dealer, const msgpack::sbuffer& frame) {
    dealer.send(::zmq::buffer(frame.data(), frame.size()), ::zmq::send_flags::none);
}

// A DEALER of the test's own, as another client would be, with a session started as `name`.
class RawPeer {
public:
    RawPeer(const std::string& endpoint, std::string_view name) {
        dealer.set(::zmq::sockopt::linger, 0);
        dealer.connect(endpoint);
        // It sends no heartbeats: a minute's interval keeps its session through a slow
        // (sanitizer, loaded machine) run's seconds between frames.
        send_frame(dealer, acemq::zmq::wire::encode_hello(1, name, 60000));
        const auto answer = next_answer(dealer);
        REQUIRE(answer);
        welcome = acemq::zmq::wire::read_welcome(acemq::zmq::wire::Frame::parse(*answer));
    }

    ::zmq::context_t context;
    ::zmq::socket_t dealer{context, ::zmq::socket_type::dealer};
    acemq::zmq::wire::Welcome welcome{};
};

// `size` bytes of zeros: no frame of the protocol.
msgpack::sbuffer zeros(std::size_t size) {
    msgpack::sbuffer buffer;
    buffer.write(std::string(size, '\0').data(), size);
    return buffer;
}

}  // namespace zmq_limits

TEST_CASE("zmq: a publish past the broker's frame limit is refused unsent; the session and other publishes go on") {
    using namespace zmq_limits;
    zmq_test::ThreadBroker broker(zmq_test::fresh_ipc_endpoint("limits"), {.max_frame_bytes = limit});
    std::atomic<int> lost{0};
    auto transport = acemq::zmq::open(broker.url(), {.session = {.on_event = [&](const acemq::ConnectionEvent& event) {
                                                         if (event.kind == acemq::ConnectionEvent::Kind::lost) ++lost;
                                                     }}});
    acemq::Bus bus = acemq::connect(transport);
    const std::string queue = "limits.publish";
    transport->declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));

    // Small publishes on another thread all the while; three times the limit would have made
    // libzmq drop the connection, and every publish in flight on it with the session.
    constexpr int small_ones = 200;
    std::atomic<int> small_confirmed{0};
    std::atomic<bool> big_done{false};
    std::thread beside([&] {
        for (int i = 0; i < small_ones; ++i) {
            if (transport->publish(sized_message(queue, 100)).confirmed) ++small_confirmed;
            if (i == small_ones / 2)
                testing_support::eventually([&] { return big_done.load(); }, std::chrono::seconds(60));
        }
    });
    std::string refusal;
    {
        // Whatever the big publish throws, the thread beside it goes on and is joined.
        struct Done {
            std::atomic<bool>& done;
            std::thread& beside;
            ~Done() {
                done.store(true);
                beside.join();
            }
        } done{big_done, beside};
        try {
            bus.publisher_to_queue(queue).send_raw(
                acemq::Encoded{acemq::Bytes(3 * limit, std::byte{'B'}), "text/plain"});
        } catch (const acemq::PublishError& error) {
            CHECK(error.reason() == acemq::PublishError::Reason::too_large);
            refusal = error.what();
        }
    }
    INFO(refusal);
    CHECK(refusal.find("its body " + std::to_string(3 * limit) + " bytes") != std::string::npos);
    CHECK(refusal.find("takes frames of at most " + std::to_string(limit) + " bytes") != std::string::npos);
    CHECK(refusal.find("--max-frame-bytes") != std::string::npos);
    CHECK(refusal.find("Nothing was written") != std::string::npos);
    CHECK(small_confirmed.load() == small_ones);
    CHECK(lost.load() == 0);
    // The session is the one it was: the next publish is confirmed, and nothing of the big one arrived.
    CHECK(transport->publish(sized_message(queue, 100)).confirmed);
    CHECK(transport->queue_depth(queue) == small_ones + 1);
    CHECK(broker.server().stats().sessions_ended == 0);
}

TEST_CASE("zmq: a frame past the limit from a raw peer is logged with its sender and size, answered, and survived") {
    using namespace zmq_limits;
    using acemq::zmq::wire::Command;
    const handmade::CapturedLog log;
    zmq_test::ThreadBroker broker("tcp://127.0.0.1:0", {.max_frame_bytes = limit});
    RawPeer raw(broker.endpoint(), "raw-peer");
    ::zmq::socket_t& dealer = raw.dealer;
    CHECK(raw.welcome.max_frame_bytes == limit);

    // A publish: its confirm refuses it as too large, naming the size and the limit.
    const msgpack::sbuffer publish = acemq::zmq::wire::encode_publish(7, sized_message("nowhere", limit + 1000));
    send_frame(dealer, publish);
    const auto confirm = next_answer(dealer);
    REQUIRE(confirm);
    const acemq::zmq::wire::Frame confirm_frame = acemq::zmq::wire::Frame::parse(*confirm);
    REQUIRE(confirm_frame.command() == Command::confirm);
    const acemq::zmq::wire::Confirm refused = acemq::zmq::wire::read_confirm(confirm_frame);
    CHECK(refused.sequence == 7);
    CHECK_FALSE(refused.result.confirmed);
    CHECK(refused.result.why == acemq::PublishResult::Unconfirmed::too_large);
    CHECK(refused.result.return_reason.find("a frame of " + std::to_string(publish.size()) + " bytes") !=
          std::string::npos);

    // Anything else past the limit: an error frame.
    send_frame(dealer, zeros(limit + 1));
    const auto error = next_answer(dealer);
    REQUIRE(error);
    const acemq::zmq::wire::Frame error_frame = acemq::zmq::wire::Frame::parse(*error);
    REQUIRE(error_frame.command() == Command::error);
    CHECK(acemq::zmq::wire::read_error(error_frame).code == acemq::zmq::wire::ErrorCode::malformed);

    // The session goes on: a ping is answered.
    send_frame(dealer, acemq::zmq::wire::encode_ping(9));
    const auto pong = next_answer(dealer);
    REQUIRE(pong);
    CHECK(acemq::zmq::wire::Frame::parse(*pong).command() == Command::reply);

    std::vector<std::string> warnings;
    for (const auto& [level, line] : log.lines())
        if (level == acemq::LogLevel::warning && handmade::contains(line, "over this broker's limit"))
            warnings.push_back(line);
    REQUIRE(warnings.size() == 2);
    CHECK(handmade::contains(warnings[0], "the peer at 127.0.0.1 (client \"raw-peer\")"));
    CHECK(handmade::contains(warnings[0], "a frame of " + std::to_string(publish.size()) + " bytes"));
    CHECK(handmade::contains(warnings[0], "limit of " + std::to_string(limit) + " bytes"));
    CHECK(handmade::contains(warnings[1], "a frame of " + std::to_string(limit + 1) + " bytes"));
    CHECK(broker.server().stats().sessions_ended == 0);
}

TEST_CASE("zmq: a frame past what the broker's socket takes costs that connection, and the broker logs whose") {
    using namespace zmq_limits;
    const handmade::CapturedLog log;
    zmq_test::ThreadBroker broker("tcp://127.0.0.1:0", {.max_frame_bytes = limit});
    RawPeer raw(broker.endpoint(), "raw-drop");
    // Three times the limit: libzmq refuses it unread, past the twice the limit it takes.
    send_frame(raw.dealer, zeros(3 * limit));
    const auto dropped = [&] {
        for (const auto& [level, line] : log.lines())
            if (level == acemq::LogLevel::warning && handmade::contains(line, "dropped while its session was open"))
                return line;
        return std::string();
    };
    REQUIRE(testing_support::eventually([&] { return !dropped().empty(); }, 10s));
    INFO(dropped());
    CHECK(handmade::contains(dropped(), "the peer at 127.0.0.1"));
    CHECK(handmade::contains(dropped(), "(client \"raw-drop\""));
    CHECK(handmade::contains(dropped(), "past the " + std::to_string(2 * limit) + " bytes the socket takes"));
}

TEST_CASE("zmq: errors the broker sends name the zmq broker at the client's URL, not an inproc broker") {
    using namespace zmq_limits;
    zmq_test::ThreadBroker broker(zmq_test::fresh_ipc_endpoint("naming"));
    auto transport = acemq::zmq::open(broker.url());
    const std::string here = "the zmq broker \"" + broker.broker()->name() + "\" at " + broker.url();
    std::string consume_error;
    try {
        transport->consume("limits.does.not.exist", {}, [](acemq::Delivery) {});
    } catch (const acemq::Error& error) {
        consume_error = error.what();
    }
    INFO(consume_error);
    CHECK(handmade::contains(consume_error, "NOT_FOUND - no such queue on " + here));
    CHECK_FALSE(handmade::contains(consume_error, "inproc broker"));

    acemq::OutboundMessage to_missing = sized_message("orders", 10);
    to_missing.exchange = "limits.no.such.exchange";
    const acemq::PublishResult refused = transport->publish(std::move(to_missing));
    INFO(refused.return_reason);
    CHECK_FALSE(refused.confirmed);
    CHECK(handmade::contains(refused.return_reason, "no exchange 'limits.no.such.exchange' on " + here));
    CHECK_FALSE(handmade::contains(refused.return_reason, "inproc broker"));
}
