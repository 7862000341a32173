#!/bin/bash
# CLI test of `tide diff` (issue 5): a simulated pair (tide sim --epoch2) gives every output,
# each a valid FITS file or PNG with the documented HDUs, columns and WCS; a rerun replaces a
# previous run's directory; bad input (a missing frame, a frame without WCS, frames that do
# not overlap, bad options, a directory holding other files) gives a clear error, exit 1 (2
# for usage) and leaves no output directory and no temporary directory behind.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d /tmp/tide_cli_diff.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

"$TIDE" sim -o "$tmp/a.fits" --epoch2 "$tmp/b.fits" --width 384 --height 384 --nstars 150 \
    --ngal 5 --seed 7 >/dev/null 2>"$tmp/sim.err" || { cat "$tmp/sim.err"; echo "FAIL: sim"; exit 1; }

# 1. a good run: every output, valid
if "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/out" --backend cpu >"$tmp/run.out" 2>&1; then
    ok "tide diff ran: $(head -1 "$tmp/run.out")"
else
    cat "$tmp/run.out"; bad "tide diff failed on a simulated pair"
fi
"$PY" - "$tmp/out" "$tmp/a.fits" <<'PYEOF' && ok "outputs valid" || bad "outputs invalid"
import os, struct, sys
import numpy as np
from astropy.io import fits
from astropy.wcs import WCS
out, tmpl = sys.argv[1], sys.argv[2]
names = sorted(os.listdir(out))
want = ["candidates.fits", "difference.fits", "kernel.fits", "kernel.png", "matched.png",
        "difference.png"]
for n in want:
    assert n in names, f"{n} missing ({names})"
with fits.open(out + "/difference.fits") as h:
    assert h[0].data.shape == fits.getdata(tmpl).shape, "difference not on the template grid"
    assert "MASK" in h and "VAR" in h, "MASK/VAR HDUs missing"
    w = WCS(h[0].header)
    assert w.has_celestial, "no WCS on the difference"
    wt = WCS(fits.getheader(tmpl))
    a = w.all_pix2world([[10.0, 20.0], [300.0, 200.0]], 0)
    b = wt.all_pix2world([[10.0, 20.0], [300.0, 200.0]], 0)
    assert np.allclose(a, b, atol=1e-9), "difference WCS differs from the template's"
    assert np.isfinite(h[0].data).mean() > 0.5, "mostly NaN difference"
    for k in ("KSUM", "FWHMSCI", "FWHMTMPL", "NCAND"):
        assert k in h[0].header, f"{k} missing"
with fits.open(out + "/candidates.fits") as h:
    cols = h[1].columns.names
    for c in ("X_IMAGE", "Y_IMAGE", "SNR", "FLUX", "DIP_XPOS", "DIP_YPOS", "DIP_XNEG",
              "DIP_YNEG", "DIP_FLUX", "DIP_XPOS_ERR", "DIP_YPOS_ERR", "DIP_XNEG_ERR",
              "DIP_YNEG_ERR", "DIP_FLUX_ERR", "DIP_CHI2", "PS_CHI2", "FIT_STATUS"):
        assert c in cols, f"column {c} missing"
    t = h[1].data
    assert t is not None and len(t) > 0, "no candidates on a pair with transients and a mover"
    assert np.all((t["X_IMAGE"] >= 0.5) & (t["X_IMAGE"] <= 384.5)), "X_IMAGE outside"
with fits.open(out + "/kernel.fits") as h:
    k = h[0].data
    assert k.ndim == 2 and k.shape[0] == k.shape[1] and k.shape[0] % 2 == 1, "kernel shape"
    assert "KGRID" in h and h["KGRID"].data.shape == (3 * k.shape[0],) * 2, "KGRID"
for n in names:
    if n.endswith(".png"):
        b = open(os.path.join(out, n), "rb").read(24)
        assert b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR", f"{n} not a PNG"
        w, hh = struct.unpack(">II", b[16:24])
        assert w > 0 and hh > 0, n
        if n == "difference.png":
            assert (w, hh) == (384, 384), f"difference.png is {w}x{hh}"
PYEOF

# 2. a rerun replaces a previous run's directory
if "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/out" --backend cpu --spatial-degree 0 \
    >/dev/null 2>&1 && [ -f "$tmp/out/difference.fits" ]; then
    ok "rerun replaced the previous output"
else
    bad "rerun over a previous output failed"
fi

# 3. the other grids: the science frame's, and a north-up grid covering both
for g in science north-up; do
    if "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/g_$g" --grid $g --backend cpu \
        --top 2 >/dev/null 2>"$tmp/g.err" &&
        "$PY" - "$tmp/g_$g" "$g" "$tmp/b.fits" <<'PYEOF'
import sys
from astropy.io import fits
from astropy.wcs import WCS
out, g, sci = sys.argv[1:4]
h = fits.getheader(out + "/difference.fits")
assert h["DIFFGRID"] == {"science": "SCIENCE", "north-up": "NORTHUP"}[g]
if g == "science":
    assert (h["NAXIS1"], h["NAXIS2"]) == fits.getdata(sci).shape[::-1]
else:
    w = WCS(h)
    a = w.all_pix2world([[100.0, 100.0], [100.0, 150.0]], 0)
    assert a[1][1] > a[0][1] and abs(a[1][0] - a[0][0]) < 1e-6, "not north-up"
PYEOF
    then
        ok "--grid $g"
    else
        cat "$tmp/g.err"; bad "--grid $g"
    fi
done

# 4. --template: the template prepared once, two science frames, each into DIR/STEM, each the
# single run's output (only the science name in the header differs); a missing frame among
# them is reported, the others written, exit 1
cp "$tmp/b.fits" "$tmp/b2.fits"
"$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/g1" --backend cpu >/dev/null 2>&1
if "$TIDE" diff --template "$tmp/a.fits" "$tmp/b.fits" "$tmp/b2.fits" -o "$tmp/batch" \
    --backend cpu >"$tmp/batch.out" 2>&1 && grep -q "prepared" "$tmp/batch.out" &&
    cmp -s "$tmp/batch/b/difference.fits" "$tmp/g1/difference.fits" &&
    cmp -s "$tmp/batch/b/candidates.fits" "$tmp/g1/candidates.fits" &&
    [ -f "$tmp/batch/b2/candidates.fits" ]; then
    ok "--template: $(head -1 "$tmp/batch.out"); outputs identical to the single run"
else
    cat "$tmp/batch.out"; bad "--template batch differs from the single run or failed"
fi
"$TIDE" diff --template "$tmp/a.fits" "$tmp/b.fits" "$tmp/gone.fits" -o "$tmp/batch2" \
    --backend cpu >"$tmp/batch2.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "gone.fits" "$tmp/batch2.out" &&
    [ -f "$tmp/batch2/b/difference.fits" ] && [ ! -e "$tmp/batch2/gone" ]; then
    ok "--template with a missing frame: exit 1, the others written"
else
    cat "$tmp/batch2.out"; bad "--template with a missing frame (exit $rc)"
fi
# the progress line: asked for, "2/2 frames done, 1 failed" at the end on standard error;
# standard error not a terminal, none
"$TIDE" diff --template "$tmp/a.fits" "$tmp/b.fits" "$tmp/gone.fits" -o "$tmp/batch3" \
    --backend cpu --progress >/dev/null 2>"$tmp/batch3.err"
if grep -q "2/2 frames done, 1 failed" "$tmp/batch3.err" &&
    ! grep -q "frames done" "$tmp/batch2.out"; then
    ok "--template --progress: a progress line, and none when not on a terminal"
else
    cat "$tmp/batch3.err"; bad "--template --progress"
fi

# expect_fail NAME EXITCODE PATTERN ARGS...: the run fails with that code, says PATTERN,
# leaves no $tmp/bad* directory and no hidden temporary directory.
expect_fail() {
    local name=$1 code=$2 pat=$3
    shift 3
    "$TIDE" diff "$@" >"$tmp/err.out" 2>&1
    local rc=$?
    if [ $rc -ne "$code" ]; then
        cat "$tmp/err.out"; bad "$name: exit $rc, expected $code"; return
    fi
    if ! grep -qi -- "$pat" "$tmp/err.out"; then
        cat "$tmp/err.out"; bad "$name: message lacks '$pat'"; return
    fi
    if ls -d "$tmp"/bad* "$tmp"/.bad* >/dev/null 2>&1; then
        bad "$name: left an output behind: $(ls -d "$tmp"/bad* "$tmp"/.bad* 2>/dev/null)"; return
    fi
    ok "$name: $(grep -i -m1 -- "$pat" "$tmp/err.out")"
}

"$PY" - "$tmp" <<'PYEOF'
import sys
from astropy.io import fits
d = sys.argv[1]
data, h = fits.getdata(d + "/a.fits", header=True)
fits.PrimaryHDU(data).writeto(d + "/nowcs.fits")
h2 = h.copy()
h2["CRVAL1"] = (h["CRVAL1"] + 30.0) % 360
fits.PrimaryHDU(data, h2).writeto(d + "/far.fits")
PYEOF

expect_fail "missing frame" 1 "missing.fits" "$tmp/missing.fits" "$tmp/a.fits" -o "$tmp/bad1"
expect_fail "no WCS" 1 "WCS" "$tmp/nowcs.fits" "$tmp/a.fits" -o "$tmp/bad2"
expect_fail "no WCS (template)" 1 "nowcs.fits" "$tmp/b.fits" "$tmp/nowcs.fits" -o "$tmp/bad3"
expect_fail "no overlap" 1 "overlap" "$tmp/far.fits" "$tmp/a.fits" -o "$tmp/bad4"
expect_fail "not FITS" 1 "run.out" "$tmp/run.out" "$tmp/a.fits" -o "$tmp/bad5"
expect_fail "one frame" 2 "two frames" "$tmp/a.fits" -o "$tmp/bad6"
expect_fail "no -o" 2 "-o" "$tmp/b.fits" "$tmp/a.fits"
expect_fail "bad grid" 2 "grid" "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/bad7" --grid sideways
expect_fail "even stamp" 2 "stamp" "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/bad8" --stamp 20
expect_fail "no parent dir" 1 "nodir" "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/nodir/out"
expect_fail "template, no science" 2 "SCIENCE" --template "$tmp/a.fits" -o "$tmp/bad9"
expect_fail "template missing" 1 "nothere.fits" --template "$tmp/nothere.fits" "$tmp/b.fits" \
    -o "$tmp/bad12"
expect_fail "template, same stem twice" 2 "both write" --template "$tmp/a.fits" \
    "$tmp/b.fits" "$tmp/b.fits" -o "$tmp/bad10"
expect_fail "template, science grid" 2 "template's grid" --template "$tmp/a.fits" \
    "$tmp/b.fits" --grid science -o "$tmp/bad11"

# a directory that holds someone else's files is not replaced
mkdir "$tmp/mine" && echo keep >"$tmp/mine/notes.txt"
if "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/mine" >"$tmp/err.out" 2>&1; then
    bad "replaced a directory holding other files"
elif [ "$(cat "$tmp/mine/notes.txt")" = keep ] && [ ! -e "$tmp/mine/difference.fits" ] &&
    ! ls -d "$tmp"/.mine* >/dev/null 2>&1; then
    ok "foreign directory kept: $(head -1 "$tmp/err.out")"
else
    bad "foreign directory damaged or temporary left"
fi

if ls -a "$tmp" | grep -q '\.tmp-'; then
    bad "temporary directories left: $(ls -a "$tmp" | grep '\.tmp-')"
fi
exit $fail
