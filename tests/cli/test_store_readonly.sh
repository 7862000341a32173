#!/bin/bash
# tide query opens SQLite stores as asked (issue 22): read-only, no journal-mode switch, no
# schema. A store written by `tide reduce` (a small `tide sim` frame) is queried and left
# byte-identical; with its sky-cell metadata altered (the double free of issue 22) the query
# fails with exit 1 and a message naming the file; another application's database (rollback
# journal and WAL) and a text file are refused and left byte-identical with no -wal, -shm or
# -journal beside them; `tide reduce --store` (the writing path) still creates a store. Where
# the test runs as an unprivileged user (or, as root, can run tide as nobody with setpriv: root
# writes anything, so it would prove nothing), a store of mode 0444 in a read-only directory,
# and one in a writable directory, are queried too.
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
chmod 0755 "$T"
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
sum() { sha256sum "$1" | cut -d' ' -f1; }
side_files() { ls "$1"-wal "$1"-shm "$1"-journal 2>/dev/null; }
sq() { "$PY" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit(); c.close()' "$@"; }

"$TIDE" sim -o "$T/f.fits" --width 256 --height 256 >/dev/null 2>&1 || { echo "FAIL: sim"; exit 1; }
"$TIDE" reduce "$T/f.fits" --backend cpu -o "$T/c.fits" --store "$T/s.db" >"$T/out" 2>&1 \
    || { echo "FAIL: reduce --store: $(cat "$T/out")"; exit 1; }
[ -z "$(side_files "$T/s.db")" ] || bad "the writer left $(side_files "$T/s.db")"

# --- a store: queried, unchanged -----------------------------------------------------------
before=$(sum "$T/s.db")
out=$("$TIDE" query cone 150 2.2 1 --store "$T/s.db") || bad "query on the store failed"
grep -Eq "^[1-9][0-9]* sources within" <<<"$out" || bad "query found nothing: $out"
"$TIDE" query image "$T/f.fits" --store "$T/s.db" >/dev/null || bad "query image failed"
[ "$(sum "$T/s.db")" = "$before" ] || bad "a query changed the store"

# --- the sky-cell metadata altered: no double free, exit 1, the file named ------------------
cp "$T/s.db" "$T/cells.db"
sq "$T/cells.db" "UPDATE tide_meta SET value = 'healpix-nested-99' WHERE key = 'skycell'"
"$TIDE" query cone 150 2.2 1 --store "$T/cells.db" >/dev/null 2>"$T/err"
rc=$?
[ $rc = 1 ] || bad "altered sky cells: exit $rc (1 expected): $(cat "$T/err")"
grep -q "cells.db: unsupported sky-cell scheme 'healpix-nested-99'" "$T/err" \
    || bad "altered sky cells message: $(cat "$T/err")"
"$TIDE" reduce "$T/f.fits" --backend cpu -o "$T/c2.fits" --store "$T/cells.db" >/dev/null 2>"$T/err"
rc=$?
[ $rc = 1 ] || bad "reduce into altered sky cells: exit $rc (1 expected)"
grep -q "unsupported sky-cell scheme" "$T/err" || bad "reduce message: $(cat "$T/err")"

# --- not a tide store: refused, byte-identical, nothing beside it ---------------------------
sq "$T/app.db" "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
                INSERT INTO notes (body) VALUES ('keep me');"
sq "$T/appwal.db" "PRAGMA journal_mode=WAL; CREATE TABLE notes (body TEXT);
                   INSERT INTO notes VALUES ('keep me');"
printf 'just some text, not a database\n' >"$T/text.db"
for f in app.db appwal.db text.db; do
    before=$(sum "$T/$f")
    for q in "cone 150 2.2 1" "image x.fits"; do
        "$TIDE" query $q --store "$T/$f" >/dev/null 2>"$T/err"
        rc=$?
        [ $rc = 1 ] || bad "$f ($q): exit $rc (1 expected)"
        grep -q "$f: not a tide store" "$T/err" || bad "$f message: $(cat "$T/err")"
    done
    [ "$(sum "$T/$f")" = "$before" ] || bad "a query changed $f"
    [ -z "$(side_files "$T/$f")" ] || bad "a query left $(side_files "$T/$f")"
done
"$PY" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
assert c.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
names = [r[0] for r in c.execute("SELECT name FROM sqlite_master")]
assert names == ["notes"], names' "$T/app.db" || bad "app.db changed journal mode or schema"

# --- read-only file and directory, as an unprivileged user ----------------------------------
# (not root: as this user; root: as nobody, where setpriv can run tide so)
if [ "$(id -u)" != 0 ]; then
    as_nobody() { "$@"; }
else
    as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
fi
if [ "$(id -u)" != 0 ] || { command -v setpriv >/dev/null \
    && as_nobody "$TIDE" query --help >/dev/null 2>&1; }; then
    mkdir "$T/ro"
    cp "$T/s.db" "$T/ro/s.db"
    chmod 0444 "$T/ro/s.db"
    chmod 0555 "$T/ro"
    before=$(sum "$T/ro/s.db")
    out=$(as_nobody "$TIDE" query cone 150 2.2 1 --store "$T/ro/s.db" 2>&1) \
        || bad "query of a read-only store in a read-only directory: $out"
    grep -Eq "^[1-9][0-9]* sources within" <<<"$out" || bad "read-only query: $out"
    # a read-only file in a directory the user may write
    mkdir "$T/rw" && cp "$T/s.db" "$T/rw/s.db" && chmod 0444 "$T/rw/s.db" && chmod 0777 "$T/rw"
    out=$(as_nobody "$TIDE" query cone 150 2.2 1 --store "$T/rw/s.db" 2>&1) \
        || bad "query of a 0444 store: $out"
    [ "$(sum "$T/ro/s.db")" = "$before" ] && [ "$(sum "$T/rw/s.db")" = "$before" ] \
        || bad "a read-only query changed the store"
else
    echo "note: cannot run tide as an unprivileged user (root + setpriv): the read-only file"
    echo "      and directory cases are skipped"
fi

[ $fail = 0 ] && echo "ok"
exit $fail
