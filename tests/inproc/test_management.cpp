// The embedded broker's management (Broker's operator members and inproc::manage): the
// listings, browse leaving a queue as it was, purge, deleting by name, sessions, info on a
// data file, and the online backup of a live durable broker.
#include <catch2/catch.hpp>

#include <acemq/config.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include <acemq/error.hpp>
#include <acemq/management.hpp>
#include "../support/temp_dir.hpp"
#include "../support/thrown.hpp"
#include "../support/wait.hpp"
#include "inbox.hpp"

using namespace acemq;
using namespace inproc_test;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing_support::what_of;

namespace {

OutboundMessage persistent_to(std::string queue, std::string_view body) {
    return OutboundMessage{.routing_key = std::move(queue), .body = bytes(body), .persistent = true};
}

void declare_classic(inproc::Broker& broker, std::string name) {
    const auto connection = broker.open_connection();
    broker.declare(connection, Topology{}.queue(name, classic()));
    broker.close_connection(connection);
}

std::vector<std::string> names_of(const auto& summaries) {
    std::vector<std::string> names;
    for (const auto& summary : summaries) names.push_back(summary.name);
    return names;
}

std::vector<std::string> browsed_bodies(const std::vector<BrowsedMessage>& browsed) {
    std::vector<std::string> bodies;
    for (const BrowsedMessage& entry : browsed) bodies.push_back(text(entry.message.body()));
    return bodies;
}

const QueueSummary& summary_of(const std::vector<QueueSummary>& queues, std::string_view name) {
    const auto found =
        std::find_if(queues.begin(), queues.end(), [&](const QueueSummary& q) { return q.name == name; });
    REQUIRE(found != queues.end());
    return *found;
}

ManagementError::Reason reason_of(auto&& action) {
    try {
        action();
    } catch (const ManagementError& error) {
        return error.reason();
    }
    FAIL("expected a ManagementError, and none was thrown");
    return ManagementError::Reason::failed;
}

std::string detail_of(const BrokerInfo& info, std::string_view name) {
    for (const auto& [key, value] : info.details)
        if (key == name) return value;
    return "(absent)";
}

}  // namespace

TEST_CASE("listings show what a Topology with dead letters declared, by name, without the default exchange") {
    auto clock = std::make_shared<ManualClock>();
    auto broker = inproc::broker(unique_name("listings"), clock);
    const auto connection = broker->open_connection();
    const Topology topology = Topology{}
                                  .exchange("orders", ExchangeKind::topic)
                                  .queue("orders.new", {.dead_letter = true})
                                  .bind("orders.new", "orders", "order.*");
    broker->declare(connection, topology);
    auto management = inproc::manage(broker);

    const std::vector<ExchangeSummary> exchanges = management->exchanges();
    CHECK(names_of(exchanges) == std::vector<std::string>{"acemq.dlx", "orders"});
    CHECK(exchanges[1].kind == ExchangeKind::topic);
    CHECK(exchanges[1].durable);

    std::vector<BindingDeclaration> expected = topology.bindings();
    std::sort(expected.begin(), expected.end(), [](const BindingDeclaration& a, const BindingDeclaration& b) {
        return std::tie(a.exchange, a.queue, a.routing_key) < std::tie(b.exchange, b.queue, b.routing_key);
    });
    CHECK(management->bindings() == expected);

    // Depths, bytes and the head's age, with one message handed out and one consumer elsewhere.
    for (const char* body : {"aaaa", "bb", "c"})
        REQUIRE(broker->publish(message("orders", "order.new", body)).confirmed);
    clock->advance(seconds(5));
    REQUIRE(broker->publish(message("orders", "order.new", "dd")).confirmed);
    auto pulled = broker->pull(connection, "orders.new");
    REQUIRE(pulled);
    Inbox inbox;
    auto subscription = broker->consume(connection, "orders.new.dlq", with_prefetch(1), inbox.deliver());

    const std::vector<QueueSummary> queues = management->queues();
    CHECK(names_of(queues) == std::vector<std::string>{"orders.new", "orders.new.dlq", "orders.new.parked"});
    const QueueSummary& orders = summary_of(queues, "orders.new");
    CHECK(orders.type == QueueType::quorum);
    CHECK(orders.durable);
    CHECK_FALSE(orders.exclusive);
    CHECK(orders.ready == 3);
    CHECK(orders.unacked == 1);
    CHECK(orders.consumers == 0);
    CHECK(orders.bytes == 9);  // "bb", "c" and "dd" ready, "aaaa" handed out
    CHECK(orders.oldest_age == std::optional<milliseconds>(seconds(5)));
    CHECK(orders.arguments == topology.find_queue("orders.new")->arguments);
    const QueueSummary& dlq = summary_of(queues, "orders.new.dlq");
    CHECK(dlq.consumers == 1);
    CHECK(dlq.ready == 0);
    CHECK(dlq.bytes == 0);
    CHECK_FALSE(dlq.oldest_age);
    pulled->ack();
}

TEST_CASE("browse shows ready messages in order with their properties, and leaves the queue as it was") {
    auto broker = inproc::broker(unique_name("browse"));
    declare_classic(*broker, "jobs");
    for (int i = 0; i < 5; ++i) {
        OutboundMessage out = message("", "jobs", "job " + std::to_string(i));
        out.content_type = "text/plain";
        out.reply_to = "replies";
        out.headers = {{"attempt", FieldValue(std::int64_t{i})}};
        out.persistent = i % 2 == 0;
        REQUIRE(broker->publish(std::move(out)).confirmed);
    }
    // The head handed out and requeued: browsed as it will be delivered, redelivered.
    const auto connection = broker->open_connection();
    broker->pull(connection, "jobs")->requeue();
    auto management = inproc::manage(broker);

    const std::vector<BrowsedMessage> all = management->browse("jobs", {.from = 0, .count = 10});
    REQUIRE(browsed_bodies(all) == std::vector<std::string>{"job 0", "job 1", "job 2", "job 3", "job 4"});
    CHECK(all[0].message.redelivered());
    CHECK_FALSE(all[1].message.redelivered());
    CHECK(all[3].position == 3);
    CHECK(all[3].message.message_id() == "job 3");
    CHECK(all[3].message.content_type() == "text/plain");
    CHECK(all[3].message.reply_to() == "replies");
    CHECK(all[3].message.routing_key() == "jobs");
    CHECK(all[3].message.headers().at("attempt") == FieldValue(std::int64_t{3}));
    CHECK(all[2].persistent);
    CHECK_FALSE(all[3].persistent);

    const std::vector<BrowsedMessage> middle = management->browse("jobs", {.from = 2, .count = 2});
    CHECK(browsed_bodies(middle) == std::vector<std::string>{"job 2", "job 3"});
    CHECK(middle[0].position == 2);
    CHECK(management->browse("jobs", {.from = 4, .count = 10}).size() == 1);
    CHECK(management->browse("jobs", {.from = 5, .count = 3}).empty());
    CHECK(management->browse("jobs", {.from = 1000, .count = 3}).empty());
    CHECK(management->browse("jobs", {.from = 0, .count = 0}).empty());
    CHECK(reason_of([&] { management->browse("nope"); }) == ManagementError::Reason::not_found);

    // Depth and order as before, and nothing marked redelivered that was not.
    CHECK(broker->queue_depth(connection, "jobs") == 5);
    const std::vector<InboundMessage> delivered = pull_all(*broker, "jobs");
    std::vector<std::string> order;
    for (const InboundMessage& m : delivered) order.push_back(text(m.body()));
    CHECK(order == std::vector<std::string>{"job 0", "job 1", "job 2", "job 3", "job 4"});
    CHECK_FALSE(delivered[1].redelivered());
}

TEST_CASE("browse on a data file writes nothing: a restart finds no message marked redelivered") {
    testing_support::TempDir directory("management");
    const std::string file = (directory.path() / "broker.db").string();
    {
        auto broker = inproc::broker(unique_name("browse-durable"), inproc::BrokerOptions{.data = file});
        declare_classic(*broker, "jobs");
        for (const char* body : {"one", "two", "three"})
            REQUIRE(broker->publish(persistent_to("jobs", body)).confirmed);
        CHECK(browsed_bodies(inproc::manage(broker)->browse("jobs")) ==
              std::vector<std::string>{"one", "two", "three"});
    }
    auto broker = inproc::broker(unique_name("browse-durable"), inproc::BrokerOptions{.data = file});
    const std::vector<BrowsedMessage> after = inproc::manage(broker)->browse("jobs");
    REQUIRE(browsed_bodies(after) == std::vector<std::string>{"one", "two", "three"});
    for (const BrowsedMessage& entry : after) CHECK_FALSE(entry.message.redelivered());
}

TEST_CASE("purge drops the ready messages, says how many, keeps those handed out, and is committed") {
    testing_support::TempDir directory("management");
    const std::string file = (directory.path() / "broker.db").string();
    {
        auto broker = inproc::broker(unique_name("purge"), inproc::BrokerOptions{.data = file});
        declare_classic(*broker, "jobs");
        for (const char* body : {"held", "a", "b", "c"})
            REQUIRE(broker->publish(persistent_to("jobs", body)).confirmed);
        const auto connection = broker->open_connection();
        auto held = broker->pull(connection, "jobs");
        REQUIRE(held);
        auto management = inproc::manage(broker);
        CHECK(management->purge("jobs") == 3);
        const QueueSummary after = summary_of(management->queues(), "jobs");
        CHECK(after.ready == 0);
        CHECK(after.unacked == 1);
        CHECK(management->purge("jobs") == 0);
        CHECK(reason_of([&] { management->purge("nope"); }) == ManagementError::Reason::not_found);
        // Still unsettled when the broker closes: kept, and back after the restart.
    }
    auto broker = inproc::broker(unique_name("purge"), inproc::BrokerOptions{.data = file});
    const std::vector<InboundMessage> left = pull_all(*broker, "jobs");
    REQUIRE(left.size() == 1);
    CHECK(text(left[0].body()) == "held");
}

TEST_CASE("delete_queue refuses a queue with consumers unless told, and one that does not exist") {
    auto broker = inproc::broker(unique_name("delete"));
    declare_classic(*broker, "busy");
    declare_classic(*broker, "idle");
    const auto connection = broker->open_connection();
    Inbox inbox;
    auto subscription = broker->consume(connection, "busy", with_prefetch(1), inbox.deliver());
    auto management = inproc::manage(broker);

    CHECK(reason_of([&] { management->delete_queue("nope"); }) == ManagementError::Reason::not_found);
    CHECK(reason_of([&] { management->delete_queue("busy"); }) == ManagementError::Reason::in_use);
    CHECK_THAT(what_of<ManagementError>([&] { management->delete_queue("busy"); }),
               Catch::Contains("\"busy\"") && Catch::Contains("even_if_consumed"));
    CHECK(broker->queue_exists(connection, "busy"));

    management->delete_queue("idle");
    management->delete_queue("busy", {.even_if_consumed = true});
    CHECK(management->queues().empty());
    // The cancelled consumer gets nothing more: a message to the name goes nowhere.
    CHECK_FALSE(broker->publish(message("", "busy", "late", true)).routed);
    CHECK(inbox.size() == 0);
}

TEST_CASE("delete_exchange removes the exchange and its bindings, also from the data file") {
    testing_support::TempDir directory("management");
    const std::string file = (directory.path() / "broker.db").string();
    const Topology topology = Topology{}
                                  .exchange("orders", ExchangeKind::direct)
                                  .queue("orders.new", classic())
                                  .bind("orders.new", "orders", "new");
    {
        auto broker = inproc::broker(unique_name("exchange"), inproc::BrokerOptions{.data = file});
        broker->declare(broker->open_connection(), topology);
        auto management = inproc::manage(broker);
        REQUIRE(management->bindings().size() == 1);
        CHECK_THROWS_AS(management->delete_exchange(""), InvalidArgument);
        CHECK(reason_of([&] { management->delete_exchange("nope"); }) == ManagementError::Reason::not_found);
        management->delete_exchange("orders");
        CHECK(management->exchanges().empty());
        CHECK(management->bindings().empty());
        CHECK_FALSE(broker->publish(message("orders", "new")).confirmed);
        CHECK(names_of(management->queues()) == std::vector<std::string>{"orders.new"});
    }
    // Declared again, the exchange comes back without its old binding, also after a restart,
    // which reads the bindings from the file.
    const std::string again = unique_name("exchange");
    {
        auto broker = inproc::broker(again, inproc::BrokerOptions{.data = file});
        auto management = inproc::manage(broker);
        CHECK(management->exchanges().empty());
        broker->declare_exchange(ExchangeDeclaration{.name = "orders", .kind = ExchangeKind::direct, .arguments = {}});
        CHECK(management->bindings().empty());
    }
    CHECK(inproc::manage(inproc::broker(again, inproc::BrokerOptions{.data = file}))->bindings().empty());
}

TEST_CASE("sessions show each connection's peer, client name, consumers and unacked deliveries") {
    auto broker = inproc::broker(unique_name("sessions"));
    declare_classic(*broker, "jobs");
    const auto before = std::chrono::system_clock::now();
    const auto remote =
        broker->open_connection({.acks_wait = false, .peer = "10.0.0.5:4242", .client_name = "billing"});
    const auto local = broker->open_connection();
    const auto after = std::chrono::system_clock::now();
    for (int i = 0; i < 4; ++i) REQUIRE(broker->publish(message("", "jobs", "job")).confirmed);
    Inbox inbox;
    auto subscription = broker->consume(remote, "jobs", with_prefetch(2), inbox.deliver());
    auto pulled = broker->pull(local, "jobs");
    REQUIRE(pulled);
    auto management = inproc::manage(broker);

    const std::vector<SessionSummary> sessions = management->sessions();
    REQUIRE(sessions.size() == 2);
    CHECK(sessions[0].peer == "10.0.0.5:4242");
    CHECK(sessions[0].name == "billing");
    CHECK(sessions[0].consumers == 1);
    CHECK(sessions[0].unacked == 2);
    CHECK(sessions[0].since >= before);
    CHECK(sessions[0].since <= after);
    CHECK(sessions[1].peer == "in-process");
    CHECK(sessions[1].name.empty());
    CHECK(sessions[1].consumers == 0);
    CHECK(sessions[1].unacked == 1);

    pulled->ack();
    subscription->close();
    broker->close_connection(remote);
    const std::vector<SessionSummary> left = management->sessions();
    REQUIRE(left.size() == 1);
    CHECK(left[0].unacked == 0);
}

TEST_CASE("info tells a data file's sizes, its opens across a reopen, and the commits since start") {
    testing_support::TempDir directory("management");
    const std::string file = (directory.path() / "broker.db").string();
    const std::string name = unique_name("info");
    const inproc::BrokerOptions options{.data = file, .max_data_bytes = 64 << 20};
    {
        auto broker = inproc::broker(name, options);
        declare_classic(*broker, "jobs");
        // The WAL is emptied after a second with nothing to write: publish until it is seen.
        BrokerInfo info;
        for (int i = 0; i < 20 && info.wal_bytes == 0; ++i) {
            REQUIRE(broker->publish(persistent_to("jobs", "job")).confirmed);
            info = inproc::manage(broker)->info();
        }
        CHECK(info.product == "acemq in-process broker");
        CHECK(info.version == ACEMQ_VERSION);
        CHECK(info.name == name);
        CHECK(info.data_file == file);
        CHECK(info.data_bytes > 0);
        CHECK(info.wal_bytes > 0);
        CHECK(info.free_disk_bytes.value_or(0) > 0);
        CHECK(info.opens == 1);
        CHECK(info.quarantined == 0);
        CHECK(info.commits >= 2);  // the queue's declaration and each publish, one at a time
        REQUIRE(info.commit_latency_mean);
        REQUIRE(info.commit_latency_max);
        CHECK(*info.commit_latency_max >= *info.commit_latency_mean);
        CHECK(detail_of(info, "max_data_bytes") == std::to_string(64 << 20));
        CHECK(detail_of(info, "sqlite_vfs") == "(absent)");
        CHECK(detail_of(info, "commit_failure") == "(absent)");
    }
    auto broker = inproc::broker(name, options);
    const BrokerInfo reopened = inproc::manage(broker)->info();
    CHECK(reopened.opens == 2);
    CHECK(reopened.commits == 0);
    CHECK_FALSE(reopened.commit_latency_mean);
    REQUIRE(broker->publish(persistent_to("jobs", "one more")).confirmed);
    CHECK(inproc::manage(broker)->info().commits == 1);

    const BrokerInfo memory = inproc::manage(inproc::broker(unique_name("info-memory")))->info();
    CHECK(memory.data_file.empty());
    CHECK(memory.opens == 0);
    CHECK(memory.commits == 0);
    CHECK_FALSE(memory.free_disk_bytes);
}

TEST_CASE("info names the commit failure while a full data file refuses publishes") {
    testing_support::TempDir directory("management");
    auto broker = inproc::broker(
        unique_name("info-full"),
        inproc::BrokerOptions{.data = (directory.path() / "broker.db").string(), .max_data_bytes = 256 * 1024});
    declare_classic(*broker, "jobs");
    const std::string body(4000, 'p');
    bool refused = false;
    for (int i = 0; i < 200 && !refused; ++i) refused = !broker->publish(persistent_to("jobs", body)).confirmed;
    REQUIRE(refused);
    CHECK_THAT(detail_of(inproc::manage(broker)->info(), "commit_failure"), Catch::Contains("disk full"));
}

TEST_CASE("a backup of a live durable broker opens with every message confirmed before it began") {
    testing_support::TempDir directory("management");
    const std::string file = (directory.path() / "broker.db").string();
    const std::string copy = (directory.path() / "copy.db").string();
    auto broker = inproc::broker(unique_name("backup"), inproc::BrokerOptions{.data = file});
    declare_classic(*broker, "jobs");
    // A few MiB, so that the copy takes several steps and publishes land between them.
    const std::string padding(1000, 'x');
    std::vector<OutboundMessage> batch;
    for (int i = 0; i < 3000; ++i) batch.push_back(persistent_to("jobs", std::to_string(i) + " " + padding));
    const auto transport = std::make_shared<inproc::InprocTransport>(broker);
    for (const PublishResult& result : transport->publish_batch(std::move(batch))) REQUIRE(result.confirmed);

    std::atomic<int> confirmed{3000};
    std::atomic<bool> stop{false};
    std::jthread publisher([&] {
        for (int i = 3000; !stop.load(); ++i) {
            if (!broker->publish(persistent_to("jobs", std::to_string(i) + " " + padding)).confirmed) return;
            confirmed.store(i + 1);
        }
    });
    const struct Stop {
        std::atomic<bool>& stop;
        ~Stop() { stop.store(true); }
    } stop_publishing{stop};  // declared after the thread, so it is told before it is joined
    REQUIRE(testing_support::eventually([&] { return confirmed.load() >= 3050; }));
    const int before = confirmed.load();
    const BackupResult result = inproc::manage(broker)->backup(copy);
    const int after = confirmed.load();
    stop.store(true);
    publisher.join();

    CHECK(result.path == std::filesystem::absolute(copy).string());
    CHECK(result.bytes == std::filesystem::file_size(copy));
    CHECK(result.messages >= static_cast<std::uint64_t>(before));
    CHECK(result.messages <= static_cast<std::uint64_t>(after) + 1);  // one may be committed, not yet confirmed
    auto restored = inproc::broker(unique_name("restored"), inproc::BrokerOptions{.data = copy});
    const std::vector<InboundMessage> messages = pull_all(*restored, "jobs");
    REQUIRE(messages.size() == result.messages);
    for (std::size_t i = 0; i < messages.size(); ++i)
        REQUIRE(text(messages[i].body()) == std::to_string(i) + " " + padding);
}

TEST_CASE("a backup is refused to an existing file, a missing directory, and for a broker in memory") {
    testing_support::TempDir directory("management");
    const std::string file = (directory.path() / "broker.db").string();
    auto broker = inproc::broker(unique_name("backup-refused"), inproc::BrokerOptions{.data = file});
    declare_classic(*broker, "jobs");
    auto management = inproc::manage(broker);

    const std::string existing = (directory.path() / "existing.db").string();
    std::ofstream(existing) << "keep me";
    CHECK(reason_of([&] { management->backup(existing); }) == ManagementError::Reason::failed);
    CHECK_THAT(what_of<ManagementError>([&] { management->backup(existing); }),
               Catch::Contains(existing) && Catch::Contains("exists"));
    CHECK(testing_support::contents(existing) == "keep me");
    CHECK(reason_of([&] { management->backup(file); }) == ManagementError::Reason::failed);

    const std::string nowhere = (directory.path() / "missing" / "copy.db").string();
    CHECK_THAT(what_of<ManagementError>([&] { management->backup(nowhere); }), Catch::Contains(nowhere));
    CHECK_FALSE(std::filesystem::exists(nowhere));

    auto memory = inproc::manage(inproc::broker(unique_name("backup-memory")));
    const std::string copy = (directory.path() / "copy.db").string();
    CHECK(reason_of([&] { memory->backup(copy); }) == ManagementError::Reason::unsupported);
    CHECK_FALSE(std::filesystem::exists(copy));

    // The broker goes on as before.
    CHECK(broker->publish(persistent_to("jobs", "after")).confirmed);
}

TEST_CASE("open_management(\"inproc://NAME\") manages the broker of that name, as connect() finds it") {
    const std::string name = unique_name("by-url");
    auto broker = inproc::broker(name);
    declare_classic(*broker, "jobs");
    CHECK(names_of(open_management("inproc://" + name)->queues()) == std::vector<std::string>{"jobs"});
    CHECK_THROWS_AS(open_management("inproc://" + name + "?nope=1"), InvalidArgument);

    testing_support::TempDir directory("management");
    const std::string file = (directory.path() / "broker.db").string();
    const std::string durable = unique_name("by-url-durable");
    CHECK(open_management("inproc://" + durable + "?data=" + file)->info().data_file == file);
}
