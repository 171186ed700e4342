// The contract layer's hot paths, side by side with the raw library underneath:
// msgpack encode/decode of a struct through acemq's codec against msgpack-c packing the
// same struct directly, the same struct through JsonCodec (what talking to the other
// languages costs), plus the envelope work every publish and every delivery does.
//
//   build/bench/contract_bench
#include <acemq/acemq.hpp>

#include <msgpack.hpp>

#include <cstdio>

#include "measure.hpp"

namespace {

struct Payment {
    std::string payment_id;
    std::int64_t amount_cents;
    std::string currency;
    std::vector<std::string> items;
    std::optional<std::string> note;
};

// The same shape for raw msgpack-c, which needs its macro; acemq's Payment needs none.
struct RawPayment {
    std::string payment_id;
    std::int64_t amount_cents;
    std::string currency;
    std::vector<std::string> items;
    msgpack::type::nil_t note;
    MSGPACK_DEFINE(payment_id, amount_cents, currency, items, note)
};

}  // namespace

int main() {
    const Payment payment{"p-1", 4250, "EUR", {"widget", "gasket"}, std::nullopt};
    const RawPayment raw_payment{"p-1", 4250, "EUR", {"widget", "gasket"}, {}};
    const acemq::MsgpackCodec codec;

    std::puts("msgpack, one Payment (5 fields, 2 items):");
    const double ours_encode = bench::ns_per_op([&] { bench::keep(acemq::encode(codec, payment)); });
    const double raw_encode = bench::ns_per_op([&] {
        msgpack::sbuffer buffer;
        msgpack::pack(buffer, raw_payment);
        bench::keep(buffer);
    });
    const acemq::Encoded encoded = acemq::encode(codec, payment);
    msgpack::sbuffer raw_buffer;
    msgpack::pack(raw_buffer, raw_payment);
    const double ours_decode =
        bench::ns_per_op([&] { bench::keep(acemq::decode<Payment>(codec, encoded.body, encoded.content_type)); });
    const double raw_decode = bench::ns_per_op([&] {
        msgpack::object_handle handle = msgpack::unpack(raw_buffer.data(), raw_buffer.size());
        bench::keep(handle.get().as<RawPayment>());
    });
    bench::report("acemq encode<Payment>", ours_encode);
    bench::report("msgpack-c pack (MSGPACK_DEFINE)", raw_encode);
    bench::report_ratio("encode", ours_encode, raw_encode);
    bench::record({.name = "msgpack encode of a 5-field struct",
                   .ours = ours_encode,
                   .against = "msgpack-c pack (MSGPACK_DEFINE)",
                   .underneath = raw_encode,
                   .unit = "ns/op"});
    // What a consumer runs by default: the composite picks the codec by content type.
    const auto consumer_codec = acemq::default_codec();
    const double default_decode = bench::ns_per_op(
        [&] { bench::keep(acemq::decode<Payment>(*consumer_codec, encoded.body, encoded.content_type)); });
    bench::report("acemq decode<Payment>", ours_decode);
    bench::report("acemq decode<Payment> via default_codec()", default_decode);
    bench::report("msgpack-c unpack + convert", raw_decode);
    bench::report_ratio("decode", ours_decode, raw_decode);
    bench::report_ratio("decode via default_codec()", default_decode, raw_decode);
    bench::record({.name = "msgpack decode of a 5-field struct",
                   .ours = ours_decode,
                   .against = "msgpack-c unpack + convert",
                   .underneath = raw_decode,
                   .unit = "ns/op",
                   .aim = 2});
    bench::record({.name = "msgpack decode of a 5-field struct via default_codec()",
                   .ours = default_decode,
                   .against = "msgpack-c unpack + convert",
                   .underneath = raw_decode,
                   .unit = "ns/op"});

    std::puts("JSON, the same Payment:");
    const acemq::JsonCodec json_codec;
    const double json_encode = bench::ns_per_op([&] { bench::keep(acemq::encode(json_codec, payment)); });
    const acemq::Encoded json_encoded = acemq::encode(json_codec, payment);
    const double json_decode = bench::ns_per_op(
        [&] { bench::keep(acemq::decode<Payment>(json_codec, json_encoded.body, json_encoded.content_type)); });
    bench::report("acemq JsonCodec encode<Payment>", json_encode);
    bench::report("acemq JsonCodec decode<Payment>", json_decode);

    std::puts("envelope:");
    const double build = bench::ns_per_op(
        [] { bench::keep(acemq::render_headers(acemq::Envelope::for_new_message("order.placed", "orders@pod-1"))); });
    const acemq::Headers wire = acemq::render_headers(acemq::Envelope::for_new_message("order.placed", "orders@pod-1"));
    const double read = bench::ns_per_op([&] { bench::keep(acemq::read_envelope(wire, "order.placed")); });
    const double uuid = bench::ns_per_op([] { bench::keep(acemq::new_uuid()); });
    bench::report("new envelope + render_headers (publish side)", build);
    bench::report("read_envelope (delivery side)", read);
    bench::report("new_uuid", uuid);
}
