#!/bin/bash
# A 1,000-frame soak through one tide worker (issue 17): 20 small simulated frames submitted 50
# times each to a real RabbitMQ node, reduced into SQLite (a repeat replaces its rows), the
# worker's /metrics scraped every 0.3 s. Passes when all 1,000 are done, the store holds 20
# frames, and the worker's resident memory is flat over the second half of the run: its
# least-squares slope against frames done below 4 KiB per frame (a leak of one catalog or
# message per frame would be tens of KiB; not asserted under AddressSanitizer, whose
# quarantine grows by design). The slope is printed (TIDE_SOAK_FRAMES=N for
# another count). Device memory is the GPU run's to watch (scripts/gpu/run.sh).
# Skipped (77) without rabbitmq-server.
set -u
SRC=${TIDE_SOURCE_DIR:?}
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
REPEAT=$(( ${TIDE_SOAK_FRAMES:-1000} / 20 ))
env_lines=$(bash "$SRC/tests/rabbitmq_node.sh" start)
rc=$?
if [ $rc = 77 ]; then echo "SKIP: no rabbitmq-server"; exit 77; fi
[ $rc = 0 ] || { echo "FAIL: could not start a RabbitMQ node"; exit 1; }
eval "$env_lines"
T=$(mktemp -d /tmp/tide-soak.XXXXXX)
WPID=
trap '[ -n "$WPID" ] && kill -9 $WPID 2>/dev/null; bash "$SRC/tests/rabbitmq_node.sh" stop "$TIDE_RMQ_DIR"; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
Q="--queue $TIDE_RMQ_URL --queue-name soak"

mkdir -p "$T/in"
files=()
for i in $(seq 1 20); do
    "$TIDE" sim -o "$T/in/s$i.fits" --seed "$i" --width 96 --height 96 --nstars 15 --ngal 1 \
        >/dev/null 2>&1 || bad "sim s$i"
    files+=("$T/in/s$i.fits")
done
all=()
for _ in $(seq 1 "$REPEAT"); do all+=("${files[@]}"); done
total=${#all[@]}
"$TIDE" submit $Q --no-progress "${all[@]}" >/dev/null || bad "submit"

"$TIDE" worker $Q --store "$T/store.db" --runners 2 --idle-exit 3 --metrics 127.0.0.1:0 \
    --json >"$T/summary.json" 2>"$T/worker.log" &
WPID=$!
port=
for _ in $(seq 1 200); do
    port=$(sed -n 's/.*metrics on http:[^ ]* (port \([0-9]*\)).*/\1/p' "$T/worker.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || bad "the worker did not say where its metrics are"
while kill -0 $WPID 2>/dev/null && [ -n "$port" ]; do
    curl -s "http://127.0.0.1:$port/metrics" 2>/dev/null |
        awk '/^tide_frames_total\{status="done"\}/ { d = $2 } /^process_resident_memory_bytes/ { r = $2 }
             END { if (d != "" && r != "") print d, r }' >>"$T/samples.txt"
    sleep 0.3
done
wait $WPID
rc=$?
WPID=
[ $rc = 0 ] || bad "worker exited $rc: $(tail -3 "$T/worker.log")"
grep -q "\"done\": $total" "$T/summary.json" || bad "summary: $(cat "$T/summary.json")"
n=$(sqlite3 "$T/store.db" "SELECT count(*) FROM images")
[ "$n" = 20 ] || bad "the store holds $n images, not 20"
out=$("$PY" - "$T/samples.txt" "$total" <<'EOF'
import sys
pts = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
total = float(sys.argv[2])
half = [(d, r) for d, r in pts if d >= total / 2]
if len(half) < 5:
    print("few", len(pts)); sys.exit(0)
n = len(half)
mx = sum(d for d, _ in half) / n
my = sum(r for _, r in half) / n
sxx = sum((d - mx) ** 2 for d, _ in half)
slope = sum((d - mx) * (r - my) for d, r in half) / sxx if sxx else 0.0
print("%.1f %d %.1f %.1f" % (slope, n, min(r for _, r in half) / 2**20, max(r for _, r in half) / 2**20))
EOF
)
read -r slope nsamp rmin rmax <<<"$out"
if [ "$slope" = few ]; then
    bad "too few metric samples in the second half ($nsamp)"
else
    echo "RSS slope over the second half: $slope bytes/frame ($nsamp samples, $rmin..$rmax MiB)"
    # under AddressSanitizer freed memory sits in its quarantine (256 MiB) and RSS grows by
    # design: there the leak check is LeakSanitizer's, and the slope is only printed
    if [ -z "${ASAN_OPTIONS:-}" ]; then
        "$PY" -c "import sys; sys.exit(0 if float('$slope') < 4096 else 1)" ||
            bad "resident memory grows by $slope bytes per frame"
    fi
fi

[ $fail = 0 ] && echo "PASS: $total frames through one worker, memory flat"
exit $fail
