// Suite `amqp-interop`: acemq-cpp against an AMQP client nobody in this project wrote.
// Debian's python3-pika, driven by interop_peer.py, publishes messages exactly as the Java
// member writes them (the family's envelope fixture) for a C++ consumer to read, and reads
// what the C++ publisher and engine write, reporting every header with the AMQP type
// letter it travelled as. Both ends go through RabbitMQ, nothing is simulated.
//
// Needs the test broker: ACEMQ_TEST_AMQP_URL (scripts/test sets it; by hand,
// `source scripts/servers.sh; start_rabbitmq`). Without it every test fails, never skips.
// ACEMQ_INTEROP_PEER names the peer script (set by tests/amqp/meson.build).
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include "../support/fixtures.hpp"

#include <boost/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using namespace std::chrono_literals;
namespace json = boost::json;
using acemq::FieldValue;

// ---- where things are --------------------------------------------------------------------

std::string required_variable(const char* name, const std::string& why) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') throw std::runtime_error(std::string(name) + " is not set: " + why);
    return value;
}

std::string broker_url() {
    return required_variable("ACEMQ_TEST_AMQP_URL",
                             "the amqp-interop suite needs the RabbitMQ that scripts/test starts; by hand: "
                             "`source scripts/servers.sh; trap stop_servers EXIT; start_rabbitmq`, then run "
                             "`meson test --suite amqp-interop` in the same shell");
}

std::string peer_script() {
    return required_variable("ACEMQ_INTEROP_PEER",
                             "it names tests/amqp/interop_peer.py; run this through `meson test --suite amqp-interop`");
}

const std::string fixture_file = std::string(ACEMQ_FIXTURES_DIR) + "/envelope-fixtures.json";

// ---- the peer ----------------------------------------------------------------------------

// Runs interop_peer.py under /usr/bin/python3 (the interpreter with pika), bounded by
// timeout(1) so a hung peer cannot hang the suite, and returns its standard output parsed
// as JSON. Its standard error goes to the test log. Spawned with posix_spawn, not fork: the
// bus's I/O threads are running.
json::value run_peer(const std::vector<std::string>& arguments) {
    std::vector<std::string> command{"/usr/bin/timeout", "-k", "5", "60", "/usr/bin/python3", peer_script()};
    command.insert(command.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& word : command) argv.push_back(word.data());
    argv.push_back(nullptr);

    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (spawned != 0) {
        close(out[0]);
        throw std::runtime_error("cannot start " + command[0] + ": " + std::strerror(spawned));
    }
    std::string output;
    char buffer[65536];
    for (;;) {
        const ssize_t got = read(out[0], buffer, sizeof buffer);
        if (got > 0)
            output.append(buffer, static_cast<std::size_t>(got));
        else if (got == 0 || errno != EINTR)
            break;
    }
    close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    std::string printed;
    for (std::size_t i = 0; i < arguments.size(); ++i) printed += (i ? " " : "") + arguments[i];
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        throw std::runtime_error("interop_peer.py " + printed + " failed with status " + std::to_string(code) +
                                 (code == 124 ? " (timed out after 60 s)" : "") +
                                 " (its reason is on stderr above); stdout: " + output);
    }
    try {
        return json::parse(output);
    } catch (const std::exception& error) {
        throw std::runtime_error("interop_peer.py " + printed + " printed something that is not JSON (" + error.what() +
                                 "): " + output);
    }
}

// ---- per test: a bus and names nobody else uses --------------------------------------------

class Interop {
public:
    explicit Interop(acemq::BusOptions options = {})
        : prefix_("interop-" + acemq::new_uuid()), bus_(acemq::connect(broker_url(), std::move(options))),
          harness_(bus_) {}
    ~Interop() {
        // Queues do not outlive the test; the exchanges are auto-delete and go with them.
        for (const std::string& queue : queues_) {
            try {
                bus_.transport().delete_queue(queue);
            } catch (...) {}
        }
    }
    Interop(const Interop&) = delete;
    Interop& operator=(const Interop&) = delete;

    acemq::Bus& bus() { return bus_; }
    acemq::testing::Harness& harness() { return harness_; }
    std::string name(std::string_view base) const { return prefix_ + "." + std::string(base); }

    // Declares a queue (with its .dlq and .parked when dead_letter) and remembers to delete it.
    std::string queue(std::string_view base, bool dead_letter = false) {
        std::string queue = name(base);
        bus_.declare(acemq::Topology{}.queue(queue, {.dead_letter = dead_letter}));
        delete_later(queue);
        if (dead_letter) {
            delete_later(queue + ".dlq");
            delete_later(queue + ".parked");
        }
        return queue;
    }
    void delete_later(std::string queue) { queues_.push_back(std::move(queue)); }

    // An auto-delete direct exchange bound to `queue` with every routing key the fixture's
    // cases use (and the peer's extra case), so each message keeps the key Java sent it with.
    std::string fixture_exchange(const std::string& queue) {
        const std::string exchange = name("fx");
        acemq::Topology topology;
        topology.exchange(exchange, acemq::ExchangeKind::direct, {.auto_delete = true}).existing_queue(queue);
        for (const std::string& key : routing_keys()) topology.bind(queue, exchange, key);
        bus_.declare(topology);
        return exchange;
    }

    static std::vector<std::string> routing_keys() {
        std::vector<std::string> keys{"fx.set-aside"};
        const json::value fixture = fixtures::load("envelope-fixtures.json");
        for (const auto& c : fixture.at("cases").as_array()) keys.push_back(fixtures::text(c.at("routingKey")));
        return keys;
    }

private:
    std::string prefix_;
    acemq::Bus bus_;
    acemq::testing::Harness harness_;
    std::vector<std::string> queues_;
};

// ---- what the family writes ---------------------------------------------------------------

// A case as the peer publishes it: the fixture's, plus the one the peer adds for the
// headers the fixture has no case for (interop_peer.py SET_ASIDE_CASE, kept equal to it).
struct Case {
    std::string name;
    std::string routing_key;
    std::string message_id;
    std::string body;  // the bytes on the wire: a JSON string literal, as Java encodes a String
    json::object headers;
};

std::vector<Case> published_cases() {
    std::vector<Case> cases;
    const json::value fixture = fixtures::load("envelope-fixtures.json");
    for (const auto& c : fixture.at("cases").as_array())
        cases.push_back(Case{fixtures::text(c.at("case")), fixtures::text(c.at("routingKey")),
                             fixtures::text(c.at("messageId")), fixtures::text(c.at("body")),
                             c.at("headers").as_object()});
    json::object set_aside{
        {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        {"x-acemq-attempt", 3},
        {"x-acemq-claim", "claims/o-4"},
        {"x-acemq-correlation", "corr-4"},
        {"x-acemq-error", "exhausted 3 attempts: RuntimeError: stock service down"},
        {"x-acemq-first-seen", 1767323045678},
        {"x-acemq-id", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"},
        {"x-acemq-origin", "orders@host-7"},
        {"x-acemq-route", "validate,price,ship"},
        {"x-acemq-route-id", "route-9"},
        {"x-acemq-route-position", 1},
        {"x-acemq-type", "order.placed"},
        {"x-acemq-version", 2},
    };
    cases.push_back(Case{"set-aside", "fx.set-aside", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", R"("{\"id\":\"o-4\"}")",
                         std::move(set_aside)});
    return cases;
}

// The AMQP type letter the family writes a header with (docs/wire-contract.md §2.2):
// strings as long strings, epoch-millisecond stamps as signed 64, every other integer as
// signed 32.
char family_type_letter(std::string_view name, const json::value& value) {
    if (value.is_string()) return 'S';
    if (name == acemq::header::first_seen || name == acemq::header::replayed_at) return 'l';
    return 'I';
}

// A header value as a C++ FieldTable carries it after RabbitMQ: 'I' is int32_t, 'l' int64_t.
FieldValue family_field(std::string_view name, const json::value& value) {
    switch (family_type_letter(name, value)) {
    case 'S': return FieldValue(fixtures::text(value));
    case 'l': return FieldValue(value.to_number<std::int64_t>());
    default: return FieldValue(value.to_number<std::int32_t>());
    }
}

std::string text_or_empty(const json::object& headers, std::string_view name) {
    const auto* found = headers.if_contains(name);
    return found ? fixtures::text(*found) : std::string();
}

// The envelope a reader must make of a case: built field by field from the fixture's
// headers by the rules of docs/wire-contract.md §2.2, not by read_envelope, which is what
// is tested.
acemq::Envelope expected_envelope(const Case& c) {
    const json::object& h = c.headers;
    acemq::Envelope e;
    e.id = fixtures::text(h.at(acemq::header::id));
    e.type = fixtures::text(h.at(acemq::header::type));
    e.version = h.at(acemq::header::version).to_number<std::int32_t>();
    e.correlation = fixtures::text(h.at(acemq::header::correlation));
    e.causation = text_or_empty(h, acemq::header::causation);
    e.attempt = h.at(acemq::header::attempt).to_number<std::int32_t>();
    e.first_seen =
        acemq::EpochMillis(std::chrono::milliseconds(h.at(acemq::header::first_seen).to_number<std::int64_t>()));
    e.origin = text_or_empty(h, acemq::header::origin);
    e.error = text_or_empty(h, acemq::header::error);
    e.claim = text_or_empty(h, acemq::header::claim);
    const std::string route = text_or_empty(h, acemq::header::route);
    for (std::size_t start = 0; !route.empty() && start <= route.size();) {
        const std::size_t comma = std::min(route.find(',', start), route.size());
        e.route.push_back(route.substr(start, comma - start));
        start = comma + 1;
    }
    if (const auto* position = h.if_contains(acemq::header::route_position))
        e.route_position = position->to_number<std::int32_t>();
    e.route_id = text_or_empty(h, acemq::header::route_id);
    for (const auto& [name, value] : h)
        if (!std::string_view(name).starts_with(acemq::header::reserved_prefix))
            e.headers.emplace(std::string(name), family_field(name, value));
    return e;
}

const Case& case_with_id(const std::vector<Case>& cases, std::string_view id) {
    for (const Case& c : cases)
        if (c.message_id == id) return c;
    throw std::runtime_error("no case has the message id " + std::string(id));
}

std::string inner_json(const Case& c) { return std::string(json::parse(c.body).as_string()); }

// The peer reports bodies in base64, so they compare byte for byte.
std::string base64(std::string_view in) {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < in.size(); i += 3) {
        std::uint32_t n = std::uint32_t{static_cast<unsigned char>(in[i])} << 16;
        if (i + 1 < in.size()) n |= std::uint32_t{static_cast<unsigned char>(in[i + 1])} << 8;
        if (i + 2 < in.size()) n |= std::uint32_t{static_cast<unsigned char>(in[i + 2])};
        out += alphabet[(n >> 18) & 63];
        out += alphabet[(n >> 12) & 63];
        out += i + 1 < in.size() ? alphabet[(n >> 6) & 63] : '=';
        out += i + 2 < in.size() ? alphabet[n & 63] : '=';
    }
    return out;
}

// ---- what the peer read ------------------------------------------------------------------

// A string as a JSON value, to compare with what the peer printed.
json::value js(std::string_view text) { return json::value(json::string_view(text.data(), text.size())); }

std::string letter(const json::object& headers, std::string_view name) {
    return fixtures::text(headers.at(name).at("type"));
}

// RabbitMQ's own addition: a quorum queue (the default queue type here) stamps
// x-delivery-count on what basic.get hands out (0 on a first delivery, seen with 3.10),
// though not on basic.consume deliveries. No sender wrote it, so header sets compared
// against what a sender wrote leave it out.
constexpr std::string_view broker_added_header = "x-delivery-count";

std::set<std::string> names_of(const json::object& object) {
    std::set<std::string> names;
    for (const auto& [name, value] : object) names.insert(std::string(name));
    return names;
}

// The names a sender wrote: as names_of, without the broker's addition.
std::set<std::string> sent_names_of(const json::object& headers) {
    std::set<std::string> names = names_of(headers);
    names.erase(std::string(broker_added_header));
    return names;
}

// Every header as the peer read it from the raw table agrees with what pika's decoder made
// of it: the two readings of one table.
void check_pika_agrees(const json::object& message) {
    const json::object& typed = message.at("headers").as_object();
    const json::object& pika = message.at("pikaHeaders").as_object();
    CHECK(names_of(typed) == names_of(pika));
    for (const auto& [name, entry] : typed) {
        INFO("header " << name);
        if (pika.contains(name)) CHECK(entry.at("value") == pika.at(name));
    }
}

// The properties the C++ publisher leaves unset, as Go does (docs/wire-contract.md §2.1): the
// correlation travels only as a header.
void check_unset_properties(const json::object& properties) {
    for (const char* unset : {"correlationId", "type", "timestamp", "appId", "userId", "expiration", "priority",
                              "contentEncoding", "replyTo"}) {
        INFO("AMQP property " << unset);
        CHECK(properties.at(unset).is_null());
    }
}

struct Order {
    std::string id;
    std::int64_t cents = 0;
    std::vector<std::string> tags;
};

struct InnerOrder {
    std::string id;
};

// Collects what a handler was given, for the test thread to wait on.
template <class T>
class Inbox {
public:
    acemq::Ack take(const acemq::Message<T>& message) {
        std::lock_guard lock(mutex_);
        messages_.push_back(message);
        arrived_.notify_all();
        return acemq::accept();
    }
    std::vector<acemq::Message<T>> wait_for(std::size_t count, std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        arrived_.wait_for(lock, timeout, [&] { return messages_.size() >= count; });
        return messages_;
    }

private:
    std::mutex mutex_;
    std::condition_variable arrived_;
    std::vector<acemq::Message<T>> messages_;
};

}  // namespace

// Failure messages show a header value with its C++ type, which is what these tests are about.
template <>
struct Catch::StringMaker<acemq::FieldValue> {
    static std::string convert(const acemq::FieldValue& value) {
        static constexpr const char* kinds[] = {"void",   "bool",   "int32", "int64", "uint64",
                                                "double", "string", "bytes", "array", "table"};
        return std::string(kinds[value.get().index()]) + " " + value.to_string();
    }
};

// ---- pika publishes, C++ consumes ----------------------------------------------------------

TEST_CASE("pika publishes the Java member's envelopes; a typed C++ consumer reads every field",
          "[interop][from-pika]") {
    Interop t;
    const std::string queue = t.queue("from-pika", true);
    const std::string exchange = t.fixture_exchange(queue);
    const std::vector<Case> cases = published_cases();

    const json::value published = run_peer({"publish", "--fixtures", fixture_file, "--exchange", exchange, "--extra"});

    // What pika put on the wire, read back from pika's own encoding: the family's types, so
    // what reaches C++ below is what the Java member would have sent.
    const json::object& sent = published.at("published").as_object();
    REQUIRE(sent.size() == cases.size());
    for (const Case& c : cases) {
        INFO("case " << c.name);
        const json::object& types = sent.at(c.name).at("headerTypes").as_object();
        CHECK(names_of(types) == names_of(c.headers));
        for (const auto& [name, value] : c.headers) {
            INFO("header " << name);
            CHECK(types.at(name) == json::value(std::string(1, family_type_letter(name, value))));
        }
    }

    Inbox<std::string> inbox;
    acemq::Consumer consumer = t.bus().consume<std::string>(
        queue, [&](const acemq::Message<std::string>& message) { return inbox.take(message); },
        {.codec = std::make_shared<acemq::JsonCodec>()});
    const auto received = inbox.wait_for(cases.size(), 20s);
    REQUIRE(received.size() == cases.size());
    CHECK(t.harness().wait_settled(queue, acemq::Outcome::acked, cases.size(), 5s));
    consumer.close();

    const acemq::JsonCodec json_codec;
    for (const acemq::Message<std::string>& message : received) {
        const Case& c = case_with_id(cases, message.envelope.id);
        INFO("case " << c.name);
        const acemq::Envelope expected = expected_envelope(c);
        const acemq::Envelope& got = message.envelope;
        CHECK(got.id == c.message_id);
        CHECK(got.id == expected.id);
        CHECK(got.type == expected.type);
        CHECK(got.version == expected.version);
        CHECK(got.correlation == expected.correlation);
        CHECK(got.causation == expected.causation);
        CHECK(got.attempt == expected.attempt);
        REQUIRE(got.first_seen.has_value());
        CHECK(got.first_seen->time_since_epoch().count() == expected.first_seen->time_since_epoch().count());
        CHECK(got.origin == expected.origin);
        CHECK(got.error == expected.error);
        CHECK(got.claim == expected.claim);
        CHECK(got.route == expected.route);
        CHECK(got.route_position == expected.route_position);
        CHECK(got.route_id == expected.route_id);
        CHECK(acemq::to_string(got.headers) == acemq::to_string(expected.headers));
        CHECK(got.headers == expected.headers);  // integer widths included: 'I' int32_t, 'l' int64_t
        CHECK(got == expected);                  // and nothing this list forgot

        CHECK(message.routing_key == c.routing_key);
        CHECK(message.content_type == "application/json");
        CHECK(message.queue == queue);
        CHECK(message.reply_to.empty());
        CHECK_FALSE(message.redelivered);
        // Java encoded a String payload: the body is a JSON string whose text is JSON again.
        CHECK(message.payload == inner_json(c));
        const std::string& inner = message.payload;
        const auto order = acemq::decode<InnerOrder>(json_codec, std::as_bytes(std::span(inner.data(), inner.size())),
                                                     acemq::content_types::json);
        CHECK(order.id == fixtures::text(json::parse(inner).at("id")));
    }
    // Every case arrived once.
    std::set<std::string> ids;
    for (const auto& message : received) ids.insert(message.envelope.id);
    CHECK(ids.size() == cases.size());
}

// A document as another member's service writes it: camelCase keys at every depth.
struct PlacedLine {
    std::string sku_code;
    std::int32_t unit_count = 0;
};
struct PlacedOrder {
    std::string order_id;
    std::int64_t total_cents = 0;
    std::vector<PlacedLine> line_items;
};

TEST_CASE("a camelCase JSON document from pika reads into a snake_case C++ struct", "[interop][from-pika]") {
    Interop t;
    const std::string queue = t.queue("camel-from-pika", true);
    Inbox<PlacedOrder> inbox;
    acemq::Consumer consumer = t.bus().consume<PlacedOrder>(
        queue, [&](const acemq::Message<PlacedOrder>& message) { return inbox.take(message); },
        {.codec = std::make_shared<acemq::JsonCodec>()});
    const std::string id = acemq::new_uuid();
    run_peer({"send", "--queue", queue, "--content-type", "application/json", "--message-id", id, "--body",
              R"({"orderId":"A-1","totalCents":4250,"lineItems":[{"skuCode":"x","unitCount":2},)"
              R"({"skuCode":"y","unitCount":1}],"placedBy":"java"})"});
    const auto received = inbox.wait_for(1, 20s);
    const std::vector<acemq::testing::SettledRecord> settled = t.harness().settled(queue);
    consumer.close();
    INFO("settled: " << (settled.empty() ? std::string("nothing") : settled.front().settlement.reason));
    REQUIRE(received.size() == 1);
    const PlacedOrder& order = received[0].payload;
    CHECK(received[0].envelope.id == id);
    CHECK(order.order_id == "A-1");
    CHECK(order.total_cents == 4250);
    REQUIRE(order.line_items.size() == 2);
    CHECK(order.line_items[0].sku_code == "x");
    CHECK(order.line_items[0].unit_count == 2);
    CHECK(order.line_items[1].sku_code == "y");
    CHECK(order.line_items[1].unit_count == 1);
}

TEST_CASE("pika's header types reach C++ with their widths: 'I' as 32-bit, 'l' as 64-bit, 'S' as text",
          "[interop][from-pika]") {
    Interop t;
    const std::string queue = t.queue("from-pika-raw");
    const std::string exchange = t.fixture_exchange(queue);
    const std::vector<Case> cases = published_cases();
    run_peer({"publish", "--fixtures", fixture_file, "--exchange", exchange, "--extra"});

    // Read below the engine, off the transport, where the headers are still a FieldTable as
    // the broker delivered them, reserved ones included.
    std::size_t seen = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (seen < cases.size()) {
        std::optional<acemq::Delivery> delivery = t.bus().transport().pull(queue);
        if (!delivery) {
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            std::this_thread::sleep_for(20ms);
            continue;
        }
        const acemq::InboundMessage& message = delivery->message();
        const Case& c = case_with_id(cases, message.message_id());
        INFO("case " << c.name);
        CHECK(message.exchange() == exchange);
        CHECK(message.routing_key() == c.routing_key);
        CHECK(message.content_type() == "application/json");
        CHECK(std::string(reinterpret_cast<const char*>(message.body().data()), message.body().size()) == c.body);
        CHECK(message.headers().size() - message.headers().contains(broker_added_header) == c.headers.size());
        for (const auto& [name, value] : c.headers) {
            INFO("header " << name);
            REQUIRE(message.headers().contains(name));
            const FieldValue& field = message.headers().at(name);
            switch (family_type_letter(name, value)) {
            case 'S': CHECK(field.holds<std::string>()); break;
            case 'l': CHECK(field.holds<std::int64_t>()); break;
            default: CHECK(field.holds<std::int32_t>()); break;
            }
            CHECK(field == family_field(name, value));
        }
        delivery->ack();
        ++seen;
    }
    CHECK(t.bus().transport().queue_depth(queue) == 0);
}

// ---- C++ publishes, pika consumes ----------------------------------------------------------

namespace {

// The reserved headers of one message as pika read them: names, type letters, values.
void check_reserved_headers(const json::object& headers, const std::string& id, const std::string& type,
                            std::int32_t version, const std::string& correlation, std::int32_t attempt,
                            std::int64_t first_seen_from, std::int64_t first_seen_to, const std::string& origin) {
    CHECK(letter(headers, acemq::header::id) == "S");
    CHECK(headers.at(acemq::header::id).at("value") == js(id));
    CHECK(letter(headers, acemq::header::type) == "S");
    CHECK(headers.at(acemq::header::type).at("value") == js(type));
    CHECK(letter(headers, acemq::header::version) == "I");
    CHECK(headers.at(acemq::header::version).at("value") == version);
    CHECK(letter(headers, acemq::header::correlation) == "S");
    CHECK(headers.at(acemq::header::correlation).at("value") == js(correlation));
    CHECK(letter(headers, acemq::header::attempt) == "I");
    CHECK(headers.at(acemq::header::attempt).at("value") == attempt);
    CHECK(letter(headers, acemq::header::first_seen) == "l");
    const std::int64_t first_seen = headers.at(acemq::header::first_seen).at("value").to_number<std::int64_t>();
    CHECK(first_seen >= first_seen_from);
    CHECK(first_seen <= first_seen_to);
    CHECK(letter(headers, acemq::header::origin) == "S");
    CHECK(headers.at(acemq::header::origin).at("value") == js(origin));
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

TEST_CASE("what the C++ publisher writes with the JSON codec, pika reads with the family's types",
          "[interop][to-pika]") {
    Interop t({.origin = "interop@cpp-test"});
    const std::string queue = t.queue("to-pika-json");
    const acemq::Publisher publisher =
        t.bus().publisher_to_queue(queue, {.codec = std::make_shared<acemq::JsonCodec>()});

    const std::string traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const acemq::SendOptions rich{
        .message_id = acemq::new_uuid(),
        .type = "order.placed",
        .version = 3,
        .correlation = "corr-1",
        .causation = "cause-1",
        .origin = "orders@host-7",
        .claim = "claims/o-1",
        .headers = acemq::Headers{{"traceparent", FieldValue(traceparent)},
                                  {"x-tenant", FieldValue("acme")},
                                  {"acemq-replay-count", FieldValue(std::int32_t{2})}},
        .attempt = 2,
        .first_seen = acemq::EpochMillis(1767323045678ms),
    };
    const acemq::SendResult sent_rich = publisher.send(Order{"o-1", 4250, {"gift", "express"}}, rich);
    const std::int64_t before = now_ms();
    const acemq::SendResult sent_plain = publisher.send(Order{"o-2", 99, {}});
    const std::int64_t after = now_ms();
    REQUIRE(sent_rich.confirmed);
    REQUIRE(sent_plain.confirmed);
    CHECK(sent_rich.message_id == rich.message_id);

    const json::array received = run_peer({"get", "--queue", queue, "--count", "2"}).as_array();
    REQUIRE(received.size() == 2);

    {
        INFO("the message sent with every option");
        const json::object& message = received[0].as_object();
        const json::object& properties = message.at("properties").as_object();
        const json::object& headers = message.at("headers").as_object();
        CHECK(message.at("exchange") == "");
        CHECK(message.at("routingKey") == js(queue));
        CHECK(message.at("redelivered") == false);
        CHECK(properties.at("contentType") == "application/json");
        CHECK(properties.at("messageId") == js(sent_rich.message_id));
        CHECK(properties.at("deliveryMode") == 2);
        check_unset_properties(properties);
        CHECK(sent_names_of(headers) == std::set<std::string>{"acemq-replay-count", "traceparent", "x-tenant",
                                                              "x-acemq-attempt", "x-acemq-causation", "x-acemq-claim",
                                                              "x-acemq-correlation", "x-acemq-first-seen", "x-acemq-id",
                                                              "x-acemq-origin", "x-acemq-type", "x-acemq-version"});
        check_reserved_headers(headers, sent_rich.message_id, "order.placed", 3, "corr-1", 2, 1767323045678,
                               1767323045678, "orders@host-7");
        CHECK(letter(headers, acemq::header::causation) == "S");
        CHECK(headers.at(acemq::header::causation).at("value") == "cause-1");
        CHECK(letter(headers, acemq::header::claim) == "S");
        CHECK(headers.at(acemq::header::claim).at("value") == "claims/o-1");
        CHECK(letter(headers, "traceparent") == "S");
        CHECK(headers.at("traceparent").at("value") == js(traceparent));
        CHECK(letter(headers, "x-tenant") == "S");
        CHECK(headers.at("x-tenant").at("value") == "acme");
        CHECK(letter(headers, "acemq-replay-count") == "I");
        CHECK(headers.at("acemq-replay-count").at("value") == 2);
        check_pika_agrees(message);
        CHECK(message.at("bodyJson") == json::parse(R"({"id":"o-1","cents":4250,"tags":["gift","express"]})"));
    }
    {
        INFO("the message sent with the defaults");
        const json::object& message = received[1].as_object();
        const json::object& properties = message.at("properties").as_object();
        const json::object& headers = message.at("headers").as_object();
        CHECK(properties.at("contentType") == "application/json");
        CHECK(properties.at("messageId") == js(sent_plain.message_id));
        CHECK(acemq::is_canonical_uuid(sent_plain.message_id));
        CHECK(properties.at("deliveryMode") == 2);
        check_unset_properties(properties);
        // Absent means absent: no causation, claim, error or route, not even empty ones.
        CHECK(sent_names_of(headers) == std::set<std::string>{"x-acemq-attempt", "x-acemq-correlation",
                                                              "x-acemq-first-seen", "x-acemq-id", "x-acemq-origin",
                                                              "x-acemq-type", "x-acemq-version"});
        check_reserved_headers(headers, sent_plain.message_id, queue, 1, sent_plain.message_id, 1, before, after,
                               "interop@cpp-test");
        check_pika_agrees(message);
        CHECK(message.at("bodyJson") == json::parse(R"({"id":"o-2","cents":99,"tags":[]})"));
    }
}

TEST_CASE("the C++ default codec writes JSON with camelCase keys, as the family's Python reads it",
          "[interop][to-pika]") {
    Interop t({.origin = "interop@cpp-test"});
    const std::string queue = t.queue("to-pika-default");
    const acemq::SendResult sent = t.bus().publisher_to_queue(queue).send(
        PlacedOrder{.order_id = "o-5", .total_cents = 4250, .line_items = {{.sku_code = "x", .unit_count = 2}}});
    REQUIRE(sent.confirmed);

    const json::array received = run_peer({"get", "--queue", queue, "--count", "1"}).as_array();
    REQUIRE(received.size() == 1);
    const json::object& message = received[0].as_object();
    CHECK(message.at("properties").at("contentType") == "application/json");
    CHECK(message.at("properties").at("messageId") == js(sent.message_id));
    check_pika_agrees(message);
    // json.loads of the body, as the Python member reads it: every key camelCase, at every depth.
    CHECK(message.at("bodyJson") ==
          json::parse(R"({"orderId":"o-5","totalCents":4250,"lineItems":[{"skuCode":"x","unitCount":2}]})"));
}

TEST_CASE("msgpack, one option away, and a non-persistent publisher, as pika reads them", "[interop][to-pika]") {
    Interop t({.origin = "interop@cpp-test"});
    const std::string queue = t.queue("to-pika-msgpack");
    const auto msgpack = std::make_shared<acemq::MsgpackCodec>();
    const std::int64_t before = now_ms();
    const acemq::SendResult persistent =
        t.bus().publisher_to_queue(queue, {.codec = msgpack}).send(Order{"o-3", 7, {"x"}});
    const acemq::SendResult transient = t.bus()
                                            .publisher_to_queue(queue, {.persistent = false, .codec = msgpack})
                                            .send(Order{"o-4", -12, {}}, {.causation = "o-3"});
    const std::int64_t after = now_ms();
    REQUIRE(persistent.confirmed);
    REQUIRE(transient.confirmed);

    const json::array received = run_peer({"get", "--queue", queue, "--count", "2"}).as_array();
    REQUIRE(received.size() == 2);
    const std::vector<std::pair<const acemq::SendResult*, int>> expected{{&persistent, 2}, {&transient, 1}};
    for (std::size_t i = 0; i < 2; ++i) {
        INFO("message " << i);
        const json::object& message = received[i].as_object();
        const json::object& properties = message.at("properties").as_object();
        const json::object& headers = message.at("headers").as_object();
        CHECK(properties.at("contentType") == "application/msgpack");
        CHECK(properties.at("messageId") == js(expected[i].first->message_id));
        CHECK(properties.at("deliveryMode") == expected[i].second);
        check_unset_properties(properties);
        check_reserved_headers(headers, expected[i].first->message_id, queue, 1, expected[i].first->message_id, 1,
                               before, after, "interop@cpp-test");
        check_pika_agrees(message);
    }
    // A struct travels as an array of its fields in declaration order.
    CHECK(received[0].at("bodyMsgpack") == json::parse(R"(["o-3",7,["x"]])"));
    CHECK(names_of(received[0].at("headers").as_object()).count(std::string(acemq::header::causation)) == 0);
    CHECK(received[1].at("bodyMsgpack") == json::parse(R"(["o-4",-12,[]])"));
    CHECK(received[1].at("headers").at(acemq::header::causation) == json::parse(R"({"type":"S","value":"o-3"})"));
}

// ---- round trip: pika publishes, the C++ engine retries and dead-letters, pika reads ------

TEST_CASE("a Java-written message the C++ engine retries and dead-letters keeps its headers and types",
          "[interop][from-pika][to-pika]") {
    Interop t;
    const std::string queue = t.queue("round-trip", true);
    const std::string exchange = t.fixture_exchange(queue);
    const std::vector<Case> cases = published_cases();

    std::mutex mutex;
    std::map<std::string, std::vector<std::int32_t>> attempts;  // id -> the attempts the handler saw
    acemq::Consumer consumer = t.bus().consume<std::string>(
        queue,
        [&](const acemq::Message<std::string>& message) -> acemq::Ack {
            std::lock_guard lock(mutex);
            attempts[message.envelope.id].push_back(message.envelope.attempt);
            throw std::runtime_error("stock service down");
        },
        {.retry = acemq::fixed_retry(2, 1ms), .codec = std::make_shared<acemq::JsonCodec>()});
    const json::object published = run_peer({"publish", "--fixtures", fixture_file, "--exchange", exchange, "--extra"})
                                       .at("published")
                                       .as_object();
    REQUIRE(t.harness().wait_dead_lettered(queue, cases.size(), 30s));
    consumer.close();

    std::map<std::string, std::string> reasons;
    for (const acemq::testing::SettledRecord& record : t.harness().settled(queue))
        if (record.settlement.dead_lettered()) reasons[record.envelope.id] = record.settlement.reason;
    REQUIRE(reasons.size() == cases.size());

    const json::array received =
        run_peer({"get", "--queue", queue + ".dlq", "--count", std::to_string(cases.size())}).as_array();
    REQUIRE(received.size() == cases.size());
    for (const json::value& value : received) {
        const json::object& message = value.as_object();
        const json::object& properties = message.at("properties").as_object();
        const json::object& headers = message.at("headers").as_object();
        const Case& c = case_with_id(cases, fixtures::text(properties.at("messageId")));
        INFO("case " << c.name);
        const std::int32_t first_attempt = c.headers.at(acemq::header::attempt).to_number<std::int32_t>();
        {
            std::lock_guard lock(mutex);
            // A message already past attempt 2 is out of tries at once; the others were tried twice.
            const std::vector<std::int32_t> expected_attempts =
                first_attempt >= 2 ? std::vector<std::int32_t>{first_attempt}
                                   : std::vector<std::int32_t>{first_attempt, first_attempt + 1};
            CHECK(attempts[c.message_id] == expected_attempts);
        }
        const std::int32_t last_attempt = std::max(first_attempt, 2);

        CHECK(message.at("routingKey") == js(queue + ".dlq"));
        CHECK(properties.at("contentType") == "application/json");
        CHECK(properties.at("deliveryMode") == 2);
        CHECK(message.at("bodyBase64") == json::value(base64(c.body)));
        // Every header Java wrote is there with its value and its type letter; the engine
        // changed only the attempt and added the reason.
        std::set<std::string> expected_names = names_of(c.headers);
        expected_names.insert(std::string(acemq::header::error));
        CHECK(sent_names_of(headers) == expected_names);
        const json::object& pika_types = published.at(c.name).at("headerTypes").as_object();
        for (const auto& [name, value] : c.headers) {
            INFO("header " << name);
            CHECK(headers.at(name).at("type") == pika_types.at(name));
            if (name == acemq::header::attempt)
                CHECK(headers.at(name).at("value") == last_attempt);
            else if (name != acemq::header::error)
                CHECK(headers.at(name).at("value") == value);
        }
        CHECK(letter(headers, acemq::header::error) == "S");
        CHECK(headers.at(acemq::header::error).at("value") == js(reasons.at(c.message_id)));
        CHECK_THAT(reasons.at(c.message_id),
                   Catch::StartsWith("exhausted " + std::to_string(last_attempt) + " attempts: ") &&
                       Catch::Contains("stock service down"));
        check_pika_agrees(message);
    }
}
