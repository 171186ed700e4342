// Internal: the one defence of the library's msgpack readers against a hostile length.
// msgpack-c's unpack reserves every array and map as its header declares, before it reads
// an element: a few bytes claiming four billion elements would reserve gigabytes, and 64
// nested headers that each claim the whole buffer, 64 times the buffer. Each element takes
// at least one byte, so all the elements a buffer's arrays and maps declare, together, are
// no more than its bytes. A reader asks Bounds at each header its msgpack-c visitor is
// handed, before anything is allocated for it, and words the refusal in its own terms:
// message_pack::unpack_checked (zmq frames, the durable broker's records) and MsgpackCodec
// (message bodies). One per parse; not thread-safe.
#pragma once

#include <cstddef>

namespace acemq::message_pack {

class Bounds {
public:
    enum class Refusal { none, too_deep, more_elements_than_bytes };

    Bounds(std::size_t bytes, std::size_t max_depth) : left_(bytes), max_depth_(max_depth) {}

    // An array or map opens whose header declares `elements` values (a map's keys and its
    // values both count).
    Refusal open(std::size_t elements) noexcept {
        if (depth_ >= max_depth_) return Refusal::too_deep;
        if (elements > left_) return Refusal::more_elements_than_bytes;
        left_ -= elements;
        ++depth_;
        return Refusal::none;
    }
    void close() noexcept { --depth_; }

private:
    std::size_t left_;  // elements the buffer still has bytes for
    std::size_t max_depth_;
    std::size_t depth_ = 0;
};

}  // namespace acemq::message_pack
