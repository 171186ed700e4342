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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

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

prometheus_port=$(free_port)
cat >"$work/prometheus.yml" <<CONFIG
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: acemq
    metrics_path: /acemq-metrics
    static_configs:
      - targets: ['127.0.0.1:$port']
CONFIG
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$prometheus_port" >"$work/prometheus.log" 2>&1 &
prometheus_pid=$!

query='acemq_consume_total{outcome="acked",queue="shipping.orders"}'
value=
for _ in $(seq 1 60); do
  kill -0 "$prometheus_pid" 2>/dev/null || { cat "$work/prometheus.log"; fail "prometheus exited"; }
  value=$(python3 - "$prometheus_port" "$query" <<'PY' 2>/dev/null
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
answer = json.load(urllib.request.urlopen(url, timeout=2))
results = answer["data"]["result"]
print(results[0]["value"][1] if results else "")
PY
)
  [ "$value" = "16" ] && break
  sleep 1
done
cat "$work/example.log"
echo "Prometheus answered $query = ${value:-nothing}"
[ "$value" = "16" ] || { tail -20 "$work/prometheus.log"; fail "Prometheus never reported 16 acked (got '${value:-nothing}') within 60 s"; }
echo "scraped by Prometheus: 16 acked"
