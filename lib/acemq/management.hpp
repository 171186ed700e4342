// The operator's questions to a broker, asked the same way whatever the broker is: which
// exchanges, queues, bindings and sessions exist, what is in a queue (without taking it),
// purge, delete, the broker's own state, an online backup. The `acemq` command is built on
// it; a program may use it too.
//
//   std::unique_ptr<acemq::Management> broker = acemq::open_management("zmq+ipc:///run/edge/broker.sock");
//   for (const acemq::QueueSummary& queue : broker->queues())
//       std::printf("%s %llu ready\n", queue.name.c_str(), (unsigned long long)queue.ready);
//
// Implementations, by URL scheme: inproc:// (the broker's own API, in this process: a durable
// broker's data file is held by one process at a time), zmq+tcp:// and zmq+ipc:// (the
// management commands of the ZeroMQ protocol, docs/zmq-protocol.md, on the same
// authenticated session; a broker run with --no-management refuses them), amqp:// and
// amqps:// (RabbitMQ's management HTTP API, the rabbitmq_management plugin). Where the brokers
// differ, the member says so.
//
// Moving messages from one queue to another is not here: acemq::replay (<acemq/replay.hpp>)
// does it through a Bus on the same URL, one message at a time, never losing one.
//
// Threads: a Management object is used from one thread at a time; open one per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/field.hpp>
#include <acemq/topology.hpp>
#include <acemq/transport.hpp>

namespace acemq {

struct ExchangeSummary {
    std::string name;
    ExchangeKind kind = ExchangeKind::direct;
    bool durable = true;
    bool auto_delete = false;
    FieldTable arguments{};
};

struct QueueSummary {
    std::string name;
    QueueType type = QueueType::classic;
    bool durable = true;
    bool exclusive = false;
    bool auto_delete = false;
    std::uint64_t ready = 0;    // waiting to be delivered
    std::uint64_t unacked = 0;  // handed out, not settled yet
    std::uint64_t consumers = 0;
    std::uint64_t bytes = 0;  // the bodies of the ready and unacked messages
    // How long the oldest ready message has waited; nullopt when none is ready, or when the
    // broker does not tell (RabbitMQ tells it only with its queue's head message stats).
    std::optional<std::chrono::milliseconds> oldest_age{};
    FieldTable arguments{};
};

// A client connected to the broker now.
struct SessionSummary {
    std::string peer;  // where it connects from ("127.0.0.1:53412", "in-process", an ipc path)
    std::string name;  // the client's name (SessionOptions::name), "" when it gave none
    std::chrono::system_clock::time_point since{};
    std::uint64_t consumers = 0;
    std::uint64_t unacked = 0;
};

// One message as it sits in its queue, left there.
struct BrowsedMessage {
    std::uint64_t position = 0;  // 0 = the head of the queue
    InboundMessage message;
    bool persistent = true;
};

struct BrowseOptions {
    std::uint64_t from = 0;  // the position of the first message shown
    std::size_t count = 10;  // at most this many
};

struct DeleteOptions {
    // Delete a queue that has consumers, cancelling them (their unsettled deliveries can
    // still be settled, and go nowhere). False refuses it (ManagementError::Reason::in_use).
    bool even_if_consumed = false;
};

struct BackupResult {
    std::string path;         // as the broker wrote it
    std::uint64_t bytes = 0;  // the copy's size
    std::uint64_t messages = 0;
};

struct BrokerInfo {
    std::string product;  // "acemq-broker", "acemq in-process broker", "RabbitMQ"
    std::string version;
    std::string name;  // the broker's name (inproc, zmq) or node (RabbitMQ)
    std::chrono::seconds uptime{0};
    std::string data_file;                           // "" for a broker in memory only, and on RabbitMQ
    std::uint64_t data_bytes = 0;                    // the data file's size
    std::uint64_t wal_bytes = 0;                     // its write-ahead log's
    std::optional<std::uint64_t> free_disk_bytes{};  // on the data file's file system
    std::uint64_t opens = 0;                         // how many times the data file was opened (its lives)
    std::uint64_t quarantined = 0;                   // stored messages set aside as damaged
    std::uint64_t commits = 0;                       // since this broker started
    std::optional<std::chrono::microseconds> commit_latency_mean{};
    std::optional<std::chrono::microseconds> commit_latency_max{};
    // Messages published to the broker, handed to consumers (redeliveries too) and acked
    // since it started; nullopt when the broker does not tell (RabbitMQ's are per queue).
    std::optional<std::uint64_t> published{};
    std::optional<std::uint64_t> delivered{};
    std::optional<std::uint64_t> acked{};
    // The configured limits and anything else the broker tells, as name and value, in the
    // broker's own words: {"max_frame_bytes", "67108864"}, {"max_data_bytes", "0"}, ...
    std::vector<std::pair<std::string, std::string>> details{};
};

// A management call the broker refused or could not carry out. what() names the queue or
// exchange and what to do.
class ManagementError : public Error {
public:
    enum class Reason {
        not_found,       // no such queue or exchange
        in_use,          // a queue with consumers, not deleted without DeleteOptions::even_if_consumed
        disabled,        // the broker refuses management calls (acemq-broker --no-management)
        access_refused,  // the broker refused the credentials or CurveZMQ key given
        unsupported,     // this broker cannot do it (RabbitMQ has no backup of its data)
        failed,          // the broker tried and failed (a backup the disk refused, say)
    };
    ManagementError(Reason reason, const std::string& what) : Error(what), reason_(reason) {}
    Reason reason() const noexcept { return reason_; }

private:
    Reason reason_;
};
std::string_view to_string(ManagementError::Reason reason) noexcept;

// Listings leave out what every broker has and nobody declared, so that the same declarations
// list the same on every broker: the default exchange "" and its implicit bindings, and
// RabbitMQ's predeclared amq.* exchanges.
//
// Every member throws ManagementError as above, acemq::ConnectionError when the broker
// cannot be reached or does not answer within ManagementOptions::timeout, InvalidArgument
// for a name that is not one.
class Management {
public:
    virtual ~Management() = default;

    virtual BrokerInfo info() = 0;
    virtual std::vector<ExchangeSummary> exchanges() = 0;  // by name
    virtual std::vector<QueueSummary> queues() = 0;        // by name
    virtual std::vector<BindingDeclaration> bindings() = 0;
    virtual std::vector<SessionSummary> sessions() = 0;

    // The messages at positions [from, from + count) of `queue`, left where they are, in
    // their order. On RabbitMQ a browse takes the messages and puts them back (its API has no
    // other way): they come back in order, marked redelivered.
    virtual std::vector<BrowsedMessage> browse(std::string_view queue, BrowseOptions options = {}) = 0;
    // Drops the ready messages of `queue` and says how many; handed-out ones stay.
    virtual std::uint64_t purge(std::string_view queue) = 0;
    virtual void delete_queue(std::string_view queue, DeleteOptions options = {}) = 0;
    // The exchange and its bindings. The default exchange "" cannot be deleted.
    virtual void delete_exchange(std::string_view exchange) = 0;

    // Copies the data file, while the broker runs, to `path` on the broker's machine
    // (SQLite's online backup): a file that opens as a data file with every message committed
    // when the copy finished. ManagementError unsupported for a broker in memory only and on
    // RabbitMQ; failed when `path` exists or cannot be written.
    virtual BackupResult backup(const std::string& path) = 0;
};

struct ManagementOptions {
    // Each call fails with ConnectionError when the broker has not answered within this.
    std::chrono::milliseconds timeout{10'000};
    // RabbitMQ only: the management HTTP API's base URL ("http://127.0.0.1:15672"); "" takes
    // http://HOST:15672 of the amqp URL. The amqp URL's credentials and vhost are used.
    std::string http_url{};
};

// Management for a URL, the same URLs connect() takes. Throws InvalidArgument for an unknown
// scheme, ConnectionError when the broker cannot be reached.
std::unique_ptr<Management> open_management(std::string_view url, ManagementOptions options = {});

using ManagementFactory = std::function<std::unique_ptr<Management>(std::string_view url, const ManagementOptions&)>;
// Makes `scheme` known to open_management. Replaces an earlier registration.
void register_management(std::string_view scheme, ManagementFactory factory);

}  // namespace acemq
