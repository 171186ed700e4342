// What a handler is given: the decoded payload with its envelope and where it came from.
#pragma once

#include <string>

#include <acemq/envelope.hpp>
#include <acemq/field.hpp>

namespace acemq {

template <class T>
struct Message {
    T payload;
    Envelope envelope;         // as the consume interceptors left it
    std::string queue;         // the queue it was consumed from
    std::string routing_key;   // the key it was published (or dead-lettered home) with
    std::string content_type;  // as the sender set it; "" when none
    std::string reply_to;
    bool redelivered = false;  // the broker handed it out before; informational only
};

// A message whose body the handler reads itself: no codec runs.
using RawMessage = Message<Bytes>;

}  // namespace acemq
