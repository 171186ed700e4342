// One request handed from a caller to the client's I/O thread and its answer back: the reply
// frame's bytes (the caller reads them on its own thread) or a failure. Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "zmq/protocol.hpp"

namespace acemq::zmq {

class Call {
public:
    using Clock = std::chrono::steady_clock;

    // How a call ended without a reply frame: the broker failed it (as `kind`), or the session
    // was lost or never reached (connection), or the transport closed before it was sent (unsent).
    enum class Outcome { replied, failed, connection, unsent };

    void reply(std::vector<std::byte> frame);
    // A publish's answer, read by the I/O thread (which reads the sequence from the frame
    // anyway), so the publishing thread does not read the frame a second time.
    void confirm(PublishResult result);
    void fail(Outcome outcome, std::string text, wire::FailureKind kind = wire::FailureKind::error);

    struct Result {
        Outcome outcome;
        std::vector<std::byte> frame;  // when replied to a request
        PublishResult confirm{};       // when replied to a publish
        std::string text;              // when not
        wire::FailureKind kind = wire::FailureKind::error;
        std::uint64_t generation = 0;  // the session generation it was answered in
    };
    // nullopt when `deadline` passes first; the call is then abandoned (see abandoned()).
    std::optional<Result> wait_until(Clock::time_point deadline);

    // The caller stopped waiting: the I/O thread need not send it any more.
    bool abandoned() const noexcept { return abandoned_.load(std::memory_order_relaxed); }
    // The session generation it was sent in (set by the I/O thread when it sends it).
    std::uint64_t generation = 0;

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::optional<Result> result_;
    std::atomic<bool> abandoned_{false};
};

// Throws what a failed call means for a caller expecting a reply: the class the broker threw
// (TopologyError, UsageError, InvalidArgument, acemq::Error) or zmq::ConnectionError.
[[noreturn]] void throw_failure(const Call::Result& result);

}  // namespace acemq::zmq
