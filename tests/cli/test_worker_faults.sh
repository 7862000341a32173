#!/bin/bash
# tide worker under faults, against real servers on loopback (issue 17): 200 small simulated
# frames and 5 frames made bad on purpose are submitted to RabbitMQ; workers reducing them into
# PostgreSQL + Q3C are killed with SIGKILL at random moments 50 times and restarted, the broker
# is restarted once and the database once while a worker runs. Afterwards every good frame is
# in the store exactly once, with as many source rows as its catalog file, the dead-letter queue
# holds exactly the 5 bad frames, each with its reason, and the queue is empty.
# Skipped (77) without rabbitmq-server or the PostgreSQL server.
set -u
SRC=${TIDE_SOURCE_DIR:?}
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
NGOOD=${TIDE_FAULT_FRAMES:-200}
NKILL=${TIDE_FAULT_KILLS:-50}
rmq_env=$(bash "$SRC/tests/rabbitmq_node.sh" start)
rc=$?
if [ $rc = 77 ]; then echo "SKIP: no rabbitmq-server"; exit 77; fi
[ $rc = 0 ] || { echo "FAIL: could not start a RabbitMQ node"; exit 1; }
eval "$rmq_env"
pg_env=$(bash "$SRC/tests/pg_cluster.sh" start)
rc=$?
if [ $rc != 0 ]; then
    bash "$SRC/tests/rabbitmq_node.sh" stop "$TIDE_RMQ_DIR"
    [ $rc = 77 ] && { echo "SKIP: no PostgreSQL server"; exit 77; }
    echo "FAIL: could not start a PostgreSQL cluster"
    exit 1
fi
eval "$pg_env"
T=$(mktemp -d /tmp/tide-faults.XXXXXX)
WPID=
cleanup() {
    [ -n "$WPID" ] && kill -9 "$WPID" 2>/dev/null
    bash "$SRC/tests/rabbitmq_node.sh" stop "$TIDE_RMQ_DIR"
    bash "$SRC/tests/pg_cluster.sh" stop "$TIDE_PG_DIR"
    rm -rf "$T"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
STORE="postgresql:///$PGDATABASE?host=$PGHOST&port=$PGPORT&user=$PGUSER"
Q="--queue $TIDE_RMQ_URL --queue-name faults"
depth() { bash "$SRC/tests/rabbitmq_node.sh" ctl "$TIDE_RMQ_DIR" list_queues -q name messages 2>/dev/null |
    awk -v q="$1" '$1 == q { print $2 }'; }
sql() { psql -X -q -t -A -d "$PGDATABASE" -c "$1" 2>/dev/null; }

mkdir -p "$T/in" "$T/out"
for i in $(seq 1 "$NGOOD"); do
    "$TIDE" sim -o "$T/in/g$i.fits" --seed "$i" --width 128 --height 128 --nstars 25 --ngal 2 \
        >/dev/null 2>&1 || bad "sim g$i"
done
# made bad on purpose: text, empty, a header cut short, a table only, a 1-D image
"$PY" - "$T/in" <<'EOF' || bad "cannot make the bad frames"
import sys, numpy as np
from astropy.io import fits
d = sys.argv[1]
open(f"{d}/bad1.fits", "w").write("not a FITS file\n" * 100)
open(f"{d}/bad2.fits", "w").close()
good = open(f"{d}/g1.fits", "rb").read()
open(f"{d}/bad3.fits", "wb").write(good[:1500])
fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(
    [fits.Column(name="X", format="E", array=np.arange(3.0))])]).writeto(f"{d}/bad4.fits")
fits.PrimaryHDU(np.arange(50, dtype=np.float32)).writeto(f"{d}/bad5.fits")
EOF
"$TIDE" submit $Q "$T"/in/*.fits >/dev/null || bad "submit"
total=$((NGOOD + 5))
[ "$(depth faults)" = $total ] || bad "queue holds $(depth faults), not $total"

start_worker() {
    "$TIDE" worker $Q --store "$STORE" --outdir "$T/out" --max-attempts 2 --runners 2 \
        --log-json >>"$T/workers.log" 2>&1 &
    WPID=$!
}

# 50 SIGKILLs at random moments; the broker restarted at the 20th, the database at the 35th
RANDOM=17
for k in $(seq 1 "$NKILL"); do
    start_worker
    sleep "0.$((RANDOM % 6 + 1))$((RANDOM % 10))"
    if [ "$k" = 20 ]; then
        bash "$SRC/tests/rabbitmq_node.sh" restart "$TIDE_RMQ_DIR" || bad "broker restart"
        sleep 1
    fi
    if [ "$k" = 35 ]; then
        bash "$SRC/tests/pg_cluster.sh" restart "$TIDE_PG_DIR" || bad "database restart"
        sleep 1
    fi
    kill -9 "$WPID" 2>/dev/null
    wait "$WPID" 2>/dev/null
    WPID=
done
echo "after $NKILL kills: $(sql 'SELECT count(*) FROM images') images stored, $(depth faults) queued"

# drain what is left with one worker that stops when the queue is idle
"$TIDE" worker $Q --store "$STORE" --outdir "$T/out" --max-attempts 2 --idle-exit 4 \
    --log-json >>"$T/workers.log" 2>&1 || bad "the last worker failed"

# every good frame exactly once
n=$(sql "SELECT count(*) FROM images")
[ "$n" = "$NGOOD" ] || bad "the store holds $n images, not $NGOOD"
d=$(sql "SELECT count(DISTINCT file) FROM images")
[ "$d" = "$NGOOD" ] || bad "the store holds $d distinct files, not $NGOOD"
# each with the rows of its catalog file
"$PY" - "$T/out" "$NGOOD" >"$T/rows.txt" <<'EOF' || bad "cannot read the catalogs"
import sys
from astropy.io import fits
d, n = sys.argv[1], int(sys.argv[2])
print(sum(len(fits.getdata(f"{d}/g{i}.cat.fits", 1)) for i in range(1, n + 1)))
EOF
rows=$(sql "SELECT count(*) FROM sources")
[ "$rows" = "$(cat "$T/rows.txt")" ] || bad "sources: $rows rows stored, $(cat "$T/rows.txt") in the catalogs"
[ "$(depth faults)" = 0 ] || bad "the queue still holds $(depth faults)"

# exactly the bad frames in the dead-letter queue, each once, with a reason
"$TIDE" submit $Q --failed >"$T/dlq.json" 2>/dev/null || bad "submit --failed"
got=$("$PY" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ok = all(l["reason"] and l["attempts"] >= 1 for l in lines)
print(" ".join(sorted(l["task"]["path"].rsplit("/", 1)[1] for l in lines)), ok)' "$T/dlq.json")
[ "$got" = "bad1.fits bad2.fits bad3.fits bad4.fits bad5.fits True" ] ||
    bad "dead letters: $got ($(head -c 600 "$T/dlq.json"))"
grep -q '"level":"warn".*lost the broker\|cannot reach the broker' "$T/workers.log" ||
    bad "no worker saw the broker go away"
grep -q 'will retry' "$T/workers.log" || echo "note: no worker was mid-commit when the database restarted"
echo "redelivered: $(grep -c '"msg":"[^"]*: done' "$T/workers.log") done lines for $NGOOD frames"

[ $fail = 0 ] && echo "PASS: $NGOOD frames exactly once through $NKILL kills, a broker and a database restart"
exit $fail
