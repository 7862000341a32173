#!/bin/bash
# The PostgreSQL + Q3C store against a real server: starts a throw-away cluster
# (tests/pg_cluster.sh: a temporary directory, an unprivileged user, a unix socket), runs the C
# suite tests/unit/test_store_pg.c against it, then `tide query` and `tide bench --store` on it.
# Skipped (77) when the PostgreSQL server binaries are not installed.
set -u
SRC=${TIDE_SOURCE_DIR:?}
TIDE=${TIDE_BIN:?}
env_lines=$(bash "$SRC/tests/pg_cluster.sh" start)
rc=$?
if [ $rc = 77 ]; then echo "SKIP: no PostgreSQL server binaries"; exit 77; fi
[ $rc = 0 ] || { echo "FAIL: could not start a PostgreSQL cluster"; exit 1; }
eval "$env_lines"
T=$(mktemp -d)
trap 'bash "$SRC/tests/pg_cluster.sh" stop "$TIDE_PG_DIR"; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# the C suite: "pg:" = everything from the PG* variables; the URI form for the second handle
export TIDE_TEST_PG="pg:"
export TIDE_TEST_PG_URI="postgresql:///$PGDATABASE?host=$PGHOST&port=$PGPORT&user=$PGUSER"
prog=./test_store_pg
[ -x "$prog" ] || prog=$(dirname "$TIDE")/tests/test_store_pg
"$prog" || bad "test_store_pg failed (exit $?)"

# tide query on the store the suite filled
out=$("$TIDE" query cone 0 90 2 --store pg: --csv) || bad "query cone on pg failed"
n=$(($(printf '%s\n' "$out" | wc -l) - 1))
[ "$n" -gt 10 ] || bad "query cone near the pole found $n rows"
out=$("$TIDE" query image north.fits --store "$TIDE_TEST_PG_URI" --json) || bad "query image failed"
grep -q '"file": "north.fits"' <<<"$out" || bad "query image: $out"

# the insert benchmark on both stores (small: a check that it runs, not a timing)
out=$("$TIDE" bench --store --rows 5000 --repeats 1 --store-uri pg: --dir "$T") \
    || bad "bench --store failed: $out"
grep -q "postgresql" <<<"$out" || bad "bench --store printed no PostgreSQL line: $out"

[ $fail = 0 ] && echo "ok"
exit $fail
