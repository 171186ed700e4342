// The engine's whole public API in one include, with <acemq/config.hpp> (what this build
// holds) and, in a build with the encryption part, <acemq/encrypted_codec.hpp>. The rest have
// their own: <acemq/inproc.hpp> (the embedded broker itself), <acemq/amqp.hpp> (RabbitMQ
// options a URL does not carry), and the stores:
// <acemq/stores/memory_idempotency_store.hpp>, <acemq/stores/memory_outbox_store.hpp>,
// <acemq/stores/sql_idempotency_store.hpp>, <acemq/stores/sql_outbox_store.hpp>,
// <acemq/stores/sql_claim_check_store.hpp>, and the SQL drivers <acemq/stores/sqlite.hpp>
// (libacemq-sqlite) and <acemq/stores/postgres.hpp> (libacemq-postgres).
#pragma once

#include <acemq/ack.hpp>
#include <acemq/aggregate_health.hpp>
#include <acemq/avro_codec.hpp>
#include <acemq/broker_metrics.hpp>
#include <acemq/bus.hpp>
#include <acemq/claim_check.hpp>
#include <acemq/clock.hpp>
#include <acemq/codec.hpp>
#include <acemq/config.hpp>
#include <acemq/consumer.hpp>
#include <acemq/consumer_group.hpp>
#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/field.hpp>
#include <acemq/health.hpp>
#include <acemq/idempotency.hpp>
#include <acemq/interceptor.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/log.hpp>
#include <acemq/management.hpp>
#include <acemq/message.hpp>
#include <acemq/metrics.hpp>
#include <acemq/metrics_endpoint.hpp>
#include <acemq/middleware.hpp>
#include <acemq/msgpack_codec.hpp>
#include <acemq/naming.hpp>
#include <acemq/observer.hpp>
#include <acemq/ordered.hpp>
#include <acemq/outbox.hpp>
#include <acemq/publisher.hpp>
#include <acemq/reflect.hpp>
#include <acemq/replay.hpp>
#include <acemq/request_reply.hpp>
#include <acemq/retry.hpp>
#include <acemq/routing_slip.hpp>
#include <acemq/saga.hpp>
#include <acemq/scheduler.hpp>
#include <acemq/schema.hpp>
#include <acemq/schema_registry.hpp>
#include <acemq/settlement.hpp>
#include <acemq/sql.hpp>
#include <acemq/stream.hpp>
#include <acemq/telemetry_server.hpp>
#include <acemq/testing.hpp>
#include <acemq/topology.hpp>
#include <acemq/topology_file.hpp>
#include <acemq/tracing.hpp>
#include <acemq/transport.hpp>
#include <acemq/url.hpp>
#include <acemq/uuid.hpp>
#include <acemq/value.hpp>
// Only in a build with the encryption part (its header is installed only then).
#if ACEMQ_HAS_ENCRYPTION
#include <acemq/encrypted_codec.hpp>
#endif
