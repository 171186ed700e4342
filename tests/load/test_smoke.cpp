// acemq-load run as a user runs it, against the embedded broker for about two seconds: its
// JSON report is read back and checked for consistency (counts that must agree, percentiles
// in order, every verdict present). Nothing here depends on how fast the machine is: the
// verdicts' outcomes are not asserted, only that they are there.
#include <sys/wait.h>

#include <array>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <cstdio>
#include <sstream>
#include <string>

namespace json = boost::json;

namespace {

struct Ran {
    int status;
    std::string out;
};

// `streams` says where standard error goes, and standard output (what is read) with it.
Ran run(const std::string& arguments, const std::string& streams = "2>/dev/null") {
    const std::string command = std::string(ACEMQ_LOAD_PROGRAM) + " " + arguments + " " + streams;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    std::array<char, 4096> buffer{};
    for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) out.append(buffer.data(), n);
    const int status = pclose(pipe);
    REQUIRE(WIFEXITED(status));
    return {WEXITSTATUS(status), out};
}

std::uint64_t count(const json::object& report, const char* field) {
    return report.at(field).to_number<std::uint64_t>();
}

void check_histogram(const json::object& report, const char* name) {
    INFO(name);
    const json::object& h = report.at(name).as_object();
    REQUIRE(h.at("count").to_number<std::uint64_t>() > 0);
    double previous = 0;
    for (const char* field : {"minMicros", "p50Micros", "p90Micros", "p99Micros", "p999Micros", "maxMicros"}) {
        INFO(field);
        const double value = h.at(field).to_number<double>();
        REQUIRE(value >= previous);
        previous = value;
    }
}

void check_verdicts(const json::object& report, std::initializer_list<const char*> rules) {
    const json::array& verdicts = report.at("verdicts").as_array();
    REQUIRE(verdicts.size() == rules.size());
    bool all_passed = true, none_invalid = true;
    std::size_t i = 0;
    for (const char* rule : rules) {
        const json::object& verdict = verdicts.at(i++).as_object();
        REQUIRE(verdict.at("rule").as_string() == rule);
        const bool passed = verdict.at("passed").as_bool();
        REQUIRE(!verdict.at("observation").as_string().empty());
        all_passed = all_passed && passed;
        if (!passed && verdict.at("severity").as_string() == "invalid") none_invalid = false;
    }
    REQUIRE(report.at("valid").as_bool() == none_invalid);
    REQUIRE(report.at("passed").as_bool() == all_passed);
}

}  // namespace

TEST_CASE("a two-second run on the embedded broker reports consistent counts and ordered percentiles",
          "[load][smoke]") {
    const Ran ran =
        run("--url inproc://load-smoke --rate 2000 --size 256 --publishers 2 --window 8 --consumers 2 "
            "--duration 2s --warmup 500ms --min-samples 1000 --json -");
    INFO(ran.out);
    const json::object report = json::parse(ran.out).as_object();
    const bool valid = report.at("valid").as_bool(), passed = report.at("passed").as_bool();
    REQUIRE(ran.status == (!valid ? 2 : passed ? 0 : 1));

    REQUIRE(count(report, "offeredTotal") == 5000);
    REQUIRE(count(report, "refusedTotal") == 0);
    REQUIRE(count(report, "publishedTotal") == 5000);
    REQUIRE(count(report, "consumedTotal") == count(report, "publishedTotal"));
    REQUIRE(count(report, "failedTotal") == 0);
    REQUIRE(count(report, "deadLetteredTotal") == 0);
    REQUIRE(count(report, "deadLetterDepthAtEnd") == 0);
    REQUIRE(report.contains("queueDepthAtEnd"));
    // The warm-up's messages are counted, never recorded: 4000 of the 5000 fall due after it.
    REQUIRE(report.at("endToEnd").at("count").to_number<std::uint64_t>() == 4000);
    REQUIRE(report.at("sendLag").at("count").to_number<std::uint64_t>() == 4000);
    REQUIRE(report.at("confirm").at("count").to_number<std::uint64_t>() == 4000);
    for (const char* name : {"endToEnd", "confirm", "sendLag"}) check_histogram(report, name);
    check_verdicts(report, {"generator-kept-up", "no-publish-refused", "ran-long-enough", "all-handled"});
    REQUIRE(report.at("options").at("publishers").to_number<int>() == 2);
}

TEST_CASE("failing handlers climb the retry ladder and end in the .dlq, counted", "[load][smoke]") {
    const Ran ran =
        run("--url inproc://load-smoke-failing --rate 200 --duration 1s --warmup 0s --consumers 4 --failure-rate 1 "
            "--attempts 2 --retry-delay 1ms --min-samples 100 --json -");
    INFO(ran.out);
    const json::object report = json::parse(ran.out).as_object();
    const std::uint64_t published = count(report, "publishedTotal");
    REQUIRE(published == 200);
    REQUIRE(count(report, "consumedTotal") == 0);
    REQUIRE(count(report, "failedTotal") == 2 * published);
    REQUIRE(count(report, "deadLetteredTotal") == published);
    REQUIRE(count(report, "deadLetterDepthAtEnd") == published);
    check_verdicts(report, {"generator-kept-up", "no-publish-refused", "ran-long-enough", "all-handled"});
}

TEST_CASE("a bad command line exits 3 and names the option", "[load][smoke]") {
    REQUIRE(run("--duration 5").status == 3);
    REQUIRE(run("--no-such-option 1").status == 3);
    const Ran help = run("--help");
    REQUIRE(help.status == 0);
    REQUIRE(help.out.find("--failure-rate FRACTION") != std::string::npos);
}

TEST_CASE("an INVALID run says which bound failed and what to change; the text report shows the achieved rates",
          "[load][smoke]") {
    // 5,000 messages due within half a millisecond from one sender: no machine keeps that
    // schedule, so the generator falls behind whatever its speed.
    const Ran ran =
        run("--url inproc://load-smoke-invalid --rate 10000000 --size 16 --duration 500us --warmup 0s --consumers 0 "
            "--window 1 --min-samples 0 --progress --progress-every 100ms",
            "2>&1");
    const std::string& out = ran.out;
    INFO(out);
    REQUIRE(ran.status == 2);
    REQUIRE(out.find("  INVALID generator-kept-up: send lag p99 ") != std::string::npos);
    const auto advice = out.find("what to change: ");
    REQUIRE(advice != std::string::npos);
    const std::string what = out.substr(advice, out.find('\n', advice) - advice);
    REQUIRE(what.find("--rate below 10000000.0") != std::string::npos);
    REQUIRE(what.find("--publishers above 1") != std::string::npos);
    REQUIRE(what.find("--window above 1") != std::string::npos);
    REQUIRE(what.find("a looser --lag-bound than 1.000 ms") != std::string::npos);
    REQUIRE(out.find("rates: offered 10000000.0 msg/s, published ") != std::string::npos);
    REQUIRE(out.find("\nINVALID\n") != std::string::npos);
}

TEST_CASE("--progress writes whole progress lines though standard error is not a terminal", "[load][smoke]") {
    const Ran ran =
        run("--url inproc://load-smoke-progress --rate 200 --duration 1s --warmup 0s --min-samples 0 --progress "
            "--progress-every 100ms",
            "2>&1 >/dev/null");
    const std::string& err = ran.out;
    INFO(err);
    REQUIRE(err.find('\r') == std::string::npos);
    std::size_t lines = 0;
    std::istringstream text(err);
    for (std::string line; std::getline(text, line);)
        if (line.starts_with("acemq-load: ") && line.find(" published ") != std::string::npos &&
            line.find(" e2e p99 ") != std::string::npos)
            ++lines;
    // The run lasts over a second and a line falls due every 100 ms: at least one came.
    REQUIRE(lines >= 1);
}
