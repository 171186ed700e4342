#include "msgpack/message_pack.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include <acemq/error.hpp>

#include "field_visitor.hpp"
#include "msgpack/bounds.hpp"
#include "packed_writer.hpp"

namespace acemq::message_pack {

namespace {

// The widths AMQP tells apart and msgpack does not.
constexpr std::int8_t ext_int64 = 1;
constexpr std::int8_t ext_uint64 = 2;
constexpr std::int8_t ext_timestamp = 3;  // whole seconds since the Unix epoch, signed

[[noreturn]] void malformed(std::string what) { throw Malformed(std::move(what)); }

// Refuses, in the words of a frame or record, what Bounds refuses (and a buffer that is not
// msgpack); allocates nothing.
class ShapeCheck {
public:
    ShapeCheck(std::size_t size, std::string_view whole) : bounds_(size, max_depth), whole_(whole) {}

    bool start_array(std::uint32_t elements) { return open(elements); }
    bool start_map(std::uint32_t entries) { return open(2 * std::size_t{entries}); }
    bool end_array() { return close(); }
    bool end_map() { return close(); }
    void parse_error(std::size_t parsed, std::size_t) {
        malformed("no msgpack value starts at byte " + std::to_string(parsed));
    }
    void insufficient_bytes(std::size_t, std::size_t) {
        malformed("it ends before the values it declares (truncated, or a length larger than the " +
                  std::string(whole_) + ")");
    }

private:
    bool open(std::size_t values) {
        switch (bounds_.open(values)) {
        case Bounds::Refusal::none: return true;
        case Bounds::Refusal::too_deep:
            malformed("arrays and maps nest deeper than " + std::to_string(max_depth) + " levels");
        case Bounds::Refusal::more_elements_than_bytes:
            malformed("an array or map declares more elements than the " + std::string(whole_) + " has bytes");
        }
        return true;
    }
    bool close() {
        bounds_.close();
        return true;
    }

    Bounds bounds_;
    std::string_view whole_;
};

bool refer_to_buffer(msgpack::type::object_type, std::size_t, void*) { return true; }

[[noreturn]] void wrong_type(std::string_view name, std::string_view wanted, const msgpack::object& got) {
    malformed("field " + std::string(name) + " should be " + std::string(wanted) + ", is " +
              std::string(type_name(got.type)));
}

void pack_eight(Packer& out, std::int8_t type, std::uint64_t value) {
    char bytes[8];
    for (int i = 7; i >= 0; --i, value >>= 8) bytes[i] = static_cast<char>(value & 0xff);
    out.pack_ext(8, type);
    out.pack_ext_body(bytes, 8);
}

// msgpack-c's pack_double writes a whole double (2.0, -0.0, 2^40) as an integer, which would
// read back as an int32 or be refused as wider: a double goes out as float64 always, its
// header and big-endian bits appended as they are (pack_*_body appends without a header).
void pack_float64(Packer& out, double value) {
    char bytes[9];
    bytes[0] = static_cast<char>(0xcb);
    auto bits = std::bit_cast<std::uint64_t>(value);
    for (int i = 8; i >= 1; --i, bits >>= 8) bytes[i] = static_cast<char>(bits & 0xff);
    out.pack_bin_body(bytes, 9);
}

std::uint64_t read_eight(const msgpack::object_ext& ext) {
    if (ext.size != 8) malformed("an ext field value of type " + std::to_string(ext.type()) + " is not 8 bytes");
    std::uint64_t value = 0;
    for (std::uint32_t i = 0; i < 8; ++i) value = (value << 8) | static_cast<unsigned char>(ext.data()[i]);
    return value;
}

}  // namespace

std::string_view type_name(msgpack::type::object_type type) {
    switch (type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "bool";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER: return "integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "float";
    case msgpack::type::STR: return "str";
    case msgpack::type::BIN: return "bin";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    case msgpack::type::EXT: return "ext";
    }
    return "unknown";
}

namespace {

// msgpack-c's own visitor that builds the object tree (the one msgpack::unpack runs, from
// msgpack-c's detail namespace), asking Bounds (through ShapeCheck) at each array and map
// header before it reserves room for the elements: one pass both checks a buffer's shape and
// unpacks it. msgpack::parse calls the visitor's members by its own type, so these hide the
// base's.
class CheckedObjects : public msgpack::detail::create_object_visitor {
public:
    CheckedObjects(std::size_t size, std::string_view whole)
        : create_object_visitor(refer_to_buffer, nullptr, msgpack::unpack_limit()), shape_(size, whole) {}

    bool start_array(std::uint32_t elements) {
        return shape_.start_array(elements) && create_object_visitor::start_array(elements);
    }
    bool start_map(std::uint32_t entries) {
        return shape_.start_map(entries) && create_object_visitor::start_map(entries);
    }
    bool end_array() { return shape_.end_array() && create_object_visitor::end_array(); }
    bool end_map() { return shape_.end_map() && create_object_visitor::end_map(); }
    void parse_error(std::size_t parsed, std::size_t at) { shape_.parse_error(parsed, at); }
    void insufficient_bytes(std::size_t parsed, std::size_t at) { shape_.insufficient_bytes(parsed, at); }

private:
    ShapeCheck shape_;
};

}  // namespace

msgpack::object_handle unpack_checked(std::span<const std::byte> bytes, std::string_view whole) {
    if (bytes.empty()) malformed("it is empty");
    auto zone = std::make_unique<msgpack::zone>();
    CheckedObjects visitor(bytes.size(), whole);
    visitor.set_zone(*zone);
    std::size_t parsed = 0;
    try {
        if (!msgpack::parse(reinterpret_cast<const char*>(bytes.data()), bytes.size(), parsed, visitor))
            malformed("it is not one msgpack value");
    } catch (const Malformed&) {
        throw;
    } catch (const std::exception& error) {
        // What msgpack-c refuses itself (its own limits, a zone it cannot grow) is malformed too.
        malformed(error.what());
    }
    if (parsed != bytes.size())
        malformed(std::to_string(bytes.size() - parsed) + " bytes follow the " + std::string(whole) +
                  "'s msgpack value");
    return msgpack::object_handle(visitor.data(), std::move(zone));
}

void pack_text(Packer& out, std::string_view text) {
    out.pack_str(static_cast<std::uint32_t>(text.size()));
    out.pack_str_body(text.data(), static_cast<std::uint32_t>(text.size()));
}

void pack_bytes(Packer& out, std::span<const std::byte> bytes) {
    out.pack_bin(static_cast<std::uint32_t>(bytes.size()));
    out.pack_bin_body(reinterpret_cast<const char*>(bytes.data()), static_cast<std::uint32_t>(bytes.size()));
}

namespace {

// Field values as the header comment of message_pack.hpp says they go.
class ValueWriter final : public detail::FieldVisitor {
public:
    explicit ValueWriter(Packer& out) noexcept : out_(out) {}

    void table(std::size_t entries) override { out_.pack_map(static_cast<std::uint32_t>(entries)); }
    void name(std::string_view name) override { pack_text(out_, name); }
    void array(std::size_t elements) override { out_.pack_array(static_cast<std::uint32_t>(elements)); }
    void nil() override { out_.pack_nil(); }
    void boolean(bool value) override {
        if (value)
            out_.pack_true();
        else
            out_.pack_false();
    }
    void int32(std::int32_t value) override { out_.pack_int32(value); }
    void int64(std::int64_t value) override { pack_eight(out_, ext_int64, static_cast<std::uint64_t>(value)); }
    void uint64(std::uint64_t value) override { pack_eight(out_, ext_uint64, value); }
    void float64(double value) override { pack_float64(out_, value); }
    void text(std::string_view value) override { pack_text(out_, value); }
    void bytes(std::span<const std::byte> value) override { pack_bytes(out_, value); }
    void timestamp(FieldTimestamp value) override {
        pack_eight(out_, ext_timestamp, static_cast<std::uint64_t>(value.time_since_epoch().count()));
    }

private:
    Packer& out_;
};

}  // namespace

void pack_table(Packer& out, const FieldTable& table) {
    ValueWriter writer(out);
    detail::visit(table, writer);
}

void pack_table(Packer& out, const PackedHeaders& table) {
    ValueWriter writer(out);
    detail::visit(table, writer);
}

void pack_value(Packer& out, const FieldValue& value) {
    ValueWriter writer(out);
    detail::visit(value, writer);
}

std::uint64_t read_unsigned(const msgpack::object& object, std::string_view name) {
    if (object.type != msgpack::type::POSITIVE_INTEGER) wrong_type(name, "an unsigned integer", object);
    return object.via.u64;
}

std::int64_t read_signed(const msgpack::object& object, std::string_view name) {
    if (object.type == msgpack::type::NEGATIVE_INTEGER) return object.via.i64;
    if (object.type != msgpack::type::POSITIVE_INTEGER) wrong_type(name, "an integer", object);
    if (object.via.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        malformed(std::string(name) + " " + std::to_string(object.via.u64) + " does not fit 64 signed bits");
    return static_cast<std::int64_t>(object.via.u64);
}

std::string_view read_text(const msgpack::object& object, std::string_view name) {
    if (object.type != msgpack::type::STR) wrong_type(name, "a str", object);
    return {object.via.str.ptr, object.via.str.size};
}

std::span<const std::byte> read_bytes(const msgpack::object& object, std::string_view name) {
    if (object.type != msgpack::type::BIN) wrong_type(name, "a bin", object);
    return {reinterpret_cast<const std::byte*>(object.via.bin.ptr), object.via.bin.size};
}

bool read_bool(const msgpack::object& object, std::string_view name) {
    if (object.type != msgpack::type::BOOLEAN) wrong_type(name, "a bool", object);
    return object.via.boolean;
}

const msgpack::object_array& read_array(const msgpack::object& object, std::string_view name, std::size_t at_least) {
    if (object.type != msgpack::type::ARRAY) wrong_type(name, "an array", object);
    if (object.via.array.size < at_least)
        malformed(std::string(name) + " has " + std::to_string(object.via.array.size) + " elements, needs " +
                  std::to_string(at_least));
    return object.via.array;
}

FieldValue read_value(const msgpack::object& object, std::string_view name) {
    switch (object.type) {
    case msgpack::type::NIL: return {};
    case msgpack::type::BOOLEAN: return object.via.boolean;
    case msgpack::type::POSITIVE_INTEGER:
        if (object.via.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
            malformed("an integer in " + std::string(name) + " is wider than 32 bits without its ext type");
        return static_cast<std::int32_t>(object.via.u64);
    case msgpack::type::NEGATIVE_INTEGER:
        if (object.via.i64 < std::numeric_limits<std::int32_t>::min())
            malformed("an integer in " + std::string(name) + " is wider than 32 bits without its ext type");
        return static_cast<std::int32_t>(object.via.i64);
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return object.via.f64;
    case msgpack::type::STR: return std::string(object.via.str.ptr, object.via.str.size);
    case msgpack::type::BIN: {
        const auto* data = reinterpret_cast<const std::byte*>(object.via.bin.ptr);
        return Bytes(data, data + object.via.bin.size);
    }
    case msgpack::type::ARRAY: {
        FieldArray array;
        array.reserve(object.via.array.size);
        for (std::uint32_t i = 0; i < object.via.array.size; ++i)
            array.push_back(read_value(object.via.array.ptr[i], name));
        return array;
    }
    case msgpack::type::MAP: return read_table(object, name);
    case msgpack::type::EXT: {
        const msgpack::object_ext& ext = object.via.ext;
        switch (ext.type()) {
        case ext_int64: return static_cast<std::int64_t>(read_eight(ext));
        case ext_uint64: return read_eight(ext);
        case ext_timestamp: return FieldTimestamp(std::chrono::seconds(static_cast<std::int64_t>(read_eight(ext))));
        default:
            malformed("a value in " + std::string(name) + " has the unknown ext type " + std::to_string(ext.type()));
        }
    }
    }
    malformed("a value in " + std::string(name) + " has an unknown msgpack type");
}

FieldTable read_table(const msgpack::object& object, std::string_view name) {
    if (object.type != msgpack::type::MAP) wrong_type(name, "a map", object);
    FieldTable table;
    table.reserve(object.via.map.size);
    for (std::uint32_t i = 0; i < object.via.map.size; ++i) {
        const msgpack::object_kv& entry = object.via.map.ptr[i];
        const std::string_view key = read_text(entry.key, std::string(name) + " name");
        if (!table.emplace(FieldName(key), read_value(entry.val, name)).second)
            malformed(std::string(name) + " names \"" + std::string(key) + "\" twice");
    }
    return table;
}

PackedTable read_packed_table(const msgpack::object& object, std::string_view name, std::string_view message_id) {
    if (object.type != msgpack::type::MAP) wrong_type(name, "a map", object);
    const msgpack::object_map& map = object.via.map;
    // Room for the first few dozen entries; a map of more grows it (never reserved from the
    // count a peer declares).
    detail::PackedWriter writer(std::min<std::size_t>(map.size, 32) * 24, message_id);
    std::string_view previous;
    for (std::uint32_t i = 0; i < map.size; ++i) {
        const msgpack::object_kv& entry = map.ptr[i];
        if (entry.key.type != msgpack::type::STR) wrong_type(std::string(name) + " name", "a str", entry.key);
        const std::string_view key(entry.key.via.str.ptr, entry.key.via.str.size);
        if (i != 0 && key <= previous) return PackedTable(read_table(object, name), message_id);
        previous = key;
        if (entry.val.type == msgpack::type::STR)
            writer.put_text(key, std::string_view(entry.val.via.str.ptr, entry.val.via.str.size));
        else
            writer.put(key, read_value(entry.val, name));
    }
    return std::move(writer).finish();
}

void pack_message(Packer& out, const InboundMessage& message) {
    pack_text(out, message.exchange());
    pack_text(out, message.routing_key());
    pack_bytes(out, message.body());
    pack_text(out, message.content_type());
    pack_text(out, message.message_id());
    pack_table(out, message.headers());
    pack_text(out, message.reply_to());
    out.pack(message.redelivered());
}

InboundMessage read_message(const msgpack::object* fields) {
    // Field by field in their order, so that the first bad one is the one named; the headers
    // read straight into the packed form the message keeps (no table between).
    OutboundMessage message;
    message.exchange = read_text(fields[0], "exchange");
    message.routing_key = read_text(fields[1], "routing_key");
    const std::span<const std::byte> body = read_bytes(fields[2], "body");
    message.body.assign(body.begin(), body.end());
    message.content_type = read_text(fields[3], "content_type");
    message.message_id = read_text(fields[4], "message_id");
    message.headers = read_packed_table(fields[5], "headers", message.message_id);
    message.reply_to = read_text(fields[6], "reply_to");
    return message_of(std::move(message), read_bool(fields[7], "redelivered"));
}

InboundMessage message_of(OutboundMessage&& message, bool redelivered) {
    try {
        InboundMessage made(std::move(message));
        made.set_redelivered(redelivered);
        return made;
    } catch (const InvalidArgument& error) {
        // Malformed's texts go without the library's prefix: its users put their own first.
        std::string_view why = error.what();
        if (why.starts_with("acemq: ")) why.remove_prefix(std::string_view("acemq: ").size());
        malformed(std::string(why));
    }
}

std::size_t message_size_hint(std::size_t body, std::size_t headers) { return body + 256 + 64 * headers; }

}  // namespace acemq::message_pack
