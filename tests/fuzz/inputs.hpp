// One fuzz input through the code under test, shared by the libFuzzer targets (tests/fuzz/
// fuzz_*.cpp) and the seeded Catch2 loops of the reliability suite, so both check the same
// thing: an input ends in a value or a DecodeError (the envelope reader never throws, and
// its envelope renders back to headers that read back the same). Anything else escapes,
// and is the finding.
#pragma once

#include <acemq/claim_check.hpp>
#include <acemq/codec.hpp>
#include <acemq/encrypted_codec.hpp>
#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/field.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/msgpack_codec.hpp>
#include <acemq/value.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fuzz {

// Shapes a consumer might decode into: nested vectors, optionals and maps, integer keys
// (decimal text in JSON), bytes, a dynamic Value, a fixed-size array.
struct Line {
    std::string sku;
    std::int32_t qty = 0;
    std::optional<double> price;
};
struct Order {
    std::string id;
    std::vector<Line> lines;
    std::optional<std::string> note;
    std::map<std::string, std::int64_t> tags;
    std::vector<std::vector<std::uint8_t>> grid;
    bool urgent = false;
};
struct Deep {
    std::vector<std::optional<std::vector<std::map<std::int32_t, std::string>>>> nest;
    acemq::Value extra;
    acemq::Value::Bytes blob;
    std::array<std::uint16_t, 2> pair{};
};

// Reads an input as a stream of choices; past its end every choice is 0, so any input,
// the empty one included, describes something.
class Choices {
public:
    explicit Choices(std::span<const std::byte> input) : input_(input) {}

    bool done() const { return at_ >= input_.size(); }
    std::uint8_t byte() { return done() ? 0 : std::to_integer<std::uint8_t>(input_[at_++]); }
    std::size_t below(std::size_t n) { return n == 0 ? 0 : byte() % n; }
    std::uint64_t number() {
        std::uint64_t n = 0;
        for (std::size_t k = 1 + below(8); k > 0; --k) n = n << 8 | byte();
        return n;
    }
    std::string text() {
        std::string out;
        for (std::size_t n = below(24); n > 0; --n) out.push_back(static_cast<char>(byte()));
        return out;
    }

private:
    std::span<const std::byte> input_;
    std::size_t at_ = 0;
};

// The names the envelope reader looks for, so random tables reach its branches.
inline constexpr std::array<std::string_view, 16> header_names = {
    "x-acemq-attempt",     "x-acemq-causation",      "x-acemq-claim",
    "x-acemq-correlation", "x-acemq-error",          "x-acemq-first-seen",
    "x-acemq-id",          "x-acemq-origin",         "x-acemq-route",
    "x-acemq-route-id",    "x-acemq-route-position", "x-acemq-type",
    "x-acemq-version",     "x-acemq-unknown",        "traceparent",
    "tracestate"};

acemq::FieldTable field_table(Choices& in, int depth);

inline acemq::FieldValue field_value(Choices& in, int depth) {
    switch (in.below(12)) {
    case 0: return {};
    case 1: return in.byte() % 2 == 1;
    case 2: return static_cast<std::int32_t>(in.number());
    case 3: return static_cast<std::int64_t>(in.number());
    case 4: return in.number();
    case 5: {
        // NaN never equals itself, so an envelope holding one could not be compared with
        // what it renders back to. The reader takes no double apart: any other does as well.
        const double real = std::bit_cast<double>(in.number());
        return std::isnan(real) ? 0.5 : real;
    }
    case 6: return std::to_string(static_cast<std::int64_t>(in.number()));  // a decimal string
    case 7: {
        std::string text = in.text();
        acemq::Bytes bytes;
        for (char c : text) bytes.push_back(static_cast<std::byte>(c));
        return bytes;
    }
    case 8:
        if (depth > 0) {
            acemq::FieldArray array;
            for (std::size_t n = in.below(4); n > 0; --n) array.push_back(field_value(in, depth - 1));
            return array;
        }
        return {};
    case 9:
        if (depth > 0) return field_table(in, depth - 1);
        return {};
    default: return in.text();
    }
}

inline acemq::FieldTable field_table(Choices& in, int depth) {
    acemq::FieldTable table;
    for (std::size_t n = in.below(10); n > 0 && !in.done(); --n) {
        std::string name = in.byte() % 4 == 0 ? in.text() : std::string(header_names[in.below(header_names.size())]);
        table.insert_or_assign(std::move(name), field_value(in, depth));
    }
    return table;
}

// Changes `table` as the input says: values replaced by others of any kind, entries dropped
// or added. How fixture tables are mutated.
inline void mutate(acemq::FieldTable& table, Choices& in) {
    for (std::size_t n = 1 + in.below(4); n > 0 && !in.done(); --n) {
        switch (in.below(3)) {
        case 0:
            if (!table.empty()) {
                auto entry = table.begin() + static_cast<std::ptrdiff_t>(in.below(table.size()));
                entry->second = field_value(in, 2);
            }
            break;
        case 1:
            if (!table.empty()) table.erase(table.begin() + static_cast<std::ptrdiff_t>(in.below(table.size())));
            break;
        default: table.merge(field_table(in, 2));
        }
    }
}

// The envelope reader never throws, whatever the headers (docs/wire-contract.md §2.2–2.4),
// and what it reads can always be written back, and reads back the same: retrying,
// dead-lettering and parking republish it.
inline void read_headers(const acemq::FieldTable& headers, Choices& in) {
    const std::string routing_key = in.text();
    const std::string message_id = in.text();
    const acemq::Envelope envelope = acemq::read_envelope(headers, routing_key, message_id);
    const acemq::FieldTable rendered = acemq::render_headers(envelope);
    acemq::Envelope again = acemq::read_envelope(rendered, routing_key, message_id);
    // An id the first read made up is written to x-acemq-id, so the second read finds it given.
    again.id_generated = envelope.id_generated;
    if (again != envelope)
        throw std::logic_error("the envelope read from the headers rendered back to headers that read differently: " +
                               acemq::to_string(rendered));
}

inline void envelope_input(std::span<const std::byte> input) {
    Choices in(input);
    const acemq::FieldTable headers = field_table(in, 3);
    read_headers(headers, in);
}

// reflect.hpp reads struct field names with a g++ technique that clang 14 lacks, so a clang
// build (the libFuzzer targets) decodes into the structs' parts only; the seeded loops,
// built with g++, decode into the structs as well.
#if !defined(__clang__)
#define ACEMQ_FUZZ_STRUCTS 1
#endif

// The codec itself, and every shape through the typed helper.
inline void decode_input(const acemq::Codec& codec, std::span<const std::byte> body, std::string_view content_type) {
    const auto refused_or = [&]<class T>(std::type_identity<T>) {
        try {
            (void)acemq::decode<T>(codec, body, content_type);
        } catch (const acemq::DecodeError&) {
            // the one allowed failure
        }
    };
    try {
        (void)codec.decode(body, content_type);
    } catch (const acemq::DecodeError&) {
        // as above
    }
#ifdef ACEMQ_FUZZ_STRUCTS
    refused_or(std::type_identity<Order>{});
    refused_or(std::type_identity<Deep>{});
#endif
    refused_or(std::type_identity<std::vector<std::optional<std::int64_t>>>{});
    refused_or(std::type_identity<std::map<std::int32_t, std::vector<std::string>>>{});
    refused_or(std::type_identity<std::array<std::optional<acemq::Value::Bytes>, 2>>{});
    refused_or(std::type_identity<std::vector<std::map<std::string, std::vector<double>>>>{});
}

inline const acemq::MsgpackCodec& msgpack_codec() {
    static const acemq::MsgpackCodec codec;
    return codec;
}
inline const acemq::JsonCodec& json_codec() {
    static const acemq::JsonCodec codec;
    return codec;
}

// JSON under each of the two framings that wrap a codec: what reaches the framing's reader
// is mostly a mutated header, a wrong tag or a key no store has, and now and then the JSON.
inline std::shared_ptr<const acemq::Keyring> fuzz_keyring() {
    static const auto keyring =
        std::make_shared<const acemq::Keyring>(acemq::EncryptionKey("fuzz", acemq::Value::Bytes(32, std::byte{7})));
    return keyring;
}
inline const acemq::EncryptedCodec& encrypted_codec() {
    static const acemq::EncryptedCodec codec(std::make_shared<acemq::JsonCodec>(), fuzz_keyring());
    return codec;
}
// Memory only: a fuzzer must never reach the file system with a key it made up.
inline const std::shared_ptr<acemq::InMemoryClaimCheckStore>& claim_store() {
    static const auto store = std::make_shared<acemq::InMemoryClaimCheckStore>();
    return store;
}
inline const acemq::ClaimCheckCodec& claim_check_codec() {
    static const acemq::ClaimCheckCodec codec(std::make_shared<acemq::JsonCodec>(), claim_store(), 256);
    return codec;
}

inline void msgpack_input(std::span<const std::byte> body) {
    decode_input(msgpack_codec(), body, acemq::content_types::msgpack);
}
inline void json_input(std::span<const std::byte> body) { decode_input(json_codec(), body, ""); }
inline void encrypted_input(std::span<const std::byte> body) {
    decode_input(encrypted_codec(), body, acemq::content_types::encrypted);
}
inline void claim_check_input(std::span<const std::byte> body) {
    decode_input(claim_check_codec(), body, acemq::content_types::json);
}

// What a fuzzer cannot forge, made for it, so that its input reaches the reader behind: the
// input sealed as a plaintext with the ring's key (AES-GCM's tag cannot be guessed), and the
// input kept in the store as a claimed payload (a random key is never one the store holds).
inline void sealed_input(std::span<const std::byte> plaintext) {
    static const acemq::EncryptedCodec sealer(std::make_shared<acemq::BytesCodec>(), fuzz_keyring());
    encrypted_input(sealer.encode(acemq::Value(acemq::Value::Bytes(plaintext.begin(), plaintext.end()))));
}
inline void claimed_input(std::span<const std::byte> payload) {
    struct Forget {
        std::string key;
        ~Forget() { claim_store()->remove(key); }  // the store holds one payload at a time
    } kept{claim_store()->put(payload)};
    acemq::Value::Bytes body{std::byte{0xAC}, std::byte{0x01}, std::byte{0x01}};
    for (char c : kept.key) body.push_back(static_cast<std::byte>(c));
    claim_check_input(body);
}
// A sealed body with the input XORed over it from its first byte: any change at all must fail
// to open (a DecodeError), never read as a value; an input of zeros changes nothing and reads.
inline void tampered_input(std::span<const std::byte> mask) {
    static const acemq::Value::Bytes sealed = encrypted_codec().encode(acemq::Value("o-1"));
    acemq::Value::Bytes body = sealed;
    bool changed = false;
    for (std::size_t i = 0; i < mask.size() && i < body.size(); ++i) {
        body[i] ^= mask[i];
        changed = changed || mask[i] != std::byte{0};
    }
    try {
        (void)encrypted_codec().decode(body, acemq::content_types::encrypted);
    } catch (const acemq::DecodeError&) {
        if (!changed) throw std::logic_error("a sealed body nobody altered did not open");
        return;
    }
    if (changed) throw std::logic_error("an altered sealed body opened");
}

}  // namespace fuzz
