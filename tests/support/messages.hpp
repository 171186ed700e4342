// The messages most tests send, defined once: test files compiled together in one unity
// chunk (tests/meson.build) must agree on what an Order is.
#pragma once

#include <cstdint>
#include <string>

namespace test_messages {

struct Order {
    std::string id;
    std::int64_t cents = 0;
};

struct Payment {
    std::string payment_id;
    std::int64_t cents = 0;
};

}  // namespace test_messages
