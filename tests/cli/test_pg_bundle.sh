#!/bin/bash
# The relocatable PostgreSQL + Q3C bundle (scripts/gpu/pg-bundle.sh), as the GPU machine uses
# it: built into one directory, moved to another (relocation), started through
# tests/pg_cluster.sh with PG_BIN=BUNDLE/bin, then `tide bench --worker` stores frames into it
# and the bundle's psql counts them and runs a Q3C cone. The cluster part runs with the
# system's PostgreSQL hidden (a private mount namespace with empty directories over
# /usr/lib/postgresql, /usr/share/postgresql and /usr/share/zoneinfo, which the GPU machine
# lacks too) when `unshare -m` works (root); else strace shows that nothing there is opened.
# Skipped (77) without Debian's postgresql-15, postgresql-15-q3c or patchelf.
set -u
SRC=${TIDE_SOURCE_DIR:?}
TIDE=${TIDE_BIN:?}
case "$TIDE" in /*) ;; *) TIDE=$PWD/$TIDE ;; esac

if [ "${1:-}" = --cluster ]; then
    # the second half, in the hidden namespace (or under strace): $2 = the moved bundle
    B=$2 T=$3
    if [ "${PG_BUNDLE_HIDE:-0}" = 1 ]; then
        mkdir -p "$T/empty"
        for d in /usr/lib/postgresql /usr/share/postgresql /usr/share/zoneinfo; do
            [ -d "$d" ] && { mount --bind "$T/empty" "$d" || exit 1; }
        done
        [ -z "$(ls -A /usr/lib/postgresql)" ] ||
            { echo "FAIL: /usr/lib/postgresql not hidden"; exit 1; }
    fi
    env_lines=$(PG_BIN=$B/bin bash "$SRC/tests/pg_cluster.sh" start) ||
        { echo "FAIL: pg_cluster.sh could not start the bundle's server"; exit 1; }
    eval "$env_lines"
    trap 'PG_BIN=$B/bin bash "$SRC/tests/pg_cluster.sh" stop "$TIDE_PG_DIR"' EXIT
    fail=0
    bad() { echo "FAIL: $*"; fail=1; }
    psql=$B/bin/psql
    "$psql" -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION q3c" || bad "CREATE EXTENSION q3c"
    uri="postgresql:///$PGDATABASE?host=$PGHOST&port=$PGPORT&user=$PGUSER"
    "$TIDE" bench --worker --size 256x256 --stars 150 --frames 8 --runners 1 --cold 0 \
        --store "$uri" --workdir "$T/work" --json "$T/worker.json" >"$T/bench.out" 2>&1 ||
        bad "tide bench --worker into the bundle's server: $(cat "$T/bench.out")"
    grep -q '"store": "postgresql"' "$T/worker.json" 2>/dev/null ||
        bad "worker JSON: no postgresql store"
    n=$("$psql" -X -A -t -c "SELECT count(*) FROM images")
    [ "$n" = 8 ] || bad "images: $n rows (8 expected)"
    ns=$("$psql" -X -A -t -c "SELECT count(*) FROM sources")
    [ "${ns:-0}" -ge 8 ] 2>/dev/null || bad "sources: $ns rows"
    # a cone around one stored source through the q3c index finds it (and its copies)
    nc=$("$psql" -X -A -t -c "SELECT count(*) FROM sources s, (SELECT \"ALPHA_J2000\" a,
         \"DELTA_J2000\" d FROM sources LIMIT 1) c
         WHERE q3c_radial_query(s.\"ALPHA_J2000\", s.\"DELTA_J2000\", c.a, c.d, 1.0/3600)")
    [ "${nc:-0}" -ge 8 ] 2>/dev/null || bad "q3c cone found $nc rows (>= 8 expected)"
    v=$("$psql" -X -A -t -c "SHOW server_version")
    echo "bundle server $v: $n images, $ns sources, cone $nc"
    exit $fail
fi

[ -x /usr/lib/postgresql/15/bin/postgres ] && [ -f /usr/lib/postgresql/15/lib/q3c.so ] ||
    { echo "SKIP: postgresql-15 and postgresql-15-q3c are not installed"; exit 77; }
command -v patchelf >/dev/null || { echo "SKIP: no patchelf"; exit 77; }
T=$(mktemp -d /tmp/tide-pgbundle.XXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 0755 "$T" # the server's user (nobody under root) reads the bundle below it
bash "$SRC/scripts/gpu/pg-bundle.sh" "$T/built/pg" >"$T/bundle.log" 2>&1 ||
    { echo "FAIL: pg-bundle.sh: $(cat "$T/bundle.log")"; exit 1; }
mkdir -p "$T/elsewhere" && mv "$T/built/pg" "$T/elsewhere/moved" && rmdir "$T/built"
B=$T/elsewhere/moved
# nothing in the bundle may still point at the build machine's PostgreSQL
if readelf -d "$B"/lib/postgresql/15/bin/* 2>/dev/null | grep -q '/usr/lib/postgresql'; then
    echo "FAIL: a bundled binary has an RPATH into /usr/lib/postgresql"; exit 1
fi

if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    PG_BUNDLE_HIDE=1 unshare -m bash "$0" --cluster "$B" "$T"
    exit $?
fi
if command -v strace >/dev/null; then
    strace -f -qq -e trace=openat,execve -o "$T/trace" bash "$0" --cluster "$B" "$T"
    rc=$?
    if grep -E '"/usr/(lib|share)/postgresql' "$T/trace" | grep -v ENOENT | head -3 | grep .; then
        echo "FAIL: the bundle opened files of the system's PostgreSQL (above)"; exit 1
    fi
    exit $rc
fi
echo "note: neither unshare nor strace: the system's PostgreSQL was not hidden"
bash "$0" --cluster "$B" "$T"
