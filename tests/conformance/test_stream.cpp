// Streams (docs/streams.md, docs/wire-contract.md §5.9): reading a stream queue
// through read_stream on whichever transport the suite runs against. RabbitMQ reads its
// streams over AMQP 0-9-1 with the x-stream-offset consumer argument; the embedded broker's
// stream queues must read the same.
//
// Every wait is bounded. That a reader saw nothing more is shown by a marker appended after
// it started, never by waiting for silence: a stream delivers in order, so what the reader
// sees before the marker is all it will see before it.
#include "conformance.hpp"

#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

using namespace conformance;
using acemq::Message;

namespace {

// What one reader saw, in order: each message's id and the x-stream-offset it came with.
class Seen {
public:
    acemq::Ack add(const Message<Order>& message) {
        {
            std::lock_guard guard(lock_);
            ids_.push_back(message.payload.id);
            offsets_.push_back(acemq::stream_offset(message));
        }
        changed_.notify_all();
        return acemq::accept();
    }
    // Until `id` arrived (true), or 10 s passed.
    bool wait_for(const std::string& id) {
        std::unique_lock guard(lock_);
        return changed_.wait_for(guard, 10s, [&] { return std::find(ids_.begin(), ids_.end(), id) != ids_.end(); });
    }
    std::vector<std::string> ids() {
        std::lock_guard guard(lock_);
        return ids_;
    }
    std::vector<std::optional<std::int64_t>> offsets() {
        std::lock_guard guard(lock_);
        return offsets_;
    }
    // The offset `id` was delivered at.
    std::int64_t offset_of(const std::string& id) {
        std::lock_guard guard(lock_);
        const auto at = std::find(ids_.begin(), ids_.end(), id);
        REQUIRE(at != ids_.end());
        const std::optional<std::int64_t> offset = offsets_[static_cast<std::size_t>(at - ids_.begin())];
        REQUIRE(offset);
        return *offset;
    }

private:
    std::mutex lock_;
    std::condition_variable changed_;
    std::vector<std::string> ids_;
    std::vector<std::optional<std::int64_t>> offsets_;
};

// A fresh bus with a declared stream.
struct Log {
    Fixture f;
    const std::string stream = f.name("log");
    acemq::Publisher out = [this] {
        acemq::declare_stream(f.bus(), stream, {.max_age = std::chrono::days(1)});
        return f.bus().publisher_to_queue(stream);
    }();

    void append(std::initializer_list<const char*> ids) {
        for (const char* id : ids) out.send(Order{id, 1});
    }
    acemq::Consumer read(Seen& seen, acemq::StreamReadOptions options = {}) {
        return acemq::read_stream(
            f.bus(), stream, [&seen](const Message<Order>& message) { return seen.add(message); }, std::move(options));
    }
    // Everything the stream holds, read by a fresh reader from the first message to `last`.
    std::vector<std::string> everything(const std::string& last) {
        Seen all;
        acemq::Consumer reader = read(all, {.offset = acemq::StreamOffset::first()});
        CHECK(all.wait_for(last));
        return all.ids();
    }
};

using Ids = std::vector<std::string>;

bool increasing(const std::vector<std::optional<std::int64_t>>& offsets) {
    for (std::size_t i = 0; i < offsets.size(); ++i) {
        if (!offsets[i]) return false;
        if (i > 0 && *offsets[i] <= *offsets[i - 1]) return false;
    }
    return true;
}

std::string error_of(const acemq::Delivery& delivery) { return envelope_of(delivery).error; }

}  // namespace

TEST_CASE("a stream read from the first message delivers each with an increasing offset; reading removes nothing") {
    Log log;
    log.append({"o-1", "o-2", "o-3", "o-4", "o-5"});
    Seen first;
    acemq::Consumer reader = log.read(first, {.offset = acemq::StreamOffset::first(), .consumer_name = "billing"});
    REQUIRE(first.wait_for("o-5"));
    CHECK(first.ids() == Ids{"o-1", "o-2", "o-3", "o-4", "o-5"});
    CHECK(increasing(first.offsets()));

    // A second reader from the first message sees all of them again, at the same offsets.
    Seen second;
    acemq::Consumer again = log.read(second, {.offset = acemq::StreamOffset::first()});
    REQUIRE(second.wait_for("o-5"));
    CHECK(second.ids() == first.ids());
    CHECK(second.offsets() == first.offsets());
}

TEST_CASE("a stream read from next delivers only what is appended after the reader started") {
    Log log;
    log.append({"old-1", "old-2", "old-3"});
    Seen seen;
    acemq::Consumer reader = log.read(seen);  // next, the default
    log.append({"new-1", "new-2"});
    REQUIRE(seen.wait_for("new-2"));
    CHECK(seen.ids() == Ids{"new-1", "new-2"});
    CHECK(increasing(seen.offsets()));
}

TEST_CASE("a stream read from an exact offset starts at that message") {
    Log log;
    log.append({"o-1", "o-2", "o-3", "o-4", "o-5"});
    Seen first;
    acemq::Consumer whole = log.read(first, {.offset = acemq::StreamOffset::first()});
    REQUIRE(first.wait_for("o-5"));

    Seen from_third;
    acemq::Consumer reader = log.read(from_third, {.offset = acemq::StreamOffset::at(first.offset_of("o-3"))});
    REQUIRE(from_third.wait_for("o-5"));
    CHECK(from_third.ids() == Ids{"o-3", "o-4", "o-5"});
    CHECK(from_third.offset_of("o-3") == first.offset_of("o-3"));
}

TEST_CASE("a stream read from a timestamp starts at what was appended from that second on") {
    Log log;
    log.append({"before-1", "before-2"});
    // Offsets by time are to the second: the messages after the instant read from are
    // appended a whole second later than those before it.
    const auto appended = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    const auto from = appended + 1s;
    std::this_thread::sleep_until(from + 1s);
    log.append({"after-1", "after-2"});

    Seen seen;
    acemq::Consumer reader = log.read(seen, {.offset = acemq::StreamOffset::at(from)});
    REQUIRE(seen.wait_for("after-2"));
    CHECK(seen.ids() == Ids{"after-1", "after-2"});
}

TEST_CASE("a checkpoint is the delivery's x-stream-offset; resuming at offset + 1 reads exactly the rest") {
    Log log;
    log.append({"o-1", "o-2", "o-3", "o-4", "o-5", "o-6"});
    std::int64_t checkpoint = -1;
    {
        Seen first;
        acemq::Consumer reader = log.read(first, {.offset = acemq::StreamOffset::first()});
        REQUIRE(first.wait_for("o-6"));
        checkpoint = first.offset_of("o-3");
    }
    Seen rest;
    acemq::Consumer resumed = log.read(rest, {.offset = acemq::StreamOffset::at(checkpoint + 1)});
    log.append({"end"});
    REQUIRE(rest.wait_for("end"));
    CHECK(rest.ids() == Ids{"o-4", "o-5", "o-6", "end"});
    CHECK(rest.offset_of("o-4") == checkpoint + 1);
}

TEST_CASE("a retry or in_progress on a stream is refused: parked to {stream}.parked and nothing appended") {
    Log log;
    const std::string parked = acemq::parked_queue(log.stream);
    log.append({"retried", "waited", "thrown", "end"});
    Seen seen;
    acemq::Consumer reader =
        acemq::read_stream(log.f.bus(), log.stream,
                           [&seen](const Message<Order>& message) -> acemq::Ack {
                               seen.add(message);
                               if (message.payload.id == "retried")
                                   return acemq::retry(acemq::Failure::of(std::runtime_error("the ledger is down")));
                               if (message.payload.id == "waited") return acemq::in_progress(10ms);
                               if (message.payload.id == "thrown") throw std::runtime_error("boom");
                               return acemq::accept();
                           },
                           {.offset = acemq::StreamOffset::first()});
    REQUIRE(seen.wait_for("end"));
    // Each handled once: no copy came round again.
    CHECK(seen.ids() == Ids{"retried", "waited", "thrown", "end"});

    REQUIRE(log.f.wait_depth(parked, 3));
    const std::vector<std::string> expected = {"cannot retry a message", "cannot leave a message in progress",
                                               "cannot retry a message"};
    for (const std::string& words : expected) {
        std::optional<acemq::Delivery> copy = log.f.pull(parked);
        REQUIRE(copy);
        const std::string error = error_of(*copy);
        CHECK_THAT(error, Catch::StartsWith("the handler parked it: acemq::StreamRetryError: ") &&
                              Catch::Contains(words) && Catch::Contains(parked));
        copy->ack();
    }
    CHECK(log.f.transport().queue_depth(acemq::dead_letter_queue(log.stream)) == 0);
    // The originals stay, and no copy was appended.
    CHECK(log.everything("end") == Ids{"retried", "waited", "thrown", "end"});
}

TEST_CASE("reject sets a copy aside to {stream}.dlq and park to {stream}.parked; the originals stay in the stream") {
    Log log;
    const std::string dlq = acemq::dead_letter_queue(log.stream);
    const std::string parked = acemq::parked_queue(log.stream);
    log.append({"kept", "rejected", "parked", "end"});
    Seen seen;
    acemq::Consumer reader = acemq::read_stream(log.f.bus(), log.stream,
                                                [&seen](const Message<Order>& message) -> acemq::Ack {
                                                    seen.add(message);
                                                    if (message.payload.id == "rejected")
                                                        return acemq::reject(std::invalid_argument("no sku"));
                                                    if (message.payload.id == "parked")
                                                        return acemq::park(std::invalid_argument("ask a person"));
                                                    return acemq::accept();
                                                },
                                                {.offset = acemq::StreamOffset::first()});
    REQUIRE(seen.wait_for("end"));

    std::optional<acemq::Delivery> dead = log.f.pull(dlq);
    REQUIRE(dead);
    CHECK(acemq::decode<Order>(*acemq::default_codec(), dead->message().body(), dead->message().content_type()).id ==
          "rejected");
    CHECK(error_of(*dead) == "the handler rejected it: std::invalid_argument: no sku");
    // The copy says where in the stream its original is.
    CHECK(acemq::stream_offset(envelope_of(*dead)) == seen.offset_of("rejected"));
    dead->ack();
    std::optional<acemq::Delivery> aside = log.f.pull(parked);
    REQUIRE(aside);
    CHECK(error_of(*aside) == "the handler parked it: std::invalid_argument: ask a person");
    aside->ack();

    CHECK(log.everything("end") == Ids{"kept", "rejected", "parked", "end"});
}

TEST_CASE("hostile: a stream read from an offset beyond its end waits for the log to reach it; nothing is lost") {
    Log log;
    log.append({"o-1", "o-2", "o-3"});
    Seen first;
    acemq::Consumer whole = log.read(first, {.offset = acemq::StreamOffset::first()});
    REQUIRE(first.wait_for("o-3"));
    const std::int64_t beyond = first.offset_of("o-3") + 3;

    Seen ahead;
    acemq::Consumer reader = log.read(ahead, {.offset = acemq::StreamOffset::at(beyond)});
    log.append({"n-1", "n-2", "n-3", "n-4"});
    REQUIRE(ahead.wait_for("n-4"));
    // n-1 and n-2 sit before the offset asked for; n-3 is at it.
    CHECK(ahead.ids() == Ids{"n-3", "n-4"});
    CHECK(ahead.offset_of("n-3") == beyond);
    CHECK(log.everything("n-4") == Ids{"o-1", "o-2", "o-3", "n-1", "n-2", "n-3", "n-4"});
}

TEST_CASE("hostile: a stream read from the largest offset there is waits without failing") {
    Log log;
    log.append({"o-1"});
    Seen far;
    acemq::Consumer reader =
        log.read(far, {.offset = acemq::StreamOffset::at(std::numeric_limits<std::uint64_t>::max())});
    log.append({"o-2"});
    // The reader is still reading (nothing it could be given), and the stream still holds both.
    CHECK(log.everything("o-2") == Ids{"o-1", "o-2"});
    CHECK(far.ids().empty());
    CHECK(log.f.bus().health().status == acemq::Health::Status::up);
}

namespace {

// Counts set-asides that could not be published, and wakes a test waiting for one.
class SetAsideFailures : public acemq::Observer {
public:
    void set_aside_failed(std::string_view, std::string_view) override {
        {
            std::lock_guard guard(lock_);
            ++count_;
        }
        changed_.notify_all();
    }
    bool wait_for(int count) {
        std::unique_lock guard(lock_);
        return changed_.wait_for(guard, 10s, [&] { return count_ >= count; });
    }

private:
    std::mutex lock_;
    std::condition_variable changed_;
    int count_ = 0;
};

}  // namespace

TEST_CASE("hostile: a reject with no {stream}.dlq to take it is kept and tried again rather than skipped") {
    Log log;
    auto failures = std::make_shared<SetAsideFailures>();
    log.f.bus().add_observer(failures);
    log.append({"rejected", "end"});
    Seen seen;
    acemq::Consumer reader = acemq::read_stream(
        log.f.bus(), log.stream,
        [&seen](const Message<Order>& message) -> acemq::Ack {
            seen.add(message);
            return message.payload.id == "rejected" ? acemq::reject(std::invalid_argument("no sku")) : acemq::accept();
        },
        {.offset = acemq::StreamOffset::first(), .declare = false});
    // A stream takes no nack: the reader holds the message while it has nowhere to go...
    REQUIRE(failures->wait_for(2));
    CHECK(seen.ids() == Ids{"rejected"});
    // ...and sets it aside once it has, then reads on, on a connection still in good health.
    log.f.bus().declare(acemq::consumer_topology(log.stream, acemq::no_retry()));
    REQUIRE(seen.wait_for("end"));
    CHECK(seen.ids() == Ids{"rejected", "end"});
    std::optional<acemq::Delivery> dead = log.f.pull(acemq::dead_letter_queue(log.stream));
    REQUIRE(dead);
    CHECK(error_of(*dead) == "the handler rejected it: std::invalid_argument: no sku");
    dead->ack();
    CHECK(log.f.bus().health().status == acemq::Health::Status::up);
}

TEST_CASE("closing a reader hands back what it had not started; the stream and the connection stay whole") {
    Log log;
    log.append({"o-1", "o-2", "o-3", "o-4", "o-5"});
    Gate gate;
    Seen seen;
    acemq::Consumer* closing = nullptr;
    acemq::Consumer reader = acemq::read_stream(log.f.bus(), log.stream,
                                                [&](const Message<Order>& message) {
                                                    seen.add(message);
                                                    gate.pass();
                                                    // Closed from inside its handler, the reader hands back what was delivered behind
                                                    // o-1 at once, without waiting for this handler.
                                                    if (message.payload.id == "o-1") closing->close();
                                                    return acemq::accept();
                                                },
                                                {.offset = acemq::StreamOffset::first()});
    REQUIRE(gate.wait_waiting(1));
    closing = &reader;
    gate.open();
    reader.close();
    CHECK(seen.ids() == Ids{"o-1"});

    const std::int64_t checkpoint = seen.offset_of("o-1");
    Seen rest;
    acemq::Consumer resumed = log.read(rest, {.offset = acemq::StreamOffset::at(checkpoint + 1)});
    log.append({"end"});
    REQUIRE(rest.wait_for("end"));
    CHECK(rest.ids() == Ids{"o-2", "o-3", "o-4", "o-5", "end"});
    CHECK(log.f.bus().health().status == acemq::Health::Status::up);
}
