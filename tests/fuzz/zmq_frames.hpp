// One input through the ZeroMQ frame reader, shared by the libFuzzer target (fuzz_zmq_frame.cpp)
// and the seeded loop of the reliability suite (test_zmq_frames.cpp), so both check the same
// thing: Frame::parse, then the reader of the command it names, end in values or in a
// wire::ProtocolError. Anything else escapes, and is the finding.
#pragma once

#include "zmq/management_wire.hpp"
#include "zmq/protocol.hpp"

#include <span>

namespace fuzz {

// Each way the client reads a management call's reply (`read`), a refusal of one not
// stopping the next from being tried.
template <class... Read>
void read_each_way(const acemq::zmq::wire::Frame& frame, Read... read) {
    (
        [&] {
            try {
                (void)read(frame);
            } catch (const acemq::zmq::wire::ProtocolError&) {
                // this way refused it; the next is tried
            }
        }(),
        ...);
}

// Reads every field the frame's command has; throws what the readers throw. A batch's
// entries are read one by one, as the broker and the client do: one refused does not stop
// the next from being read.
inline void read_zmq_fields(const acemq::zmq::wire::Frame& frame) {
    namespace wire = acemq::zmq::wire;
    using wire::Command;
    switch (frame.command()) {
    case Command::hello: (void)wire::read_hello(frame); return;
    case Command::declare: (void)wire::read_declare(frame); return;
    case Command::publish: (void)wire::read_publish(frame); return;
    case Command::consume: (void)wire::read_consume(frame); return;
    case Command::cancel:
    case Command::release: (void)wire::read_consumer_request(frame); return;
    case Command::ack:
    case Command::nack: (void)wire::read_settle(frame); return;
    case Command::pull:
    case Command::depth:
    case Command::exists:
    case Command::remove: (void)wire::read_queue_request(frame); return;
    case Command::ping: (void)wire::read_request(frame); return;
    case Command::heartbeat:
    case Command::bye: return;
    case Command::welcome: (void)wire::read_welcome(frame); return;
    case Command::reply:
        // A reply's value is read as its request says: here, every way the client reads one.
        (void)wire::read_request(frame);
        if (frame.field(1).type == msgpack::type::POSITIVE_INTEGER)
            (void)frame.unsigned_at(1, "value");
        else if (frame.field(1).type == msgpack::type::BOOLEAN)
            (void)frame.bool_at(1, "value");
        else if (frame.field(1).type != msgpack::type::ARRAY)
            (void)wire::read_pulled(frame);
        else
            read_each_way(frame, wire::read_pulled, wire::read_info_reply, wire::read_exchanges_reply,
                          wire::read_queues_reply, wire::read_bindings_reply, wire::read_sessions_reply,
                          wire::read_browse_reply, wire::read_backup_reply);
        return;
    case Command::failure: (void)wire::read_failure(frame); return;
    case Command::confirm: (void)wire::read_confirm(frame); return;
    case Command::deliver: (void)wire::read_deliver(frame); return;
    case Command::error: (void)wire::read_error(frame); return;
    case Command::manage: (void)wire::read_manage(frame); return;
    case Command::refusal: (void)wire::read_refusal(frame); return;
    case Command::batch: {
        const msgpack::object_array& entries = wire::batch_entries(frame);
        for (std::size_t index = 0; index < entries.size; ++index) {
            try {
                read_zmq_fields(wire::Frame::entry(entries, index));
            } catch (const wire::ProtocolError&) {
                // this entry refused; the next is read
            }
        }
        return;
    }
    }
}

// Parses the frame and reads every field its command has; throws what the readers throw.
inline void read_zmq_frame(std::span<const std::byte> bytes) {
    (void)acemq::zmq::wire::request_of(bytes);
    read_zmq_fields(acemq::zmq::wire::Frame::parse(bytes));
}

inline void zmq_frame_input(std::span<const std::byte> bytes) {
    try {
        read_zmq_frame(bytes);
    } catch (const acemq::zmq::wire::ProtocolError&) {
        // the one allowed failure
    }
}

}  // namespace fuzz
