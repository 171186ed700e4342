// What a handler says about a message it was given, and the family's rule for describing
// a failure in words, `describe` (docs/wire-contract.md §3).
//
//   return acemq::accept();                     // done, acknowledge it
//   return acemq::retry(error);                 // try again, as the retry policy allows
//   return acemq::reject(error);                // never again: to {queue}.dlq
//   return acemq::park(error);                  // set aside for a person: to {queue}.parked
//   return acemq::in_progress(5s);              // someone else is on it: look again later
//   throw acemq::FatalError("no such sku");     // retrying cannot help: dead-letter now
//
// A handler that throws is treated as retry(the exception). Ack and Failure are values.
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include <acemq/error.hpp>

namespace acemq {

// Marks a failure that will happen identically every time (a malformed order, an unknown
// customer): a retry carrying it is dead-lettered at once instead of using up the ladder.
class FatalError : public Error {
public:
    explicit FatalError(const std::string& reason) : Error(reason) {}
};

// A failure reduced to what the family writes about it: the exception's type, its text,
// and whether it was fatal.
struct Failure {
    std::string type_name;  // e.g. "std::runtime_error"
    std::string message;    // what() of the exception
    bool fatal = false;

    static Failure of(const std::exception& error);
    // For an exception_ptr holding something that is not a std::exception (`throw 42;`),
    // the type is the thrown type's name ("int") and the message says that a non-standard
    // exception of that type was thrown and, when `where` is given ("in the handler of
    // queue orders (message m-1)"), where. A std::exception is described as above: `where`
    // is not added, so the family's sentences stay as they are.
    static Failure of(const std::exception_ptr& error, std::string_view where = {});

    friend bool operator==(const Failure&, const Failure&) = default;
};

// "<TypeName>: <text>", or "<TypeName>" when the text is empty.
std::string describe(const Failure& failure);
std::string describe(const std::exception& error);
// As above, or "no reason given" when there is no failure at all.
std::string describe(const std::optional<Failure>& failure);

enum class AckKind { accept, retry, reject, park, in_progress };

// The family's words for each kind: accept, retry, reject, park, in_progress.
std::string_view to_string(AckKind kind) noexcept;

class Ack {
public:
    AckKind kind() const noexcept { return kind_; }
    const std::optional<Failure>& failure() const noexcept { return failure_; }
    // How long an in_progress message waits before it is looked at again; zero otherwise.
    std::chrono::milliseconds delay() const noexcept { return delay_; }
    // A retry whose failure is fatal skips the rest of the ladder.
    bool is_fatal() const noexcept { return failure_ && failure_->fatal; }

    friend bool operator==(const Ack&, const Ack&) = default;

private:
    Ack(AckKind kind, std::optional<Failure> failure, std::chrono::milliseconds delay)
        : kind_(kind), failure_(std::move(failure)), delay_(delay) {}

    friend Ack accept();
    friend Ack retry(std::optional<Failure>);
    friend Ack reject(std::optional<Failure>);
    friend Ack park(std::optional<Failure>);
    friend Ack in_progress(std::chrono::milliseconds);

    AckKind kind_;
    std::optional<Failure> failure_;
    std::chrono::milliseconds delay_{0};
};

inline constexpr std::chrono::milliseconds default_in_progress_delay{5000};

Ack accept();
Ack retry(std::optional<Failure> failure = std::nullopt);
Ack reject(std::optional<Failure> failure = std::nullopt);
Ack park(std::optional<Failure> failure = std::nullopt);
// Throws InvalidArgument for a negative delay.
Ack in_progress(std::chrono::milliseconds delay = default_in_progress_delay);

inline Ack retry(const std::exception& error) { return retry(Failure::of(error)); }
inline Ack reject(const std::exception& error) { return reject(Failure::of(error)); }
inline Ack park(const std::exception& error) { return park(Failure::of(error)); }

}  // namespace acemq
