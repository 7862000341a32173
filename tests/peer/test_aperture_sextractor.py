"""Peer test: FLUX_APER and FLUX_AUTO against Source Extractor's catalog of
../shared/data/sep/image.fits (image.cat; PHOT_APERTURES 10 px diameter, PHOT_AUTOPARAMS
2.5, 0.0; GAIN 0), with its background map back.fits subtracted and its RMS map rms.fits
squared as the variance, at Source Extractor's own positions (X_IMAGE - 1, Y_IMAGE - 1), via
ctypes on libtide. Source Extractor samples boundary pixels 5×5 (tide is exact), so the
criterion is the median relative difference:
  FLUX_APER (r = 5)              median |Δ|/F < 1 %, FLAGS = 0 objects
  FLUXERR_APER                   median |Δ|/σ < 2 %
  KRON_RADIUS (first moment, 6)  median |Δ|/K < 0.5 % (A, B, THETA from X2, Y2, XY)
  FLUX_AUTO (centre sampling)    median |Δ|/F < 0.1 % (as measured: 5e-4 and 7e-8)"""
import ctypes as C
import os
import sys

import numpy as np
from astropy.io import fits
from astropy import log

log.setLevel("ERROR")  # galaxies' ESO-LOG cards are noisy, not wrong

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


class AperParams(C.Structure):
    _fields_ = [("mask_bits", C.c_uint16), ("mask_correct", C.c_int), ("gain", C.c_double),
                ("ncombine", C.c_int), ("bkgann_in", C.c_double), ("bkgann_out", C.c_double),
                ("bkgann_sigma", C.c_double), ("bkgann_maxiters", C.c_int),
                ("bkgann_minpix", C.c_int)]


class KronParams(C.Structure):
    _fields_ = [("kron_fact", C.c_double), ("min_radius", C.c_double),
                ("moment_nsig", C.c_double), ("subpix", C.c_int), ("aper", AperParams)]


def image(a):
    a = np.ascontiguousarray(a, dtype=np.float32)
    im = Image(a.shape[1], a.shape[0], a.shape[1], a.ctypes.data_as(C.POINTER(C.c_float)),
               None, None, 0, 0)
    im._keep = a
    return im


dp = C.POINTER(C.c_double)
ip = C.POINTER(C.c_int32)
lib.tide_error_detail.restype = C.c_char_p
ctx = C.c_void_p()
opts = (C.c_int * 16)()
opts[0] = 1  # CPU backend
assert lib.tide_ctx_create(C.byref(ctx), C.cast(opts, C.c_void_p)) == 0


def arr(a):
    a = np.ascontiguousarray(a, dtype=np.float64)
    return a, a.ctypes.data_as(dp)


def fits_data(name):
    with fits.open(os.path.join(DATA, "sep", name)) as hl:
        return hl[0].data.astype(np.float32)


cat = np.loadtxt(os.path.join(DATA, "sep/image.cat"))
# columns (1-based in the header): 2 X, 3 Y, 6 X2, 7 Y2, 8 XY, 13 FLUX_APER, 14 FLUXERR_APER,
# 15 KRON_RADIUS, 16 FLUX_AUTO, 21 FLAGS
x = cat[:, 1] - 1.0
y = cat[:, 2] - 1.0
x2, y2, xy = cat[:, 5], cat[:, 6], cat[:, 7]
se_flux, se_err, se_kr, se_auto, se_flags = cat[:, 12], cat[:, 13], cat[:, 14], cat[:, 15], cat[:, 20].astype(int)
sub = fits_data("image.fits") - fits_data("back.fits")
var = fits_data("rms.fits").astype(np.float64) ** 2
im = image(sub)
vim = image(var)
n = len(x)
xa, xp = arr(x)
ya, yp = arr(y)
r = np.array([5.0])
flux = np.zeros(n)
err = np.zeros(n)
flags = np.zeros(n, dtype=np.int32)
st = lib.tide_aperture_photometry(ctx, C.byref(im), C.byref(vim), C.c_int64(n), xp, yp, 1,
                                  r.ctypes.data_as(dp), None, flux.ctypes.data_as(dp),
                                  err.ctypes.data_as(dp), flags.ctypes.data_as(ip))
check(st == 0, f"tide_aperture_photometry: {lib.tide_error_detail()}")
good = se_flags == 0
rel = np.abs(flux - se_flux)[good] / np.abs(se_flux[good])
rele = np.abs(err - se_err)[good] / se_err[good]
print(f"FLUX_APER: {good.sum()} objects with FLAGS=0, median rel diff {np.median(rel):.2e}, "
      f"max {rel.max():.2e}; FLUXERR median rel diff {np.median(rele):.2e}")
check(np.median(rel) < 0.01, "FLUX_APER median relative difference >= 1%")
check(np.median(rele) < 0.02, "FLUXERR_APER median relative difference >= 2%")

# Kron: A, B, THETA from the second moments as Source Extractor defines them
t = (x2 + y2) / 2
d = np.sqrt(((x2 - y2) / 2) ** 2 + xy ** 2)
a = np.sqrt(t + d)
b = np.sqrt(np.maximum(t - d, 1e-12))
theta = np.degrees(0.5 * np.arctan2(2 * xy, x2 - y2))
kp = KronParams(2.5, 0.0, 6.0, 1, AperParams(0xFFFF, 0, 0.0, 1, 0, 0, 3.0, 5, 10))
kr = np.zeros(n)
af = np.zeros(n)
ae = np.zeros(n)
kf = np.zeros(n, dtype=np.int32)
aa, ap_ = arr(a)
ba, bp_ = arr(b)
ta, tp_ = arr(theta)
lib.tide_kron_photometry.argtypes = [C.c_void_p, C.POINTER(Image), C.POINTER(Image), C.c_int64,
                                     dp, dp, dp, dp, dp, C.POINTER(KronParams), dp, dp, dp, ip]
st = lib.tide_kron_photometry(ctx, C.byref(im), C.byref(vim), n, xp, yp, ap_, bp_, tp_,
                              C.byref(kp), kr.ctypes.data_as(dp), af.ctypes.data_as(dp),
                              ae.ctypes.data_as(dp), kf.ctypes.data_as(ip))
check(st == 0, f"tide_kron_photometry: {lib.tide_error_detail()}")
ok = good & (se_kr > 0) & (se_auto > 0)
relk = np.abs(kr - se_kr)[ok] / se_kr[ok]
rela = np.abs(af - se_auto)[ok] / se_auto[ok]
print(f"KRON_RADIUS: {ok.sum()} objects, median rel diff {np.median(relk):.2e}; "
      f"FLUX_AUTO median rel diff {np.median(rela):.2e}")
check(np.median(relk) < 0.005, "KRON_RADIUS median relative difference >= 0.5%")
check(np.median(rela) < 0.001, "FLUX_AUTO median relative difference >= 0.1%")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
