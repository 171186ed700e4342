#!/bin/sh
# Runs an example and checks that it succeeds and prints the expected line.
#   expect_output.sh EXAMPLE EXPECTED-TEXT [ARGUMENT...]
example=$1 expected=$2
shift 2
output=$(timeout 150 "$example" "$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ $status -ne 0 ]; then echo "$example exited with status $status" >&2; exit 1; fi
if ! printf '%s\n' "$output" | grep -qF -- "$expected"; then
  echo "$example did not print: $expected" >&2
  exit 1
fi
