#include "acemq/error.hpp"

namespace acemq {

ReservedHeaderError::ReservedHeaderError(const std::string& name)
    : InvalidArgument("acemq: header \"" + name +
                      "\" is in the reserved \"x-acemq-\" namespace and would be dropped on "
                      "consume; use a namespace of your own, such as x-yourcompany-") {}

}  // namespace acemq
