// The engine of one consumer (not a public header): workers, the hand-over queue between
// the transport and them, settlement, and drain on close.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <acemq/consumer.hpp>
#include <acemq/settlement.hpp>
#include <acemq/transport.hpp>
#include "bus_core.hpp"
#include "handout.hpp"

namespace acemq::detail {

class ConsumerCore : public std::enable_shared_from_this<ConsumerCore> {
public:
    // Declares where failures go (unless told not to), starts the workers, subscribes.
    static std::shared_ptr<ConsumerCore> start(std::shared_ptr<BusCore> bus, std::string queue, Decoder decoder,
                                               ConsumerOptions options);

    ConsumerCore(std::shared_ptr<BusCore> bus, std::string queue, Decoder decoder, ConsumerOptions options,
                 RetryPolicy policy);
    const std::string& queue() const noexcept { return queue_; }
    std::chrono::milliseconds drain_timeout() const noexcept { return options_.drain_timeout; }
    // Called from inside one of its own handlers: stops deliveries and returns false at once;
    // the last worker to finish its delivery completes the close.
    bool close(std::chrono::milliseconds timeout);

    // What Bus::health asks of a consumer. Thread-safe.
    struct Reading {
        bool open = true;           // not closed (nor closing): a closed one is no longer counted
        bool stopped = false;       // its queue is gone, or its workers stalled (stall_after)
        std::size_t in_flight = 0;  // deliveries waiting for a worker or in a handler
    };
    // Asks the transport whether the queue still exists (the subscription ended under the
    // consumer when not), unless the workers already show a stall or `ask_transport` is false:
    // a transport that is down would hold the question until the broker is back.
    Reading reading(bool ask_transport);

private:
    void on_delivery(Delivery delivery);
    void work();
    // Handles what a worker took, in order; once the consumer stops, hands back the ones
    // not started.
    void handle(std::vector<Delivery>& taken, std::uint64_t first_handout);
    void process(Delivery& delivery);
    // `reached_handler` says whether it decoded and the interceptors and handler ran.
    Settlement run_handler(ConsumeContext& context, bool& reached_handler);
    // The interceptors and the handler; what they throw becomes a retry.
    Ack run_step(ConsumeContext& context, const HandlerStep& step) const;
    // Each returns true when the settlement was carried out, to be reported to observers;
    // false when it was not: the consumer closed under the handler (the delivery went back
    // with its subscription), or a set-aside could not be published (the delivery went back
    // to its queue, counted as acemq.messages.set.aside.failed, and the worker paused).
    // `where` tells, for a retry, where it waits: on a rung, in the consumer, or requeued at once.
    bool carry_out(Delivery& delivery, const ConsumeContext& context, const Settlement& settlement, RetryWhere& where);
    bool set_aside(Delivery& delivery, const ConsumeContext& context, const std::string& target,
                   const std::string& reason);
    // Waits in the consumer; false when the wait was cancelled by a close that ran out of time.
    bool wait(std::chrono::milliseconds delay);
    PublishResult republish(const InboundMessage& original, const Envelope& envelope, const std::string& target,
                            bool with_message_id = true);
    // The copy for another attempt goes to the back of the queue; a transport's refusal to
    // encode it parks the message, any other failure hands the delivery back.
    bool requeue_copy(Delivery& delivery, const ConsumeContext& context, const Envelope& envelope);
    bool park_unpublishable(Delivery& delivery, const ConsumeContext& context, const PublishResult& refused);
    // Acks or nacks unless the consumer was closed under the handler: then the delivery
    // already went back with its subscription and must not be touched.
    bool settle(Delivery& delivery, bool ack, bool requeue = false);
    // Settles a delivery the consumer could not: nack with requeue on a queue. A stream
    // keeps every message whatever its readers do and takes no nack (RabbitMQ closes the
    // channel on one), so there it is an ack, which only lets the broker send the next; the
    // reader's own checkpoint brings the message back.
    bool hand_back(Delivery& delivery);
    // The steps of close(): stop deliveries and hand back the unstarted ones; once the
    // handlers finished (or the deadline passed), release the subscription and the workers.
    void stop_deliveries();
    void release(bool finished, std::chrono::milliseconds timeout);
    bool on_worker_thread() const;  // lock_ held

    std::shared_ptr<BusCore> bus_;
    std::string queue_;
    Decoder decoder_;
    ConsumerOptions options_;
    RetryPolicy policy_;
    std::shared_ptr<const Codec> codec_;
    std::shared_ptr<const ConsumeInstruments> instruments_;  // null unless the bus measures
    // Started with x-stream-offset (read_stream): a stream, which no delivery leaves.
    bool reads_stream_;

    std::mutex close_lock_;   // one close at a time; a second caller gets the first one's answer
    std::mutex settle_lock_;  // held around every ack/nack, so close() can cut late ones off
    std::mutex lock_;         // guards what follows
    std::condition_variable_any changed_;
    std::deque<Delivery> waiting_;
    // Numbered as workers take them from waiting_, for the ordered handler.
    std::shared_ptr<HandoutOrder> handouts_ = std::make_shared<HandoutOrder>();
    std::size_t running_ = 0;  // workers holding deliveries taken from waiting_
    // Taken from waiting_ with others by the one worker (see work()) and not started yet:
    // still waiting, as far as in_flight and a stall are concerned. Changed by that worker
    // without the lock, once per delivery.
    std::atomic<std::size_t> taken_unstarted_{0};
    // When a worker last started a delivery (written without the lock too), and when
    // waiting_ last became non-empty: a stall is deliveries waiting with neither for longer
    // than stall_after.
    std::atomic<std::chrono::steady_clock::time_point> last_started_{};
    std::chrono::steady_clock::time_point waiting_since_{};
    // Written under lock_; read without it by a worker between the deliveries it took.
    std::atomic<bool> stopping_ = false;
    bool released_ = false;          // the subscription is closed: late settlements are dropped
    bool finish_when_idle_ = false;  // close() was called inside a handler: the last worker out releases
    std::optional<bool> drained_;
    // How long a worker pauses after a set-aside that could not be published; grows with
    // each failure in a row, zero again after one that worked. Close ends a pause at once.
    std::chrono::milliseconds set_aside_pause_{0};
    std::stop_source cancel_;  // cancels waits inside settlement once the drain deadline passed
    std::unique_ptr<Subscription> subscription_;
    std::vector<std::thread> workers_;
    std::vector<std::thread::id> exited_;  // workers that returned and can be joined
};

}  // namespace acemq::detail
