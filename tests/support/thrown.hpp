// The message of the exception a piece of test code must throw.
#pragma once

#include <catch2/catch.hpp>

#include <string>

namespace testing_support {

// The what() of the E that `action` throws; fails the test when it throws nothing (an
// exception of another type goes on to fail the test case).
template <class E, class F>
std::string what_of(F&& action) {
    try {
        action();
    } catch (const E& error) {
        return error.what();
    }
    FAIL("expected an exception, and none was thrown");
    return {};
}

}  // namespace testing_support
