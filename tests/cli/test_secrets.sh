#!/bin/bash
# Secrets kept (issue 22): a password planted in every store and reference-catalog URI that
# tide is given must never appear in anything it prints. Runs, failing ones against a port
# where nothing listens: tide reduce --store postgresql://u:PW@... (and postgres://, pg:
# conninfo with password=, a mistyped postgresq://, mysql://, a URI libpq rejects as
# malformed and echoes), --refcat with such URIs (without --refcat-table, with a mistyped
# scheme, with a table on an unreachable server), tide query --store with them (text and
# --json), TIDE_STORE, tide config --set store.uri=... (--json and --plain), tide bench
# --store --store-uri, with --log-level debug and --log-json. When the PostgreSQL server
# binaries are there, a succeeding tide reduce --store and tide query against a throw-away
# cluster (tests/pg_cluster.sh; trust authentication, so the planted password is carried but
# not checked). All stdout and stderr is searched for the password.
set -u
TIDE=${TIDE_BIN:?}
SRC=${TIDE_SOURCE_DIR:-}
T=$(mktemp -d)
PG_DIR=""
cleanup() {
    [ -n "$PG_DIR" ] && bash "$SRC/tests/pg_cluster.sh" stop "$PG_DIR"
    rm -rf "$T"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
PW=PLANTED_SECRET_9f3
ALL="$T/all.txt"
: >"$ALL"
# run CMD...: stdout and stderr appended to $ALL, under a label
run() {
    echo "### ${*//$PW/(password)}" >>"$ALL"
    "$@" >>"$ALL" 2>&1
    echo "### exit $?" >>"$ALL"
}

"$TIDE" sim -o "$T/f.fits" --refcat "$T/ref.fits" --width 128 --height 128 >/dev/null 2>&1 \
    || { echo "FAIL: sim"; exit 1; }
N="connect_timeout=1"
stores=(
    "postgresql://u:$PW@127.0.0.1:1/db?$N"
    "postgres://u:$PW@127.0.0.1:1/db?$N"
    "postgresql://127.0.0.1:1/db?user=u&password=$PW&$N"
    "pg:host=127.0.0.1 port=1 user=u password=$PW $N"
    "pg:host=127.0.0.1 port=1 password='$PW x' $N"
    "postgresq://u:$PW@127.0.0.1:1/db"
    "mysql://u:$PW@127.0.0.1:1/db"
    "postgresql://u:$PW@127.0.0.1:notaport/db"
    "postgresql://u:my $PW@127.0.0.1:1/db"
    "postgresql://u:$PW/x@127.0.0.1:1/db"
)
for s in "${stores[@]}"; do
    run "$TIDE" reduce "$T/f.fits" --backend cpu -o "$T/c.fits" --store "$s" --log-level debug
    run "$TIDE" reduce "$T/f.fits" --backend cpu -o "$T/c.fits" --refcat "$s" --log-json \
        --log-level debug
    run "$TIDE" query cone 150 2.2 1 --store "$s" --json
    run "$TIDE" config --set "store.uri=$s" --json
done
# the other paths, with two of them
for s in "${stores[0]}" "${stores[3]}"; do
    run "$TIDE" reduce "$T/f.fits" --backend cpu -o "$T/c.fits" --store "$s" --json
    run "$TIDE" reduce "$T/f.fits" --backend cpu -o "$T/c.fits" --refcat "$s" \
        --refcat-table refs.stars
    run "$TIDE" query cone 150 2.2 1 --store "$s"
    run "$TIDE" query image x.fits --store "$s" --json
    run env TIDE_STORE="$s" "$TIDE" query cone 150 2.2 1
    run "$TIDE" config --set "store.uri=$s" --plain
    run "$TIDE" config --set "refcat.path=$s"
    run "$TIDE" bench --store --rows 100 --repeats 1 --store-uri "$s" --dir "$T"
done
# the failing runs failed, and said why (a check that they ran at all)
grep -q "127.0.0.1" "$ALL" || bad "no failure message names the server"
grep -q "u:\*\*\*@" "$ALL" || bad "no redacted URI in the messages"

# a succeeding run against a real server, with the password in the URI
if [ -n "$SRC" ] && env_lines=$(bash "$SRC/tests/pg_cluster.sh" start 2>/dev/null); then
    eval "$env_lines"
    PG_DIR=$TIDE_PG_DIR
    uri="postgresql://$PGUSER:$PW@/$PGDATABASE?host=$PGHOST&port=$PGPORT"
    run "$TIDE" reduce "$T/f.fits" --backend cpu -o "$T/ok.fits" --store "$uri"
    grep -q "stored as image [0-9]* in postgresql://$PGUSER:\*\*\*@" "$ALL" \
        || bad "the succeeding reduce printed no redacted store: $(tail -5 "$ALL")"
    run "$TIDE" reduce "$T/f.fits" --backend cpu -o "$T/ok2.fits" --store "$uri" --json
    run "$TIDE" query cone 150 2.2 1 --store "$uri" --json
    grep -q '"count": [1-9]' "$ALL" || bad "the query of the cluster found nothing"
    run "$TIDE" query image "$T/f.fits" --store "$uri"
    run "$TIDE" reduce "$T/f.fits" --backend cpu -o "$T/ok3.fits" --refcat "$uri" \
        --refcat-table no_such_table
else
    echo "note: no PostgreSQL server binaries: the succeeding run is skipped"
fi

if grep -n "$PW" "$ALL"; then
    bad "the planted password appears in the output above"
fi
[ $fail = 0 ] && echo "ok"
exit $fail
