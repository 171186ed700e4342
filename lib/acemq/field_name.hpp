// The name of a field-table entry (a header's name, a queue argument's). Reads as a
// std::string_view. A name of up to 15 bytes is kept inside the object, and a longer one the
// family's contract fixes (x-acemq-correlation, x-first-death-queue, x-dead-letter-exchange...)
// points at the library's own constant, so neither costs a heap block; any other name is a heap
// copy. Every message carries a table of such names, and held in a queue a std::string's 32
// bytes and the heap copy of its longer names were much of what it weighed (docs/design.md
// decision 12).
//
// A value type, 16 bytes: copies are independent; safe to copy between threads.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <string>
#include <string_view>

namespace acemq {

class FieldName {
public:
    FieldName() noexcept : bytes_{} {}
    FieldName(std::string_view name);
    FieldName(const char* name) : FieldName(std::string_view(name)) {}
    FieldName(const std::string& name) : FieldName(std::string_view(name)) {}
    FieldName(const FieldName& other);
    FieldName(FieldName&& other) noexcept : FieldName() { swap(other); }
    FieldName& operator=(FieldName other) noexcept {
        swap(other);
        return *this;
    }
    ~FieldName() {
        if (tag() == heap_tag) delete[] external();
    }

    std::string_view view() const noexcept {
        const std::uint8_t kind = tag();
        if (kind <= max_inline) return {bytes_, kind};
        return {external(), external_size()};
    }
    operator std::string_view() const noexcept { return view(); }
    std::string str() const { return std::string(view()); }

    const char* data() const noexcept { return view().data(); }
    std::size_t size() const noexcept { return view().size(); }
    bool empty() const noexcept { return size() == 0; }
    bool starts_with(std::string_view prefix) const noexcept { return view().starts_with(prefix); }
    int compare(std::string_view other) const noexcept { return view().compare(other); }

    void swap(FieldName& other) noexcept {
        char held[sizeof(bytes_)];
        std::memcpy(held, bytes_, sizeof(bytes_));
        std::memcpy(bytes_, other.bytes_, sizeof(bytes_));
        std::memcpy(other.bytes_, held, sizeof(bytes_));
    }

    friend bool operator==(const FieldName& a, const FieldName& b) noexcept { return a.view() == b.view(); }
    friend bool operator==(const FieldName& a, std::string_view b) noexcept { return a.view() == b; }
    friend bool operator==(const FieldName& a, const char* b) noexcept { return a.view() == b; }
    friend bool operator==(const FieldName& a, const std::string& b) noexcept { return a.view() == b; }
    friend std::strong_ordering operator<=>(const FieldName& a, const FieldName& b) noexcept {
        return a.view() <=> b.view();
    }
    friend std::strong_ordering operator<=>(const FieldName& a, std::string_view b) noexcept { return a.view() <=> b; }
    friend std::string operator+(const std::string& a, const FieldName& b) { return a + std::string(b.view()); }
    friend std::string operator+(const char* a, const FieldName& b) { return a + std::string(b.view()); }
    friend std::string operator+(const FieldName& a, const std::string& b) { return std::string(a.view()) + b; }
    friend std::string operator+(const FieldName& a, const char* b) { return std::string(a.view()) + b; }
    friend std::ostream& operator<<(std::ostream& out, const FieldName& name);

private:
    // The last byte says which: 0..15 the length of a name held inline in the bytes before
    // it; otherwise the first 8 bytes point at the name and the next 4 hold its length.
    static constexpr std::uint8_t max_inline = 15;
    static constexpr std::uint8_t constant_tag = 0x40;
    static constexpr std::uint8_t heap_tag = 0x80;

    std::uint8_t tag() const noexcept { return static_cast<std::uint8_t>(bytes_[max_inline]); }
    const char* external() const noexcept {
        const char* pointer;
        std::memcpy(&pointer, bytes_, sizeof(pointer));
        return pointer;
    }
    std::uint32_t external_size() const noexcept {
        std::uint32_t size;
        std::memcpy(&size, bytes_ + sizeof(const char*), sizeof(size));
        return size;
    }
    void point_at(const char* name, std::size_t size, std::uint8_t kind) noexcept;

    alignas(8) char bytes_[16];
};

}  // namespace acemq
