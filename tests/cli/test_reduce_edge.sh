#!/bin/bash
# CLI test of `tide reduce` on edge cases (issue 3): a frame with no stars, a frame that is one
# saturated star, a frame full of NaN blocks, a 64x64 frame and a 20000x300 strip each give a
# clear outcome and a valid catalog; the FITS-LDAC and CSV writers give what SCAMP/PSFEx and
# spreadsheets expect; bad input (missing, non-FITS, table-only, all-NaN frames, bad options,
# unwritable outputs) gives a clear error, the right exit code and no output file.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d /tmp/tide_cli_reduce.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# check_cat FILE MIN MAX: a valid catalog with MIN..MAX rows, the columns and header keys of
# reduce.h, finite positions inside the frame.
check_cat() {
    "$PY" - "$@" <<'PYEOF'
import sys
import numpy as np
from astropy.io import fits
path, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with fits.open(path) as h:
    assert len(h) == 2 and h[1].header["XTENSION"] == "BINTABLE", "HDU 1 is not a table"
    t, hd = h[1].data, h[1].header
    n = 0 if t is None else len(t)
    names = h[1].columns.names
    for c in ("NUMBER", "X_IMAGE", "Y_IMAGE", "XWIN_IMAGE", "YWIN_IMAGE", "FLUX_APER",
              "FLUXERR_APER", "FLUX_AUTO", "FLUX_PSF", "FLUX_OPT", "FLAGS", "SNR", "BACKGROUND"):
        assert c in names, f"column {c} missing"
    for k in ("NDETECT", "FWHM", "PSFMODEL", "SKYLEVEL", "SKYRMS", "APER01", "TIDEVERS"):
        assert k in hd, f"header key {k} missing"
    assert hd["NDETECT"] == n, f"NDETECT {hd['NDETECT']} != {n} rows"
    assert lo <= n <= hi, f"{n} rows, expected {lo}..{hi}"
    if n:
        W, H = hd["IMAGEW"], hd["IMAGEH"]
        x, y = t["XWIN_IMAGE"], t["YWIN_IMAGE"]
        assert np.all(np.isfinite(x)) and np.all(np.isfinite(y)), "non-finite positions"
        assert np.all((x > 0.5 - 1) & (x < W + 1.5) & (y > -0.5) & (y < H + 1.5)), "outside"
        assert list(t["NUMBER"]) == list(range(1, n + 1)), "NUMBER is not 1..n"
print(f"{path}: {n} rows, PSFMODEL {hd['PSFMODEL']}, FWHM {hd['FWHM']:.3f}")
PYEOF
}

# --help lists the options.
out=$("$TIDE" reduce --help) && ok "help exits 0" || bad "help exit code"
for opt in "-o, --output FILE" "--ldac" "--csv FILE" "--config FILE" "--set SECTION.KEY=VAL" \
           "--aper-radii" "--timings" "--backend"; do
    grep -q -- "$opt" <<<"$out" || bad "help lacks $opt"
done
"$TIDE" --help | grep -q "reduce" || bad "tide --help does not list reduce"

# 1. No stars: an empty catalog, exit 0, Gaussian fallback said in the header.
"$TIDE" sim --width 512 --height 512 --nstars 0 --ngal 0 --nmoving 0 --no-defects --seed 3 \
    -o "$tmp/empty.fits" >/dev/null || bad "sim empty"
"$TIDE" reduce "$tmp/empty.fits" -o "$tmp/empty.cat" --bias 1000 2>"$tmp/err" >"$tmp/out" \
    && ok "no stars: exit 0" || bad "no stars: exit code ($(cat "$tmp/err"))"
check_cat "$tmp/empty.cat" 0 1 || bad "no stars: catalog"
"$PY" -c "from astropy.io import fits; h=fits.getheader('$tmp/empty.cat',1); assert h['PSFMODEL'].strip()=='GAUSSIAN' and h['PSFFALLB'] and h['APCFALLB']" \
    && ok "no stars: PSFMODEL = GAUSSIAN, PSFFALLB, APCFALLB" || bad "no stars: fallback keys"
grep -qi "gaussian" "$tmp/err" && ok "no stars: the log says Gaussian" || bad "no stars: no log line"

# 2. One saturated star: found, flagged saturated (FLAGS bit 4), no crash.
"$TIDE" sim --width 160 --height 160 --nstars 1 --ngal 0 --nmoving 0 --no-defects \
    --mag-bright 9 --mag-faint 9.01 --seed 6 -o "$tmp/sat.fits" --truth "$tmp/sat_t.fits" \
    >/dev/null || bad "sim saturated"
"$TIDE" reduce "$tmp/sat.fits" -o "$tmp/sat.cat" --bias 1000 2>"$tmp/err" >/dev/null \
    && ok "saturated star: exit 0" || bad "saturated star: exit code ($(cat "$tmp/err"))"
check_cat "$tmp/sat.cat" 1 20 || bad "saturated star: catalog"
"$PY" - "$tmp/sat.cat" "$tmp/sat_t.fits" <<'PYEOF' && ok "saturated star: found and flagged 4" || bad "saturated star: not found or not flagged"
import sys
import numpy as np
from astropy.io import fits
c, t = fits.getdata(sys.argv[1], 1), fits.getdata(sys.argv[2], 1)
s = t[t["SATURATED"] == 1]
assert len(s) >= 1, "the truth star is not saturated"
d = np.hypot(c["XWIN_IMAGE"] - s["X_TRUE"][0], c["YWIN_IMAGE"] - s["Y_TRUE"][0])
k = np.argmin(d)
assert d[k] < 2, f"nearest source {d[k]:.1f} px away"
assert c["FLAGS"][k] & 4, f"FLAGS {c['FLAGS'][k]}"
PYEOF

# 3. NaN blocks: a frame with stars and 20 % of its area in NaN blocks.
"$TIDE" sim --width 600 --height 500 --nstars 300 --seed 6 -o "$tmp/nanb.fits" >/dev/null
"$PY" - "$tmp/nanb.fits" <<'PYEOF'
import sys
import numpy as np
from astropy.io import fits
with fits.open(sys.argv[1], mode="update") as h:
    d = h[0].data
    d[50:150, 100:250] = np.nan
    d[300:420, 0:120] = np.nan
    d[:, 400:430] = np.nan
    d[480:, :] = np.nan
PYEOF
"$TIDE" reduce "$tmp/nanb.fits" -o "$tmp/nanb.cat" --bias 1000 2>"$tmp/err" >/dev/null \
    && ok "NaN blocks: exit 0" || bad "NaN blocks: exit code ($(cat "$tmp/err"))"
check_cat "$tmp/nanb.cat" 10 1000 || bad "NaN blocks: catalog"
"$PY" - "$tmp/nanb.cat" <<'PYEOF' && ok "NaN blocks: no source inside a block, finite fluxes" || bad "NaN blocks: sources in blocks or NaN fluxes"
import sys
import numpy as np
from astropy.io import fits
c = fits.getdata(sys.argv[1], 1)
x, y = c["XWIN_IMAGE"] - 1, c["YWIN_IMAGE"] - 1
inb = ((y > 52) & (y < 147) & (x > 102) & (x < 247)) | ((y > 302) & (y < 417) & (x < 117))
inb |= (x > 402) & (x < 427)
assert not inb.any(), f"{inb.sum()} sources inside NaN blocks"
assert np.all(np.isfinite(c["FLUX_APER"])) and np.all(np.isfinite(c["BACKGROUND"]))
PYEOF

# 4. A 64x64 frame.
"$TIDE" sim --width 64 --height 64 --nstars 5 --ngal 0 --seed 8 -o "$tmp/small.fits" >/dev/null
"$TIDE" reduce "$tmp/small.fits" -o "$tmp/small.cat" --bias 1000 2>"$tmp/err" >/dev/null \
    && ok "64x64: exit 0" || bad "64x64: exit code ($(cat "$tmp/err"))"
check_cat "$tmp/small.cat" 0 30 || bad "64x64: catalog"

# 5. A 20000x300 strip, with LDAC and CSV outputs.
"$TIDE" sim --width 20000 --height 300 --nstars 1500 --seed 9 -o "$tmp/strip.fits" >/dev/null
"$TIDE" reduce "$tmp/strip.fits" -o "$tmp/strip.ldac" --ldac --csv "$tmp/strip.csv" \
    --bias 1000 --json 2>"$tmp/err" >"$tmp/strip.json" \
    && ok "strip: exit 0" || bad "strip: exit code ($(cat "$tmp/err"))"
"$PY" - "$tmp/strip.ldac" "$tmp/strip.csv" "$tmp/strip.json" <<'PYEOF' && ok "strip: LDAC, CSV and JSON valid and consistent" || bad "strip: LDAC/CSV/JSON"
import csv, json, sys
import numpy as np
from astropy.io import fits
h = fits.open(sys.argv[1])
assert [x.name for x in h] == ["PRIMARY", "LDAC_IMHEAD", "LDAC_OBJECTS"], [x.name for x in h]
assert h[1].columns.names == ["Field Header Card"], h[1].columns.names
assert h[1].header["TDIM1"].replace(" ", "").startswith("(80,"), h[1].header["TDIM1"]
cards = h[1].data["Field Header Card"][0]
# astropy strips each card's trailing blanks: pad them back to 80 characters
text = "".join(str(c).ljust(80) for c in cards)
hdr = fits.Header.fromstring(text)
assert hdr["NAXIS1"] == 20000 and hdr["NAXIS2"] == 300, "frame header lost"
assert "CTYPE1" in hdr and "GAIN" in hdr, "WCS/GAIN lost"
t = h[2].data
n = len(t)
assert n > 100, n
for c in ("XWIN_IMAGE", "YWIN_IMAGE", "ERRAWIN_IMAGE", "ERRBWIN_IMAGE", "ERRTHETAWIN_IMAGE",
          "FLUX_AUTO", "FLUXERR_AUTO", "FLAGS", "FLUX_APER", "MAG_AUTO"):
    assert c in t.columns.names, c
assert np.all(t["YWIN_IMAGE"] < 301) and np.max(t["XWIN_IMAGE"]) > 15000
rows = list(csv.reader(open(sys.argv[2])))
assert len(rows) == n + 1, (len(rows), n)
head = rows[0]
assert "FLUX_APER_1" in head and "FLUX_APER_3" in head and "NUMBER" in head, head[:10]
i = head.index("XWIN_IMAGE")
assert abs(float(rows[1][i]) - t["XWIN_IMAGE"][0]) < 1e-9
j = json.load(open(sys.argv[3]))
assert j["n_sources"] == n and j["width"] == 20000 and "timings_ms" in j, j
PYEOF

# Determinism: the same frame twice gives byte-identical catalogs.
"$TIDE" reduce "$tmp/small.fits" -o "$tmp/small2.cat" --bias 1000 2>/dev/null >/dev/null
cmp -s "$tmp/small.cat" "$tmp/small2.cat" && ok "same frame: identical catalogs" || bad "catalogs differ between runs"

# Bad input: exit 1, a message naming the file, no output left behind.
"$TIDE" reduce "$tmp/nonexistent.fits" -o "$tmp/x.cat" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] && ok "missing frame exits 1" || bad "missing frame exit code"
grep -q "nonexistent.fits" "$tmp/err" || bad "missing frame: message does not name it: $(cat "$tmp/err")"
echo "not a fits file" >"$tmp/text.fits"
"$TIDE" reduce "$tmp/text.fits" -o "$tmp/x.cat" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] && ok "non-FITS exits 1" || bad "non-FITS exit code"
grep -q "text.fits" "$tmp/err" || bad "non-FITS: message does not name it"
"$TIDE" reduce "$tmp/small.cat" -o "$tmp/x.cat" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] && ok "table-only FITS exits 1" || bad "table-only FITS exit code"
"$PY" -c "
import numpy as np; from astropy.io import fits
fits.writeto('$tmp/allnan.fits', np.full((100, 120), np.nan, np.float32))"
"$TIDE" reduce "$tmp/allnan.fits" -o "$tmp/x.cat" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] && ok "all-NaN frame exits 1" || bad "all-NaN frame exit code"
grep -q "allnan.fits" "$tmp/err" && grep -qi "valid" "$tmp/err" \
    && ok "all-NaN: clear message" || bad "all-NaN message: $(cat "$tmp/err")"
[ -e "$tmp/x.cat" ] && bad "an output was left behind after a failure"
"$TIDE" reduce "$tmp/small.fits" -o "$tmp/nodir/x.cat" --bias 1000 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] && ok "unwritable output exits 1" || bad "unwritable output exit code"
grep -q "nodir" "$tmp/err" || bad "unwritable output: message does not name the path"

# A FITS output that exists and is not a regular file (a FIFO here; /dev/stdout alike) is
# refused instead of being replaced by the renamed temporary file.
mkfifo "$tmp/fifo"
"$TIDE" reduce "$tmp/small.fits" -o "$tmp/fifo" --bias 1000 >/dev/null 2>&1
[ $? -eq 2 ] && ok "FIFO output refused (exit 2)" || bad "FIFO output exit code"
[ -p "$tmp/fifo" ] && ok "the FIFO is untouched" || bad "the FIFO was replaced"
# CSV to standard output: the catalog on stdout, the summary on stderr.
"$TIDE" reduce "$tmp/small.fits" --csv - --bias 1000 2>"$tmp/err" >"$tmp/stdout.csv"
head -1 "$tmp/stdout.csv" | grep -q "^NUMBER,X_IMAGE" && ok "--csv - writes CSV on stdout" || bad "--csv - output: $(head -c 200 "$tmp/stdout.csv")"
grep -q "sources" "$tmp/err" && ok "--csv -: summary on stderr" || bad "--csv -: no summary on stderr"

# Usage errors exit 2.
"$TIDE" reduce "$tmp/small.fits" >/dev/null 2>&1; [ $? -eq 2 ] && ok "no output exits 2" || bad "no output exit code"
"$TIDE" reduce >/dev/null 2>&1; [ $? -eq 2 ] && ok "no frame exits 2" || bad "no frame exit code"
"$TIDE" reduce "$tmp/small.fits" -o "$tmp/x.cat" --aper-radii 3,-1 >/dev/null 2>&1
[ $? -eq 2 ] && ok "bad radii exit 2" || bad "bad radii exit code"
"$TIDE" reduce "$tmp/small.fits" -o "$tmp/x.cat" --bogus >/dev/null 2>&1
[ $? -eq 2 ] && ok "unknown option exits 2" || bad "unknown option exit code"
"$TIDE" reduce "$tmp/small.fits" -o "$tmp/x.cat" --noise sometimes >/dev/null 2>&1
[ $? -eq 2 ] && ok "bad --noise exits 2" || bad "bad --noise exit code"
# A bad configuration key is a configuration error (exit 1) naming the key.
"$TIDE" reduce "$tmp/small.fits" -o "$tmp/x.cat" --set detect_trhesh=3 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] && ok "unknown --set key exits 1" || bad "unknown --set key exit code"
grep -q "detect_trhesh" "$tmp/err" || bad "unknown key message: $(cat "$tmp/err")"
[ -e "$tmp/x.cat" ] && bad "an output was left behind after a usage error"

exit $fail
