#include "inproc/registry.hpp"

namespace acemq::inproc::detail {

Registry& Registry::instance() {
    static Registry* const registry = new Registry;
    return *registry;
}

std::shared_ptr<Broker> Registry::find_or_add(std::string_view name,
                                              const std::function<std::shared_ptr<Broker>()>& make) {
    std::lock_guard guard(lock_);
    std::shared_ptr<Broker> found;
    if (const auto entry = brokers_.find(name); entry != brokers_.end()) found = entry->second.lock();
    if (found) return found;
    found = make();
    brokers_.insert_or_assign(std::string(name), found);
    return found;
}

void Registry::forget(std::string_view name) {
    std::lock_guard guard(lock_);
    if (const auto entry = brokers_.find(name); entry != brokers_.end() && entry->second.expired())
        brokers_.erase(entry);
}

}  // namespace acemq::inproc::detail
