#include <acemq/ack.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

namespace acemq {

namespace {

std::string demangle(const char* mangled) {
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> readable(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                         &std::free);
    return status == 0 && readable ? std::string(readable.get()) : std::string(mangled);
}

}  // namespace

Failure Failure::of(const std::exception& error) {
    return Failure{demangle(typeid(error).name()), error.what(), dynamic_cast<const FatalError*>(&error) != nullptr};
}

Failure Failure::of(const std::exception_ptr& error, std::string_view where) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& thrown) {
        return of(thrown);
    } catch (...) {
        // Not a std::exception: no text to read, but the C++ ABI still knows its type.
        const std::type_info* type = abi::__cxa_current_exception_type();
        const std::string type_name = type != nullptr ? demangle(type->name()) : "unknown type";
        return Failure{type_name,
                       "a non-standard exception of type " + type_name + " was thrown" +
                           (where.empty() ? "" : " " + std::string(where)) +
                           " (it does not derive from std::exception)",
                       false};
    }
}

std::string describe(const Failure& failure) {
    if (failure.message.empty()) return failure.type_name;
    return failure.type_name + ": " + failure.message;
}

std::string describe(const std::exception& error) { return describe(Failure::of(error)); }

std::string describe(const std::optional<Failure>& failure) {
    return failure ? describe(*failure) : std::string("no reason given");
}

std::string_view to_string(AckKind kind) noexcept {
    switch (kind) {
    case AckKind::accept: return "accept";
    case AckKind::retry: return "retry";
    case AckKind::reject: return "reject";
    case AckKind::park: return "park";
    case AckKind::in_progress: return "in_progress";
    }
    return "unknown";
}

Ack accept() { return Ack(AckKind::accept, std::nullopt, std::chrono::milliseconds{0}); }
Ack retry(std::optional<Failure> failure) {
    return Ack(AckKind::retry, std::move(failure), std::chrono::milliseconds{0});
}
Ack reject(std::optional<Failure> failure) {
    return Ack(AckKind::reject, std::move(failure), std::chrono::milliseconds{0});
}
Ack park(std::optional<Failure> failure) {
    return Ack(AckKind::park, std::move(failure), std::chrono::milliseconds{0});
}
Ack in_progress(std::chrono::milliseconds delay) {
    if (delay.count() < 0)
        throw InvalidArgument("acemq: in_progress delay of " + std::to_string(delay.count()) +
                              " ms is negative; give zero or more");
    return Ack(AckKind::in_progress, std::nullopt, delay);
}

}  // namespace acemq
