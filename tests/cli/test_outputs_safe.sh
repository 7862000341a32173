#!/bin/bash
# CLI test of safe outputs (issue 22): an output that is the same file as an input (by name,
# symlink or hard link), or as another output, is refused before any work with the input
# untouched, in every command; a side output that cannot be written leaves no catalog and no
# store row, also when it fails after the reduction; a symlink planted at the old guessable
# temporary name, or as the target, cannot redirect a write; a dead writer's private
# directory (and old-style temporary names) are removed by the next write.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d /tmp/tide_cli_outputs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
sum() { md5sum "$1" | cut -d' ' -f1; }
# rows TABLE DB: rows of a table of an SQLite store (0 when the file or table does not exist)
rows() {
    "$PY" - "$@" <<'PYEOF'
import os, sqlite3, sys
t, db = sys.argv[1], sys.argv[2]
if not os.path.exists(db):
    print(0); sys.exit()
c = sqlite3.connect(db)
try:
    print(c.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
except sqlite3.OperationalError:
    print(0)
PYEOF
}
# leftovers DIR: tide's temporaries in DIR
leftovers() { find "$1" -maxdepth 1 \( -name '.tide-*' -o -name '*.tmp-*' -o -name '*tide-partial*' \) | wc -l; }

cd "$tmp" || exit 1
"$TIDE" sim -o f.fits --refcat r.fits --width 256 --height 256 --nstars 80 --ngal 5 \
    >/dev/null 2>&1 || { echo "FAIL: sim"; exit 1; }
F=$(sum f.fits)

# refused RC CMD...: the command exits non-zero, says "same file", and f.fits is unchanged
refused() {
    local what=$1
    shift
    "$@" >out.txt 2>err.txt
    local rc=$?
    if [ $rc -ne 0 ] && grep -q "same file" err.txt && [ "$(sum f.fits)" = "$F" ]; then
        ok "$what: refused (exit $rc)"
    else
        bad "$what: exit $rc, input $( [ "$(sum f.fits)" = "$F" ] && echo kept || echo CHANGED): $(cat err.txt)"
        cp -f keep.fits f.fits 2>/dev/null
    fi
}
cp f.fits keep.fits
ln -s f.fits sym.fits
ln f.fits hard.fits

# 1. output == input
refused "reduce -o IN" "$TIDE" reduce --backend cpu f.fits -o f.fits
refused "reduce --back IN" "$TIDE" reduce --backend cpu f.fits -o c.fits --back f.fits
refused "reduce --rms IN" "$TIDE" reduce --backend cpu f.fits -o c.fits --rms f.fits
refused "reduce --csv IN" "$TIDE" reduce --backend cpu f.fits --csv f.fits
refused "reduce -o symlink to IN" "$TIDE" reduce --backend cpu f.fits -o sym.fits
refused "reduce -o hard link of IN" "$TIDE" reduce --backend cpu f.fits -o hard.fits
refused "reduce IN[0] -o IN" "$TIDE" reduce --backend cpu 'f.fits[0]' -o f.fits
refused "reduce two outputs one file" "$TIDE" reduce --backend cpu f.fits -o c.fits --csv ./c.fits
[ ! -e c.fits ] && ok "two outputs refused: no c.fits" || bad "c.fits written"
cp r.fits r0.fits
R=$(sum r.fits)
"$TIDE" reduce --backend cpu f.fits -o r.fits --refcat r.fits >/dev/null 2>err.txt
rc=$?
[ $rc -ne 0 ] && [ "$(sum r.fits)" = "$R" ] && ok "reduce -o REFCAT: refused" ||
    bad "reduce -o REFCAT: exit $rc $(cat err.txt)"
"$TIDE" reduce --backend cpu f.fits -o s0.db --store s0.db >/dev/null 2>&1
[ $? -ne 0 ] && [ ! -e s0.db ] && ok "reduce -o STORE: refused" || bad "reduce -o STORE"
refused "fit-dipoles -o IN" "$TIDE" fit-dipoles --backend cpu f.fits -o f.fits
refused "fit-dipoles -o symlink" "$TIDE" fit-dipoles --backend cpu hard.fits -o sym.fits
refused "solve -o IN" "$TIDE" solve f.fits --width 256 --height 256 -o f.fits
refused "solve -o hard link" "$TIDE" solve f.fits --width 256 --height 256 -o hard.fits
refused "reproject -o IN" "$TIDE" reproject --backend cpu f.fits --grid north-up -o f.fits
refused "reproject -o --onto" "$TIDE" reproject --backend cpu r0.fits --onto f.fits -o sym.fits
mkdir -p idx && ln f.fits idx/index-tide-05.fits
refused "index build -o DIR holding IN" "$TIDE" index build idx/index-tide-05.fits -o idx \
    --scale-lo 5 --scale-hi 5
mkdir -p dd && ln f.fits dd/difference.fits
refused "diff -o DIR holding the template" "$TIDE" diff --backend cpu keep.fits \
    dd/difference.fits -o dd
mkdir -p bt/keep && ln f.fits bt/keep/difference.fits # batch mode writes DIR/STEM/
refused "diff --template: DIR/STEM holds it" "$TIDE" diff --backend cpu --template \
    bt/keep/difference.fits keep.fits -o bt
"$TIDE" sim -o a.fits --truth ./a.fits --width 64 --height 64 >/dev/null 2>err.txt
rc=$?
[ $rc -ne 0 ] && [ ! -e a.fits ] && grep -q "same file" err.txt && ok "sim two outputs: refused" ||
    bad "sim two outputs: exit $rc"

# 2. a side output that cannot be written: nothing written, no store row
"$TIDE" reduce --backend cpu f.fits -o c.fits --csv /nonexistent/x.csv --store s1.db \
    >/dev/null 2>err.txt
rc=$?
[ $rc -eq 1 ] && [ ! -e c.fits ] && [ "$(rows images s1.db)" = 0 ] &&
    ok "--csv /nonexistent: exit 1, no catalog, no store row" ||
    bad "--csv /nonexistent: exit $rc, c.fits $( [ -e c.fits ] && echo exists), rows $(rows images s1.db)"
"$TIDE" reduce --backend cpu f.fits -o c.fits --back /nonexistent/b.fits --store s1.db \
    >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] && [ ! -e c.fits ] && [ "$(rows images s1.db)" = 0 ] &&
    ok "--back /nonexistent: exit 1, nothing written" || bad "--back /nonexistent: exit $rc"
# ... and one that fails while it is written, after the reduction (file size limit 100 KiB:
# the catalog and CSV fit, the 256x256 maps do not)
(trap '' XFSZ; ulimit -f 100; exec "$TIDE" reduce --backend cpu f.fits -o c.fits --csv c.csv \
    --back b.fits --rms m.fits --store s2.db) >/dev/null 2>err.txt
rc=$?
[ $rc -eq 1 ] && [ ! -e c.fits ] && [ ! -e c.csv ] && [ ! -e b.fits ] && [ ! -e m.fits ] &&
    [ "$(rows images s2.db)" = 0 ] && [ "$(rows sources s2.db)" = 0 ] &&
    [ "$(leftovers .)" = 0 ] && ok "late failure of --back: exit 1, no file, no store row, no temporaries" ||
    { bad "late failure: exit $rc, rows $(rows images s2.db)"; ls -a; cat err.txt; }
# the same run without the limit writes everything and one store row
"$TIDE" reduce --backend cpu f.fits -o c.fits --csv c.csv --back b.fits --rms m.fits \
    --store s2.db >/dev/null 2>err.txt
rc=$?
[ $rc -eq 0 ] && [ -s c.fits ] && [ -s c.csv ] && [ -s b.fits ] && [ -s m.fits ] &&
    [ "$(rows images s2.db)" = 1 ] && [ "$(leftovers .)" = 0 ] &&
    ok "all outputs and one store row, no temporaries" || { bad "full run: exit $rc"; cat err.txt; }
"$TIDE" reduce --backend cpu f.fits -o c.fits --store s2.db >/dev/null 2>err.txt
rc=$?
[ $rc -eq 0 ] && [ "$(rows images s2.db)" = 1 ] && ok "a second run into the same store" ||
    { bad "second run into the store: exit $rc"; cat err.txt; }
"$TIDE" reduce --backend cpu f.fits -o c.fits --store f.fits >/dev/null 2>&1
[ $? -ne 0 ] && [ "$(sum f.fits)" = "$F" ] && ok "--store IN: refused" || bad "--store IN"

# 3. planted symlinks cannot redirect a write
echo precious >victim
V=$(sum victim)
mkdir -p p
# the old CSV temporary name, NAME.tmp-PID (the shell's PID is tide's after exec)
sh -c 'ln -s ../victim "p/c.csv.tmp-$$"; ln -s ../victim "p/c.fits.tide-partial";
       exec "$0" reduce --backend cpu f.fits -o p/c.fits --csv p/c.csv --store p/s.db' \
    "$TIDE" >/dev/null 2>err.txt
rc=$?
[ $rc -eq 0 ] && [ "$(sum victim)" = "$V" ] && [ -s p/c.csv ] &&
    ok "symlinks at the old temporary names: the victim is unchanged" ||
    bad "planted temporary symlinks: exit $rc, victim $(cat victim | head -c 40)"
# the target itself a symlink: the link is replaced, its target is not written
ln -s ../victim p/t.csv
"$TIDE" reduce --backend cpu f.fits --csv p/t.csv >/dev/null 2>err.txt
rc=$?
[ $rc -eq 0 ] && [ "$(sum victim)" = "$V" ] && [ -f p/t.csv ] && [ ! -L p/t.csv ] &&
    ok "target a symlink: replaced, the victim unchanged" || bad "target symlink: exit $rc"

# 4. a dead writer's leftovers go with the next write into the directory
tag=$("$PY" -c '
import os, socket
try:
    ns = os.readlink("/proc/self/ns/pid")
except OSError:
    ns = ""
h = 2166136261
for b in (socket.gethostname() + "\n" + ns).encode():
    h = ((h ^ b) * 16777619) & 0xffffffff
print("%08x" % h)')
dead=$(sh -c 'echo $$')
mkdir -p q "q/.tide-$tag-$dead-Zq81xA"
head -c 5000 /dev/zero >"q/.tide-$tag-$dead-Zq81xA/c.fits"
head -c 5000 /dev/zero >"q/.c.fits.tmp-$dead-5e1f00"
head -c 5000 /dev/zero >"q/c.csv.tmp-$dead"
mkdir -p "q/.tide-$tag-$$-Zq81xA"   # a live process's (this shell's): kept
echo mine >"q/notes.tmp-$dead"      # not a name tide writes: kept
"$TIDE" reduce --backend cpu f.fits -o q/c.fits >/dev/null 2>err.txt
rc=$?
[ $rc -eq 0 ] && [ ! -e "q/.tide-$tag-$dead-Zq81xA" ] && [ ! -e "q/.c.fits.tmp-$dead-5e1f00" ] &&
    [ ! -e "q/c.csv.tmp-$dead" ] && [ -d "q/.tide-$tag-$$-Zq81xA" ] && [ -e "q/notes.tmp-$dead" ] &&
    ok "dead writers' temporaries removed, a live one's and a user's file kept" ||
    { bad "sweep: exit $rc"; ls -a q; }

# 5. kill -9 of a writer: reduce stages its outputs before the reduction, so killing it while
# it reduces a larger frame leaves a private directory, which the next write removes. (When
# the run ends before it is caught, the check is skipped: never a false failure.)
"$TIDE" sim -o big.fits --width 1536 --height 1536 --nstars 3000 >/dev/null 2>&1
mkdir -p k
"$TIDE" reduce --backend cpu big.fits -o k/c.fits --csv k/c.csv >/dev/null 2>&1 &
pid=$!
caught=0
for _ in $(seq 1 500); do
    if [ -n "$(find k -maxdepth 1 -name '.tide-*' -print -quit)" ]; then
        kill -9 $pid 2>/dev/null && caught=1
        break
    fi
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
done
wait $pid 2>/dev/null
if [ $caught = 1 ] && [ ! -e k/c.fits ]; then
    n=$(leftovers k)
    "$TIDE" reduce --backend cpu f.fits -o k/d.fits >/dev/null 2>&1
    [ "$n" -ge 1 ] && [ "$(leftovers k)" = 0 ] && [ -s k/d.fits ] &&
        ok "kill -9 mid-run: $n private dir(s), removed by the next write" ||
        { bad "kill -9 leftovers: $n before, $(leftovers k) after"; ls -a k; }
else
    echo "skip: the writer was not caught mid-run"
fi

exit $fail
