#include <acemq/metrics.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <map>
#include <mutex>

namespace acemq {

namespace {

// Prometheus allows [a-zA-Z_:][a-zA-Z0-9_:]* in metric names, the same without ':' in label
// names; anything else (the family's dots first of all) becomes '_'.
std::string prometheus_name(std::string_view name, bool allow_colon) {
    std::string out(name);
    for (char& c : out) {
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
        if (!letter && !(c >= '0' && c <= '9')) c = '_';
    }
    if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
    return out;
}

std::string escaped(std::string_view value) {
    std::string out;
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string label_text(const Labels& labels) {
    if (labels.empty()) return "";
    std::string out = "{";
    for (const auto& [name, value] : labels) {
        if (out.size() > 1) out += ',';
        out += prometheus_name(name, false) + "=\"" + escaped(value) + "\"";
    }
    return out + "}";
}

// Shortest text that reads back as the same double; whole numbers come out without a point.
std::string number(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    char text[64];
    auto [end, error] = std::to_chars(text, text + sizeof text, value);
    return std::string(text, end);
}

std::string_view help_of(std::string_view name) {
    static const std::map<std::string_view, std::string_view> help = {
        {metric::publish_total, "Messages published, by destination and outcome."},
        {metric::publish_duration, "Seconds from a publish call to the broker's answer."},
        {metric::consume_total, "Deliveries settled, by queue and the consumer's decision."},
        {metric::consume_duration, "Seconds a handler took, by queue and outcome."},
        {metric::consume_in_flight, "Deliveries being handled now."},
        {metric::retried_total, "Deliveries retried (a second view of consume total, outcome retried)."},
        {metric::dead_lettered_total, "Deliveries dead-lettered or parked."},
        {metric::set_aside_failed, "Deliveries that could not be set aside (dead-lettered or parked)."},
        {metric::rung_missing, "Retries whose retry rung queue was missing; worth an alert."},
        {metric::outbox_total, "Outbox records relayed, by destination and outcome."},
        {metric::outbox_lag, "Seconds from an outbox record's commit to its publish."},
        {metric::request_total, "Requests sent, by outcome."},
        {metric::request_duration, "Seconds from a request to its answer."},
        {metric::consume_attempts, "Attempts a delivery took (a count, not seconds)."},
        {metric::idempotency_duplicates, "Deliveries found already done and acked without the handler."},
        {metric::messages_without_id, "Deliveries that carried no id and were given one; redeliveries get another."},
        {metric::connection_state, "1 for the state the connection to the broker is in, 0 for the others."},
        {metric::connection_lost_total, "Times the connection to the broker was lost."},
        {metric::connection_recoveries_total, "Times a lost connection to the broker was recovered."},
        {metric::connection_disconnected_duration, "Seconds each outage of the connection lasted, once over."},
        {metric::broker_queue_ready, "Messages waiting in the queue to be delivered."},
        {metric::broker_queue_unacked, "Messages of the queue handed out and not settled yet."},
        {metric::broker_queue_consumers, "Consumers of the queue."},
        {metric::broker_queue_bytes, "Bytes of the bodies of the queue's ready and unacked messages."},
        {metric::broker_queue_oldest_age, "Seconds the queue's oldest ready message has waited."},
        {metric::broker_published_total, "Messages published to the broker since it started."},
        {metric::broker_delivered_total, "Messages handed to consumers since the broker started, redeliveries too."},
        {metric::broker_acked_total, "Deliveries acked since the broker started."},
        {metric::broker_commits_total, "Commits to the data file since the broker started."},
        {metric::broker_commit_latency_mean, "Mean seconds a commit to the data file took."},
        {metric::broker_commit_latency_max, "Most seconds a commit to the data file took."},
        {metric::broker_data_bytes, "Bytes of the broker's data file."},
        {metric::broker_wal_bytes, "Bytes of the data file's write-ahead log."},
        {metric::broker_free_disk_bytes, "Bytes free on the data file's file system."},
        {metric::broker_quarantined, "Stored messages set aside as damaged (their checksum failed)."},
        {metric::broker_sessions, "Clients connected to the broker now."},
        {metric::broker_uptime, "Seconds since the broker started."},
        {metric::broker_info, "1, labelled with the broker's product, version and name."},
    };
    auto found = help.find(name);
    return found == help.end() ? std::string_view("An acemq-cpp metric.") : found->second;
}

// The default instruments: the name and labels kept, each call forwarded to the Metrics.
class ForwardingCounter final : public Counter {
public:
    ForwardingCounter(Metrics& metrics, std::string_view name, Labels labels)
        : metrics_(metrics), name_(name), labels_(std::move(labels)) {}
    void add(std::int64_t delta) override { metrics_.count(name_, delta, labels_); }

private:
    Metrics& metrics_;
    std::string name_;
    Labels labels_;
};

class ForwardingDistribution final : public Distribution {
public:
    ForwardingDistribution(Metrics& metrics, std::string_view name, Labels labels)
        : metrics_(metrics), name_(name), labels_(std::move(labels)) {}
    void record(double value) override { metrics_.observe(name_, value, labels_); }

private:
    Metrics& metrics_;
    std::string name_;
    Labels labels_;
};

class ForwardingGauge final : public Gauge {
public:
    ForwardingGauge(Metrics& metrics, std::string_view name, Labels labels)
        : metrics_(metrics), name_(name), labels_(std::move(labels)) {}
    void set(double value) override {
        std::lock_guard guard(lock_);
        value_ = value;
        metrics_.gauge(name_, value_, labels_);
    }
    void add(double delta) override {
        std::lock_guard guard(lock_);
        value_ += delta;
        metrics_.gauge(name_, value_, labels_);
    }

private:
    Metrics& metrics_;
    std::string name_;
    Labels labels_;
    std::mutex lock_;  // keeps value_ and the order of the gauge() calls in step
    double value_ = 0;
};

}  // namespace

// The instruments hold the Metrics by reference: whoever binds keeps the Metrics alive as
// long as its instruments (the engine holds both).
std::shared_ptr<Counter> Metrics::bind_counter(std::string_view name, const Labels& labels) {
    return std::make_shared<ForwardingCounter>(*this, name, labels);
}
std::shared_ptr<Distribution> Metrics::bind_distribution(std::string_view name, const Labels& labels) {
    return std::make_shared<ForwardingDistribution>(*this, name, labels);
}
std::shared_ptr<Gauge> Metrics::bind_gauge(std::string_view name, const Labels& labels) {
    return std::make_shared<ForwardingGauge>(*this, name, labels);
}

// Named, not anonymous: InMemoryMetrics::Cells (declared in the public header) holds these
// types, and a class with external linkage may not hold types of an anonymous namespace
// (g++'s -Wsubobject-linkage, which the unity builds see).
namespace metric_cells {

struct CounterCell {
    std::atomic<std::int64_t> value{0};
};
struct SummaryCell {
    mutable std::mutex lock;
    InMemoryMetrics::Summary summary;
    void record(double value) {
        std::lock_guard guard(lock);
        summary.min = summary.count == 0 ? value : std::min(summary.min, value);
        summary.max = summary.count == 0 ? value : std::max(summary.max, value);
        ++summary.count;
        summary.sum += value;
    }
};
struct GaugeCell {
    std::atomic<double> value{0};
};

class CellCounter final : public Counter {
public:
    explicit CellCounter(CounterCell& cell) : cell_(cell) {}
    void add(std::int64_t delta) override { cell_.value.fetch_add(delta, std::memory_order_relaxed); }

private:
    CounterCell& cell_;
};

class CellDistribution final : public Distribution {
public:
    explicit CellDistribution(SummaryCell& cell) : cell_(cell) {}
    void record(double value) override { cell_.record(value); }

private:
    SummaryCell& cell_;
};

class CellGauge final : public Gauge {
public:
    explicit CellGauge(GaugeCell& cell) : cell_(cell) {}
    void set(double value) override { cell_.value.store(value, std::memory_order_relaxed); }
    void add(double delta) override { cell_.value.fetch_add(delta, std::memory_order_relaxed); }

private:
    GaugeCell& cell_;
};

using Key = std::pair<std::string, Labels>;  // name, labels sorted by tag name

Key key_of(std::string_view name, const Labels& labels) {
    Labels sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    return {std::string(name), std::move(sorted)};
}

// The cell of `key` in `cells`, made when there is none.
template <class Cell>
Cell& cell_of(std::map<Key, Cell>& cells, std::mutex& lock, std::string_view name, const Labels& labels) {
    Key key = key_of(name, labels);
    std::lock_guard guard(lock);
    return cells.try_emplace(std::move(key)).first->second;
}

}  // namespace metric_cells

// A bound instrument goes straight to its cell (an atomic, or a summary under its own small
// lock): no shared lock and no key built per call. Cells live in map nodes, which never
// move: a reference to one stays good while the map grows.
struct InMemoryMetrics::Cells {
    using Key = metric_cells::Key;
    using CounterCell = metric_cells::CounterCell;
    using SummaryCell = metric_cells::SummaryCell;
    using GaugeCell = metric_cells::GaugeCell;

    mutable std::mutex lock;  // guards the maps' structure only, never a cell's value
    std::map<Key, CounterCell> counters;
    std::map<Key, SummaryCell> summaries;
    std::map<Key, GaugeCell> gauges;

    CounterCell& counter(std::string_view name, const Labels& labels) {
        return metric_cells::cell_of(counters, lock, name, labels);
    }
    SummaryCell& summary(std::string_view name, const Labels& labels) {
        return metric_cells::cell_of(summaries, lock, name, labels);
    }
    GaugeCell& gauge(std::string_view name, const Labels& labels) {
        return metric_cells::cell_of(gauges, lock, name, labels);
    }
};

InMemoryMetrics::InMemoryMetrics() : cells_(std::make_unique<Cells>()) {}
InMemoryMetrics::~InMemoryMetrics() = default;

void InMemoryMetrics::count(std::string_view name, std::int64_t delta, const Labels& labels) {
    cells_->counter(name, labels).value.fetch_add(delta, std::memory_order_relaxed);
}
void InMemoryMetrics::observe(std::string_view name, double seconds, const Labels& labels) {
    cells_->summary(name, labels).record(seconds);
}
void InMemoryMetrics::gauge(std::string_view name, double value, const Labels& labels) {
    cells_->gauge(name, labels).value.store(value, std::memory_order_relaxed);
}

std::shared_ptr<Counter> InMemoryMetrics::bind_counter(std::string_view name, const Labels& labels) {
    return std::make_shared<metric_cells::CellCounter>(cells_->counter(name, labels));
}
std::shared_ptr<Distribution> InMemoryMetrics::bind_distribution(std::string_view name, const Labels& labels) {
    return std::make_shared<metric_cells::CellDistribution>(cells_->summary(name, labels));
}
std::shared_ptr<Gauge> InMemoryMetrics::bind_gauge(std::string_view name, const Labels& labels) {
    return std::make_shared<metric_cells::CellGauge>(cells_->gauge(name, labels));
}

std::int64_t InMemoryMetrics::counter(std::string_view name, const Labels& labels) const {
    const metric_cells::Key key = metric_cells::key_of(name, labels);
    std::lock_guard guard(cells_->lock);
    auto found = cells_->counters.find(key);
    return found == cells_->counters.end() ? 0 : found->second.value.load(std::memory_order_relaxed);
}

InMemoryMetrics::Summary InMemoryMetrics::summary(std::string_view name, const Labels& labels) const {
    const metric_cells::Key key = metric_cells::key_of(name, labels);
    std::lock_guard guard(cells_->lock);
    auto found = cells_->summaries.find(key);
    if (found == cells_->summaries.end()) return Summary{};
    std::lock_guard cell(found->second.lock);
    return found->second.summary;
}

double InMemoryMetrics::gauge_value(std::string_view name, const Labels& labels) const {
    const metric_cells::Key key = metric_cells::key_of(name, labels);
    std::lock_guard guard(cells_->lock);
    auto found = cells_->gauges.find(key);
    return found == cells_->gauges.end() ? 0.0 : found->second.value.load(std::memory_order_relaxed);
}

namespace {

// One family of the exposition: its samples must be written together, under one HELP and
// one TYPE line.
struct Family {
    std::string name;
    std::string_view kind;
    std::string help;
    std::string samples;
};

class Exposition {
public:
    // Two names that differ only in characters Prometheus does not allow meet in one family
    // when they are of one kind; of another kind, the second gets its kind as a suffix rather
    // than a second TYPE line that would make the whole scrape invalid.
    Family& family(std::string name, std::string_view kind, std::string_view help) {
        auto found = families_.find(name);
        if (found != families_.end() && found->second.kind != kind) {
            name += "_" + std::string(kind);
            found = families_.find(name);
        }
        if (found == families_.end()) {
            found = families_.emplace(name, Family{name, kind, std::string(help), {}}).first;
        }
        return found->second;
    }
    std::string text() const {
        std::string out;
        for (const auto& [name, family] : families_) {
            out += "# HELP " + name + " " + family.help + "\n";
            out += "# TYPE " + name + " " + std::string(family.kind) + "\n";
            out += family.samples;
        }
        return out;
    }

private:
    std::map<std::string, Family> families_;
};

void sample(Family& family, std::string_view suffix, const Labels& labels, const std::string& value) {
    family.samples += family.name + std::string(suffix) + label_text(labels) + " " + value + "\n";
}

}  // namespace

std::string InMemoryMetrics::prometheus_text() const {
    Exposition exposition;
    std::lock_guard guard(cells_->lock);
    for (const auto& [key, cell] : cells_->counters) {
        const std::string name = prometheus_name(key.first, true);
        Family& family = exposition.family(name, "counter", help_of(key.first));
        sample(family, "", key.second, std::to_string(cell.value.load(std::memory_order_relaxed)));
    }
    for (const auto& [key, cell] : cells_->summaries) {
        Summary summary;
        {
            std::lock_guard cell_guard(cell.lock);
            summary = cell.summary;
        }
        const std::string name = prometheus_name(key.first, true);
        const std::string help(help_of(key.first));
        Family& family = exposition.family(name, "summary", help);
        sample(family, "_count", key.second, std::to_string(summary.count));
        sample(family, "_sum", key.second, number(summary.sum));
        sample(exposition.family(name + "_min", "gauge", "The smallest value so far of " + name + "."), "", key.second,
               number(summary.min));
        sample(exposition.family(name + "_max", "gauge", "The largest value so far of " + name + "."), "", key.second,
               number(summary.max));
    }
    for (const auto& [key, cell] : cells_->gauges) {
        const std::string name = prometheus_name(key.first, true);
        Family& family = exposition.family(name, "gauge", help_of(key.first));
        sample(family, "", key.second, number(cell.value.load(std::memory_order_relaxed)));
    }
    return exposition.text();
}

}  // namespace acemq
