# Sourced by the scrape tests (prometheus_scrape.sh, broker_scrape.sh): Debian's Prometheus
# server scraping one target on loopback, and its query API asked until a query answers.
# The caller defines fail() and stops "$prometheus_pid" when it exits.

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# scrape_until WORK TARGET_PORT METRICS_PATH QUERY EXPECTED: starts Prometheus (its files in
# WORK) scraping http://127.0.0.1:TARGET_PORT/METRICS_PATH every second, and asks QUERY once
# a second, 60 times at most, until it answers EXPECTED. Sets prometheus_pid and value (the
# last answer, "" for none); returns 1 when EXPECTED never came.
scrape_until() {
  local work=$1 target_port=$2 metrics_path=$3 query=$4 expected=$5 prometheus_port
  prometheus_port=$(free_port)
  cat >"$work/prometheus.yml" <<CONFIG
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: acemq
    metrics_path: $metrics_path
    static_configs:
      - targets: ['127.0.0.1:$target_port']
CONFIG
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --web.listen-address="127.0.0.1:$prometheus_port" >"$work/prometheus.log" 2>&1 &
  prometheus_pid=$!
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
    [ "$value" = "$expected" ] && break
    sleep 1
  done
  echo "Prometheus answered $query = ${value:-nothing}"
  [ "$value" = "$expected" ] || { tail -20 "$work/prometheus.log"; return 1; }
}
