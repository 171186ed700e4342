// The live embedded brokers by name, behind inproc::broker(): it holds them weakly, so a
// broker lives as long as its owners do and a name is free again once they let go.
// Internal to the inproc broker. Thread-safe: one lock guards the names.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace acemq::inproc {
class Broker;
}

namespace acemq::inproc::detail {

class Registry {
public:
    // Never destroyed: a broker's last owner may be a consumer's worker that outlives
    // main() (one left to finish a close begun inside its handler, or stuck in a handler),
    // and its destructor must still find the registry after static destruction has begun.
    static Registry& instance();

    // The live broker named `name`, or else the one `make` makes (under the registry's
    // lock, so two callers never make two), now listed under that name.
    std::shared_ptr<Broker> find_or_add(std::string_view name, const std::function<std::shared_ptr<Broker>()>& make);
    // Unlists `name` when the broker listed there is gone; a broker of the same name made
    // since the caller's last owner let go stays listed. For ~Broker.
    void forget(std::string_view name);

private:
    Registry() = default;

    std::mutex lock_;
    std::map<std::string, std::weak_ptr<Broker>, std::less<>> brokers_;
};

}  // namespace acemq::inproc::detail
