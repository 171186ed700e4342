#include "amqp/wire.hpp"

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

FieldValue field_of(const amqp_field_value_t& value) {
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
        FieldArray items;
        items.reserve(static_cast<std::size_t>(value.value.array.num_entries));
        for (int i = 0; i < value.value.array.num_entries; ++i) items.push_back(field_of(value.value.array.entries[i]));
        return FieldValue(std::move(items));
    }
    case AMQP_FIELD_KIND_TABLE: return FieldValue(table_of(value.value.table));
    default: return FieldValue();
    }
}

}  // namespace

FieldTable table_of(const amqp_table_t& table) {
    FieldTable out;
    out.reserve(static_cast<std::size_t>(table.num_entries));
    for (int i = 0; i < table.num_entries; ++i)
        out.insert_or_assign(string_of(table.entries[i].key), field_of(table.entries[i].value));
    return out;
}

std::string reply_text(std::uint16_t code, amqp_bytes_t text) {
    std::string out = string_of(text);
    // RabbitMQ's text already starts with the constant's name ("NOT_FOUND - ..."): put the number first.
    return std::to_string(code) + " " + out;
}

}  // namespace acemq::amqp
