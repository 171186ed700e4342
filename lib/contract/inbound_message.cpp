#include <acemq/transport.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <new>

#include <acemq/error.hpp>

namespace acemq {
namespace {

using detail::MessageBlock;

// What a queued message costs beyond its texts and body (docs/design.md decision 12).
static_assert(sizeof(MessageBlock) == 32, "a message block's header grew: count it in rss_bench first");
static_assert(detail::known_content_types.size() < 256, "a known content type's code is a byte");

// Where a body kept apart lies: the Bytes object after the texts, aligned for it.
std::size_t apart_body_offset(std::size_t texts_size) noexcept {
    const std::size_t end = sizeof(MessageBlock) + texts_size;
    return (end + alignof(Bytes) - 1) / alignof(Bytes) * alignof(Bytes);
}

Bytes* apart_body_of(MessageBlock& block) noexcept {
    return std::launder(
        reinterpret_cast<Bytes*>(reinterpret_cast<char*>(&block) + apart_body_offset(block.texts_size)));
}

std::size_t block_size(std::size_t texts_size, std::size_t body_size, bool body_apart) noexcept {
    return body_apart ? apart_body_offset(texts_size) + sizeof(Bytes) : sizeof(MessageBlock) + texts_size + body_size;
}

// A copy of `block` for one handle alone: not taken back by its maker's releaser, which
// counts only the blocks it made.
MessageBlock* copy_block(const MessageBlock& block) {
    const std::span<const std::byte> body = block.body_apart ? detail::apart_body(block) : std::span<const std::byte>();
    void* memory = ::operator new(block_size(block.texts_size, block.inline_body_size, block.body_apart));
    auto* copy = new (memory) MessageBlock;
    copy->texts_size = block.texts_size;
    copy->short_text_ends = block.short_text_ends;
    copy->inline_body_size = block.inline_body_size;
    copy->redelivered = block.redelivered;
    copy->content_type_code = block.content_type_code;
    if (block.body_apart) {
        try {
            new (apart_body_of(*copy)) Bytes(body.begin(), body.end());
        } catch (...) {
            ::operator delete(memory);
            throw;
        }
        copy->body_apart = true;
    }
    std::memcpy(copy->texts(), block.texts(), block.texts_size + block.inline_body_size);
    return copy;
}

}  // namespace

namespace detail {

std::span<const std::byte> apart_body(const MessageBlock& block) noexcept {
    return *apart_body_of(const_cast<MessageBlock&>(block));
}

void free_message_block(MessageBlock* block) noexcept {
    if (block->body_apart) std::destroy_at(apart_body_of(*block));
    std::destroy_at(block);
    ::operator delete(block);
}

std::size_t message_block_bytes(const MessageBlock& block) noexcept {
    return block_size(block.texts_size, block.inline_body_size, block.body_apart) +
           (block.body_apart ? apart_body(block).size() : 0);
}

}  // namespace detail

namespace {

// What a block is made of, whatever the message came as; the headers are written by the
// maker's pack function, which returns what they take and writes them only when that fits
// in the room it is given (PackedHeaders::pack's contract).
struct BlockParts {
    std::string_view content_type, exchange, routing_key, message_id, reply_to, decode_failure;
    Bytes& body;  // moved from when it is kept apart
    bool redelivered;
};

template <class PackHeaders>
MessageBlock* build_block(const BlockParts& parts, const PackHeaders& pack_headers) {
    // A known content type is a byte in the block's header, its text not in the block.
    const auto known = std::ranges::find(detail::known_content_types, parts.content_type);
    const bool content_type_known = known != detail::known_content_types.end();
    const std::array<std::string_view, MessageBlock::short_text_count> texts{
        content_type_known ? std::string_view() : parts.content_type,
        parts.exchange,
        parts.routing_key,
        parts.message_id,
        parts.reply_to,
        parts.decode_failure};
    std::size_t short_texts = 0;
    for (const std::string_view text : texts) short_texts += text.size();
    if (short_texts > MessageBlock::most_short_text_bytes)
        throw InvalidArgument(
            "acemq: a delivery's content type, exchange, routing key, id, reply-to and decode "
            "failure come to " +
            std::to_string(short_texts) + " bytes; at most " + std::to_string(MessageBlock::most_short_text_bytes) +
            " in all (AMQP allows 255 for each)");
    // Most headers fit here: packed once, then copied, instead of counted and then packed.
    std::array<char, 512> scratch;
    const std::size_t headers_size = pack_headers(scratch.data(), scratch.size());
    const std::size_t texts_size = short_texts + headers_size;
    if (texts_size > std::numeric_limits<std::uint32_t>::max())
        throw InvalidArgument("acemq: a delivery's headers come to " + std::to_string(headers_size) +
                              " bytes packed; at most 4 GiB");
    const std::size_t body_size = parts.body.size();
    const bool body_apart = body_size > MessageBlock::inline_body_bytes;

    void* memory = ::operator new(block_size(texts_size, body_size, body_apart));
    auto* block = new (memory) MessageBlock;
    block->texts_size = static_cast<std::uint32_t>(texts_size);
    block->redelivered = parts.redelivered;
    if (content_type_known)
        block->content_type_code = static_cast<std::uint8_t>(known - detail::known_content_types.begin() + 1);
    char* at = block->texts();
    for (std::size_t index = 0; index < texts.size(); ++index) {
        at = std::copy(texts[index].begin(), texts[index].end(), at);
        block->short_text_ends[index] = static_cast<std::uint16_t>(at - block->texts());
    }
    if (headers_size <= scratch.size())
        std::memcpy(at, scratch.data(), headers_size);
    else
        pack_headers(at, headers_size);
    if (body_apart) {
        new (apart_body_of(*block)) Bytes(std::move(parts.body));
        block->body_apart = true;
    } else if (body_size != 0) {
        block->inline_body_size = static_cast<std::uint16_t>(body_size);
        std::memcpy(block->texts() + texts_size, parts.body.data(), body_size);
    }
    return block;
}

}  // namespace

MessageBlock* InboundMessage::make_block(InboundParts&& parts) {
    return build_block({parts.content_type, parts.exchange, parts.routing_key, parts.message_id, parts.reply_to,
                        parts.decode_failure, parts.body, parts.redelivered},
                       [&](char* out, std::size_t capacity) {
                           return PackedHeaders::pack(parts.headers, parts.message_id, out, capacity);
                       });
}

MessageBlock* InboundMessage::make_block(OutboundMessage&& message) {
    return build_block({message.content_type,
                        message.exchange,
                        message.routing_key,
                        message.message_id,
                        message.reply_to,
                        {},
                        message.body,
                        false},
                       [&](char* out, std::size_t capacity) -> std::size_t {
                           const PackedTable& headers = message.headers;
                           if (headers.message_id() == message.message_id) {
                               const std::string_view packed = headers.packed();
                               if (!packed.empty() && packed.size() <= capacity)
                                   std::memcpy(out, packed.data(), packed.size());
                               return packed.size();
                           }
                           if (headers.message_id().empty())
                               return PackedHeaders::pack_referencing(headers.packed(), message.message_id, out,
                                                                      capacity);
                           // Packed for another id (the message's was changed since): its
                           // references undone, the message's own made.
                           return PackedHeaders::pack(headers.table(), message.message_id, out, capacity);
                       });
}

InboundMessage::InboundMessage(InboundParts parts) : block_(make_block(std::move(parts))) {}

InboundMessage::InboundMessage(InboundParts parts, detail::MessageReleaser& releaser)
    : block_(make_block(std::move(parts))) {
    block_->releaser = &releaser;
}

InboundMessage::InboundMessage(OutboundMessage message) : block_(make_block(std::move(message))) {}

InboundMessage::InboundMessage(OutboundMessage message, detail::MessageReleaser& releaser)
    : block_(make_block(std::move(message))) {
    block_->releaser = &releaser;
}

void InboundMessage::set_redelivered(bool redelivered) {
    if (block_ == nullptr) block_ = make_block(InboundParts{});
    if (block_->redelivered == redelivered) return;
    if (shared()) {
        MessageBlock* copy = copy_block(*block_);
        release();
        block_ = copy;
    }
    block_->redelivered = redelivered;
}

InboundParts InboundMessage::parts() const& {
    const std::span<const std::byte> bytes = body();
    return parts_with(Bytes(bytes.begin(), bytes.end()));
}

InboundParts InboundMessage::parts() && {
    if (block_ == nullptr || !block_->body_apart || shared()) return std::as_const(*this).parts();
    InboundParts parts = parts_with(std::move(*apart_body_of(*block_)));
    // The body is gone from the block: what is left reads as a message with none.
    std::destroy_at(apart_body_of(*block_));
    block_->body_apart = false;
    return parts;
}

InboundParts InboundMessage::parts_with(Bytes body) const {
    return InboundParts{.body = std::move(body),
                        .content_type = std::string(content_type()),
                        .exchange = std::string(exchange()),
                        .routing_key = std::string(routing_key()),
                        .message_id = std::string(message_id()),
                        .reply_to = std::string(reply_to()),
                        .headers = headers().table(),
                        .redelivered = redelivered(),
                        .decode_failure = std::string(decode_failure())};
}

}  // namespace acemq
