// The management calls of the zmq protocol, version 2 (docs/zmq-protocol.md §11): `manage`
// carries a call by name and its arguments, a `reply` carries its result, a `refusal` a
// ManagementError by reason. Shared by the broker (management_calls.cpp) and the client
// (zmq_management.cpp); every reader throws ProtocolError for a field missing or of another
// type. Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/management.hpp>

#include "zmq/protocol.hpp"

namespace acemq::zmq::wire {

enum class Call : std::uint8_t {
    info,
    exchanges,
    queues,
    bindings,
    sessions,
    browse,
    purge,
    delete_queue,
    delete_exchange,
    backup,
};
// The call's name on the wire: "info", "exchanges", ..., "delete_queue", "backup".
std::string_view to_string(Call call) noexcept;

// One management call. `name` is the queue (browse, purge, delete_queue), the exchange
// (delete_exchange) or the path (backup); the options only for their own call.
struct ManageRequest {
    std::uint64_t request = 0;
    Call call = Call::info;
    std::string name{};
    BrowseOptions browse{};
    DeleteOptions remove{};
};
msgpack::sbuffer encode_manage(const ManageRequest& request);
// ProtocolError for an unknown call name, missing arguments or arguments of another type.
ManageRequest read_manage(const Frame& frame);

// The answers: a `reply` whose value is the call's result.
msgpack::sbuffer encode_info_reply(std::uint64_t request, const BrokerInfo& info);
msgpack::sbuffer encode_exchanges_reply(std::uint64_t request, const std::vector<ExchangeSummary>& exchanges);
msgpack::sbuffer encode_queues_reply(std::uint64_t request, const std::vector<QueueSummary>& queues);
msgpack::sbuffer encode_bindings_reply(std::uint64_t request, const std::vector<BindingDeclaration>& bindings);
msgpack::sbuffer encode_sessions_reply(std::uint64_t request, const std::vector<SessionSummary>& sessions);
msgpack::sbuffer encode_backup_reply(std::uint64_t request, const BackupResult& backup);

// A browse's answer, message by message, kept within a frame limit: the broker adds messages
// while they fit and says whether it stopped short (`more`, docs/zmq-protocol.md §11.3).
class BrowseReply {
public:
    BrowseReply(std::uint64_t request, std::size_t max_frame_bytes);
    // False, adding nothing, when the answer would grow past the limit.
    bool add(const BrowsedMessage& message);
    std::size_t size() const noexcept { return messages_.size(); }
    msgpack::sbuffer finish(bool more);

private:
    std::uint64_t request_;
    std::size_t room_;
    std::vector<msgpack::sbuffer> messages_;
};

BrokerInfo read_info_reply(const Frame& frame);
std::vector<ExchangeSummary> read_exchanges_reply(const Frame& frame);
std::vector<QueueSummary> read_queues_reply(const Frame& frame);
std::vector<BindingDeclaration> read_bindings_reply(const Frame& frame);
std::vector<SessionSummary> read_sessions_reply(const Frame& frame);
struct Browsed {
    std::vector<BrowsedMessage> messages;
    bool more = false;  // the broker stopped short of the count at its frame limit
};
Browsed read_browse_reply(const Frame& frame);
BackupResult read_backup_reply(const Frame& frame);

// `refusal`: a management call the broker refused, as ManagementError's reason and text.
struct Refusal {
    std::uint64_t request = 0;
    ManagementError::Reason reason = ManagementError::Reason::failed;
    std::string text;
};
msgpack::sbuffer encode_refusal(std::uint64_t request, ManagementError::Reason reason, std::string_view text);
Refusal read_refusal(const Frame& frame);

}  // namespace acemq::zmq::wire
