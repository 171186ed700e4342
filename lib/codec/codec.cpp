#include <acemq/codec.hpp>

#include <algorithm>
#include <exception>
#include <new>

#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/msgpack_codec.hpp>
#include "quoted_text.hpp"
#include "scalar_writer.hpp"

namespace acemq {

namespace {

// The sender wrote the content type: shown escaped and bounded (quoted_text.hpp).
std::string describe_content_type(std::string_view content_type) {
    return content_type.empty() ? "an untyped message" : detail::shown_text(content_type);
}

// "an Order", "a Payment": error messages name the type in a sentence.
std::string with_article(std::string_view type) {
    const bool vowel = !type.empty() && std::string_view("AEIOaeio").find(type.front()) != std::string_view::npos;
    return (vowel ? "an " : "a ") + std::string(type);
}

// The codecs of a composite, or the one codec, as "MsgpackCodec, JsonCodec".
std::string codec_names(const Codec& codec) {
    const auto* composite = dynamic_cast<const CompositeCodec*>(&codec);
    if (composite == nullptr) return std::string(codec.name());
    std::string names;
    for (const auto& each : composite->codecs()) {
        if (!names.empty()) names += ", ";
        names += each->name();
    }
    return names;
}

// Which codec reads a message of this content type: the composite's claimant, or the codec.
const Codec* reader_of(const Codec& codec, std::string_view content_type) {
    const auto* composite = dynamic_cast<const CompositeCodec*>(&codec);
    return composite != nullptr ? composite->claimant(content_type) : &codec;
}

std::string invalid_utf8_message(std::string_view what, std::size_t at) {
    return "acemq: " + std::string(what) + " is not valid UTF-8 (bad byte at offset " + std::to_string(at) + ")";
}

}  // namespace

namespace detail {

void rethrow_as_encode_error(std::string_view type, std::string_view codec) {
    const std::string context = "acemq: cannot encode " + with_article(type) + " with " + std::string(codec) + ": ";
    try {
        throw;
    } catch (const std::bad_alloc&) {
        throw;  // running out of memory says nothing about the value; let it through as is
    } catch (const StoreUnavailableError&) {
        throw;  // nor does a store that failed (claim check's), which another try may find back
    } catch (const std::exception& e) {
        throw EncodeError(context + std::string(without_prefix(e.what())));
    }
}

// Another codec would carry such a body as its bytes (base64 text in JSON), which no other
// member reads as the message it is: refused rather than sent where it cannot be read.
void require_body_format(const Codec& codec, const BodyFormat& format) {
    if (codec.content_type() == format.content_type) return;
    throw EncodeError("acemq: it is a message body only as " + std::string(format.content_type) + ", which " +
                      std::string(codec.name()) + " does not write (it writes " + std::string(codec.content_type()) +
                      "); publish it with .codec = a " + std::string(format.codec) +
                      ", or as a field of a struct to carry its bytes");
}

void rethrow_as_decode_error(std::string_view type, std::string_view content_type, const Codec& codec) {
    const std::string context =
        "acemq: cannot decode " + with_article(type) + " from " + describe_content_type(content_type) + ": ";
    try {
        throw;
    } catch (const std::bad_alloc&) {
        throw;  // running out of memory says nothing about the body; the engine parks it as is
    } catch (const StoreUnavailableError&) {
        throw;  // nor does a store that failed: the engine retries it (docs/wire-contract.md §8.2)
    } catch (const std::exception& e) {
        // BytesCodec claims any typed message, so a content type nothing else reads arrives
        // as bytes and fails as "expected a record, found bytes"; say what really happened.
        if (dynamic_cast<const BytesCodec*>(reader_of(codec, content_type)) != nullptr)
            throw DecodeError(context + "no codec reads " + describe_content_type(content_type) +
                              " but as raw bytes, which " + with_article(type) +
                              " cannot be made from (the codecs known are " + codec_names(codec) +
                              "); consume it as acemq::Bytes, publish it with a content type one of "
                              "them reads, or add a codec for it");
        throw DecodeError(context + std::string(without_prefix(e.what())));
    }
}

namespace {
// Content types are ASCII (RFC 9110 tokens), so ASCII folding is the whole rule; it is also
// inlined, where std::tolower is a call per letter that the composite's choice of codec
// for every delivery pays for.
constexpr char ascii_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool same_letter(char a, char b) noexcept { return ascii_lower(a) == ascii_lower(b); }
}  // namespace

bool starts_with_ci(std::string_view text, std::string_view prefix) noexcept {
    // The bytes as they are first: the family writes its content types in lower case, and one
    // memcmp of them costs a tenth of the compare letter by letter, on every delivery.
    return text.starts_with(prefix) ||
           (text.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), text.begin(), same_letter));
}

bool contains_ci(std::string_view text, std::string_view part) noexcept {
    // std::search rather than std::ranges::search: clang 14 cannot compile libstdc++ 12's
    // ranges::subrange, and the fuzz build (tests/fuzz) uses clang.
    return std::search(text.begin(), text.end(), part.begin(), part.end(), same_letter) != text.end() || part.empty();
}

}  // namespace detail

std::vector<std::byte> Codec::encode(ValueSource source) const {
    ValueBuilder builder;
    source.write_to(builder);
    return encode(builder.take());
}

// ---- TextCodec ------------------------------------------------------------------------

bool TextCodec::can_decode(std::string_view content_type) const noexcept {
    return detail::starts_with_ci(content_type, "text/");
}

std::vector<std::byte> TextCodec::encode(ValueSource source) const {
    detail::ScalarWriter writer(Value::Kind::string, "acemq: TextCodec writes only strings, not ",
                                " values; use JsonCodec or MsgpackCodec for structured data");
    source.write_to(writer);
    const std::string_view text(reinterpret_cast<const char*>(writer.body.data()), writer.body.size());
    if (const auto bad = detail::invalid_utf8_at(text))
        throw EncodeError(invalid_utf8_message("the string", *bad) + "; send binary data with BytesCodec");
    return std::move(writer.body);
}

Value TextCodec::decode(std::span<const std::byte> body, std::string_view) const {
    std::string text(reinterpret_cast<const char*>(body.data()), body.size());
    if (const auto bad = detail::invalid_utf8_at(text))
        throw DecodeError(invalid_utf8_message("the text body", *bad) + "; a text/* message must be UTF-8");
    return Value(std::move(text));
}

// ---- BytesCodec -----------------------------------------------------------------------

bool BytesCodec::can_decode(std::string_view content_type) const noexcept { return !content_type.empty(); }

std::vector<std::byte> BytesCodec::encode(ValueSource source) const {
    detail::ScalarWriter writer(Value::Kind::bytes,
                                "acemq: BytesCodec writes only bytes (std::vector<std::byte>), not ", " values");
    source.write_to(writer);
    return std::move(writer.body);
}

Value BytesCodec::decode(std::span<const std::byte> body, std::string_view) const {
    return Value(Value::Bytes(body.begin(), body.end()));
}

// ---- CompositeCodec -------------------------------------------------------------------

CompositeCodec::CompositeCodec(std::vector<std::shared_ptr<const Codec>> codecs) : codecs_(std::move(codecs)) {
    if (codecs_.empty()) throw InvalidArgument("acemq: a CompositeCodec needs at least one codec; the first writes");
    if (std::ranges::find(codecs_, nullptr) != codecs_.end())
        throw InvalidArgument("acemq: a CompositeCodec was given a null codec");
}

std::string_view CompositeCodec::content_type() const noexcept { return codecs_.front()->content_type(); }

bool CompositeCodec::can_decode(std::string_view content_type) const noexcept {
    return std::ranges::any_of(codecs_, [&](const auto& codec) { return codec->can_decode(content_type); });
}

std::vector<std::byte> CompositeCodec::encode(ValueSource source) const { return codecs_.front()->encode(source); }

std::vector<std::byte> CompositeCodec::encode(const Value& value) const { return codecs_.front()->encode(value); }

const Codec* CompositeCodec::claimant(std::string_view content_type) const noexcept {
    const auto found =
        std::ranges::find_if(codecs_, [&](const auto& codec) { return codec->can_decode(content_type); });
    return found == codecs_.end() ? nullptr : found->get();
}

namespace {

// What each codec made of `content_type`, in order, up to the one that claimed it and failed
// with `failure` (or all of them when none claimed it). Written only once a decode has failed.
std::string tried_codecs(const std::vector<std::shared_ptr<const Codec>>& codecs, const Codec* reader,
                         std::string_view content_type, std::string_view failure) {
    std::string tried;
    for (const auto& codec : codecs) {
        if (!tried.empty()) tried += "; ";
        tried += codec->name();
        tried += ": ";
        if (codec.get() == reader) return tried += failure;
        tried += "does not read " + describe_content_type(content_type);
    }
    return tried;
}

}  // namespace

namespace {

// `read` asked of the codec that claims the content type; the first claimant decides (see
// the class comment), the others are never asked.
template <class Read>
auto read_with_claimant(const std::vector<std::shared_ptr<const Codec>>& codecs, const Codec* reader,
                        std::string_view content_type, Read read) {
    if (reader == nullptr)
        throw DecodeError("acemq: no codec could read this message. Tried " +
                          tried_codecs(codecs, nullptr, content_type, {}));
    try {
        return read(*reader);
    } catch (const DecodeError& e) {
        throw DecodeError("acemq: no codec could read this message. Tried " +
                          tried_codecs(codecs, reader, content_type, without_prefix(e.what())));
    }
}

}  // namespace

Value CompositeCodec::decode(std::span<const std::byte> body, std::string_view content_type) const {
    return read_with_claimant(codecs_, claimant(content_type), content_type,
                              [&](const Codec& reader) { return reader.decode(body, content_type); });
}

std::unique_ptr<ValueReader> CompositeCodec::reader(std::span<const std::byte> body,
                                                    std::string_view content_type) const {
    return read_with_claimant(codecs_, claimant(content_type), content_type,
                              [&](const Codec& reader) { return reader.reader(body, content_type); });
}

FieldNames CompositeCodec::field_names(std::string_view content_type) const noexcept {
    const Codec* reader = claimant(content_type);
    return reader != nullptr ? reader->field_names(content_type) : FieldNames::as_is;
}

Scalars CompositeCodec::scalars(std::string_view content_type) const noexcept {
    const Codec* reader = claimant(content_type);
    return reader != nullptr ? reader->scalars(content_type) : Scalars::typed;
}

std::shared_ptr<const Codec> default_codec_reading(std::vector<std::shared_ptr<const Codec>> more) {
    std::vector<std::shared_ptr<const Codec>> codecs{std::make_shared<const JsonCodec>(),
                                                     std::make_shared<const MsgpackCodec>()};
    // Before TextCodec, which claims every text/* type: text/yaml, text/toml and text/xml are theirs.
    codecs.insert(codecs.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    codecs.push_back(std::make_shared<const TextCodec>());
    codecs.push_back(std::make_shared<const BytesCodec>());
    return std::make_shared<const CompositeCodec>(std::move(codecs));
}

std::shared_ptr<const Codec> default_codec() {
    static const std::shared_ptr<const Codec> codec = default_codec_reading({});
    return codec;
}

}  // namespace acemq
