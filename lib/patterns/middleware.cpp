#include <acemq/middleware.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>

#include <acemq/settlement.hpp>
#include "handout.hpp"
#include "quoted_text.hpp"

namespace acemq {

namespace {

// Set on a with_timeout helper thread for the handler it runs; a never-stopping token
// everywhere else.
thread_local std::stop_token current_token;

// What a helper thread and the handler call waiting for it share. Owned by both, so
// whichever finishes last frees it.
struct HelperRun {
    std::mutex lock;
    std::condition_variable finished;
    bool done = false;
    bool abandoned = false;  // the caller stopped waiting: the answer goes nowhere
    std::optional<Ack> answer;
    std::exception_ptr error;
    std::stop_source stop;
};

void emit(const LogSink& sink, LogLevel level, const std::string& line) noexcept {
    try {
        if (sink)
            sink(level, line);
        else
            log(level, "engine", line);
    } catch (...) {
        // A log line must never change what happens to a message; a failing sink loses
        // the line and nothing else.
    }
}

std::string summary(const detail::LoggedMessage& message) {
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - message.started);
    return "message " + detail::shown_text(message.envelope.id) + " type=" + detail::shown_text(message.envelope.type) +
           " attempt=" + std::to_string(message.envelope.attempt) + " took=" + std::to_string(took.count()) + "ms";
}

}  // namespace

std::stop_token current_stop_token() noexcept { return current_token; }

namespace detail {

std::chrono::milliseconds positive_timeout(std::chrono::milliseconds limit) {
    if (limit.count() <= 0)
        throw InvalidArgument("acemq: a handler timeout must be positive, got " + std::to_string(limit.count()) +
                              " ms; leave with_timeout out to let handlers run as long as they take");
    return limit;
}

Ack run_with_deadline(std::function<Ack()> work, std::chrono::milliseconds limit, const std::string& message_id) {
    auto run = std::make_shared<HelperRun>();
    std::optional<Handout> handout;
    if (const Handout* current = current_handout()) handout = *current;
    std::thread([run, work = std::move(work), parent = current_token, message_id, handout = std::move(handout)] {
        // An outer with_timeout that gives up stops this handler too.
        const std::stop_callback follow_outer(parent, [&run] { run->stop.request_stop(); });
        current_token = run->stop.get_token();
        // An ordered handler inside keeps the consumer's arrival order on this thread too.
        std::optional<HandoutScope> in_order;
        if (handout) in_order.emplace(*handout);
        std::optional<Ack> answer;
        std::exception_ptr error;
        try {
            answer.emplace(work());
        } catch (...) {
            error = std::current_exception();  // handed to the caller, who rethrows it
        }
        bool abandoned = false;
        {
            std::lock_guard guard(run->lock);
            run->answer = std::move(answer);
            run->error = error;
            run->done = true;
            abandoned = run->abandoned;
        }
        run->finished.notify_all();
        if (abandoned)
            emit({}, LogLevel::debug,
                 "message " + shown_text(message_id) +
                     ": the handler finished after its timeout; its answer was discarded");
    }).detach();

    std::unique_lock guard(run->lock);
    if (!run->finished.wait_for(guard, limit, [&] { return run->done; })) {
        run->abandoned = true;
        guard.unlock();
        run->stop.request_stop();
        return retry(Failure::of(HandlerTimeoutError("acemq: handling message " + shown_text(message_id) +
                                                     " did not finish within " + format_duration(limit))));
    }
    if (run->error) std::rethrow_exception(run->error);
    return std::move(*run->answer);
}

void log_decision(const LogSink& sink, const LoggedMessage& message, const Ack& ack) noexcept {
    try {
        std::string line = summary(message) + " " + std::string(to_string(ack.kind()));
        if (ack.failure()) line += ": " + describe(*ack.failure());
        emit(sink, LogLevel::info, line);
    } catch (const std::bad_alloc&) {
        // Out of memory while building a log line: drop the line, keep the decision.
    }
}

void log_raised(const LogSink& sink, const LoggedMessage& message, const std::exception_ptr& error) noexcept {
    try {
        emit(sink, LogLevel::error, summary(message) + ": " + describe(Failure::of(error)) + " was raised");
    } catch (const std::bad_alloc&) {
        // As above: the exception itself still propagates to the consumer.
    }
}

Ack next_message_failed(const std::string& message_id, const std::exception_ptr& error) {
    const Failure cause = Failure::of(error);
    const std::string reason = cause.message.empty() ? cause.type_name : cause.message;
    return retry(Failure::of(Error("acemq: the work for message " + shown_text(message_id) +
                                   " is done but the next message did not go out: " + reason)));
}

}  // namespace detail

}  // namespace acemq
