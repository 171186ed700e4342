#include <acemq/request_reply.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stop_token>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <acemq/ack.hpp>
#include <acemq/log.hpp>
#include <acemq/settlement.hpp>
#include <acemq/uuid.hpp>
#include "bus_core.hpp"
#include "text_header.hpp"

namespace acemq {

namespace {

using Steady = std::chrono::steady_clock;

// The family's outcome words of one call, in the order of the instruments' arrays.
enum class CallOutcome { answered, timed_out, failed };
constexpr std::array<std::string_view, 3> outcome_words{"answered", "timed_out", "failed"};

std::string generated_reply_queue() {
    std::string hex = new_uuid();
    std::erase(hex, '-');
    return "acemq-reply-" + hex;
}

}  // namespace

class Requester::Core {
public:
    Core(std::shared_ptr<detail::BusCore> bus, Publisher publisher, std::string reply_queue,
         std::chrono::milliseconds timeout, std::shared_ptr<const Codec> codec)
        : bus_(std::move(bus)), publisher_(std::move(publisher)), reply_queue_(std::move(reply_queue)),
          timeout_(timeout), codec_(std::move(codec)) {
        if (const std::shared_ptr<Metrics>& metrics = bus_->telemetry().metrics()) {
            for (std::size_t i = 0; i < outcome_words.size(); ++i) {
                const Labels labels{{std::string(tag::routing_key), publisher_.routing_key()},
                                    {std::string(tag::outcome), std::string(outcome_words[i])}};
                total_[i] = metrics->bind_counter(metric::request_total, labels);
                duration_[i] = metrics->bind_distribution(metric::request_duration, labels);
            }
        }
    }
    ~Core() { close(); }

    // The reply consumer and the deadline watcher, once the core has its final address:
    // both call back into it until close() stops them.
    void start(Bus& bus, std::uint16_t prefetch) {
        consumer_.emplace(bus.consume_raw(reply_queue_, [this](const RawMessage& reply) { return received(reply); },
                                          {.prefetch = prefetch, .codec = codec_, .declare = false}));
        watcher_ = std::jthread([this](std::stop_token stop) { watch(stop); });
    }

    void send(Encoded request, const RequestOptions& options, Completion done) {
        if (options.timeout < std::chrono::milliseconds::zero())
            throw InvalidArgument("acemq: a request timeout must be positive, got " +
                                  std::to_string(options.timeout.count()) + " ms");
        const std::chrono::milliseconds timeout = options.timeout.count() == 0 ? timeout_ : options.timeout;
        SendOptions send = options.send;
        send.correlation = new_uuid();
        send.reply_to = reply_queue_;
        send.headers.insert_or_assign(std::string(header::reply_to), FieldValue(reply_queue_));
        Call call{std::move(done), Steady::now(), Steady::now() + timeout, timeout, nullptr};
        call.span = bus_->telemetry().start_request(publisher_.exchange(), publisher_.routing_key(), send.correlation,
                                                    send.headers);
        const std::string correlation = send.correlation;
        {
            // Registered before the publish: the reply may come before the confirm does.
            std::lock_guard guard(lock_);
            if (closed_)
                throw UsageError("acemq: this requester was closed; make a new one to ask " + publisher_.routing_key() +
                                 " again");
            deadlines_.emplace(call.deadline, correlation);
            if (deadlines_.begin()->second == correlation) changed_.notify_all();
            calls_.emplace(correlation, std::move(call));
            in_flight_.store(calls_.size());
        }
        try {
            publisher_.send_raw(std::move(request), send);
        } catch (const std::exception& error) {
            // Still waiting: the caller hears the failure from here, so the call ends unheard.
            // Answered already (a reply overtook an in-doubt confirm): the future has it.
            if (std::optional<Call> ended = take(correlation)) record(*ended, CallOutcome::failed, error.what());
            throw;
        }
    }

    void close() {
        std::vector<std::pair<std::string, Call>> left;
        {
            std::lock_guard guard(lock_);
            if (closed_) return;
            closed_ = true;
            for (auto& [correlation, call] : calls_) left.emplace_back(correlation, std::move(call));
            calls_.clear();
            deadlines_.clear();
            in_flight_.store(0);
        }
        if (watcher_.joinable()) {
            watcher_.request_stop();
            watcher_.join();
        }
        for (auto& [correlation, call] : left)
            end(call, CallOutcome::timed_out,
                RequestTimeoutError("acemq: the requester was closed while " + correlation + " was outstanding",
                                    correlation));
        if (consumer_) consumer_->close();
    }

    const std::string& reply_queue() const noexcept { return reply_queue_; }
    std::uint64_t in_flight() const noexcept { return in_flight_.load(); }
    std::uint64_t timed_out() const noexcept { return timed_out_.load(); }
    std::uint64_t unmatched() const noexcept { return unmatched_.load(); }
    const std::shared_ptr<const Codec>& codec() const noexcept { return codec_; }

private:
    struct Call {
        Completion done;
        Steady::time_point started;
        Steady::time_point deadline;
        std::chrono::milliseconds timeout;
        std::unique_ptr<Span> span;
    };

    // The waiting call of `correlation`, taken out of the tables; nullopt when none waits.
    std::optional<Call> take(const std::string& correlation) {
        std::lock_guard guard(lock_);
        const auto found = calls_.find(correlation);
        if (found == calls_.end()) return std::nullopt;
        Call call = std::move(found->second);
        calls_.erase(found);
        deadlines_.erase({call.deadline, correlation});
        in_flight_.store(calls_.size());
        return call;
    }

    void record(Call& call, CallOutcome outcome, std::string_view error = {}) {
        const auto index = static_cast<std::size_t>(outcome);
        if (total_[index]) {
            total_[index]->add(1);
            duration_[index]->record(std::chrono::duration<double>(Steady::now() - call.started).count());
        }
        if (call.span) detail::Telemetry::end_request(*call.span, outcome_words[index], error);
        if (outcome == CallOutcome::timed_out) timed_out_.fetch_add(1);
    }

    template <class Why>
    void end(Call& call, CallOutcome outcome, const Why& why) {
        record(call, outcome, why.what());
        call.done(nullptr, std::make_exception_ptr(why));
    }

    Ack received(const RawMessage& reply) {
        std::optional<Call> call = take(reply.envelope.correlation);
        if (!call) {
            unmatched_.fetch_add(1);
            return accept();
        }
        if (const auto error = reply.envelope.headers.find(header::responder_error);
            error != reply.envelope.headers.end()) {
            const std::string text = error->second.as_text().value_or(error->second.to_string());
            end(*call, CallOutcome::failed, ResponderError("acemq: the responder failed: " + text, text));
            return accept();
        }
        record(*call, CallOutcome::answered);
        call->done(&reply, nullptr);
        return accept();
    }

    // Ends the calls whose deadline passed, sleeping until the next one is due.
    void watch(std::stop_token stop) {
        std::unique_lock guard(lock_);
        while (!stop.stop_requested()) {
            if (deadlines_.empty()) {
                changed_.wait(guard, stop, [&] { return !deadlines_.empty(); });
                continue;
            }
            const Steady::time_point next = deadlines_.begin()->first;
            if (Steady::now() < next) {
                changed_.wait_until(guard, stop, next,
                                    [&] { return deadlines_.empty() || deadlines_.begin()->first < next; });
                continue;
            }
            std::vector<std::pair<std::string, Call>> expired;
            while (!deadlines_.empty() && deadlines_.begin()->first <= Steady::now()) {
                const auto node = calls_.extract(deadlines_.begin()->second);
                expired.emplace_back(node.key(), std::move(node.mapped()));
                deadlines_.erase(deadlines_.begin());
            }
            in_flight_.store(calls_.size());
            guard.unlock();
            for (auto& [correlation, call] : expired)
                end(call, CallOutcome::timed_out,
                    RequestTimeoutError("acemq: no reply arrived before the deadline after " +
                                            format_duration(call.timeout) + " (correlation " + correlation + ")",
                                        correlation));
            guard.lock();
        }
    }

    std::shared_ptr<detail::BusCore> bus_;
    Publisher publisher_;
    std::string reply_queue_;
    std::chrono::milliseconds timeout_;
    std::shared_ptr<const Codec> codec_;
    std::array<std::shared_ptr<Counter>, outcome_words.size()> total_{};
    std::array<std::shared_ptr<Distribution>, outcome_words.size()> duration_{};

    std::mutex lock_;  // guards calls_, deadlines_ and closed_
    std::condition_variable_any changed_;
    std::unordered_map<std::string, Call> calls_;
    std::set<std::pair<Steady::time_point, std::string>> deadlines_;
    bool closed_ = false;
    std::atomic<std::uint64_t> in_flight_{0};
    std::atomic<std::uint64_t> timed_out_{0};
    std::atomic<std::uint64_t> unmatched_{0};
    std::optional<Consumer> consumer_;
    std::jthread watcher_;
};

Requester::Requester(Bus& bus, std::string exchange, std::string routing_key, RequesterOptions options) {
    if (options.timeout <= std::chrono::milliseconds::zero())
        throw InvalidArgument("acemq: a requester's timeout must be positive, got " +
                              std::to_string(options.timeout.count()) + " ms");
    const bool generated = options.reply_queue.empty();
    std::string reply_queue = generated ? generated_reply_queue() : std::move(options.reply_queue);
    // A generated queue lives and dies with this requester; a named one keeps the replies of
    // a caller that restarts, so it is durable, and quorum as every durable queue of ours.
    bus.declare(Topology{}.queue(
        reply_queue,
        generated ? QueueOptions{.type = QueueType::classic, .durable = false, .exclusive = true, .auto_delete = true}
                  : QueueOptions{.type = QueueType::quorum}));
    std::shared_ptr<const Codec> codec = options.codec ? options.codec : bus.codec();
    Publisher publisher =
        bus.publisher(std::move(exchange), std::move(routing_key), {.mandatory = true, .codec = codec});
    core_ = std::make_shared<Core>(bus.core_, std::move(publisher), std::move(reply_queue), options.timeout,
                                   std::move(codec));
    core_->start(bus, options.prefetch);
}

Requester::Requester(Requester&&) noexcept = default;
Requester& Requester::operator=(Requester&& other) noexcept {
    if (this != &other) {
        close();
        core_ = std::move(other.core_);
    }
    return *this;
}
Requester::~Requester() { close(); }

std::future<RawMessage> Requester::ask_encoded(Encoded request, const RequestOptions& options) {
    auto promise = std::make_shared<std::promise<RawMessage>>();
    std::future<RawMessage> future = promise->get_future();
    send_request(std::move(request), options, [promise](const RawMessage* reply, std::exception_ptr failure) {
        if (failure)
            promise->set_exception(std::move(failure));
        else
            promise->set_value(*reply);
    });
    return future;
}

void Requester::send_request(Encoded request, const RequestOptions& options, Completion done) {
    if (!core_) throw UsageError("acemq: this requester was moved from; ask through the one it was moved to");
    core_->send(std::move(request), options, std::move(done));
}

std::shared_ptr<const Codec> Requester::codec_for_requests() const {
    if (!core_) throw UsageError("acemq: this requester was moved from; ask through the one it was moved to");
    return core_->codec();
}

const std::string& Requester::reply_queue() const noexcept { return core_->reply_queue(); }
std::uint64_t Requester::in_flight() const noexcept { return core_ ? core_->in_flight() : 0; }
std::uint64_t Requester::timed_out() const noexcept { return core_ ? core_->timed_out() : 0; }
std::uint64_t Requester::unmatched() const noexcept { return core_ ? core_->unmatched() : 0; }

void Requester::close() {
    if (core_) core_->close();
}

// The counters live apart from the consumer, so that its handler can hold them without the
// consumer holding itself.
struct ResponderCounters {
    std::atomic<std::uint64_t> answered{0};
    std::atomic<std::uint64_t> unanswerable{0};
};

class Responder::Core {
public:
    Core(std::string queue, std::shared_ptr<ResponderCounters> counters, Consumer consumer)
        : queue_(std::move(queue)), counters_(std::move(counters)), consumer_(std::move(consumer)) {}

    const std::string& queue() const noexcept { return queue_; }
    std::uint64_t answered() const noexcept { return counters_->answered.load(); }
    std::uint64_t unanswerable() const noexcept { return counters_->unanswerable.load(); }
    bool close() { return consumer_.close(); }

private:
    std::string queue_;
    std::shared_ptr<ResponderCounters> counters_;
    Consumer consumer_;
};

namespace {

// One request handled: the reply (or the error reply) sent, then the settlement.
Ack answer(Bus& bus, const std::string& queue, const std::function<Encoded(const RawMessage&)>& respond,
           ResponderCounters& counters, const RawMessage& request) {
    std::string address = detail::text_header(request.envelope.headers, header::reply_to).value_or(std::string{});
    if (address.empty()) address = request.reply_to;
    if (address.empty()) {
        counters.unanswerable.fetch_add(1);
        return reject(FatalError("acemq: request " + request.envelope.id + " on " + queue +
                                 " names no reply address (neither the " + std::string(header::reply_to) +
                                 " header nor the reply-to property): send requests with an acemq::Requester"));
    }
    SendOptions send{.correlation = request.envelope.correlation, .causation = request.envelope.id};
    const Publisher replies = bus.publisher_to_queue(address, {.mandatory = false});
    auto not_sent = [&](const std::exception& error) {
        return retry(Failure{"acemq::PublishError",
                             "the reply to " + address + " did not go out: " + std::string(error.what()), false});
    };
    Encoded reply;
    std::optional<Failure> failure;
    bool undecodable = false;
    try {
        reply = respond(request);
    } catch (const StoreUnavailableError& error) {
        // A store behind the codec (a schema registry, a claim-check store) was out of reach:
        // the request may well be answered by the next attempt, so no error reply goes out
        // and the request takes the retry ladder, as a consumer's message would.
        return retry(Failure::of(error));
    } catch (const DecodeError& error) {
        failure = Failure::of(error);
        undecodable = true;
    } catch (...) {
        failure = Failure::of(std::current_exception(),
                              "in the responder of queue " + queue + " (message " + request.envelope.id + ")");
    }
    if (failure) {
        send.headers.insert_or_assign(std::string(header::responder_error), FieldValue(describe(*failure)));
        try {
            replies.send_raw(Encoded{}, send);
        } catch (const std::exception& error) {
            return not_sent(error);
        }
        return undecodable ? park(std::move(failure)) : reject(std::move(failure));
    }
    counters.answered.fetch_add(1);
    try {
        replies.send_raw(std::move(reply), send);
    } catch (const std::exception& error) {
        counters.answered.fetch_sub(1);
        return not_sent(error);
    }
    return accept();
}

}  // namespace

Responder serve_raw(Bus& bus, std::string_view queue, std::function<Encoded(const RawMessage&)> respond,
                    ServeOptions options) {
    if (!respond) throw InvalidArgument("acemq: serve needs a function that answers the requests");
    auto counters = std::make_shared<ResponderCounters>();
    Consumer consumer = bus.consume_raw(
        queue,
        [&bus, name = std::string(queue), respond = std::move(respond), counters](const RawMessage& request) {
            return answer(bus, name, respond, *counters, request);
        },
        std::move(options.consumer));
    return Responder(std::make_shared<Responder::Core>(std::string(queue), std::move(counters), std::move(consumer)));
}

Responder::Responder(std::shared_ptr<Core> core) : core_(std::move(core)) {}
Responder::Responder(Responder&&) noexcept = default;
Responder& Responder::operator=(Responder&&) noexcept = default;
Responder::~Responder() = default;

const std::string& Responder::queue() const noexcept { return core_->queue(); }
std::uint64_t Responder::answered() const noexcept { return core_ ? core_->answered() : 0; }
std::uint64_t Responder::unanswerable() const noexcept { return core_ ? core_->unanswerable() : 0; }
bool Responder::close() { return core_ ? core_->close() : true; }

}  // namespace acemq
