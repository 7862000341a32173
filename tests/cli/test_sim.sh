#!/bin/bash
# CLI test of `tide sim`: help, determinism (same seed and any thread count give identical
# files), --json, epoch 2 outputs, bad options and unwritable outputs.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d /tmp/tide_cli_sim.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# --help lists the options with defaults and exits 0.
out=$("$TIDE" sim --help) && ok "help exits 0" || bad "help exit code"
for opt in "--seed N" "--width N" "--nstars N" "--fwhm PX" "--epoch2 FILE" "--no-noise" \
           "--truth FILE" "--refcat FILE"; do
    grep -q -- "$opt" <<<"$out" || bad "help lacks $opt"
done
grep -q -- "--width N .*\[2048\]" <<<"$out" || bad "help lacks the width default"

# Determinism: the same seed gives identical bytes, with 1 or 2 threads.
args=(--width 700 --height 500 --nstars 400 --ngal 10 --seed 9)
"$TIDE" sim "${args[@]}" --threads 1 -o "$tmp/a.fits" --truth "$tmp/ta.fits" >/dev/null || bad "run a"
"$TIDE" sim "${args[@]}" --threads 2 -o "$tmp/b.fits" --truth "$tmp/tb.fits" >/dev/null || bad "run b"
"$TIDE" sim "${args[@]}" --threads 2 -o "$tmp/c.fits" >/dev/null || bad "run c"
cmp -s "$tmp/a.fits" "$tmp/b.fits" && ok "1 vs 2 threads: identical frames" || bad "frames differ between 1 and 2 threads"
cmp -s "$tmp/b.fits" "$tmp/c.fits" && ok "same seed: identical frames" || bad "frames differ for the same seed"
cmp -s "$tmp/ta.fits" "$tmp/tb.fits" && ok "identical truth" || bad "truth differs between 1 and 2 threads"
"$TIDE" sim --width 700 --height 500 --nstars 400 --ngal 10 --seed 10 -o "$tmp/d.fits" >/dev/null
cmp -s "$tmp/c.fits" "$tmp/d.fits" && bad "another seed gives the same frame" || ok "another seed differs"

# --json is valid JSON with the sizes and counts; epoch 2 files are written.
"$TIDE" sim --width 600 --height 400 --nstars 200 -o "$tmp/e1.fits" --epoch2 "$tmp/e2.fits" \
    --truth2 "$tmp/t2.fits" --refcat "$tmp/r.fits" --json >"$tmp/j.json" || bad "json run"
"$PY" - "$tmp/j.json" <<'PYEOF' || bad "json content"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["width"] == 600 and j["height"] == 400, j
assert j["frame"]["truth_rows"] > 150 and j["epoch2"]["truth_rows"] > 150, j
assert j["refcat_rows"] > 0 and j["seconds_total"] > 0, j
PYEOF
for f in e1.fits e2.fits t2.fits r.fits; do [ -s "$tmp/$f" ] || bad "missing $f"; done

# Usage errors exit 2; failures exit 1 and leave nothing behind.
"$TIDE" sim --bogus >/dev/null 2>&1; [ $? -eq 2 ] && ok "unknown option exits 2" || bad "unknown option exit code"
"$TIDE" sim --width abc >/dev/null 2>&1; [ $? -eq 2 ] && ok "bad value exits 2" || bad "bad value exit code"
"$TIDE" sim --beta 0.5 -o "$tmp/x.fits" 2>"$tmp/err" >/dev/null; [ $? -eq 2 ] || bad "bad beta exit code"
grep -q beta "$tmp/err" || bad "bad beta message does not name beta"
[ -e "$tmp/x.fits" ] && bad "output left behind after a usage error"
"$TIDE" sim --width 64 --height 64 -o "$tmp/nodir/x.fits" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] && ok "unwritable output exits 1" || bad "unwritable output exit code"
grep -q "nodir" "$tmp/err" || bad "the error does not name the path: $(cat "$tmp/err")"

exit $fail
