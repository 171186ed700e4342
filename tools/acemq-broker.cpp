// acemq-broker: one embedded broker served over ZeroMQ, for processes on one box to share
// queues with no RabbitMQ installed. `acemq-broker --help` says how to run it.
#include <acemq/config.hpp>
#include <acemq/error.hpp>
#include <acemq/inproc.hpp>
#include <acemq/zmq.hpp>

#include <signal.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::string_view usage = R"(usage: acemq-broker [OPTION]...
Hosts one embedded acemq broker and serves it over ZeroMQ to clients that connect with
zmq+tcp://HOST:PORT or zmq+ipc:///PATH URLs. Messages live in memory: a stopped broker
loses what it held. Stops cleanly on SIGTERM or SIGINT.

  --listen ENDPOINT      tcp://ADDRESS:PORT or ipc:///PATH; repeatable
                         (default tcp://127.0.0.1:5680; port 0 picks a free one)
  --name NAME            the broker's name, shown to clients (default acemq-broker)
  --allow-remote         allow a tcp:// address that is not loopback (give clients Curve keys)
  --heartbeat-ms N       beat to each client at least every N ms (default 1000); a client
                         silent for three of its own intervals is gone, its deliveries returned
  --max-frame-bytes N    refuse frames larger than N bytes (default 67108864)
  --curve-secret FILE    encrypt with CurveZMQ, the broker's secret key from FILE (mode 0600)
  --curve-allow FILE     a client public key (.pub) to admit; repeatable, needed with
                         --curve-secret: every other key is refused
  --generate-keys BASE   write a new key pair to BASE.pub and BASE.key (0600) and exit
  --ready-file FILE      once listening, write the endpoints bound (one a line) to FILE
  --help                 this text
  --version              the version

Exit status: 0 stopped cleanly, 1 could not start (the reason on stderr), 2 a bad command line.
)";

struct BadCommandLine {
    std::string what;
};

struct Settings {
    std::vector<std::string> endpoints;
    std::string name = "acemq-broker";
    acemq::zmq::ServerOptions options;
    std::optional<std::filesystem::path> curve_secret;
    std::vector<std::filesystem::path> curve_allowed;
    std::optional<std::filesystem::path> ready_file;
    std::optional<std::filesystem::path> generate_keys;
    bool help = false, version = false;
};

std::uint64_t number(std::string_view flag, std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || value == 0)
        throw BadCommandLine{std::string(flag) + " wants a positive whole number, not \"" + std::string(text) + "\""};
    return value;
}

Settings parse(int argc, char* argv[]) {
    Settings settings;
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw BadCommandLine{std::string(flag) + " needs a value"};
            return argv[++i];
        };
        if (flag == "--help")
            settings.help = true;
        else if (flag == "--version")
            settings.version = true;
        else if (flag == "--listen")
            settings.endpoints.push_back(value());
        else if (flag == "--name")
            settings.name = value();
        else if (flag == "--allow-remote")
            settings.options.allow_remote = true;
        else if (flag == "--heartbeat-ms")
            settings.options.heartbeat = std::chrono::milliseconds(number(flag, value()));
        else if (flag == "--max-frame-bytes")
            settings.options.max_frame_bytes = number(flag, value());
        else if (flag == "--curve-secret")
            settings.curve_secret = value();
        else if (flag == "--curve-allow")
            settings.curve_allowed.emplace_back(value());
        else if (flag == "--generate-keys")
            settings.generate_keys = value();
        else if (flag == "--ready-file")
            settings.ready_file = value();
        else
            throw BadCommandLine{"unknown option \"" + std::string(flag) + "\""};
    }
    if (settings.curve_secret.has_value() != !settings.curve_allowed.empty())
        throw BadCommandLine{settings.curve_secret
                                 ? "--curve-secret needs at least one --curve-allow (the client keys to admit)"
                                 : "--curve-allow needs --curve-secret (the broker's own key)"};
    if (settings.curve_secret)
        settings.options.curve = acemq::zmq::ServerCurve{*settings.curve_secret, settings.curve_allowed};
    if (settings.endpoints.empty()) settings.endpoints.push_back("tcp://127.0.0.1:5680");
    return settings;
}

// Written whole under a temporary name and renamed, so a reader never sees half of it.
void write_ready_file(const std::filesystem::path& file, const std::vector<std::string>& endpoints) {
    const std::filesystem::path partial = file.string() + ".partial";
    {
        std::ofstream out(partial);
        for (const std::string& endpoint : endpoints) out << endpoint << '\n';
        if (!out) throw acemq::InvalidArgument("acemq-broker: cannot write the ready file " + file.string());
    }
    std::filesystem::rename(partial, file);
}

int serve(const Settings& settings) {
    // Blocked before any thread starts, so that every thread inherits the mask and the signals
    // wait for sigwait below.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    auto broker = acemq::inproc::broker(settings.name);
    auto server = acemq::zmq::serve(broker, settings.endpoints, settings.options);
    std::string listening;
    for (const std::string& endpoint : server->endpoints()) listening += (listening.empty() ? "" : ", ") + endpoint;
    std::cerr << "acemq-broker " << ACEMQ_VERSION << ": broker \"" << settings.name << "\" listening on " << listening
              << (settings.options.curve
                      ? " (CurveZMQ, " + std::to_string(settings.curve_allowed.size()) + " client key(s) admitted)"
                      : " (no encryption)")
              << std::endl;
    if (settings.ready_file) write_ready_file(*settings.ready_file, server->endpoints());

    int received = 0;
    sigwait(&stop_signals, &received);
    const acemq::zmq::ServerStats stats = server->stats();
    server.reset();
    std::cerr << "acemq-broker: stopped on " << (received == SIGTERM ? "SIGTERM" : "SIGINT") << "; " << stats.sessions
              << " client(s) connected at the end, " << stats.sessions_ended << " session(s) ended, "
              << stats.frames_refused << " frame(s) refused, " << stats.clients_refused << " client key(s) refused"
              << std::endl;
    return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
    Settings settings;
    try {
        settings = parse(argc, argv);
    } catch (const BadCommandLine& bad) {
        std::cerr << "acemq-broker: " << bad.what << "; see acemq-broker --help\n";
        return 2;
    }
    if (settings.help) {
        std::cout << usage;
        return 0;
    }
    if (settings.version) {
        std::cout << "acemq-broker " << ACEMQ_VERSION << '\n';
        return 0;
    }
    try {
        if (settings.generate_keys) {
            const acemq::zmq::KeyFiles files = acemq::zmq::generate_key_pair(*settings.generate_keys);
            std::cout << "public key: " << files.public_key.string() << "\nsecret key: " << files.secret_key.string()
                      << " (mode 0600; keep it on this machine)\n";
            return 0;
        }
        return serve(settings);
    } catch (const std::exception& error) {
        std::cerr << "acemq-broker: " << error.what() << '\n';
        return 1;
    }
}
