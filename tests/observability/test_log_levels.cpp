#include <acemq/log.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace acemq;

TEST_CASE("the minimum level drops lines before the sink") {
    CHECK(log_level() == LogLevel::info);
    std::vector<std::string> seen;
    auto previous = set_log_sink([&](LogLevel, std::string_view line) { seen.emplace_back(line); });
    log(LogLevel::debug, "hidden");
    log(LogLevel::info, "shown");
    CHECK_FALSE(log_enabled(LogLevel::debug));
    set_log_level(LogLevel::debug);
    CHECK(log_enabled(LogLevel::debug));
    log(LogLevel::debug, "now shown");
    set_log_level(LogLevel::error);
    log(LogLevel::warning, "hidden again");
    set_log_level(LogLevel::info);
    CHECK(seen == std::vector<std::string>{"shown", "now shown"});

    auto mine = set_log_sink(std::move(previous));
    CHECK(mine);
}
