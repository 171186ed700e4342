#!/bin/sh
# Starts an acemq-broker on a free loopback port, runs COMMAND with ACEMQ_EXAMPLE_URL set to
# its zmq+tcp:// URL, stops the broker (SIGTERM, then SIGKILL after 10 s) and exits with
# COMMAND's status.   with_zmq_broker.sh ACEMQ-BROKER COMMAND [ARGUMENTS...]
broker=$1; shift
ready=$(mktemp -u /tmp/acemq-example-ready.XXXXXX)
"$broker" --listen tcp://127.0.0.1:0 --ready-file "$ready" &
pid=$!
tries=0
while [ ! -s "$ready" ]; do
  tries=$((tries + 1))
  if [ $tries -gt 200 ] || ! kill -0 $pid 2>/dev/null; then
    echo "acemq-broker did not start within 10 s" >&2
    kill -9 $pid 2>/dev/null
    exit 1
  fi
  sleep 0.05
done
ACEMQ_EXAMPLE_URL="zmq+$(head -n 1 "$ready")"
export ACEMQ_EXAMPLE_URL
rm -f "$ready"
"$@"
status=$?
kill -TERM $pid
tries=0
while kill -0 $pid 2>/dev/null; do
  tries=$((tries + 1))
  if [ $tries -gt 200 ]; then kill -9 $pid; break; fi
  sleep 0.05
done
wait $pid
broker_status=$?
if [ $status -eq 0 ] && [ $broker_status -ne 0 ]; then
  echo "acemq-broker exited with status $broker_status on SIGTERM" >&2
  exit 1
fi
exit $status
