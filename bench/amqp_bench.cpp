// The AMQP transport and the engine on it, side by side with rabbitmq-c used by hand, in
// one run against one RabbitMQ, on the same queue, with the same JSON payload, persistent
// and mandatory, publisher confirms on:
//   1. one confirmed publish at a time: raw rabbitmq-c (publish, then read frames until its
//      basic.ack), raw with the engine's envelope headers on (the bytes the broker has to
//      parse and store as well), Transport::publish of a message prepared once, and
//      Publisher::send of a struct. Rounds alternate the order of the sides; each round
//      prints each side's mean and p50, and the summary gives p50/p99 over every round and
//      the median of the rounds' ratios (of means and of p50s).
//   2. 1,000 messages: raw pipelined (publish all, then collect the acks, `multiple` ones
//      included; bare and with the envelope headers) against send_all,
//      Transport::publish_batch, and both sides one at a time.
//   3. consuming 10,000 messages, prefetch 100, one ack each: basic.consume by hand against
//      an engine consumer (which also decodes the JSON and reads the envelope).
// The queues are deleted at the end. Figures only, never asserted on. Another process busy
// on the same cores moves these figures by tens of percent: compare rounds, not runs.
//
//   build/bench/amqp_bench [URL] [--rounds=N] [--iterations=N] [--quorum] [--no-consume] [--only-consume] [--quick]
//   (defaults: 10 rounds of 1000 publishes per side, 5 batches, 3 consumes; --quorum adds a
//   quorum queue; --only-consume runs part 3 alone, e.g. under perf record; --quick or
//   ACEMQ_BENCH_QUICK=1: 3 rounds of 300, 3 batches, 1 consume)
//
// URL: argv, else $ACEMQ_TEST_AMQP_URL, else amqp://guest:guest@127.0.0.1:5672/. A broker
// to point it at: source scripts/servers.sh; start_rabbitmq (see there).
#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <acemq/acemq.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "measure.hpp"

using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

struct Order {
    std::string id;
    double total;
};

constexpr int batch_size = 1000;
constexpr int consume_messages = 10000;
constexpr std::uint16_t consume_prefetch = 100;

double micros(Clock::duration elapsed) { return std::chrono::duration<double, std::micro>(elapsed).count(); }
double millis(Clock::duration elapsed) { return std::chrono::duration<double, std::milli>(elapsed).count(); }

using bench::median;
using bench::percentile;

double mean(const std::vector<double>& values) {
    double sum = 0;
    for (double value : values) sum += value;
    return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// ---- rabbitmq-c by hand ---------------------------------------------------------------------

std::string library_error(int status) { return amqp_error_string2(status); }

std::string reply_error(const amqp_rpc_reply_t& reply) {
    switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL: return "ok";
    case AMQP_RESPONSE_NONE: return "no reply";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION: return library_error(reply.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
            const auto* close = static_cast<const amqp_connection_close_t*>(reply.reply.decoded);
            return "connection closed: " + std::to_string(close->reply_code) + " " +
                   std::string(static_cast<const char*>(close->reply_text.bytes), close->reply_text.len);
        }
        if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            const auto* close = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
            return "channel closed: " + std::to_string(close->reply_code) + " " +
                   std::string(static_cast<const char*>(close->reply_text.bytes), close->reply_text.len);
        }
        return "server exception";
    }
    return "unknown reply";
}

amqp_bytes_t bytes_of(std::string_view text) { return amqp_bytes_t{text.size(), const_cast<char*>(text.data())}; }

// The engine's rendered headers as an amqp_table_t, built once: strings and integers are all
// the envelope writes. Points into `headers`, which must outlive it.
class RawHeaders {
public:
    explicit RawHeaders(const acemq::Headers& headers) {
        entries_.reserve(headers.size());
        for (const auto& [name, value] : headers) {
            amqp_table_entry_t entry{};
            entry.key = bytes_of(name);
            if (const auto* text = std::get_if<std::string>(&value.get())) {
                entry.value.kind = AMQP_FIELD_KIND_UTF8;
                entry.value.value.bytes = bytes_of(*text);
            } else if (const auto* small = std::get_if<std::int32_t>(&value.get())) {
                entry.value.kind = AMQP_FIELD_KIND_I32;
                entry.value.value.i32 = *small;
            } else if (const auto* large = std::get_if<std::int64_t>(&value.get())) {
                entry.value.kind = AMQP_FIELD_KIND_I64;
                entry.value.value.i64 = *large;
            } else {
                throw std::logic_error("amqp_bench: header " + name + " has a type the raw side does not lay out");
            }
            entries_.push_back(entry);
        }
        table_.num_entries = static_cast<int>(entries_.size());
        table_.entries = entries_.data();
    }
    const amqp_table_t& get() const noexcept { return table_; }

private:
    std::vector<amqp_table_entry_t> entries_;
    amqp_table_t table_{};
};

// Nothing listens at the URL's host and port.
class Unreachable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// One rabbitmq-c connection used the way its examples use it: channel 1 in confirm mode
// for publishing, channel 2 for purge and delete, channel 3 for consuming.
class Raw {
public:
    static constexpr amqp_channel_t publish_channel = 1;
    static constexpr amqp_channel_t admin_channel = 2;
    static constexpr amqp_channel_t consume_channel = 3;

    explicit Raw(const std::string& url) : state_(amqp_new_connection()) {
        try {
            open(url);
        } catch (...) {
            amqp_destroy_connection(state_);
            throw;
        }
    }

    ~Raw() {
        amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(state_);
    }
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;

    const std::string& broker_version() const noexcept { return broker_version_; }

private:
    void open(const std::string& url) {
        std::string copy = url;  // amqp_parse_url writes into its argument
        amqp_connection_info info{};
        if (amqp_parse_url(copy.data(), &info) != AMQP_STATUS_OK)
            throw std::runtime_error("not an amqp:// URL: " + acemq::redacted_url(url));
        where_ = std::string(info.host) + ":" + std::to_string(info.port);
        if (info.ssl) throw std::runtime_error("this benchmark speaks plain amqp://, not amqps://");
        amqp_socket_t* socket = amqp_tcp_socket_new(state_);
        if (socket == nullptr) throw std::runtime_error("cannot make a socket");
        timeval timeout{5, 0};
        const int opened = amqp_socket_open_noblock(socket, info.host, info.port, &timeout);
        if (opened != AMQP_STATUS_OK) throw Unreachable("cannot connect to " + where_ + ": " + library_error(opened));
        // The transport's login: default channel_max, 128 KiB frames; no heartbeats here,
        // as nothing reads the socket between publishes.
        // "amqp://host/" leaves the vhost empty; the transport (like every client) means "/".
        const char* vhost = info.vhost != nullptr && *info.vhost != '\0' ? info.vhost : "/";
        const amqp_rpc_reply_t login =
            amqp_login(state_, vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info.user, info.password);
        if (login.reply_type != AMQP_RESPONSE_NORMAL)
            throw std::runtime_error("cannot log in to " + where_ + ": " + reply_error(login));
        for (amqp_channel_t channel : {publish_channel, admin_channel, consume_channel}) {
            amqp_channel_open(state_, channel);
            check(amqp_get_rpc_reply(state_), "open a channel");
        }
        amqp_confirm_select(state_, publish_channel);
        check(amqp_get_rpc_reply(state_), "turn on publisher confirms");
        const amqp_table_t* server = amqp_get_server_properties(state_);
        for (int i = 0; server != nullptr && i < server->num_entries; ++i) {
            const amqp_table_entry_t& entry = server->entries[i];
            if (std::string(static_cast<const char*>(entry.key.bytes), entry.key.len) == "version" &&
                entry.value.kind == AMQP_FIELD_KIND_UTF8)
                broker_version_.assign(static_cast<const char*>(entry.value.value.bytes.bytes),
                                       entry.value.value.bytes.len);
        }
    }

public:
    // Writes one persistent, mandatory publish to the default exchange; no wait.
    void publish(const std::string& queue, const acemq::Bytes& body, const std::string& content_type,
                 const RawHeaders* headers, const std::string& message_id) {
        amqp_basic_properties_t properties{};
        properties._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
        properties.content_type = bytes_of(content_type);
        properties.delivery_mode = 2;
        if (headers != nullptr) {
            properties._flags |= AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
            properties.headers = headers->get();
            properties.message_id = bytes_of(message_id);
        }
        const int status =
            amqp_basic_publish(state_, publish_channel, amqp_empty_bytes, bytes_of(queue), 1, 0, &properties,
                               amqp_bytes_t{body.size(), const_cast<std::byte*>(body.data())});
        if (status != AMQP_STATUS_OK) throw std::runtime_error("publish: " + library_error(status));
        ++published_;
    }

    // Reads frames until every publish so far is confirmed (acks with `multiple` set
    // included). Throws on a nack, a return (the bench queues always route) or a close.
    void wait_for_confirms() {
        while (confirmed_through_ < published_) {
            amqp_frame_t frame;
            const int status = amqp_simple_wait_frame(state_, &frame);
            if (status != AMQP_STATUS_OK) throw std::runtime_error("read a confirm: " + library_error(status));
            if (frame.frame_type != AMQP_FRAME_METHOD) continue;  // a return's content
            switch (frame.payload.method.id) {
            case AMQP_BASIC_ACK_METHOD: {
                const auto* ack = static_cast<const amqp_basic_ack_t*>(frame.payload.method.decoded);
                confirm(ack->delivery_tag, ack->multiple != 0);
                break;
            }
            case AMQP_BASIC_NACK_METHOD: throw std::runtime_error("the broker sent basic.nack");
            case AMQP_BASIC_RETURN_METHOD: throw std::runtime_error("the broker returned a publish as unroutable");
            case AMQP_CHANNEL_CLOSE_METHOD: throw std::runtime_error("the broker closed the publish channel");
            case AMQP_CONNECTION_CLOSE_METHOD: throw std::runtime_error("the broker closed the connection");
            default: break;
            }
        }
        amqp_maybe_release_buffers(state_);
    }

    void purge(const std::string& queue) {
        amqp_queue_purge(state_, admin_channel, bytes_of(queue));
        check(amqp_get_rpc_reply(state_), "purge a queue");
    }

    void delete_queue(const std::string& queue) {
        amqp_queue_delete(state_, admin_channel, bytes_of(queue), 0, 0);
        check(amqp_get_rpc_reply(state_), "delete a queue");
    }

    // Consumes `count` messages with a prefetch, acking each; returns when all are acked.
    void consume(const std::string& queue, int count, std::uint16_t prefetch) {
        amqp_basic_qos(state_, consume_channel, 0, prefetch, 0);
        check(amqp_get_rpc_reply(state_), "set the prefetch");
        const amqp_basic_consume_ok_t* ok =
            amqp_basic_consume(state_, consume_channel, bytes_of(queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
        check(amqp_get_rpc_reply(state_), "start consuming");
        const std::string tag(static_cast<const char*>(ok->consumer_tag.bytes), ok->consumer_tag.len);
        std::size_t body_bytes = 0;
        for (int received = 0; received < count;) {
            amqp_envelope_t envelope;
            timeval timeout{30, 0};
            const amqp_rpc_reply_t reply = amqp_consume_message(state_, &envelope, &timeout, 0);
            if (reply.reply_type != AMQP_RESPONSE_NORMAL)
                throw std::runtime_error("consume: " + reply_error(reply) + " after " + std::to_string(received));
            body_bytes += envelope.message.body.len;
            const int acked = amqp_basic_ack(state_, consume_channel, envelope.delivery_tag, 0);
            amqp_destroy_envelope(&envelope);
            if (acked != AMQP_STATUS_OK) throw std::runtime_error("ack: " + library_error(acked));
            ++received;
            amqp_maybe_release_buffers(state_);
        }
        bench::keep(body_bytes);
        amqp_basic_cancel(state_, consume_channel, bytes_of(tag));
        check(amqp_get_rpc_reply(state_), "cancel the consumer");
    }

private:
    void check(const amqp_rpc_reply_t& reply, const char* what) {
        if (reply.reply_type != AMQP_RESPONSE_NORMAL)
            throw std::runtime_error(std::string("cannot ") + what + " on " + where_ + ": " + reply_error(reply));
    }

    void confirm(std::uint64_t tag, bool multiple) {
        if (multiple) {
            confirmed_through_ = std::max(confirmed_through_, tag);
            out_of_order_.erase(out_of_order_.begin(), out_of_order_.upper_bound(confirmed_through_));
        } else if (tag == confirmed_through_ + 1) {
            confirmed_through_ = tag;
        } else if (tag > confirmed_through_) {
            out_of_order_.insert(tag);
        }
        while (!out_of_order_.empty() && *out_of_order_.begin() == confirmed_through_ + 1) {
            confirmed_through_ = *out_of_order_.begin();
            out_of_order_.erase(out_of_order_.begin());
        }
    }

    amqp_connection_state_t state_;
    std::string where_;
    std::string broker_version_ = "?";
    std::uint64_t published_ = 0;          // delivery tags are 1, 2, ... on the confirm channel
    std::uint64_t confirmed_through_ = 0;  // every tag up to here is acked
    std::set<std::uint64_t> out_of_order_;
};

// ---- the sides ----------------------------------------------------------------------------

// Everything both sides share: the connection by hand, the bus, and one message prepared.
struct Setup {
    Setup(Raw& raw_connection, acemq::Bus& the_bus, Order the_order, acemq::Encoded the_body,
          const acemq::Envelope& envelope)
        : raw(raw_connection), bus(the_bus), order(std::move(the_order)), encoded(std::move(the_body)),
          message_id(envelope.id), headers(acemq::render_headers(envelope)), raw_headers(headers) {}
    Setup(const Setup&) = delete;
    Setup& operator=(const Setup&) = delete;

    Raw& raw;
    acemq::Bus& bus;
    const Order order;
    const acemq::Encoded encoded;  // what Publisher::send puts in the body
    const std::string message_id;  // an envelope rendered once, for the prepared sides
    const acemq::Headers headers;
    const RawHeaders raw_headers;  // points into `headers`
};

struct Side {
    const char* name;
    std::function<void(const std::string& queue)> publish_one;  // one publish, confirmed
};

std::vector<Side> single_sides(Setup& setup, acemq::Publisher& publisher) {
    return {
        {"raw rabbitmq-c",
         [&setup](const std::string& queue) {
             setup.raw.publish(queue, setup.encoded.body, setup.encoded.content_type, nullptr, {});
             setup.raw.wait_for_confirms();
         }},
        {"raw rabbitmq-c + envelope headers",
         [&setup](const std::string& queue) {
             setup.raw.publish(queue, setup.encoded.body, setup.encoded.content_type, &setup.raw_headers,
                               setup.message_id);
             setup.raw.wait_for_confirms();
         }},
        {"Transport::publish, prepared message",
         [&setup](const std::string& queue) {
             acemq::OutboundMessage message{
                 "",   queue, setup.encoded.body, setup.encoded.content_type, setup.message_id, setup.headers, {},
                 true, true};
             const acemq::PublishResult result = setup.bus.transport().publish(std::move(message));
             if (!result.confirmed || !result.routed)
                 throw std::runtime_error("transport publish: " + result.return_reason);
         }},
        {"Publisher::send<Order>",
         [&setup, &publisher](const std::string&) { bench::keep(publisher.send(setup.order)); }},
    };
}

// One figure per side, and the four ratios the summary reads: the headline (send / raw),
// what the transport adds on the same bytes, what the envelope's bytes cost the broker,
// and what the engine adds on top of the transport.
struct Ratios {
    double send_raw, transport_raw_headers, headers_raw, send_transport;
    explicit Ratios(const std::vector<double>& side)
        : send_raw(side[3] / side[0]), transport_raw_headers(side[2] / side[1]), headers_raw(side[1] / side[0]),
          send_transport(side[3] / side[2]) {}
};

void print_row(const char* label, const char* statistic, const std::vector<double>& side) {
    const Ratios ratios(side);
    std::printf("  %-6s %-4s %9.1f %9.1f %9.1f %9.1f  | %9.3f %9.3f %9.3f %9.3f\n", label, statistic, side[0], side[1],
                side[2], side[3], ratios.send_raw, ratios.transport_raw_headers, ratios.headers_raw,
                ratios.send_transport);
}

void run_single(Setup& setup, const std::string& queue, const std::string& kind, acemq::Publisher& publisher,
                int rounds, int iterations) {
    std::vector<Side> sides = single_sides(setup, publisher);
    const std::size_t count = sides.size();
    for (auto& side : sides)  // warm-up: connections, allocators, the broker's queue process
        for (int i = 0; i < 300; ++i) side.publish_one(queue);
    setup.raw.purge(queue);

    std::printf("  %-11s %9s %9s %9s %9s  | %9s %9s %9s %9s\n", "round", "raw", "raw+hdrs", "transport", "send",
                "send/raw", "tpt/raw+h", "hdrs/raw", "send/tpt");
    std::vector<std::vector<double>> samples(count);  // every measured publish, per side
    std::vector<Ratios> mean_ratios, p50_ratios;
    for (int round = 0; round < rounds; ++round) {
        std::vector<double> round_mean(count), round_p50(count);
        for (std::size_t k = 0; k < count; ++k) {
            const std::size_t index = round % 2 == 0 ? k : count - 1 - k;
            Side& side = sides[index];
            for (int i = 0; i < 50; ++i) side.publish_one(queue);
            std::vector<double> measured;
            measured.reserve(static_cast<std::size_t>(iterations));
            for (int i = 0; i < iterations; ++i) {
                const auto start = Clock::now();
                side.publish_one(queue);
                measured.push_back(micros(Clock::now() - start));
            }
            setup.raw.purge(queue);  // every side starts from an empty queue
            round_mean[index] = mean(measured);
            round_p50[index] = percentile(measured, 0.5);
            samples[index].insert(samples[index].end(), measured.begin(), measured.end());
        }
        mean_ratios.emplace_back(round_mean);
        p50_ratios.emplace_back(round_p50);
        const std::string label = std::to_string(round + 1) + (round % 2 == 0 ? " >" : " <");
        print_row(label.c_str(), "mean", round_mean);
        print_row("", "p50", round_p50);
    }
    std::printf("  (us per confirmed publish; '>' raw ran first, '<' send ran first)\n");
    for (std::size_t i = 0; i < count; ++i)
        std::printf("  %-44s mean %7.1f  p50 %7.1f  p99 %7.1f us  (%zu)\n", sides[i].name, mean(samples[i]),
                    percentile(samples[i], 0.50), percentile(samples[i], 0.99), samples[i].size());
    auto median_of = [](const std::vector<Ratios>& per_round, double Ratios::*which) {
        std::vector<double> values;
        for (const Ratios& ratios : per_round) values.push_back(ratios.*which);
        return median(values);
    };
    std::printf("  median of the rounds' ratios:                         of means    of p50s\n");
    const std::pair<const char*, double Ratios::*> lines[] = {
        {"Publisher::send / raw", &Ratios::send_raw},
        {"Transport::publish / raw with the same headers", &Ratios::transport_raw_headers},
        {"raw with headers / raw (the envelope's bytes)", &Ratios::headers_raw},
        {"Publisher::send / Transport::publish (the engine)", &Ratios::send_transport},
    };
    for (const auto& [what, which] : lines)
        std::printf("  %-52s %9.3f x  %7.3f x\n", what, median_of(mean_ratios, which), median_of(p50_ratios, which));
    std::printf("  %-52s %9.1f us p50, %.1f us p99\n", "added by send over raw",
                percentile(samples[3], 0.5) - percentile(samples[0], 0.5),
                percentile(samples[3], 0.99) - percentile(samples[0], 0.99));
    // The broker's confirms come in two regimes (about 0.3 ms, or several ms when its fsyncs
    // queue up behind other work on the machine), and a switch between them in mid-run moves
    // the p50 over every round; the median of the rounds' p50 ratios is the ratio to read.
    const double raw_p50 = percentile(samples[0], 0.5), send_p50 = percentile(samples[3], 0.5);
    bench::record({.name = "AMQP one confirmed Publisher::send, p50, " + kind + " queue",
                   .ours = send_p50,
                   .against = "raw rabbitmq-c publish + wait for its basic.ack",
                   .underneath = raw_p50,
                   .unit = "us",
                   .ratio = median_of(p50_ratios, &Ratios::send_raw)});
    bench::record({.name = "AMQP one confirmed Transport::publish, p50, " + kind + " queue",
                   .ours = percentile(samples[2], 0.5),
                   .against = "raw rabbitmq-c with the same envelope headers",
                   .underneath = percentile(samples[1], 0.5),
                   .unit = "us",
                   .ratio = median_of(p50_ratios, &Ratios::transport_raw_headers)});
    bench::record_figure("amqp." + kind + ".single.send.p50", send_p50, "us");
    bench::record_figure("amqp." + kind + ".single.raw.p50", raw_p50, "us");
}

void run_batches(Setup& setup, const std::string& queue, const std::string& kind, acemq::Publisher& publisher,
                 int repetitions) {
    const std::vector<Order> orders(batch_size, setup.order);
    std::vector<Side> sides = {
        {"raw rabbitmq-c pipelined (publish 1000, then acks)",
         [&setup](const std::string& to) {
             for (int i = 0; i < batch_size; ++i)
                 setup.raw.publish(to, setup.encoded.body, setup.encoded.content_type, nullptr, {});
             setup.raw.wait_for_confirms();
         }},
        {"raw rabbitmq-c pipelined, envelope headers",
         [&setup](const std::string& to) {
             for (int i = 0; i < batch_size; ++i)
                 setup.raw.publish(to, setup.encoded.body, setup.encoded.content_type, &setup.raw_headers,
                                   setup.message_id);
             setup.raw.wait_for_confirms();
         }},
        {"Publisher::send_all(1000)", [&](const std::string&) { bench::keep(publisher.send_all(orders)); }},
        {"Transport::publish_batch(1000 prepared)",
         [&setup](const std::string& to) {
             std::vector<acemq::OutboundMessage> messages;
             messages.reserve(batch_size);
             for (int i = 0; i < batch_size; ++i)
                 messages.push_back(acemq::OutboundMessage{.routing_key = to,
                                                           .body = setup.encoded.body,
                                                           .content_type = setup.encoded.content_type,
                                                           .message_id = setup.message_id,
                                                           .headers = setup.headers,
                                                           .mandatory = true});
             for (const auto& result : setup.bus.transport().publish_batch(std::move(messages)))
                 if (!result.confirmed || !result.routed) throw std::runtime_error("batch: " + result.return_reason);
         }},
        {"Publisher::send x 1000, one at a time",
         [&](const std::string&) {
             for (const Order& order : orders) bench::keep(publisher.send(order));
         }},
        {"raw rabbitmq-c x 1000, one at a time",
         [&setup](const std::string& to) {
             for (int i = 0; i < batch_size; ++i) {
                 setup.raw.publish(to, setup.encoded.body, setup.encoded.content_type, nullptr, {});
                 setup.raw.wait_for_confirms();
             }
         }},
    };
    const std::size_t count = sides.size();
    for (auto& side : sides) {  // one warm-up batch each
        side.publish_one(queue);
        setup.raw.purge(queue);
    }
    std::vector<std::vector<double>> ms(count);
    std::printf("  %-7s %10s %10s %10s %10s %10s %10s\n", "rep", "raw pipe", "raw+hdrs", "send_all", "pub_batch",
                "send x1k", "raw x1k");
    for (int rep = 0; rep < repetitions; ++rep) {
        std::vector<double> row(count);
        for (std::size_t k = 0; k < count; ++k) {
            const std::size_t index = rep % 2 == 0 ? k : count - 1 - k;
            const auto start = Clock::now();
            sides[index].publish_one(queue);
            row[index] = millis(Clock::now() - start);
            ms[index].push_back(row[index]);
            setup.raw.purge(queue);
        }
        std::printf("  %-7d %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f\n", rep + 1, row[0], row[1], row[2], row[3],
                    row[4], row[5]);
    }
    std::printf("  (ms per %d messages)\n", batch_size);
    for (std::size_t i = 0; i < count; ++i)
        std::printf("  %-52s %9.2f ms  (median of %d)\n", sides[i].name, median(ms[i]), repetitions);
    bench::report_ratio("send_all / raw pipelined", median(ms[2]), median(ms[0]));
    bench::report_ratio("publish_batch / raw pipelined with the same headers", median(ms[3]), median(ms[1]));
    bench::report_ratio("send x 1000 / raw x 1000 (one at a time)", median(ms[4]), median(ms[5]));
    std::printf("  %-52s %9.1f x faster\n", "send_all against send one at a time", median(ms[4]) / median(ms[2]));
    bench::record({.name = "AMQP send_all(1000), " + kind + " queue",
                   .ours = median(ms[2]),
                   .against = "Transport::publish_batch of the same messages prepared",
                   .underneath = median(ms[3]),
                   .unit = "ms",
                   .aim = 1.10});
    bench::record({.name = "AMQP send_all(1000), " + kind + " queue",
                   .ours = median(ms[2]),
                   .against = "raw rabbitmq-c pipelined (publish 1000, then the acks)",
                   .underneath = median(ms[0]),
                   .unit = "ms"});
    bench::record_figure("amqp." + kind + ".batch.send_all", median(ms[2]), "ms");
    bench::record_figure("amqp." + kind + ".batch.raw", median(ms[0]), "ms");
}

void run_consume(Setup& setup, const std::string& queue, int repetitions) {
    setup.bus.declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    auto fill = [&] {
        for (int sent = 0; sent < consume_messages; sent += batch_size) {
            for (int i = 0; i < batch_size; ++i)
                setup.raw.publish(queue, setup.encoded.body, setup.encoded.content_type, &setup.raw_headers,
                                  setup.message_id);
            setup.raw.wait_for_confirms();
        }
    };
    auto raw_side = [&] {
        const auto start = Clock::now();
        setup.raw.consume(queue, consume_messages, consume_prefetch);
        return Clock::now() - start;
    };
    auto engine_side = [&] {
        std::atomic<int> handled{0};
        const auto start = Clock::now();
        acemq::Consumer consumer = setup.bus.consume<Order>(queue,
                                                            [&](const acemq::Message<Order>& message) {
                                                                bench::keep(message.payload.total);
                                                                handled.fetch_add(1, std::memory_order_relaxed);
                                                                return acemq::accept();
                                                            },
                                                            {.prefetch = consume_prefetch, .declare = false});
        const auto deadline = start + 60s;
        while (handled.load() < consume_messages && Clock::now() < deadline) std::this_thread::sleep_for(100us);
        const auto elapsed = Clock::now() - start;
        consumer.close();
        if (handled.load() < consume_messages)
            throw std::runtime_error("the consumer handled only " + std::to_string(handled.load()) + " in 60 s");
        return elapsed;
    };
    std::vector<double> raw_ms, engine_ms;
    std::printf("  %-7s %12s %12s\n", "rep", "raw ms", "consumer ms");
    for (int rep = 0; rep < repetitions; ++rep) {
        double raw_now = 0, engine_now = 0;
        for (int k = 0; k < 2; ++k) {
            fill();
            if ((k == 0) == (rep % 2 == 0))
                raw_now = millis(raw_side());
            else
                engine_now = millis(engine_side());
            setup.raw.purge(queue);
        }
        raw_ms.push_back(raw_now);
        engine_ms.push_back(engine_now);
        std::printf("  %-7d %12.1f %12.1f\n", rep + 1, raw_now, engine_now);
    }
    const double per_second = 1000.0 * consume_messages;
    std::printf("  %-52s %9.0f msg/s  (%.1f us/msg)\n", "raw basic.consume + basic.ack", per_second / median(raw_ms),
                1000.0 * median(raw_ms) / consume_messages);
    std::printf("  %-52s %9.0f msg/s  (%.1f us/msg)\n", "Bus::consume<Order> (decode, envelope, accept)",
                per_second / median(engine_ms), 1000.0 * median(engine_ms) / consume_messages);
    bench::report_ratio("consumer time / raw time", median(engine_ms), median(raw_ms));
    bench::record({.name = "AMQP consume 10,000, prefetch 100, ack each",
                   .ours = median(engine_ms),
                   .against = "raw rabbitmq-c basic.consume + basic.ack",
                   .underneath = median(raw_ms),
                   .unit = "ms",
                   .aim = 1.05});
    bench::record_figure("amqp.consume.consumer", median(engine_ms), "ms");
    bench::record_figure("amqp.consume.raw", median(raw_ms), "ms");
}

int parse_count(const std::string& argument, const std::string& prefix, int fallback) {
    if (argument.rfind(prefix, 0) != 0) return fallback;
    const int value = std::atoi(argument.c_str() + prefix.size());
    return value > 0 ? value : fallback;
}

}  // namespace

int main(int argc, char** argv) {
    std::string url;
    bool quick = bench::quick_from_environment();
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--quick") quick = true;
    int rounds = quick ? 3 : 10;
    int iterations = quick ? 300 : 1000;
    const int batch_repetitions = quick ? 3 : 5;
    const int consume_repetitions = quick ? 1 : 3;
    bool quorum = false;
    bool consume = true;
    bool publish = true;
    for (int i = 1; i < argc; ++i) {
        const std::string argument = argv[i];
        if (argument == "--quick")
            continue;
        else if (argument.rfind("--rounds=", 0) == 0)
            rounds = parse_count(argument, "--rounds=", rounds);
        else if (argument.rfind("--iterations=", 0) == 0)
            iterations = parse_count(argument, "--iterations=", iterations);
        else if (argument == "--quorum")
            quorum = true;
        else if (argument == "--no-consume")
            consume = false;
        else if (argument == "--only-consume")
            publish = false;
        else if (argument.rfind("--", 0) == 0) {
            std::fprintf(stderr,
                         "usage: %s [URL] [--rounds=N] [--iterations=N] [--quorum] [--no-consume] [--only-consume] "
                         "[--quick]\n",
                         argv[0]);
            return 2;
        } else
            url = argument;
    }
    if (url.empty()) {
        const char* from_environment = std::getenv("ACEMQ_TEST_AMQP_URL");
        url = from_environment != nullptr && *from_environment != '\0' ? from_environment
                                                                       : "amqp://guest:guest@127.0.0.1:5672/";
    }

    std::unique_ptr<Raw> raw;
    try {
        raw = std::make_unique<Raw>(url);
    } catch (const Unreachable& error) {
        std::fprintf(stderr,
                     "amqp_bench: no RabbitMQ answers at %s (%s).\n"
                     "Start one (source scripts/servers.sh; start_rabbitmq) or pass its URL as the first argument.\n",
                     acemq::redacted_url(url).c_str(), error.what());
        return 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "amqp_bench: cannot use the broker at %s: %s\n", acemq::redacted_url(url).c_str(),
                     error.what());
        return 1;
    }

    const std::string classic_queue = "acemq.bench.amqp.classic";
    const std::string quorum_queue = "acemq.bench.amqp.quorum";
    const std::string consume_queue = "acemq.bench.amqp.consume";
    int status = 0;
    std::optional<acemq::Bus> bus;
    try {
        bus.emplace(acemq::connect(url, {.origin = "bench@local", .codec = std::make_shared<acemq::JsonCodec>()}));
        const Order order{"o-1", 42.0};
        acemq::Encoded encoded = acemq::encode(*bus->codec(), order);
        Setup setup(*raw, *bus, order, std::move(encoded),
                    acemq::Envelope::for_new_message(classic_queue, "bench@local"));

        const std::string body(reinterpret_cast<const char*>(setup.encoded.body.data()), setup.encoded.body.size());
        std::printf("RabbitMQ %s at %s, rabbitmq-c %s\n", raw->broker_version().c_str(),
                    acemq::redacted_url(url).c_str(), amqp_version());
        std::printf("payload %s (%zu bytes, %s), persistent, mandatory, confirms on; envelope headers: %zu\n",
                    body.c_str(), body.size(), setup.encoded.content_type.c_str(), setup.headers.size());

        std::vector<std::pair<std::string, acemq::QueueType>> queues = {{classic_queue, acemq::QueueType::classic}};
        if (quorum) queues.emplace_back(quorum_queue, acemq::QueueType::quorum);
        if (!publish) queues.clear();
        for (const auto& [queue, type] : queues) {
            bus->transport().delete_queue(queue);
            bus->declare(acemq::Topology{}.queue(queue, {.type = type}));
            acemq::Publisher publisher = bus->publisher_to_queue(queue, {.mandatory = true});
            const std::string kind(acemq::to_string(type));
            std::printf("\n%s durable queue: one confirmed publish at a time, %d per side, %d rounds\n", kind.c_str(),
                        iterations, rounds);
            run_single(setup, queue, kind, publisher, rounds, iterations);
            std::printf("\n%s durable queue: %d messages\n", kind.c_str(), batch_size);
            run_batches(setup, queue, kind, publisher, batch_repetitions);
        }
        if (consume) {
            bus->transport().delete_queue(consume_queue);
            std::printf("\nclassic durable queue: consume %d messages, prefetch %d, one ack each\n", consume_messages,
                        consume_prefetch);
            run_consume(setup, consume_queue, consume_repetitions);
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "amqp_bench: %s\n", error.what());
        status = 1;
    }
    // Leave nothing behind, whatever happened above.
    for (const std::string& queue : {classic_queue, quorum_queue, consume_queue}) {
        try {
            raw->delete_queue(queue);
        } catch (const std::exception& error) {
            std::fprintf(stderr, "amqp_bench: could not delete queue %s: %s\n", queue.c_str(), error.what());
            status = 1;
            break;
        }
    }
    if (bus) bus->close();
    return status;
}
