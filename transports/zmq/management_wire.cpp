#include "zmq/management_wire.hpp"

#include <array>
#include <limits>

#include "quoted_text.hpp"

namespace acemq::zmq::wire {

namespace {

using message_pack::message_fields;
using message_pack::pack_message;
using message_pack::read_array;
using message_pack::read_bool;
using message_pack::read_message;
using message_pack::read_text;
using message_pack::read_unsigned;

constexpr std::array<std::string_view, 10> call_names{
    "info",   "exchanges", "queues",       "bindings",        "sessions",
    "browse", "purge",     "delete_queue", "delete_exchange", "backup"};

// The fields of each answer's elements (docs/zmq-protocol.md §11.2), at least.
constexpr std::uint32_t info_fields = 17;
constexpr std::uint32_t queue_summary_appended = 5;
constexpr std::uint32_t session_fields = 5;
constexpr std::uint32_t browsed_fields = 2 + message_fields;
constexpr std::uint32_t backup_fields = 3;

// The bytes a browse reply takes besides its messages: the frame's array, version, command,
// request, the messages' array header and `more`, each at its largest.
constexpr std::size_t browse_reply_overhead = 1 + 1 + 1 + 9 + 1 + 5 + 1;

Call call_named(std::string_view name) {
    for (std::size_t i = 0; i < call_names.size(); ++i)
        if (call_names[i] == name) return static_cast<Call>(i);
    malformed("management call " + acemq::detail::in_quotes(name) +
              " is unknown (this broker answers info, exchanges, queues, bindings, sessions, browse, purge, "
              "delete_queue, delete_exchange and backup)");
}

template <class T>
void pack_optional(Writer& out, const std::optional<T>& value) {
    if (value)
        out.value(static_cast<std::uint64_t>(value->count()));
    else
        out.nil();
}

std::int64_t read_signed_count(const msgpack::object& object, std::string_view name) {
    const std::uint64_t value = read_unsigned(object, name);
    if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        malformed(std::string(name) + " " + std::to_string(value) + " is out of range");
    return static_cast<std::int64_t>(value);
}

template <class Duration>
std::optional<Duration> read_optional(const msgpack::object& object, std::string_view name) {
    if (object.type == msgpack::type::NIL) return std::nullopt;
    return Duration(read_signed_count(object, name));
}

// A session's `since`, refused when past what a system_clock time point holds.
std::chrono::system_clock::time_point since_of(const msgpack::object& object) {
    constexpr auto latest =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::duration::max()).count();
    const std::int64_t since = read_signed_count(object, "since");
    if (since > latest) malformed("since " + std::to_string(since) + " is past what a time point holds");
    return std::chrono::system_clock::time_point(std::chrono::milliseconds(since));
}

// The reply's value (docs/zmq-protocol.md §4.1) as an array of at least `at_least` elements.
const msgpack::object_array& reply_array(const Frame& frame, std::string_view name, std::size_t at_least = 0) {
    return read_array(frame.field(1), name, at_least);
}

template <class Read>
auto read_list(const Frame& frame, std::string_view name, Read&& read) {
    return protocol_read([&] {
        const auto& list = reply_array(frame, name);
        std::vector<decltype(read(list.ptr[0]))> items;
        items.reserve(list.size);
        for (std::uint32_t i = 0; i < list.size; ++i) items.push_back(read(list.ptr[i]));
        return items;
    });
}

}  // namespace

std::string_view to_string(Call call) noexcept {
    const auto index = static_cast<std::size_t>(call);
    return index < call_names.size() ? call_names[index] : "unknown";
}

msgpack::sbuffer encode_manage(const ManageRequest& request) {
    Writer out(Command::manage, 3);
    out.value(request.request).text(to_string(request.call));
    switch (request.call) {
    case Call::browse:
        out.out().pack_array(3);
        out.text(request.name).value(request.browse.from).value(static_cast<std::uint64_t>(request.browse.count));
        break;
    case Call::delete_queue:
        out.out().pack_array(2);
        out.text(request.name).value(request.remove.even_if_consumed);
        break;
    case Call::purge:
    case Call::delete_exchange:
    case Call::backup:
        out.out().pack_array(1);
        out.text(request.name);
        break;
    default: out.out().pack_array(0);
    }
    return std::move(out.buffer());
}

ManageRequest read_manage(const Frame& frame) {
    return protocol_read([&] {
        ManageRequest request{.request = frame.unsigned_at(0, "request"),
                              .call = call_named(read_text(frame.field(1), "call"))};
        const std::size_t needed = request.call == Call::browse         ? 3
                                   : request.call == Call::delete_queue ? 2
                                   : request.call >= Call::purge        ? 1
                                                                        : 0;
        const auto& arguments = read_array(frame.field(2), std::string(to_string(request.call)) + " arguments", needed);
        if (needed > 0) request.name = std::string(read_text(arguments.ptr[0], "name"));
        if (request.call == Call::browse) {
            request.browse.from = read_unsigned(arguments.ptr[1], "from");
            const std::uint64_t count = read_unsigned(arguments.ptr[2], "count");
            request.browse.count =
                static_cast<std::size_t>(std::min<std::uint64_t>(count, std::numeric_limits<std::size_t>::max()));
        }
        if (request.call == Call::delete_queue)
            request.remove.even_if_consumed = read_bool(arguments.ptr[1], "even_if_consumed");
        return request;
    });
}

msgpack::sbuffer encode_info_reply(std::uint64_t request, const BrokerInfo& info) {
    Writer out(Command::reply, 2, 512);
    out.value(request);
    out.out().pack_array(info_fields);
    out.text(info.product).text(info.version).text(info.name).value(static_cast<std::uint64_t>(info.uptime.count()));
    out.text(info.data_file).value(info.data_bytes).value(info.wal_bytes);
    if (info.free_disk_bytes)
        out.value(*info.free_disk_bytes);
    else
        out.nil();
    out.value(info.opens).value(info.quarantined).value(info.commits);
    pack_optional(out, info.commit_latency_mean);
    pack_optional(out, info.commit_latency_max);
    out.out().pack_array(static_cast<std::uint32_t>(info.details.size()));
    for (const auto& [name, value] : info.details) {
        out.out().pack_array(2);
        out.text(name).text(value);
    }
    for (const std::optional<std::uint64_t>& total : {info.published, info.delivered, info.acked}) {
        if (total)
            out.value(*total);
        else
            out.nil();
    }
    return std::move(out.buffer());
}

msgpack::sbuffer encode_exchanges_reply(std::uint64_t request, const std::vector<ExchangeSummary>& exchanges) {
    Writer out(Command::reply, 2, 64 + 64 * exchanges.size());
    out.value(request);
    out.out().pack_array(static_cast<std::uint32_t>(exchanges.size()));
    for (const ExchangeSummary& exchange : exchanges)
        pack_exchange(out, {.name = exchange.name,
                            .kind = exchange.kind,
                            .durable = exchange.durable,
                            .auto_delete = exchange.auto_delete,
                            .arguments = exchange.arguments});
    return std::move(out.buffer());
}

msgpack::sbuffer encode_queues_reply(std::uint64_t request, const std::vector<QueueSummary>& queues) {
    Writer out(Command::reply, 2, 64 + 96 * queues.size());
    out.value(request);
    out.out().pack_array(static_cast<std::uint32_t>(queues.size()));
    for (const QueueSummary& queue : queues) {
        pack_queue(out,
                   {.name = queue.name,
                    .type = queue.type,
                    .durable = queue.durable,
                    .exclusive = queue.exclusive,
                    .auto_delete = queue.auto_delete,
                    .arguments = queue.arguments},
                   queue_summary_appended);
        out.value(queue.ready).value(queue.unacked).value(queue.consumers).value(queue.bytes);
        pack_optional(out, queue.oldest_age);
    }
    return std::move(out.buffer());
}

msgpack::sbuffer encode_bindings_reply(std::uint64_t request, const std::vector<BindingDeclaration>& bindings) {
    Writer out(Command::reply, 2, 64 + 64 * bindings.size());
    out.value(request);
    out.out().pack_array(static_cast<std::uint32_t>(bindings.size()));
    for (const BindingDeclaration& binding : bindings) pack_binding(out, binding);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_sessions_reply(std::uint64_t request, const std::vector<SessionSummary>& sessions) {
    Writer out(Command::reply, 2, 64 + 64 * sessions.size());
    out.value(request);
    out.out().pack_array(static_cast<std::uint32_t>(sessions.size()));
    for (const SessionSummary& session : sessions) {
        const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(session.since.time_since_epoch());
        out.out().pack_array(session_fields);
        out.text(session.peer)
            .text(session.name)
            .value(static_cast<std::uint64_t>(std::max<std::int64_t>(since.count(), 0)));
        out.value(session.consumers).value(session.unacked);
    }
    return std::move(out.buffer());
}

msgpack::sbuffer encode_backup_reply(std::uint64_t request, const BackupResult& backup) {
    Writer out(Command::reply, 2, 64 + backup.path.size());
    out.value(request);
    out.out().pack_array(backup_fields);
    out.text(backup.path).value(backup.bytes).value(backup.messages);
    return std::move(out.buffer());
}

BrowseReply::BrowseReply(std::uint64_t request, std::size_t max_frame_bytes)
    : request_(request), room_(max_frame_bytes > browse_reply_overhead ? max_frame_bytes - browse_reply_overhead : 0) {}

bool BrowseReply::add(const BrowsedMessage& message) {
    msgpack::sbuffer element(
        message_pack::message_size_hint(message.message.body().size(), message.message.headers().size()));
    msgpack::packer<msgpack::sbuffer> packer(element);
    packer.pack_array(browsed_fields);
    packer.pack(message.position);
    packer.pack(message.persistent);
    pack_message(packer, message.message);
    if (element.size() > room_) return false;
    room_ -= element.size();
    messages_.push_back(std::move(element));
    return true;
}

msgpack::sbuffer BrowseReply::finish(bool more) {
    std::size_t bytes = browse_reply_overhead;
    for (const msgpack::sbuffer& message : messages_) bytes += message.size();
    Writer out(Command::reply, 2, bytes);
    out.value(request_);
    out.out().pack_array(2);
    out.out().pack_array(static_cast<std::uint32_t>(messages_.size()));
    for (const msgpack::sbuffer& message : messages_) out.buffer().write(message.data(), message.size());
    out.value(more);
    return std::move(out.buffer());
}

BrokerInfo read_info_reply(const Frame& frame) {
    return protocol_read([&] {
        const auto& fields = reply_array(frame, "info", info_fields);
        const msgpack::object* at = fields.ptr;
        BrokerInfo info{.product = std::string(read_text(at[0], "product")),
                        .version = std::string(read_text(at[1], "version")),
                        .name = std::string(read_text(at[2], "name")),
                        .uptime = std::chrono::seconds(read_signed_count(at[3], "uptime")),
                        .data_file = std::string(read_text(at[4], "data_file")),
                        .data_bytes = read_unsigned(at[5], "data_bytes"),
                        .wal_bytes = read_unsigned(at[6], "wal_bytes")};
        if (at[7].type != msgpack::type::NIL) info.free_disk_bytes = read_unsigned(at[7], "free_disk_bytes");
        info.opens = read_unsigned(at[8], "opens");
        info.quarantined = read_unsigned(at[9], "quarantined");
        info.commits = read_unsigned(at[10], "commits");
        info.commit_latency_mean = read_optional<std::chrono::microseconds>(at[11], "commit_latency_mean");
        info.commit_latency_max = read_optional<std::chrono::microseconds>(at[12], "commit_latency_max");
        const auto& details = read_array(at[13], "details", 0);
        for (std::uint32_t i = 0; i < details.size; ++i) {
            const auto& pair = read_array(details.ptr[i], "detail", 2);
            info.details.emplace_back(read_text(pair.ptr[0], "detail name"), read_text(pair.ptr[1], "detail value"));
        }
        const auto total = [&](std::size_t index, std::string_view name) -> std::optional<std::uint64_t> {
            if (at[index].type == msgpack::type::NIL) return std::nullopt;
            return read_unsigned(at[index], name);
        };
        info.published = total(14, "published");
        info.delivered = total(15, "delivered");
        info.acked = total(16, "acked");
        return info;
    });
}

std::vector<ExchangeSummary> read_exchanges_reply(const Frame& frame) {
    return read_list(frame, "exchanges", [](const msgpack::object& element) {
        ExchangeDeclaration exchange = read_exchange(element);
        return ExchangeSummary{.name = std::move(exchange.name),
                               .kind = exchange.kind,
                               .durable = exchange.durable,
                               .auto_delete = exchange.auto_delete,
                               .arguments = std::move(exchange.arguments)};
    });
}

std::vector<QueueSummary> read_queues_reply(const Frame& frame) {
    return read_list(frame, "queues", [](const msgpack::object& element) {
        QueueDeclaration queue = read_queue(element);
        const msgpack::object* appended = read_array(element, "queue", 6 + queue_summary_appended).ptr + 6;
        return QueueSummary{.name = std::move(queue.name),
                            .type = queue.type,
                            .durable = queue.durable,
                            .exclusive = queue.exclusive,
                            .auto_delete = queue.auto_delete,
                            .ready = read_unsigned(appended[0], "ready"),
                            .unacked = read_unsigned(appended[1], "unacked"),
                            .consumers = read_unsigned(appended[2], "consumers"),
                            .bytes = read_unsigned(appended[3], "bytes"),
                            .oldest_age = read_optional<std::chrono::milliseconds>(appended[4], "oldest_age"),
                            .arguments = std::move(queue.arguments)};
    });
}

std::vector<BindingDeclaration> read_bindings_reply(const Frame& frame) {
    return read_list(frame, "bindings", [](const msgpack::object& element) { return read_binding(element); });
}

std::vector<SessionSummary> read_sessions_reply(const Frame& frame) {
    return read_list(frame, "sessions", [](const msgpack::object& element) {
        const auto& fields = read_array(element, "session", session_fields);
        return SessionSummary{.peer = std::string(read_text(fields.ptr[0], "peer")),
                              .name = std::string(read_text(fields.ptr[1], "name")),
                              .since = since_of(fields.ptr[2]),
                              .consumers = read_unsigned(fields.ptr[3], "consumers"),
                              .unacked = read_unsigned(fields.ptr[4], "unacked")};
    });
}

Browsed read_browse_reply(const Frame& frame) {
    return protocol_read([&] {
        const auto& value = reply_array(frame, "browse", 2);
        Browsed browsed{.messages = {}, .more = read_bool(value.ptr[1], "more")};
        const auto& messages = read_array(value.ptr[0], "messages", 0);
        browsed.messages.reserve(messages.size);
        for (std::uint32_t i = 0; i < messages.size; ++i) {
            const auto& fields = read_array(messages.ptr[i], "browsed message", browsed_fields);
            browsed.messages.push_back({.position = read_unsigned(fields.ptr[0], "position"),
                                        .message = read_message(fields.ptr + 2),
                                        .persistent = read_bool(fields.ptr[1], "persistent")});
        }
        return browsed;
    });
}

BackupResult read_backup_reply(const Frame& frame) {
    return protocol_read([&] {
        const auto& fields = reply_array(frame, "backup", backup_fields);
        return BackupResult{.path = std::string(read_text(fields.ptr[0], "path")),
                            .bytes = read_unsigned(fields.ptr[1], "bytes"),
                            .messages = read_unsigned(fields.ptr[2], "messages")};
    });
}

msgpack::sbuffer encode_refusal(std::uint64_t request, ManagementError::Reason reason, std::string_view text) {
    Writer out(Command::refusal, 3, 64 + text.size());
    out.value(request).value(static_cast<std::uint8_t>(reason)).text(text);
    return std::move(out.buffer());
}

Refusal read_refusal(const Frame& frame) {
    const std::uint64_t reason = frame.unsigned_at(1, "reason");
    if (reason > static_cast<std::uint64_t>(ManagementError::Reason::failed))
        malformed("refusal reason " + std::to_string(reason) + " is unknown");
    return {frame.unsigned_at(0, "request"), static_cast<ManagementError::Reason>(reason), frame.string_at(2, "text")};
}

}  // namespace acemq::zmq::wire
