#include <acemq/metrics.hpp>

#include <algorithm>
#include <cstdio>
#include <mutex>

namespace acemq {

namespace {

std::string prometheus_name(std::string_view name) {
    std::string out(name);
    std::replace(out.begin(), out.end(), '.', '_');
    return out;
}

std::string escaped(std::string_view value) {
    std::string out;
    for (char c : value) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

std::string label_text(const Labels& labels) {
    if (labels.empty()) return "";
    std::string out = "{";
    for (const auto& [name, value] : labels) {
        if (out.size() > 1) out += ',';
        out += prometheus_name(name) + "=\"" + escaped(value) + "\"";
    }
    return out + "}";
}

std::string number(double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
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

InMemoryMetrics::Key InMemoryMetrics::key_of(std::string_view name, const Labels& labels) {
    Labels sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    return {std::string(name), std::move(sorted)};
}

void InMemoryMetrics::count(std::string_view name, std::int64_t delta, const Labels& labels) {
    std::lock_guard guard(lock_);
    counters_[key_of(name, labels)] += delta;
}

void InMemoryMetrics::observe(std::string_view name, double seconds, const Labels& labels) {
    std::lock_guard guard(lock_);
    Summary& summary = summaries_[key_of(name, labels)];
    summary.min = summary.count == 0 ? seconds : std::min(summary.min, seconds);
    summary.max = summary.count == 0 ? seconds : std::max(summary.max, seconds);
    ++summary.count;
    summary.sum += seconds;
}

void InMemoryMetrics::gauge(std::string_view name, double value, const Labels& labels) {
    std::lock_guard guard(lock_);
    gauges_[key_of(name, labels)] = value;
}

std::int64_t InMemoryMetrics::counter(std::string_view name, const Labels& labels) const {
    std::lock_guard guard(lock_);
    auto found = counters_.find(key_of(name, labels));
    return found == counters_.end() ? 0 : found->second;
}

InMemoryMetrics::Summary InMemoryMetrics::summary(std::string_view name, const Labels& labels) const {
    std::lock_guard guard(lock_);
    auto found = summaries_.find(key_of(name, labels));
    return found == summaries_.end() ? Summary{} : found->second;
}

double InMemoryMetrics::gauge_value(std::string_view name, const Labels& labels) const {
    std::lock_guard guard(lock_);
    auto found = gauges_.find(key_of(name, labels));
    return found == gauges_.end() ? 0.0 : found->second;
}

std::string InMemoryMetrics::prometheus_text() const {
    std::lock_guard guard(lock_);
    std::string out;
    std::string typed;  // the last metric whose TYPE line was written
    auto type_line = [&](const std::string& name, const char* kind) {
        if (name == typed) return;
        out += "# TYPE " + name + " " + kind + "\n";
        typed = name;
    };
    for (const auto& [key, value] : counters_) {
        const std::string name = prometheus_name(key.first);
        type_line(name, "counter");
        out += name + label_text(key.second) + " " + std::to_string(value) + "\n";
    }
    for (const auto& [key, summary] : summaries_) {
        const std::string name = prometheus_name(key.first);
        type_line(name, "summary");
        out += name + "_count" + label_text(key.second) + " " + std::to_string(summary.count) + "\n";
        out += name + "_sum" + label_text(key.second) + " " + number(summary.sum) + "\n";
    }
    for (const auto& [key, value] : gauges_) {
        const std::string name = prometheus_name(key.first);
        type_line(name, "gauge");
        out += name + label_text(key.second) + " " + number(value) + "\n";
    }
    return out;
}

}  // namespace acemq
