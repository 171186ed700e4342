#!/bin/bash
# A real scraper, not a parser of our own: Debian's Prometheus server scrapes the tutorial
# example's /acemq-metrics on loopback, and its query API must report what the example did
# (acemq_consume_total{outcome="acked",queue="shipping.orders"} 16).
#   prometheus_scrape.sh EXAMPLE
set -u
example=$1
fail() { echo "prometheus_scrape: $*" >&2; exit 1; }
command -v prometheus >/dev/null 2>&1 || fail "no prometheus server: install Debian's prometheus package (scripts/setup --servers does)"
command -v python3 >/dev/null 2>&1 || fail "needs python3 to query Prometheus"

work=$(mktemp -d)
example_pid= prometheus_pid=
stop() {
  [ -n "$prometheus_pid" ] && kill "$prometheus_pid" 2>/dev/null && wait "$prometheus_pid" 2>/dev/null
  [ -n "$example_pid" ] && kill "$example_pid" 2>/dev/null && wait "$example_pid" 2>/dev/null
  rm -rf "$work"
}
trap stop EXIT

source "$(dirname "$0")/prometheus_query.sh"

"$example" --port 0 --serve-seconds 90 >"$work/example.log" 2>&1 &
example_pid=$!
port=
for _ in $(seq 1 300); do
  port=$(sed -n 's|^serving http://127.0.0.1:\([0-9]*\)/acemq-metrics$|\1|p' "$work/example.log")
  [ -n "$port" ] && break
  kill -0 "$example_pid" 2>/dev/null || { cat "$work/example.log"; fail "the example exited before serving"; }
  sleep 0.1
done
[ -n "$port" ] || fail "the example did not say where it serves within 30 s"

query='acemq_consume_total{outcome="acked",queue="shipping.orders"}'
scrape_until "$work" "$port" /acemq-metrics "$query" 16
scraped=$?
cat "$work/example.log"
[ "$scraped" = 0 ] || fail "Prometheus never reported 16 acked (got '${value:-nothing}') within 60 s"
echo "scraped by Prometheus: 16 acked"
