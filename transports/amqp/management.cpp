// amqp::manage: the operator's questions (<acemq/management.hpp>) put to RabbitMQ's management
// HTTP API, one vhost's worth. What RabbitMQ's answers mean for each member, where they differ
// from the embedded broker's, is said beside it.
//
// The counts (ready, unacked, consumers, bytes, a session's consumers and unacked) are
// RabbitMQ's statistics, sampled every 5 s by default (collect_statistics_interval and the
// management plugin's sample_retention_policies; a quorum queue reports on its own 5 s tick,
// quorum_tick_interval): a listing shows a queue as it was at the last sample, and a queue
// declared since shows zeros until the next one.

#include <acemq/amqp.hpp>

#include <algorithm>
#include <optional>
#include <tuple>

#include <acemq/error.hpp>

#include "amqp/management_api.hpp"
#include "codec/quoted_text.hpp"

namespace acemq::amqp {

namespace {

using Clock = std::chrono::system_clock;

// A member of a JSON object, or nullptr when it is absent or null (RabbitMQ leaves out or
// nulls the statistics of an object it has not sampled yet).
const Value* member(const Value& object, std::string_view key) {
    const Value* found = object.find(key);
    return found == nullptr || found->is_null() ? nullptr : found;
}

std::uint64_t count_of(const Value& object, std::string_view key) {
    const Value* found = member(object, key);
    return found == nullptr ? 0 : found->as_uint64();
}

std::string text_of(const Value& object, std::string_view key) {
    const Value* found = member(object, key);
    return found == nullptr ? std::string() : found->as_string();
}

bool flag_of(const Value& object, std::string_view key, bool otherwise) {
    const Value* found = member(object, key);
    return found == nullptr ? otherwise : found->as_bool();
}

const Value::Array& list_of(const Value& answer) {
    static const Value::Array none;
    return answer.is_null() ? none : answer.as_array();
}

FieldTable table_from_json(const Value& object);

// RabbitMQ's JSON of an AMQP table loses the wire's integer widths and its timestamp kind:
// integers come back as int64 (uint64 past its range), as the Topology builder writes its
// own arguments, and a timestamp as its seconds.
FieldValue field_from_json(const Value& value) {
    switch (value.kind()) {
    case Value::Kind::null: return FieldValue();
    case Value::Kind::boolean: return FieldValue(value.as_bool());
    case Value::Kind::int64: return FieldValue(value.as_int64());
    case Value::Kind::uint64: return FieldValue(value.as_uint64());
    case Value::Kind::float64: return FieldValue(value.as_double());
    case Value::Kind::string: return FieldValue(value.as_string());
    case Value::Kind::bytes: return FieldValue(value.as_bytes());
    case Value::Kind::array: {
        FieldArray items;
        for (const Value& item : value.as_array()) items.push_back(field_from_json(item));
        return FieldValue(std::move(items));
    }
    case Value::Kind::map:
    case Value::Kind::record: return FieldValue(table_from_json(value));
    }
    return FieldValue();
}

FieldTable table_from_json(const Value& object) {
    FieldTable table;
    if (object.is_null()) return table;
    for (const auto& [key, value] : object.as_map()) table.insert_or_assign(key.as_string(), field_from_json(value));
    return table;
}

FieldTable table_of(const Value& object, std::string_view key) {
    const Value* found = member(object, key);
    return found == nullptr ? FieldTable() : table_from_json(*found);
}

// A plugin's exchange type (x-delayed-message, x-consistent-hash) lists as direct, the one
// kind that claims nothing about routing by pattern or header.
ExchangeKind exchange_kind(std::string_view type) {
    for (const ExchangeKind kind : {ExchangeKind::topic, ExchangeKind::fanout, ExchangeKind::headers})
        if (to_string(kind) == type) return kind;
    return ExchangeKind::direct;
}

QueueType queue_type(std::string_view type) {
    for (const QueueType known : {QueueType::quorum, QueueType::stream})
        if (to_string(known) == type) return known;
    return QueueType::classic;
}

// What would make RabbitMQ drop or dead-letter a quorum queue's message after some number of
// deliveries: its x-delivery-limit argument, or a policy's delivery-limit.
std::optional<std::int64_t> delivery_limit(const Value& queue) {
    if (const Value* arguments = member(queue, "arguments"))
        if (const Value* limit = member(*arguments, "x-delivery-limit")) return limit->as_int64();
    if (const Value* policy = member(queue, "effective_policy_definition"))
        if (const Value* limit = member(*policy, "delivery-limit")) return limit->as_int64();
    return std::nullopt;
}

void check_name(std::string_view what, std::string_view name) {
    if (name.empty()) throw InvalidArgument("acemq: no " + std::string(what) + " named: give its name");
}

std::string quoted_queue(std::string_view queue, std::string_view vhost) {
    return "queue " + detail::in_quotes(queue) + " in vhost " + detail::in_quotes(vhost);
}

// Runs `read` on RabbitMQ's answers. One of another shape than this code reads (another
// version's, or not RabbitMQ's) is a ManagementError naming the call, not a DecodeError.
template <class Read>
auto reading(const ManagementApi& api, std::string_view call, Read&& read) {
    try {
        return read();
    } catch (const DecodeError& error) {
        throw ManagementError(ManagementError::Reason::failed,
                              "acemq: " + std::string(call) + ": RabbitMQ's management API at " + api.base_url() +
                                  " answered with what acemq cannot read (" +
                                  std::string(without_prefix(error.what())) + "): is it RabbitMQ 3.8 or later?");
    }
}

class RabbitManagement final : public Management {
public:
    RabbitManagement(const Address& address, const ManagementOptions& options) : api_(address, options) {
        // Asked once here, so that a wrong address, password or vhost fails at the open.
        api_.get("/api/vhosts/" + api_.vhost_segment(), "vhost " + detail::in_quotes(api_.vhost()));
    }

    BrokerInfo info() override {
        return reading(api_, "info", [&] {
            const Value overview = api_.get("/api/overview", "overview");
            BrokerInfo info;
            info.product = text_of(overview, "product_name");
            if (info.product.empty()) info.product = "RabbitMQ";
            info.version = text_of(overview, "product_version");
            if (info.version.empty()) info.version = text_of(overview, "rabbitmq_version");
            info.name = text_of(overview, "node");
            info.details.emplace_back("vhost", api_.vhost());
            for (const std::string_view key : {"cluster_name", "erlang_version", "management_version", "rates_mode"})
                info.details.emplace_back(key, text_of(overview, key));
            // The node's own figures need the monitoring tag; a user with only management sees
            // the overview, and the info says what it could not show.
            try {
                const Value node =
                    api_.get("/api/nodes/" + path_segment(info.name), "node " + detail::in_quotes(info.name));
                info.uptime = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::milliseconds(count_of(node, "uptime")));
                if (member(node, "disk_free") != nullptr) info.free_disk_bytes = count_of(node, "disk_free");
                for (const std::string_view key : {"disk_free_limit", "mem_used", "mem_limit", "fd_used", "fd_total",
                                                   "sockets_used", "sockets_total", "mem_alarm", "disk_free_alarm"})
                    if (const Value* value = member(node, key))
                        info.details.emplace_back(key, field_from_json(*value).to_string());
            } catch (const ManagementError& error) {
                if (error.reason() != ManagementError::Reason::access_refused) throw;
                info.details.emplace_back("node", "not shown to this user (the monitoring tag shows it)");
            }
            return info;
        });
    }

    std::vector<ExchangeSummary> exchanges() override {
        return reading(api_, "exchanges", [&] {
            const Value answer =
                api_.get("/api/exchanges/" + api_.vhost_segment() + "?columns=name,type,durable,auto_delete,arguments",
                         "vhost " + detail::in_quotes(api_.vhost()));
            std::vector<ExchangeSummary> out;
            for (const Value& exchange : list_of(answer)) {
                std::string name = text_of(exchange, "name");
                if (name.empty() || name.starts_with("amq.")) continue;
                out.push_back(ExchangeSummary{
                    std::move(name), exchange_kind(text_of(exchange, "type")), flag_of(exchange, "durable", true),
                    flag_of(exchange, "auto_delete", false), table_of(exchange, "arguments")});
            }
            std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
            return out;
        });
    }

    std::vector<QueueSummary> queues() override {
        return reading(api_, "queues", [&] {
            const Value answer =
                api_.get("/api/queues/" + api_.vhost_segment() +
                             "?columns=name,type,durable,exclusive,auto_delete,arguments,messages_ready,"
                             "messages_unacknowledged,consumers,message_bytes,head_message_timestamp",
                         "vhost " + detail::in_quotes(api_.vhost()));
            const Clock::time_point now = Clock::now();
            std::vector<QueueSummary> out;
            for (const Value& queue : list_of(answer)) {
                QueueSummary summary{.name = text_of(queue, "name"),
                                     .type = queue_type(text_of(queue, "type")),
                                     .durable = flag_of(queue, "durable", true),
                                     .exclusive = flag_of(queue, "exclusive", false),
                                     .auto_delete = flag_of(queue, "auto_delete", false),
                                     .ready = count_of(queue, "messages_ready"),
                                     .unacked = count_of(queue, "messages_unacknowledged"),
                                     .consumers = count_of(queue, "consumers"),
                                     .bytes = count_of(queue, "message_bytes"),
                                     .arguments = table_of(queue, "arguments")};
                // The head message's AMQP timestamp, in seconds, when it carries one.
                if (const Value* head = member(queue, "head_message_timestamp"); head != nullptr && summary.ready > 0) {
                    const Clock::time_point stamped{std::chrono::seconds(head->as_int64())};
                    summary.oldest_age = std::max(std::chrono::milliseconds(0),
                                                  std::chrono::duration_cast<std::chrono::milliseconds>(now - stamped));
                }
                out.push_back(std::move(summary));
            }
            std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
            return out;
        });
    }

    // Exchange-to-exchange bindings are left out: BindingDeclaration binds a queue.
    std::vector<BindingDeclaration> bindings() override {
        return reading(api_, "bindings", [&] {
            const Value answer =
                api_.get("/api/bindings/" + api_.vhost_segment(), "vhost " + detail::in_quotes(api_.vhost()));
            std::vector<BindingDeclaration> out;
            for (const Value& binding : list_of(answer)) {
                std::string source = text_of(binding, "source");
                if (source.empty() || text_of(binding, "destination_type") != "queue") continue;
                out.push_back(BindingDeclaration{text_of(binding, "destination"), std::move(source),
                                                 text_of(binding, "routing_key"), table_of(binding, "arguments")});
            }
            std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
                return std::tie(a.exchange, a.queue, a.routing_key) < std::tie(b.exchange, b.queue, b.routing_key);
            });
            return out;
        });
    }

    // The vhost's AMQP connections; consumers and unacked summed over each one's channels.
    std::vector<SessionSummary> sessions() override {
        return reading(api_, "sessions", [&] {
            const std::string subject = "vhost " + detail::in_quotes(api_.vhost());
            const Value connections = api_.get("/api/vhosts/" + api_.vhost_segment() + "/connections", subject);
            const Value channels = api_.get("/api/vhosts/" + api_.vhost_segment() + "/channels", subject);
            std::vector<SessionSummary> out;
            for (const Value& connection : list_of(connections)) {
                SessionSummary session;
                const std::string host = text_of(connection, "peer_host");
                session.peer = (host.find(':') == std::string::npos ? host : "[" + host + "]") + ":" +
                               std::to_string(count_of(connection, "peer_port"));
                if (const Value* properties = member(connection, "client_properties"))
                    session.name = text_of(*properties, "connection_name");
                session.since = Clock::time_point(std::chrono::milliseconds(count_of(connection, "connected_at")));
                const std::string name = text_of(connection, "name");
                for (const Value& channel : list_of(channels)) {
                    const Value* owner = member(channel, "connection_details");
                    if (owner == nullptr || text_of(*owner, "name") != name) continue;
                    session.consumers += count_of(channel, "consumer_count");
                    session.unacked += count_of(channel, "messages_unacknowledged");
                }
                out.push_back(std::move(session));
            }
            std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
                return std::tie(a.since, a.peer) < std::tie(b.since, b.peer);
            });
            return out;
        });
    }

    // RabbitMQ's API browses by getting the messages and requeuing them, which it does in
    // their order, for classic and quorum queues alike. What that changes: each comes back
    // redelivered; on a quorum queue its x-delivery-count header grows by one (3.10 shows it
    // from the first delivery on, as 0), and the messages are back a moment after the call
    // returns (when the channel that took them has closed), not at once as on a classic one.
    // Reaching position `from` takes the messages before it too. A quorum queue with a delivery limit would
    // dead-letter or drop a message browsed that often, and a stream queue cannot be read
    // this way: both are refused.
    std::vector<BrowsedMessage> browse(std::string_view queue, BrowseOptions options) override {
        return reading(api_, "browse", [&]() -> std::vector<BrowsedMessage> {
            check_name("queue", queue);
            const std::string path = queue_path(queue);
            const Value described = api_.get(path, quoted_queue(queue, api_.vhost()));
            const QueueType type = queue_type(text_of(described, "type"));
            if (type == QueueType::stream)
                throw ManagementError(ManagementError::Reason::unsupported,
                                      "acemq: RabbitMQ's management API cannot browse stream " +
                                          quoted_queue(queue, api_.vhost()) +
                                          ": read it with a consumer from an offset instead");
            if (const auto limit = delivery_limit(described); type == QueueType::quorum && limit)
                throw ManagementError(
                    ManagementError::Reason::unsupported,
                    "acemq: browsing quorum " + quoted_queue(queue, api_.vhost()) +
                        " through RabbitMQ's management API counts a delivery of every message shown, and its delivery "
                        "limit of " +
                        std::to_string(*limit) +
                        " would dead-letter or drop a message browsed that often: nothing was browsed; consume from it "
                        "instead, or lift the limit");
            if (options.count == 0) return {};
            const std::uint64_t wanted =
                options.count > UINT64_MAX - options.from ? UINT64_MAX : options.from + options.count;
            const Value answer = api_.post(
                path + "/get",
                "{\"count\":" + std::to_string(wanted) + ",\"ackmode\":\"ack_requeue_true\",\"encoding\":\"base64\"}",
                quoted_queue(queue, api_.vhost()));
            std::vector<BrowsedMessage> out;
            const Value::Array& messages = list_of(answer);
            for (std::uint64_t position = options.from; position < messages.size(); ++position)
                out.push_back(browsed(messages[position], position, queue));
            return out;
        });
    }

    // RabbitMQ's API does not say how many it dropped: the count is the ready messages of
    // its last statistics sample before the purge.
    std::uint64_t purge(std::string_view queue) override {
        return reading(api_, "purge", [&] {
            check_name("queue", queue);
            const std::string path = queue_path(queue);
            const std::uint64_t ready = count_of(api_.get(path, quoted_queue(queue, api_.vhost())), "messages_ready");
            api_.remove(path + "/contents", quoted_queue(queue, api_.vhost()));
            return ready;
        });
    }

    // even_if_consumed = false is RabbitMQ's if-unused ("has no consumers"), which it does for
    // classic queues only. The consumers are counted first, for a clear refusal on any queue.
    // On a classic queue if-unused also refuses a consumer that came since RabbitMQ's last
    // statistics sample; on a quorum or stream queue the count is as old as that sample (a
    // quorum queue reports every 5 s, its quorum_tick_interval), so a consumer that came
    // within it is not seen, and its queue is deleted.
    void delete_queue(std::string_view queue, DeleteOptions options) override {
        reading(api_, "delete_queue", [&] {
            check_name("queue", queue);
            const std::string path = queue_path(queue);
            const std::string subject = quoted_queue(queue, api_.vhost());
            if (options.even_if_consumed) return api_.remove(path, subject);
            const Value described = api_.get(path, subject);
            if (const std::uint64_t consumers = count_of(described, "consumers"); consumers > 0)
                throw in_use(subject, std::to_string(consumers) + (consumers == 1 ? " consumer" : " consumers"));
            if (queue_type(text_of(described, "type")) != QueueType::classic) return api_.remove(path, subject);
            const std::string request = path + "?if-unused=true";
            const ManagementApi::Answer answer = api_.send(ManagementApi::Method::del, request);
            if (answer.status / 100 == 2) return;
            if (answer.status == 400) throw in_use(subject, "a consumer");
            api_.refuse(ManagementApi::Method::del, request, answer, subject);
        });
    }

    void delete_exchange(std::string_view exchange) override {
        if (exchange.empty())
            throw InvalidArgument("acemq: the default exchange \"\" cannot be deleted: name the exchange to delete");
        // RabbitMQ answers 401 to deleting these, which would read as a wrong password.
        if (exchange.starts_with("amq."))
            throw ManagementError(
                ManagementError::Reason::unsupported,
                "acemq: RabbitMQ's exchange " + detail::in_quotes(exchange) + " is predeclared and cannot be deleted");
        api_.remove("/api/exchanges/" + api_.vhost_segment() + "/" + path_segment(exchange),
                    "exchange " + detail::in_quotes(exchange) + " in vhost " + detail::in_quotes(api_.vhost()));
    }

    BackupResult backup(const std::string&) override {
        throw ManagementError(ManagementError::Reason::unsupported,
                              "acemq: RabbitMQ keeps its messages in its own data directory, which acemq cannot "
                              "copy: export its definitions (rabbitmqctl export_definitions FILE, or GET "
                              "/api/definitions) and back up the node's data directory as RabbitMQ's backup guide "
                              "says (https://www.rabbitmq.com/backup.html)");
    }

private:
    std::string queue_path(std::string_view queue) const {
        return "/api/queues/" + api_.vhost_segment() + "/" + path_segment(queue);
    }

    static ManagementError in_use(const std::string& subject, const std::string& consumers) {
        return ManagementError(
            ManagementError::Reason::in_use,
            "acemq: " + subject + " has " + consumers +
                ": stop them first, or delete it even if consumed (DeleteOptions::even_if_consumed)");
    }

    BrowsedMessage browsed(const Value& message, std::uint64_t position, std::string_view queue) const {
        BrowsedMessage out;
        out.position = position;
        InboundParts inbound;
        std::optional<Bytes> body = detail::base64_decode(text_of(message, "payload"));
        if (!body)
            throw ManagementError(ManagementError::Reason::failed,
                                  "acemq: RabbitMQ's management API gave message " + std::to_string(position) + " of " +
                                      quoted_queue(queue, api_.vhost()) + " a payload that is not base64");
        inbound.body = std::move(*body);
        inbound.exchange = text_of(message, "exchange");
        inbound.routing_key = text_of(message, "routing_key");
        inbound.redelivered = flag_of(message, "redelivered", false);
        if (const Value* properties = member(message, "properties")) {
            inbound.content_type = text_of(*properties, "content_type");
            inbound.message_id = text_of(*properties, "message_id");
            inbound.reply_to = text_of(*properties, "reply_to");
            inbound.headers = table_of(*properties, "headers");
            out.persistent = count_of(*properties, "delivery_mode") == 2;
        } else {
            out.persistent = false;
        }
        out.message = InboundMessage(std::move(inbound));
        return out;
    }

    ManagementApi api_;
};

}  // namespace

std::unique_ptr<Management> manage(std::string_view url, ManagementOptions options) {
    return std::make_unique<RabbitManagement>(parse_address(url), options);
}

}  // namespace acemq::amqp
