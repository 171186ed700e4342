// Every exception acemq-cpp throws derives from acemq::Error, and its what() says what was
// wrong and what to do about it. Catch the subclass for the failure class you can handle.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace acemq {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A value handed to the library cannot be used: a retry policy out of range, a queue name
// that is not a name, an option that contradicts another. Fix the calling code.
class InvalidArgument : public Error {
public:
    using Error::Error;
};

// The calling code used the API in a way it cannot be used, whatever the values: settled a
// delivery twice, used a closed bus, consumer, publisher or relay or a finished transaction,
// or called something from a thread or in a state where it is not allowed. Fix the calling
// code; trying again does the same.
class UsageError : public Error {
public:
    using Error::Error;
};

// A connection to a broker or a database could not be made or was lost. Worth retrying
// later: nothing is wrong with the request itself. The transports throw it; the SQL drivers
// throw their own subclass (sql::ConnectionError), so one catch of this class handles both.
class ConnectionError : public Error {
public:
    using Error::Error;
};

// An application header used a name in the reserved "x-acemq-" namespace, which the
// library owns and strips on consume.
class ReservedHeaderError : public InvalidArgument {
public:
    explicit ReservedHeaderError(const std::string& name);
};

// A topology is inconsistent, or the broker refused to declare it as asked
// (RabbitMQ's PRECONDITION_FAILED).
class TopologyError : public Error {
public:
    using Error::Error;
};

// A value could not be turned into bytes by the codec asked to encode it.
class EncodeError : public Error {
public:
    using Error::Error;
};

// A body could not be turned back into the type asked for. Fatal by convention: the
// same bytes fail the same way every time, so the engine parks such a message instead
// of retrying it.
class DecodeError : public Error {
public:
    using Error::Error;
};

// A codec could not reach the store that keeps what a body refers to: a claim-check store's
// disk failed, its database is down or timed out on a lock. Not the body's fault, so not
// fatal: thrown while a consumer decodes, the message takes the retry path of the consumer's
// retry policy, as a handler's exception does, and is read again once the store is back;
// thrown while a publisher encodes, the publish fails with it and may be sent again.
// For codec writers: throw this for a store that failed, and a DecodeError for a body that
// can never be read (a key the store does not hold, a malformed header), which parks the
// message. Anything else a codec throws while decoding parks it too.
class StoreUnavailableError : public Error {
public:
    using Error::Error;
};

// `message` without the "acemq: " that begins every message of the library, for quoting
// one error inside the sentence of another (where the prefix would appear twice).
std::string_view without_prefix(std::string_view message) noexcept;

}  // namespace acemq
