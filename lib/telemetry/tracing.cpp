#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/tracing.hpp>

#include "rfc3339.hpp"
#include "telemetry.hpp"

#include <pthread.h>
#include <sys/random.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <ostream>
#include <random>
#include <system_error>
#include <type_traits>

namespace acemq {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";
constexpr std::size_t tracestate_limit = 512;

// Writes two lowercase hex digits per byte at `at`; returns where it stopped.
char* write_hex(char* at, std::span<const std::uint8_t> bytes) noexcept {
    for (const std::uint8_t byte : bytes) {
        *at++ = hex_digits[byte >> 4];
        *at++ = hex_digits[byte & 0x0F];
    }
    return at;
}

template <std::size_t N>
void append_hex(std::string& out, const std::array<std::uint8_t, N>& bytes) {
    char text[2 * N];
    out.append(text, write_hex(text, bytes));
}

template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& bytes) {
    std::string text;
    text.reserve(2 * N);
    append_hex(text, bytes);
    return text;
}

int lower_hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// Fills `out` from lowercase hex; false on any other character.
template <std::size_t N>
bool from_hex(std::string_view text, std::array<std::uint8_t, N>& out) {
    for (std::size_t i = 0; i < N; ++i) {
        int high = lower_hex_value(text[2 * i]);
        int low = lower_hex_value(text[2 * i + 1]);
        if (high < 0 || low < 0) return false;
        out[i] = static_cast<std::uint8_t>(high << 4 | low);
    }
    return true;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& bytes) {
    for (auto byte : bytes)
        if (byte != 0) return false;
    return true;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

// W3C: a tracestate too long is cut between list members, never inside one.
std::string bounded_tracestate(std::string_view state) {
    state = trim(state);
    if (state.size() <= tracestate_limit) return std::string(state);
    auto cut = state.rfind(',', tracestate_limit);
    if (cut == std::string_view::npos) return {};
    return std::string(trim(state.substr(0, cut)));
}

// A forked child must not draw the same ids as its parent: the fork generation makes every
// thread reseed.
std::atomic<unsigned> fork_generation{0};
const int fork_hook_installed = pthread_atfork(nullptr, nullptr, [] { ++fork_generation; });

class IdSource {
public:
    template <std::size_t N>
    void fill_nonzero(std::array<std::uint8_t, N>& out) {
        if (generation_ != fork_generation.load(std::memory_order_relaxed) || !seeded_) reseed();
        do {
            for (std::size_t i = 0; i < N; i += 8) {
                auto word = engine_();
                for (std::size_t j = i; j < N && j < i + 8; ++j) {
                    out[j] = static_cast<std::uint8_t>(word);
                    word >>= 8;
                }
            }
        } while (all_zero(out));
    }

private:
    void reseed() {
        std::array<std::uint32_t, 16> seed{};
        auto* bytes = reinterpret_cast<unsigned char*>(seed.data());
        std::size_t filled = 0;
        while (filled < sizeof seed) {
            ssize_t got = getrandom(bytes + filled, sizeof seed - filled, 0);
            if (got < 0) {
                if (errno == EINTR) continue;
                throw Error(
                    "acemq: the kernel's random source (getrandom) failed: " + std::generic_category().message(errno) +
                    "; no trace or span id can be made without it, so let the process call getrandom");
            }
            filled += static_cast<std::size_t>(got);
        }
        std::seed_seq sequence(seed.begin(), seed.end());
        engine_.seed(sequence);
        generation_ = fork_generation.load(std::memory_order_relaxed);
        seeded_ = true;
    }

    std::mt19937_64 engine_;
    unsigned generation_ = 0;
    bool seeded_ = false;
};

IdSource& id_source() {
    (void)fork_hook_installed;
    thread_local IdSource source;
    return source;
}

thread_local const TraceContext* current = nullptr;
thread_local Span* current_delivery_span = nullptr;

const FieldValue* header_of(const Headers& headers, std::string_view name) {
    auto at = headers.find(name);
    return at == headers.end() ? nullptr : &at->second;
}

}  // namespace

bool TraceContext::valid() const noexcept { return !all_zero(trace_id) && !all_zero(span_id); }

std::string TraceContext::trace_id_hex() const { return to_hex(trace_id); }
std::string TraceContext::span_id_hex() const { return to_hex(span_id); }

std::string TraceContext::traceparent() const {
    // Every publish writes one: filled in a buffer, then made a string once.
    constexpr std::size_t length = 55;
    char text[length] = {'0', '0', '-'};
    char* at = write_hex(text + 3, trace_id);
    *at++ = '-';
    at = write_hex(at, span_id);
    *at++ = '-';
    write_hex(at, std::span(&flags, 1));
    return std::string(text, length);
}

std::optional<TraceContext> TraceContext::parse(std::string_view traceparent, std::string_view tracestate) {
    // version(2) '-' trace-id(32) '-' parent-id(16) '-' flags(2)
    constexpr std::size_t length = 55;
    if (traceparent.size() < length) return std::nullopt;
    std::array<std::uint8_t, 1> version{};
    if (!from_hex(traceparent.substr(0, 2), version) || version[0] == 0xFF) return std::nullopt;
    if (traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-') return std::nullopt;
    // Version 00 has exactly four fields; a later one may append its own after a '-'.
    if (version[0] == 0x00 ? traceparent.size() != length : traceparent.size() > length && traceparent[length] != '-')
        return std::nullopt;

    TraceContext context;
    std::array<std::uint8_t, 1> flags{};
    if (!from_hex(traceparent.substr(3, 32), context.trace_id) ||
        !from_hex(traceparent.substr(36, 16), context.span_id) || !from_hex(traceparent.substr(53, 2), flags))
        return std::nullopt;
    if (!context.valid()) return std::nullopt;
    context.flags = flags[0];
    context.state = bounded_tracestate(tracestate);
    return context;
}

TraceContext TraceContext::new_root() {
    TraceContext context;
    id_source().fill_nonzero(context.trace_id);
    id_source().fill_nonzero(context.span_id);
    context.flags = 0x01;
    return context;
}

TraceContext TraceContext::new_child() const {
    TraceContext child = *this;
    id_source().fill_nonzero(child.span_id);
    return child;
}

std::optional<TraceContext> extract_trace(const Headers& headers) {
    const FieldValue* parent = header_of(headers, traceparent_header);
    if (parent == nullptr) return std::nullopt;
    const auto* parent_text = std::get_if<std::string>(&parent->get());
    if (parent_text == nullptr) return std::nullopt;
    std::string_view state;
    if (const FieldValue* state_value = header_of(headers, tracestate_header)) {
        if (const auto* state_text = std::get_if<std::string>(&state_value->get())) state = *state_text;
    }
    return TraceContext::parse(*parent_text, state);
}

void inject_trace(const TraceContext& context, Headers& headers) {
    headers.insert_or_assign(std::string(traceparent_header), FieldValue(context.traceparent()));
    if (context.state.empty()) {
        headers.erase(tracestate_header);
    } else {
        headers.insert_or_assign(std::string(tracestate_header), FieldValue(context.state));
    }
}

AttributeValue to_owned(const AttributeValueView& value) {
    return std::visit(
        [](const auto& held) -> AttributeValue {
            if constexpr (std::is_same_v<std::decay_t<decltype(held)>, std::string_view>)
                return std::string(held);
            else
                return held;
        },
        value);
}

Attributes to_owned(std::span<const AttributeView> attributes) {
    Attributes owned;
    owned.reserve(attributes.size());
    for (const AttributeView& attribute : attributes)
        owned.emplace_back(std::string(attribute.key), to_owned(attribute.value));
    return owned;
}

std::string_view to_string(SpanKind kind) {
    switch (kind) {
    case SpanKind::internal: return "INTERNAL";
    case SpanKind::producer: return "PRODUCER";
    case SpanKind::consumer: return "CONSUMER";
    case SpanKind::client: return "CLIENT";
    }
    return "INTERNAL";
}

const TraceContext* current_trace() noexcept { return current; }

Span* current_span() noexcept { return current_delivery_span; }

namespace detail {
SpanScope::SpanScope(Span& span) noexcept : previous_(current_delivery_span) { current_delivery_span = &span; }
SpanScope::~SpanScope() { current_delivery_span = previous_; }
}  // namespace detail

TraceScope::TraceScope(const TraceContext& context) noexcept : previous_(current) { current = &context; }
TraceScope::~TraceScope() { current = previous_; }

namespace {

using WallClock = std::chrono::system_clock;

void append_integer(std::string& out, std::int64_t value) {
    char digits[24];
    const auto result = std::to_chars(digits, digits + sizeof digits, value);
    out.append(digits, result.ptr);
}

// True when some byte of `text` needs escaping in a JSON string (a control character, '"'
// or '\'). Eight bytes at a time: every name, key and value of every span goes through here.
bool needs_escaping(std::string_view text) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    // Exact as a yes/no: some byte of `word` is below `limit` (limit <= 0x80).
    const auto any_below = [](std::uint64_t word, std::uint64_t limit) {
        return (word - ones * limit) & ~word & highs;
    };
    const auto any_equal = [&](std::uint64_t word, std::uint64_t byte) { return any_below(word ^ (ones * byte), 1); };
    const auto escapes = [&](std::uint64_t word) {
        return (any_below(word, 0x20) | any_equal(word, '"') | any_equal(word, '\\')) != 0;
    };
    std::size_t at = 0;
    for (; at + 8 <= text.size(); at += 8) {
        std::uint64_t word;
        std::memcpy(&word, text.data() + at, sizeof word);
        if (escapes(word)) return true;
    }
    if (at == text.size()) return false;
    // The last few bytes in one word too, padded with a byte that needs no escaping.
    std::uint64_t tail = ones * 'a';
    std::memcpy(&tail, text.data() + at, text.size() - at);
    return escapes(tail);
}

// What json_quoted writes, without its temporary string when nothing needs escaping.
void append_quoted(std::string& out, std::string_view text) {
    if (needs_escaping(text)) {
        out += json_quoted(text);
        return;
    }
    out += '"';
    out += text;
    out += '"';
}

AttributeValueView view_of(const AttributeValue& value) {
    return std::visit([](const auto& held) { return AttributeValueView(held); }, value);
}

void append_value(std::string& out, const AttributeValueView& value) {
    if (const auto* text = std::get_if<std::string_view>(&value)) {
        append_quoted(out, *text);
    } else if (const auto* integer = std::get_if<std::int64_t>(&value)) {
        append_integer(out, *integer);
    } else if (const auto* number = std::get_if<double>(&value)) {
        // JSON has no NaN or infinity.
        if (!std::isfinite(*number)) {
            out += "null";
            return;
        }
        char digits[32];
        auto result = std::to_chars(digits, digits + sizeof digits, *number);
        out.append(digits, result.ptr);
    } else {
        out += std::get<bool>(value) ? "true" : "false";
    }
}

// One `"key":value` member, after a ',' unless it opens its object.
void append_member(std::string& out, std::string_view key, const AttributeValueView& value) {
    if (out.back() != '{') out += ',';
    append_quoted(out, key);
    out += ':';
    append_value(out, value);
}

void append_attributes(std::string& out, const Attributes& attributes) {
    out += '{';
    for (const auto& [key, value] : attributes) append_member(out, key, view_of(value));
    out += '}';
}

struct Event {
    std::string name;
    WallClock::time_point time;
    Attributes attributes;
};

struct LineWriter {
    std::mutex lock;
    std::function<void(std::string_view)> write;
};

// A publish span's line is about 600 bytes; a line longer than this grows as usual.
constexpr std::size_t rendered_size_guess = 1024;

// A span renders its line as it goes, on the thread that publishes or settles: everything
// known at the start goes into the line at once (the start's attributes are borrowed, so
// they are never copied), the attributes object stays open at the end of the line for
// set_attribute, and end() closes it and adds what only the end knows.
class JsonSpan final : public Span {
public:
    JsonSpan(std::shared_ptr<LineWriter> writer, const SpanStart& start)
        : writer_(std::move(writer)),
          context_(start.parent != nullptr ? start.parent->new_child() : TraceContext::new_root()),
          started_steady_(std::chrono::steady_clock::now()) {
        line_.reserve(rendered_size_guess);
        line_ += "{\"name\":";
        append_quoted(line_, start.name);
        line_ += ",\"kind\":\"";
        line_ += to_string(start.kind);
        line_ += "\",\"traceId\":\"";
        append_hex(line_, context_.trace_id);
        line_ += "\",\"spanId\":\"";
        append_hex(line_, context_.span_id);
        line_ += '"';
        if (start.parent != nullptr) {
            line_ += ",\"parentSpanId\":\"";
            append_hex(line_, start.parent->span_id);
            line_ += '"';
        }
        line_ += ",\"start\":\"";
        detail::append_rfc3339(line_, WallClock::now(), detail::SecondFraction::micros);
        line_ += "\",\"attributes\":";
        attributes_at_ = line_.size();
        line_ += '{';
        for (const AttributeView& attribute : start.attributes) add_attribute(attribute.key, attribute.value);
    }

    ~JsonSpan() override {
        // A destructor must not throw; a sink that fails loses this one line.
        try {
            end();
        } catch (...) {}
    }

    const TraceContext& context() const override { return context_; }

    void set_attribute(std::string_view key, AttributeValue value) override {
        if (ended_) return;
        if ((written_keys_ & mark_of(key)) != 0) erase_attribute(key);
        add_attribute(key, view_of(value));
    }

    void add_event(std::string_view name, Attributes attributes) override {
        if (ended_) return;
        events_.push_back({std::string(name), WallClock::now(), std::move(attributes)});
    }

    void set_error(std::string_view description) override {
        error_ = true;
        error_description_ = description;
    }

    void end() override {
        if (ended_) return;
        ended_ = true;
        auto duration =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started_steady_);
        line_ += "},\"durationMicros\":";
        append_integer(line_, duration.count());
        if (error_) {
            line_ += ",\"status\":\"ERROR\"";
            if (!error_description_.empty()) {
                line_ += ",\"statusDescription\":";
                append_quoted(line_, error_description_);
            }
        }
        line_ += ",\"events\":[";
        bool first = true;
        for (const auto& event : events_) {
            if (!first) line_ += ',';
            first = false;
            line_ += "{\"name\":";
            append_quoted(line_, event.name);
            line_ += ",\"time\":\"";
            detail::append_rfc3339(line_, event.time, detail::SecondFraction::micros);
            line_ += "\",\"attributes\":";
            append_attributes(line_, event.attributes);
            line_ += '}';
        }
        line_ += "],\"scope\":";
        append_quoted(line_, tracing_scope);
        line_ += '}';
        std::lock_guard guard(writer_->lock);
        writer_->write(line_);
    }

private:
    // One bit of 64 for a key: set_attribute searches the line for a key only when its bit
    // says the key may be there, which a new key's seldom is.
    static std::uint64_t mark_of(std::string_view key) noexcept {
        return std::uint64_t{1} << (std::hash<std::string_view>{}(key)&63);
    }

    void add_attribute(std::string_view key, const AttributeValueView& value) {
        written_keys_ |= mark_of(key);
        append_member(line_, key, value);
    }

    // Removes the member `key` from the open attributes object, if it is there. Outside a
    // JSON string '{' and ',' only open or separate members, and inside one a '"' is always
    // escaped, so `{"key":` or `,"key":` with a bare quote can only be that member's start.
    void erase_attribute(std::string_view key) {
        std::string escaped;
        std::string_view inner = key;
        if (needs_escaping(key)) {
            escaped = json_quoted(key);
            inner = std::string_view(escaped).substr(1, escaped.size() - 2);
        }
        for (std::size_t at = line_.find(inner, attributes_at_ + 2); at != std::string::npos;
             at = line_.find(inner, at + 1)) {
            const std::size_t quote = at - 1;
            const std::size_t after = at + inner.size();
            if (line_[quote] != '"' || (line_[quote - 1] != '{' && line_[quote - 1] != ',') ||
                line_.compare(after, 2, "\":") != 0)
                continue;
            std::size_t end = value_end(after + 2);
            if (line_[quote - 1] == ',') {
                line_.erase(quote - 1, end - (quote - 1));
            } else {
                if (end < line_.size()) ++end;  // the ',' before the next member
                line_.erase(quote, end - quote);
            }
            return;
        }
    }

    // Where the rendered value starting at `at` ends: after its closing quote for a string;
    // otherwise at the next ',' (numbers, true, false and null have none) or the line's end.
    std::size_t value_end(std::size_t at) const {
        if (line_[at] != '"') return std::min(line_.find(',', at), line_.size());
        for (std::size_t i = at + 1; i < line_.size(); ++i) {
            if (line_[i] == '\\')
                ++i;
            else if (line_[i] == '"')
                return i + 1;
        }
        return line_.size();
    }

    std::shared_ptr<LineWriter> writer_;
    TraceContext context_;
    std::chrono::steady_clock::time_point started_steady_;
    std::string line_;
    std::size_t attributes_at_ = 0;   // where the attributes object's '{' is in line_
    std::uint64_t written_keys_ = 0;  // mark_of every key written into the attributes object
    std::vector<Event> events_;
    bool error_ = false;
    std::string error_description_;
    bool ended_ = false;
};

class JsonLinesTracer final : public Tracer {
public:
    explicit JsonLinesTracer(std::function<void(std::string_view)> write) : writer_(std::make_shared<LineWriter>()) {
        writer_->write = std::move(write);
    }

    std::unique_ptr<Span> start_span(const SpanStart& start) override {
        return std::make_unique<JsonSpan>(writer_, start);
    }

private:
    // Shared with the spans so that a span outliving its tracer still has somewhere to write.
    std::shared_ptr<LineWriter> writer_;
};

}  // namespace

std::shared_ptr<Tracer> json_lines_tracer(std::function<void(std::string_view line)> write) {
    if (!write) throw InvalidArgument("acemq: json_lines_tracer needs a function to write lines to");
    return std::make_shared<JsonLinesTracer>(std::move(write));
}

std::shared_ptr<Tracer> json_lines_tracer(std::ostream& out) {
    return json_lines_tracer([&out](std::string_view line) {
        out << line << '\n';
        out.flush();
    });
}

}  // namespace acemq
