// A double-ended FIFO on one growable array, for queues that hold large elements: a
// std::deque of ~300-byte messages allocates a block per element, this allocates only when
// it grows. Internal to the inproc broker.
//
// Not thread-safe: the broker's lock guards it.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace acemq::inproc::detail {

template <class T>
class Ring {
public:
    bool empty() const noexcept { return size_ == 0; }
    std::size_t size() const noexcept { return size_; }

    // Element `index` counted from the front.
    T& operator[](std::size_t index) noexcept { return slots_[(head_ + index) & (slots_.size() - 1)]; }
    const T& operator[](std::size_t index) const noexcept { return slots_[(head_ + index) & (slots_.size() - 1)]; }
    T& front() noexcept { return slots_[head_]; }

    void push_back(T&& value) {
        if (size_ == slots_.size()) grow();
        (*this)[size_] = std::move(value);
        ++size_;
    }

    void push_front(T&& value) {
        if (size_ == slots_.size()) grow();
        head_ = (head_ + slots_.size() - 1) & (slots_.size() - 1);
        slots_[head_] = std::move(value);
        ++size_;
    }

    // Moves the front element out; its slot keeps only a moved-from shell.
    T pop_front() {
        T value = std::move(slots_[head_]);
        head_ = (head_ + 1) & (slots_.size() - 1);
        --size_;
        return value;
    }

    // Drops every element and gives the memory back.
    void clear() noexcept {
        std::vector<T>().swap(slots_);
        head_ = size_ = 0;
    }

private:
    void grow() {
        std::vector<T> larger(slots_.empty() ? 8 : slots_.size() * 2);  // a power of two, for the masks
        for (std::size_t i = 0; i < size_; ++i) larger[i] = std::move((*this)[i]);
        slots_.swap(larger);
        head_ = 0;
    }

    std::vector<T> slots_;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
};

}  // namespace acemq::inproc::detail
