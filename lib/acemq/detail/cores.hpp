// Internal: the engine's classes behind the public handles (Bus, Publisher, Consumer hold a
// pointer to one), named so that the handles can hold them and defined in the library. Do
// not include it yourself, nothing in it is API.
#pragma once

namespace acemq::detail {

class BusCore;
class ConsumerCore;
class PublishInstruments;

}  // namespace acemq::detail
