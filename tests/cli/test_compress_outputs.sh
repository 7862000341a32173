#!/bin/bash
# Compressed image outputs (issue 19, item 3): `tide diff --compress rice` and `tide reduce
# --back --rms --compress rice` (and output.compress in a configuration) write their images
# as RICE_1 tile-compressed HDUs; funpack turns each into the plain layout, whose pixels
# equal what tide and astropy read from the compressed file (the mask bit for bit); the
# catalog tables stay plain; a bad --compress word is a usage error that writes nothing.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
PY=${TIDE_PYTHON:-/usr/bin/python3}
command -v funpack >/dev/null || { echo "funpack not installed (libcfitsio-bin): skipped"; exit 77; }
tmp=$(mktemp -d /tmp/tide_cli_compress.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

"$TIDE" sim -o "$tmp/a.fits" --epoch2 "$tmp/b.fits" --width 300 --height 260 --nstars 120 \
    --ngal 5 --seed 11 >/dev/null 2>"$tmp/sim.err" || { cat "$tmp/sim.err"; echo "FAIL: sim"; exit 1; }

# 1. tide diff --compress rice, and the same through output.compress
"$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/d1" --backend cpu --compress rice \
    >"$tmp/d1.out" 2>&1 || { cat "$tmp/d1.out"; bad "tide diff --compress rice failed"; }
"$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/d2" --backend cpu \
    --set output.compress=rice >"$tmp/d2.out" 2>&1 || { cat "$tmp/d2.out"; bad "output.compress=rice failed"; }
cmp -s "$tmp/d1/difference.fits" "$tmp/d2/difference.fits" \
    && ok "--compress and output.compress write the same file, run after run" \
    || bad "--compress rice and output.compress=rice differ"
# 2. tide reduce: the maps compressed, the catalog plain
"$TIDE" reduce "$tmp/a.fits" -o "$tmp/cat.fits" --back "$tmp/back.fits" --rms "$tmp/rms.fits" \
    --compress rice --backend cpu >"$tmp/r.out" 2>&1 || { cat "$tmp/r.out"; bad "tide reduce --compress rice failed"; }

for f in d1/difference.fits back.fits rms.fits; do
    rm -f "$tmp/un.fits"
    funpack -C -O "$tmp/un.fits" "$tmp/$f" 2>"$tmp/funpack.err" \
        || { cat "$tmp/funpack.err"; bad "funpack cannot read $f"; continue; }
    # tide reads the compressed file and funpack's plain one to the same planes
    "$TIDE" stats "$tmp/$f" | grep -v '^file' >"$tmp/s1"
    "$TIDE" stats "$tmp/un.fits" | grep -v '^file' >"$tmp/s2"
    cmp -s "$tmp/s1" "$tmp/s2" && ok "$f: tide reads it as funpack's plain file" \
        || bad "$f: tide's statistics of the compressed and the funpacked file differ"
    "$PY" - "$tmp/$f" "$tmp/un.fits" <<'PYEOF' && ok "$f: astropy agrees" || bad "$f: astropy disagrees"
import sys
import numpy as np
from astropy.io import fits
c, u = fits.open(sys.argv[1]), fits.open(sys.argv[2])
assert c[0].header["NAXIS"] == 0 and c[1].header.get("ZCMPTYPE", "RICE_1") == "RICE_1"
assert len(c) == len(u) + 1, (len(c), len(u))
for k in range(len(u)):
    a, b = c[k + 1].data, u[k].data
    assert a.shape == b.shape
    if b.dtype.kind == "f":  # astropy 5.2 leaves ZBLANK nulls of quantized floats unapplied
        m = np.isfinite(b)
        assert np.array_equal(a[m].view(np.uint32), b[m].astype(np.float32).view(np.uint32))
    else:
        assert np.array_equal(a.astype(np.int64), b.astype(np.int64))
names = [h.name for h in u]
assert names[1:] in ([], ["MASK", "VAR"], ["MASK"], ["VAR"]), names
PYEOF
done
"$PY" -c "
import sys
from astropy.io import fits
h = fits.open('$tmp/cat.fits')
sys.exit(0 if h[1].header['XTENSION'] == 'BINTABLE' and 'ZIMAGE' not in h[1].header else 1)
" && ok "the catalog stays a plain table" || bad "the catalog is not a plain table"
# the difference's mask, read back by tide from the compressed file, equals the plain run's
"$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/d0" --backend cpu >/dev/null 2>&1
"$PY" - "$tmp/d0/difference.fits" "$tmp/d1/difference.fits" <<'PYEOF' && ok "mask lossless" || bad "mask differs"
import sys
import numpy as np
from astropy.io import fits
p, c = fits.open(sys.argv[1]), fits.open(sys.argv[2])
assert np.array_equal(p["MASK"].data.astype(np.int64), c["MASK"].data.astype(np.int64))
PYEOF

# tide bench --encode times the encoder beside cfitsio on a frame
"$TIDE" bench --encode "$tmp/a.fits" --repeats 1 --warmup 0 --json "$tmp/enc.json" \
    >"$tmp/enc.out" 2>&1 && grep -q "cfitsio file" "$tmp/enc.out" && grep -q '"tide_ms"' "$tmp/enc.json" \
    && ok "bench --encode: $(grep 'tide encoder, 1' "$tmp/enc.out" | tr -s ' ')" \
    || { cat "$tmp/enc.out"; bad "tide bench --encode"; }

# 3. a bad word: usage error, nothing written
if "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/d3" --compress gzip >"$tmp/e.out" 2>&1; then
    bad "--compress gzip accepted"
else
    rc=$?
    [ "$rc" = 2 ] && grep -q "none or rice" "$tmp/e.out" && [ ! -e "$tmp/d3" ] \
        && ok "--compress gzip refused: $(head -1 "$tmp/e.out")" || bad "--compress gzip: rc $rc"
fi
if "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/d4" --set output.compress=zip \
    >"$tmp/e2.out" 2>&1; then
    bad "output.compress=zip accepted"
else
    grep -q "output.compress" "$tmp/e2.out" && [ ! -e "$tmp/d4" ] \
        && ok "output.compress=zip refused: $(head -1 "$tmp/e2.out")" || { cat "$tmp/e2.out"; bad "output.compress=zip"; }
fi
exit $fail
