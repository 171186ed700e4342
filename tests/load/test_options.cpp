// acemq-load's command line: durations need their unit, unknown options and values out of
// range are refused naming the option, and every option is in --help.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "options.hpp"

namespace {

load::Options parse(std::vector<std::string> words) {
    words.insert(words.begin(), "acemq-load");
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    return load::parse_options(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("durations are a number and a unit", "[load][options]") {
    using namespace std::chrono_literals;
    REQUIRE(load::parse_duration("--x", "250us") == 250us);
    REQUIRE(load::parse_duration("--x", "1.5s") == 1500ms);
    REQUIRE(load::parse_duration("--x", "2m") == 120s);
    REQUIRE(load::parse_duration("--x", "0s") == 0s);
    for (const char* bad : {"5", "ms", "5 s", "-1s", "5sec", "1.2.3s", ""})
        REQUIRE_THROWS_WITH(load::parse_duration("--warmup", bad), Catch::Contains("--warmup"));
}

TEST_CASE("the reference command reads as it says", "[load][options]") {
    using namespace std::chrono_literals;
    const load::Options o = parse({"--url", "amqp://guest:guest@127.0.0.1:5672/", "--rate", "2000", "--size", "512",
                                   "--publishers", "2", "--consumers", "4", "--prefetch", "100", "--duration", "30s",
                                   "--queue-type", "quorum", "--json", "-", "--keep-queue"});
    REQUIRE(o.url == "amqp://guest:guest@127.0.0.1:5672/");
    REQUIRE(o.rate == 2000);
    REQUIRE(o.size == 512);
    REQUIRE(o.publishers == 2);
    REQUIRE(o.consumers == 4);
    REQUIRE(o.prefetch == 100);
    REQUIRE(o.duration == 30s);
    REQUIRE(o.queue_type == load::QueueKind::quorum);
    REQUIRE(o.json == "-");
    REQUIRE(o.keep_queue);
    REQUIRE_FALSE(o.help);
}

TEST_CASE("bad command lines are refused naming what is wrong", "[load][options]") {
    REQUIRE_THROWS_WITH(parse({"--rates", "5"}), Catch::Contains("unknown option \"--rates\""));
    REQUIRE_THROWS_WITH(parse({"--rate"}), Catch::Contains("--rate wants a value"));
    REQUIRE_THROWS_WITH(parse({"--rate", "fast"}), Catch::Contains("--rate wants a number"));
    REQUIRE_THROWS_WITH(parse({"--rate", "0"}), Catch::Contains("--rate must be above 0"));
    REQUIRE_THROWS_WITH(parse({"--size", "8"}), Catch::Contains("--size wants a whole number from 16"));
    REQUIRE_THROWS_WITH(parse({"--failure-rate", "1.5"}), Catch::Contains("--failure-rate is a fraction"));
    REQUIRE_THROWS_WITH(parse({"--queue-type", "stream"}), Catch::Contains("classic or quorum"));
    REQUIRE_THROWS_WITH(parse({"--consumers", "0", "--failure-rate", "0.1"}), Catch::Contains("needs a consumer"));
    REQUIRE_THROWS_WITH(parse({"--duration", "0s"}), Catch::Contains("--duration must be above 0"));
    REQUIRE_THROWS_WITH(parse({"--attempts", "3", "--retry-delay", "500us"}), Catch::Contains("at least 1ms"));
    REQUIRE_THROWS_WITH(parse({"--window", "2000"}), Catch::Contains("--window wants a whole number from 1 to 1024"));
    REQUIRE_THROWS_WITH(parse({"--publishers", "8", "--window", "1000"}), Catch::Contains("at most 4096; got 8000"));
}

TEST_CASE("--help explains every option", "[load][options]") {
    const std::string help = load::help_text();
    for (const char* option :
         {"--url",       "--queue",    "--queue-type",   "--rate",         "--size",     "--publishers",  "--window",
          "--consumers", "--prefetch", "--handler-time", "--failure-rate", "--attempts", "--retry-delay", "--duration",
          "--warmup",    "--drain",    "--lag-bound",    "--min-samples",  "--json",     "--keep-queue",  "--help"})
        REQUIRE((help.find(std::string("\n  ") + option + " ") != std::string::npos ||
                 help.find(std::string("\n  ") + option + "\n") != std::string::npos));
}

TEST_CASE("--progress asks for whole lines every --progress-every", "[load][options]") {
    using namespace std::chrono_literals;
    REQUIRE_FALSE(parse({}).progress);
    REQUIRE(parse({}).progress_every == 5s);
    const load::Options o = parse({"--progress", "--progress-every", "2s"});
    REQUIRE(o.progress);
    REQUIRE(o.progress_every == 2s);
    REQUIRE_THROWS_WITH(parse({"--progress-every", "10ms"}), Catch::Contains("at least 100ms"));
    REQUIRE_THROWS_WITH(parse({"--progress=yes"}), Catch::Contains("--progress takes no value"));
    const std::string help = load::help_text();
    REQUIRE(help.find("\n  --progress\n") != std::string::npos);
    REQUIRE(help.find("\n  --progress-every DURATION\n") != std::string::npos);
}
