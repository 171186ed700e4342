#!/bin/bash
# The broker's own endpoint, scraped by a real Prometheus: an acemq-broker with a data file and
# --metrics on a free port, five messages published to a queue by acemq-load (consuming
# nothing, keeping the queue), then `promtool check metrics` must find nothing to say about
# the exposition, and Prometheus' query API must report the queue's depth,
# acemq_broker_queue_messages_ready{queue="scrape.orders"} 5.
#   broker_scrape.sh ACEMQ-BROKER ACEMQ-LOAD
set -u
broker=$1 load=$2
fail() { echo "broker_scrape: $*" >&2; exit 1; }
command -v prometheus >/dev/null 2>&1 || fail "no prometheus server: install Debian's prometheus package (scripts/setup --servers does)"
command -v promtool >/dev/null 2>&1 || fail "no promtool: install Debian's prometheus package"
command -v python3 >/dev/null 2>&1 || fail "needs python3 to query Prometheus"

work=$(mktemp -d)
broker_pid= prometheus_pid=
stop() {
  [ -n "$prometheus_pid" ] && kill "$prometheus_pid" 2>/dev/null && wait "$prometheus_pid" 2>/dev/null
  [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null
  rm -rf "$work"
}
trap stop EXIT

source "$(dirname "$0")/prometheus_query.sh"
fetch() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }

"$broker" --listen tcp://127.0.0.1:0 --ready-file "$work/ready" --data "$work/broker.db" \
  --metrics 127.0.0.1:0 2>"$work/broker.log" &
broker_pid=$!
for _ in $(seq 1 300); do
  [ -s "$work/ready" ] && break
  kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log"; fail "acemq-broker exited before it was ready"; }
  sleep 0.1
done
[ -s "$work/ready" ] || fail "acemq-broker wrote no ready file within 30 s"
endpoint=$(head -n 1 "$work/ready")
port=$(sed -n 's|.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$work/broker.log")
[ -n "$port" ] || { cat "$work/broker.log"; fail "acemq-broker did not say where its metrics are"; }

# 10 a second for half a second: five messages; the run's verdicts do not matter here.
"$load" --url "zmq+$endpoint" --queue scrape.orders --rate 10 --duration 500ms --warmup 0s --consumers 0 \
  --keep-queue --min-samples 0 --json "$work/load.json" >/dev/null 2>&1
grep -q '"publishedTotal": 5,' "$work/load.json" || { cat "$work/load.json"; fail "acemq-load did not publish 5 messages"; }

fetch "http://127.0.0.1:$port/metrics" >"$work/exposition" || fail "cannot fetch http://127.0.0.1:$port/metrics"
cat "$work/exposition"
promtool check metrics <"$work/exposition" || fail "promtool check metrics found problems in the broker's exposition"

query='acemq_broker_queue_messages_ready{queue="scrape.orders"}'
scrape_until "$work" "$port" /metrics "$query" 5 ||
  fail "Prometheus never reported a depth of 5 (got '${value:-nothing}') within 60 s"
echo "scraped by Prometheus: scrape.orders holds 5"
