// Reads the family's fixture files (tests/fixtures, byte for byte as every AceMQ library
// carries them: docs/wire-contract.md §2.7, §4.5, §5.7) and turns their JSON into the
// library's types.
#pragma once

#include <boost/json.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <acemq/field.hpp>

namespace fixtures {

inline boost::json::value load(const std::string& name) {
    const std::string path = std::string(ACEMQ_FIXTURES_DIR) + "/" + name;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open fixture " + path);
    std::stringstream text;
    text << in.rdbuf();
    return boost::json::parse(text.str());
}

inline std::string text(const boost::json::value& value) { return std::string(value.as_string()); }

inline std::chrono::milliseconds millis(const boost::json::value& value) {
    return std::chrono::milliseconds(value.to_number<std::int64_t>());
}

// A JSON header value as a broker hands it back: integers as 64-bit, strings as strings.
inline acemq::FieldValue field(const boost::json::value& value) {
    if (value.is_string()) return acemq::FieldValue(text(value));
    if (value.is_int64()) return acemq::FieldValue(value.as_int64());
    if (value.is_uint64()) return acemq::FieldValue(value.as_uint64());
    if (value.is_double()) return acemq::FieldValue(value.as_double());
    if (value.is_bool()) return acemq::FieldValue(value.as_bool());
    throw std::runtime_error("fixture value of an unexpected kind: " + boost::json::serialize(value));
}

inline acemq::FieldTable table(const boost::json::object& object) {
    acemq::FieldTable out;
    for (const auto& [name, value] : object) out.emplace(std::string(name), field(value));
    return out;
}

}  // namespace fixtures
