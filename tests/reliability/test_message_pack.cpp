// The msgpack encoding of a message and its field values (lib/msgpack/message_pack.hpp),
// on its own, as the zmq protocol and the durable broker both rely on it: a message with a
// value of every kind reads back as written, widths and the sign of zero kept; hostile
// shapes (huge declared lengths, truncation, trailing bytes, deep nesting) are refused
// before msgpack-c reserves room for what they declare; and each refusal names what it could
// not read.
#include <catch2/catch.hpp>

#include "../support/codec_bodies.hpp"
#include "../support/msgpack_bytes.hpp"
#include "../support/thrown.hpp"
#include "msgpack/message_pack.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace message_pack = acemq::message_pack;
using acemq::Bytes;
using acemq::FieldArray;
using acemq::FieldTable;
using acemq::FieldTimestamp;
using acemq::FieldValue;
using acemq::InboundMessage;
using testing_support::bytes_of;
using testing_support::what_of;

// A message as one value, the way a user keeps it: an array of its fields.
Bytes packed(const InboundMessage& message) {
    msgpack::sbuffer buffer(message_pack::message_size_hint(message.body().size(), message.headers().size()));
    message_pack::Packer out(buffer);
    out.pack_array(message_pack::message_fields);
    message_pack::pack_message(out, message);
    return bytes_of(buffer);
}

InboundMessage unpacked(const Bytes& bytes) {
    const msgpack::object_handle handle = message_pack::unpack_checked(bytes, "record");
    const msgpack::object& fields = handle.get();
    REQUIRE(fields.type == msgpack::type::ARRAY);
    REQUIRE(fields.via.array.size == message_pack::message_fields);
    return message_pack::read_message(fields.via.array.ptr);
}

std::string shape_refusal_of(const Bytes& bytes) {
    return what_of<message_pack::Malformed>([&] { (void)message_pack::unpack_checked(bytes, "record"); });
}

// What a round trip must keep of a message, to compare in one go.
auto kept_of(const InboundMessage& m) {
    return std::make_tuple(std::string(m.exchange()), std::string(m.routing_key()),
                           Bytes(m.body().begin(), m.body().end()), std::string(m.content_type()),
                           std::string(m.message_id()), m.headers(), std::string(m.reply_to()), m.redelivered());
}

InboundMessage every_kind() {
    const Bytes raw = bytes_of({0x00, 0xc1, 0xff});
    acemq::InboundParts message;
    message.body = raw;
    message.content_type = "application/octet-stream";
    message.exchange = "orders";
    message.routing_key = "order.created";
    message.message_id = "m-1";
    message.reply_to = "replies";
    message.redelivered = true;
    message.headers = FieldTable{
        {"int32", std::numeric_limits<std::int32_t>::min()},
        {"int64 small", std::int64_t{5}},
        {"int64", std::numeric_limits<std::int64_t>::min()},
        {"uint64", std::numeric_limits<std::uint64_t>::max()},
        {"double", 0.25},
        {"double whole", 2.0},
        {"double negative zero", -0.0},
        {"timestamp", FieldTimestamp(std::chrono::seconds(-86400))},
        {"bytes", raw},
        {"text", "käse"},
        {"nil", FieldValue()},
        {"true", true},
        {"false", false},
        {"array", FieldArray{std::int32_t{1}, "two", FieldArray{FieldValue(), 3.5}, FieldTable{{"in", true}}}},
        {"table", FieldTable{{"nested", FieldTable{{"deeper", std::uint64_t{7}}}}, {"empty", FieldTable{}}}},
    };
    return InboundMessage(std::move(message));
}

TEST_CASE("a message with a field value of every kind reads back as it was written") {
    const InboundMessage written = every_kind();
    const Bytes bytes = packed(written);
    const InboundMessage read = unpacked(bytes);

    CHECK(kept_of(read) == kept_of(written));
    // Equal is not enough where the kinds compare alike: widths and float-ness must survive.
    CHECK(read.headers().at("int64 small").holds<std::int64_t>());
    CHECK(read.headers().at("double whole").holds<double>());
    CHECK(read.headers().at("timestamp").holds<FieldTimestamp>());
    const FieldValue& zero = read.headers().at("double negative zero");
    REQUIRE(zero.holds<double>());
    CHECK(std::signbit(std::get<double>(zero.get())));
}

TEST_CASE("a few bytes declaring four billion elements are refused without reserving them") {
    const Bytes huge_array = bytes_of({0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0});
    const Bytes huge_map = bytes_of({0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0});
    for (const Bytes& bytes : {huge_array, huge_map}) {
        // Refused at the header, before msgpack-c's object visitor reserves every element
        // declared (some 100 GB here).
        CHECK_THAT(shape_refusal_of(bytes),
                   Catch::Equals("an array or map declares more elements than the record has bytes"));
    }
}

TEST_CASE("a buffer cut short anywhere is refused as truncated") {
    const Bytes whole = packed(every_kind());
    for (std::size_t length = 1; length < whole.size(); ++length) {
        const Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(length));
        // Cut inside a str or bin, or where the arrays left declare more than the bytes left.
        CHECK_THAT(
            shape_refusal_of(cut),
            Catch::Equals("it ends before the values it declares (truncated, or a length larger than the record)") ||
                Catch::Equals("an array or map declares more elements than the record has bytes"));
    }
}

TEST_CASE("bytes after the one value, an empty buffer and no msgpack at all are refused") {
    Bytes trailing = packed(every_kind());
    trailing.push_back(std::byte{0xc0});
    trailing.push_back(std::byte{0xc0});
    CHECK_THAT(shape_refusal_of(trailing), Catch::Equals("2 bytes follow the record's msgpack value"));
    CHECK_THAT(shape_refusal_of({}), Catch::Equals("it is empty"));
    CHECK_THAT(shape_refusal_of(bytes_of({0x91, 0xc1})), Catch::StartsWith("no msgpack value starts at byte "));
}

TEST_CASE("nesting is refused past max_depth and kept up to it") {
    const auto nested = [](std::size_t depth) {
        Bytes bytes(depth, std::byte{0x91});  // a one-element array, `depth` times
        bytes.push_back(std::byte{0xc0});
        return bytes;
    };
    CHECK_NOTHROW(message_pack::unpack_checked(nested(message_pack::max_depth), "record"));
    CHECK_THAT(shape_refusal_of(nested(message_pack::max_depth + 1)),
               Catch::Equals("arrays and maps nest deeper than 72 levels"));
}

// An array of a message's fields with one replaced by `value`.
Bytes with_field(std::size_t index, const std::function<void(message_pack::Packer&)>& value) {
    const InboundMessage message = every_kind();
    msgpack::sbuffer buffer;
    message_pack::Packer out(buffer);
    out.pack_array(message_pack::message_fields);
    const std::function<void(message_pack::Packer&)> fields[] = {
        [&](message_pack::Packer& p) { message_pack::pack_text(p, message.exchange()); },
        [&](message_pack::Packer& p) { message_pack::pack_text(p, message.routing_key()); },
        [&](message_pack::Packer& p) { message_pack::pack_bytes(p, message.body()); },
        [&](message_pack::Packer& p) { message_pack::pack_text(p, message.content_type()); },
        [&](message_pack::Packer& p) { message_pack::pack_text(p, message.message_id()); },
        [&](message_pack::Packer& p) { message_pack::pack_table(p, message.headers()); },
        [&](message_pack::Packer& p) { message_pack::pack_text(p, message.reply_to()); },
        [&](message_pack::Packer& p) { p.pack(message.redelivered()); },
    };
    for (std::size_t i = 0; i < message_pack::message_fields; ++i) (i == index ? value : fields[i])(out);
    return bytes_of(buffer);
}

std::string read_refusal(const Bytes& bytes) {
    return what_of<message_pack::Malformed>([&] { (void)unpacked(bytes); });
}

TEST_CASE("a refused field value names the field and what it should have been") {
    CHECK_THAT(read_refusal(with_field(2, [](auto& p) { message_pack::pack_text(p, "body"); })),
               Catch::Equals("field body should be a bin, is str"));
    CHECK_THAT(read_refusal(with_field(7, [](auto& p) { p.pack_nil(); })),
               Catch::Equals("field redelivered should be a bool, is nil"));
    CHECK_THAT(read_refusal(with_field(5,
                                       [](auto& p) {
                                           p.pack_map(1);
                                           message_pack::pack_text(p, "wide");
                                           p.pack_uint64(std::uint64_t{1} << 40);
                                       })),
               Catch::Equals("an integer in headers is wider than 32 bits without its ext type"));
    CHECK_THAT(read_refusal(with_field(5,
                                       [](auto& p) {
                                           p.pack_map(2);
                                           for (int i = 0; i < 2; ++i) {
                                               message_pack::pack_text(p, "twice");
                                               p.pack_true();
                                           }
                                       })),
               Catch::Equals("headers names \"twice\" twice"));
}

// A table's map as message_pack writes it, read back as one msgpack value.
struct MapOf {
    Bytes bytes;
    msgpack::object_handle handle;

    explicit MapOf(const std::function<void(message_pack::Packer&)>& write) {
        msgpack::sbuffer buffer;
        message_pack::Packer out(buffer);
        write(out);
        bytes = bytes_of(buffer);
        handle = message_pack::unpack_checked(bytes, "record");
    }
    const msgpack::object& map() const { return handle.get(); }
};

Bytes map_bytes(const std::function<void(message_pack::Packer&)>& write) { return MapOf(write).bytes; }

// Headers with a value of every kind, and texts equal to a message's id at the top and nested.
FieldTable headers_with_id(const std::string& id) {
    FieldTable table = every_kind().headers().table();
    table.emplace("x-acemq-id", id);
    table.emplace("x-acemq-correlation", id);
    table.emplace("in an array", FieldArray{id, FieldTable{{"id", id}}});
    return table;
}

TEST_CASE("packed headers go out as the map their table makes, byte for byte") {
    const std::string id = "3f2b8c1e-9d4a-4b7e-8f6a-0c5d2e1b7a90";
    for (const FieldTable& table : {headers_with_id(id), FieldTable{}, FieldTable{{"only", FieldValue()}}}) {
        const acemq::PackedTable packed(table, id);
        const Bytes from_table = map_bytes([&](auto& out) { message_pack::pack_table(out, table); });
        CHECK(map_bytes([&](auto& out) { message_pack::pack_table(out, packed.view()); }) == from_table);
    }
    // A value alone, by the same writer: an array of a str 8 and a float64, big-endian.
    Bytes expected = bytes_of({0x92, 0xd9, 0x24});
    for (const char c : id) expected.push_back(static_cast<std::byte>(c));
    for (const int b : {0xcb, 0x3f, 0xe0, 0, 0, 0, 0, 0, 0}) expected.push_back(static_cast<std::byte>(b));
    CHECK(map_bytes([&](auto& out) { message_pack::pack_value(out, FieldValue(FieldArray{id, 0.5})); }) == expected);
}

TEST_CASE("a map read straight into the packed form is what its table packs, byte for byte") {
    const std::string id = "3f2b8c1e-9d4a-4b7e-8f6a-0c5d2e1b7a90";
    const FieldTable table = headers_with_id(id);
    const MapOf written([&](auto& out) { message_pack::pack_table(out, table); });
    const acemq::PackedTable read = message_pack::read_packed_table(written.map(), "headers", id);
    CHECK(read.packed() == acemq::PackedTable(table, id).packed());
    CHECK(read.message_id() == id);
    CHECK(read == table);
    // More entries than the writer makes room for up front: it grows.
    FieldTable many;
    for (int i = 0; i < 100; ++i) many.emplace("x-app-" + std::to_string(1000 + i), std::string(40, 'v'));
    const MapOf many_written([&](auto& out) { message_pack::pack_table(out, many); });
    CHECK(message_pack::read_packed_table(many_written.map(), "headers", id).packed() ==
          acemq::PackedTable(many, id).packed());
    // Packed for no id, the id's texts stay texts: more bytes, the same entries.
    const acemq::PackedTable for_none = message_pack::read_packed_table(written.map(), "headers", "");
    CHECK(for_none.packed() == acemq::PackedTable(table).packed());
    CHECK(for_none.packed().size() > read.packed().size() + 2 * id.size());
    CHECK(for_none == table);
}

TEST_CASE("a map whose names are out of order is read in order; a name twice or not a str is refused") {
    const MapOf backwards([](auto& out) {
        out.pack_map(3);
        for (const char* name : {"c", "b", "a"}) {
            message_pack::pack_text(out, name);
            message_pack::pack_text(out, std::string("value of ") + name);
        }
    });
    const acemq::PackedTable read = message_pack::read_packed_table(backwards.map(), "headers", "");
    const FieldTable expected{{"a", "value of a"}, {"b", "value of b"}, {"c", "value of c"}};
    CHECK(read == expected);
    CHECK(read.packed() == acemq::PackedTable(expected).packed());

    const MapOf twice_apart([](auto& out) {
        out.pack_map(3);
        for (const char* name : {"b", "c", "b"}) {
            message_pack::pack_text(out, name);
            out.pack_true();
        }
    });
    CHECK_THAT(what_of<message_pack::Malformed>(
                   [&] { (void)message_pack::read_packed_table(twice_apart.map(), "headers", ""); }),
               Catch::Equals("headers names \"b\" twice"));

    const MapOf number_key([](auto& out) {
        out.pack_map(2);
        message_pack::pack_text(out, "a");
        out.pack_true();
        out.pack_int32(7);
        out.pack_true();
    });
    CHECK_THAT(what_of<message_pack::Malformed>(
                   [&] { (void)message_pack::read_packed_table(number_key.map(), "headers", ""); }),
               Catch::Equals("field headers name should be a str, is integer"));
    const MapOf not_a_map([](auto& out) { out.pack_array(0); });
    CHECK_THAT(what_of<message_pack::Malformed>(
                   [&] { (void)message_pack::read_packed_table(not_a_map.map(), "headers", ""); }),
               Catch::Equals("field headers should be a map, is array"));
}

TEST_CASE("read_signed takes either msgpack integer that fits 64 signed bits") {
    msgpack::sbuffer buffer;
    message_pack::Packer out(buffer);
    out.pack_array(4);
    out.pack_int64(std::numeric_limits<std::int64_t>::min());
    out.pack_uint64(std::numeric_limits<std::int64_t>::max());
    out.pack_uint64(std::numeric_limits<std::uint64_t>::max());
    message_pack::pack_text(out, "7");
    const Bytes bytes = bytes_of(buffer);
    const msgpack::object_handle handle = message_pack::unpack_checked(bytes, "record");
    const msgpack::object* values = handle.get().via.array.ptr;
    CHECK(message_pack::read_signed(values[0], "low") == std::numeric_limits<std::int64_t>::min());
    CHECK(message_pack::read_signed(values[1], "high") == std::numeric_limits<std::int64_t>::max());
    CHECK_THAT(what_of<message_pack::Malformed>([&] { message_pack::read_signed(values[2], "offset"); }),
               Catch::Equals("offset 18446744073709551615 does not fit 64 signed bits"));
    CHECK_THAT(what_of<message_pack::Malformed>([&] { message_pack::read_signed(values[3], "offset"); }),
               Catch::Equals("field offset should be an integer, is str"));
}

}  // namespace
