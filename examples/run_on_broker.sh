#!/bin/sh
# Runs an example against a broker and checks that its output has the expected line.
#   run_on_broker.sh EXAMPLE EXPECTED-TEXT
# The URL is ACEMQ_EXAMPLE_URL (with_zmq_broker.sh sets it), else ACEMQ_TEST_AMQP_URL (the
# RabbitMQ that scripts/test starts).
url=${ACEMQ_EXAMPLE_URL:-${ACEMQ_TEST_AMQP_URL:-}}
if [ -z "$url" ]; then
  echo "neither ACEMQ_EXAMPLE_URL nor ACEMQ_TEST_AMQP_URL is set: this test needs the broker scripts/test starts" >&2
  exit 1
fi
exec "$(dirname "$0")/expect_output.sh" "$1" "$2" --url "$url"
