// A program of a user's own, built outside the repository against the installed files
// only: it publishes one message in-process and consumes it, checks that the transports
// the build holds are reachable by URL (they are found by a table, not by static
// initialisers the linker may drop), prints a struct as JSON, whose keys come from the
// field names the compiler spells (a compiler spelling them otherwise shows there), and reads
// one back through claim check and, when the build has it, encryption (each from
// <acemq/acemq.hpp> alone; encryption linking libcrypto as the .pc or CMake says).
#include <acemq/acemq.hpp>
#include <acemq/config.hpp>
#include <acemq/inproc.hpp>
#if ACEMQ_HAS_SQLITE
#include <acemq/stores/sql_idempotency_store.hpp>
#include <acemq/stores/sqlite.hpp>
#else
#include <acemq/stores/memory_idempotency_store.hpp>
#endif
#if ACEMQ_HAS_AMQP
#include <acemq/amqp.hpp>
#endif
#if ACEMQ_HAS_XML
#include <acemq/xml_codec.hpp>
#endif
#if ACEMQ_HAS_YAML
#include <acemq/yaml_codec.hpp>
#endif
#if ACEMQ_HAS_TOML
#include <acemq/toml_codec.hpp>
#endif
#if ACEMQ_HAS_ZMQ
#include <unistd.h>

#include <acemq/zmq.hpp>
#endif

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

struct OrderPlaced {
    std::string order_id;
    std::int64_t total_cents;
};

// `value` as `codec` writes it, after checking that it reads back as written.
std::string round_trip(const acemq::Codec& codec, const OrderPlaced& value) {
    const acemq::Encoded encoded = acemq::encode(codec, value);
    const auto back = acemq::decode<OrderPlaced>(codec, encoded.body, encoded.content_type);
    if (back.order_id != value.order_id || back.total_cents != value.total_cents)
        throw acemq::Error("install check: a struct did not read back from the " + std::string(codec.name()) +
                           " body it was written as");
    return {reinterpret_cast<const char*>(encoded.body.data()), encoded.body.size()};
}

// The payload of `value` written through `codec` and read back.
std::string wrapped_round_trip(const acemq::Codec& codec, const OrderPlaced& value) {
    const acemq::Encoded encoded = acemq::encode(codec, value);
    return acemq::decode<OrderPlaced>(codec, encoded.body, encoded.content_type).order_id;
}

int main([[maybe_unused]] int argc, [[maybe_unused]] char** argv) {
    using namespace std::chrono_literals;
    std::cout << "reflected " << round_trip(acemq::JsonCodec{}, {"o-2", 99}) << ' '
              << round_trip(acemq::JsonCodec{{.names = acemq::FieldNames::as_is}}, {"o-2", 99}) << '\n';
    const auto json = std::make_shared<acemq::JsonCodec>();
    std::cout << "claim-checked "
              << wrapped_round_trip(acemq::ClaimCheckCodec(json, std::make_shared<acemq::InMemoryClaimCheckStore>(), 0),
                                    {"o-3", 1})
              << '\n';
#if ACEMQ_HAS_ENCRYPTION
    std::cout << "encrypted "
              << wrapped_round_trip(acemq::EncryptedCodec(json, std::make_shared<acemq::Keyring>(
                                                                    acemq::EncryptionKey::generate("install-check"))),
                                    {"o-4", 1})
              << '\n';
#endif
#if ACEMQ_HAS_XML
    // The optional xml part, linked through acemq-xml.pc or acemq::xml.
    const acemq::Encoded xml = acemq::encode(acemq::XmlCodec{}, OrderPlaced{"o-3", 7});
    if (acemq::decode<OrderPlaced>(acemq::XmlCodec{}, xml.body, xml.content_type).total_cents != 7)
        throw acemq::Error("install check: a struct did not read back from the XML it was written as");
    std::cout << "xml " << std::string(reinterpret_cast<const char*>(xml.body.data()), xml.body.size()) << '\n';
#endif
#if ACEMQ_HAS_YAML
    std::cout << "yaml " << round_trip(acemq::YamlCodec{}, {"o-2", 99});  // each part linked as its .pc says
#endif
#if ACEMQ_HAS_TOML
    std::cout << "toml " << round_trip(acemq::TomlCodec{}, {"o-2", 99});
#endif
    try {
        acemq::open_transport("nope://x");
        std::cerr << "install check: an unknown URL scheme was accepted\n";
        return 1;
    } catch (const acemq::InvalidArgument& unknown) {
        const std::string what = unknown.what();
        const bool lists_amqp = what.find("amqp, amqps, inproc") != std::string::npos;
        const bool lists_inproc = what.find("inproc") != std::string::npos;
        const bool lists_zmq = what.find("zmq+ipc, zmq+tcp") != std::string::npos;
        if (!lists_inproc || lists_amqp != bool(ACEMQ_HAS_AMQP) || lists_zmq != bool(ACEMQ_HAS_ZMQ)) {
            std::cerr << "install check: the transports known are wrong: " << what << '\n';
            return 1;
        }
    }

    acemq::Bus bus = acemq::connect("inproc://install-check", {.origin = "install-check@test"});
    bus.declare(acemq::Topology{}.queue("orders.new", {.dead_letter = true}));
    acemq::testing::Harness harness{bus};
#if ACEMQ_HAS_SQLITE
    if (argc != 2) {
        std::cerr << "usage: consumer DATABASE_FILE (a new SQLite file for the idempotency store)\n";
        return 2;
    }
    acemq::sqlite::Database db{argv[1]};
    acemq::create_schema(db);
    acemq::SqlIdempotencyStore seen{db};
#else
    acemq::InMemoryIdempotencyStore seen;
#endif
    acemq::Consumer consumer = bus.consume<OrderPlaced>(
        "orders.new", acemq::idempotent(seen, [](const acemq::Message<OrderPlaced>& m) {
            std::cout << "consumed " << m.payload.order_id << ' ' << m.payload.total_cents << '\n';
            return acemq::accept();
        }));
    bus.publisher_to_queue("orders.new").send(OrderPlaced{"o-1", 4250});
    if (!harness.wait_settled("orders.new", acemq::Outcome::acked, 1, 5s)) {
        std::cerr << "install check: the message was not consumed within 5 s\n";
        return 1;
    }
    std::cout << "acemq " << ACEMQ_VERSION << ": published and consumed in-process\n";
#if ACEMQ_HAS_ZMQ
    // The same broker served over ZeroMQ, reached by URL: libzmq is linked as the .pc or CMake says.
    const std::string endpoint = "ipc:///tmp/acemq-install-check-" + std::to_string(::getpid()) + ".sock";
    auto server = acemq::zmq::serve(acemq::inproc::broker("install-check"), {endpoint});
    auto remote = acemq::open_transport("zmq+" + endpoint);
    remote->declare(acemq::Topology{}.queue("orders.remote"));
    if (!remote->publish({.routing_key = "orders.remote"}).confirmed || remote->queue_depth("orders.remote") != 1) {
        std::cerr << "install check: a publish over zmq+" << endpoint << " was not confirmed and queued\n";
        return 1;
    }
    std::cout << "acemq " << ACEMQ_VERSION << ": published over zmq and confirmed\n";
#endif
    return 0;
}
