// One fuzz input through the Avro codecs (lib/acemq/avro_codec.hpp), shared by the libFuzzer
// target fuzz_avro.cpp and the seeded loop tests/reliability/test_fuzz_avro.cpp: a body read
// with a schema of every Avro type (recursive, so nesting is the input's to choose), plain
// and registered (a writer's schema resolved onto a reader's with a default and without a
// field). It ends in a value or a DecodeError; a value read must write back and read back the
// same. Anything else escapes, and is the finding.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include <acemq/avro_codec.hpp>
#include <acemq/error.hpp>
#include <acemq/stores/memory_schema_registry.hpp>

namespace fuzz {

inline constexpr const char* avro_schema = R"({"type":"record","name":"Fuzz","namespace":"t","fields":[
    {"name":"b","type":"boolean"},{"name":"i","type":"int"},{"name":"l","type":"long"},
    {"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"s","type":"string"},
    {"name":"by","type":"bytes"},
    {"name":"e","type":{"type":"enum","name":"Colour","symbols":["RED","GREEN","BLUE"]}},
    {"name":"fx","type":{"type":"fixed","name":"Four","size":4}},
    {"name":"a","type":{"type":"array","items":"long"}},
    {"name":"m","type":{"type":"map","values":["null","string","Fuzz"]}},
    {"name":"next","type":["null","Fuzz"]}]})";

// The writer's schema lacks `extra` (the reader's default fills it) and has `b` the reader drops.
inline constexpr const char* avro_reader_schema = R"({"type":"record","name":"Fuzz","namespace":"t","fields":[
    {"name":"i","type":"long"},{"name":"l","type":"double"},{"name":"s","type":"bytes"},
    {"name":"e","type":{"type":"enum","name":"Colour","symbols":["RED","GREEN","BLUE"]}},
    {"name":"a","type":{"type":"array","items":"float"}},
    {"name":"m","type":{"type":"map","values":["null","string","Fuzz"]}},
    {"name":"next","type":["null","Fuzz"]},
    {"name":"extra","type":"string","default":"x"}]})";

struct AvroCodecs {
    std::shared_ptr<acemq::InMemorySchemaRegistry> registry = std::make_shared<acemq::InMemorySchemaRegistry>();
    acemq::AvroCodec fixed{avro_schema};
    acemq::RegisteredAvroCodec resolving{registry, "t.Fuzz", avro_schema, {.reader_schema = avro_reader_schema}};
};

inline const AvroCodecs& avro_codecs() {
    static const AvroCodecs codecs;
    return codecs;
}

inline void avro_input(std::span<const std::byte> body) {
    const AvroCodecs& codecs = avro_codecs();
    try {
        const acemq::Value value = codecs.fixed.decode(body, acemq::content_types::avro);
        if (codecs.fixed.decode(codecs.fixed.encode(value), acemq::content_types::avro) != value)
            throw std::logic_error("an Avro value read back differently after writing it");
    } catch (const acemq::DecodeError&) {  // the one refusal allowed
    }
    std::vector<std::byte> framed(body.begin(), body.end());
    const std::byte id{static_cast<unsigned char>(codecs.resolving.schema().id)};
    framed.insert(framed.begin(), {std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0}, id});
    try {
        codecs.resolving.decode(framed, acemq::content_types::avro_registered);
    } catch (const acemq::DecodeError&) {  // the one refusal allowed
    }
}

}  // namespace fuzz
