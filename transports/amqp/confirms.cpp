#include "amqp/confirms.hpp"

#include <algorithm>
#include <iterator>

namespace acemq::amqp {

void Confirms::track(std::shared_ptr<PendingPublish> pending) {
    unconfirmed_.emplace(next_sequence_++, std::move(pending));
}

void Confirms::confirm(std::uint64_t sequence, bool multiple, bool ok) {
    auto last = multiple ? unconfirmed_.upper_bound(sequence) : unconfirmed_.find(sequence);
    auto first = multiple ? unconfirmed_.begin() : last;
    if (!multiple) {
        if (last == unconfirmed_.end()) return;
        ++last;
    }
    for (auto it = first; it != last; ++it) {
        PendingPublish& pending = *it->second;
        if (ok)
            pending.answer.set(
                PublishResult{.confirmed = true, .routed = !pending.returned, .return_reason = pending.return_reason});
        else
            pending.answer.set(PublishResult{.return_reason = "the broker sent basic.nack",
                                             .why = PublishResult::Unconfirmed::refused});
    }
    window_.give_back(static_cast<std::size_t>(std::distance(first, last)));
    unconfirmed_.erase(first, last);
}

void Confirms::file_return(const std::string& message_id, const std::string& reason) {
    for (auto& [sequence, pending] : unconfirmed_) {
        if (pending->returned || !pending->message.mandatory) continue;
        if (!message_id.empty() && pending->message.message_id != message_id) continue;
        pending->returned = true;
        pending->return_reason = reason;
        return;
    }
}

void Confirms::fail_all(const std::string& why) {
    for (auto& [sequence, pending] : unconfirmed_)
        pending->answer.set(PublishResult{.return_reason = why, .why = PublishResult::Unconfirmed::lost});
    window_.give_back(unconfirmed_.size());
    unconfirmed_.clear();
}

void Confirms::refuse_from(const std::string& why, const std::function<bool(const OutboundMessage&)>& caused) {
    auto cause = std::find_if(unconfirmed_.begin(), unconfirmed_.end(),
                              [&](const auto& entry) { return caused(entry.second->message); });
    if (cause == unconfirmed_.end() && unconfirmed_.size() == 1) cause = unconfirmed_.begin();
    if (cause == unconfirmed_.end()) return fail_all(why);
    const std::string lost =
        "the broker closed the channel over a later publish (" + why + ") before it confirmed this one";
    const std::string dropped =
        "the broker closed the channel over an earlier publish (" + why + ") and dropped this one";
    for (auto it = unconfirmed_.begin(); it != unconfirmed_.end(); ++it) {
        if (it == cause)
            it->second->answer.set(PublishResult{.return_reason = why, .why = PublishResult::Unconfirmed::refused});
        else if (it->first < cause->first)
            it->second->answer.set(PublishResult{.return_reason = lost, .why = PublishResult::Unconfirmed::lost});
        else
            it->second->answer.set(PublishResult{.return_reason = dropped, .why = PublishResult::Unconfirmed::refused});
    }
    window_.give_back(unconfirmed_.size());
    unconfirmed_.clear();
}

}  // namespace acemq::amqp
