#include "postgres/placeholders.hpp"

namespace acemq::postgres {

namespace {

bool identifier_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
}

// The length of a dollar-quote delimiter ($$ or $tag$) starting at `at`, or 0 if none does.
std::size_t dollar_tag(std::string_view text, std::size_t at) {
    std::size_t end = at + 1;
    if (end < text.size() && (text[end] >= '0' && text[end] <= '9')) return 0;  // $1 is a parameter
    while (end < text.size() && identifier_char(text[end])) ++end;
    return end < text.size() && text[end] == '$' ? end - at + 1 : 0;
}

}  // namespace

Rewritten rewrite_placeholders(std::string_view statement) {
    Rewritten out;
    out.text.reserve(statement.size() + 16);
    std::size_t i = 0;
    // Copies text[i, end) unchanged and moves past it.
    auto copy_to = [&](std::size_t end) {
        out.text.append(statement.substr(i, end - i));
        i = end;
    };
    while (i < statement.size()) {
        const char c = statement[i];
        const bool word_before = i > 0 && identifier_char(statement[i - 1]);
        if (c == '?') {
            out.text += '$' + std::to_string(++out.parameters);
            ++i;
        } else if (c == '\'') {
            // E'...' allows backslash escapes; '' is a quote inside any literal.
            const bool escapes = i > 0 && (statement[i - 1] == 'E' || statement[i - 1] == 'e') &&
                                 !(i > 1 && identifier_char(statement[i - 2]));
            std::size_t end = i + 1;
            while (end < statement.size() && statement[end] != '\'') end += escapes && statement[end] == '\\' ? 2 : 1;
            copy_to(std::min(end + 1, statement.size()));
        } else if (c == '"') {
            const auto end = statement.find('"', i + 1);
            copy_to(end == std::string_view::npos ? statement.size() : end + 1);
        } else if (c == '-' && statement.substr(i, 2) == "--") {
            const auto end = statement.find('\n', i);
            copy_to(end == std::string_view::npos ? statement.size() : end + 1);
        } else if (c == '/' && statement.substr(i, 2) == "/*") {
            std::size_t end = i + 2;
            for (int depth = 1; depth > 0 && end < statement.size();) {
                if (statement.substr(end, 2) == "/*") {
                    ++depth;
                    end += 2;
                } else if (statement.substr(end, 2) == "*/") {
                    --depth;
                    end += 2;
                } else {
                    ++end;
                }
            }
            copy_to(std::min(end, statement.size()));
        } else if (c == '$' && !word_before && dollar_tag(statement, i) > 0) {
            const auto tag = statement.substr(i, dollar_tag(statement, i));
            const auto close = statement.find(tag, i + tag.size());
            copy_to(close == std::string_view::npos ? statement.size() : close + tag.size());
        } else {
            out.text += c;
            ++i;
        }
    }
    return out;
}

}  // namespace acemq::postgres
