#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/tracing.hpp>

#include "bounded_queue.hpp"
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
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <ostream>
#include <random>
#include <system_error>
#include <thread>
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

void TraceContext::write_traceparent(std::span<char, traceparent_size> out) const noexcept {
    // version(2) '-' trace-id(32) '-' parent-id(16) '-' flags(2)
    out[0] = '0';
    out[1] = '0';
    out[2] = '-';
    char* at = write_hex(out.data() + 3, trace_id);
    *at++ = '-';
    at = write_hex(at, span_id);
    *at++ = '-';
    write_hex(at, std::span(&flags, 1));
}

std::string TraceContext::traceparent() const {
    std::array<char, traceparent_size> text;
    write_traceparent(text);
    return std::string(text.data(), text.size());
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
    // Every traced publish writes one: formatted on the stack, copied once into the header.
    std::array<char, TraceContext::traceparent_size> text;
    context.write_traceparent(text);
    headers.insert_or_assign(FieldName(traceparent_header), FieldValue(std::string_view(text.data(), text.size())));
    if (context.state.empty()) {
        headers.erase(tracestate_header);
    } else {
        headers.insert_or_assign(FieldName(tracestate_header), FieldValue(context.state));
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

// The bytes a span keeps of its text: its name, then its attributes (encoded by
// attribute_codec). In a buffer of the span's own up to a publish span's worth, so that
// recording a span allocates nothing; past that, all of it moves to the heap and grows there.
class SpanBytes {
public:
    SpanBytes() = default;
    SpanBytes(SpanBytes&& other) noexcept { *this = std::move(other); }
    SpanBytes& operator=(SpanBytes&& other) noexcept {
        size_ = std::exchange(other.size_, 0);
        heap_ = std::move(other.heap_);
        other.heap_.clear();
        if (heap_.empty()) std::memcpy(inline_.data(), other.inline_.data(), size_);
        return *this;
    }

    void append(const void* data, std::size_t count) {
        if (heap_.empty() && size_ + count <= inline_.size()) {
            std::memcpy(inline_.data() + size_, data, count);
        } else {
            if (heap_.empty()) heap_.assign(inline_.data(), size_);
            heap_.append(static_cast<const char*>(data), count);
        }
        size_ += count;
    }
    const char* data() const noexcept { return heap_.empty() ? inline_.data() : heap_.data(); }
    char* data() noexcept { return heap_.empty() ? inline_.data() : heap_.data(); }
    std::size_t size() const noexcept { return size_; }

private:
    // A publish span's name and its eight attributes take about 170 bytes.
    std::array<char, 240> inline_;
    std::string heap_;  // all of the bytes once they outgrew inline_, else empty
    std::size_t size_ = 0;
};

// Attributes as SpanBytes holds them, one after another:
//   tag (1 byte: the value's type, 0x80 when a later one of the same key replaced it),
//   key (1 byte: its index among the family's keys, else 0xFF and 2 bytes of size, the key),
//   value (8 bytes for an integer or a double, 1 for a bool, 4 bytes of size and the text).
// The family's keys are a byte each: a span's attributes are most of what it carries.
namespace attribute_codec {

enum Tag : std::uint8_t { text, integer, number, boolean };
constexpr std::uint8_t replaced = 0x80;
constexpr std::uint8_t other_key = 0xFF;

constexpr std::array<std::string_view, 13> family_keys{
    span_attribute::system,       span_attribute::destination,     span_attribute::operation,
    span_attribute::message_id,   span_attribute::conversation_id, span_attribute::routing_key,
    span_attribute::message_type, span_attribute::attempt,         span_attribute::outcome,
    span_attribute::reason,       span_attribute::retry_delay_ms,  span_attribute::run_age_ms,
    span_attribute::outbox_lag_ms};

std::uint8_t key_index(std::string_view key) noexcept {
    for (std::size_t i = 0; i < family_keys.size(); ++i)
        if (family_keys[i] == key) return static_cast<std::uint8_t>(i);
    return other_key;
}

template <class Number>
void append_number(SpanBytes& bytes, Number value) {
    bytes.append(&value, sizeof value);
}

// `index` is key_index(key).
void append(SpanBytes& bytes, std::uint8_t index, std::string_view key, const AttributeValueView& value) {
    const std::uint8_t tag = static_cast<std::uint8_t>(value.index());
    bytes.append(&tag, 1);
    bytes.append(&index, 1);
    if (index == other_key) {
        append_number(bytes, static_cast<std::uint16_t>(std::min<std::size_t>(key.size(), 0xFFFF)));
        bytes.append(key.data(), std::min<std::size_t>(key.size(), 0xFFFF));
    }
    if (const auto* held = std::get_if<std::string_view>(&value)) {
        append_number(bytes, static_cast<std::uint32_t>(held->size()));
        bytes.append(held->data(), held->size());
    } else if (const auto* whole = std::get_if<std::int64_t>(&value)) {
        append_number(bytes, *whole);
    } else if (const auto* fraction = std::get_if<double>(&value)) {
        append_number(bytes, *fraction);
    } else {
        const std::uint8_t truth = std::get<bool>(value) ? 1 : 0;
        bytes.append(&truth, 1);
    }
}

template <class Number>
Number read_number(const char*& at) noexcept {
    Number value;
    std::memcpy(&value, at, sizeof value);
    at += sizeof value;
    return value;
}

// Calls visit(tag byte, key, value) for each attribute from `at` to `end`, in order.
template <class Visit>
void for_each(char* at, const char* end, Visit&& visit) {
    while (at < end) {
        std::uint8_t& tag = *reinterpret_cast<std::uint8_t*>(at);
        const char* read = at + 1;
        const auto index = static_cast<std::uint8_t>(*read++);
        std::string_view key;
        if (index == other_key) {
            const auto size = read_number<std::uint16_t>(read);
            key = std::string_view(read, size);
            read += size;
        } else {
            key = family_keys[index];
        }
        AttributeValueView value;
        switch (static_cast<Tag>(tag & ~replaced)) {
        case text: {
            const auto size = read_number<std::uint32_t>(read);
            value = std::string_view(read, size);
            read += size;
            break;
        }
        case integer: value = read_number<std::int64_t>(read); break;
        case number: value = read_number<double>(read); break;
        case boolean: value = *read++ != 0; break;
        }
        visit(tag, key, value);
        at = const_cast<char*>(read);
    }
}

}  // namespace attribute_codec

// What a span leaves to be written: everything its line says, nothing rendered.
struct SpanRecord {
    std::array<std::uint8_t, 16> trace_id{};
    std::array<std::uint8_t, 8> span_id{};
    std::array<std::uint8_t, 8> parent_span_id{};
    bool has_parent = false;
    bool error = false;
    SpanKind kind = SpanKind::internal;
    std::size_t name_size = 0;  // the name is the first of `bytes`, the attributes follow
    WallClock::time_point start;
    std::int64_t duration_micros = 0;
    SpanBytes bytes;
    std::string error_description;
    std::vector<Event> events;  // seldom any: a retry or a dead letter
};

void render(SpanRecord& span, std::string& line) {
    line.clear();
    line += "{\"name\":";
    append_quoted(line, std::string_view(span.bytes.data(), span.name_size));
    line += ",\"kind\":\"";
    line += to_string(span.kind);
    line += "\",\"traceId\":\"";
    append_hex(line, span.trace_id);
    line += "\",\"spanId\":\"";
    append_hex(line, span.span_id);
    line += '"';
    if (span.has_parent) {
        line += ",\"parentSpanId\":\"";
        append_hex(line, span.parent_span_id);
        line += '"';
    }
    line += ",\"start\":\"";
    detail::append_rfc3339(line, span.start, detail::SecondFraction::micros);
    line += "\",\"attributes\":{";
    attribute_codec::for_each(span.bytes.data() + span.name_size, span.bytes.data() + span.bytes.size(),
                              [&](std::uint8_t tag, std::string_view key, const AttributeValueView& value) {
                                  if ((tag & attribute_codec::replaced) == 0) append_member(line, key, value);
                              });
    line += "},\"durationMicros\":";
    append_integer(line, span.duration_micros);
    if (span.error) {
        line += ",\"status\":\"ERROR\"";
        if (!span.error_description.empty()) {
            line += ",\"statusDescription\":";
            append_quoted(line, span.error_description);
        }
    }
    line += ",\"events\":[";
    bool first = true;
    for (const auto& event : span.events) {
        if (!first) line += ',';
        first = false;
        line += "{\"name\":";
        append_quoted(line, event.name);
        line += ",\"time\":\"";
        detail::append_rfc3339(line, event.time, detail::SecondFraction::micros);
        line += "\",\"attributes\":";
        append_attributes(line, event.attributes);
        line += '}';
    }
    line += "],\"scope\":";
    append_quoted(line, tracing_scope);
    line += '}';
}

// The queue of ended spans and the thread that writes them (see JsonLinesTracer in the
// header). Shared by the tracer and its spans, so that a span outliving its tracer still has
// somewhere to go; the last of them to go writes what is left and stops the thread.
class LineWriter {
public:
    LineWriter(std::function<void(std::string_view)> write, std::function<void()> batch_written, std::size_t capacity)
        : write_(std::move(write)), batch_written_(std::move(batch_written)), queue_(capacity),
          batch_(std::max<std::size_t>(queue_.capacity() / 4, 1)), thread_([this] { run(); }) {}

    ~LineWriter() {
        {
            std::lock_guard guard(lock_);
            stopping_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }

    LineWriter(const LineWriter&) = delete;
    LineWriter& operator=(const LineWriter&) = delete;

    // Any thread; never waits for the writer (it takes the writer's lock only to wake it:
    // once a batch, or when it was idle).
    void push(SpanRecord& span) noexcept {
        const std::uint64_t ticket = queue_.try_push(span);
        if (ticket == queue_.full) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
        } else if (((ticket + 1) & (batch_ - 1)) == 0 || (idle_.load() && idle_.exchange(false))) {
            wake();
        }
    }

    void flush() {
        if (std::this_thread::get_id() == thread_.get_id())
            throw UsageError("acemq: a json_lines_tracer's write function called flush(), which would wait for itself");
        const std::uint64_t target = queue_.pushed();
        std::unique_lock lock(lock_);
        woken_ = true;
        wake_.notify_one();
        written_.wait(lock, [&] { return done_ >= target; });
    }

    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

private:
    // How long lines may gather while spans keep ending, short of a batch.
    static constexpr auto gather = std::chrono::milliseconds(100);

    void wake() {
        {
            std::lock_guard guard(lock_);
            woken_ = true;
        }
        wake_.notify_one();
    }

    void run() {
        SpanRecord span;
        std::string line;
        line.reserve(1024);  // a publish span's line is about 600 bytes
        std::unique_lock lock(lock_);
        for (;;) {
            woken_ = false;
            lock.unlock();
            std::uint64_t written = 0;
            while (queue_.try_pop(span)) {
                render(span, line);
                try {
                    write_(line);
                } catch (...) {
                    dropped_.fetch_add(1, std::memory_order_relaxed);
                }
                ++written;
            }
            if (written != 0 && batch_written_) {
                try {
                    batch_written_();
                } catch (...) {}
            }
            lock.lock();
            done_ += written;
            if (written != 0) written_.notify_all();
            if (woken_) continue;
            if (stopping_) {
                // Every span has ended by now (each held this writer): the queue is empty
                // unless one is still being put in, which the next round picks up.
                if (done_ == queue_.pushed()) return;
                continue;
            }
            if (written != 0) {
                wake_.wait_for(lock, gather, [&] { return woken_ || stopping_; });
                continue;
            }
            // Nothing came since the last round: sleep until a span ends. Idle is told
            // before the queue is looked at once more (both sequentially consistent, as a
            // span's publishing in the queue and its reading of idle_ are), so that a span
            // put in meanwhile is either seen here or wakes us.
            idle_.store(true);
            if (queue_.ready()) {
                idle_.store(false);
                continue;
            }
            wake_.wait(lock, [&] { return woken_ || stopping_; });
            idle_.store(false);
        }
    }

    const std::function<void(std::string_view)> write_;
    const std::function<void()> batch_written_;
    detail::BoundedQueue<SpanRecord> queue_;
    const std::size_t batch_;  // the writer is woken each time this many more spans ended (a power of two)
    std::atomic<std::uint64_t> dropped_{0};
    std::atomic<bool> idle_{false};  // the writer sleeps until a span wakes it
    std::mutex lock_;
    std::condition_variable wake_;     // the writer waits on it
    std::condition_variable written_;  // flush() waits on it
    bool woken_ = false;               // under lock_: a span, a batch or a flush() woke the writer
    bool stopping_ = false;            // under lock_
    std::uint64_t done_ = 0;           // under lock_: spans taken out of the queue and written
    std::thread thread_;               // last: it runs on all of the above
};

// A span records as it goes, on the thread that publishes or settles, into a SpanRecord (the
// start's borrowed attributes copied into its own buffer); end() hands the record to the
// writer, which renders the line.
class JsonSpan final : public Span {
public:
    JsonSpan(std::shared_ptr<LineWriter> writer, const SpanStart& start)
        : writer_(std::move(writer)),
          context_(start.parent != nullptr ? start.parent->new_child() : TraceContext::new_root()),
          started_steady_(std::chrono::steady_clock::now()) {
        record_.trace_id = context_.trace_id;
        record_.span_id = context_.span_id;
        if (start.parent != nullptr) {
            record_.has_parent = true;
            record_.parent_span_id = start.parent->span_id;
        }
        record_.kind = start.kind;
        record_.start = WallClock::now();
        record_.bytes.append(start.name.data(), start.name.size());
        record_.name_size = start.name.size();
        for (const AttributeView& attribute : start.attributes) add_attribute(attribute.key, attribute.value);
    }

    ~JsonSpan() override { end(); }

    const TraceContext& context() const override { return context_; }

    void set_attribute(std::string_view key, AttributeValue value) override {
        if (ended_) return;
        if ((written_keys_ & mark_of(attribute_codec::key_index(key), key)) != 0) replace_attribute(key);
        add_attribute(key, view_of(value));
    }

    void add_event(std::string_view name, Attributes attributes) override {
        if (ended_) return;
        record_.events.push_back({std::string(name), WallClock::now(), std::move(attributes)});
    }

    void set_error(std::string_view description) override {
        record_.error = true;
        record_.error_description = description;
    }

    void end() override {
        if (ended_) return;
        ended_ = true;
        record_.duration_micros =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started_steady_)
                .count();
        writer_->push(record_);
    }

private:
    // One bit of 64 for a key: set_attribute looks for an earlier value of a key only when
    // its bit says the key may be there, which a new key's seldom is. A family key has a bit
    // of its own; any other shares one of the rest by its size and last byte (not a hash of
    // it: a publish span marks eight keys, and hashing them was a tenth of its cost).
    static std::uint64_t mark_of(std::uint8_t index, std::string_view key) noexcept {
        constexpr std::size_t own = attribute_codec::family_keys.size();
        if (index != attribute_codec::other_key) return std::uint64_t{1} << index;
        const std::size_t last = key.empty() ? 0 : static_cast<unsigned char>(key.back());
        return std::uint64_t{1} << (own + (key.size() * 31 + last) % (64 - own));
    }

    void add_attribute(std::string_view key, const AttributeValueView& value) {
        const std::uint8_t index = attribute_codec::key_index(key);
        written_keys_ |= mark_of(index, key);
        attribute_codec::append(record_.bytes, index, key, value);
    }

    // Marks the value `key` has (if any) as replaced: the line will have the later one only.
    void replace_attribute(std::string_view key) {
        attribute_codec::for_each(record_.bytes.data() + record_.name_size, record_.bytes.data() + record_.bytes.size(),
                                  [&](std::uint8_t& tag, std::string_view held, const AttributeValueView&) {
                                      if (held == key) tag |= attribute_codec::replaced;
                                  });
    }

    std::shared_ptr<LineWriter> writer_;
    TraceContext context_;
    std::chrono::steady_clock::time_point started_steady_;
    SpanRecord record_;
    std::uint64_t written_keys_ = 0;  // mark_of every key written into the attributes
    bool ended_ = false;
};

class JsonLinesTracerImpl final : public JsonLinesTracer {
public:
    JsonLinesTracerImpl(std::function<void(std::string_view)> write, std::function<void()> batch_written,
                        const JsonLinesOptions& options)
        : writer_(std::make_shared<LineWriter>(std::move(write), std::move(batch_written), options.queue_capacity)) {}

    std::unique_ptr<Span> start_span(const SpanStart& start) override {
        return std::make_unique<JsonSpan>(writer_, start);
    }
    void flush() override { writer_->flush(); }
    std::uint64_t dropped() const noexcept override { return writer_->dropped(); }

private:
    std::shared_ptr<LineWriter> writer_;
};

std::shared_ptr<JsonLinesTracer> make_json_lines_tracer(std::function<void(std::string_view)> write,
                                                        std::function<void()> batch_written,
                                                        const JsonLinesOptions& options) {
    if (options.queue_capacity == 0)
        throw InvalidArgument("acemq: json_lines_tracer's queue_capacity is 0; it needs room for at least one span");
    return std::make_shared<JsonLinesTracerImpl>(std::move(write), std::move(batch_written), options);
}

}  // namespace

std::shared_ptr<JsonLinesTracer> json_lines_tracer(std::function<void(std::string_view line)> write,
                                                   JsonLinesOptions options) {
    if (!write) throw InvalidArgument("acemq: json_lines_tracer needs a function to write lines to");
    return make_json_lines_tracer(std::move(write), nullptr, options);
}

std::shared_ptr<JsonLinesTracer> json_lines_tracer(std::ostream& out, JsonLinesOptions options) {
    return make_json_lines_tracer([&out](std::string_view line) { out << line << '\n'; }, [&out] { out.flush(); },
                                  options);
}

}  // namespace acemq
