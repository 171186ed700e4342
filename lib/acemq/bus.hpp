// The Bus: one connection to a broker, picked by URL, and the one engine above it.
//
//   acemq::Bus bus = acemq::connect("inproc://shop", {.origin = "payments@pod-1"});
//   bus.declare(acemq::Topology{}.queue("payments.new", {.dead_letter = true}));
//   acemq::Consumer consumer = bus.consume("payments.new", handle, {.retry = acemq::fixed_retry(3, 200ms)});
//   bus.publisher_to_queue("payments.new").send(Payment{"p-1", 4250});
//
// "inproc://name" is the embedded broker (one per name per process); "amqp://" and "zmq+tcp://"
// come with their transports. Nothing else in a program changes with the URL.
//
// A Bus is a handle: move it, or share it by reference between threads; every member is
// thread-safe. Publishers and consumers keep the connection alive while they exist.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/clock.hpp>
#include <acemq/codec.hpp>
#include <acemq/consumer.hpp>
#include <acemq/detail/cores.hpp>
#include <acemq/interceptor.hpp>
#include <acemq/metrics.hpp>
#include <acemq/observer.hpp>
#include <acemq/publisher.hpp>
#include <acemq/retry.hpp>
#include <acemq/topology.hpp>
#include <acemq/tracing.hpp>
#include <acemq/transport.hpp>

namespace acemq {

namespace detail {
class SlipFollower;
}  // namespace detail

struct BusOptions {
    std::string origin{};                  // "service@host"; default "acemq@<hostname>"
    RetryPolicy retry = no_retry();        // consumers' default: one delivery, then .dlq
    std::shared_ptr<const Codec> codec{};  // default: default_codec() (JSON writes)
    std::uint16_t prefetch = 20;
    int concurrency = 1;  // consumers' default workers, 1..max_concurrency
    std::vector<PublishInterceptor> publish_interceptors{};
    std::vector<ConsumeInterceptor> consume_interceptors{};
    std::shared_ptr<Observer> observer{};
    // Telemetry (metrics.hpp, tracing.hpp): nothing is measured or traced when null.
    std::shared_ptr<Metrics> metrics{};
    std::shared_ptr<Tracer> tracer{};
    std::shared_ptr<Clock> clock{};                // default: real time
    std::size_t max_outstanding_publishes = 1000;  // send_all's window
};

class Bus {
public:
    Bus(Bus&&) noexcept = default;
    Bus& operator=(Bus&&) noexcept = default;
    ~Bus();

    // Applies a topology: exchanges, queues, bindings. TopologyError when the broker has
    // something of the same name with other settings.
    void declare(const Topology& topology);

    // Publishes to `exchange` with `routing_key`; the exchange routes by its kind and bindings.
    Publisher publisher(std::string exchange, std::string routing_key, PublisherOptions options = {});
    // Publishes straight to the queue named `queue`, through the broker's default exchange
    // (exchange "", which routes a key to the queue of that name).
    Publisher publisher_to_queue(std::string queue, PublisherOptions options = {});

    // Starts consuming `queue`, decoding each body into T with the codec. The handler
    // answers with an Ack; an exception from it means retry. UsageError once the bus is closed.
    // T is the handler's, `consume("orders", handle)` for a handle(const Message<Order>&);
    // name it, `consume<Order>(...)`, for a generic handler.
    template <class T = void, class H, class P = typename detail::chosen_payload<T, H>::type>
        requires std::invocable<H&, const Message<P>&>
    Consumer consume(std::string_view queue, H handler, ConsumerOptions options = {}) {
        return start_consumer(queue, detail::typed_decoder<P>(Handler<P>(std::move(handler))), std::move(options));
    }
    // The same without a codec: the handler reads the body bytes itself.
    Consumer consume_raw(std::string_view queue, Handler<Bytes> handler, ConsumerOptions options = {});

    void add_observer(std::shared_ptr<Observer> observer);
    void add_publish_interceptor(PublishInterceptor interceptor);
    void add_consume_interceptor(ConsumeInterceptor interceptor);

    // Whether the broker answers, within `timeout` (the transport's check_health), then, when
    // it does, whether each live consumer is still reading: degraded, "these consumers have
    // stopped reading: <queues>", when a consumer's queue is gone or deliveries waited past its
    // stall_after with every worker busy; consumers and in_flight count them all. down (the
    // transport's, or once the bus is closed) wins over degraded and asks nothing more, so it
    // comes at once. Thread-safe; a readiness probe's cost: a round trip, a queue_exists each.
    Health health(std::chrono::milliseconds timeout = std::chrono::seconds(3));

    Transport& transport();
    const std::string& origin() const;
    const std::shared_ptr<const Codec>& codec() const;
    std::shared_ptr<Clock> clock() const;
    // Stops every consumer of this bus and releases the connection. Idempotent. The
    // consumers drain at the same time, each within its own drain_timeout, so the bus closes
    // within the longest of them (and half a second for stuck handlers to let go), however
    // many there are. Error when a consumer could not be closed cleanly (after all were).
    void close();

private:
    friend Bus connect(std::shared_ptr<Transport> transport, BusOptions options);
    friend class OutboxRelay;           // publishes records under the bus's telemetry
    friend class Requester;             // measures and traces its calls under the bus's telemetry
    friend class detail::SlipFollower;  // counts the end of routing-slip runs
    explicit Bus(std::shared_ptr<detail::BusCore> core);
    Consumer start_consumer(std::string_view queue, detail::Decoder decoder, ConsumerOptions options);

    std::shared_ptr<detail::BusCore> core_;
};

// Opens the transport the URL names and puts the engine on it. InvalidArgument for a URL
// no transport claims (the message lists the schemes that are known).
Bus connect(std::string_view url, BusOptions options = {});
// The engine on a transport opened by hand, e.g. amqp::open(url, {.tls = ...}) for options a
// URL does not carry. The bus shares the transport and closes it when it closes.
Bus connect(std::shared_ptr<Transport> transport, BusOptions options = {});

}  // namespace acemq
