// ValueWriter: a value as a stream of events instead of a tree. reflect.hpp's write_value
// describes a C++ object with these events, and the codecs turn them straight into bytes,
// so encoding a struct builds no acemq::Value and allocates only its output. The events
// of one value, in order:
//
//   value := null | boolean | int64 | uint64 | float64 | string | bytes
//          | begin_array(n)  value * n                        end_array
//          | begin_map(n)    (key value, mapped value) * n    end_map
//          | begin_record(n) (field(name), value) * n         end_record
//
// Producers (write_value, Value::write_to) always send exactly that sequence; writers
// may rely on it. A writer is one use, one thread; it throws EncodeError for a value its
// format cannot carry. A writer also says how it wants struct fields named (field_names),
// and write_value names them so in its field events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <acemq/field_keys.hpp>
#include <acemq/value.hpp>

namespace acemq {

class ValueWriter {
public:
    virtual void null() = 0;
    virtual void boolean(bool b) = 0;
    virtual void int64(std::int64_t i) = 0;
    virtual void uint64(std::uint64_t u) = 0;
    virtual void float64(double d) = 0;
    // The views are valid only during the call: a writer copies what it keeps.
    virtual void string(std::string_view text) = 0;
    virtual void bytes(std::span<const std::byte> data) = 0;
    virtual void begin_array(std::size_t size) = 0;
    virtual void end_array() = 0;
    virtual void begin_map(std::size_t size) = 0;
    virtual void end_map() = 0;
    // A C++ struct: its fields in declaration order, each named before its value.
    virtual void begin_record(std::size_t fields) = 0;
    virtual void field(std::string_view name) = 0;
    virtual void end_record() = 0;
    // The spelling of the field names write_value sends. Names in a Value record are sent
    // as they are: the Value already holds its keys.
    virtual FieldNames field_names() const noexcept { return FieldNames::as_is; }

protected:
    ValueWriter() = default;
    ValueWriter(const ValueWriter&) = default;
    ValueWriter& operator=(const ValueWriter&) = default;
    ~ValueWriter() = default;  // not owned through this interface
};

// Collects the events into a Value: how to_value() is built, how a codec written for
// Values alone is fed (Codec::encode's default), and how JsonCodec reads. Sizes given to
// begin_* only reserve room, so a reader that learns them late may pass 0.
class ValueBuilder final : public ValueWriter {
public:
    void null() override;
    void boolean(bool b) override;
    void int64(std::int64_t i) override;
    void uint64(std::uint64_t u) override;
    void float64(double d) override;
    void string(std::string_view text) override;
    void bytes(std::span<const std::byte> data) override;
    void begin_array(std::size_t size) override;
    void end_array() override;
    void begin_map(std::size_t size) override;
    void end_map() override;
    void begin_record(std::size_t fields) override;
    void field(std::string_view name) override;
    void end_record() override;

    // The value written; call once, after its last event.
    Value take() { return std::move(result_); }

private:
    struct Open {
        Value container;  // the array, map or record being filled
        Value key;        // a map entry's key, until its value arrives
        bool have_key;
        std::string name;  // a record field's name, until its value arrives
    };
    void open(Value container);
    void close();
    void add(Value value);

    std::vector<Open> open_;
    Value result_;
};

}  // namespace acemq
