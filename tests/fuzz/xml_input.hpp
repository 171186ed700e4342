// The XML codec's fuzz input, shared by the libFuzzer target (fuzz_xml.cpp) and the seeded
// loop (tests/reliability/test_xml_fuzz.cpp): a body read as a Value and as the shapes of
// inputs.hpp, through the Scalars::text rules; only a DecodeError may come out. Apart from
// inputs.hpp because it needs the optional xml part (libacemq-xml).
#pragma once

#include <acemq/xml_codec.hpp>

#include "inputs.hpp"

namespace fuzz {

inline const acemq::XmlCodec& xml_codec() {
    static const acemq::XmlCodec codec;
    return codec;
}

inline void xml_input(std::span<const std::byte> body) { decode_input(xml_codec(), body, acemq::content_types::xml); }

}  // namespace fuzz
