#!/bin/bash
# The task runner (task.h) against a PostgreSQL store that goes away and comes back: a
# throw-away cluster (tests/pg_cluster.sh), then tests/unit/test_task_runner with the store
# and the commands that stop and start the server: a task while it is down asks for a retry,
# the next one after it is back is done (the runner connected again). Skipped (77) when the
# PostgreSQL server binaries are not installed.
set -u
SRC=${TIDE_SOURCE_DIR:?}
TIDE=${TIDE_BIN:?}
env_lines=$(bash "$SRC/tests/pg_cluster.sh" start)
rc=$?
if [ $rc = 77 ]; then echo "SKIP: no PostgreSQL server binaries"; exit 77; fi
[ $rc = 0 ] || { echo "FAIL: could not start a PostgreSQL cluster"; exit 1; }
eval "$env_lines"
trap 'bash "$SRC/tests/pg_cluster.sh" stop "$TIDE_PG_DIR"' EXIT
export TIDE_TEST_PG="pg:"
export TIDE_TEST_PG_DOWN="bash '$SRC/tests/pg_cluster.sh' down '$TIDE_PG_DIR'"
export TIDE_TEST_PG_UP="bash '$SRC/tests/pg_cluster.sh' up '$TIDE_PG_DIR'"
prog=./test_task_runner
[ -x "$prog" ] || prog=$(dirname "$TIDE")/tests/test_task_runner
out=$("$prog" 2>&1)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || { echo "FAIL: test_task_runner against PostgreSQL (exit $rc)"; exit 1; }
grep -q "PostgreSQL part skipped" <<<"$out" && { echo "FAIL: the PostgreSQL part did not run"; exit 1; }
n=$(psql -X -A -t -d "$PGDATABASE" -c "SELECT count(*) FROM images")
[ "$n" = 2 ] || { echo "FAIL: $n images in the store (2 expected)"; exit 1; }
echo "ok"
