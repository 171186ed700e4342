// acemq-broker: one embedded broker (acemq::inproc::broker) served over ZeroMQ until SIGTERM
// or SIGINT, for processes that share a broker without RabbitMQ. Its command line is read
// with CLI11; exit status: 0 after a clean stop, 1 when it cannot start (the library's error
// says why), 2 for a bad command line. Ready (systemd's READY=1 when run by it with
// Type=notify, and the --ready-file) once every endpoint is bound, the data file is open and
// the metrics endpoint listens.
#include <fcntl.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include <acemq/broker_metrics.hpp>
#include <acemq/config.hpp>
#include <acemq/error.hpp>
#include <acemq/inproc.hpp>
#include <acemq/log.hpp>
#include <acemq/metrics_endpoint.hpp>
#include <acemq/zmq.hpp>

namespace {

constexpr std::string_view program = "acemq-broker";
constexpr std::string_view default_endpoint = "tcp://127.0.0.1:5680";

constexpr std::string_view description = R"(Hosts one embedded acemq broker and serves it over ZeroMQ to acemq clients
(URLs zmq+tcp://HOST:PORT and zmq+ipc:///PATH) until SIGTERM or SIGINT.)";

constexpr std::string_view exit_codes = R"(Exit status:
  0  a clean stop (SIGTERM, SIGINT), or --generate-keys / --salvage saved everything
  1  the broker cannot start (an endpoint in use, a data file another broker holds, an
     unreadable key: the message says which and what to do), or --salvage could not save
     everything
  2  a bad command line

Run by systemd (the unit acemq-broker.service, Type=notify) it reports READY=1 once serving,
when it writes --ready-file too; docs/operations.md tells how to run it.)";

// A bad command line: main prints it with "see --help" and exits 2.
struct UsageProblem {
    std::string text;
};

struct Settings {
    std::vector<std::string> endpoints;
    std::string name{program};
    acemq::inproc::BrokerOptions broker{};
    acemq::zmq::ServerOptions options{};
    std::optional<std::filesystem::path> curve_secret;
    std::vector<std::filesystem::path> curve_allow;
    std::optional<std::filesystem::path> ready_file;
    std::optional<std::filesystem::path> generate_keys;
    std::optional<std::pair<std::string, std::string>> salvage;
    std::optional<acemq::MetricsEndpointOptions> metrics;
    acemq::LogFormat log_format = acemq::LogFormat::text;
    bool help = false;
    bool version = false;
};

// "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT"; the host defaults to the loopback address.
acemq::MetricsEndpointOptions metrics_address(const std::string& text) {
    acemq::MetricsEndpointOptions where;
    const auto colon = text.rfind(':');
    std::string host = colon == std::string::npos ? "" : text.substr(0, colon);
    const std::string port = colon == std::string::npos ? text : text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (!host.empty()) where.address = host;
    unsigned value = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (error != std::errc{} || end != port.data() + port.size() || value > std::numeric_limits<std::uint16_t>::max())
        throw UsageProblem{"--metrics needs HOST:PORT or PORT (0 to 65535), not \"" + text + "\""};
    where.port = static_cast<std::uint16_t>(value);
    return where;
}

// Checked before CLI11 converts the text, so "soon" and "0" get one plain sentence.
std::string positive_whole_number(const std::string& text) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || value == 0)
        return "needs a positive whole number, not \"" + text + "\"";
    return {};
}

// The command line, as CLI11 reads it into `settings`; --help is CLI11's, its text the
// options below with the description and the exit codes around them.
void describe(CLI::App& app, Settings& settings) {
    app.description(std::string(description));
    app.footer(std::string(exit_codes));
    app.get_formatter()->column_width(30);
    app.add_option("--listen", settings.endpoints,
                   "tcp://ADDRESS:PORT or ipc:///PATH to bind; repeatable (default tcp://127.0.0.1:5680; port 0 "
                   "picks a free one; tcp://localhost:PORT binds 127.0.0.1)")
        ->option_text("ENDPOINT")
        ->allow_extra_args(false);
    app.add_option("--name", settings.name, "the broker's name, shown in its errors (default acemq-broker)")
        ->option_text("NAME");
    app.add_option("--data", settings.broker.data,
                   "keep durable queues, exchanges, bindings and persistent messages in the SQLite file FILE (made "
                   "when missing, once every endpoint is bound), so they survive a crash or a power cut: a persistent "
                   "publish to a durable queue is confirmed once synced to disk. Without it, everything is in memory "
                   "only")
        ->option_text("FILE");
    app.add_option("--max-data-bytes", settings.broker.max_data_bytes,
                   "refuse persistent publishes once FILE holds N bytes")
        ->option_text("N")
        ->check(positive_whole_number);
    app.add_option_function<std::int64_t>(
           "--heartbeat-ms",
           [&](std::int64_t milliseconds) { settings.options.heartbeat = std::chrono::milliseconds(milliseconds); },
           "beat to every client at least every N ms (default 1000)")
        ->option_text("N")
        ->check(positive_whole_number);
    app.add_flag("--allow-remote", settings.options.allow_remote, "allow tcp endpoints that are not loopback addresses")
        ->disable_flag_override();
    app.add_option("--curve-secret", settings.curve_secret,
                   "encrypt with CurveZMQ, this broker's secret key file (.key)")
        ->option_text("FILE");
    app.add_option("--curve-allow", settings.curve_allow,
                   "a client public key file (.pub) to admit; repeatable, at least one with --curve-secret")
        ->option_text("FILE")
        ->allow_extra_args(false);
    app.add_option("--max-frame-bytes", settings.options.max_frame_bytes,
                   "refuse frames larger than N bytes (default 67108864)")
        ->option_text("N")
        ->check(positive_whole_number);
    app.add_flag_callback(
           "--no-management", [&] { settings.options.management = false; },
           "refuse the management commands (acemq queues, peek, purge, ...): clients may only publish and consume")
        ->disable_flag_override();
    app.add_option_function<std::string>(
           "--metrics", [&](const std::string& text) { settings.metrics = metrics_address(text); },
           "serve the broker's Prometheus metrics (per queue depth, unacked and consumers; totals; the data file; "
           "sessions) on http://HOST:PORT/metrics; HOST defaults to 127.0.0.1 (the endpoint is unauthenticated)")
        ->option_text("HOST:PORT");
    app.add_option_function<std::string>(
           "--log-format",
           [&](const std::string& format) {
               settings.log_format = format == "json" ? acemq::LogFormat::json : acemq::LogFormat::text;
           },
           "text (default): a line of time, level, component and message; json: one JSON object a line, "
           "{\"time\",\"level\",\"component\",\"message\",...}, for journald and Loki")
        ->option_text("text|json")
        ->check(CLI::IsMember({"text", "json"}));
    app.add_option("--ready-file", settings.ready_file,
                   "once serving, write the endpoints (one a line) to FILE; removed at a clean stop")
        ->option_text("FILE");
    app.add_option("--generate-keys", settings.generate_keys,
                   "write a new key pair to BASE.pub and BASE.key (mode 0600) and exit; never overwrites")
        ->option_text("BASE");
    app.add_option_function<std::vector<std::string>>(
           "--salvage", [&](const std::vector<std::string>& files) { settings.salvage.emplace(files[0], files[1]); },
           "copy every declaration and message of the damaged data file FILE that can be read and passes its "
           "checksum into the new data file NEWFILE, say what could not be saved, and exit (FILE is not changed; "
           "no broker may hold it)")
        ->option_text("FILE NEWFILE")
        ->expected(2);
    app.set_help_flag("--help", "show this and exit")->disable_flag_override();
    app.add_flag("--version", settings.version, "show the version and exit")->disable_flag_override();
}

Settings parse(int argc, char* argv[]) {
    Settings settings;
    CLI::App app;
    describe(app, settings);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        settings.help = true;
        return settings;
    } catch (const CLI::ParseError& error) {
        // CLI11 names a flag given a value without its dashes: "help was given a disallowed flag override".
        const std::string what = error.what();
        const auto override = what.find(" was given a disallowed flag override");
        if (override != std::string::npos) throw UsageProblem{"--" + what.substr(0, override) + " takes no value"};
        throw UsageProblem{what};
    }
    if (settings.curve_secret && settings.curve_allow.empty())
        throw UsageProblem{"--curve-secret needs at least one --curve-allow FILE (a client's .pub) to admit"};
    if (!settings.curve_secret && !settings.curve_allow.empty())
        throw UsageProblem{"--curve-allow needs --curve-secret FILE (this broker's .key)"};
    if (settings.endpoints.empty()) settings.endpoints.emplace_back(default_endpoint);
    if (settings.curve_secret)
        settings.options.curve = acemq::zmq::ServerCurve{*settings.curve_secret, settings.curve_allow};
    return settings;
}

// Written to a temporary name and renamed, so a reader never sees half the endpoints.
void write_ready_file(const std::filesystem::path& file, const std::vector<std::string>& endpoints) {
    std::string text;
    for (const std::string& endpoint : endpoints) text += endpoint + "\n";
    const std::filesystem::path temporary = std::filesystem::path(file) += ".tmp-" + std::to_string(::getpid());
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const auto failed = [&](int error) {
        throw acemq::Error("acemq: cannot write the ready file " + file.string() + ": " + std::strerror(error) +
                           "; check that its directory exists and is writable");
    };
    if (fd < 0) failed(errno);
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t done = ::write(fd, text.data() + written, text.size() - written);
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) {
            const int error = errno;
            ::close(fd);
            ::unlink(temporary.c_str());
            failed(error);
        }
        written += static_cast<std::size_t>(done);
    }
    if (::close(fd) != 0 || ::rename(temporary.c_str(), file.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        failed(error);
    }
}

std::string joined(const std::vector<std::string>& endpoints) {
    std::string text;
    for (const std::string& endpoint : endpoints) text += (text.empty() ? "" : ", ") + endpoint;
    return text;
}

int generate_keys(const std::filesystem::path& base) {
    const acemq::zmq::KeyFiles files = acemq::zmq::generate_key_pair(base);
    std::cout << "public key: " << files.public_key.string() << "\n"
              << "secret key: " << files.secret_key.string() << " (mode 0600; keep it private)\n";
    return 0;
}

// The broker's own metrics, asked afresh at every scrape. Management is used by one thread at
// a time, and the endpoint may serve two scrapes at once.
class BrokerMetrics {
public:
    BrokerMetrics(std::shared_ptr<acemq::inproc::Broker> broker, const acemq::zmq::Server& server)
        : management_(acemq::inproc::manage(std::move(broker))), server_(server) {}
    std::string text() {
        std::lock_guard guard(lock_);
        return acemq::broker_prometheus_text(management_->info(), management_->queues(), server_.stats().sessions);
    }

private:
    std::mutex lock_;
    std::unique_ptr<acemq::Management> management_;
    const acemq::zmq::Server& server_;
};

void say(acemq::LogLevel level, const std::string& line) { acemq::log(level, program, line); }

int run(const Settings& settings, const sigset_t& stop_signals) {
    std::shared_ptr<acemq::inproc::Broker> broker;
    // The broker (and its data file) is made once every endpoint is bound: a port in use
    // then leaves no new data file behind.
    auto server = acemq::zmq::serve([&] { return broker = acemq::inproc::broker(settings.name, settings.broker); },
                                    settings.endpoints, settings.options);
    std::optional<BrokerMetrics> metrics;
    std::optional<acemq::MetricsEndpoint> metrics_endpoint;
    if (settings.metrics) {
        metrics.emplace(broker, *server);
        metrics_endpoint.emplace([&metrics] { return metrics->text(); }, *settings.metrics);
    }
    say(acemq::LogLevel::info,
        "broker \"" + settings.name + "\" serving " + joined(server->endpoints()) +
            (settings.broker.data.empty() ? "; in memory only" : "; durable in " + settings.broker.data) +
            (settings.options.curve
                 ? "; CurveZMQ on, " + std::to_string(settings.curve_allow.size()) + " client key file(s) admitted"
                 : "; CurveZMQ off") +
            (settings.options.management ? "" : "; management commands refused") +
            (metrics_endpoint ? "; metrics on " + metrics_endpoint->url() : ""));

    // After the log line, so a script that has seen the ready file finds it logged too; and
    // systemd hears it at the same moment (sd_notify does nothing without NOTIFY_SOCKET).
    if (settings.ready_file) write_ready_file(*settings.ready_file, server->endpoints());
    (void)sd_notify(0, ("READY=1\nSTATUS=serving " + joined(server->endpoints())).c_str());

    int signal_number = 0;
    if (const int error = sigwait(&stop_signals, &signal_number); error != 0)
        throw acemq::Error(std::string("acemq: cannot wait for SIGTERM and SIGINT: ") + std::strerror(error));
    (void)sd_notify(0, "STOPPING=1");
    const acemq::zmq::ServerStats stats = server->stats();
    metrics_endpoint.reset();
    metrics.reset();
    server.reset();
    broker.reset();  // the last owner: a durable broker closes its data file cleanly here
    if (settings.ready_file) {
        std::error_code ignored;  // a ready file already removed by its reader is no failure
        std::filesystem::remove(*settings.ready_file, ignored);
    }
    say(acemq::LogLevel::info,
        "stopped on SIG" + std::string(sigabbrev_np(signal_number)) + "; sessions open at stop " +
            std::to_string(stats.sessions) + ", ended " + std::to_string(stats.sessions_ended) + ", frames refused " +
            std::to_string(stats.frames_refused) + ", clients refused " + std::to_string(stats.clients_refused));
    return 0;
}

// Exit status 0 when everything was saved, 1 when something could not be.
int salvage(const std::string& from, const std::string& to) {
    const acemq::inproc::SalvageReport report = acemq::inproc::salvage(from, to);
    std::cout << program << ": saved into " << to << ": " << report.exchanges << " exchange(s), " << report.queues
              << " queue(s), " << report.bindings << " binding(s), " << report.messages << " message(s)\n";
    for (const std::string& lost : report.lost) std::cout << program << ": not saved: " << lost << "\n";
    if (!report.lost.empty())
        std::cout << program << ": " << report.lost.size() << " thing(s) of " << from << " could not be saved\n";
    return report.lost.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
    // Blocked before serve() starts its thread, so every thread inherits the mask and the
    // signals wait for sigwait below instead of killing the process mid-session.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    Settings settings;
    try {
        settings = parse(argc, argv);
    } catch (const UsageProblem& problem) {
        std::cerr << program << ": " << problem.text << "; see --help\n";
        return 2;
    }
    if (settings.help) return 0;
    acemq::set_log_format(settings.log_format);
    if (settings.version) {
        std::cout << program << " " << ACEMQ_VERSION << "\n";
        return 0;
    }
    try {
        if (settings.generate_keys) return generate_keys(*settings.generate_keys);
        if (settings.salvage) return salvage(settings.salvage->first, settings.salvage->second);
        return run(settings, stop_signals);
    } catch (const std::exception& error) {
        say(acemq::LogLevel::error, std::string(acemq::without_prefix(error.what())));
        return 1;
    }
}
