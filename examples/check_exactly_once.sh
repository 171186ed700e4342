#!/bin/sh
# Runs exactly_once in-process, or with --broker on a broker (ACEMQ_EXAMPLE_URL, which
# with_zmq_broker.sh sets, else the RabbitMQ of ACEMQ_TEST_AMQP_URL), and
# checks tutorial 3's charges line by line: step 1 charges on each of its three attempts,
# step 2 (idempotent) charges once and never again.
#   check_exactly_once.sh EXAMPLE [--broker]
example=$1
if [ "${2:-}" = --broker ]; then
  url=${ACEMQ_EXAMPLE_URL:-${ACEMQ_TEST_AMQP_URL:-}}
  if [ -z "$url" ]; then
    echo "neither ACEMQ_EXAMPLE_URL nor ACEMQ_TEST_AMQP_URL is set: this test needs the broker scripts/test starts" >&2
    exit 1
  fi
  set -- --url "$url"
else
  set --
fi
output=$(timeout 150 "$example" "$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ $status -ne 0 ]; then echo "$example exited with status $status" >&2; exit 1; fi
charges=$(printf '%s\n' "$output" | awk '/^step [0-9]+:/ { step = $2 } /^charged, total / { print step " " $0 }')
expected='1: charged, total 1
1: charged, total 2
1: charged, total 3
2: charged, total 1'
if [ "$charges" != "$expected" ]; then
  printf 'expected these charges (step: line):\n%s\nbut the example printed:\n%s\n' "$expected" "$charges" >&2
  exit 1
fi
