#include <catch2/catch.hpp>

#include <acemq/ack.hpp>

using namespace acemq;

namespace billing {
struct WarehouseDown : std::runtime_error {
    using std::runtime_error::runtime_error;
};
}  // namespace billing

TEST_CASE("describe: type name and text, as the family writes a failure") {
    CHECK(describe(std::runtime_error("the warehouse is not answering")) ==
          "std::runtime_error: the warehouse is not answering");
    CHECK(describe(billing::WarehouseDown("down")) == "billing::WarehouseDown: down");
    CHECK(describe(std::runtime_error("")) == "std::runtime_error");
    CHECK(describe(std::optional<Failure>{}) == "no reason given");
    CHECK(describe(FatalError("no such sku")) == "acemq::FatalError: no such sku");
}

TEST_CASE("failures from exception_ptr, including ones that are not std::exception") {
    CHECK(Failure::of(std::make_exception_ptr(std::logic_error("x"))) == Failure{"std::logic_error", "x", false});
    CHECK(Failure::of(std::make_exception_ptr(42)) ==
          Failure{"int", "a non-standard exception of type int was thrown (it does not derive from std::exception)",
                  false});
    CHECK(Failure::of(std::make_exception_ptr(FatalError("bad"))).fatal);
}

TEST_CASE("the handler vocabulary") {
    CHECK(accept().kind() == AckKind::accept);
    CHECK_FALSE(accept().failure().has_value());

    const Ack retried = retry(std::runtime_error("later"));
    CHECK(retried.kind() == AckKind::retry);
    CHECK(describe(retried.failure()) == "std::runtime_error: later");
    CHECK_FALSE(retried.is_fatal());
    CHECK(retry(FatalError("never")).is_fatal());

    CHECK(reject(std::runtime_error("no")).kind() == AckKind::reject);
    CHECK(park(std::runtime_error("look")).kind() == AckKind::park);
    CHECK(describe(reject().failure()) == "no reason given");

    CHECK(in_progress().kind() == AckKind::in_progress);
    CHECK(in_progress().delay() == std::chrono::seconds(5));
    CHECK(in_progress(std::chrono::milliseconds(250)).delay() == std::chrono::milliseconds(250));
    CHECK_THROWS_AS(in_progress(std::chrono::milliseconds(-1)), InvalidArgument);

    CHECK(to_string(AckKind::accept) == "accept");
    CHECK(to_string(AckKind::retry) == "retry");
    CHECK(to_string(AckKind::reject) == "reject");
    CHECK(to_string(AckKind::park) == "park");
    CHECK(to_string(AckKind::in_progress) == "in_progress");
}

TEST_CASE("FatalError is an acemq::Error") {
    try {
        throw FatalError("unknown customer c-9");
    } catch (const Error& error) {
        CHECK(std::string(error.what()) == "unknown customer c-9");
    }
}
