// zmq::manage: the management calls of docs/zmq-protocol.md §11 on a transport of their own,
// so they travel on an authenticated session like any request and are bounded by its
// call_timeout.
#include "zmq/zmq_transport.hpp"

#include <iterator>

#include "zmq/endpoint.hpp"

namespace acemq::zmq {

namespace {

using wire::Call;

class ZmqManagement final : public Management {
public:
    explicit ZmqManagement(std::shared_ptr<ZmqTransport> transport) : transport_(std::move(transport)) {}

    BrokerInfo info() override { return wire::read_info_reply(call({.call = Call::info})); }
    std::vector<ExchangeSummary> exchanges() override {
        return wire::read_exchanges_reply(call({.call = Call::exchanges}));
    }
    std::vector<QueueSummary> queues() override { return wire::read_queues_reply(call({.call = Call::queues})); }
    std::vector<BindingDeclaration> bindings() override {
        return wire::read_bindings_reply(call({.call = Call::bindings}));
    }
    std::vector<SessionSummary> sessions() override {
        return wire::read_sessions_reply(call({.call = Call::sessions}));
    }

    // An answer holds what fits in one of the broker's frames and says when it stopped short:
    // the rest is asked for from the position after its last message.
    std::vector<BrowsedMessage> browse(std::string_view queue, BrowseOptions options) override {
        std::vector<BrowsedMessage> messages;
        BrowseOptions next = options;
        while (messages.size() < options.count) {
            next.count = options.count - messages.size();
            wire::Browsed answer =
                wire::read_browse_reply(call({.call = Call::browse, .name = std::string(queue), .browse = next}));
            const bool empty = answer.messages.empty();
            if (!empty) next.from = answer.messages.back().position + 1;
            std::move(answer.messages.begin(), answer.messages.end(), std::back_inserter(messages));
            if (!answer.more || empty) break;
        }
        return messages;
    }
    std::uint64_t purge(std::string_view queue) override {
        return call({.call = Call::purge, .name = std::string(queue)}).unsigned_at(1, "purged");
    }
    void delete_queue(std::string_view queue, DeleteOptions options) override {
        call({.call = Call::delete_queue, .name = std::string(queue), .remove = options});
    }
    void delete_exchange(std::string_view exchange) override {
        call({.call = Call::delete_exchange, .name = std::string(exchange)});
    }
    BackupResult backup(const std::string& path) override {
        return wire::read_backup_reply(call({.call = Call::backup, .name = path}));
    }

private:
    // The reply to `request`, parsed; its bytes live in last_reply_ until the next call.
    wire::Frame call(wire::ManageRequest request) {
        last_reply_ = transport_->manage(std::move(request));
        return wire::Frame::parse(last_reply_);
    }

    std::shared_ptr<ZmqTransport> transport_;
    std::vector<std::byte> last_reply_;
};

}  // namespace

std::vector<std::byte> ZmqTransport::manage(wire::ManageRequest call) {
    call.request = next_number();
    const std::string what = "the management call " + std::string(to_string(call.call));
    Reply reply =
        request({.kind = Outgoing::Kind::request, .number = call.request, .frame = wire::encode_manage(call)}, what);
    if (reply.refusal) throw ManagementError(reply.refusal->reason, reply.refusal->text);
    return std::move(reply.frame);
}

std::unique_ptr<Management> manage(std::string_view url, Options options) {
    std::shared_ptr<ZmqTransport> transport;
    try {
        transport = std::make_shared<ZmqTransport>(std::string(url), endpoint_of_url(url), std::move(options));
    } catch (const KeyRefused& refused) {
        throw ManagementError(ManagementError::Reason::access_refused, refused.what());
    }
    return std::make_unique<ZmqManagement>(std::move(transport));
}

}  // namespace acemq::zmq
