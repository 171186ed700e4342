#!/bin/sh
# Runs an example against the test broker and checks that its output has the expected line.
#   run_on_broker.sh EXAMPLE EXPECTED-TEXT     (URL from ACEMQ_TEST_AMQP_URL)
example=$1 expected=$2
if [ -z "${ACEMQ_TEST_AMQP_URL:-}" ]; then
  echo "ACEMQ_TEST_AMQP_URL is not set: this test needs the broker scripts/test starts" >&2
  exit 1
fi
output=$(timeout 150 "$example" --url "$ACEMQ_TEST_AMQP_URL" 2>&1)
status=$?
printf '%s\n' "$output"
if [ $status -ne 0 ]; then echo "$example exited with status $status" >&2; exit 1; fi
if ! printf '%s\n' "$output" | grep -qF -- "$expected"; then
  echo "$example did not print: $expected" >&2
  exit 1
fi
