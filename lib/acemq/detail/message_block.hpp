// Internal: the one heap block an InboundMessage (transport.hpp) is a handle to, and the hook
// through which the embedded broker takes back the blocks it made. Do not include it
// yourself, nothing in it is API; it is here because InboundMessage's accessors read the
// block inline.
//
// A block is its header (below), then the message's short texts and packed headers back to
// back (each short text ending at its short_text_ends entry, the headers at texts_size), then the body: its bytes, or for a body of more
// than inline_body_bytes the Bytes it came in (moved in, not copied), aligned for it. Copies
// of an InboundMessage share the block, counted; nothing changes a block another handle
// shares (docs/design.md decision 12).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace acemq::detail {

struct MessageBlock;

// What the last release of a block made for it calls instead of freeing the block; a
// releaser lives until every block it was given has been released to it.
class MessageReleaser {
public:
    virtual void release(MessageBlock* block) noexcept = 0;

protected:
    ~MessageReleaser() = default;
};

struct MessageBlock {
    // A body up to this size is copied into the block, one allocation with the rest; a
    // larger one keeps its own.
    static constexpr std::size_t inline_body_bytes = 2048;
    // content type, exchange, routing key, message id, reply-to, decode failure; the packed
    // headers follow them
    static constexpr std::size_t short_text_count = 6;
    // What the short texts may come to in all (AMQP allows 255 bytes for each of the first five).
    static constexpr std::size_t most_short_text_bytes = 0xffff;

    std::atomic<std::uint32_t> references{1};
    std::uint32_t texts_size = 0;  // the short texts and the packed headers
    std::array<std::uint16_t, short_text_count> short_text_ends{};
    std::uint16_t inline_body_size = 0;  // 0 when the body is apart
    bool redelivered : 1 = false;
    bool body_apart : 1 = false;  // the body is a Bytes after the texts, not bytes in place
    // 1 + the index of the content type in known_content_types, whose text is then not in
    // the block; 0 when the content type is the first short text.
    std::uint8_t content_type_code = 0;
    // While the block is referenced, who takes it back (nullptr: its last release frees it);
    // once released to it, the releaser's link to the next block it holds.
    union {
        MessageReleaser* releaser = nullptr;
        MessageBlock* next_released;
    };

    const char* texts() const noexcept { return reinterpret_cast<const char*>(this + 1); }
    char* texts() noexcept { return reinterpret_cast<char*>(this + 1); }
    // The short text of that index, or the packed headers (index short_text_count).
    const char* text_begin(std::size_t index) const noexcept {
        return texts() + (index == 0 ? 0 : short_text_ends[index - 1]);
    }
    const char* text_end(std::size_t index) const noexcept {
        return texts() + (index == short_text_count ? texts_size : short_text_ends[index]);
    }
};

// The content types of the family's codecs, held as a byte (content_type_code) instead of
// their text: a 64-byte message's block is a fifth text.
inline constexpr std::array<std::string_view, 17> known_content_types{"application/json",
                                                                      "application/msgpack",
                                                                      "application/x-msgpack",
                                                                      "application/x-protobuf",
                                                                      "application/protobuf",
                                                                      "application/vnd.google.protobuf",
                                                                      "application/avro",
                                                                      "application/vnd.acemq.avro",
                                                                      "application/vnd.acemq.encrypted",
                                                                      "application/xml",
                                                                      "text/xml",
                                                                      "application/yaml",
                                                                      "application/x-yaml",
                                                                      "text/yaml",
                                                                      "application/toml",
                                                                      "application/octet-stream",
                                                                      "text/plain"};

// A body kept apart from its block (body_apart).
std::span<const std::byte> apart_body(const MessageBlock& block) noexcept;
// Frees a block whose last reference is gone (with its body, when the body is apart).
void free_message_block(MessageBlock* block) noexcept;
// The bytes a block and its body hold on the heap.
std::size_t message_block_bytes(const MessageBlock& block) noexcept;

}  // namespace acemq::detail
