#!/bin/sh
# Runs an example against a broker and checks that its output has the expected line.
#   run_on_broker.sh EXAMPLE EXPECTED-TEXT
# The URL is ACEMQ_EXAMPLE_URL (with_zmq_broker.sh sets it), else ACEMQ_TEST_AMQP_URL (the
# RabbitMQ that scripts/test starts).
example=$1 expected=$2
url=${ACEMQ_EXAMPLE_URL:-${ACEMQ_TEST_AMQP_URL:-}}
if [ -z "$url" ]; then
  echo "neither ACEMQ_EXAMPLE_URL nor ACEMQ_TEST_AMQP_URL is set: this test needs the broker scripts/test starts" >&2
  exit 1
fi
output=$(timeout 150 "$example" --url "$url" 2>&1)
status=$?
printf '%s\n' "$output"
if [ $status -ne 0 ]; then echo "$example exited with status $status" >&2; exit 1; fi
if ! printf '%s\n' "$output" | grep -qF -- "$expected"; then
  echo "$example did not print: $expected" >&2
  exit 1
fi
