// Conversions between acemq's value types and rabbitmq-c's. Internal to the transport.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <amqp.h>

#include "acemq/field.hpp"

namespace acemq::amqp {

inline amqp_bytes_t bytes_of(std::string_view text) {
    return amqp_bytes_t{text.size(), const_cast<char*>(text.data())};
}
inline std::string string_of(amqp_bytes_t bytes) {
    return bytes.len == 0 ? std::string() : std::string(static_cast<const char*>(bytes.bytes), bytes.len);
}

// Lays a FieldTable out as an amqp_table_t. The result points into `table` and into
// storage this object owns: keep both alive until the frame is written.
class TableView {
public:
    explicit TableView(const FieldTable& table);
    TableView(const TableView&) = delete;
    TableView& operator=(const TableView&) = delete;
    const amqp_table_t& get() const noexcept { return root_; }

private:
    amqp_table_t lay_out(const FieldTable& table);
    amqp_field_value_t value_of(const FieldValue& value);

    std::deque<std::vector<amqp_table_entry_t>> tables_;
    std::deque<std::vector<amqp_field_value_t>> arrays_;
    amqp_table_t root_;
};

// Every AMQP field kind read into the nearest FieldValue: narrow integers widen to 32 bits,
// unsigned 32 to 64, decimals and floats to double, timestamps to FieldTimestamp (one past
// the signed 64-bit range to unsigned 64).
FieldTable table_of(const amqp_table_t& table);

// "404 NOT_FOUND - no queue 'x' in vhost '/'" from a channel.close or connection.close.
std::string reply_text(std::uint16_t code, amqp_bytes_t text);

}  // namespace acemq::amqp
