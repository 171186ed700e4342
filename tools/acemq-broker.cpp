// acemq-broker: one embedded broker (acemq::inproc::broker) served over ZeroMQ until SIGTERM
// or SIGINT, for processes that share a broker without RabbitMQ. Exit status: 0 after a
// clean stop, 1 when it cannot start (the library's error says why), 2 for a bad command line.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/config.hpp>
#include <acemq/error.hpp>
#include <acemq/inproc.hpp>
#include <acemq/zmq.hpp>

namespace {

constexpr std::string_view program = "acemq-broker";
constexpr std::string_view default_endpoint = "tcp://127.0.0.1:5680";

constexpr std::string_view help_text = R"(Usage: acemq-broker [OPTION]...
Hosts one embedded acemq broker and serves it over ZeroMQ to acemq clients
(URLs zmq+tcp://HOST:PORT and zmq+ipc:///PATH) until SIGTERM or SIGINT.

  --listen ENDPOINT       tcp://ADDRESS:PORT or ipc:///PATH to bind; repeatable
                          (default tcp://127.0.0.1:5680; port 0 picks a free one;
                          tcp://localhost:PORT binds 127.0.0.1)
  --name NAME             the broker's name, shown in its errors (default acemq-broker)
  --data FILE             keep durable queues, exchanges, bindings and persistent
                          messages in the SQLite file FILE (made when missing, once
                          every endpoint is bound), so they survive a crash or a
                          power cut: a persistent publish to a durable queue is
                          confirmed once synced to disk. Without it, everything is
                          in memory only
  --max-data-bytes N      refuse persistent publishes once FILE holds N bytes
  --heartbeat-ms N        beat to every client at least every N ms (default 1000)
  --allow-remote          allow tcp endpoints that are not loopback addresses
  --curve-secret FILE     encrypt with CurveZMQ, this broker's secret key file (.key)
  --curve-allow FILE      a client public key file (.pub) to admit; repeatable,
                          at least one with --curve-secret
  --max-frame-bytes N     refuse frames larger than N bytes (default 67108864)
  --ready-file FILE       once bound, write the endpoints (one a line) to FILE
  --generate-keys BASE    write a new key pair to BASE.pub and BASE.key (mode 0600)
                          and exit; never overwrites
  --salvage FILE NEWFILE  copy every declaration and message of the damaged data
                          file FILE that can be read and passes its checksum into
                          the new data file NEWFILE, say what could not be saved,
                          and exit (FILE is not changed; no broker may hold it)
  --help                  show this and exit
  --version               show the version and exit

Exit status: 0 after a clean stop, 1 when the broker cannot start (or --salvage could not
save everything), 2 for a bad command line.
)";

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
    bool help = false;
    bool version = false;
};

std::uint64_t positive_number(std::string_view option, std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || value == 0)
        throw UsageProblem{std::string(option) + " needs a positive whole number, not \"" + std::string(text) + "\""};
    return value;
}

Settings parse(int argc, char* argv[]) {
    Settings settings;
    for (int i = 1; i < argc; ++i) {
        std::string_view argument = argv[i];
        std::optional<std::string_view> inline_value;
        if (const auto equals = argument.find('='); argument.starts_with("--") && equals != std::string_view::npos) {
            inline_value = argument.substr(equals + 1);
            argument = argument.substr(0, equals);
        }
        auto value = [&]() -> std::string {
            if (inline_value) return std::string(*inline_value);
            if (i + 1 >= argc) throw UsageProblem{std::string(argument) + " needs a value"};
            return argv[++i];
        };
        auto flag = [&](bool& target) {
            if (inline_value) throw UsageProblem{std::string(argument) + " takes no value"};
            target = true;
        };
        if (argument == "--listen") {
            settings.endpoints.push_back(value());
        } else if (argument == "--name") {
            settings.name = value();
        } else if (argument == "--data") {
            settings.broker.data = value();
        } else if (argument == "--max-data-bytes") {
            settings.broker.max_data_bytes = positive_number(argument, value());
        } else if (argument == "--heartbeat-ms") {
            const auto milliseconds = positive_number(argument, value());
            settings.options.heartbeat = std::chrono::milliseconds(static_cast<std::int64_t>(milliseconds));
        } else if (argument == "--allow-remote") {
            flag(settings.options.allow_remote);
        } else if (argument == "--curve-secret") {
            settings.curve_secret = value();
        } else if (argument == "--curve-allow") {
            settings.curve_allow.emplace_back(value());
        } else if (argument == "--max-frame-bytes") {
            settings.options.max_frame_bytes = positive_number(argument, value());
        } else if (argument == "--ready-file") {
            settings.ready_file = value();
        } else if (argument == "--generate-keys") {
            settings.generate_keys = value();
        } else if (argument == "--salvage") {
            if (inline_value || i + 2 >= argc) throw UsageProblem{"--salvage needs two files: FILE NEWFILE"};
            settings.salvage.emplace(argv[i + 1], argv[i + 2]);
            i += 2;
        } else if (argument == "--help") {
            flag(settings.help);
        } else if (argument == "--version") {
            flag(settings.version);
        } else {
            throw UsageProblem{"unknown argument \"" + std::string(argv[i]) + "\""};
        }
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

int run(const Settings& settings, const sigset_t& stop_signals) {
    std::shared_ptr<acemq::inproc::Broker> broker;
    // The broker (and its data file) is made once every endpoint is bound: a port in use
    // then leaves no new data file behind.
    auto server = acemq::zmq::serve([&] { return broker = acemq::inproc::broker(settings.name, settings.broker); },
                                    settings.endpoints, settings.options);
    std::cerr << program << ": broker \"" << settings.name << "\" serving " << joined(server->endpoints())
              << (settings.broker.data.empty() ? "; in memory only" : "; durable in " + settings.broker.data)
              << (settings.options.curve
                      ? "; CurveZMQ on, " + std::to_string(settings.curve_allow.size()) + " client key file(s) admitted"
                      : "; CurveZMQ off")
              << std::endl;

    // After the log line, so a script that has seen the ready file finds it logged too.
    if (settings.ready_file) write_ready_file(*settings.ready_file, server->endpoints());

    int signal_number = 0;
    if (const int error = sigwait(&stop_signals, &signal_number); error != 0)
        throw acemq::Error(std::string("acemq: cannot wait for SIGTERM and SIGINT: ") + std::strerror(error));
    const acemq::zmq::ServerStats stats = server->stats();
    server.reset();
    broker.reset();  // the last owner: a durable broker closes its data file cleanly here
    if (settings.ready_file) {
        std::error_code ignored;  // a ready file already removed by its reader is no failure
        std::filesystem::remove(*settings.ready_file, ignored);
    }
    std::cerr << program << ": stopped on SIG" << sigabbrev_np(signal_number) << "; sessions open at stop "
              << stats.sessions << ", ended " << stats.sessions_ended << ", frames refused " << stats.frames_refused
              << ", clients refused " << stats.clients_refused << std::endl;
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
    if (settings.help) {
        std::cout << help_text;
        return 0;
    }
    if (settings.version) {
        std::cout << program << " " << ACEMQ_VERSION << "\n";
        return 0;
    }
    try {
        if (settings.generate_keys) return generate_keys(*settings.generate_keys);
        if (settings.salvage) return salvage(settings.salvage->first, settings.salvage->second);
        return run(settings, stop_signals);
    } catch (const std::exception& error) {
        std::cerr << program << ": " << acemq::without_prefix(error.what()) << "\n";
        return 1;
    }
}
