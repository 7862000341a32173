#!/bin/bash
# tide stats: blanks vs NaN counts, all-NaN error naming the file, usage errors, and (when a GPU
# is usable) identical --json output from the CPU and CUDA backends on real and awkward frames.
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
D=${TIDE_SHARED_DATA:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$PY" - "$T" <<'PYEOF' || { echo "cannot make test files"; exit 1; }
import sys
import numpy as np
from astropy.io import fits
t = sys.argv[1]
fits.PrimaryHDU(np.full((7, 5), np.nan, np.float32)).writeto(f"{t}/allnan.fits")
a = np.arange(97 * 89, dtype=np.int16).reshape(89, 97) % 1000
a[3, 4] = -999; a[10, 10] = -999; a[88, 96] = -999
h = fits.PrimaryHDU(a); h.header["BLANK"] = -999; h.writeto(f"{t}/blank.fits")
f = np.random.default_rng(1).normal(100, 5, (3, 4097)).astype(np.float32)
f[0, 0] = np.nan; f[1, 7] = np.inf; f[2, 4096] = -np.inf; f[1, 1] = np.nan
fits.PrimaryHDU(f).writeto(f"{t}/nan.fits")
fits.PrimaryHDU(np.array([[42.0]], np.float32)).writeto(f"{t}/one.fits")
PYEOF

# all-NaN: non-zero exit, message names the file, nothing on stdout
out=$("$TIDE" stats --backend cpu "$T/allnan.fits" 2>"$T/err"); rc=$?
[ $rc -ne 0 ] || bad "all-NaN image exited 0"
grep -q "allnan.fits" "$T/err" || bad "all-NaN error does not name the file: $(cat "$T/err")"
[ -z "$out" ] || bad "all-NaN printed to stdout: $out"

# BLANK in an integer image counts as blank, not NaN
j=$("$TIDE" stats --json --backend cpu "$T/blank.fits") || bad "blank.fits failed"
echo "$j" | grep -q '"n_blank": 3,' || bad "n_blank != 3: $j"
echo "$j" | grep -q '"n_nan": 0,' || bad "n_nan != 0 for int image: $j"
echo "$j" | grep -q '"n_valid": 8630,' || bad "n_valid != 8630: $j"

# NaN and Inf in a float image
j=$("$TIDE" stats --json --backend cpu "$T/nan.fits") || bad "nan.fits failed"
echo "$j" | grep -q '"n_nan": 4,' || bad "n_nan != 4: $j"
echo "$j" | grep -q '"n_blank": 0,' || bad "n_blank != 0 for float image: $j"

# 1x1 image
j=$("$TIDE" stats --json --backend cpu "$T/one.fits") || bad "one.fits failed"
echo "$j" | grep -q '"median": 42,' || bad "1x1 median: $j"
echo "$j" | grep -q '"std": 0,' || bad "1x1 std: $j"

# usage errors exit 2; --help exits 0; missing file exits 1 naming it
"$TIDE" stats >/dev/null 2>&1; [ $? -eq 2 ] || bad "no FILE should exit 2"
"$TIDE" stats --sigma 0 "$T/one.fits" >/dev/null 2>&1; [ $? -eq 2 ] || bad "--sigma 0 should exit 2"
"$TIDE" stats --maxiters x "$T/one.fits" >/dev/null 2>&1; [ $? -eq 2 ] || bad "--maxiters x should exit 2"
"$TIDE" stats --help | grep -q -- "--sigma" || bad "--help lacks --sigma"
"$TIDE" stats "$T/missing.fits" 2>"$T/err" >/dev/null; rc=$?
[ $rc -eq 1 ] || bad "missing file exit $rc"
grep -q "missing.fits" "$T/err" || bad "missing-file error does not name it"

# CPU and GPU print the same JSON (when a GPU is usable)
if "$TIDE" stats --backend cuda "$T/one.fits" >/dev/null 2>&1; then
    for f in "$D/sep/image.fits" "$D/sextractor/galaxies.fits" "$D/diff/DEC-OBS04a.mini.fits" \
             "$D/compressed/tess_diff_rice_dither1.fits.fz" "$T/nan.fits" "$T/blank.fits" \
             "$T/one.fits"; do
        for opt in "" "--sigma 2 --maxiters 0"; do
            "$TIDE" stats --json --backend cpu $opt "$f" >"$T/cpu.json" || bad "cpu $f"
            "$TIDE" stats --json --backend cuda $opt "$f" >"$T/gpu.json" || bad "cuda $f"
            cmp -s "$T/cpu.json" "$T/gpu.json" || { bad "CPU and GPU differ on $f $opt";
                diff "$T/cpu.json" "$T/gpu.json"; }
        done
    done
    echo "CPU and GPU outputs compared"
else
    echo "no usable GPU: CPU/GPU comparison skipped"
fi

[ $fail -eq 0 ] && echo ok
exit $fail
