#!/usr/bin/env bash
# run-calib.sh — there, on the GPU machine (carried .gpu-calib/): start a PostgreSQL 15 server
# with Q3C (durable settings: fsync and synchronous commit on), then measure issue 4's figures:
# the crossmatch (tide bench --xmatch), store inserts on SQLite and PostgreSQL
# (tide bench --store) and the complete reduce into each store (tide bench --calib).
# Results and a report go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/bench/results/local}
mkdir -p "$out"
root=$PWD
if [ -f .gpu-calib/pack.tar.xz ]; then  # tide and its libraries, packed by prepare-calib.sh
  tar xJf .gpu-calib/pack.tar.xz -C .gpu-calib || { echo "run-calib: cannot unpack" >&2; exit 1; }
fi
pgroot=/tmp/tide-pg-root
rm -rf "$pgroot" && mkdir -p "$pgroot" && tar xJf .gpu-calib/pg.tar.xz -C "$pgroot"
export LD_LIBRARY_PATH=$root/.gpu-calib/lib:${LD_LIBRARY_PATH:-}
tide=$root/.gpu-calib/bin/tide
owner=nobody
id postgres >/dev/null 2>&1 && owner=postgres
data=/tmp/tide-pg-data
rm -rf "$data" && mkdir -p "$data" && chown "$owner" "$data" && chmod 0755 "$pgroot" /tmp
as_owner() { if [ "$(id -u)" = 0 ]; then (cd / && runuser -u "$owner" -- "$@"); else "$@"; fi; }
report=$out/report-calib.md
{ echo "# tide GPU run: issue 4 (calibration, crossmatch, stores)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(cat .gpu-calib/commit 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo; } > "$report"
pgbin=$pgroot/pg/bin  # the bundle finds its libraries by RPATH
# The bulk-load settings docs/postgresql.md recommends for a facility store (durability unchanged):
# buffers that hold a frame's pages and WAL, checkpoints by time rather than every ~9 frames.
pgbulk=" -c shared_buffers=2GB -c wal_buffers=64MB -c max_wal_size=16GB -c checkpoint_timeout=30min"
if as_owner "$pgbin/initdb" -D "$data/db" -U tide --auth=trust -E UTF8 > "$out/initdb.log" 2>&1 &&
   as_owner "$pgbin/pg_ctl" -D "$data/db" -l "$data/server.log" -w -t 60 \
     -o "-c listen_addresses='' -c unix_socket_directories='$data' -c jit=off $pgbulk" start >> "$out/initdb.log" 2>&1; then
  pg="postgresql:///postgres?host=$data&user=tide"
  echo "PostgreSQL 15 started (fsync, synchronous_commit, full_page_writes on;$pgbulk)" >> "$report"
else
  pg=""
  echo "PostgreSQL did not start:" >> "$report"; tail -20 "$out/initdb.log" >> "$report"
  tail -20 "$data/server.log" >> "$report" 2>/dev/null
fi
if [ -n "$pg" ]; then
  # A server that has been taking frames reuses its 16 MB WAL segments; a fresh cluster would
  # create and zero-fill ~4 of them inside every timed frame (~55 ms a frame on a 2-core VM,
  # docs/postgresql.md). Write ~0.9 GB of throw-away WAL and checkpoint: that recycles it.
  "$pgbin/psql" "$pg" -qAt -c "CREATE TABLE tide_wal_warmup AS SELECT g, repeat('x', 400) AS pad
    FROM generate_series(1, 2000000) g" -c "DROP TABLE tide_wal_warmup" -c CHECKPOINT \
    >> "$out/initdb.log" 2>&1 || echo "(WAL warm-up failed: timings include new WAL segments)" >> "$report"
fi
fail=0
# "calib" as the first argument: only the complete reduce (the quicker re-run).
if [ "${1:-all}" != calib ]; then
  echo "## crossmatch" >> "$report"
  timeout 300 "$tide" bench --xmatch --backend cuda --json "$out/bench-xmatch.json" >> "$report" 2>&1 || fail=1
  echo "## store inserts" >> "$report"
  timeout 300 "$tide" bench --store --rows 130000 ${pg:+--store-uri "$pg"} \
    --json "$out/bench-store.json" >> "$report" 2>&1 || fail=1
fi
echo "## complete reduce into SQLite" >> "$report"
timeout 500 "$tide" bench --calib --backend cuda --repeats 7 \
  --json "$out/bench-calib-sqlite.json" >> "$report" 2>&1 || fail=1
if [ -n "$pg" ]; then
  echo "## complete reduce into PostgreSQL" >> "$report"
  timeout 500 "$tide" bench --calib --backend cuda --repeats 7 --store "$pg" \
    --json "$out/bench-calib-pg.json" >> "$report" 2>&1 || fail=1
  as_owner "$pgbin/pg_ctl" -D "$data/db" -m fast -w stop > /dev/null 2>&1
fi
cat "$report"
exit $fail
