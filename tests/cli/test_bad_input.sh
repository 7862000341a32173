#!/bin/bash
# Bad input to the commands that read frames (`tide info`, `tide stats`): a missing file, a file
# that is not FITS, an empty file, truncated files (in the data, in the header), an empty HDU
# named explicitly, a table where an image is expected, a 1-D image, a cube, and (stats only)
# an all-NaN image. Each must exit 1 with one message on stderr naming the file (and the HDU
# where one is involved), print nothing on stdout, and leave no file behind.
# (Unknown config keys and malformed JSON are tested with the configuration, test_config.sh.)
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$PY" - "$T" <<'PYEOF' || { echo "cannot make test files"; exit 1; }
import os, sys
import numpy as np
from astropy.io import fits
t = sys.argv[1]
img = np.arange(64 * 48, dtype=np.float32).reshape(48, 64)
fits.PrimaryHDU(img).writeto(f"{t}/good.fits")
open(f"{t}/notfits.fits", "w").write("SIMPLE? no: this is a text file\n" * 200)
open(f"{t}/empty.fits", "w").close()
data = open(f"{t}/good.fits", "rb").read()
open(f"{t}/trunc_data.fits", "wb").write(data[: 2880 + 5000])
open(f"{t}/trunc_header.fits", "wb").write(data[:1200])
import gzip
z = gzip.compress(data)
open(f"{t}/good.fits.gz", "wb").write(z)
open(f"{t}/trunc.fits.gz", "wb").write(z[: len(z) // 2])  # cfitsio inflates it in memory
# empty primary + a binary table
cat = fits.BinTableHDU.from_columns([fits.Column(name="X", format="E", array=np.arange(5.0))],
                                    name="CATALOG")
fits.HDUList([fits.PrimaryHDU(), cat]).writeto(f"{t}/table.fits")
fits.PrimaryHDU(np.arange(100, dtype=np.float32)).writeto(f"{t}/oned.fits")
fits.PrimaryHDU(np.zeros((3, 8, 8), np.float32)).writeto(f"{t}/cube.fits")
fits.PrimaryHDU(np.full((6, 9), np.nan, np.float32)).writeto(f"{t}/allnan.fits")
# a multi-extension file whose second image extension is cut short
h = fits.HDUList([fits.PrimaryHDU(), fits.ImageHDU(img, name="SCI"), fits.ImageHDU(img, name="ERR")])
h.writeto(f"{t}/mef.fits")
d = open(f"{t}/mef.fits", "rb").read()
open(f"{t}/mef_trunc.fits", "wb").write(d[: len(d) - 8000])
ext2 = d.rfind(b"XTENSION=")  # where ERR's header starts
assert ext2 > 2880
open(f"{t}/mef_hdrcut.fits", "wb").write(d[: ext2 + 1000])
PYEOF

have_stats=0
"$TIDE" stats --help >/dev/null 2>&1 && have_stats=1
[ $have_stats -eq 1 ] || echo "note: tide stats not available; testing tide info only"

# expect CMD SPEC WORDS...: exit 1, nothing on stdout, stderr names the file and each WORD,
# and the directory holds the same files as before.
expect() {
    local cmd=$1 spec=$2
    shift 2
    local before after out rc
    before=$(ls -A "$T" | sort)
    out=$("$TIDE" "$cmd" "$spec" 2>"$T/.err"); rc=$?
    local err
    err=$(cat "$T/.err")
    rm -f "$T/.err"
    after=$(ls -A "$T" | sort)
    [ $rc -eq 1 ] || bad "tide $cmd $spec: exit $rc, expected 1 (stderr: $err)"
    [ -z "$out" ] || bad "tide $cmd $spec: printed to stdout: $out"
    local base=${spec%%[*}
    grep -qF -- "$base" <<<"$err" || bad "tide $cmd $spec: message does not name the file: $err"
    for w in "$@"; do
        grep -qiF -- "$w" <<<"$err" || bad "tide $cmd $spec: message lacks '$w': $err"
    done
    [ "$before" = "$after" ] || bad "tide $cmd $spec: files changed: $(diff <(echo "$before") <(echo "$after"))"
    [ $(wc -l <<<"$err") -le 2 ] || bad "tide $cmd $spec: message longer than 2 lines: $err"
    echo "ok  tide $cmd $(basename "$spec"): $err"
}

for cmd in info stats; do
    [ $cmd = stats ] && [ $have_stats -eq 0 ] && continue
    expect $cmd "$T/missing.fits" "no such file"
    expect $cmd "$T/notfits.fits" "not a FITS file"
    expect $cmd "$T/empty.fits" "empty file"
    expect $cmd "$T/trunc_data.fits" "truncated" "HDU 0"
    expect $cmd "$T/trunc_header.fits" "truncated"
    expect $cmd "$T/trunc.fits.gz" "truncated"
    expect $cmd "$T/mef_trunc.fits" "truncated" "HDU 2"
    expect $cmd "$T/mef_hdrcut.fits" "truncated"
    expect $cmd "$T/mef_hdrcut.fits[SCI]" "truncated"
    expect $cmd "$T/table.fits[0]" "HDU 0" "empty HDU"
    expect $cmd "$T/table.fits[1]" "HDU 1" "table"
    expect $cmd "$T/table.fits[CATALOG]" "HDU 1" "table"
    expect $cmd "$T/table.fits[5]" "no HDU"
    expect $cmd "$T/oned.fits" "HDU 0" "1-D"
    expect $cmd "$T/cube.fits" "HDU 0" "cube"
done
if [ $have_stats -eq 1 ]; then
    expect stats "$T/table.fits" "no HDU holds an image"
    expect stats "$T/allnan.fits"
    # and a frame that is fine still works, gzipped too, also under directories whose names
    # hold ".Z" or ".bz2" (cfitsio picks its decompressor from those anywhere in the path: CI
    # once ran this test in mktemp's /tmp/tmp.ZIhIyP5czK and failed)
    mkdir -p "$T/obs.Zwicky" "$T/run.bz2.d"
    cp "$T/good.fits.gz" "$T/obs.Zwicky/good.fits.gz"
    cp "$T/good.fits.gz" "$T/run.bz2.d/good.fits.gz"
    want=$("$TIDE" stats "$T/good.fits" 2>/dev/null)
    for good in good.fits good.fits.gz obs.Zwicky/good.fits.gz run.bz2.d/good.fits.gz \
        "obs.Zwicky/good.fits.gz[0]"; do
        out=$("$TIDE" stats "$T/$good" 2>"$T/.err") ||
            bad "tide stats $good failed: $(cat "$T/.err")"
        [ "$(echo "$out" | sed "s|$T/[^ ]*||g")" = "$(echo "$want" | sed "s|$T/[^ ]*||g")" ] ||
            bad "tide stats $good differs from good.fits: $out"
    done
    rm -rf "$T/.err" "$T/obs.Zwicky" "$T/run.bz2.d"
fi

# info describes a file of tables and an all-NaN image without failing
"$TIDE" info "$T/table.fits" >"$T/.out" 2>&1 || bad "tide info table.fits failed: $(cat "$T/.out")"
grep -q "CATALOG" "$T/.out" || bad "tide info table.fits does not list CATALOG"
"$TIDE" info "$T/allnan.fits" >/dev/null 2>&1 || bad "tide info allnan.fits failed"
rm -f "$T/.out"

# a frame written to a directory that does not exist leaves nothing behind (atomic writes)
if "$TIDE" sim --help >/dev/null 2>&1; then
    before=$(find "$T" | sort)
    "$TIDE" sim -o "$T/no/such/dir/frame.fits" >/dev/null 2>"$T/.err"; rc=$?
    [ $rc -ne 0 ] || bad "tide sim into a missing directory exited 0"
    grep -qF "$T/no/such/dir" "$T/.err" || bad "tide sim error does not name the path: $(cat "$T/.err")"
    rm -f "$T/.err"
    after=$(find "$T" | sort)
    [ "$before" = "$after" ] || bad "tide sim left files: $(diff <(echo "$before") <(echo "$after"))"
fi

# an output path that is a FIFO (or a device such as /dev/stdout) is refused, never replaced
mkfifo "$T/fifo"
"$TIDE" sim -o "$T/fifo" --width 64 --height 64 --nstars 5 >/dev/null 2>"$T/.err"; rc=$?
[ $rc -ne 0 ] || bad "tide sim over a FIFO exited 0"
[ -p "$T/fifo" ] || bad "tide sim replaced a FIFO by a regular file"
grep -q "not a regular file" "$T/.err" || bad "tide sim over a FIFO: unclear error: $(cat "$T/.err")"
rm -f "$T/fifo" "$T/.err"

[ $fail -eq 0 ] && echo "all bad inputs rejected cleanly"
exit $fail
