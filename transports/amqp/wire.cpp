#include "amqp/wire.hpp"

#include <acemq/error.hpp>

#include <algorithm>
#include <limits>
#include <type_traits>

namespace acemq::amqp {

TableView::TableView(const FieldTable& table) : root_(lay_out(table)) {}

amqp_table_t TableView::lay_out(const FieldTable& table) {
    std::vector<amqp_table_entry_t>& entries = tables_.emplace_back();
    entries.reserve(table.size());
    for (const auto& [name, value] : table) entries.push_back(amqp_table_entry_t{bytes_of(name), value_of(value)});
    return amqp_table_t{static_cast<int>(entries.size()), entries.empty() ? nullptr : entries.data()};
}

amqp_field_value_t TableView::value_of(const FieldValue& value) {
    amqp_field_value_t out{};
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                out.kind = AMQP_FIELD_KIND_VOID;
            } else if constexpr (std::is_same_v<T, bool>) {
                out.kind = AMQP_FIELD_KIND_BOOLEAN;
                out.value.boolean = v ? 1 : 0;
            } else if constexpr (std::is_same_v<T, std::int32_t>) {
                out.kind = AMQP_FIELD_KIND_I32;
                out.value.i32 = v;
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
                out.kind = AMQP_FIELD_KIND_I64;
                out.value.i64 = v;
            } else if constexpr (std::is_same_v<T, std::uint64_t>) {
                // RabbitMQ reads no unsigned 64-bit kind but the timestamp; a value that fits
                // travels as the signed long-long every client reads.
                if (v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                    out.kind = AMQP_FIELD_KIND_I64;
                    out.value.i64 = static_cast<std::int64_t>(v);
                } else {
                    out.kind = AMQP_FIELD_KIND_TIMESTAMP;
                    out.value.u64 = v;
                }
            } else if constexpr (std::is_same_v<T, double>) {
                out.kind = AMQP_FIELD_KIND_F64;
                out.value.f64 = v;
            } else if constexpr (std::is_same_v<T, std::string>) {
                out.kind = AMQP_FIELD_KIND_UTF8;
                out.value.bytes = bytes_of(v);
            } else if constexpr (std::is_same_v<T, Bytes>) {
                out.kind = AMQP_FIELD_KIND_BYTES;
                out.value.bytes = amqp_bytes_t{v.size(), const_cast<std::byte*>(v.data())};
            } else if constexpr (std::is_same_v<T, FieldArray>) {
                std::vector<amqp_field_value_t>& items = arrays_.emplace_back();
                items.reserve(v.size());
                for (const FieldValue& item : v) items.push_back(value_of(item));
                out.kind = AMQP_FIELD_KIND_ARRAY;
                out.value.array = amqp_array_t{static_cast<int>(items.size()), items.empty() ? nullptr : items.data()};
            } else if constexpr (std::is_same_v<T, FieldTimestamp>) {
                const std::int64_t seconds = v.time_since_epoch().count();
                if (seconds >= 0) {
                    out.kind = AMQP_FIELD_KIND_TIMESTAMP;
                    out.value.u64 = static_cast<std::uint64_t>(seconds);
                } else {
                    // AMQP's timestamp is unsigned: an instant before 1970 travels as its
                    // signed count of seconds rather than wrapping into the far future.
                    out.kind = AMQP_FIELD_KIND_I64;
                    out.value.i64 = seconds;
                }
            } else {
                static_assert(std::is_same_v<T, FieldTable>);
                out.kind = AMQP_FIELD_KIND_TABLE;
                out.value.table = lay_out(v);
            }
        },
        value.get());
    return out;
}

namespace {

FieldTable table_at(const amqp_table_t& table, int level);

std::string too_deep() {
    return "the headers nest tables and arrays more than " + std::to_string(max_table_depth) +
           " levels deep, the most this transport reads or writes";
}

// `level`: that of the table or array holding `value`.
FieldValue field_of(const amqp_field_value_t& value, int level) {
    switch (value.kind) {
    case AMQP_FIELD_KIND_BOOLEAN: return FieldValue(value.value.boolean != 0);
    case AMQP_FIELD_KIND_I8: return FieldValue(static_cast<std::int32_t>(value.value.i8));
    case AMQP_FIELD_KIND_U8: return FieldValue(static_cast<std::int32_t>(value.value.u8));
    case AMQP_FIELD_KIND_I16: return FieldValue(static_cast<std::int32_t>(value.value.i16));
    case AMQP_FIELD_KIND_U16: return FieldValue(static_cast<std::int32_t>(value.value.u16));
    case AMQP_FIELD_KIND_I32: return FieldValue(value.value.i32);
    case AMQP_FIELD_KIND_U32: return FieldValue(static_cast<std::int64_t>(value.value.u32));
    case AMQP_FIELD_KIND_I64: return FieldValue(value.value.i64);
    case AMQP_FIELD_KIND_U64: return FieldValue(value.value.u64);
    case AMQP_FIELD_KIND_TIMESTAMP:
        // Past the signed range no instant can hold it; it stays the number it is.
        if (value.value.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return FieldValue(value.value.u64);
        return FieldValue(FieldTimestamp(std::chrono::seconds(static_cast<std::int64_t>(value.value.u64))));
    case AMQP_FIELD_KIND_F32: return FieldValue(static_cast<double>(value.value.f32));
    case AMQP_FIELD_KIND_F64: return FieldValue(value.value.f64);
    case AMQP_FIELD_KIND_DECIMAL: {
        double scaled = static_cast<double>(value.value.decimal.value);
        for (std::uint8_t i = 0; i < value.value.decimal.decimals; ++i) scaled /= 10;
        return FieldValue(scaled);
    }
    case AMQP_FIELD_KIND_UTF8: return FieldValue(string_of(value.value.bytes));
    case AMQP_FIELD_KIND_BYTES: {
        const auto* data = static_cast<const std::byte*>(value.value.bytes.bytes);
        return FieldValue(Bytes(data, data + value.value.bytes.len));
    }
    case AMQP_FIELD_KIND_ARRAY: {
        if (level >= max_table_depth) throw DecodeError(too_deep());
        FieldArray items;
        items.reserve(static_cast<std::size_t>(std::max(value.value.array.num_entries, 0)));
        for (int i = 0; i < value.value.array.num_entries; ++i)
            items.push_back(field_of(value.value.array.entries[i], level + 1));
        return FieldValue(std::move(items));
    }
    case AMQP_FIELD_KIND_TABLE:
        if (level >= max_table_depth) throw DecodeError(too_deep());
        return FieldValue(table_at(value.value.table, level + 1));
    default: return FieldValue();
    }
}

FieldTable table_at(const amqp_table_t& table, int level) {
    FieldTable out;
    out.reserve(static_cast<std::size_t>(std::max(table.num_entries, 0)));
    for (int i = 0; i < table.num_entries; ++i) {
        const amqp_bytes_t key = table.entries[i].key;
        out.insert_or_assign(FieldName(std::string_view(static_cast<const char*>(key.bytes), key.len)),
                             field_of(table.entries[i].value, level));
    }
    return out;
}

constexpr std::size_t shortstr_max = 255;

// "\"x-custom-abcdefghijklmnopqrstuvwxyz…\"": enough of a long name to find it by.
std::string quoted_start(std::string_view text) {
    constexpr std::size_t shown = 32;
    return "\"" + std::string(text.substr(0, shown)) + (text.size() > shown ? "…" : "") + "\"";
}

}  // namespace

FieldTable table_of(const amqp_table_t& table) { return table_at(table, 1); }

TableSize encoded_size(const FieldTable& table) {
    TableSize size;
    struct Pending {
        const FieldValue* value;
        int level;  // of the table or array holding it
    };
    std::vector<Pending> pending;
    // Names and the length word now; the values go on `pending`, each to be measured once.
    auto open_table = [&](const FieldTable& inner, int level) {
        size.bytes += 4;
        for (const auto& [name, value] : inner) {
            if (name.size() > shortstr_max) {
                size.refusal = "the header name " + quoted_start(name) + " is " + std::to_string(name.size()) +
                               " bytes long; AMQP 0-9-1 allows at most 255 (a short string)";
                return false;
            }
            size.bytes += 1 + name.size();
            pending.push_back({&value, level});
        }
        return true;
    };
    if (!open_table(table, 1)) return size;
    while (!pending.empty()) {
        const Pending next = pending.back();
        pending.pop_back();
        size.bytes += 1;  // the kind letter
        bool fine = true;
        std::visit(
            [&](const auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, std::monostate>) {
                } else if constexpr (std::is_same_v<T, bool>) {
                    size.bytes += 1;
                } else if constexpr (std::is_same_v<T, std::int32_t>) {
                    size.bytes += 4;
                } else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> ||
                                     std::is_same_v<T, double> || std::is_same_v<T, FieldTimestamp>) {
                    size.bytes += 8;
                } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Bytes>) {
                    size.bytes += 4 + v.size();
                } else {
                    if (next.level >= max_table_depth) {
                        size.refusal = too_deep();
                        fine = false;
                    } else if constexpr (std::is_same_v<T, FieldArray>) {
                        size.bytes += 4;
                        for (const FieldValue& item : v) pending.push_back({&item, next.level + 1});
                    } else {
                        fine = open_table(v, next.level + 1);
                    }
                }
            },
            next.value->get());
        if (!fine) return size;
    }
    return size;
}

std::string encoding_refusal(const OutboundMessage& message, std::size_t frame_max) {
    const std::pair<const char*, const std::string*> short_strings[] = {
        {"exchange name", &message.exchange},    {"routing key", &message.routing_key},
        {"content type", &message.content_type}, {"message id", &message.message_id},
        {"reply-to address", &message.reply_to},
    };
    for (const auto& [what, text] : short_strings)
        if (text->size() > shortstr_max)
            return std::string("the ") + what + " is " + std::to_string(text->size()) +
                   " bytes long; AMQP 0-9-1 carries at most 255 there (a short string)";
    const TableSize headers = encoded_size(message.headers.table());
    if (!headers.refusal.empty()) return headers.refusal;
    // As write_publishes lays them out: property flags, content type, headers, delivery
    // mode, then the message id and reply-to when present.
    const std::size_t properties = 2 + (1 + message.content_type.size()) + headers.bytes + 1 +
                                   (message.message_id.empty() ? 0 : 1 + message.message_id.size()) +
                                   (message.reply_to.empty() ? 0 : 1 + message.reply_to.size());
    const std::size_t room = property_room(frame_max);
    if (properties > room)
        return "the headers take " + std::to_string(headers.bytes) + " bytes encoded (" + std::to_string(properties) +
               " with the other properties); one content header on this connection holds at most " +
               std::to_string(room) + " (frame_max " + std::to_string(frame_max) + " less " +
               std::to_string(frame_max - room) + " bytes of framing)";
    return {};
}

std::size_t property_room(std::size_t frame_max) {
    // A content header frame: 7 bytes of frame header, class, weight and body size (12),
    // the properties, and the frame-end byte.
    constexpr std::size_t framing = 7 + 12 + 1;
    return frame_max > framing ? frame_max - framing : 0;
}

void read_properties(InboundParts& message, const amqp_basic_properties_t& properties) {
    if (properties._flags & AMQP_BASIC_CONTENT_TYPE_FLAG) message.content_type = string_of(properties.content_type);
    if (properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) message.message_id = string_of(properties.message_id);
    if (properties._flags & AMQP_BASIC_REPLY_TO_FLAG) message.reply_to = string_of(properties.reply_to);
    if (properties._flags & AMQP_BASIC_HEADERS_FLAG) {
        try {
            message.headers = table_of(properties.headers);
        } catch (const DecodeError& error) {
            // Handed on without headers for the engine to park: dropping the delivery
            // here would lose it, and throwing would cost the connection.
            message.headers.clear();
            message.decode_failure = error.what();
        }
    }
}

std::string reply_text(std::uint16_t code, amqp_bytes_t text) {
    std::string out = string_of(text);
    // RabbitMQ's text already starts with the constant's name ("NOT_FOUND - ..."): put the number first.
    return std::to_string(code) + " " + out;
}

}  // namespace acemq::amqp
