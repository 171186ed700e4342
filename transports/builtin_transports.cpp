#include "builtin_transports.hpp"

#include <acemq/inproc.hpp>
#include "inproc/inproc_transport.hpp"

#if ACEMQ_WITH_AMQP
#include <acemq/amqp.hpp>
#endif
#if ACEMQ_WITH_ZMQ
#include <acemq/zmq.hpp>
#endif

namespace acemq::detail {

std::vector<std::pair<std::string, TransportFactory>> builtin_transports() {
    std::vector<std::pair<std::string, TransportFactory>> table;
    table.emplace_back("inproc", [](std::string_view url) -> std::shared_ptr<Transport> { return inproc::open(url); });
#if ACEMQ_WITH_AMQP
    const TransportFactory amqp = [](std::string_view url) -> std::shared_ptr<Transport> { return amqp::open(url); };
    table.emplace_back("amqp", amqp);
    table.emplace_back("amqps", amqp);
#endif
#if ACEMQ_WITH_ZMQ
    const TransportFactory zmq = [](std::string_view url) -> std::shared_ptr<Transport> { return zmq::open(url); };
    table.emplace_back("zmq+tcp", zmq);
    table.emplace_back("zmq+ipc", zmq);
#endif
    return table;
}

std::vector<std::pair<std::string, ManagementFactory>> builtin_management() {
    std::vector<std::pair<std::string, ManagementFactory>> table;
    // In this process: no timeout to keep, the broker answers under its lock.
    table.emplace_back("inproc", [](std::string_view url, const ManagementOptions&) -> std::unique_ptr<Management> {
        return inproc::manage(inproc::broker_at(url));
    });
#if ACEMQ_WITH_ZMQ
    const ManagementFactory zmq = [](std::string_view url, const ManagementOptions& options) {
        zmq::Options settings;
        settings.session.name = "acemq management";
        settings.session.connect_timeout = options.timeout;
        settings.session.call_timeout = options.timeout;
        return zmq::manage(url, std::move(settings));
    };
    table.emplace_back("zmq+tcp", zmq);
    table.emplace_back("zmq+ipc", zmq);
#endif
#if ACEMQ_WITH_AMQP
    const ManagementFactory amqp = [](std::string_view url, const ManagementOptions& options) {
        return amqp::manage(url, options);
    };
    table.emplace_back("amqp", amqp);
    table.emplace_back("amqps", amqp);
#endif
    return table;
}

}  // namespace acemq::detail
