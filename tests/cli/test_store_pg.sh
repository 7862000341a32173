#!/bin/bash
# The PostgreSQL + Q3C store against a real server: starts a throw-away cluster
# (tests/pg_cluster.sh: a temporary directory, an unprivileged user, a unix socket), runs the C
# suite tests/unit/test_store_pg.c against it, then `tide query` (read-only: a database without
# tide's tables is refused and left without them) and `tide bench --store` on it.
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

# a query opens the store read-only: a database without tide's tables is refused and gets
# none (issue 22: a query used to create the schema); a query of the store writes nothing
createdb_sql="CREATE DATABASE notide"
psql -X -q -d "$PGDATABASE" -c "$createdb_sql" >/dev/null 2>&1 || bad "could not create notide"
other="postgresql:///notide?host=$PGHOST&port=$PGPORT&user=$PGUSER"
"$TIDE" query cone 0 90 2 --store "$other" >/dev/null 2>"$T/err"
rc=$?
[ $rc = 1 ] || bad "query of a database without tide's tables: exit $rc (1 expected)"
grep -q "not a tide store" "$T/err" || bad "query of notide: $(cat "$T/err")"
n=$(psql -X -A -t -d notide -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
[ "$n" = 0 ] || bad "a query created $n tables in notide"
n=$(psql -X -A -t -d notide -c "SELECT count(*) FROM pg_extension WHERE extname = 'q3c'")
[ "$n" = 0 ] || bad "a query created the q3c extension in notide"
w0=$(psql -X -A -t -d "$PGDATABASE" -c "SELECT pg_current_wal_insert_lsn()")
"$TIDE" query cone 0 90 2 --store pg: >/dev/null || bad "query cone on pg failed (second run)"
w1=$(psql -X -A -t -d "$PGDATABASE" -c "SELECT pg_current_wal_insert_lsn()")
[ "$w0" = "$w1" ] || echo "note: the WAL moved during a query ($w0 -> $w1)"

# the insert benchmark on both stores (small: a check that it runs, not a timing)
out=$("$TIDE" bench --store --rows 5000 --repeats 1 --store-uri pg: --dir "$T") \
    || bad "bench --store failed: $out"
grep -q "postgresql" <<<"$out" || bad "bench --store printed no PostgreSQL line: $out"

[ $fail = 0 ] && echo "ok"
exit $fail
