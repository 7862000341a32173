#!/bin/bash
# tide fit-dipoles: stamps written by astropy (cube + VAR + MASK + PSF + CENTERS) with known
# Gaussian dipoles and single sources; positions in FITS 1-based image coordinates within the
# errors, pull RMS near 1, DELTA_CHI2 separating dipoles from single sources, masked garbage
# ignored, the PSF model, input errors naming the file, and (with a GPU) CPU = CUDA to 1e-6.
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$PY" - "$T" <<'PYEOF' || { echo "cannot make test files"; exit 1; }
import sys
import numpy as np
from astropy.io import fits
t = sys.argv[1]
rng = np.random.default_rng(3)
n, side = 300, 21
yy, xx = np.mgrid[0:side, 0:side].astype(float)
def gauss(x0, y0, s1, s2, th):
    c, s = np.cos(th), np.sin(th)
    u = c * (xx - x0) + s * (yy - y0); v = -s * (xx - x0) + c * (yy - y0)
    return np.exp(-0.5 * (u**2 / s1**2 + v**2 / s2**2)) / (2 * np.pi * s1 * s2)
st = np.zeros((n, side, side), np.float32); var = np.zeros_like(st)
mask = np.zeros((n, side, side), np.int16)
truth = []
for i in range(n):
    s1 = rng.uniform(1.3, 1.9); s2 = s1 * rng.uniform(0.6, 0.8); th = rng.uniform(-1.5, 1.5)
    noise = rng.uniform(0.5, 2.0); snr = rng.uniform(25, 60)
    A = snr * noise * np.sqrt(4 * np.pi * s1 * s2)
    sep = rng.uniform(3.0, 5.0) * np.sqrt(s1 * s2); phi = rng.uniform(0, 2 * np.pi)
    cx, cy = 10 + rng.uniform(-.5, .5), 10 + rng.uniform(-.5, .5)
    dip = i % 3 != 0
    xp, yp = cx + 0.5 * sep * np.cos(phi) * dip, cy + 0.5 * sep * np.sin(phi) * dip
    xn, yn = cx - 0.5 * sep * np.cos(phi), cy - 0.5 * sep * np.sin(phi)
    m = A * gauss(xp, yp, s1, s2, th) - (A * gauss(xn, yn, s1, s2, th) if dip else 0)
    st[i] = m + rng.normal(0, noise, (side, side)); var[i] = noise**2
    # a masked garbage pixel away from the lobes
    st[i, 0, 20] = 1e6; mask[i, 0, 20] = 4
    truth.append((dip, xp, yp, xn, yn, A))
X0 = 1000.0 + np.arange(n); Y0 = 500.0 + 2 * np.arange(n)   # FITS 1-based stamp centres
hd = [fits.PrimaryHDU(), fits.ImageHDU(st, name="STAMPS"), fits.ImageHDU(var, name="VAR"),
      fits.ImageHDU(mask, name="MASK"),
      fits.BinTableHDU.from_columns([fits.Column("X", "D", array=X0), fits.Column("Y", "D", array=Y0)], name="CENTERS")]
fits.HDUList(hd).writeto(f"{t}/stamps.fits")
tr = np.array(truth); tr[:, 1] += X0 - 10; tr[:, 3] += X0 - 10; tr[:, 2] += Y0 - 10; tr[:, 4] += Y0 - 10
np.save(f"{t}/truth.npy", tr)
# PSF model: Gaussian PSF stamp sigma 1.6; data from the same sampled PSF shifted by integers
ps = 25; h = 12; yy2, xx2 = np.mgrid[0:ps, 0:ps].astype(float)
psf = np.exp(-0.5 * ((xx2 - h)**2 + (yy2 - h)**2) / 1.6**2); psf /= 2 * np.pi * 1.6**2
st2 = np.zeros((50, side, side), np.float32)
big = np.zeros((ps + 2 * side, ps + 2 * side)); big[side:side + ps, side:side + ps] = psf
def shifted(xc, yc):   # the PSF centred on stamp pixel (xc, yc): exact at integer positions
    r0, c0 = side + h - yc, side + h - xc
    return big[r0:r0 + side, c0:c0 + side]
for i in range(50):
    st2[i] = 800 * (shifted(12, 10) - shifted(9, 7)) + rng.normal(0, 1, (side, side))
fits.HDUList([fits.PrimaryHDU(st2), fits.ImageHDU(np.ones_like(st2), name="VAR"),
              fits.ImageHDU(psf.astype(np.float32), name="PSF")]).writeto(f"{t}/psfstamps.fits")
fits.HDUList([fits.PrimaryHDU(st2)]).writeto(f"{t}/novar.fits")
PYEOF

"$TIDE" fit-dipoles --backend cpu "$T/stamps.fits" -o "$T/fits.fits" >"$T/out" 2>"$T/err" ||
    bad "fit-dipoles failed: $(cat "$T/err")"
grep -q "300 stamps" "$T/out" || bad "summary line: $(cat "$T/out")"
"$PY" - "$T" <<'PYEOF' || fail=1
import sys
import numpy as np
from astropy.io import fits
t = sys.argv[1]
f = fits.open(f"{t}/fits.fits")["DIPOLES"].data
tr = np.load(f"{t}/truth.npy")
dip = tr[:, 0] == 1
ok = True
conv = f["FIT_STATUS"][dip] == 0
print("dipoles converged", conv.sum(), "/", dip.sum())
if conv.sum() < 0.97 * dip.sum(): ok = False; print("FAIL: too few converged")
for col, k in (("DIP_XPOS", 1), ("DIP_YPOS", 2), ("DIP_XNEG", 3), ("DIP_YNEG", 4), ("DIP_FLUX", 5)):
    d = f[col][dip][conv] - tr[dip][conv][:, k]
    pull = d / f[col + "_ERR"][dip][conv]
    print(f"{col}: median pull {np.median(pull):+.3f} pull rms {np.sqrt(np.mean(pull**2)):.3f}")
    if abs(np.median(pull)) > 0.25 or not (0.8 < np.sqrt(np.mean(pull**2)) < 1.25):
        ok = False; print("FAIL:", col)
dchi = f["DELTA_CHI2"]
print("delta chi2: dipoles min", dchi[dip].min(), "singles max", dchi[~dip].max())
if dchi[dip].min() < 25 or np.nanmax(dchi[~dip]) > 25: ok = False; print("FAIL: delta chi2")
single = ~dip & (f["PS_STATUS"] == 0)
e = np.hypot(f["PS_X"][single] - tr[single][:, 1], f["PS_Y"][single] - tr[single][:, 2])
if single.sum() < 95 or e.max() > 0.3: ok = False; print("FAIL: point sources", single.sum(), e.max())
if (f["NPIX"] != 21 * 21 - 1).any(): ok = False; print("FAIL: masked pixel counted")
sys.exit(0 if ok else 1)
PYEOF

"$TIDE" fit-dipoles --backend cpu --model psf "$T/psfstamps.fits" -o "$T/psf.fits" >/dev/null 2>"$T/err" ||
    bad "psf model failed: $(cat "$T/err")"
"$PY" - "$T" <<'PYEOF' || fail=1
import sys
import numpy as np
from astropy.io import fits
f = fits.open(f"{sys.argv[1]}/psf.fits")[1].data
# lobes at stamp (12, 10) and (9, 7) 0-based -> 1-based (13, 11) and (10, 8); flux 800
ok = (f["FIT_STATUS"] == 0).all()
for c, v in (("DIP_XPOS", 13), ("DIP_YPOS", 11), ("DIP_XNEG", 10), ("DIP_YNEG", 8), ("DIP_FLUX", 800)):
    pull = (f[c] - v) / f[c + "_ERR"]
    print(f"psf {c}: mean pull {pull.mean():+.3f} rms {np.sqrt(np.mean(pull**2)):.3f}")
    if abs(pull.mean()) > 0.5 or not 0.6 < np.sqrt(np.mean(pull**2)) < 1.5: ok = False
sys.exit(0 if ok else 1)
PYEOF

# input errors: missing VAR names the file and HDU; usage errors exit 2
"$TIDE" fit-dipoles --backend cpu "$T/novar.fits" -o "$T/x.fits" >/dev/null 2>"$T/err"; rc=$?
[ $rc -eq 1 ] || bad "missing VAR: exit $rc"
grep -q "novar.fits" "$T/err" && grep -q "VAR" "$T/err" || bad "missing VAR message: $(cat "$T/err")"
"$TIDE" fit-dipoles "$T/stamps.fits" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || bad "missing -o: exit $rc"
"$TIDE" fit-dipoles --model banana "$T/stamps.fits" -o "$T/x.fits" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || bad "bad --model: exit $rc"
"$TIDE" fit-dipoles --backend cpu --model psf "$T/stamps.fits" -o "$T/x.fits" >/dev/null 2>"$T/err"; rc=$?
[ $rc -eq 1 ] && grep -q PSF "$T/err" || bad "psf model without PSF HDU: exit $rc $(cat "$T/err")"

# CPU and CUDA agree
if "$TIDE" fit-dipoles --backend cuda "$T/stamps.fits" -o "$T/gpu.fits" >/dev/null 2>&1; then
    "$PY" - "$T" <<'PYEOF' || fail=1
import sys
import numpy as np
from astropy.io import fits
a = fits.open(f"{sys.argv[1]}/fits.fits")[1].data; b = fits.open(f"{sys.argv[1]}/gpu.fits")[1].data
same = (a["FIT_STATUS"] == b["FIT_STATUS"]) & (a["FIT_STATUS"] == 0)
bad = 0
for c in ("DIP_XPOS", "DIP_YNEG", "DIP_FLUX", "DIP_CHI2", "PS_CHI2", "DIP_FLUX_ERR"):
    r = np.abs(a[c][same] - b[c][same]) / np.maximum(np.maximum(abs(a[c][same]), abs(b[c][same])), 1)
    bad += (r > 1e-6).sum()
print("cpu vs cuda: beyond 1e-6:", bad, "status differs:", (a["FIT_STATUS"] != b["FIT_STATUS"]).sum())
sys.exit(0 if bad == 0 and (a["FIT_STATUS"] != b["FIT_STATUS"]).sum() <= 1 else 1)
PYEOF
fi
exit $fail
