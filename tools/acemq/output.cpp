#include "output.hpp"

#include <algorithm>
#include <cinttypes>
#include <ctime>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>

#include <CLI/CLI.hpp>
#include <acemq/inproc.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/management.hpp>
#include <acemq/replay.hpp>
#include <acemq/url.hpp>
#include "load/options.hpp"

namespace acemq::cli {
namespace {

// The length of the UTF-8 character starting at text[at], or 0 when none does (a stray
// continuation byte, a truncated or overlong sequence, a surrogate, past U+10FFFF).
std::size_t utf8_length(std::string_view text, std::size_t at) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(at);
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF)
        length = 2, code = lead & 0x1F;
    else if (lead >= 0xE0 && lead <= 0xEF)
        length = 3, code = lead & 0x0F;
    else if (lead >= 0xF0 && lead <= 0xF4)
        length = 4, code = lead & 0x07;
    else
        return 0;
    if (at + length > text.size()) return 0;
    for (std::size_t i = 1; i < length; ++i) {
        if ((byte(at + i) & 0xC0) != 0x80) return 0;
        code = (code << 6) | (byte(at + i) & 0x3F);
    }
    if ((length == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) || (length == 4 && code < 0x10000) ||
        code > 0x10FFFF)
        return 0;
    return length;
}

// Characters, not bytes: what a terminal gives a column (wide characters aside).
std::size_t characters(std::string_view text) {
    std::size_t count = 0;
    for (unsigned char c : text)
        if ((c & 0xC0) != 0x80) ++count;
    return count;
}

std::string hex(std::span<const std::byte> bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (std::byte b : bytes) {
        out += digits[std::to_integer<unsigned>(b) >> 4];
        out += digits[std::to_integer<unsigned>(b) & 0x0F];
    }
    return out;
}

std::string padded(const std::string& cell, std::size_t width, Align align) {
    const std::string fill(width - std::min(width, characters(cell)), ' ');
    return align == Align::right ? fill + cell : cell + fill;
}

std::string scalar_json(const Value& value) {
    const std::vector<std::byte> text = JsonCodec().encode(value);
    return std::string(reinterpret_cast<const char*>(text.data()), text.size());
}

void write_json(std::string& out, const Value& value, int indent) {
    const std::string inner(static_cast<std::size_t>(indent + 1) * 2, ' ');
    const std::string closing(static_cast<std::size_t>(indent) * 2, ' ');
    const auto member = [&](const std::string& key, const Value& element, bool first) {
        out += first ? "\n" : ",\n";
        out += inner + json_quoted(is_utf8(key) ? key : printable(key)) + ": ";
        write_json(out, element, indent + 1);
    };
    switch (value.kind()) {
    case Value::Kind::string:
        out += json_quoted(is_utf8(value.as_string()) ? value.as_string() : printable(value.as_string()));
        return;
    case Value::Kind::bytes: out += json_quoted(hex(value.as_bytes())); return;
    case Value::Kind::array: {
        if (value.as_array().empty()) {
            out += "[]";
            return;
        }
        out += "[";
        bool first = true;
        for (const Value& element : value.as_array()) {
            out += first ? "\n" : ",\n";
            out += inner;
            write_json(out, element, indent + 1);
            first = false;
        }
        out += "\n" + closing + "]";
        return;
    }
    case Value::Kind::map:
    case Value::Kind::record: {
        const bool is_map = value.kind() == Value::Kind::map;
        if (is_map ? value.as_map().empty() : value.as_record().empty()) {
            out += "{}";
            return;
        }
        out += "{";
        bool first = true;
        if (is_map) {
            for (const auto& [key, element] : value.as_map()) {
                // msgpack allows any key; JSON only text, so others are shown as their JSON.
                member(key.kind() == Value::Kind::string ? key.as_string() : pretty_json(key), element, first);
                first = false;
            }
        } else {
            for (const auto& [key, element] : value.as_record()) {
                member(key, element, first);
                first = false;
            }
        }
        out += "\n" + closing + "}";
        return;
    }
    default: out += scalar_json(value); return;
    }
}

// What to do, by what went wrong; the library's own sentence comes first.
std::string connection_hint(const Context& context) {
    return "check that the broker is running and reachable at " +
           (context.url.empty() ? std::string("the URL") : redacted_url(context.url)) +
           " (--url or ACEMQ_URL), or give a longer --timeout";
}

}  // namespace

std::string printable(std::string_view text, bool keep_lines) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t at = 0; at < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[at]);
        const std::size_t length = utf8_length(text, at);
        if (length > 1) {
            out.append(text.substr(at, length));
            at += length;
            continue;
        }
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += keep_lines ? "\n" : "\\n";
        else if (c == '\t')
            out += keep_lines ? "\t" : "\\t";
        else if (length == 1 && c >= 0x20 && c != 0x7F)
            out += static_cast<char>(c);
        else {
            char escaped[5];
            std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
            out += escaped;
        }
        ++at;
    }
    return out;
}

bool is_utf8(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = utf8_length(text, at);
        if (length == 0) return false;
        at += length;
    }
    return true;
}

std::string quoted_name(std::string_view name) { return "\"" + printable(name) + "\""; }

bool is_text(std::string_view text) {
    for (unsigned char c : text)
        if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7F) return false;
    return is_utf8(text);
}

std::string cut(std::string_view text, std::size_t width) {
    if (characters(text) <= width) return std::string(text);
    std::string out;
    std::size_t shown = 0;
    for (std::size_t at = 0; at < text.size() && shown + 1 < width; ++shown) {
        std::size_t length = utf8_length(text, at);
        if (length == 0) length = 1;
        out.append(text.substr(at, length));
        at += length;
    }
    return out + "…";
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add(std::vector<std::string> cells) {
    if (cells.size() != columns_.size())
        throw UsageError("acemq: a table row of " + std::to_string(cells.size()) + " cells for " +
                         std::to_string(columns_.size()) + " columns");
    for (std::size_t i = 0; i < cells.size(); ++i) cells[i] = cut(printable(cells[i]), columns_[i].max_width);
    rows_.push_back(std::move(cells));
}

void Table::print(std::FILE* out) const {
    std::vector<std::size_t> widths;
    for (const Column& column : columns_) widths.push_back(characters(column.title));
    for (const auto& row : rows_)
        for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], characters(row[i]));
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const bool last = i + 1 == cells.size();
            // The last column is not padded on the left-aligned side: no trailing blanks.
            text +=
                last && columns_[i].align == Align::left ? cells[i] : padded(cells[i], widths[i], columns_[i].align);
            if (!last) text += "  ";
        }
        std::fprintf(out, "%s\n", text.c_str());
    };
    std::vector<std::string> titles;
    for (const Column& column : columns_) titles.push_back(column.title);
    line(titles);
    for (const auto& row : rows_) line(row);
}

std::string count_text(std::uint64_t count) { return std::to_string(count); }

std::string yes_no(bool flag) { return flag ? "yes" : "no"; }

std::string bytes_text(std::uint64_t bytes) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    double amount = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (amount >= 1024 && unit + 1 < std::size(units)) amount /= 1024, ++unit;
    char text[32];
    std::snprintf(text, sizeof text, "%.1f %s", amount, units[unit]);
    return text;
}

std::string age_text(std::optional<std::chrono::milliseconds> age) {
    if (!age) return "-";
    const std::int64_t ms = std::max<std::int64_t>(0, age->count());
    const std::int64_t s = ms / 1000;
    char text[32];
    if (ms < 1000)
        std::snprintf(text, sizeof text, "%" PRId64 "ms", ms);
    else if (s < 60)
        std::snprintf(text, sizeof text, "%" PRId64 "s", s);
    else if (s < 3600)
        std::snprintf(text, sizeof text, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
    else if (s < 86400)
        std::snprintf(text, sizeof text, "%" PRId64 "h%02" PRId64 "m", s / 3600, s % 3600 / 60);
    else
        std::snprintf(text, sizeof text, "%" PRId64 "d%02" PRId64 "h", s / 86400, s % 86400 / 3600);
    return text;
}

std::string time_text(std::chrono::system_clock::time_point when) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

Value optional_value(const std::optional<std::int64_t>& value) { return value ? Value(*value) : Value(); }

Value to_value(const FieldValue& value) {
    return std::visit(
        [](const auto& held) -> Value {
            using T = std::decay_t<decltype(held)>;
            if constexpr (std::is_same_v<T, std::monostate>)
                return Value();
            else if constexpr (std::is_same_v<T, std::int32_t>)
                return Value(static_cast<std::int64_t>(held));
            else if constexpr (std::is_same_v<T, std::string>)
                return Value(is_utf8(held) ? held : printable(held));
            else if constexpr (std::is_same_v<T, Bytes>)
                return Value(hex(held));
            else if constexpr (std::is_same_v<T, FieldArray>) {
                Value::Array array;
                for (const FieldValue& element : held) array.push_back(to_value(element));
                return Value(std::move(array));
            } else if constexpr (std::is_same_v<T, FieldTable>)
                return to_value(held);
            else if constexpr (std::is_same_v<T, FieldTimestamp>)
                return Value(time_text(held));
            else
                return Value(held);
        },
        value.get());
}

Value to_value(const FieldTable& table) {
    Value::Map map;
    for (const auto& [name, value] : table) map.emplace_back(Value(name.str()), to_value(value));
    return Value(std::move(map));
}

std::string pretty_json(const Value& value, int indent) {
    std::string out;
    write_json(out, value, indent);
    return out;
}

void print_answer(const Context& context, const Table& table, const Value& document) {
    if (context.json)
        std::printf("%s\n", pretty_json(document).c_str());
    else
        table.print(stdout);
    std::fflush(stdout);
}

void print_note(const Context& context, const std::string& line) {
    std::FILE* out = context.json ? stderr : stdout;
    std::fprintf(out, "%s\n", line.c_str());
    std::fflush(out);
}

Exit report_failure(std::exception_ptr error, const Context& context) {
    const auto say = [](std::string_view what, const std::string& hint) {
        std::fprintf(stderr, "acemq: %s\n", printable(without_prefix(what), true).c_str());
        if (!hint.empty()) std::fprintf(stderr, "acemq: %s\n", hint.c_str());
    };
    try {
        std::rethrow_exception(error);
    } catch (const CommandFailed& failure) {
        say(failure.what(), "");
        return failure.exit();
    } catch (const ManagementError& failure) {
        switch (failure.reason()) {
        case ManagementError::Reason::not_found:
            say(failure.what(), "`acemq queues` and `acemq exchanges` list what there is");
            return Exit::not_found;
        case ManagementError::Reason::in_use:
            say(failure.what(), "stop its consumers first, or give --force");
            return Exit::refused;
        case ManagementError::Reason::disabled:
            say(failure.what(),
                "the broker refuses management calls (started with --no-management): restart it "
                "without that option to manage it");
            return Exit::refused;
        case ManagementError::Reason::access_refused:
            say(failure.what(), "check the credentials or CurveZMQ keys in --url or ACEMQ_URL");
            return Exit::refused;
        case ManagementError::Reason::unsupported: say(failure.what(), ""); return Exit::failed;
        case ManagementError::Reason::failed: say(failure.what(), ""); return Exit::failed;
        }
        return Exit::failed;
    } catch (const ConnectionError& failure) {
        // A transport refusing the login throws ConnectionError too (publish, tail and replay
        // open one), but the broker did answer: the credentials are what to fix.
        const std::string_view what = failure.what();
        if (what.find("cannot log in") != std::string_view::npos ||
            what.find("ACCESS_REFUSED") != std::string_view::npos) {
            say(what, "check the credentials or CurveZMQ keys in --url or ACEMQ_URL");
            return Exit::refused;
        }
        say(what, connection_hint(context));
        return Exit::unreachable;
    } catch (const inproc::DataFileError& failure) {
        const std::string_view what = failure.what();
        if (what.find("holds it") != std::string_view::npos || what.find("locked") != std::string_view::npos) {
            say(what,
                "a running acemq-broker holds this data file: manage it through that broker's "
                "zmq+tcp:// or zmq+ipc:// URL instead");
            return Exit::refused;
        }
        say(what, "");
        return Exit::failed;
    } catch (const ReplayError& failure) {
        say(failure.what(), "what was done before: " + failure.result().to_string());
        return Exit::failed;
    } catch (const InvalidArgument& failure) {
        say(failure.what(), "see `acemq --help` and `acemq COMMAND --help`");
        return Exit::usage;
    } catch (const UsageError& failure) {
        say(failure.what(), "see `acemq --help` and `acemq COMMAND --help`");
        return Exit::usage;
    } catch (const load::UsageProblem& failure) {
        // The duration reader is acemq-load's, and its sentences start with that program's name.
        std::string_view what = failure.what();
        if (what.starts_with("acemq-load: ")) what.remove_prefix(12);
        say(what, "see `acemq --help`");
        return Exit::usage;
    } catch (const std::exception& failure) {
        say(failure.what(), "");
        return Exit::failed;
    }
}

std::string exit_codes_help() {
    return "Exit status:\n"
           "  0  done\n"
           "  1  the check failed: not confirmed, drift, down\n"
           "  2  usage: the command line is wrong, or a purge or delete needs --yes\n"
           "  3  no broker, database or endpoint answered at the URL\n"
           "  4  the broker refused: credentials, keys, management disabled, queue in use\n"
           "  5  no such queue, exchange, record or file\n"
           "  6  anything else; the message says what\n";
}

}  // namespace acemq::cli
