// Avro, our own reader and writer (lib/codec/avro_schema.cpp) beside Debian's libavro (the
// Apache Avro C library, libavro-dev 1.11.1) in the same run: the family's 3-field
// OrderPlaced (codec-interop-fixtures.json) encoded from and decoded into a C++ struct both
// ways, the same bytes. libavro goes through its generic value interface, reusing one value
// and one memory writer/reader across calls, as a program wrapping it would. Then the
// family's resolution case that needs a reader's default (avro-resolution-fixtures.json,
// field-removed-by-the-writer), asked of both: why docs/avro.md chose our own. A bench-only
// dependency: the library never links libavro.
//
//   build-bench/bench/avro_bench
#include <acemq/acemq.hpp>

#include <avro.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "measure.hpp"

namespace {

struct OrderPlaced {
    std::string order_id;
    std::int64_t total_cents;
    std::string tenant;
};

constexpr const char* schema_json =
    R"({"type":"record","name":"OrderPlaced","namespace":"org.acemq.test","fields":[{"name":"orderId","type":"string"},{"name":"totalCents","type":"long"},{"name":"tenant","type":"string"}]})";

[[noreturn]] void libavro_failed(const char* what) {
    std::fprintf(stderr, "avro_bench: libavro %s: %s\n", what, avro_strerror());
    std::exit(1);
}

// One OrderPlaced through libavro's generic interface, its value and buffers reused.
class Libavro {
public:
    Libavro() {
        if (avro_schema_from_json_length(schema_json, std::strlen(schema_json), &schema_) != 0)
            libavro_failed("schema");
        iface_ = avro_generic_class_from_schema(schema_);
        if (iface_ == nullptr || avro_generic_value_new(iface_, &value_) != 0) libavro_failed("value");
        writer_ = avro_writer_memory(buffer_, sizeof buffer_);
        reader_ = avro_reader_memory(buffer_, 0);
    }
    ~Libavro() {
        avro_reader_free(reader_);
        avro_writer_free(writer_);
        avro_value_decref(&value_);
        avro_value_iface_decref(iface_);
        avro_schema_decref(schema_);
    }

    std::string encode(const OrderPlaced& order) {
        avro_value_t field;
        avro_value_get_by_index(&value_, 0, &field, nullptr);
        avro_value_set_string_len(&field, order.order_id.c_str(), order.order_id.size() + 1);
        avro_value_get_by_index(&value_, 1, &field, nullptr);
        avro_value_set_long(&field, order.total_cents);
        avro_value_get_by_index(&value_, 2, &field, nullptr);
        avro_value_set_string_len(&field, order.tenant.c_str(), order.tenant.size() + 1);
        avro_writer_reset(writer_);
        if (avro_value_write(writer_, &value_) != 0) libavro_failed("write");
        return std::string(buffer_, static_cast<std::size_t>(avro_writer_tell(writer_)));
    }

    OrderPlaced decode(const std::string& body) {
        avro_reader_memory_set_source(reader_, body.data(), static_cast<std::int64_t>(body.size()));
        if (avro_value_read(reader_, &value_) != 0) libavro_failed("read");
        OrderPlaced order;
        avro_value_t field;
        const char* text = nullptr;
        std::size_t size = 0;
        avro_value_get_by_index(&value_, 0, &field, nullptr);
        avro_value_get_string(&field, &text, &size);
        order.order_id.assign(text, size - 1);  // libavro's sizes count the terminating NUL
        avro_value_get_by_index(&value_, 1, &field, nullptr);
        avro_value_get_long(&field, &order.total_cents);
        avro_value_get_by_index(&value_, 2, &field, nullptr);
        avro_value_get_string(&field, &text, &size);
        order.tenant.assign(text, size - 1);
        return order;
    }

private:
    avro_schema_t schema_ = nullptr;
    avro_value_iface_t* iface_ = nullptr;
    avro_value_t value_{};
    char buffer_[256]{};
    avro_writer_t writer_ = nullptr;
    avro_reader_t reader_ = nullptr;
};

// The family's field-removed-by-the-writer case: can libavro resolve it onto the reader's
// schema, filling currency from the reader's default?
void libavro_resolution() {
    const char* writer =
        R"({"type":"record","name":"ResolutionOrder","namespace":"org.acemq.amqp.test.avro","fields":[{"name":"orderId","type":"string"},{"name":"total","type":"int"}]})";
    const char* reader =
        R"({"type":"record","name":"ResolutionOrder","namespace":"org.acemq.amqp.test.avro","fields":[{"name":"orderId","type":"string"},{"name":"total","type":"int"},{"name":"currency","type":"string","default":"GBP"}]})";
    avro_schema_t w = nullptr;
    avro_schema_t r = nullptr;
    if (avro_schema_from_json_length(writer, std::strlen(writer), &w) != 0 ||
        avro_schema_from_json_length(reader, std::strlen(reader), &r) != 0)
        libavro_failed("resolution schemas");
    avro_value_iface_t* resolver = avro_resolved_writer_new(w, r);
    if (resolver == nullptr) {
        std::printf("  libavro:    refuses to resolve it: \"%s\"\n", avro_strerror());
    } else {
        std::puts("  libavro:    resolves it");
        avro_value_iface_decref(resolver);
    }
    avro_schema_decref(w);
    avro_schema_decref(r);
}

}  // namespace

int main() {
    const OrderPlaced order{"o-1", 4250, "acme"};
    const acemq::AvroCodec codec(schema_json);
    Libavro libavro;

    const acemq::Encoded ours_body = acemq::encode(codec, order);
    const std::string theirs_body = libavro.encode(order);
    const std::string_view ours_text(reinterpret_cast<const char*>(ours_body.body.data()), ours_body.body.size());
    std::printf("Avro, one OrderPlaced (3 fields), %zu bytes\n", ours_body.body.size());
    if (ours_text != theirs_body) {
        std::fputs("avro_bench: acemq and libavro wrote different bodies; the comparison would be unfair\n", stderr);
        return 1;
    }
    if (libavro.decode(theirs_body).tenant != "acme" ||
        acemq::decode<OrderPlaced>(codec, ours_body.body, ours_body.content_type).tenant != "acme") {
        std::fputs("avro_bench: a body did not read back as the OrderPlaced written\n", stderr);
        return 1;
    }

    const double ours_encode = bench::ns_per_op([&] { bench::keep(acemq::encode(codec, order)); });
    const double theirs_encode = bench::ns_per_op([&] { bench::keep(libavro.encode(order)); });
    const double ours_decode = bench::ns_per_op(
        [&] { bench::keep(acemq::decode<OrderPlaced>(codec, ours_body.body, ours_body.content_type)); });
    const double theirs_decode = bench::ns_per_op([&] { bench::keep(libavro.decode(theirs_body)); });

    bench::report_ratio("encode: acemq AvroCodec / libavro generic value + write", ours_encode, theirs_encode);
    bench::report_ratio("decode: acemq AvroCodec / libavro read + generic value", ours_decode, theirs_decode);
    bench::record({.name = "Avro encode of a 3-field struct",
                   .ours = ours_encode,
                   .against = "libavro generic value + write",
                   .underneath = theirs_encode,
                   .unit = "ns/op"});
    bench::record({.name = "Avro decode of a 3-field struct",
                   .ours = ours_decode,
                   .against = "libavro read + generic value",
                   .underneath = theirs_decode,
                   .unit = "ns/op"});

    std::puts("resolution, the family's field-removed-by-the-writer case (a reader default):");
    std::puts("  acemq:      resolves it (currency = \"GBP\"), tests/contract/test_avro_codec.cpp");
    libavro_resolution();
}
