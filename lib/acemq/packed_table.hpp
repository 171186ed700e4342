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
    // Packs `table` for the message whose id is `message_id`: a text equal to it is held as a
    // reference to it and the id once, as a message's block holds them, so that the block of
    // a message with this id copies them as they are.
    PackedTable(const Headers& table, std::string_view message_id);

    PackedHeaders view() const noexcept {
        const auto [id, packed] = split();
        return PackedHeaders(packed, id);
    }
    std::size_t size() const noexcept { return view().size(); }
    bool empty() const noexcept { return view().empty(); }
    PackedHeaders::iterator begin() const { return view().begin(); }
    PackedHeaders::iterator end() const noexcept { return view().end(); }
    PackedHeaders::iterator find(std::string_view name) const { return view().find(name); }
    bool contains(std::string_view name) const { return view().contains(name); }
    // Throws InvalidArgument naming the missing header.
    FieldValue at(std::string_view name) const { return view().at(name); }
    Headers table() const { return view().table(); }
    // The id the packed texts may refer to ("" when none does), and the packed headers (their
    // count, then the entries): what InboundMessage copies into a message's block.
    std::string_view message_id() const noexcept { return split().first; }
    std::string_view packed() const noexcept { return split().second; }

    friend bool operator==(const PackedTable& packed, const Headers& table) { return packed.view() == table; }
    friend bool operator==(const PackedTable& a, const PackedTable& b) { return a.view() == b.view(); }

private:
    friend class detail::PackedWriter;
    explicit PackedTable(std::string bytes) noexcept : bytes_(std::move(bytes)) {}

    // The id and the packed headers, off bytes_.
    std::pair<std::string_view, std::string_view> split() const noexcept {
        if (bytes_.empty()) return {};
        std::size_t id_size = 0;
        std::size_t at = 0;
        for (unsigned shift = 0;; shift += 7) {
            const auto byte = static_cast<unsigned char>(bytes_[at++]);
            id_size |= static_cast<std::size_t>(byte & 0x7f) << shift;
            if ((byte & 0x80) == 0) break;
        }
        const std::string_view all(bytes_);
        return {all.substr(at, id_size), all.substr(at + id_size)};
    }

    std::string bytes_;  // the id's size (a varint) and its bytes, then the packed headers; "" when empty
};

}  // namespace acemq
