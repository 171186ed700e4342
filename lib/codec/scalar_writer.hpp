// Internal: the ValueWriter of the codecs whose body is one string or bytes value.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/value.hpp>
#include <acemq/value_writer.hpp>

namespace acemq::detail {

// TextCodec, BytesCodec and ProtobufCodec carry a single string or bytes value: this writer keeps that
// one and refuses any other kind as soon as its first event arrives, so a struct is
// turned down before any of it is written.
class ScalarWriter final : public ValueWriter {
public:
    // The refusal reads `before` + the kind found + `after`.
    ScalarWriter(Value::Kind wanted, std::string_view before, std::string_view after)
        : wanted_(wanted), before_(before), after_(after) {}

    std::vector<std::byte> body;

    void null() override { refuse(Value::Kind::null); }
    void boolean(bool) override { refuse(Value::Kind::boolean); }
    void int64(std::int64_t) override { refuse(Value::Kind::int64); }
    void uint64(std::uint64_t) override { refuse(Value::Kind::uint64); }
    void float64(double) override { refuse(Value::Kind::float64); }
    void string(std::string_view text) override {
        keep(Value::Kind::string, std::as_bytes(std::span(text.data(), text.size())));
    }
    void bytes(std::span<const std::byte> data) override { keep(Value::Kind::bytes, data); }
    void begin_array(std::size_t) override { refuse(Value::Kind::array); }
    void begin_map(std::size_t) override { refuse(Value::Kind::map); }
    void begin_record(std::size_t) override { refuse(Value::Kind::record); }
    // Never reached: the begin_ event before them has already thrown.
    void end_array() override {}
    void end_map() override {}
    void field(std::string_view) override {}
    void end_record() override {}

private:
    void keep(Value::Kind kind, std::span<const std::byte> data) {
        if (kind != wanted_) refuse(kind);
        body.assign(data.begin(), data.end());
    }
    [[noreturn]] void refuse(Value::Kind found) const {
        throw EncodeError(std::string(before_) + std::string(kind_name(found)) + std::string(after_));
    }

    Value::Kind wanted_;
    std::string_view before_;
    std::string_view after_;
};

}  // namespace acemq::detail
