#include <acemq/avro_codec.hpp>

#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <acemq/error.hpp>
#include "avro_schema.hpp"

namespace acemq {

namespace detail {

// The writers' schemas a RegisteredAvroCodec has looked up, by id: a registry's schema never
// changes under its id, and a SQL registry would otherwise be asked once per message. Only
// ids the registry knows are kept, so a hostile body cannot grow it.
class AvroSchemaCache {
public:
    std::shared_ptr<const AvroSchema> find(std::int64_t id) {
        const std::lock_guard lock(mutex_);
        const auto found = schemas_.find(id);
        return found == schemas_.end() ? nullptr : found->second;
    }
    void add(std::int64_t id, std::shared_ptr<const AvroSchema> schema) {
        const std::lock_guard lock(mutex_);
        schemas_.emplace(id, std::move(schema));
    }

private:
    std::mutex mutex_;
    std::unordered_map<std::int64_t, std::shared_ptr<const AvroSchema>> schemas_;
};

}  // namespace detail

namespace {

constexpr std::size_t framing_size = 5;  // 0x00, then the schema id in 4 bytes big-endian
// Room for a typical message at once: a body grown a byte at a time from nothing was
// reallocated five times before 32 bytes.
constexpr std::size_t first_reserve = 128;

// Collects a value's events as the Value the schema encodes from, with the struct field
// names spelled as the codec's FieldNames says (a plain ValueBuilder keeps C++ names).
class NamedBuilder final : public ValueWriter {
public:
    explicit NamedBuilder(FieldNames names) : names_(names) {}

    void null() override { inner_.null(); }
    void boolean(bool b) override { inner_.boolean(b); }
    void int64(std::int64_t i) override { inner_.int64(i); }
    void uint64(std::uint64_t u) override { inner_.uint64(u); }
    void float64(double d) override { inner_.float64(d); }
    void string(std::string_view text) override { inner_.string(text); }
    void bytes(std::span<const std::byte> data) override { inner_.bytes(data); }
    void begin_array(std::size_t size) override { inner_.begin_array(size); }
    void end_array() override { inner_.end_array(); }
    void begin_map(std::size_t size) override { inner_.begin_map(size); }
    void end_map() override { inner_.end_map(); }
    void begin_record(std::size_t fields) override { inner_.begin_record(fields); }
    void field(std::string_view name) override { inner_.field(name); }
    void end_record() override { inner_.end_record(); }
    FieldNames field_names() const noexcept override { return names_; }

    Value take() { return inner_.take(); }

private:
    ValueBuilder inner_;
    FieldNames names_;
};

Value named_value(ValueSource source, FieldNames names) {
    NamedBuilder builder(names);
    source.write_to(builder);
    return builder.take();
}

std::shared_ptr<const detail::AvroSchema> parse_schema(std::string_view schema, std::string_view what) {
    try {
        return std::make_shared<const detail::AvroSchema>(schema);
    } catch (const InvalidArgument& e) {
        throw InvalidArgument("acemq: " + std::string(what) + " is " + std::string(without_prefix(e.what())));
    }
}

void check_max_values(std::size_t max_values, std::string_view codec) {
    if (max_values == 0)
        throw InvalidArgument("acemq: " + std::string(codec) + " needs a max_values of at least 1 (the default is " +
                              std::to_string(AvroLimits::default_max_values) + ")");
}

bool reads_generic_avro(std::string_view content_type) noexcept {
    return detail::starts_with_ci(content_type, "application/avro") || detail::contains_ci(content_type, "+avro");
}

}  // namespace

// ---- AvroCodec -------------------------------------------------------------------------

AvroCodec::AvroCodec(std::string_view schema) : AvroCodec(schema, Options{}) {}

AvroCodec::AvroCodec(std::string_view schema, Options options)
    : schema_(parse_schema(schema, "the AvroCodec's schema")), options_(options) {
    check_max_values(options_.max_values, "an AvroCodec");
}

bool AvroCodec::can_decode(std::string_view content_type) const noexcept {
    return detail::starts_with_ci(content_type, content_types::avro) || reads_generic_avro(content_type);
}

std::vector<std::byte> AvroCodec::encode(const Value& value) const {
    std::vector<std::byte> body;
    body.reserve(first_reserve);
    schema_->encode(value, body);
    return body;
}

std::vector<std::byte> AvroCodec::encode(ValueSource source) const {
    return encode(named_value(source, options_.names));
}

Value AvroCodec::decode(std::span<const std::byte> body, std::string_view) const {
    return schema_->decode(body, options_.max_values);
}

// ---- RegisteredAvroCodec ---------------------------------------------------------------

RegisteredAvroCodec::RegisteredAvroCodec(std::shared_ptr<SchemaRegistry> registry, std::string_view subject,
                                         std::string_view schema)
    : RegisteredAvroCodec(std::move(registry), subject, schema, Options{}) {}

RegisteredAvroCodec::RegisteredAvroCodec(std::shared_ptr<SchemaRegistry> registry, std::string_view subject,
                                         std::string_view schema, Options options)
    : registry_(std::move(registry)), writer_(parse_schema(schema, "the RegisteredAvroCodec's schema")),
      reader_(options.reader_schema.empty() ? writer_ : parse_schema(options.reader_schema, "the reader_schema")),
      cache_(std::make_unique<detail::AvroSchemaCache>()), options_(std::move(options)) {
    if (registry_ == nullptr) throw InvalidArgument("acemq: a RegisteredAvroCodec needs a schema registry, not null");
    if (subject.empty())
        throw InvalidArgument(
            "acemq: a RegisteredAvroCodec needs a subject to register its schema under "
            "(usually the message type, e.g. \"orders.OrderPlaced\")");
    check_max_values(options_.max_values, "a RegisteredAvroCodec");
    registered_ = registry_->register_schema(subject, "avro", schema);
    if (registered_.id < 0 || registered_.id > std::numeric_limits<std::uint32_t>::max())
        throw InvalidArgument("acemq: the registry gave schema id " + std::to_string(registered_.id) +
                              ", which the 4 bytes of the registered Avro framing cannot carry");
    cache_->add(registered_.id, writer_);
}

RegisteredAvroCodec::~RegisteredAvroCodec() = default;

bool RegisteredAvroCodec::can_decode(std::string_view content_type) const noexcept {
    return detail::starts_with_ci(content_type, content_types::avro_registered) || reads_generic_avro(content_type);
}

std::vector<std::byte> RegisteredAvroCodec::encode(const Value& value) const {
    const auto id = static_cast<std::uint32_t>(registered_.id);
    std::vector<std::byte> body{std::byte{0}, std::byte(id >> 24), std::byte((id >> 16) & 0xFF),
                                std::byte((id >> 8) & 0xFF), std::byte(id & 0xFF)};
    body.reserve(first_reserve);
    writer_->encode(value, body);
    return body;
}

std::vector<std::byte> RegisteredAvroCodec::encode(ValueSource source) const {
    return encode(named_value(source, options_.names));
}

Value RegisteredAvroCodec::decode(std::span<const std::byte> body, std::string_view) const {
    if (body.size() < framing_size || body[0] != std::byte{0})
        throw DecodeError("acemq: a registered Avro body starts with a 0x00 byte and a 4-byte schema id, and this " +
                          std::string(body.empty()              ? "one is empty"
                                      : body[0] != std::byte{0} ? "one does not start with 0x00"
                                                                : "one is shorter than 5 bytes") +
                          " (an Avro body without the framing is read by AvroCodec, as avro/binary)");
    std::int64_t id = 0;
    for (std::size_t i = 1; i < framing_size; ++i) id = (id << 8) | std::to_integer<std::int64_t>(body[i]);
    std::shared_ptr<const detail::AvroSchema> writer = cache_->find(id);
    if (writer == nullptr) {
        SchemaDefinition found;
        try {
            found = registry_->by_id(id);
        } catch (const SchemaNotFoundError&) {
            throw DecodeError("acemq: the body names Avro schema id " + std::to_string(id) +
                              ", which the registry does not have (written against another registry?)");
        } catch (const StoreUnavailableError&) {
            throw;
        } catch (const std::exception& e) {
            // The registry, not the body, failed (its database is down, say): the message is
            // retried by the consumer's policy and read once the registry answers again.
            throw StoreUnavailableError("acemq: the schema registry could not be asked for Avro schema id " +
                                        std::to_string(id) + ": " + std::string(without_prefix(e.what())) +
                                        "; the message will be read again when it answers");
        }
        if (found.format != "avro")
            throw DecodeError("acemq: the body names schema id " + std::to_string(id) + ", which is " +
                              to_string(found) + ", not an Avro schema");
        try {
            writer = std::make_shared<const detail::AvroSchema>(found.definition);
        } catch (const InvalidArgument& e) {
            throw DecodeError("acemq: the writer's schema, " + to_string(found) + ", is " +
                              std::string(without_prefix(e.what())));
        }
        cache_->add(id, writer);
    }
    Value value = writer->decode(body.subspan(framing_size), options_.max_values);
    if (options_.reading == AvroReading::writer_shape || writer == reader_) return value;
    return writer->resolve(value, *reader_);
}

}  // namespace acemq
