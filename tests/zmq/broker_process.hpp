// A broker for a test to talk to: served from a thread of the test (ThreadBroker) or run as
// the acemq-broker program (BrokerProcess), which can be killed and restarted. Both stop
// what they started; every wait is bounded.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <acemq/inproc.hpp>
#include <acemq/uuid.hpp>
#include <acemq/zmq.hpp>

namespace zmq_test {

using namespace std::chrono_literals;

// ipc:///tmp/acemq-test-NAME-RANDOM.sock, unused so far.
inline std::string fresh_ipc_endpoint(std::string_view name) {
    return "ipc:///tmp/acemq-test-" + std::string(name) + "-" + acemq::new_uuid().substr(0, 8) + ".sock";
}

// True once `pid` is stopped (SIGSTOP has taken effect: state T in /proc/PID/stat).
inline bool is_stopped(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto after_name = line.rfind(')');
    return after_name != std::string::npos && after_name + 2 < line.size() && line[after_name + 2] == 'T';
}

class ThreadBroker {
public:
    explicit ThreadBroker(const std::string& endpoint, acemq::zmq::ServerOptions options = {})
        : broker_(acemq::inproc::broker("zmq-test-" + acemq::new_uuid().substr(0, 8))),
          server_(acemq::zmq::serve(broker_, {endpoint}, std::move(options))) {}
    const std::string& endpoint() const { return server_->endpoints().front(); }
    std::string url() const { return "zmq+" + endpoint(); }
    acemq::zmq::Server& server() { return *server_; }
    const std::shared_ptr<acemq::inproc::Broker>& broker() const { return broker_; }

private:
    std::shared_ptr<acemq::inproc::Broker> broker_;
    std::unique_ptr<acemq::zmq::Server> server_;
};

// The acemq-broker program with `arguments`, started and waited for (its --ready-file).
class BrokerProcess {
public:
    BrokerProcess(std::string program, std::vector<std::string> arguments)
        : program_(std::move(program)), arguments_(std::move(arguments)) {
        start();
    }
    ~BrokerProcess() { stop(SIGTERM); }
    BrokerProcess(const BrokerProcess&) = delete;
    BrokerProcess& operator=(const BrokerProcess&) = delete;

    const std::string& endpoint() const { return endpoint_; }
    std::string url() const { return "zmq+" + endpoint_; }
    pid_t pid() const { return pid_; }

    void start() {
        const std::string ready = "/tmp/acemq-test-ready-" + acemq::new_uuid().substr(0, 8);
        std::vector<std::string> all{program_};
        all.insert(all.end(), arguments_.begin(), arguments_.end());
        all.insert(all.end(), {"--ready-file", ready});
        std::vector<char*> argv;
        for (std::string& argument : all) argv.push_back(argument.data());
        argv.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            ::execv(program_.c_str(), argv.data());
            ::_exit(127);
        }
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (!std::filesystem::exists(ready)) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error(program_ + " exited before it was ready (status " + std::to_string(status) +
                                         ")");
            }
            if (std::chrono::steady_clock::now() > deadline) {
                stop(SIGKILL);
                throw std::runtime_error(program_ + " did not write its ready file within 10 s");
            }
            std::this_thread::sleep_for(10ms);
        }
        std::ifstream in(ready);
        std::getline(in, endpoint_);
        std::filesystem::remove(ready);
    }

    // Sends `signal` and waits (bounded) for the exit; SIGKILL when it does not come. The exit status.
    int stop(int signal) {
        if (pid_ <= 0) return -1;
        ::kill(pid_, signal);
        int status = 0;
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (::waitpid(pid_, &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, &status, 0);
                break;
            }
            std::this_thread::sleep_for(10ms);
        }
        pid_ = -1;
        return status;
    }

private:
    std::string program_;
    std::vector<std::string> arguments_;
    std::string endpoint_;
    pid_t pid_ = -1;
};

}  // namespace zmq_test
