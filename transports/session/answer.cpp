#include "session/answer.hpp"

#include <acemq/error.hpp>

namespace acemq::session {

Failure failure_of_current() {
    try {
        throw;
    } catch (const TopologyError& error) {
        return {FailureKind::topology, error.what()};
    } catch (const ConnectionError& error) {
        return {FailureKind::connection, error.what()};
    } catch (const UsageError& error) {
        return {FailureKind::usage, error.what()};
    } catch (const InvalidArgument& error) {
        return {FailureKind::invalid_argument, error.what()};
    } catch (const std::exception& error) {
        return {FailureKind::error, error.what()};
    }
}

void raise(const Failure& failure) {
    switch (failure.kind) {
    case FailureKind::topology: throw TopologyError(failure.what);
    case FailureKind::connection: throw ConnectionError(failure.what);
    case FailureKind::usage: throw UsageError(failure.what);
    case FailureKind::invalid_argument: throw InvalidArgument(failure.what);
    case FailureKind::error: break;
    }
    throw Error(failure.what);
}

}  // namespace acemq::session
