#!/usr/bin/env bash
# run-worker.sh OUT — there, on the GPU machine (called by `scripts/gpu/run.sh worker`, which
# writes OUT/report.md's header): issue 17's sustained rates of one worker on one GPU, measured
# by `tide bench --worker` (frame file on local disk to committed store, beside the cold
# `tide reduce` of the same frames):
#   1. 2048² frames into SQLite (target ≥ 40 frames/s);
#   2. 151 MP dense frames (14200×10650, 130,000 stars: bench --reduce's dense frame) into
#      PostgreSQL 15 + Q3C (target ≥ 2 frames/s), from the carried bundle .gpu/pg.tar.xz
#      (scripts/gpu/pg-bundle.sh) started by tests/pg_cluster.sh: durable (fsync, synchronous
#      commit, full-page writes on) with docs/postgresql.md's facility settings, and its WAL
#      segments recycled first, as a server that has been taking frames has them.
# Appends to OUT/report.md and writes both runs' JSON as one OUT/bench-worker.json.
# TIDE_GPU_WORKER_SMOKE=1: CPU backend, small frames, few of them, to check this script's
# logic on a machine without a GPU; never for figures.
# Logs at "error" only: a frame's warnings (few PSF stars...) would be repeated per copy.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: run-worker.sh OUT}
root=$PWD
tide=$root/.gpu/bin/tide
report=$out/report.md
fail=0
if [ "${TIDE_GPU_WORKER_SMOKE:-0}" = 1 ]; then
  backend=cpu s_size=256x256 s_stars=200 s_frames=12 s_cold=2
  p_size=1024x768 p_stars=1500 p_frames=4 p_cold=1 runners=1,2 warm_rows=20000
else
  # ~200 frames of 2048² (16 MB each) for a stable rate; 12 of 151 MP (605 MB each: 7 GB on
  # local disk, written once before the clock starts)
  backend=cuda s_size=2048x2048 s_stars=2000 s_frames=200 s_cold=5
  p_size=14200x10650 p_stars=130000 p_frames=12 p_cold=3 runners=1,2 warm_rows=5000000
fi
work=$(mktemp -d /tmp/tide-worker-run.XXXXXX)
chmod 0755 "$work" # the server's user reads the bundle below it
pgdir=""
cleanup() {
  [ -n "$pgdir" ] && PG_BIN=$work/pg/bin bash tests/pg_cluster.sh stop "$pgdir"
  rm -rf "$work"
}
trap cleanup EXIT

echo "## worker: $s_size into SQLite (tide bench --worker)" >>"$report"
timeout 180 "$tide" bench --worker --backend "$backend" --log-level error --size "$s_size" \
  --stars "$s_stars" --frames "$s_frames" --runners "$runners" --cold "$s_cold" \
  --json "$work/sqlite.json" \
  >>"$report" 2>&1 || { echo "(failed: exit $?)" >>"$report"; fail=1; }

echo >>"$report"
echo "## worker: $p_size ($p_stars stars) into PostgreSQL + Q3C (tide bench --worker)" >>"$report"
pg_ok=0
if [ -f .gpu/pg.tar.xz ] && tar xJf .gpu/pg.tar.xz -C "$work"; then
  # the server's settings: docs/postgresql.md's recommendations for a facility store
  pgopts="-c shared_buffers=2GB -c wal_buffers=64MB -c max_wal_size=16GB"
  pgopts="$pgopts -c checkpoint_timeout=30min -c jit=off"
  if env_lines=$(LC_ALL=C PG_BIN=$work/pg/bin PG_CLUSTER_DURABLE=1 PG_CLUSTER_OPTS="$pgopts" \
      bash tests/pg_cluster.sh start 2>>"$report"); then
    eval "$env_lines"
    pgdir=$TIDE_PG_DIR
    psql=$work/pg/bin/psql
    echo "PostgreSQL $("$psql" -X -A -t -c 'SHOW server_version') from the bundle: durable;" \
      "$pgopts" >>"$report"
    # A fresh cluster creates and zero-fills new 16 MB WAL segments inside every timed frame;
    # throw-away WAL and a checkpoint recycle them (as scripts/gpu/run-calib.sh): ~2.3 GB, a
    # little more than the ~2 GB that the timed frames (57 MB each) write.
    "$psql" -X -q -c "CREATE TABLE tide_wal_warmup AS SELECT g, repeat('x', 400) AS pad
      FROM generate_series(1, $warm_rows) g" -c "DROP TABLE tide_wal_warmup" -c CHECKPOINT \
      >/dev/null 2>&1 || echo "(WAL warm-up failed: timings include new WAL segments)" >>"$report"
    pg_ok=1
  else
    echo "(the bundle's server did not start)" >>"$report"
  fi
else
  echo "(no .gpu/pg.tar.xz: prepare with TIDE_GPU_PG=1 scripts/gpu/prepare.sh)" >>"$report"
fi
if [ $pg_ok = 1 ]; then
  uri="postgresql:///$PGDATABASE?host=$PGHOST&port=$PGPORT&user=$PGUSER"
  timeout 330 "$tide" bench --worker --backend "$backend" --log-level error --size "$p_size" \
    --stars "$p_stars" --frames "$p_frames" --runners "$runners" --cold "$p_cold" --store "$uri" \
    --json "$work/pg.json" >>"$report" 2>&1 || { echo "(failed: exit $?)" >>"$report"; fail=1; }
  # the store holds the cold run's frames at the end: their sources per frame
  "$psql" -X -A -t -F ' ' \
    -c "SELECT (SELECT count(*) FROM images), (SELECT count(*) FROM sources)" \
    >"$work/rows" 2>/dev/null || true
  read -r n_img n_src <"$work/rows" || true
  echo "store after the run: ${n_img:-?} images, ${n_src:-?} sources" >>"$report"
else
  fail=1
fi

# one JSON file for both (the device returns 8 files at most)
python3 - "$work" "$out/bench-worker.json" "${n_img:-0}" "${n_src:-0}" <<'EOF' || fail=1
import json, os, sys
work, dest, n_img, n_src = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def load(name):
    try:
        with open(os.path.join(work, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
doc = {"sqlite": load("sqlite.json"), "postgresql": load("pg.json")}
if doc["postgresql"] is not None and n_img > 0:
    doc["postgresql"]["sources_per_frame"] = n_src / n_img
with open(dest, "w") as f:
    json.dump(doc, f, indent=1)
EOF
exit $fail
