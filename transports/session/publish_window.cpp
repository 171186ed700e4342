#include "session/publish_window.hpp"

#include <algorithm>

namespace acemq::session {

std::size_t PublishWindow::take(std::size_t wanted) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, wait_, [&] { return in_flight_ < size_; })) return 0;
    const std::size_t granted = std::min(wanted, size_ - in_flight_);
    in_flight_ += granted;
    return granted;
}

std::string PublishWindow::full_reason() const {
    return std::to_string(size_) + " publishes are already waiting for a confirm and none completed within " +
           std::to_string(wait_.count()) +
           " ms. The broker is not keeping up; publish more slowly rather than buffering more";
}

void PublishWindow::give_back(std::size_t count) {
    if (count == 0) return;
    {
        std::lock_guard lock(mutex_);
        in_flight_ -= std::min(count, in_flight_);
    }
    cv_.notify_all();
}

}  // namespace acemq::session
