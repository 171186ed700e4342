#include "zmq/management_calls.hpp"

#include <algorithm>

#include "quoted_text.hpp"

namespace acemq::zmq {

namespace {

using wire::Call;

// Messages asked of the broker at a time while a browse answer fills: what one answer copies
// beyond what it sends is at most this many messages, however large the count asked.
constexpr std::size_t browse_chunk = 16;

msgpack::sbuffer answer_browse(Management& management, const wire::ManageRequest& request,
                               std::size_t max_frame_bytes) {
    wire::BrowseReply reply(request.request, max_frame_bytes);
    BrowseOptions next = request.browse;
    while (reply.size() < request.browse.count) {
        next.count = std::min(request.browse.count - reply.size(), browse_chunk);
        const std::vector<BrowsedMessage> chunk = management.browse(request.name, next);
        for (const BrowsedMessage& message : chunk) {
            if (reply.add(message)) continue;
            if (reply.size() == 0)
                throw ManagementError(ManagementError::Reason::failed,
                                      "acemq: the message at position " + std::to_string(message.position) +
                                          " of queue " + acemq::detail::in_quotes(request.name) +
                                          " does not fit in one frame of this broker (max_frame_bytes " +
                                          std::to_string(max_frame_bytes) +
                                          "), so it cannot be browsed over zmq; browse it through inproc:// on the "
                                          "broker's data file, or run the broker with a larger --max-frame-bytes");
            return reply.finish(true);
        }
        if (chunk.size() < next.count) break;  // the end of the queue
        next.from = chunk.back().position + 1;
    }
    return reply.finish(false);
}

msgpack::sbuffer carry_out(Management& management, const wire::ManageRequest& request, std::size_t max_frame_bytes,
                           const std::vector<std::pair<std::string, std::string>>& server_details) {
    switch (request.call) {
    case Call::info: {
        BrokerInfo info = management.info();
        info.product = "acemq-broker";
        info.details.insert(info.details.end(), server_details.begin(), server_details.end());
        return wire::encode_info_reply(request.request, info);
    }
    case Call::exchanges: return wire::encode_exchanges_reply(request.request, management.exchanges());
    case Call::queues: return wire::encode_queues_reply(request.request, management.queues());
    case Call::bindings: return wire::encode_bindings_reply(request.request, management.bindings());
    case Call::sessions: return wire::encode_sessions_reply(request.request, management.sessions());
    case Call::browse: return answer_browse(management, request, max_frame_bytes);
    case Call::purge: return wire::encode_reply_unsigned(request.request, management.purge(request.name));
    case Call::delete_queue:
        management.delete_queue(request.name, request.remove);
        return wire::encode_reply_nil(request.request);
    case Call::delete_exchange:
        management.delete_exchange(request.name);
        return wire::encode_reply_nil(request.request);
    case Call::backup: return wire::encode_backup_reply(request.request, management.backup(request.name));
    }
    throw ManagementError(ManagementError::Reason::unsupported,
                          "acemq: management call " + std::string(to_string(request.call)) + " is not served");
}

}  // namespace

msgpack::sbuffer answer_management(Management& management, const wire::ManageRequest& request,
                                   std::size_t max_frame_bytes,
                                   const std::vector<std::pair<std::string, std::string>>& server_details) {
    try {
        return carry_out(management, request, max_frame_bytes, server_details);
    } catch (const ManagementError& error) {
        return wire::encode_refusal(request.request, error.reason(), error.what());
    }
}

}  // namespace acemq::zmq
