#include "quoted_text.hpp"

#include <acemq/value.hpp>

namespace acemq::detail {

namespace {

void append_escaped_byte(std::string& out, unsigned char c) {
    constexpr std::string_view hex = "0123456789abcdef";
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
}

// `text` is well-formed UTF-8: only ASCII needs escaping.
void append_escaped_utf8(std::string& out, std::string_view text, bool quoted) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f)
            append_escaped_byte(out, byte);
        else if (c == '\\' || (quoted && c == '"'))
            out += '\\', out += c;
        else
            out += c;
    }
}

}  // namespace

std::size_t character_boundary(std::string_view text, std::size_t size) {
    if (size >= text.size()) return text.size();
    // At most three continuation bytes follow a character's first byte.
    std::size_t cut = size;
    for (int back = 0; back < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80; ++back) --cut;
    return cut;
}

namespace {

std::string escaped_and_bounded(std::string_view text, std::size_t limit, bool quoted) {
    std::string_view kept = text.substr(0, character_boundary(text, limit));
    std::string out;
    out.reserve(kept.size() + 2);
    if (quoted) out += '"';
    while (!kept.empty()) {
        const std::size_t bad = invalid_utf8_at(kept).value_or(kept.size());
        append_escaped_utf8(out, kept.substr(0, bad), quoted);
        if (bad == kept.size()) break;
        append_escaped_byte(out, static_cast<unsigned char>(kept[bad]));
        kept.remove_prefix(bad + 1);
    }
    if (text.size() > limit) out += "…";
    if (quoted) out += '"';
    if (text.size() > limit) out += " (" + std::to_string(text.size()) + " bytes)";
    return out;
}

}  // namespace

std::string in_quotes(std::string_view text, std::size_t limit) { return escaped_and_bounded(text, limit, true); }

std::string shown_text(std::string_view text, std::size_t limit) { return escaped_and_bounded(text, limit, false); }

}  // namespace acemq::detail
