// How every subcommand of `acemq` prints: a table for people by default, one JSON document
// for scripts under --json, what went wrong on stderr with what to do about it, and the exit
// status that goes with it. Internal to the program; one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/field.hpp>
#include <acemq/value.hpp>
#include "command_line.hpp"

namespace acemq::cli {

// A command's own "no": the exit status it means and the sentence for stderr, which says
// what to do ("... give --yes to purge without asking").
class CommandFailed : public acemq::Error {
public:
    CommandFailed(Exit exit, const std::string& what) : Error(what), exit_(exit) {}
    Exit exit() const noexcept { return exit_; }

private:
    Exit exit_;
};

// Text as it may reach a terminal: control characters (DEL too) and bytes that are not
// UTF-8 as \xNN, a backslash doubled, so that nothing a sender wrote moves the cursor or
// forges a line. Newline and tab are escaped too (\n, \t) unless `keep_lines`.
std::string printable(std::string_view text, bool keep_lines = false);
// A name in a sentence, quoted so that an empty one shows: "orders.new".
std::string quoted_name(std::string_view name);
// Whether `text` is well-formed UTF-8.
bool is_utf8(std::string_view text);
// Whether `text` is UTF-8 with no control character but newline, carriage return and tab.
bool is_text(std::string_view text);
// `text` cut to at most `width` characters, the last of them "…" when it was cut.
std::string cut(std::string_view text, std::size_t width);

enum class Align { left, right };
struct Column {
    std::string title;
    Align align = Align::left;
    std::size_t max_width = 48;  // longer cells are cut with "…"
};

// Aligned columns under a title row; numbers right-aligned by giving their column
// Align::right. Cells are shown printable() and cut to their column's max_width.
class Table {
public:
    explicit Table(std::vector<Column> columns);
    // Throws UsageError when `cells` has not one cell a column.
    void add(std::vector<std::string> cells);
    bool empty() const noexcept { return rows_.empty(); }
    void print(std::FILE* out) const;

private:
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

// Cells and JSON members for the quantities the listings show.
std::string count_text(std::uint64_t count);                         // "12345"
std::string yes_no(bool flag);                                       // "yes", "no"
std::string bytes_text(std::uint64_t bytes);                         // "512 B", "1.5 KiB", "3.2 GiB"
std::string age_text(std::optional<std::chrono::milliseconds> age);  // "-", "850ms", "12s", "3m05s", "2h10m", "3d04h"
std::string time_text(std::chrono::system_clock::time_point when);   // RFC 3339 UTC, seconds
Value optional_value(const std::optional<std::int64_t>& value);      // null when absent

// A header or argument table as a JSON object, and one value of it: integers as numbers,
// bytes as hex text, timestamps as RFC 3339 text, text that is not UTF-8 printable().
Value to_value(const FieldTable& table);
Value to_value(const FieldValue& value);

// `value` as JSON text indented by two spaces a level, scalars as JsonCodec writes them;
// `indent` is the level the first line starts at.
std::string pretty_json(const Value& value, int indent = 0);

// The command's answer: `document` as one JSON text on stdout under --json, else `table`.
void print_answer(const Context& context, const Table& table, const Value& document);
// A line for people (progress, a summary): on stderr under --json, so stdout stays one
// document, else on stdout.
void print_note(const Context& context, const std::string& line);

// Writes what `error` says to stderr, with what to do about it, and returns the exit status
// it means: ConnectionError → unreachable, ManagementError by reason, InvalidArgument and
// UsageError → usage, CommandFailed → its own, anything else → failed.
Exit report_failure(std::exception_ptr error, const Context& context);

// The exit codes as `acemq --help` and every `acemq COMMAND --help` list them.
std::string exit_codes_help();

}  // namespace acemq::cli
