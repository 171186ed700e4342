#include <acemq/envelope.hpp>

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>

#include <acemq/error.hpp>
#include <acemq/transport.hpp>
#include <acemq/uuid.hpp>

#include "contract_names.hpp"
#include "packed_writer.hpp"
#include "traced_headers.hpp"

namespace acemq {

namespace {

constexpr std::string_view untyped_message = "message";

std::string type_for(std::string_view routing_key) {
    return routing_key.empty() ? std::string(untyped_message) : std::string(routing_key);
}

const FieldValue* find(const Headers& headers, std::string_view name) {
    auto it = headers.find(name);
    return it == headers.end() ? nullptr : &it->second;
}

// As FieldValue::as_text reads it, without a copy: "" when absent or not text.
std::string_view text_of(const FieldValue* value) {
    if (value == nullptr) return {};
    if (const auto* text = std::get_if<std::string>(&value->get())) return *text;
    if (const auto* bytes = std::get_if<Bytes>(&value->get()))
        return {reinterpret_cast<const char*>(bytes->data()), bytes->size()};
    return {};
}

// Absent, unreadable, out of range or below one: the default of one.
std::int32_t read_positive_int32(const FieldValue& value) {
    auto number = value.as_integer();
    if (!number || *number < 1 || *number > std::numeric_limits<std::int32_t>::max()) return 1;
    return static_cast<std::int32_t>(*number);
}

// Epoch milliseconds as the contract writes it; an AMQP timestamp, as another client may
// write it, is the instant it names (in seconds). Anything else, or an instant not after
// the epoch, is unknown.
std::optional<EpochMillis> read_first_seen(const FieldValue& value) {
    if (const auto* stamp = std::get_if<FieldTimestamp>(&value.get())) {
        constexpr auto latest = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::milliseconds::max());
        if (stamp->time_since_epoch().count() <= 0 || stamp->time_since_epoch() > latest) return std::nullopt;
        return std::chrono::time_point_cast<std::chrono::milliseconds>(*stamp);
    }
    const auto millis = value.as_integer();
    if (!millis || *millis <= 0) return std::nullopt;
    return EpochMillis(std::chrono::milliseconds(*millis));
}

std::vector<std::string> split_route(std::string_view text) {
    std::vector<std::string> steps;
    while (!text.empty()) {
        std::size_t comma = text.find(',');
        std::string_view piece = text.substr(0, comma);
        while (!piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
        while (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
        if (!piece.empty()) steps.emplace_back(piece);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    return steps;
}

void refuse_reserved(const Headers& headers) {
    for (const auto& [name, value] : headers)
        if (is_reserved_header(name)) throw ReservedHeaderError(name.str());
}

void validate_for_sending(const Envelope& envelope) {
    if (envelope.id.empty())
        throw InvalidArgument(
            "acemq: the envelope has an empty id; leave it to "
            "Envelope::for_new_message or give a non-empty one");
    if (envelope.version < 1)
        throw InvalidArgument("acemq: envelope version " + std::to_string(envelope.version) +
                              " is below 1; versions count from 1");
    if (envelope.attempt < 1)
        throw InvalidArgument("acemq: envelope attempt " + std::to_string(envelope.attempt) +
                              " is below 1; the first delivery is attempt 1");
    for (const std::string& step : envelope.route) {
        if (step.find(',') != std::string::npos || step.find_first_not_of(' ') == std::string::npos)
            throw InvalidArgument("acemq: route step \"" + step +
                                  "\" is blank or contains ','; steps are names joined with ','");
    }
    if (envelope.route_position < 0)
        throw InvalidArgument("acemq: route position " + std::to_string(envelope.route_position) +
                              " is negative; positions count from 0");
}

}  // namespace

bool is_reserved_header(std::string_view name) noexcept { return name.starts_with(header::reserved_prefix); }

EpochMillis epoch_millis_now() {
    return std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
}

Envelope Envelope::for_new_message(std::string_view routing_key, std::string_view origin) {
    Envelope envelope;
    envelope.id = new_uuid();
    envelope.type = type_for(routing_key);
    envelope.correlation = envelope.id;
    envelope.first_seen = epoch_millis_now();
    envelope.origin = std::string(origin);
    return envelope;
}

std::optional<std::chrono::milliseconds> Envelope::age(EpochMillis now) const {
    if (!first_seen || first_seen->time_since_epoch().count() <= 0) return std::nullopt;
    // A first-seen after `now` comes from a sender whose clock runs ahead (or a made-up
    // header): the message is as new as can be, not of a negative age, which would read as
    // "younger than new" to anything comparing or printing it.
    return std::max(now - *first_seen, std::chrono::milliseconds(0));
}

std::optional<std::string> Envelope::traceparent() const {
    const FieldValue* value = find(headers, header::traceparent);
    return value ? value->as_text() : std::nullopt;
}

std::optional<std::string> Envelope::tracestate() const {
    const FieldValue* value = find(headers, header::tracestate);
    return value ? value->as_text() : std::nullopt;
}

void set_header(Envelope& envelope, FieldName name, FieldValue value) {
    if (is_reserved_header(name)) throw ReservedHeaderError(name.str());
    envelope.headers.insert_or_assign(std::move(name), std::move(value));
}

void check_sendable(const Envelope& envelope) {
    validate_for_sending(envelope);
    refuse_reserved(envelope.headers);
}

namespace {

using detail::PackedName;

// What write_headers writes into: a FieldTable (render_headers) or packed bytes (pack_headers).
// A reserved header's name comes with its number among the contract's names, found when
// compiled; an application header's is looked up if packed.
struct TableSink {
    Headers& out;

    void put(std::string_view name, const FieldValue& value) { out.emplace_back(name, value); }
    void put(std::string_view name, FieldValue&& value) { out.emplace_back(name, std::move(value)); }
    void put_text(PackedName name, std::string_view text) { out.emplace_back(name.text, text); }
    void put_int32(PackedName name, std::int32_t value) { out.emplace_back(name.text, value); }
    void put_int64(PackedName name, std::int64_t value) { out.emplace_back(name.text, value); }
};

struct PackedSink {
    detail::PackedWriter& out;

    void put(std::string_view name, const FieldValue& value) { out.put(name, value); }
    void put_text(PackedName name, std::string_view text) { out.put_text(name, text); }
    void put_int32(PackedName name, std::int32_t value) { out.put_int32(name, value); }
    void put_int64(PackedName name, std::int64_t value) { out.put_int64(name, value); }
};

// How many reserved headers write_headers writes for `envelope`.
std::size_t reserved_count(const Envelope& envelope) {
    const auto present = [](const std::string& text) -> std::size_t { return text.empty() ? 0 : 1; };
    constexpr std::size_t always_written = 5;  // attempt, correlation, id, type, version
    return always_written + present(envelope.causation) + present(envelope.claim) + present(envelope.error) +
           present(envelope.origin) + (envelope.first_seen ? 1 : 0) +
           (envelope.route.empty() ? 0 : 2 + present(envelope.route_id));
}

// A header the library adds as text as it packs (a publish span's traceparent): in place
// among the others, instead of an application header of its name; no text drops that header.
struct AddedText {
    PackedName name;
    std::optional<std::string_view> text;
};

std::string_view name_of(const Headers::value_type& entry) { return entry.first.view(); }
std::string_view name_of(const AddedText& entry) { return entry.name.text; }

template <class Sink>
void put_added(Sink& out, Headers::value_type& entry) {
    out.put(entry.first, std::move(entry.second));
}
template <class Sink>
void put_added(Sink& out, const AddedText& entry) {
    if (entry.text) out.put_text(entry.name, *entry.text);
}

// Checks `envelope` and `added`, and writes the reserved headers in name order, merged on the
// way with the (sorted) application and added headers (a table, or AddedText): front to back,
// with no search.
template <class Sink, class Added>
void write_headers(const Envelope& envelope, Added& added, Sink& out) {
    check_sendable(envelope);
    if constexpr (std::is_same_v<Added, Headers>) refuse_reserved(added);
    auto application = envelope.headers.begin();
    auto extra = std::begin(added);
    // Puts the application and added headers that sort before `name` (all of them when it is
    // null), an added one in place of an application one of its name. compare(), not <:
    // clang 14, the fuzz build's compiler, rejects a string's <=> with a string_view inside a
    // generic lambda.
    const auto put_others_before = [&](const std::string_view* name) {
        for (;;) {
            const bool application_left =
                application != envelope.headers.end() && (name == nullptr || application->first.compare(*name) < 0);
            const bool added_left = extra != std::end(added) && (name == nullptr || name_of(*extra).compare(*name) < 0);
            if (added_left && (!application_left || name_of(*extra).compare(application->first.view()) <= 0)) {
                if (application_left && name_of(*extra) == application->first.view()) ++application;
                put_added(out, *extra);
                ++extra;
            } else if (application_left) {
                out.put(application->first, application->second);
                ++application;
            } else {
                return;
            }
        }
    };
    const auto put_always = [&](PackedName name, std::string_view text) {
        put_others_before(&name.text);
        out.put_text(name, text);
    };
    const auto put_text = [&](PackedName name, std::string_view text) {
        if (!text.empty()) put_always(name, text);
    };
    const auto put_int32 = [&](PackedName name, std::int32_t value) {
        put_others_before(&name.text);
        out.put_int32(name, value);
    };
    put_int32(PackedName::known(header::attempt), envelope.attempt);
    put_text(PackedName::known(header::causation), envelope.causation);
    put_text(PackedName::known(header::claim), envelope.claim);
    put_always(PackedName::known(header::correlation),
               envelope.correlation.empty() ? envelope.id : envelope.correlation);
    put_text(PackedName::known(header::error), envelope.error);
    if (envelope.first_seen) {
        constexpr PackedName name = PackedName::known(header::first_seen);
        put_others_before(&name.text);
        out.put_int64(name, static_cast<std::int64_t>(envelope.first_seen->time_since_epoch().count()));
    }
    put_always(PackedName::known(header::id), envelope.id);
    put_text(PackedName::known(header::origin), envelope.origin);
    if (!envelope.route.empty()) {
        std::string joined;
        for (const std::string& step : envelope.route) joined += (joined.empty() ? "" : ",") + step;
        put_always(PackedName::known(header::route), joined);
        put_text(PackedName::known(header::route_id), envelope.route_id);
        put_int32(PackedName::known(header::route_position), envelope.route_position);
    }
    put_always(PackedName::known(header::type), envelope.type);
    put_int32(PackedName::known(header::version), envelope.version);
    put_others_before(nullptr);
}

}  // namespace

Headers render_headers(const Envelope& envelope, Headers added) {
    // One allocation of just the size needed (a message waiting in a queue keeps its headers,
    // so room for every reserved header would be most of what it weighs).
    Headers out;
    out.reserve(envelope.headers.size() + added.size() + reserved_count(envelope));
    TableSink sink{out};
    write_headers(envelope, added, sink);
    return out;
}

namespace {

template <class Added>
PackedTable pack_with(const Envelope& envelope, Added& added) {
    // A reserved header packed is a byte of name and mostly a short value; the id-sized texts
    // (id, correlation, causation) are the long ones.
    constexpr std::size_t bytes_a_reserved_header = 24;
    detail::PackedWriter writer(
        bytes_a_reserved_header * reserved_count(envelope) + 64 * (envelope.headers.size() + std::size(added)),
        envelope.id);
    PackedSink sink{writer};
    write_headers(envelope, added, sink);
    return std::move(writer).finish();
}

}  // namespace

PackedTable pack_headers(const Envelope& envelope, Headers added) { return pack_with(envelope, added); }

PackedTable detail::pack_traced_headers(const Envelope& envelope, std::string_view traceparent,
                                        std::optional<std::string_view> tracestate) {
    // In name order, as write_headers merges them: "traceparent" before "tracestate".
    std::array<AddedText, 2> trace{
        {{PackedName::known(header::traceparent), traceparent}, {PackedName::known(header::tracestate), tracestate}}};
    return pack_with(envelope, trace);
}

namespace {

// A delivery's reserved headers, each where it lies: a table's as a pointer into it (null when
// absent), a packed one's as a PackedHeaders::ValueRef (a default one when absent).
template <class Ref>
struct ReservedHeaders {
    Ref attempt{}, causation{}, claim{}, correlation{}, error{}, first_seen{}, id{}, origin{}, route{}, route_id{},
        route_position{}, type{}, version{};
};

// Calls visit(name, value) for each entry in name order, value being where it lies (a table's
// value's address, a packed one's ValueRef).
template <class Visit>
void for_each_entry(const Headers& headers, Visit visit) {
    for (const auto& [name, value] : headers) visit(name.view(), &value);
}

template <class Visit>
void for_each_entry(const PackedHeaders& headers, Visit visit) {
    for (auto entry = headers.begin(), last = headers.end(); entry != last; ++entry) visit(entry.name(), entry.value());
}

const FieldValue& value_of(const FieldValue* value) {
    static const FieldValue absent;
    return value == nullptr ? absent : *value;
}

FieldValue value_of(const PackedHeaders::ValueRef& value) { return value.decode(); }

std::string_view text_of(const PackedHeaders::ValueRef& value) { return value.text(); }

// A packed table names each of the contract's names by the constant itself
// (contract_names.hpp), so a reserved name read off it is the constant's own pointer.
bool same_name(std::string_view slot, std::string_view name, const PackedHeaders&) noexcept {
    return slot.data() == name.data();
}

bool same_name(std::string_view slot, std::string_view name, const Headers&) noexcept { return slot == name; }

template <class Entries>
using RefOf = std::conditional_t<std::is_same_v<Entries, Headers>, const FieldValue*, PackedHeaders::ValueRef>;

// Sorts each reserved header of `headers` (a Headers or PackedHeaders) into its slot and every
// other one into `application`, in one walk: the table and the list of reserved names are both
// in name order, so a name is looked for only among the slots after the last one found, and by
// equality, which compares lengths before bytes (an ordering would compare the bytes of every
// slot it passes).
template <class Entries>
ReservedHeaders<RefOf<Entries>> sort_headers(const Entries& headers, Headers& application) {
    using Reserved = ReservedHeaders<RefOf<Entries>>;
    Reserved found;
    using Slot = std::pair<std::string_view, RefOf<Entries> Reserved::*>;
    static constexpr Slot slots[] = {
        {header::attempt, &Reserved::attempt},
        {header::causation, &Reserved::causation},
        {header::claim, &Reserved::claim},
        {header::correlation, &Reserved::correlation},
        {header::error, &Reserved::error},
        {header::first_seen, &Reserved::first_seen},
        {header::id, &Reserved::id},
        {header::origin, &Reserved::origin},
        {header::route, &Reserved::route},
        {header::route_id, &Reserved::route_id},
        {header::route_position, &Reserved::route_position},
        {header::type, &Reserved::type},
        {header::version, &Reserved::version},
    };
    static_assert(std::ranges::is_sorted(slots, {}, &Slot::first));
    static_assert(std::ranges::equal(slots, std::span(contract_names::all).first(std::size(slots)), {}, &Slot::first),
                  "the reserved headers lead the contract's names, in the slots' order");
    std::size_t next = 0;
    for_each_entry(headers, [&](std::string_view name, RefOf<Entries> value) {
        if (!is_reserved_header(name)) {
            application.emplace_back(name, value_of(value));
            return;
        }
        for (std::size_t slot = next; slot < std::size(slots); ++slot) {
            if (!same_name(slots[slot].first, name, headers)) continue;
            found.*(slots[slot].second) = value;
            next = slot + 1;
            return;
        }
    });
    return found;
}

template <class Entries>
Envelope read_envelope_from(const Entries& headers, std::string_view routing_key,
                            std::string_view message_id_property) {
    Envelope envelope;
    const auto reserved = sort_headers(headers, envelope.headers);
    envelope.id = text_of(reserved.id);
    if (envelope.id.empty()) envelope.id = std::string(message_id_property);
    if (envelope.id.empty()) {
        envelope.id = new_uuid();
        envelope.id_generated = true;
    }
    envelope.type = text_of(reserved.type);
    if (envelope.type.empty()) envelope.type = type_for(routing_key);
    envelope.version = read_positive_int32(value_of(reserved.version));
    envelope.correlation = text_of(reserved.correlation);
    if (envelope.correlation.empty()) envelope.correlation = envelope.id;
    envelope.causation = text_of(reserved.causation);
    envelope.attempt = read_positive_int32(value_of(reserved.attempt));
    envelope.first_seen = read_first_seen(value_of(reserved.first_seen));
    envelope.origin = text_of(reserved.origin);
    envelope.error = text_of(reserved.error);
    envelope.claim = text_of(reserved.claim);
    envelope.route = split_route(text_of(reserved.route));
    if (!envelope.route.empty()) {
        auto number = value_of(reserved.route_position).as_integer();
        if (number && *number >= 0 && *number <= std::numeric_limits<std::int32_t>::max())
            envelope.route_position = static_cast<std::int32_t>(*number);
        envelope.route_id = text_of(reserved.route_id);
    }
    return envelope;
}

}  // namespace

Envelope read_envelope(const Headers& headers, std::string_view routing_key, std::string_view message_id_property) {
    return read_envelope_from(headers, routing_key, message_id_property);
}

Envelope read_envelope(const InboundMessage& message) {
    return read_envelope_from(message.headers(), message.routing_key(), message.message_id());
}

}  // namespace acemq
