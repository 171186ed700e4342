// Suite `reliability` (AMQP part): the transport and the engine against messages a hostile
// or careless sender can put on RabbitMQ. A field rabbitmq-c cannot encode is refused before
// anything is written, never at the cost of the connection; a copy the engine cannot send
// back is set aside, never circled; headers nested ~18,000 deep (RabbitMQ takes them) are
// parked as undecodable while the consumer goes on.
//
// Needs the test broker: ACEMQ_TEST_AMQP_URL (scripts/test sets it; by hand, `source
// /tmp/acemq-env.sh` or scripts/servers.sh). Without it every test fails, never skips.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <acemq/amqp.hpp>
#include "amqp/address.hpp"

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include "../../support/rabbitmq.hpp"
#include "../../support/wait.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string hostile_name(std::string_view base) {
    return "hostile." + std::string(base) + "." + acemq::new_uuid().substr(0, 8);
}

using testing_support::eventually;

acemq::Bytes bytes(std::string_view text) {
    const auto* data = reinterpret_cast<const std::byte*>(text.data());
    return acemq::Bytes(data, data + text.size());
}

std::string text(std::span<const std::byte> body) {
    return std::string(reinterpret_cast<const char*>(body.data()), body.size());
}

std::string header_text(const acemq::Headers& headers, std::string_view name) {
    const auto found = headers.find(name);
    return found == headers.end() ? std::string() : found->second.as_text().value_or("");
}

// A transport that counts the connections it lost, a bus on it, and the queues a test made
// (deleted at the end, with their .dlq and .parked).
class Broker {
public:
    Broker()
        : transport_(acemq::amqp::open(testing_support::amqp_url(),
                                       {.session = {.on_event =
                                                        [this](const acemq::ConnectionEvent& event) {
                                                            if (event.kind == acemq::ConnectionEvent::Kind::lost)
                                                                ++lost_;
                                                        }}})),
          bus_(acemq::connect(transport_, {.origin = "hostile@test"})) {}
    ~Broker() {
        bus_.close();
        for (const std::string& queue : queues_)
            for (const std::string& name : {queue, acemq::dead_letter_queue(queue), acemq::parked_queue(queue)}) {
                try {
                    transport_->delete_queue(name);
                } catch (const std::exception&) {
                    // Cleanup only: a queue left behind has a unique name and harms no other test.
                }
            }
        transport_->close();
    }
    Broker(const Broker&) = delete;
    Broker& operator=(const Broker&) = delete;

    std::string queue(std::string_view base) {
        std::string name = hostile_name(base);
        bus_.declare(acemq::Topology{}.queue(name, {.type = acemq::QueueType::classic, .durable = false}));
        queues_.push_back(name);
        return name;
    }

    acemq::Transport& transport() { return *transport_; }
    acemq::Bus& bus() { return bus_; }
    int lost() const { return lost_.load(); }

    // Takes one message off `queue` (waiting up to 10 s for it) and acks it.
    acemq::InboundMessage take(const std::string& queue) {
        std::optional<acemq::Delivery> delivery;
        REQUIRE(eventually([&] { return (delivery = transport_->pull(queue)).has_value(); }, 10s));
        acemq::InboundMessage message = delivery->message();
        delivery->ack();
        return message;
    }

private:
    std::atomic<int> lost_{0};
    std::shared_ptr<acemq::Transport> transport_;
    acemq::Bus bus_;
    std::vector<std::string> queues_;
};

acemq::OutboundMessage raw_message(const std::string& queue, std::string_view body, acemq::Headers headers = {}) {
    acemq::OutboundMessage message;
    message.routing_key = queue;
    message.body = bytes(body);
    message.content_type = "text/plain";
    message.headers = std::move(headers);
    return message;
}

// Counts what a raw consumer's handler saw, by body.
struct Seen {
    std::atomic<int> hostile{0};
    std::atomic<int> next{0};
    void count(const acemq::RawMessage& message) {
        if (text(message.payload) == "next")
            ++next;
        else
            ++hostile;
    }
};

// Publishes `hostile` and then a plain "next" to `queue`, consumes both, the hostile one
// answered by `handle_hostile` ("next" is accepted), and returns what lands in `target`
// ({queue}.dlq or .parked). Checks on the way that the hostile message was handled once,
// never looped, that "next" was handled too, and that the connection stayed up.
acemq::InboundMessage set_aside_once(Broker& broker, const std::string& queue, acemq::OutboundMessage hostile,
                                     const std::function<acemq::Ack()>& handle_hostile, acemq::RetryPolicy policy,
                                     const std::string& target) {
    REQUIRE(broker.transport().publish(std::move(hostile)).confirmed);
    REQUIRE(broker.transport().publish(raw_message(queue, "next")).confirmed);
    Seen seen;
    acemq::Consumer consumer =
        broker.bus().consume_raw(queue,
                                 [&](const acemq::RawMessage& message) {
                                     seen.count(message);
                                     return text(message.payload) == "next" ? acemq::accept() : handle_hostile();
                                 },
                                 {.retry = std::move(policy)});
    CHECK(eventually([&] { return seen.next.load() == 1 && broker.transport().queue_depth(target) == 1; }, 10s));
    consumer.close();
    CHECK(seen.hostile.load() == 1);
    CHECK(seen.next.load() == 1);
    CHECK(broker.lost() == 0);
    acemq::InboundMessage held = broker.take(target);
    CHECK(text(held.body()) == "hostile");
    CHECK(broker.transport().queue_depth(queue) == 0);
    return held;
}

// rabbitmq-c with nothing of ours in between, for what our transport refuses to write.
class RawPublisher {
public:
    explicit RawPublisher(const std::string& url) : state_(amqp_new_connection()) {
        const acemq::amqp::Address address = acemq::amqp::parse_address(url);
        amqp_socket_t* socket = amqp_tcp_socket_new(state_);
        REQUIRE(socket != nullptr);
        REQUIRE(amqp_socket_open(socket, address.host.c_str(), address.port) == AMQP_STATUS_OK);
        const std::string user = address.user.value_or("guest");
        const std::string password = address.password.value_or("guest");
        const amqp_rpc_reply_t login = amqp_login(state_, address.vhost.c_str(), 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                                                  user.c_str(), password.c_str());
        REQUIRE(login.reply_type == AMQP_RESPONSE_NORMAL);
        amqp_channel_open(state_, 1);
        REQUIRE(amqp_get_rpc_reply(state_).reply_type == AMQP_RESPONSE_NORMAL);
    }
    ~RawPublisher() {
        amqp_channel_close(state_, 1, AMQP_REPLY_SUCCESS);
        amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(state_);
    }
    RawPublisher(const RawPublisher&) = delete;
    RawPublisher& operator=(const RawPublisher&) = delete;

    // Publishes and waits until the broker has taken it (a passive declare after it on the
    // same channel is answered only once the publish before it was handled).
    void publish(const std::string& queue, std::string_view body, const amqp_table_t& headers) {
        amqp_basic_properties_t properties{};
        properties._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
        properties.content_type = amqp_cstring_bytes("text/plain");
        properties.headers = headers;
        const int status = amqp_basic_publish(state_, 1, amqp_empty_bytes, amqp_cstring_bytes(queue.c_str()), 0, 0,
                                              &properties, amqp_bytes_t{body.size(), const_cast<char*>(body.data())});
        REQUIRE(status == AMQP_STATUS_OK);
        amqp_queue_declare(state_, 1, amqp_cstring_bytes(queue.c_str()), 1, 0, 0, 0, amqp_empty_table);
        REQUIRE(amqp_get_rpc_reply(state_).reply_type == AMQP_RESPONSE_NORMAL);
    }

private:
    amqp_connection_state_t state_;
};

// A headers table whose one entry holds a table holding a table ... `depth` levels in all.
class NestedTable {
public:
    explicit NestedTable(int depth) : entries_(static_cast<std::size_t>(depth - 1)) {
        for (std::size_t i = 0; i < entries_.size(); ++i) {
            entries_[i].key = amqp_cstring_bytes("a");
            entries_[i].value.kind = AMQP_FIELD_KIND_TABLE;
            entries_[i].value.value.table =
                i + 1 < entries_.size() ? amqp_table_t{1, &entries_[i + 1]} : amqp_table_t{0, nullptr};
        }
        root_ = amqp_table_t{1, entries_.data()};
    }
    const amqp_table_t& get() const { return root_; }

private:
    std::vector<amqp_table_entry_t> entries_;
    amqp_table_t root_{};
};

const std::string long_id(300, 'i');

}  // namespace

TEST_CASE("AMQP hostile: a message id over 255 bytes is refused on send, naming it, and the connection stays up") {
    Broker broker;
    const std::string queue = broker.queue("long-id");
    const acemq::Publisher publisher = broker.bus().publisher_to_queue(queue);
    std::string refusal;
    try {
        publisher.send_raw(acemq::Encoded{bytes("hello"), "text/plain"}, {.message_id = long_id});
        FAIL("a 300-byte message id was sent");
    } catch (const acemq::PublishError& error) {
        CHECK(error.reason() == acemq::PublishError::Reason::too_large);
        refusal = error.what();
    }
    INFO(refusal);
    CHECK(refusal.find("the message id is 300 bytes long") != std::string::npos);
    CHECK(refusal.find("at most 255") != std::string::npos);
    CHECK(refusal.find("Nothing was written") != std::string::npos);
    CHECK(broker.lost() == 0);
    CHECK(acemq::amqp::state(broker.transport()).connected);
    // The next one goes out on the same connection.
    CHECK(publisher.send_raw(acemq::Encoded{bytes("after"), "text/plain"}).confirmed);
    CHECK(broker.lost() == 0);
    CHECK(text(broker.take(queue).body()) == "after");
}

TEST_CASE("AMQP hostile: other fields rabbitmq-c cannot encode are refused unwritten, each named, on one connection") {
    Broker broker;
    const std::string queue = broker.queue("fields");
    auto refused = [&](acemq::OutboundMessage message) {
        const acemq::PublishResult result = broker.transport().publish(std::move(message));
        CHECK_FALSE(result.confirmed);
        return result.return_reason;
    };
    acemq::OutboundMessage content_type = raw_message(queue, "x");
    content_type.content_type = std::string(256, 'c');
    CHECK(refused(std::move(content_type)).find("the content type is 256 bytes long") != std::string::npos);

    acemq::OutboundMessage reply_to = raw_message(queue, "x");
    reply_to.reply_to = std::string(400, 'r');
    CHECK(refused(std::move(reply_to)).find("the reply-to address is 400 bytes long") != std::string::npos);

    acemq::OutboundMessage routing_key = raw_message(std::string(256, 'k'), "x");
    CHECK(refused(std::move(routing_key)).find("the routing key is 256 bytes long") != std::string::npos);

    // rabbitmq-c writes a name's length in one byte: 300 would go out as 44, garbling the frame.
    acemq::OutboundMessage name = raw_message(queue, "x", {{"app", acemq::FieldTable{{std::string(300, 'n'), 1}}}});
    CHECK(refused(std::move(name)).find("is 300 bytes long; AMQP 0-9-1 allows at most 255") != std::string::npos);

    acemq::FieldValue deep = acemq::FieldTable{};
    for (int level = 0; level < 70; ++level) deep = acemq::FieldArray{deep};
    acemq::OutboundMessage nested = raw_message(queue, "x", {{"deep", deep}});
    CHECK(refused(std::move(nested)).find("more than 64 levels deep") != std::string::npos);

    CHECK(broker.lost() == 0);
    CHECK(broker.transport().publish(raw_message(queue, "fine")).confirmed);
    CHECK(text(broker.take(queue).body()) == "fine");
    CHECK(broker.transport().queue_depth(queue) == 0);
}

TEST_CASE("AMQP hostile: in a batch only the message that cannot be encoded is refused; the others go, in order") {
    Broker broker;
    const std::string queue = broker.queue("batch");
    std::vector<acemq::OutboundMessage> batch;
    batch.push_back(raw_message(queue, "first"));
    batch.push_back(raw_message(queue, "bad"));
    batch.back().message_id = long_id;
    batch.push_back(raw_message(queue, "third"));
    const std::vector<acemq::PublishResult> results = broker.transport().publish_batch(std::move(batch));
    REQUIRE(results.size() == 3);
    CHECK(results[0].confirmed);
    CHECK_FALSE(results[1].confirmed);
    CHECK(results[1].return_reason.find("the message id is 300 bytes long") != std::string::npos);
    CHECK(results[2].confirmed);
    CHECK(broker.lost() == 0);
    CHECK(text(broker.take(queue).body()) == "first");
    CHECK(text(broker.take(queue).body()) == "third");
    CHECK(broker.transport().queue_depth(queue) == 0);
}

TEST_CASE("AMQP hostile: headers past the frame are refused with their size and the limit; headers that just fit go") {
    Broker broker;
    const std::string queue = broker.queue("frame");
    // Properties of such a message: flags 2, empty content type 1... laid out in
    // transports/amqp/wire.cpp: 2 + (1 + 10) + headers (4 + 1 + 3 + 1 + 4 + n) + 1 = 27 + n,
    // and a content header holds frame_max (131072 here) less 20 bytes of framing.
    const std::size_t fits = 131072 - 20 - 27;
    const acemq::PublishResult sent =
        broker.transport().publish(raw_message(queue, "fits", {{"pad", std::string(fits, 'p')}}));
    INFO(sent.return_reason);
    CHECK(sent.confirmed);
    const acemq::PublishResult over =
        broker.transport().publish(raw_message(queue, "over", {{"pad", std::string(fits + 1, 'p')}}));
    INFO(over.return_reason);
    CHECK_FALSE(over.confirmed);
    CHECK(over.return_reason.find("the headers take 131039 bytes encoded (131053 with the other properties)") !=
          std::string::npos);
    CHECK(over.return_reason.find("holds at most 131052 (frame_max 131072 less 20 bytes of framing)") !=
          std::string::npos);
    CHECK(broker.lost() == 0);
    CHECK(header_text(broker.take(queue).headers().table(), "pad").size() == fits);
    CHECK(broker.transport().queue_depth(queue) == 0);
}

TEST_CASE(
    "AMQP hostile: a rejected message whose id cannot be a message-id property is dead-lettered once, not looped") {
    Broker broker;
    const std::string queue = broker.queue("reject-long-id");
    // The envelope's id travels in x-acemq-id, a long string; the set-aside copy would carry it
    // as the message-id property too, a short one.
    const acemq::InboundMessage dead = set_aside_once(
        broker, queue, raw_message(queue, "hostile", {{"x-acemq-id", long_id}}), [] { return acemq::reject(); },
        acemq::no_retry(), acemq::dead_letter_queue(queue));
    CHECK(header_text(dead.headers().table(), "x-acemq-id") == long_id);
    const std::string error = header_text(dead.headers().table(), "x-acemq-error");
    INFO(error);
    CHECK(error.find("the handler rejected it") != std::string::npos);
    CHECK(error.find("the message id is 300 bytes long") != std::string::npos);
}

TEST_CASE("AMQP hostile: a retry whose copy cannot be encoded parks the message instead of coming round again") {
    Broker broker;
    const std::string queue = broker.queue("retry-long-id");
    const acemq::InboundMessage held = set_aside_once(
        broker, queue, raw_message(queue, "hostile", {{"x-acemq-id", long_id}}),
        []() -> acemq::Ack { throw std::runtime_error("the receipt service is down"); },
        acemq::fixed_retry(3, 10ms).wait_in_broker_from(0ms), acemq::parked_queue(queue));
    const std::string error = header_text(held.headers().table(), "x-acemq-error");
    INFO(error);
    CHECK(error.find("could not be published again for another attempt: the message id is 300 bytes long") !=
          std::string::npos);
    CHECK(broker.transport().queue_depth(acemq::dead_letter_queue(queue)) == 0);
}

TEST_CASE("AMQP hostile: a set-aside copy past the frame goes without its application headers, its error cut short") {
    Broker broker;
    const std::string queue = broker.queue("big-set-aside");
    // Fits on the way in; with a 5,000-byte reason added it no longer does.
    const acemq::InboundMessage dead = set_aside_once(
        broker, queue, raw_message(queue, "hostile", {{"pad", std::string(128'000, 'p')}, {"x-acemq-id", "m-1"}}),
        []() -> acemq::Ack { throw acemq::FatalError("bad order: " + std::string(5000, 'r')); }, acemq::no_retry(),
        acemq::dead_letter_queue(queue));
    CHECK(header_text(dead.headers().table(), "x-acemq-id") == "m-1");
    CHECK_FALSE(dead.headers().contains("pad"));
    const std::string error = header_text(dead.headers().table(), "x-acemq-error");
    INFO(error);
    CHECK(error.find("bad order: rrr") != std::string::npos);
    CHECK(error.find("[set aside without its application headers and with this text cut to at most 1024 bytes") !=
          std::string::npos);
    CHECK(error.find("the headers take") != std::string::npos);
    CHECK(error.size() < 3000);
}

TEST_CASE("AMQP: a publish RabbitMQ refuses (404, 406) is reported refused with its reply, not as in doubt") {
    Broker broker;
    const std::string queue = broker.queue("refused");
    const std::string missing = hostile_name("no-such-exchange");
    acemq::OutboundMessage to_missing = raw_message("orders", "x");
    to_missing.exchange = missing;
    const acemq::PublishResult not_found = broker.transport().publish(std::move(to_missing));
    INFO(not_found.return_reason);
    CHECK_FALSE(not_found.confirmed);
    CHECK(not_found.why == acemq::PublishResult::Unconfirmed::refused);
    CHECK(not_found.return_reason.find("404 NOT_FOUND - no exchange '" + missing + "'") != std::string::npos);
    try {
        broker.bus().publisher(missing, "orders").send_raw(acemq::Encoded{bytes("x"), "text/plain"});
        FAIL("a publish to a missing exchange returned normally");
    } catch (const acemq::PublishError& error) {
        INFO(error.what());
        CHECK(error.reason() == acemq::PublishError::Reason::refused);
        CHECK(std::string_view(error.what()).find("the broker refused") != std::string_view::npos);
        CHECK(std::string_view(error.what()).find("404 NOT_FOUND") != std::string_view::npos);
        CHECK(std::string_view(error.what()).find("unknown whether") == std::string_view::npos);
    }
    // scripts/servers.sh sets the test broker's max_message_size to 16 MiB.
    constexpr std::size_t max_message_size = 16 * 1024 * 1024;
    const acemq::PublishResult too_big =
        broker.transport().publish(raw_message(queue, std::string(max_message_size + 1, 'b')));
    INFO(too_big.return_reason);
    CHECK_FALSE(too_big.confirmed);
    CHECK(too_big.why == acemq::PublishResult::Unconfirmed::refused);
    CHECK(too_big.return_reason.find("406 PRECONDITION_FAILED - message size " + std::to_string(max_message_size + 1) +
                                     " is larger than") != std::string::npos);
    // The channel was closed and reopened, never the connection.
    CHECK(broker.lost() == 0);
    CHECK(broker.transport().publish(raw_message(queue, "after")).confirmed);
    CHECK(text(broker.take(queue).body()) == "after");
}

TEST_CASE("AMQP: in a batch, the publish RabbitMQ refuses and those after it are refused; none after it arrives") {
    Broker broker;
    const std::string queue = broker.queue("refused-batch");
    const std::string missing = hostile_name("no-such-exchange");
    std::vector<acemq::OutboundMessage> batch;
    batch.push_back(raw_message(queue, "first"));
    batch.push_back(raw_message("orders", "refused"));
    batch.back().exchange = missing;
    batch.push_back(raw_message(queue, "third"));
    const std::vector<acemq::PublishResult> results = broker.transport().publish_batch(std::move(batch));
    REQUIRE(results.size() == 3);
    // The first went before the refused one: taken, or, when the close overtook its confirm, in doubt.
    CHECK((results[0].confirmed || results[0].why == acemq::PublishResult::Unconfirmed::lost));
    CHECK_FALSE(results[1].confirmed);
    CHECK(results[1].why == acemq::PublishResult::Unconfirmed::refused);
    CHECK(results[1].return_reason.find("404 NOT_FOUND - no exchange '" + missing + "'") != std::string::npos);
    CHECK_FALSE(results[2].confirmed);
    CHECK(results[2].why == acemq::PublishResult::Unconfirmed::refused);
    CHECK(results[2].return_reason.find("dropped this one") != std::string::npos);
    CHECK(broker.lost() == 0);
    REQUIRE(broker.transport().publish(raw_message(queue, "after")).confirmed);
    std::vector<std::string> arrived;
    for (;;) {
        arrived.push_back(text(broker.take(queue).body()));
        if (arrived.back() == "after") break;
    }
    CHECK(std::find(arrived.begin(), arrived.end(), "third") == arrived.end());
}

TEST_CASE("AMQP hostile: a 100 KB id is dead-lettered once, cut to fit with a note, and the next message is handled") {
    Broker broker;
    const std::string queue = broker.queue("huge-id");
    // Fits on the way in, once; the copy carries it twice (x-acemq-id and x-acemq-correlation,
    // which defaults to it), past the frame even without application headers.
    const std::string huge_id(100'000, 'h');
    const acemq::InboundMessage dead = set_aside_once(
        broker, queue, raw_message(queue, "hostile", {{"x-acemq-id", huge_id}}),
        []() -> acemq::Ack { throw std::runtime_error("the receipt service is down"); }, acemq::no_retry(),
        acemq::dead_letter_queue(queue));
    CHECK(broker.transport().queue_depth(acemq::dead_letter_queue(queue)) == 0);  // it was there once
    const std::string id = header_text(dead.headers().table(), "x-acemq-id");
    CHECK_FALSE(id.empty());
    CHECK(id.size() < huge_id.size());
    CHECK(huge_id.starts_with(id));
    const std::string error = header_text(dead.headers().table(), "x-acemq-error");
    INFO(error.substr(0, 3000));
    CHECK(error.find("the receipt service is down") != std::string::npos);
    CHECK(error.find("x-acemq-id cut from 100000 to " + std::to_string(id.size()) + " bytes") != std::string::npos);
    CHECK(error.find("x-acemq-correlation cut from 100000 to") != std::string::npos);
    CHECK(error.find("so that the copy fits the 131052 bytes of properties") != std::string::npos);
}

TEST_CASE(
    "AMQP hostile: headers nested 18,000 deep are parked as undecodable; the consumer lives and handles the next") {
    Broker broker;
    const std::string queue = broker.queue("deep");
    {
        RawPublisher raw(testing_support::amqp_url());
        const NestedTable deep(18'000);
        raw.publish(queue, "hostile", deep.get());
        // One level past the limit is as undecodable as 18,000; the limit itself is read.
        const NestedTable over(65);
        raw.publish(queue, "hostile", over.get());
        const NestedTable limit(64);
        raw.publish(queue, "next", limit.get());
    }
    Seen seen;
    acemq::Consumer consumer = broker.bus().consume_raw(queue, [&](const acemq::RawMessage& message) {
        seen.count(message);
        return acemq::accept();
    });
    const std::string parked = acemq::parked_queue(queue);
    CHECK(eventually([&] { return seen.next.load() == 1 && broker.transport().queue_depth(parked) == 2; }, 10s));
    consumer.close();
    CHECK(seen.hostile.load() == 0);
    CHECK(broker.lost() == 0);
    for (int i = 0; i < 2; ++i) {
        const acemq::InboundMessage held = broker.take(parked);
        CHECK(text(held.body()) == "hostile");
        CHECK_FALSE(held.headers().contains("a"));
        const std::string error = header_text(held.headers().table(), "x-acemq-error");
        INFO(error);
        CHECK(error.find("could not be decoded") != std::string::npos);
        CHECK(error.find("more than 64 levels deep") != std::string::npos);
    }
    CHECK(broker.transport().queue_depth(queue) == 0);
}
