// The durable classic queue most broker tests declare, spelled once.
#pragma once

#include <string>

#include <acemq/topology.hpp>

namespace testing_support {

inline acemq::QueueDeclaration durable_queue(std::string name) {
    return acemq::QueueDeclaration{.name = std::move(name),
                                   .type = acemq::QueueType::classic,
                                   .durable = true,
                                   .exclusive = false,
                                   .auto_delete = false,
                                   .arguments = {}};
}

}  // namespace testing_support
