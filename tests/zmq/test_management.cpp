// Suite zmq-offline: the management channel of the ZeroMQ protocol (docs/zmq-protocol.md §9,
// §11) against an in-process zmq::serve on ipc and tcp loopback: every call over the wire
// gives what inproc::manage gives on the same broker; sessions show who is connected; a
// broker with management off, a CurveZMQ key it does not admit, a version-1 peer, a
// version-1 broker, and management frames that break the protocol.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <limits>
#include <thread>
#include <tuple>

#include <zmq.hpp>

#include <acemq/acemq.hpp>
#include <acemq/clock.hpp>
#include <acemq/management.hpp>
#include <acemq/zmq.hpp>

#include "broker_process.hpp"
#include "fake_broker.hpp"
#include "raw_answer.hpp"
#include "zmq/management_wire.hpp"
#include "zmq/protocol.hpp"

using namespace std::chrono_literals;
namespace wire = acemq::zmq::wire;

namespace {

acemq::Bytes text_bytes(std::string_view text) {
    const auto* data = reinterpret_cast<const std::byte*>(text.data());
    return {data, data + text.size()};
}

std::vector<std::byte> frame_bytes(const msgpack::sbuffer& buffer) {
    const auto* data = reinterpret_cast<const std::byte*>(buffer.data());
    return {data, data + buffer.size()};
}

acemq::OutboundMessage numbered_message(const std::string& queue, int number, std::size_t body_bytes = 0) {
    acemq::OutboundMessage message{.routing_key = queue,
                                   .body = body_bytes > 0 ? acemq::Bytes(body_bytes, std::byte{'x'})
                                                          : text_bytes("message " + std::to_string(number)),
                                   .content_type = "text/plain",
                                   .message_id = std::to_string(number),
                                   .headers = {{"number", acemq::FieldValue(static_cast<std::int64_t>(number))}}};
    return message;
}

// A served broker on a clock of the test's, so that ages read twice read the same.
struct ServedBroker {
    explicit ServedBroker(const std::string& endpoint, acemq::zmq::ServerOptions options = {})
        : broker(acemq::inproc::broker("zmq-manage-" + acemq::new_uuid().substr(0, 8),
                                       std::make_shared<acemq::ManualClock>())),
          server(acemq::zmq::serve(broker, {endpoint}, std::move(options))) {}
    std::string url() const { return "zmq+" + server->endpoints().front(); }

    std::shared_ptr<acemq::inproc::Broker> broker;
    std::unique_ptr<acemq::zmq::Server> server;
};

auto fields_of(const acemq::ExchangeSummary& e) {
    return std::tie(e.name, e.kind, e.durable, e.auto_delete, e.arguments);
}
auto fields_of(const acemq::QueueSummary& q) {
    return std::tie(q.name, q.type, q.durable, q.exclusive, q.auto_delete, q.ready, q.unacked, q.consumers, q.bytes,
                    q.oldest_age, q.arguments);
}
// The wire carries `since` in whole milliseconds.
auto fields_of(const acemq::SessionSummary& s) {
    return std::make_tuple(s.peer, s.name, std::chrono::floor<std::chrono::milliseconds>(s.since), s.consumers,
                           s.unacked);
}
auto fields_of(const acemq::BrowsedMessage& b) {
    const acemq::InboundMessage& m = b.message;
    return std::make_tuple(b.position, b.persistent, acemq::Bytes(m.body().begin(), m.body().end()),
                           std::string(m.content_type()), std::string(m.exchange()), std::string(m.routing_key()),
                           std::string(m.message_id()), std::string(m.reply_to()), m.headers(), m.redelivered());
}
auto fields_of(const acemq::BindingDeclaration& b) { return std::tie(b.queue, b.exchange, b.routing_key, b.arguments); }

template <class T>
bool same(const std::vector<T>& over_wire, const std::vector<T>& direct) {
    if (over_wire.size() != direct.size()) return false;
    for (std::size_t i = 0; i < direct.size(); ++i)
        if (fields_of(over_wire[i]) != fields_of(direct[i])) return false;
    return true;
}

template <class Call>
acemq::ManagementError::Reason refusal_of(Call&& call) {
    try {
        call();
    } catch (const acemq::ManagementError& error) {
        return error.reason();
    }
    FAIL("no ManagementError");
    return acemq::ManagementError::Reason::failed;
}

// A DEALER of the test's own, speaking raw frames.
struct RawPeer {
    explicit RawPeer(const std::string& endpoint) : dealer(context, ::zmq::socket_type::dealer) {
        dealer.set(::zmq::sockopt::linger, 0);
        dealer.connect(endpoint);
    }
    void send(const msgpack::sbuffer& frame) {
        dealer.send(::zmq::buffer(frame.data(), frame.size()), ::zmq::send_flags::none);
    }
    std::vector<std::byte> answer() {
        auto reply = zmq_test::next_answer(dealer);
        REQUIRE(reply);
        return *reply;
    }
    // A hello of `version` with a minute's heartbeat, so a slow run keeps its session.
    void hello(std::uint32_t version) {
        msgpack::sbuffer frame;
        msgpack::packer<msgpack::sbuffer> out(frame);
        out.pack_array(5);
        out.pack(version);
        out.pack(static_cast<std::uint8_t>(wire::Command::hello));
        out.pack(1);
        out.pack(std::string("raw peer v") + std::to_string(version));
        out.pack(60000);
        send(frame);
        const auto welcome = answer();
        if (wire::Frame::parse(welcome).command() == wire::Command::error)
            FAIL(wire::read_error(wire::Frame::parse(welcome)).text);
        REQUIRE(wire::Frame::parse(welcome).command() == wire::Command::welcome);
        CHECK(wire::Frame::parse(welcome).version() == 1);
    }

    ::zmq::context_t context;
    ::zmq::socket_t dealer;
};

// A frame from a hand-made array: version, command, then whatever `fields` packs.
template <class Fields>
msgpack::sbuffer raw_frame(std::uint32_t version, wire::Command command, std::uint32_t count, Fields&& fields) {
    msgpack::sbuffer frame;
    msgpack::packer<msgpack::sbuffer> out(frame);
    out.pack_array(count + 2);
    out.pack(version);
    out.pack(static_cast<std::uint8_t>(command));
    fields(out);
    return frame;
}

void declare_orders(acemq::Transport& transport) {
    transport.declare(acemq::Topology{}
                          .exchange("orders", acemq::ExchangeKind::topic)
                          .queue("orders.new", {.type = acemq::QueueType::classic})
                          .queue("orders.audit", {.type = acemq::QueueType::classic})
                          .bind("orders.new", "orders", "order.*"));
}

}  // namespace

TEST_CASE("every management call over the wire gives what inproc::manage gives on the same broker") {
    ServedBroker served(zmq_test::fresh_ipc_endpoint("manage"));
    auto client = acemq::zmq::open(served.url(), {.session = {.name = "orders-service"}});
    declare_orders(*client);
    for (int i = 0; i < 6; ++i) REQUIRE(client->publish(numbered_message("orders.new", i)).confirmed);
    REQUIRE(client->publish(numbered_message("orders.audit", 99)).confirmed);
    auto pulled = client->pull("orders.new");  // one unacked
    REQUIRE(pulled);

    const auto direct = acemq::inproc::manage(served.broker);
    const auto remote = acemq::open_management(served.url());  // the registered zmq+ipc management

    CHECK(same(remote->exchanges(), direct->exchanges()));
    CHECK(same(remote->queues(), direct->queues()));
    CHECK(same(remote->bindings(), direct->bindings()));
    CHECK(same(remote->sessions(), direct->sessions()));
    CHECK(same(remote->browse("orders.new"), direct->browse("orders.new")));
    CHECK(same(remote->browse("orders.new", {.from = 2, .count = 2}),
               direct->browse("orders.new", {.from = 2, .count = 2})));
    CHECK(remote->browse("orders.new", {.from = 50}).empty());
    CHECK(remote->queues().size() == 2);

    const acemq::BrokerInfo over_wire = remote->info(), in_process = direct->info();
    CHECK(over_wire.product == "acemq-broker");
    CHECK(std::tie(over_wire.version, over_wire.name, over_wire.data_file, over_wire.data_bytes, over_wire.wal_bytes,
                   over_wire.free_disk_bytes, over_wire.opens, over_wire.quarantined, over_wire.commits,
                   over_wire.commit_latency_mean, over_wire.commit_latency_max, over_wire.published,
                   over_wire.delivered, over_wire.acked) ==
          std::tie(in_process.version, in_process.name, in_process.data_file, in_process.data_bytes,
                   in_process.wal_bytes, in_process.free_disk_bytes, in_process.opens, in_process.quarantined,
                   in_process.commits, in_process.commit_latency_mean, in_process.commit_latency_max,
                   in_process.published, in_process.delivered, in_process.acked));
    CHECK(over_wire.published.value_or(0) > 0);
    REQUIRE(over_wire.details.size() >= in_process.details.size());
    CHECK(std::equal(in_process.details.begin(), in_process.details.end(), over_wire.details.begin()));
    const std::vector<std::pair<std::string, std::string>> server_details(
        over_wire.details.begin() + static_cast<std::ptrdiff_t>(in_process.details.size()), over_wire.details.end());
    CHECK(server_details ==
          std::vector<std::pair<std::string, std::string>>{{"endpoints", served.server->endpoints().front()},
                                                           {"max_frame_bytes", std::to_string(64 * 1024 * 1024)},
                                                           {"heartbeat_ms", "1000"},
                                                           {"missed_heartbeats", "3"},
                                                           {"curve", "off"},
                                                           {"management", "on"}});

    // Refusals keep their reason; a memory broker has no data file to back up.
    using Reason = acemq::ManagementError::Reason;
    CHECK(refusal_of([&] { remote->purge("no.such.queue"); }) == refusal_of([&] { direct->purge("no.such.queue"); }));
    CHECK(refusal_of([&] { remote->backup("/tmp/never-written.db"); }) ==
          refusal_of([&] { direct->backup("/tmp/never-written.db"); }));
    CHECK(refusal_of([&] { remote->delete_exchange("no.such.exchange"); }) == Reason::not_found);
    auto consumer = client->consume("orders.audit", {.prefetch = 0}, [](acemq::Delivery) {});
    CHECK(refusal_of([&] { remote->delete_queue("orders.audit"); }) == Reason::in_use);
    try {
        remote->purge("no.such.queue");
    } catch (const acemq::ManagementError& error) {
        // The broker's name for itself becomes the broker as the client reaches it.
        CHECK(std::string(error.what()).find("inproc broker") == std::string::npos);
    }

    // What changes the broker: the same effect as in-process.
    CHECK(remote->purge("orders.new") == 5);
    CHECK(same(remote->queues(), direct->queues()));
    remote->delete_queue("orders.audit", {.even_if_consumed = true});
    remote->delete_exchange("orders");
    CHECK(same(remote->queues(), direct->queues()));
    CHECK(direct->queues().size() == 1);
    CHECK(direct->exchanges().empty());
    CHECK(direct->bindings().empty());
    pulled->ack();
}

TEST_CASE("a backup over the wire copies a durable broker's data file while it serves") {
    const auto directory =
        std::filesystem::temp_directory_path() / ("acemq-manage-backup-" + acemq::new_uuid().substr(0, 8));
    std::filesystem::create_directories(directory);
    {
        auto broker = acemq::inproc::broker("zmq-backup-" + acemq::new_uuid().substr(0, 8),
                                            acemq::inproc::BrokerOptions{.data = (directory / "live.db").string()});
        const auto server = acemq::zmq::serve(broker, {zmq_test::fresh_ipc_endpoint("backup")});
        const std::string url = "zmq+" + server->endpoints().front();
        auto client = acemq::zmq::open(url);
        client->declare(acemq::Topology{}.queue("kept", {.type = acemq::QueueType::classic}));
        for (int i = 0; i < 3; ++i) REQUIRE(client->publish(numbered_message("kept", i)).confirmed);
        const auto management = acemq::zmq::manage(url);
        const std::string copy = (directory / "copy.db").string();
        const acemq::BackupResult backup = management->backup(copy);
        CHECK(backup.path == copy);
        CHECK(backup.bytes == std::filesystem::file_size(copy));
        CHECK(backup.messages == 3);
        // A second backup to the same path is refused, and the broker goes on.
        CHECK(refusal_of([&] { management->backup(copy); }) == acemq::ManagementError::Reason::failed);
        CHECK(client->publish(numbered_message("kept", 3)).confirmed);
    }
    auto restored = acemq::inproc::broker("zmq-restored-" + acemq::new_uuid().substr(0, 8),
                                          acemq::inproc::BrokerOptions{.data = (directory / "copy.db").string()});
    const auto queues = acemq::inproc::manage(restored)->queues();
    REQUIRE(queues.size() == 1);
    CHECK(queues.front().ready == 3);
    restored.reset();
    std::filesystem::remove_all(directory);
}

TEST_CASE("sessions lists each client by its name and where it connects from") {
    ServedBroker tcp("tcp://127.0.0.1:0");
    auto client = acemq::zmq::open(tcp.url(), {.session = {.name = "billing"}});
    client->declare(acemq::Topology{}.queue("billing.in", {.type = acemq::QueueType::classic}));
    auto consumer = client->consume("billing.in", {.prefetch = 10}, [](acemq::Delivery) {});
    const auto management = acemq::zmq::manage(tcp.url(), {.session = {.name = "operator"}});

    const std::vector<acemq::SessionSummary> sessions = management->sessions();
    REQUIRE(sessions.size() == 2);
    const auto billing =
        std::find_if(sessions.begin(), sessions.end(), [](const auto& s) { return s.name == "billing"; });
    REQUIRE(billing != sessions.end());
    CHECK(billing->peer.starts_with("127.0.0.1:"));
    CHECK(billing->peer !=
          "127.0.0.1:" + tcp.server->endpoints().front().substr(tcp.server->endpoints().front().rfind(':') + 1));
    CHECK(billing->consumers == 1);
    CHECK(std::any_of(sessions.begin(), sessions.end(), [](const auto& s) { return s.name == "operator"; }));

    ServedBroker ipc(zmq_test::fresh_ipc_endpoint("sessions"));
    const auto over_ipc = acemq::zmq::manage(ipc.url(), {.session = {.name = "operator"}});
    const auto listed = over_ipc->sessions();
    REQUIRE(listed.size() == 1);
    CHECK(listed.front().peer == ipc.server->endpoints().front());
    CHECK(listed.front().name == "operator");
}

TEST_CASE("a broker with management off refuses every call, naming --no-management, and serves the rest") {
    ServedBroker served(zmq_test::fresh_ipc_endpoint("nomanage"), {.management = false});
    const auto management = acemq::open_management(served.url());
    try {
        management->queues();
        FAIL("management calls were answered");
    } catch (const acemq::ManagementError& error) {
        CHECK(error.reason() == acemq::ManagementError::Reason::disabled);
        CHECK(std::string(error.what()).find("acemq-broker --no-management") != std::string::npos);
    }
    CHECK(refusal_of([&] { management->info(); }) == acemq::ManagementError::Reason::disabled);
    auto client = acemq::zmq::open(served.url());
    client->declare(acemq::Topology{}.queue("still.served", {.type = acemq::QueueType::classic}));
    CHECK(client->publish(numbered_message("still.served", 1)).confirmed);
    CHECK(client->queue_depth("still.served") == 1);
}

TEST_CASE("CurveZMQ: a management session with an admitted key is answered; another key is refused") {
    const auto directory =
        std::filesystem::temp_directory_path() / ("acemq-manage-keys-" + acemq::new_uuid().substr(0, 8));
    std::filesystem::create_directories(directory);
    const auto server = acemq::zmq::generate_key_pair(directory / "broker");
    const auto known = acemq::zmq::generate_key_pair(directory / "operator");
    const auto stranger = acemq::zmq::generate_key_pair(directory / "stranger");
    ServedBroker served(
        "tcp://127.0.0.1:0",
        {.curve = acemq::zmq::ServerCurve{.secret_key = server.secret_key, .allowed_client_keys = {known.public_key}}});

    const auto admitted =
        acemq::zmq::manage(served.url(), {.curve = acemq::zmq::ClientCurve{server.public_key, known.secret_key}});
    CHECK(admitted->queues().empty());
    const auto info = admitted->info();
    CHECK(std::find(info.details.begin(), info.details.end(), std::pair<std::string, std::string>{"curve", "on"}) !=
          info.details.end());

    try {
        acemq::zmq::manage(served.url(), {.curve = acemq::zmq::ClientCurve{server.public_key, stranger.secret_key},
                                          .session = {.connect_timeout = 5s}});
        FAIL("a key the broker does not admit was let in");
    } catch (const acemq::ManagementError& error) {
        CHECK(error.reason() == acemq::ManagementError::Reason::access_refused);
        CHECK(std::string(error.what()).find(".pub") != std::string::npos);
    }
    std::filesystem::remove_all(directory);
}

TEST_CASE("a version-1 client is served as before; management needs a version-2 frame") {
    ServedBroker served(zmq_test::fresh_ipc_endpoint("v1"));
    RawPeer peer(served.server->endpoints().front());
    peer.hello(1);

    // Every frame of version 1's commands is written as version 1, which a version-1 peer reads.
    const auto declare =
        wire::encode_declare(2, acemq::Topology{}.queue("v1.queue", {.type = acemq::QueueType::classic}));
    CHECK(wire::Frame::parse(frame_bytes(declare)).version() == 1);
    peer.send(declare);
    const auto declared = peer.answer();
    CHECK(wire::Frame::parse(declared).command() == wire::Command::reply);
    CHECK(wire::Frame::parse(declared).version() == 1);

    peer.send(wire::encode_publish(3, numbered_message("v1.queue", 1)));
    const auto confirm_bytes = peer.answer();
    const wire::Frame confirm = wire::Frame::parse(confirm_bytes);
    REQUIRE(confirm.command() == wire::Command::confirm);
    CHECK(confirm.version() == 1);
    CHECK(wire::read_confirm(confirm).result.confirmed);

    // A management call in a version-1 frame is a command version 1 does not have.
    peer.send(raw_frame(1, wire::Command::manage, 3, [](auto& out) {
        out.pack(4);
        out.pack(std::string("queues"));
        out.pack_array(0);
    }));
    const auto error_bytes = peer.answer();
    const wire::ErrorFrame error = wire::read_error(wire::Frame::parse(error_bytes));
    CHECK(error.code == wire::ErrorCode::unknown_command);
    CHECK(acemq::inproc::manage(served.broker)->queues().front().ready == 1);
}

TEST_CASE("a version-2 client meeting a broker that speaks only version 1 fails open naming both versions") {
    // What a version-1 broker answers every frame of another version with (its text included).
    zmq_test::FakeBroker broker("v1broker", [](std::span<const std::byte> frame) -> std::optional<msgpack::sbuffer> {
        const auto version = frame.size() < 2 ? 1 : std::to_integer<int>(frame[1]);
        if (version == 1) return std::nullopt;
        return wire::encode_error(0, wire::ErrorCode::unsupported_version,
                                  "acemq: zmq protocol version " + std::to_string(version) +
                                      " is not spoken here (this side speaks version 1)");
    });
    try {
        acemq::zmq::manage(broker.url(), {.session = {.connect_timeout = 5s}});
        FAIL("a version-1 broker was taken for a version-2 one");
    } catch (const acemq::ConnectionError& error) {
        const std::string text = error.what();
        CHECK(text.find("protocol version 2") != std::string::npos);
        CHECK(text.find("speaks version 1") != std::string::npos);
    }
}

TEST_CASE("management frames that break the protocol get an error frame; the broker goes on") {
    ServedBroker served(zmq_test::fresh_ipc_endpoint("hostile"), {.max_frame_bytes = 64 * 1024});
    auto client = acemq::zmq::open(served.url());
    declare_orders(*client);
    for (int i = 0; i < 20; ++i) REQUIRE(client->publish(numbered_message("orders.new", i, 8 * 1024)).confirmed);

    RawPeer peer(served.server->endpoints().front());
    peer.hello(2);
    struct Case {
        const char* what;
        msgpack::sbuffer frame;
    };
    std::vector<Case> cases;
    cases.push_back({"call is not a str", raw_frame(2, wire::Command::manage, 3, [](auto& out) {
                         out.pack(11);
                         out.pack(5);
                         out.pack_array(0);
                     })});
    cases.push_back({"unknown call", raw_frame(2, wire::Command::manage, 3, [](auto& out) {
                         out.pack(12);
                         out.pack(std::string("drop_everything"));
                         out.pack_array(0);
                     })});
    cases.push_back({"arguments missing", raw_frame(2, wire::Command::manage, 3, [](auto& out) {
                         out.pack(13);
                         out.pack(std::string("browse"));
                         out.pack_array(1);
                         out.pack(std::string("orders.new"));
                     })});
    cases.push_back({"arguments not an array", raw_frame(2, wire::Command::manage, 3, [](auto& out) {
                         out.pack(14);
                         out.pack(std::string("purge"));
                         out.pack(std::string("orders.new"));
                     })});
    cases.push_back({"negative count", raw_frame(2, wire::Command::manage, 3, [](auto& out) {
                         out.pack(15);
                         out.pack(std::string("browse"));
                         out.pack_array(3);
                         out.pack(std::string("orders.new"));
                         out.pack(0);
                         out.pack(-1);
                     })});
    cases.push_back({"even_if_consumed not a bool", raw_frame(2, wire::Command::manage, 3, [](auto& out) {
                         out.pack(16);
                         out.pack(std::string("delete_queue"));
                         out.pack_array(2);
                         out.pack(std::string("orders.new"));
                         out.pack(1);
                     })});
    cases.push_back({"a huge argument count", raw_frame(2, wire::Command::manage, 2, [](auto& out) {
                         out.pack(17);
                         out.pack(std::string("queues"));
                         out.pack_array(0xffffffff);
                     })});
    cases.push_back({"too few fields", raw_frame(2, wire::Command::manage, 2, [](auto& out) {
                         out.pack(18);
                         out.pack(std::string("queues"));
                     })});
    cases.push_back(
        {"a refusal sent to the broker", wire::encode_refusal(19, acemq::ManagementError::Reason::failed, "x")});
    for (const Case& c : cases) {
        INFO(c.what);
        peer.send(c.frame);
        const auto answer = peer.answer();
        const wire::Frame frame = wire::Frame::parse(answer);
        REQUIRE(frame.command() == wire::Command::error);
        const wire::ErrorFrame error = wire::read_error(frame);
        CHECK(error.code != wire::ErrorCode::no_session);
        CHECK_FALSE(error.text.empty());
    }

    // 2^63 messages asked: the answer holds what fits in one frame, and says there is more.
    peer.send(wire::encode_manage({.request = 30,
                                   .call = wire::Call::browse,
                                   .name = "orders.new",
                                   .browse = {.from = 0, .count = std::size_t{1} << 63}}));
    const auto browsed_bytes = peer.answer();
    CHECK(browsed_bytes.size() <= 64 * 1024);
    const wire::Browsed browsed = wire::read_browse_reply(wire::Frame::parse(browsed_bytes));
    CHECK(browsed.more);
    CHECK(browsed.messages.size() > 1);
    CHECK(browsed.messages.size() < 20);

    // The client gathers every message asked for across answers, and the queue is as it was.
    const auto management = acemq::zmq::manage(served.url());
    const auto direct = acemq::inproc::manage(served.broker);
    const auto all = management->browse("orders.new", {.count = 100});
    CHECK(all.size() == 20);
    CHECK(same(all, direct->browse("orders.new", {.count = 100})));
    CHECK(client->queue_depth("orders.new") == 20);

    // A message that alone is past the frame limit cannot be browsed over the wire.
    served.broker->publish(numbered_message("orders.audit", 1, 100 * 1024));
    try {
        management->browse("orders.audit");
        FAIL("a message past the frame limit was browsed");
    } catch (const acemq::ManagementError& error) {
        CHECK(error.reason() == acemq::ManagementError::Reason::failed);
        CHECK(std::string(error.what()).find("max-frame-bytes") != std::string::npos);
    }
    CHECK(management->queues().size() == 2);
    CHECK(served.server->stats().frames_refused >= cases.size());
}
