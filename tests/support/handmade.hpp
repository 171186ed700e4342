// Test helpers for code that is called with a Message directly, and for reading the log.
#pragma once

#include <acemq/log.hpp>
#include <acemq/message.hpp>

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handmade {

// A message as a consumer would hand it to a handler, made by hand.
template <class T>
acemq::Message<T> message_of(T payload, std::string_view routing_key = "orders.new") {
    return acemq::Message<T>{std::move(payload),
                             acemq::Envelope::for_new_message(routing_key, "shop@test"),
                             std::string(routing_key),
                             std::string(routing_key),
                             "",
                             "",
                             false};
}

// Every line written through acemq::log while it exists; restores the previous sink.
class CapturedLog {
public:
    CapturedLog()
        : previous_(acemq::set_log_sink([this](acemq::LogLevel level, std::string_view line) {
              std::lock_guard guard(lock_);
              lines_.emplace_back(level, std::string(line));
          })) {}
    ~CapturedLog() { acemq::set_log_sink(std::move(previous_)); }
    CapturedLog(const CapturedLog&) = delete;
    CapturedLog& operator=(const CapturedLog&) = delete;

    std::vector<std::pair<acemq::LogLevel, std::string>> lines() const {
        std::lock_guard guard(lock_);
        return lines_;
    }

private:
    mutable std::mutex lock_;
    std::vector<std::pair<acemq::LogLevel, std::string>> lines_;
    acemq::LogSink previous_;
};

inline bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace handmade
