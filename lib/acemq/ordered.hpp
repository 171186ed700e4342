// Ordered handling (docs/ordered.md): messages with the same key handled one at a time, in
// the order they arrived, while messages with other keys run side by side on the consumer's
// other workers.
//
//   bus.consume("readings", acemq::ordered(acemq::by_header("device"), handle), {.concurrency = 8});
//
// Arrival order is the order the consumer handed the deliveries to its workers. A delivery
// joins its key's line only once every delivery handed out before it has joined its own (or
// finished without reaching the handler), so a slow decode or interceptor on one worker never
// lets a later message of its key overtake it; it delays the joining of later messages of
// every key meanwhile, not their handling. An empty key is not ordered at all: such messages
// run as they come, side by side.
//
// A message waiting its turn holds its worker and waits as long as the one ahead of it takes:
// a handler that never returns holds up its key (and the workers waiting behind it), and a
// consumer's close leaves those as it leaves any stuck handler.
//
// Only within one process, and only for first deliveries: a retried message is republished
// to the back of its queue (or to a retry rung) and is handled after the messages of its key
// that came after it. Across processes, route by key to partitions (partitioned_routing_key)
// with one consumer per partition queue (consumer_group.hpp).
#pragma once

#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <acemq/ack.hpp>
#include <acemq/consumer.hpp>
#include <acemq/envelope.hpp>
#include <acemq/message.hpp>

namespace acemq {

namespace detail {

// One line of waiting messages per key, each served in the order it joined. A key's entry
// exists while someone holds or waits for it, and goes with the last of them. Thread-safe.
class KeyLines {
    struct Line {
        std::uint64_t joined = 0;
        std::uint64_t serving = 0;
        std::size_t present = 0;  // holding or waiting
        std::condition_variable turn;
    };
    using Lines = std::map<std::string, Line, std::less<>>;

public:
    // Holds a key's turn until destroyed.
    class Turn {
    public:
        Turn() = default;
        Turn(Turn&& other) noexcept;
        Turn& operator=(Turn&&) = delete;
        ~Turn();

    private:
        friend class KeyLines;
        Turn(KeyLines* lines, Lines::iterator line) : lines_(lines), line_(line) {}
        KeyLines* lines_ = nullptr;
        Lines::iterator line_{};
    };

    // Joins `key`'s line, in the consumer's arrival order when called on one of its workers,
    // and returns once every message ahead in it has been handled. An empty key joins no line.
    Turn wait_turn(std::string_view key);
    std::size_t keys() const;

private:
    void leave(Lines::iterator line);

    mutable std::mutex lock_;
    Lines lines_;
};

std::string header_text(const Envelope& envelope, std::string_view name);

}  // namespace detail

// A handler running `handler` for one message of a key at a time (see the top of this file).
// Copies share their lines, so one Ordered may serve several consumers (a ConsumerGroup) and
// still keep each key to one message at a time. Thread-safe: that is its purpose.
template <class T>
class Ordered {
public:
    using KeyFunction = std::function<std::string(const Message<T>&)>;

    Ordered(KeyFunction key, Handler<T> handler)
        : key_(std::move(key)), handler_(std::move(handler)), lines_(std::make_shared<detail::KeyLines>()) {}

    // The handler's decision, unchanged; what the key function or handler throws goes on.
    Ack operator()(const Message<T>& message) const {
        const detail::KeyLines::Turn turn = lines_->wait_turn(key_(message));
        return handler_(message);
    }

    // Keys with a message being handled or waiting: 0 once nothing is in flight, since a
    // key's lock goes with the last message that held or waited for it.
    std::size_t locks() const { return lines_->keys(); }

private:
    KeyFunction key_;
    Handler<T> handler_;
    std::shared_ptr<detail::KeyLines> lines_;
};

// `handler` with per-key order, the key from `key` (by_header, by_correlation, or any callable
// taking the message and returning a string). T is deduced from the handler as by
// Bus::consume; name it for a generic one: ordered<Reading>(acemq::by_header("device"), ...).
template <class T = void, class K, class H, class P = typename detail::chosen_payload<T, H>::type>
    requires std::invocable<H&, const Message<P>&> && std::invocable<const K&, const Message<P>&>
Ordered<P> ordered(K key, H handler) {
    return Ordered<P>([key = std::move(key)](const Message<P>& message) { return std::string(key(message)); },
                      Handler<P>(std::move(handler)));
}

// The key is an application header's value as text (numbers in decimal), "" when absent.
class by_header {
public:
    explicit by_header(std::string name) : name_(std::move(name)) {}
    template <class T>
    std::string operator()(const Message<T>& message) const {
        return detail::header_text(message.envelope, name_);
    }

private:
    std::string name_;
};

// The key is the envelope's correlation id (the message's own id when it was sent without one).
struct by_correlation {
    template <class T>
    std::string operator()(const Message<T>& message) const {
        return message.envelope.correlation;
    }
};

// Which of `count` partitions `key` belongs to: FNV-1a (32 bits) over its UTF-8 bytes, modulo
// count; 0 when count is 1 or less. The family's function: every member puts a key in the
// same partition.
int partition(std::string_view key, int count) noexcept;

// "<base>.<partition(key, count)>", e.g. ("orders", "order-1", 8) → "orders.5": publish with
// it to a topic or direct exchange bound to queues <base>.0 .. <base>.<count-1>.
std::string partitioned_routing_key(std::string_view base, std::string_view key, int count);

}  // namespace acemq
