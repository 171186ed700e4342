// A header table packed into a buffer of its own: what an OutboundMessage carries. The engine
// writes a message's headers straight from its envelope into one (pack_headers in
// envelope.hpp), with no table of strings between, and the embedded broker copies the bytes
// into the message's block instead of packing a table (docs/design.md decision 12). Anything
// else makes one from a FieldTable: `.headers = table` packs it.
//
// It reads like a const FieldTable, through the same view a delivery's headers are
// (PackedHeaders): size, find, contains, at, iteration in name order, table().
//
// Threads: a value; one object is not to be changed by one thread while another uses it.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include <acemq/field.hpp>
#include <acemq/packed_headers.hpp>

namespace acemq {

namespace detail {
class PackedWriter;
}

class PackedTable {
public:
    PackedTable() = default;
    // Packs `table` (a FieldTable is a packed table's natural source: `.headers = table`).
    PackedTable(const Headers& table);  // NOLINT(google-explicit-constructor)
    // Packs the table of these entries: `.headers = {{"x-n", FieldValue(1)}}`.
    PackedTable(std::initializer_list<Headers::value_type> entries) : PackedTable(Headers(entries)) {}

    PackedHeaders view() const noexcept { return PackedHeaders(bytes_, {}); }
    std::size_t size() const noexcept { return view().size(); }
    bool empty() const noexcept { return view().empty(); }
    PackedHeaders::iterator begin() const { return view().begin(); }
    PackedHeaders::iterator end() const noexcept { return view().end(); }
    PackedHeaders::iterator find(std::string_view name) const { return view().find(name); }
    bool contains(std::string_view name) const { return view().contains(name); }
    // Throws InvalidArgument naming the missing header.
    FieldValue at(std::string_view name) const { return view().at(name); }
    Headers table() const { return view().table(); }
    // The packed bytes, as InboundMessage copies them into a message's block.
    std::string_view bytes() const noexcept { return bytes_; }

    friend bool operator==(const PackedTable& packed, const Headers& table) { return packed.view() == table; }
    friend bool operator==(const PackedTable& a, const PackedTable& b) { return a.view() == b.view(); }

private:
    friend class detail::PackedWriter;
    explicit PackedTable(std::string bytes) noexcept : bytes_(std::move(bytes)) {}

    std::string bytes_;  // the count, then the entries; none refers to a message's id
};

}  // namespace acemq
