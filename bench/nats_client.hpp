// libnats for the benches that set NATS beside acemq (request_reply_bench, jetstream_bench):
// its errors as exceptions, its objects owned, a connection made, and why the NATS figures
// are missing when they are. Only in a build that found libnats (ACEMQ_BENCH_NATS=1).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#if ACEMQ_BENCH_NATS
#include <nats/nats.h>

#include <acemq/url.hpp>
#endif

namespace bench::nats {

// Why a build without libnats has no NATS figures.
inline const char* missing_from_build =
    "this build has no libnats: libnats-dev was not installed when it was configured (scripts/setup "
    "--servers installs it; then meson setup --reconfigure on the build directory)";

#if ACEMQ_BENCH_NATS

inline void ok(natsStatus status, const std::string& what) {
    if (status != NATS_OK) throw std::runtime_error("libnats, " + what + ": " + natsStatus_GetText(status));
}

struct DestroyConnection {
    void operator()(natsConnection* connection) const { natsConnection_Destroy(connection); }
};
struct DestroySubscription {
    void operator()(natsSubscription* subscription) const { natsSubscription_Destroy(subscription); }
};
using Connection = std::unique_ptr<natsConnection, DestroyConnection>;
using Subscription = std::unique_ptr<natsSubscription, DestroySubscription>;

// send_asap: each publish written at once (natsOptions_SetSendAsap, libnats's low-latency
// setting). By default libnats leaves it to its flusher thread, which waits up to a
// millisecond to gather more: better for many in flight, and that millisecond is every
// lone call's p50.
inline Connection connect(const std::string& url, bool send_asap) {
    natsOptions* made = nullptr;
    ok(natsOptions_Create(&made), "making the connection options");
    const std::unique_ptr<natsOptions, decltype(&natsOptions_Destroy)> options(made, natsOptions_Destroy);
    ok(natsOptions_SetURL(options.get(), url.c_str()), "the URL " + acemq::redacted_url(url));
    ok(natsOptions_SetSendAsap(options.get(), send_asap), "sending at once");
    natsConnection* connection = nullptr;
    ok(natsConnection_Connect(&connection, options.get()), "connecting to " + acemq::redacted_url(url));
    return Connection(connection);
}

inline std::string client() { return std::string("libnats ") + nats_GetVersion(); }

// libnats's own threads and memory, once every connection is gone.
inline void close() { nats_Close(); }

#else

inline std::string client() { return "libnats"; }

inline void close() {}

#endif

}  // namespace bench::nats
