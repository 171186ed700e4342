// serve(): the embedded broker on a ROUTER socket, one I/O thread, one session per client
// (docs/zmq-protocol.md §1, §7). The broker's DeliverFns run on whatever thread made a delivery
// possible, with the broker's lock held; they only queue the delivery for the I/O thread, as
// the ConfirmFns of its publishes queue their confirms.
#include <acemq/zmq.hpp>

#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <zmq.hpp>

#include <acemq/log.hpp>
#include "quoted_text.hpp"

#include "inproc/inproc_transport.hpp"
#include "session/work_queue.hpp"
#include "zmq/endpoint.hpp"
#include "zmq/keys.hpp"
#include "zmq/management_calls.hpp"
#include "zmq/protocol.hpp"
#include "zmq/socket_io.hpp"

namespace acemq::zmq {

namespace {

using Clock = std::chrono::steady_clock;
using wire::Command;

// One client, from its hello to its bye, silence or unreachability.
struct Session {
    std::uint64_t id = 0;
    std::string routing_id;
    std::string client_name;
    std::string peer;  // "the peer at ADDRESS", from its hello
    int fd = -1;       // its connection's descriptor, from its hello; -1 once that connection dropped
    inproc::Broker::ConnectionId connection = 0;
    std::chrono::milliseconds client_heartbeat{0};
    std::uint32_t version = 1;  // its hello's: from 3 on, what it is sent is batched
    wire::Batch outbox{0};      // confirms and deliveries waiting to go in one frame
    Clock::time_point last_heard{};
    Clock::time_point last_sent{};
    std::uint64_t next_consumer = 1;
    std::uint64_t next_tag = 1;
    bool unreachable = false;
    std::unordered_map<std::uint64_t, std::unique_ptr<Subscription>> consumers;
    struct Unsettled {
        Delivery delivery;
        std::uint64_t consumer;  // 0 for a pulled message
    };
    std::unordered_map<std::uint64_t, Unsettled> unsettled;
};

// A delivery the broker handed a session's consumer, waiting for the I/O thread.
struct Handed {
    std::uint64_t session;
    std::uint64_t consumer;
    Delivery delivery;
};

// The broker's word on a session's publish (at once, or after a durable broker's commit),
// waiting for the I/O thread.
struct Confirmed {
    std::uint64_t session;
    std::uint64_t sequence;
    PublishResult result;
};

// The answer to a request carried out off the I/O thread (a backup), waiting for it.
struct Answered {
    std::uint64_t session;
    msgpack::sbuffer frame;
};

// What the router's socket takes: twice the broker's limit (see the constructor), or any
// size when that would overflow.
std::int64_t socket_frame_limit(std::size_t max_frame_bytes) {
    return max_frame_bytes > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max() / 2)
               ? -1
               : static_cast<std::int64_t>(2 * max_frame_bytes);
}

// "the peer at ADDRESS" as libzmq knows the sender of `message`, or "a peer" when it gives none.
std::string peer_of(::zmq::message_t& message) {
    try {
        if (const std::string address = message.gets("Peer-Address"); !address.empty()) return "the peer at " + address;
    } catch (const ::zmq::error_t&) {
        // An ipc peer may have no address to give.
    }
    return "a peer";
}

// Where the client on connection `fd` connects from, for Management::sessions(): "IP:PORT" for
// TCP ("[IP]:PORT" for IPv6), the broker's ipc:// endpoint it came in on, else libzmq's
// Peer-Address of `message`; "" when nothing tells.
std::string address_of(::zmq::message_t& message, int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (fd >= 0 && ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
        char text[INET6_ADDRSTRLEN] = {};
        if (address.ss_family == AF_INET) {
            const auto& in = reinterpret_cast<const sockaddr_in&>(address);
            if (::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text))
                return std::string(text) + ":" + std::to_string(ntohs(in.sin_port));
        }
        if (address.ss_family == AF_INET6) {
            const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
            if (::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text))
                return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6.sin6_port));
        }
        // A unix socket's peer has no name of its own; the endpoint it connected to does.
        length = sizeof address;
        if (address.ss_family == AF_UNIX && ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
            const auto& un = reinterpret_cast<const sockaddr_un&>(address);
            if (length > offsetof(sockaddr_un, sun_path) && un.sun_path[0] != '\0')
                return "ipc://" + std::string(un.sun_path);
        }
    }
    try {
        return message.gets("Peer-Address");
    } catch (const ::zmq::error_t&) {
        return "";
    }
}

// The class of the exception being handled, as the wire carries it: a broker call does not
// fail for want of a connection, and the client keeps that kind for its own session.
wire::FailureKind failure_kind_of_current() {
    const wire::FailureKind kind = session::failure_of_current().kind;
    return kind == wire::FailureKind::connection ? wire::FailureKind::error : kind;
}

class ServerImpl final : public Server {
public:
    ServerImpl(const BrokerOpener& open_broker, std::vector<std::string> endpoints, ServerOptions options);
    ~ServerImpl() override;

    const std::vector<std::string>& endpoints() const noexcept override { return bound_; }
    ServerStats stats() const override {
        return {.sessions = sessions_now_.load(),
                .sessions_ended = sessions_ended_.load(),
                .frames_refused = frames_refused_.load(),
                .clients_refused = clients_refused_.load()};
    }

private:
    void run();
    void receive_all();
    void answer_zap();
    void handle(const std::string& routing_id, ::zmq::message_t& message);
    void handle_in_session(Session& session, const wire::Frame& frame);
    // Entry `index` of a batch, handled as the frame it would be alone; a refusal names it.
    void handle_entry(Session& session, const msgpack::object_array& entries, std::size_t index);
    // A batch that cannot be read whole (past max_batch_entries, or past max_frame_bytes): each
    // publish in it gets a confirm not confirmed (`why`), then the frame an error naming `text`.
    void refuse_batch(const std::string& routing_id, const wire::Frame& frame, PublishResult::Unconfirmed why,
                      const std::string& text);
    // `text` naming the batch entry being handled, when one is.
    std::string named(std::string_view text) const;
    void start_session(const std::string& routing_id, const wire::Frame& frame, ::zmq::message_t& message);
    void note_disconnects();
    void end_session(std::uint64_t session_id, std::string_view why);
    void hand_over_deliveries();
    void beat_and_reap();
    void send(Session& session, msgpack::sbuffer frame);
    // Sends the frame `write(buffer)` appends, of `at_least` bytes, in the session's next batch,
    // written there (or at once, to a client older than batches, or when it must travel
    // alone); flush_outboxes() sends what the batches hold.
    template <class Write>
    void send_written(Session& session, std::size_t at_least, bool batchable, const Write& write);
    void flush_outbox(Session& session);
    void flush_outboxes();
    void end_unreachable();
    void send_to(const std::string& routing_id, msgpack::sbuffer frame);
    void refuse_frame(const std::string& routing_id, std::uint64_t request, wire::ErrorCode code,
                      std::string_view text);
    // A frame past max_frame_bytes: logged naming its sender and size, and refused (a publish
    // with a confirm, too_large; anything else with an error frame). Its session goes on.
    void refuse_oversized(const std::string& routing_id, ::zmq::message_t& frame);
    // Starts a backup on backup_, or refuses it while one runs.
    void back_up(Session& session, const wire::ManageRequest& request);
    DeliverFn deliver_to(std::uint64_t session, std::uint64_t consumer);
    inproc::ConfirmFn confirm_to(std::uint64_t session, std::uint64_t sequence);
    // Queues `item` for the I/O thread, waking it for the first of a burst from another thread.
    template <class Item>
    void queue_for_io(std::vector<Item>& queue, Item&& item);
    void wake_for(bool first_waiting);

    std::shared_ptr<inproc::Broker> broker_;
    std::unique_ptr<Management> management_;  // null when ServerOptions::management is off
    // What info() tells of this server besides the broker's own: endpoints, limits, security.
    std::vector<std::pair<std::string, std::string>> details_;
    ServerOptions options_;
    std::unordered_set<std::string> allowed_keys_;  // binary, 32 bytes each
    ::zmq::context_t context_;
    ::zmq::socket_t router_;
    std::optional<::zmq::socket_t> zap_;
    // The router's connections that drop. One whose session is open is logged at once (its
    // session ends later, when its heartbeats stop): it is how a frame past what libzmq takes shows.
    SocketMonitor connections_;
    session::WakeUp wake_;
    std::vector<std::string> bound_;

    std::mutex handed_mutex_;  // guards handed_, confirmed_ and answered_
    std::vector<Handed> handed_;
    std::vector<Confirmed> confirmed_;
    std::vector<Answered> answered_;
    // A backup copies the whole data file, which may take longer than a client waits for a
    // heartbeat: it runs on a thread of its own, one at a time, and answers through answered_.
    std::thread backup_;
    std::atomic<bool> backing_up_{false};

    // I/O thread only.
    std::unordered_map<std::uint64_t, Session> sessions_;
    std::unordered_map<std::string, std::uint64_t> session_of_peer_;
    std::uint64_t next_session_ = 1;
    std::vector<std::uint64_t> unreachable_;

    std::atomic<bool> stopping_{false};
    std::atomic<std::uint64_t> sessions_now_{0}, sessions_ended_{0}, frames_refused_{0}, clients_refused_{0};
    // The size of the message being handled, for the log line of a refusal.
    std::size_t received_bytes_ = 0;
    // The batch entry being handled (its index and the batch's size), for the texts that refuse it.
    std::optional<std::pair<std::size_t, std::size_t>> entry_;
    std::vector<std::uint64_t> batched_;  // sessions whose outbox may hold frames
    std::thread::id io_thread_id_;
    std::thread thread_;
};

ServerImpl::ServerImpl(const BrokerOpener& open_broker, std::vector<std::string> endpoints, ServerOptions options)
    : options_(std::move(options)), context_(1), router_(context_, ::zmq::socket_type::router),
      connections_(context_, router_, ZMQ_EVENT_DISCONNECTED) {
    if (endpoints.empty())
        throw InvalidArgument(
            "acemq: zmq::serve needs at least one endpoint, e.g. tcp://127.0.0.1:5680 or ipc:///PATH");
    if (options_.heartbeat <= std::chrono::milliseconds(0) || options_.missed_heartbeats < 1)
        throw InvalidArgument("acemq: zmq::ServerOptions heartbeat must be positive and missed_heartbeats at least 1");
    for (const std::string& endpoint : endpoints) check_bind_endpoint(endpoint, options_.allow_remote);

    router_.set(::zmq::sockopt::linger, 0);
    // A send to a peer that has gone fails instead of vanishing, so its session ends at once;
    // no high-water mark, because what a session is sent is bounded already (prefetch credit
    // for deliveries, the client's window for confirms).
    router_.set(::zmq::sockopt::router_mandatory, true);
    router_.set(::zmq::sockopt::sndhwm, 0);
    // libzmq takes frames up to twice the limit, so that one past it is read, logged with its
    // size and its sender, and refused with the session kept; a larger one ends the connection
    // before it is allocated (and its client's session times out).
    router_.set(::zmq::sockopt::maxmsgsize, socket_frame_limit(options_.max_frame_bytes));
    if (options_.curve) {
        if (options_.curve->allowed_client_keys.empty())
            throw InvalidArgument(
                "acemq: zmq::ServerCurve lists no allowed client keys: name each client's .pub file, or the broker "
                "would admit no one");
        for (const auto& file : options_.curve->allowed_client_keys) {
            const std::string key = read_public_key(file);
            std::string binary(32, '\0');
            zmq_z85_decode(reinterpret_cast<std::uint8_t*>(binary.data()), key.c_str());
            allowed_keys_.insert(std::move(binary));
        }
        // libzmq admits every client key when no ZAP handler is bound: this one is bound
        // before the socket listens, in the server's own context, and admits only the listed keys.
        zap_.emplace(context_, ::zmq::socket_type::rep);
        zap_->set(::zmq::sockopt::linger, 0);
        zap_->bind("inproc://zeromq.zap.01");
        router_.set(::zmq::sockopt::curve_server, true);
        router_.set(::zmq::sockopt::curve_secretkey, read_secret_key(options_.curve->secret_key));
        router_.set(::zmq::sockopt::zap_domain, "acemq");
    }
    for (const std::string& endpoint : endpoints) {
        try {
            router_.bind(bind_endpoint(endpoint));
        } catch (const ::zmq::error_t& error) {
            throw ConnectionError("acemq: the zmq broker cannot listen on " + endpoint + ": " + error.what() +
                                  " (another broker there? choose another port or path)");
        }
        bound_.push_back(router_.get(::zmq::sockopt::last_endpoint));
    }
    if (open_broker) broker_ = open_broker();
    if (!broker_) throw InvalidArgument("acemq: zmq::serve needs a broker; pass acemq::inproc::broker(NAME)");
    if (options_.management) management_ = inproc::manage(broker_);
    std::string listening;
    for (const std::string& endpoint : bound_) listening += (listening.empty() ? "" : " ") + endpoint;
    details_ = {{"endpoints", listening},
                {"max_frame_bytes", std::to_string(options_.max_frame_bytes)},
                {"heartbeat_ms", std::to_string(options_.heartbeat.count())},
                {"missed_heartbeats", std::to_string(options_.missed_heartbeats)},
                {"curve", options_.curve ? "on" : "off"},
                {"management", "on"}};
    thread_ = std::thread([this] { run(); });
}

ServerImpl::~ServerImpl() {
    stopping_.store(true);
    wake_.signal();
    thread_.join();
    if (backup_.joinable()) backup_.join();
}

DeliverFn ServerImpl::deliver_to(std::uint64_t session, std::uint64_t consumer) {
    return [this, session, consumer](Delivery delivery) {
        queue_for_io(handed_, Handed{session, consumer, std::move(delivery)});
    };
}

inproc::ConfirmFn ServerImpl::confirm_to(std::uint64_t session, std::uint64_t sequence) {
    return [this, session, sequence](PublishResult result) {
        queue_for_io(confirmed_, Confirmed{session, sequence, std::move(result)});
    };
}

template <class Item>
void ServerImpl::queue_for_io(std::vector<Item>& queue, Item&& item) {
    bool first_waiting = false;
    {
        std::lock_guard lock(handed_mutex_);
        first_waiting = handed_.empty() && confirmed_.empty() && answered_.empty();
        queue.push_back(std::move(item));
    }
    wake_for(first_waiting);
}

// The I/O thread hands over what is queued after each frame it handles, so what its own
// publish or ack made possible needs no wake-up; nor does any but the first of a burst from
// other threads (a durable broker's writer, say), since the I/O thread takes them all at once.
void ServerImpl::wake_for(bool first_waiting) {
    if (first_waiting && std::this_thread::get_id() != io_thread_id_) wake_.signal();
}

void ServerImpl::run() {
    io_thread_id_ = std::this_thread::get_id();
    std::vector<::zmq::pollitem_t> items{{router_.handle(), 0, ZMQ_POLLIN, 0},
                                         {nullptr, wake_.fd(), ZMQ_POLLIN, 0},
                                         {connections_.handle(), 0, ZMQ_POLLIN, 0}};
    if (zap_) items.push_back({zap_->handle(), 0, ZMQ_POLLIN, 0});
    const auto tick = std::max(options_.heartbeat / 4, std::chrono::milliseconds(1));
    while (!stopping_.load()) {
        try {
            // A client found unreachable may have said bye before it went: its session ends
            // after the frames that came meanwhile are read, at once rather than a tick later.
            ::zmq::poll(items, unreachable_.empty() ? tick : std::chrono::milliseconds(0));
            if (items[1].revents & ZMQ_POLLIN) wake_.clear();
            if (zap_ && (items[3].revents & ZMQ_POLLIN)) answer_zap();
            receive_all();
            end_unreachable();
            // After the frames: a client's bye, read before its connection drops, ends its
            // session, and a drop after it is no news.
            if (items[2].revents & ZMQ_POLLIN) note_disconnects();
            hand_over_deliveries();
            beat_and_reap();
        } catch (const std::exception& error) {
            // One failing step must not stop the broker serving everyone else.
            log(LogLevel::error, "zmq-broker", std::string("zmq broker: ") + error.what());
        }
    }
    std::vector<std::uint64_t> ids;
    for (const auto& [id, session] : sessions_) ids.push_back(id);
    for (std::uint64_t id : ids) end_session(id, "the broker is stopping");
    std::lock_guard lock(handed_mutex_);
    handed_.clear();
    confirmed_.clear();
    answered_.clear();
}

void ServerImpl::receive_all() {
    // Bounded, so deliveries and heartbeats get their turn under a flood.
    for (int received = 0; received < 1024; ++received) {
        ::zmq::message_t identity;
        if (!router_.recv(identity, ::zmq::recv_flags::dontwait)) return;
        std::vector<::zmq::message_t> parts;
        while (router_.get(::zmq::sockopt::rcvmore)) {
            parts.emplace_back();
            (void)router_.recv(parts.back());
        }
        const std::string routing_id = identity.to_string();
        received_bytes_ = 0;
        for (const ::zmq::message_t& part : parts) received_bytes_ += part.size();
        if (parts.size() == 1 && parts[0].size() > options_.max_frame_bytes) {
            refuse_oversized(routing_id, parts[0]);
            continue;
        }
        if (parts.size() != 1) {
            refuse_frame(routing_id, 0, wire::ErrorCode::malformed,
                         "acemq: malformed zmq protocol frame: a message must be one frame, this one has " +
                             std::to_string(parts.size()));
            continue;
        }
        {
            // A frame's publishes and acks (a batch of many) go to a durable broker's next
            // commit together; the next frame's may find the writer at work on them already.
            const inproc::CommitBurst burst(*broker_);
            handle(routing_id, parts[0]);
        }
        hand_over_deliveries();
    }
}

void ServerImpl::handle(const std::string& routing_id, ::zmq::message_t& message) {
    const std::span bytes(static_cast<const std::byte*>(message.data()), message.size());
    std::optional<wire::Frame> frame;
    try {
        frame.emplace(wire::Frame::parse(bytes));
    } catch (const wire::ProtocolError& error) {
        const auto code = wire::is_unsupported_version(error) ? wire::ErrorCode::unsupported_version
                          : std::string_view(error.what()).find("is unknown") != std::string_view::npos
                              ? wire::ErrorCode::unknown_command
                              : wire::ErrorCode::malformed;
        refuse_frame(routing_id, wire::request_of(bytes), code, error.what());
        return;
    }
    const auto known = session_of_peer_.find(routing_id);
    if (frame->command() == Command::hello) {
        if (known != session_of_peer_.end()) end_session(known->second, "it said hello again");
        start_session(routing_id, *frame, message);
        return;
    }
    if (known == session_of_peer_.end()) {
        if (frame->command() != Command::bye && frame->command() != Command::heartbeat)
            refuse_frame(routing_id, wire::request_of(bytes), wire::ErrorCode::no_session,
                         "acemq: this broker has no session for the peer (it restarted, or the session timed out): "
                         "say hello to start one");
        return;
    }
    Session& session = sessions_.at(known->second);
    session.last_heard = Clock::now();
    try {
        handle_in_session(session, *frame);
    } catch (const wire::ProtocolError& error) {
        refuse_frame(routing_id, wire::request_of(bytes), wire::ErrorCode::malformed, error.what());
    } catch (const std::exception& error) {
        // A settlement the broker refused (its queue went, say): the client hears why.
        refuse_frame(routing_id, 0, wire::ErrorCode::malformed, error.what());
    }
}

void ServerImpl::start_session(const std::string& routing_id, const wire::Frame& frame, ::zmq::message_t& message) {
    wire::Hello hello;
    try {
        hello = wire::read_hello(frame);
    } catch (const wire::ProtocolError& error) {
        refuse_frame(routing_id, 0, wire::ErrorCode::malformed, error.what());
        return;
    }
    const std::uint64_t id = next_session_++;
    Session& session = sessions_[id];
    session.id = id;
    session.routing_id = routing_id;
    session.client_name = hello.client_name.substr(0, 200);
    session.peer = peer_of(message);
    try {
        session.fd = message.get(ZMQ_SRCFD);
    } catch (const ::zmq::error_t&) {
        // No descriptor to watch: a drop of this connection shows only as silence.
    }
    // A client's ack crosses the network unanswered, as in AMQP: waiting for its commit here
    // would only stall every other session.
    session.connection = broker_->open_connection(
        {.acks_wait = false, .peer = address_of(message, session.fd), .client_name = session.client_name});
    session.version = frame.version();
    session.outbox = wire::Batch(options_.max_frame_bytes);
    session.client_heartbeat =
        hello.heartbeat_millis > 0 ? std::chrono::milliseconds(hello.heartbeat_millis) : options_.heartbeat;
    session.last_heard = Clock::now();
    session_of_peer_[routing_id] = id;
    ++sessions_now_;
    const std::string session_number = std::to_string(id);
    log(LogLevel::info, "zmq-broker",
        "zmq broker: session " + session_number + " started for client " +
            acemq::detail::in_quotes(session.client_name) + " from " + session.peer,
        {{"event", "session-opened"},
         {"session", session_number},
         {"peer", session.peer},
         {"client", session.client_name}});
    send(session,
         wire::encode_welcome(hello.request, broker_->name(), static_cast<std::uint32_t>(options_.heartbeat.count()),
                              options_.max_frame_bytes));
}

void ServerImpl::handle_in_session(Session& session, const wire::Frame& frame) {
    const auto answer = [&](std::uint64_t request, auto&& work) {
        msgpack::sbuffer reply;
        try {
            reply = work();
        } catch (const wire::ProtocolError&) {
            throw;
        } catch (const std::exception& error) {
            reply = wire::encode_failure(request, failure_kind_of_current(), error.what());
        }
        send(session, std::move(reply));
    };
    switch (frame.command()) {
    case Command::declare: {
        const wire::Declare declare = wire::read_declare(frame);
        answer(declare.request, [&] {
            for (const ExchangeDeclaration& exchange : declare.exchanges) broker_->declare_exchange(exchange);
            for (const QueueDeclaration& queue : declare.queues) broker_->declare_queue(session.connection, queue);
            for (const BindingDeclaration& binding : declare.bindings) broker_->bind(session.connection, binding);
            return wire::encode_reply_nil(declare.request);
        });
        return;
    }
    case Command::publish: {
        std::uint64_t sequence = frame.unsigned_at(0, "sequence");
        PublishResult refusal;
        try {
            // Not waited for: on a durable broker the confirm comes after the commit, and the
            // publishes arriving meanwhile share it.
            broker_->publish(wire::read_publish(frame).message, confirm_to(session.id, sequence));
            return;
        } catch (const wire::ProtocolError& error) {
            // The client waits for this sequence's confirm: it gets a refusal naming the fault.
            ++frames_refused_;
            refusal = PublishResult{.return_reason = named(error.what()), .why = PublishResult::Unconfirmed::refused};
        } catch (const std::exception& error) {
            refusal = PublishResult{.return_reason = named(error.what()), .why = PublishResult::Unconfirmed::refused};
        }
        send(session, wire::encode_confirm(sequence, refusal));
        return;
    }
    case Command::consume: {
        const wire::Consume consume = wire::read_consume(frame);
        answer(consume.request, [&] {
            const std::uint64_t consumer = session.next_consumer++;
            session.consumers[consumer] = broker_->consume(
                session.connection, consume.queue,
                ConsumeSpec{.prefetch = consume.prefetch, .tag = consume.tag, .arguments = consume.arguments},
                deliver_to(session.id, consumer));
            return wire::encode_reply_unsigned(consume.request, consumer);
        });
        return;
    }
    case Command::cancel:
    case Command::release: {
        const wire::ConsumerRequest request = wire::read_consumer_request(frame);
        answer(request.request, [&] {
            const auto found = session.consumers.find(request.consumer);
            if (found == session.consumers.end())
                throw UsageError("acemq: this session has no consumer " + std::to_string(request.consumer));
            if (frame.command() == Command::cancel) {
                found->second->stop();
            } else {
                // Its unsettled deliveries go back to the queue with it; acks for them that
                // are still on their way then find nothing.
                found->second->close();
                session.consumers.erase(found);
                std::erase_if(session.unsettled,
                              [&](const auto& entry) { return entry.second.consumer == request.consumer; });
            }
            return wire::encode_reply_nil(request.request);
        });
        return;
    }
    case Command::ack:
    case Command::nack: {
        const wire::Settle settle = wire::read_settle(frame);
        const auto found = session.unsettled.find(settle.delivery_tag);
        if (found == session.unsettled.end()) {
            refuse_frame(session.routing_id, 0, wire::ErrorCode::malformed,
                         named("acemq: " + std::string(to_string(frame.command())) + " names delivery tag " +
                               std::to_string(settle.delivery_tag) +
                               ", which this session does not hold (settled already, or its consumer was released)"));
            return;
        }
        Delivery delivery = std::move(found->second.delivery);
        session.unsettled.erase(found);
        if (frame.command() == Command::ack)
            delivery.ack();
        else if (settle.requeue)
            delivery.requeue();
        else
            delivery.reject();
        return;
    }
    case Command::pull: {
        const wire::QueueRequest pull = wire::read_queue_request(frame);
        answer(pull.request, [&] {
            std::optional<Delivery> delivery = broker_->pull(session.connection, pull.queue);
            if (!delivery) return wire::encode_reply_nil(pull.request);
            const std::uint64_t tag = session.next_tag++;
            msgpack::sbuffer reply = wire::encode_reply_pulled(pull.request, tag, delivery->message());
            session.unsettled.emplace(tag, Session::Unsettled{std::move(*delivery), 0});
            return reply;
        });
        return;
    }
    case Command::depth:
    case Command::exists:
    case Command::remove: {
        const wire::QueueRequest request = wire::read_queue_request(frame);
        answer(request.request, [&] {
            if (frame.command() == Command::depth)
                return wire::encode_reply_unsigned(request.request,
                                                   broker_->queue_depth(session.connection, request.queue));
            if (frame.command() == Command::exists)
                return wire::encode_reply_bool(request.request,
                                               broker_->queue_exists(session.connection, request.queue));
            broker_->delete_queue(session.connection, request.queue);
            return wire::encode_reply_nil(request.request);
        });
        return;
    }
    case Command::ping: {
        const std::uint64_t request = wire::read_request(frame);
        answer(request,
               [&] { return wire::encode_reply_ping(request, inproc::refusing_commits(*broker_).value_or("")); });
        return;
    }
    case Command::manage: {
        if (!management_) {
            send(session,
                 wire::encode_refusal(wire::read_request(frame), ManagementError::Reason::disabled,
                                      "acemq: the zmq broker " + acemq::detail::in_quotes(broker_->name()) +
                                          " refuses management calls: it runs with management off (acemq-broker "
                                          "--no-management); restart it without that flag to manage it"));
            return;
        }
        const wire::ManageRequest request = wire::read_manage(frame);
        if (request.call == wire::Call::backup) {
            back_up(session, request);
            return;
        }
        answer(request.request,
               [&] { return answer_management(*management_, request, options_.max_frame_bytes, details_); });
        return;
    }
    case Command::batch: {
        const msgpack::object_array* entries = nullptr;
        try {
            entries = &wire::batch_entries(frame);
        } catch (const wire::ProtocolError& error) {
            refuse_batch(session.routing_id, frame, PublishResult::Unconfirmed::refused, error.what());
            return;
        }
        for (std::size_t index = 0; index < entries->size; ++index) handle_entry(session, *entries, index);
        return;
    }
    case Command::heartbeat: return;
    case Command::bye: end_session(session.id, "it said goodbye"); return;
    case Command::hello: return;  // handled before a session is looked up
    case Command::welcome:
    case Command::reply:
    case Command::failure:
    case Command::confirm:
    case Command::deliver:
    case Command::error:
    case Command::refusal:
        refuse_frame(session.routing_id, 0, wire::ErrorCode::unknown_command,
                     named("acemq: " + std::string(to_string(frame.command())) +
                           " is a command the broker sends, not one it takes"));
        return;
    }
}

void ServerImpl::handle_entry(Session& session, const msgpack::object_array& entries, std::size_t index) {
    entry_.emplace(index, entries.size);
    const struct Handled {
        std::optional<std::pair<std::size_t, std::size_t>>& entry;
        ~Handled() { entry.reset(); }
    } handled{entry_};
    try {
        handle_in_session(session, wire::Frame::entry(entries, index));
    } catch (const std::exception& error) {
        // As for a frame alone (handle): a refused settlement or an unreadable entry is
        // answered with an error frame, and the entries after it are handled all the same.
        refuse_frame(session.routing_id, 0, wire::ErrorCode::malformed, named(error.what()));
    }
}

std::string ServerImpl::named(std::string_view text) const {
    return entry_ ? wire::in_entry(text, entry_->first, entry_->second) : std::string(text);
}

void ServerImpl::refuse_batch(const std::string& routing_id, const wire::Frame& frame, PublishResult::Unconfirmed why,
                              const std::string& text) {
    const auto known = session_of_peer_.find(routing_id);
    if (known != session_of_peer_.end() && frame.field(0).type == msgpack::type::ARRAY) {
        // The client waits for a confirm of every publish it sent: none of these was taken.
        const msgpack::object_array& entries = frame.field(0).via.array;
        for (std::size_t index = 0; index < entries.size; ++index) {
            try {
                const wire::Frame entry = wire::Frame::entry(entries, index);
                if (entry.command() != Command::publish) continue;
                send(sessions_.at(known->second),
                     wire::encode_confirm(entry.unsigned_at(0, "sequence"),
                                          PublishResult{.return_reason = wire::in_entry(text, index, entries.size) +
                                                                         "; nothing of the batch was taken",
                                                        .why = why}));
            } catch (const wire::ProtocolError&) {
                // No sequence to answer: the error frame below speaks for it.
            }
        }
    }
    refuse_frame(routing_id, 0, wire::ErrorCode::malformed, text);
}

void ServerImpl::back_up(Session& session, const wire::ManageRequest& request) {
    if (backing_up_.exchange(true)) {
        send(session, wire::encode_refusal(request.request, ManagementError::Reason::failed,
                                           "acemq: a backup of this broker is running already; try again when it "
                                           "has finished"));
        return;
    }
    if (backup_.joinable()) backup_.join();  // the one before, finished
    backup_ = std::thread([this, session_id = session.id, request] {
        msgpack::sbuffer reply;
        try {
            // A Management of its own: the I/O thread's is used there meanwhile.
            reply = answer_management(*inproc::manage(broker_), request, options_.max_frame_bytes, details_);
        } catch (const std::exception& error) {
            reply = wire::encode_failure(request.request, failure_kind_of_current(), error.what());
        }
        // Free first: a backup asked for once this answer is out must find none running.
        backing_up_.store(false);
        queue_for_io(answered_, Answered{session_id, std::move(reply)});
    });
}

void ServerImpl::hand_over_deliveries() {
    std::vector<Handed> handed;
    std::vector<Confirmed> confirmed;
    std::vector<Answered> answered;
    {
        std::lock_guard lock(handed_mutex_);
        handed.swap(handed_);
        confirmed.swap(confirmed_);
        answered.swap(answered_);
    }
    for (Answered& item : answered)
        if (const auto found = sessions_.find(item.session); found != sessions_.end())
            send(found->second, std::move(item.frame));
    for (Confirmed& item : confirmed)
        if (const auto found = sessions_.find(item.session); found != sessions_.end())
            send_written(found->second, 0, true,
                         [&item](msgpack::sbuffer& onto) { wire::write_confirm(onto, item.sequence, item.result); });
    for (Handed& item : handed) {
        const auto found = sessions_.find(item.session);
        // A session that ended has closed its subscriptions, which took their deliveries back.
        if (found == sessions_.end()) continue;
        Session& session = found->second;
        const std::uint64_t tag = session.next_tag++;
        const InboundMessage& message = item.delivery.message();
        send_written(session, message.body().size(), wire::batchable(message.headers()),
                     [&](msgpack::sbuffer& onto) { wire::write_deliver(onto, item.consumer, tag, message); });
        session.unsettled.emplace(tag, Session::Unsettled{std::move(item.delivery), item.consumer});
    }
    flush_outboxes();
}

template <class Write>
void ServerImpl::send_written(Session& session, std::size_t at_least, bool batchable, const Write& write) {
    if (session.version < wire::version_of(Command::batch) || !batchable) {
        flush_outbox(session);
        msgpack::sbuffer frame(at_least + 256);
        write(frame);
        send(session, std::move(frame));
        return;
    }
    if (!session.outbox.fits(at_least)) flush_outbox(session);
    if (session.outbox.empty()) batched_.push_back(session.id);
    if (std::optional<msgpack::sbuffer> before = session.outbox.add(at_least, write)) send(session, std::move(*before));
}

void ServerImpl::flush_outbox(Session& session) {
    if (!session.outbox.empty()) send(session, session.outbox.take());
}

void ServerImpl::flush_outboxes() {
    for (std::uint64_t id : batched_)
        if (const auto found = sessions_.find(id); found != sessions_.end()) flush_outbox(found->second);
    batched_.clear();
}

void ServerImpl::beat_and_reap() {
    const auto now = Clock::now();
    std::vector<std::uint64_t> silent;
    for (auto& [id, session] : sessions_) {
        if (now - session.last_heard > session.client_heartbeat * options_.missed_heartbeats) {
            silent.push_back(id);
            continue;
        }
        if (now - session.last_sent >= options_.heartbeat) send(session, wire::encode_bare(Command::heartbeat));
    }
    for (std::uint64_t id : silent)
        end_session(id, "it sent nothing for " + std::to_string(options_.missed_heartbeats) + " heartbeat intervals");
}

void ServerImpl::send(Session& session, msgpack::sbuffer frame) {
    if (session.unreachable) return;
    if (!send_frame(router_, session.routing_id, std::move(frame))) {
        // A client that cannot be reached is gone: its deliveries go back in the next turn of
        // the loop, not after its heartbeats have run out.
        session.unreachable = true;
        unreachable_.push_back(session.id);
        return;
    }
    session.last_sent = Clock::now();
}

void ServerImpl::end_unreachable() {
    std::vector<std::uint64_t> ids;
    ids.swap(unreachable_);
    for (std::uint64_t id : ids) end_session(id, "it can no longer be reached");
}

void ServerImpl::send_to(const std::string& routing_id, msgpack::sbuffer frame) {
    (void)send_frame(router_, routing_id, std::move(frame));  // a peer gone already needs no answer
}

void ServerImpl::refuse_frame(const std::string& routing_id, std::uint64_t request, wire::ErrorCode code,
                              std::string_view text) {
    ++frames_refused_;
    const auto known = session_of_peer_.find(routing_id);
    const Session* session = known == session_of_peer_.end() ? nullptr : &sessions_.at(known->second);
    const std::string peer = session ? session->peer : std::string("a peer without a session");
    const std::string bytes = std::to_string(received_bytes_);
    log(LogLevel::warning, "zmq-broker",
        "zmq broker: refused a frame of " + bytes + " bytes from " + peer + ": " + acemq::detail::shown_text(text),
        {{"event", "frame-refused"},
         {"peer", peer},
         {"client", session ? std::string_view(session->client_name) : std::string_view()},
         {"reason", text},
         {"bytes", bytes}});
    send_to(routing_id, wire::encode_error(request, code, text));
}

void ServerImpl::note_disconnects() {
    while (const auto event = connections_.next()) {
        if (event->kind != ZMQ_EVENT_DISCONNECTED) continue;
        for (auto& [id, session] : sessions_) {
            if (session.fd != event->value) continue;
            session.fd = -1;
            const std::string limit = std::to_string(socket_frame_limit(options_.max_frame_bytes));
            log(LogLevel::warning, "zmq-broker",
                "zmq broker: the connection of " + session.peer + " (client " +
                    acemq::detail::in_quotes(session.client_name) + ", session " + std::to_string(id) +
                    ") dropped while its session was open: the client went away without a bye, or it sent a frame "
                    "past the " +
                    limit +
                    " bytes the socket takes (twice --max-frame-bytes), which is dropped unread; the session ends "
                    "when its heartbeats stop",
                {{"event", "peer-dropped"},
                 {"session", std::to_string(id)},
                 {"peer", session.peer},
                 {"client", session.client_name},
                 {"reason", "connection dropped while the session was open"},
                 {"limitBytes", limit}});
            break;  // one session a connection
        }
    }
}

void ServerImpl::refuse_oversized(const std::string& routing_id, ::zmq::message_t& frame) {
    std::string peer = peer_of(frame);
    const auto known = session_of_peer_.find(routing_id);
    if (known != session_of_peer_.end())
        peer += " (client " + acemq::detail::in_quotes(sessions_.at(known->second).client_name) + ")";
    const std::string why = "a frame of " + std::to_string(frame.size()) + " bytes is over this broker's limit of " +
                            std::to_string(options_.max_frame_bytes) +
                            " bytes (acemq-broker --max-frame-bytes, zmq::ServerOptions::max_frame_bytes)";
    const std::span bytes(static_cast<const std::byte*>(frame.data()), frame.size());
    std::optional<std::uint64_t> sequence;
    try {
        const wire::Frame parsed = wire::Frame::parse(bytes);
        if (parsed.command() == Command::publish) sequence = parsed.unsigned_at(0, "sequence");
        if (parsed.command() == Command::batch) {
            refuse_batch(routing_id, parsed, PublishResult::Unconfirmed::too_large, "acemq: " + why);
            return;
        }
    } catch (const wire::ProtocolError&) {
        // Not a publish anyone can match a confirm to: the error frame below answers it.
    }
    // A publish in a session waits for its confirm: it gets a refusal that says the same
    // publish fails the same way every time.
    if (sequence && known != session_of_peer_.end()) {
        log(LogLevel::warning, "zmq-broker",
            "zmq broker: refused what " + peer + " sent: " + why + "; nothing of it was taken",
            {{"event", "frame-refused"},
             {"peer", peer},
             {"reason", "over max_frame_bytes"},
             {"bytes", std::to_string(frame.size())}});
        ++frames_refused_;
        send(sessions_.at(known->second),
             wire::encode_confirm(*sequence, PublishResult{.return_reason = "acemq: " + why,
                                                           .why = PublishResult::Unconfirmed::too_large}));
        return;
    }
    refuse_frame(routing_id, wire::request_of(bytes), wire::ErrorCode::malformed, "acemq: " + why);
}

void ServerImpl::end_session(std::uint64_t session_id, std::string_view why) {
    const auto found = sessions_.find(session_id);
    if (found == sessions_.end()) return;
    Session& session = found->second;
    // Subscriptions first: closing them returns their unsettled deliveries, redelivered;
    // closing the connection then returns its pulls and deletes its exclusive queues.
    for (auto& [consumer, subscription] : session.consumers) subscription->close();
    session.consumers.clear();
    session.unsettled.clear();
    broker_->close_connection(session.connection);
    const std::string session_number = std::to_string(session_id);
    log(LogLevel::info, "zmq-broker",
        "zmq broker: session " + session_number + " of client " + acemq::detail::in_quotes(session.client_name) +
            " from " + session.peer + " ended: " + std::string(why),
        {{"event", "session-closed"},
         {"session", session_number},
         {"peer", session.peer},
         {"client", session.client_name},
         {"reason", why}});
    session_of_peer_.erase(session.routing_id);
    sessions_.erase(found);
    --sessions_now_;
    ++sessions_ended_;
}

void ServerImpl::answer_zap() {
    // ZAP 1.0 (ZeroMQ RFC 27): version, request id, domain, address, identity, mechanism,
    // credentials; the answer: version, request id, status code, status text, user id, metadata.
    std::vector<::zmq::message_t> request;
    do {
        request.emplace_back();
        (void)zap_->recv(request.back());
    } while (zap_->get(::zmq::sockopt::rcvmore));
    const bool well_formed = request.size() >= 6 && request[0].to_string_view() == "1.0";
    const bool admitted = well_formed && request[5].to_string_view() == "CURVE" && request.size() >= 7 &&
                          allowed_keys_.contains(request[6].to_string());
    if (!admitted) {
        ++clients_refused_;
        log(LogLevel::warning, "zmq-broker",
            "zmq broker: refused a client whose CurveZMQ key is not among the allowed keys"
            " (from " +
                (well_formed ? request[3].to_string() : std::string("?")) + ")");
    }
    const std::string request_id = request.size() > 1 ? request[1].to_string() : std::string();
    const std::array<std::string, 6> reply{
        "1.0", request_id, admitted ? "200" : "400", admitted ? "OK" : "client key not allowed", "", ""};
    for (std::size_t i = 0; i < reply.size(); ++i)
        (void)zap_->send(::zmq::buffer(reply[i]),
                         i + 1 < reply.size() ? ::zmq::send_flags::sndmore : ::zmq::send_flags::none);
}

}  // namespace

std::unique_ptr<Server> serve(std::shared_ptr<inproc::Broker> broker, std::vector<std::string> endpoints,
                              ServerOptions options) {
    return serve(broker ? BrokerOpener([broker] { return broker; }) : BrokerOpener(), std::move(endpoints),
                 std::move(options));
}

std::unique_ptr<Server> serve(const BrokerOpener& open_broker, std::vector<std::string> endpoints,
                              ServerOptions options) {
    return std::make_unique<ServerImpl>(open_broker, std::move(endpoints), std::move(options));
}

}  // namespace acemq::zmq
