// docs/ordered.md §2 (the family's item 51): the family's partition function, value for value, and
// what the ordered handler does with one message at a time (conformance/test_ordered.cpp
// runs it on a consumer's workers).
#include <catch2/catch.hpp>

#include <acemq/ordered.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using namespace acemq;

TEST_CASE("partition is FNV-1a 32-bit over the UTF-8 bytes: the pinned values") {
    const std::vector<std::string> keys{"", "a", "order-1", "customer-99"};
    std::vector<int> of_8;
    std::vector<int> of_3;
    for (const std::string& key : keys) {
        of_8.push_back(partition(key, 8));
        of_3.push_back(partition(key, 3));
    }
    CHECK(of_8 == std::vector<int>{5, 4, 5, 2});
    CHECK(of_3 == std::vector<int>{1, 1, 1, 0});
    CHECK(partition("ünïcode", 8) == 3);  // this file is UTF-8: the key's bytes are c3 bc 6e c3 af ...
    CHECK(partition("the quick brown fox", 1024) == 450);
}

TEST_CASE("partition of a count of 0 or 1 is 0") {
    CHECK(partition("order-1", 0) == 0);
    CHECK(partition("order-1", 1) == 0);
    CHECK(partition("customer-99", -4) == 0);
}

TEST_CASE("partitioned_routing_key is <base>.<partition>") {
    CHECK(partitioned_routing_key("orders", "order-1", 8) == "orders.5");
    CHECK(partitioned_routing_key("orders", "order-1", 1) == "orders.0");
}

namespace {

Message<std::string> message_with(Headers headers, std::string correlation = "c-1") {
    Message<std::string> message;
    message.payload = "body";
    message.envelope.id = "m-1";
    message.envelope.correlation = std::move(correlation);
    message.envelope.headers = std::move(headers);
    return message;
}

}  // namespace

TEST_CASE("by_header reads an application header as text, \"\" when absent") {
    Headers headers;
    headers.insert_or_assign("device", FieldValue("sensor-7"));
    headers.insert_or_assign("shard", FieldValue(std::int32_t{42}));
    const auto message = message_with(headers);
    CHECK(by_header("device")(message) == "sensor-7");
    CHECK(by_header("shard")(message) == "42");
    CHECK(by_header("missing")(message).empty());
    CHECK(by_correlation{}(message) == "c-1");
}

TEST_CASE("ordered returns the handler's decision and keeps no lock afterwards") {
    std::vector<std::string> seen;
    auto handler = ordered<std::string>(by_header("device"), [&](const Message<std::string>& message) {
        seen.push_back(by_header("device")(message));
        return seen.size() == 1 ? reject(std::invalid_argument("no such device")) : accept();
    });
    Headers headers;
    headers.insert_or_assign("device", FieldValue("sensor-7"));
    const Ack first = handler(message_with(headers));
    CHECK(first.kind() == AckKind::reject);
    CHECK(handler(message_with({})).kind() == AckKind::accept);  // empty key: not ordered, still handled
    CHECK(seen == std::vector<std::string>{"sensor-7", ""});
    CHECK(handler.locks() == 0);
}

TEST_CASE("a handler that throws releases its key's lock") {
    auto handler = ordered<std::string>(
        by_correlation{}, [](const Message<std::string>&) -> Ack { throw std::runtime_error("handler failed"); });
    CHECK_THROWS_WITH(handler(message_with({})), "handler failed");
    CHECK(handler.locks() == 0);
}
