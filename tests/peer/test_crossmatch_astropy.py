"""tide's crossmatch against astropy (Debian python3-astropy) through ctypes on libtide.so.

  * tide_crossmatch (CPU k-d tree) against SkyCoord.match_to_catalog_sky (astropy's own
    k-d tree) on random fields at the equator, across RA 0/360 and at the north pole: where
    astropy's nearest neighbour is inside the radius (by more than 1e-9 arcsec), tide
    returns the same one, or one at the same separation within 1e-9 arcsec (a near tie);
    where it is outside, tide returns none;
  * tide's separations equal astropy's SkyCoord.separation (Vincenty) to 1e-6 arcsec;
  * tide_sky_separation_arcsec equals astropy's separation to 1e-6 arcsec at every angle,
    from 1e-6 arcsec to antipodal.
Exit 77 (skipped) when TIDE_LIB is missing.
"""
import ctypes as C
import os
import sys

import numpy as np

try:
    import astropy.units as u
    from astropy.coordinates import SkyCoord
except ImportError:
    print("SKIP: astropy not available")
    sys.exit(77)

LIB = os.environ.get("TIDE_LIB")
if not LIB or not os.path.exists(LIB):
    print("SKIP: TIDE_LIB not set")
    sys.exit(77)

TOL_SEP = 1e-6  # arcsec
TIE = 1e-9      # arcsec

lib = C.CDLL(LIB)
DP = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
IP = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")


class Params(C.Structure):
    _fields_ = [("radius_arcsec", C.c_double), ("mutual", C.c_int)]


lib.tide_ctx_create.argtypes = [C.POINTER(C.c_void_p), C.c_void_p]
lib.tide_crossmatch.argtypes = [C.c_void_p, DP, DP, C.c_int64, DP, DP, C.c_int64,
                                C.POINTER(Params), IP, DP, C.POINTER(C.c_int64)]
lib.tide_sky_separation_arcsec.argtypes = [C.c_double] * 4
lib.tide_sky_separation_arcsec.restype = C.c_double
lib.tide_error_detail.restype = C.c_char_p
ctx = C.c_void_p()
opts = (C.c_int * 16)()  # tide_ctx_options: backend first (1 = CPU), rest zero
opts[0] = 1
assert lib.tide_ctx_create(C.byref(ctx), C.cast(opts, C.c_void_p)) == 0

rng = np.random.default_rng(2024)
failures = []


def field(n, ra0, dec0, half):
    """n positions in a box of +-half degrees (RA scaled by cos dec) around (ra0, dec0)."""
    dec = np.clip(dec0 + rng.uniform(-half, half, n), -90, 90)
    ra = (ra0 + rng.uniform(-half, half, n) / np.maximum(np.cos(np.radians(dec)), 1e-3)) % 360
    return ra, dec


def check(name, n, ra0, dec0, half, radius):
    ra1, de1 = field(n, ra0, dec0, half)
    k = n * 4 // 5
    jit = 0.3 / 3600
    de2 = np.clip(de1[:k] + rng.uniform(-jit, jit, k), -90, 90)
    ra2 = (ra1[:k] + rng.uniform(-jit, jit, k) / np.maximum(np.cos(np.radians(de1[:k])), 1e-3)) % 360
    rx, dx = field(n // 4, ra0, dec0, half)
    ra2, de2 = np.concatenate([ra2, rx]), np.concatenate([de2, dx])
    perm = rng.permutation(len(ra2))
    ra2, de2 = np.ascontiguousarray(ra2[perm]), np.ascontiguousarray(de2[perm])
    match = np.empty(n, dtype=np.int64)
    sep = np.empty(n)
    nm = C.c_int64()
    p = Params(radius, 0)
    st = lib.tide_crossmatch(ctx, ra1, de1, n, ra2, de2, len(ra2), C.byref(p), match, sep,
                             C.byref(nm))
    assert st == 0, lib.tide_error_detail()
    c1 = SkyCoord(ra1 * u.deg, de1 * u.deg)
    c2 = SkyCoord(ra2 * u.deg, de2 * u.deg)
    idx, d2d, _ = c1.match_to_catalog_sky(c2)
    sa = d2d.to_value(u.arcsec)
    inside = sa < radius - TIE
    outside = sa > radius + TIE
    got = match >= 0
    bad_miss = np.count_nonzero(inside & ~got)
    bad_extra = np.count_nonzero(outside & got)
    both = inside & got
    differ = both & (match != idx)
    # a different choice is only allowed for a tie: the same separation within TIE
    sep_t = np.full(n, np.nan)
    sep_t[got] = c1[got].separation(c2[match[got]]).to_value(u.arcsec)
    bad_tie = np.count_nonzero(np.abs(sep_t[differ] - sa[differ]) > TIE)
    sep_err = np.max(np.abs(sep[got] - sep_t[got])) if got.any() else 0.0
    print(f"{name:16s} n {n:6d} r {radius:6.2f}\": {int(nm.value):6d} matched, astropy "
          f"{np.count_nonzero(inside):6d} inside; misses {bad_miss}, extras {bad_extra}, "
          f"non-tie differences {bad_tie} (ties {np.count_nonzero(differ)}), "
          f"sep vs astropy <= {sep_err:.2g}\"")
    if bad_miss or bad_extra or bad_tie:
        failures.append(f"{name}: {bad_miss} missed, {bad_extra} extra, {bad_tie} different")
    if not sep_err <= TOL_SEP:
        failures.append(f"{name}: separation differs from astropy by {sep_err:.3g} arcsec")
    if int(nm.value) != np.count_nonzero(got):
        failures.append(f"{name}: nmatched {nm.value} != {np.count_nonzero(got)}")


check("equator", 20000, 150.0, 2.0, 0.5, 1.0)
check("RA 0/360", 20000, 0.0, -30.0, 0.5, 2.0)
check("north pole", 20000, 0.0, 89.7, 0.3, 1.0)
check("crowded 30\"", 10000, 250.0, 60.0, 0.1, 30.0)

# tide_sky_separation_arcsec at every scale
n = 3000
ra1 = rng.uniform(0, 360, n)
de1 = np.degrees(np.arcsin(rng.uniform(-1, 1, n)))
scale = 10.0 ** rng.uniform(-9, 2.3, n)  # degrees: 3.6e-6 arcsec .. ~200 deg
ra2 = ra1 + scale * rng.normal(size=n)
de2 = np.clip(de1 + scale * rng.normal(size=n), -90, 90)
ref = SkyCoord(ra1 * u.deg, de1 * u.deg).separation(SkyCoord(ra2 * u.deg, de2 * u.deg))
ref = ref.to_value(u.arcsec)
mine = np.array([lib.tide_sky_separation_arcsec(a, b, c, d)
                 for a, b, c, d in zip(ra1, de1, ra2, de2)])
err = np.max(np.abs(mine - ref))
print(f"tide_sky_separation_arcsec vs astropy over 1e-5..7e5 arcsec: worst {err:.2g} arcsec")
if not err <= TOL_SEP:
    failures.append(f"tide_sky_separation_arcsec differs from astropy by {err:.3g} arcsec")

lib.tide_ctx_destroy.argtypes = [C.c_void_p]
lib.tide_ctx_destroy(ctx)
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok")
