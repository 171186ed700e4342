// A delivered message's headers, as the message holds them: packed into the one buffer that
// also holds its short texts, and read through this view. A header table of a dozen entries
// is a vector of 56-byte entries and a heap block for every longer text value; packed, a
// message waiting in a queue keeps only the bytes of its names and values, and a byte for
// each of the contract's names (x-acemq-*, traceparent, x-death...) and for a value equal to
// the message's own id (as x-acemq-id and x-acemq-correlation mostly are) (docs/design.md
// decision 12).
//
// It reads like a const FieldTable: size, find, contains, at, iteration in name order. Each
// value is decoded when reached, so a read copies it out (a FieldValue, not a reference);
// table() makes the whole FieldTable. The view lives as long as the message it came from.
//
// Threads: a view only reads; any number of threads may read the same message's headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

#include <acemq/field.hpp>

namespace acemq {

class PackedHeaders;

namespace detail {
class FieldVisitor;
void visit(const PackedHeaders& headers, FieldVisitor& visitor);
}  // namespace detail

class PackedHeaders {
public:
    using value_type = std::pair<FieldName, FieldValue>;

    // A value where it lies packed, read without decoding all of it. A default one is absent.
    class ValueRef {
    public:
        ValueRef() = default;
        // The value, made; void when absent.
        FieldValue decode() const;
        // A text's or a byte array's bytes, as FieldValue::as_text reads them but without a
        // copy; "" when absent or of another kind.
        std::string_view text() const noexcept;

    private:
        friend class PackedHeaders;
        ValueRef(const char* at, std::string_view message_id) noexcept : at_(at), message_id_(message_id) {}

        const char* at_ = nullptr;
        std::string_view message_id_;
    };

    // Walks the entries in name order. Dereferenced, it decodes the entry it stands on (once);
    // the entry is the iterator's own, so it may be moved from. name() and value() read the
    // entry without making a FieldName of its name or decoding its value.
    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = PackedHeaders::value_type;
        using difference_type = std::ptrdiff_t;
        using pointer = value_type*;
        using reference = value_type&;

        iterator() = default;
        value_type& operator*() const {
            if (!decoded_) decode();
            return entry_;
        }
        value_type* operator->() const { return &**this; }
        std::string_view name() const noexcept { return name_; }
        ValueRef value() const noexcept { return ValueRef(value_at_, message_id_); }
        iterator& operator++();
        iterator operator++(int) {
            iterator before = *this;
            ++*this;
            return before;
        }
        friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.at_ == b.at_; }

    private:
        friend class PackedHeaders;
        iterator(const char* at, const char* end, std::string_view message_id);
        void step() noexcept;  // reads the name at at_ and finds where the next entry begins
        void decode() const;

        const char* at_ = nullptr;        // where the entry it stands on begins; end_ when past the last
        const char* value_at_ = nullptr;  // where its value begins
        const char* next_ = nullptr;      // where the following one begins
        const char* end_ = nullptr;
        std::string_view name_;
        std::string_view message_id_;
        mutable value_type entry_;
        mutable bool decoded_ = false;
    };
    using const_iterator = iterator;

    PackedHeaders() = default;

    std::size_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0; }
    iterator begin() const;
    iterator end() const noexcept;

    // Looks at names only, decoding just the value found.
    iterator find(std::string_view name) const;
    bool contains(std::string_view name) const { return find(name) != end(); }
    // Throws InvalidArgument naming the missing header (use find or contains when it may be
    // absent).
    FieldValue at(std::string_view name) const;

    // Every entry, as a table of its own.
    Headers table() const;
    // Whether a value is an array or a table (x-death's, say), not only scalars and texts.
    bool has_nested_values() const noexcept { return nested_; }
    // How many bytes the packed entries take: what a message in a queue holds for them.
    std::size_t packed_size() const noexcept { return entries_.size(); }

    // Entry by entry, as tables compare.
    friend bool operator==(const PackedHeaders& packed, const Headers& table);
    friend bool operator==(const PackedHeaders& a, const PackedHeaders& b);

private:
    friend class InboundMessage;
    friend class PackedTable;
    friend void detail::visit(const PackedHeaders& headers, detail::FieldVisitor& visitor);
    // Writes `headers` at `out` in the packed form this view reads (a text value equal to
    // `message_id` as a reference to it) when they fit in `capacity` bytes, and returns how
    // many bytes they take, whether they fitted or not.
    static std::size_t pack(const Headers& headers, std::string_view message_id, char* out, std::size_t capacity);
    // As pack(), from headers packed already with no message's id (a PackedTable's bytes):
    // copied, an entry whose value is a text equal to `message_id` written as a reference to
    // it (entries nested in arrays and tables are copied as they are).
    static std::size_t pack_referencing(std::string_view packed, std::string_view message_id, char* out,
                                        std::size_t capacity);
    // A view of what pack wrote, for the message whose id is `message_id`.
    PackedHeaders(std::string_view packed, std::string_view message_id) noexcept;

    std::string_view entries_;  // after the count
    std::string_view message_id_;
    std::uint32_t count_ = 0;
    bool nested_ = false;
};

}  // namespace acemq
