#!/bin/bash
# The metrics endpoint (tide/metrics.h) against Prometheus itself (issue 17, item 4): the
# program `test_metrics_http serve` (the worker's families with known values) on a loopback
# port picked by the kernel; its exposition through `promtool check metrics` (which must also
# refuse a broken one: the check can fail); then a real Prometheus server, started here on
# loopback with a temporary configuration and storage and a 1 s scrape interval, scrapes it,
# and its HTTP API must give back the values set: counters by label, a histogram bucket, a
# median from the buckets, the scrape hook's gauges, every sample line accepted. Prints the
# time of one scrape with curl (mean and median of 200) and Prometheus' own. /healthz turns
# 503 with its reason while the unhealthy flag file exists. The server stops on SIGTERM with
# exit 0 (the sanitizer build checks it for leaks). Skipped (77) without prometheus, promtool
# or curl (Debian's prometheus and curl packages).
set -u
for tool in prometheus promtool curl; do
    command -v "$tool" >/dev/null || { echo "SKIP: no $tool (scripts/install-deps.sh)"; exit 77; }
done
PY=${TIDE_PYTHON:-python3}
prog=./test_metrics_http
[ -x "$prog" ] || prog=$(dirname "${TIDE_BIN:?}")/tests/test_metrics_http
T=$(mktemp -d)
SERVE_PID=""
PROM_PID=""
cleanup() {
    [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
    [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# wait_for CMD...: true once CMD succeeds, within 60 s
wait_for() {
    for _ in $(seq 1 600); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

"$prog" serve 127.0.0.1:0 "$T/port" 2>"$T/serve.err" &
SERVE_PID=$!
# the port file, or the server's death (a bind error) ends the wait
serving() { kill -0 "$SERVE_PID" 2>/dev/null || return 0; test -s "$T/port"; }
wait_for serving
[ -s "$T/port" ] || { echo "FAIL: the server wrote no port: $(cat "$T/serve.err")"; exit 1; }
PORT=$(cat "$T/port")
URL="http://127.0.0.1:$PORT"

# ---- the exposition through promtool -------------------------------------------------------
curl -sf "$URL/metrics" >"$T/metrics.txt" || bad "curl $URL/metrics failed"
if ! promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1; then
    bad "promtool check metrics refused the exposition: $(cat "$T/promtool.out")"
fi
[ -s "$T/promtool.out" ] && bad "promtool check metrics found problems: $(cat "$T/promtool.out")"
printf '# TYPE x counter\nx{a="b} 1\n' | promtool check metrics >/dev/null 2>&1 \
    && bad "promtool accepted a broken exposition: the check cannot fail"
NSAMPLES=$(grep -vc '^#' "$T/metrics.txt")
NFAMILIES=$(grep -c '^# TYPE ' "$T/metrics.txt")

# ---- scrape time, with curl on loopback (a figure; no assertion on it) -----------------------
for _ in $(seq 1 200); do
    curl -s -o /dev/null -w '%{time_total}\n' "$URL/metrics"
done >"$T/times.txt"
scrape=$("$PY" -c '
import statistics, sys
t = [float(x) * 1e3 for x in open(sys.argv[1])]
print("mean %.3f ms, median %.3f ms, max %.3f ms" % (statistics.mean(t), statistics.median(t), max(t)))
' "$T/times.txt")

# ---- /healthz -----------------------------------------------------------------------------------
code=$(curl -s -o "$T/h.json" -w '%{http_code}' "$URL/healthz")
[ "$code" = 200 ] || bad "/healthz: $code"
grep -q '"status":"ok"' "$T/h.json" || bad "/healthz body: $(cat "$T/h.json")"
echo "broker disconnected" >"$T/port.unhealthy"
code=$(curl -s -o "$T/h.json" -w '%{http_code}' "$URL/healthz")
[ "$code" = 503 ] || bad "/healthz unhealthy: $code"
grep -q '"reason":"broker disconnected"' "$T/h.json" || bad "/healthz 503 body: $(cat "$T/h.json")"
rm -f "$T/port.unhealthy"

# ---- a real Prometheus scrapes it -------------------------------------------------------------
PPORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: tide
    static_configs:
      - targets: ["127.0.0.1:$PORT"]
EOF
promtool check config "$T/prometheus.yml" >/dev/null 2>&1 || bad "promtool check config refused the test's configuration"
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$T/prom.log" 2>&1 &
PROM_PID=$!
PURL="http://127.0.0.1:$PPORT"
wait_for curl -sf "$PURL/-/ready" || { bad "prometheus did not start: $(tail -5 "$T/prom.log")"; exit 1; }

# query EXPR: the value of the first result of an instant query ("" when none)
query() {
    curl -s --get --data-urlencode "query=$1" "$PURL/api/v1/query" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
res = r.get("data", {}).get("result", [])
print(res[0]["value"][1] if r.get("status") == "success" and res else "")'
}
# expect EXPR VALUE: the query gives VALUE (waiting for the first scrapes)
expect() {
    local v=""
    for _ in $(seq 1 60); do
        v=$(query "$1")
        [ "$v" = "$2" ] && return 0
        sleep 0.5
    done
    bad "prometheus: $1 = '$v', expected $2"
}
expect 'up{job="tide"}' 1
expect 'tide_frames_total{status="done"}' 7
expect 'tide_frames_total{status="retried"}' 3
expect 'sum(tide_frames_total)' 13
expect 'tide_stage_seconds_bucket{stage="read",le="0.025"}' 5
expect 'tide_stage_seconds_count{stage="reduce"}' 5
expect 'histogram_quantile(0.5, tide_frame_seconds_bucket)' 1.75
expect 'tide_queue_depth' 42
expect 'tide_device_memory_bytes{kind="total"}' 150754820096
expect 'process_open_fds > bool 2' 1
expect "scrape_samples_scraped{job=\"tide\"}" "$NSAMPLES"
start=$(query 'process_start_time_seconds')
now=$(date +%s)
"$PY" -c "import sys; sys.exit(0 if $now - 3600 < float('$start') <= $now + 2 else 1)" \
    || bad "process_start_time_seconds = $start (now $now)"
pdur=$(query 'scrape_duration_seconds{job="tide"}')
pdur_ms=$("$PY" -c "print('%.3f' % (float('${pdur:-nan}') * 1e3))")

# ---- stop: SIGTERM, exit 0 --------------------------------------------------------------------
kill "$PROM_PID"
wait "$PROM_PID" 2>/dev/null
PROM_PID=""
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
rc=$?
SERVE_PID=""
[ $rc = 0 ] || bad "the server exited $rc on SIGTERM: $(cat "$T/serve.err")"

echo "exposition: $NFAMILIES families, $NSAMPLES samples; promtool check metrics: accepted"
echo "scrape of /metrics with curl on loopback: $scrape; by Prometheus: $pdur_ms ms"
[ $fail = 0 ] && echo "ok"
exit $fail
