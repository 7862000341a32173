"""Peer test: tide's background (tide_background_estimate via ctypes on libtide) against
Source Extractor's check-images and python3-sep's Background, and the noise model against
its formula.

Pixels: astropy's float32 values are passed to all three (Source Extractor and sep saw the
same float32 pixels of the int16 image.fits: sep reproduces back.fits bit for bit from them).

Tolerances (measured on this machine in brackets):
  image.fits vs back.fits / rms.fits (default.sex: BACK_SIZE 64, BACK_FILTERSIZE 3):
      max |tide - SE| <= 1e-6 x |SE| for both maps              [1.4e-7, 2.4e-7]
      and the issue's criterion RMS(tide - back) <= 0.01 x mean(rms)
  galaxies.fits vs sep.Background, several mesh/filter/threshold/mask/NaN settings:
      max |tide - sep| <= 1e-6 x max|sep| for the background map          [<= 2.9e-7]
      max |tide - sep| <= 1e-5 x max|sep| for the RMS map                 [<= 3.9e-6]
      global background and RMS: relative 1e-6                            [equal]
  The residual is float rounding: tide evaluates SE's spline in a factorised, GPU-friendly
  order (see src/reduction/background/background_kernels.h), and computes each pixel's offset from the
  nodes directly where SE/sep add 1/mesh_w in float pixel after pixel (exact for mesh 64;
  for mesh 1000 it drifts by ~3e-5 of a mesh, the 3.9e-6 above)."""
import ctypes as C
import os
import sys
import time

import numpy as np
from astropy import log
from astropy.io import fits

log.setLevel("ERROR")  # the ESO-LOG cards of the sample images are noisy, not wrong
try:
    import sep
except ImportError:
    print("SKIP: python3-sep is not installed")
    sys.exit(77)

DATA = os.environ["TIDE_SHARED_DATA"]
REL = 1e-6
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


# ---- ctypes binding of include/tide/background.h -------------------------------------------


class Logger(C.Structure):
    _fields_ = [("stream", C.c_void_p), ("level", C.c_int), ("json", C.c_int)]


class CtxOptions(C.Structure):
    _fields_ = [("backend", C.c_int), ("device", C.c_int), ("threads", C.c_int),
                ("device_mem_cap", C.c_size_t), ("log", Logger)]


class Image(C.Structure):
    _fields_ = [("width", C.c_int64), ("height", C.c_int64), ("stride", C.c_int64),
                ("pix", C.POINTER(C.c_float)), ("mask", C.POINTER(C.c_uint16)),
                ("var", C.POINTER(C.c_float)), ("location", C.c_int), ("owns", C.c_int)]


class BkgParams(C.Structure):
    _fields_ = [("mesh_w", C.c_int64), ("mesh_h", C.c_int64), ("filter_w", C.c_int),
                ("filter_h", C.c_int), ("filter_thresh", C.c_double), ("mask_bits", C.c_uint16),
                ("min_good_frac", C.c_double), ("smooth_degree", C.c_int)]


class BkgSummary(C.Structure):
    _fields_ = [("global_back", C.c_double), ("global_rms", C.c_double),
                ("nx_mesh", C.c_int64), ("ny_mesh", C.c_int64),
                ("n_bad_mesh", C.c_int64), ("n_replaced", C.c_int64)]


BACKEND_CPU, BACKEND_CUDA = 1, 2


class Tide:
    def __init__(self, backend=BACKEND_CPU):
        self.lib = lib = C.CDLL(os.environ["TIDE_LIB"])
        lib.tide_ctx_create.argtypes = [C.POINTER(C.c_void_p), C.POINTER(CtxOptions)]
        lib.tide_ctx_destroy.argtypes = [C.c_void_p]
        lib.tide_error_detail.restype = C.c_char_p
        lib.tide_bkg_params_default.argtypes = [C.POINTER(BkgParams)]
        lib.tide_background_estimate.argtypes = [C.c_void_p, C.POINTER(Image),
                                                 C.POINTER(BkgParams), C.POINTER(Image),
                                                 C.POINTER(Image), C.POINTER(BkgSummary)]
        lib.tide_image_free.argtypes = [C.c_void_p, C.POINTER(Image)]
        lib.tide_noise_model.argtypes = [C.c_void_p, C.POINTER(Image), C.c_double, C.c_double,
                                         C.c_int, C.POINTER(Image)]
        self.ctx = C.c_void_p()
        opt = CtxOptions()
        opt.backend = backend
        st = lib.tide_ctx_create(C.byref(self.ctx), C.byref(opt))
        if st:
            raise RuntimeError("tide_ctx_create: %d %s" % (st, lib.tide_error_detail()))

    def close(self):
        self.lib.tide_ctx_destroy(self.ctx)

    def params(self, **kw):
        p = BkgParams()
        self.lib.tide_bkg_params_default(C.byref(p))
        for k, v in kw.items():
            setattr(p, k, v)
        return p

    @staticmethod
    def _image(data, mask=None):
        data = np.ascontiguousarray(data, dtype=np.float32)
        im = Image()
        im.width, im.height = data.shape[1], data.shape[0]
        im.stride = data.shape[1]
        im.pix = data.ctypes.data_as(C.POINTER(C.c_float))
        keep = [data]
        if mask is not None:
            m = np.ascontiguousarray(mask, dtype=np.uint16)
            im.mask = m.ctypes.data_as(C.POINTER(C.c_uint16))
            keep.append(m)
        return im, keep

    def _take(self, im):
        a = np.ctypeslib.as_array(im.pix, shape=(im.height, im.stride))[:, :im.width].copy()
        self.lib.tide_image_free(self.ctx, C.byref(im))
        return a

    def background(self, data, mask=None, **kw):
        """(back, rms, summary) of a 2-D array; kw sets tide_bkg_params fields."""
        im, keep = self._image(data, mask)
        p = self.params(**kw)
        b, r, s = Image(), Image(), BkgSummary()
        st = self.lib.tide_background_estimate(self.ctx, C.byref(im), C.byref(p), C.byref(b),
                                               C.byref(r), C.byref(s))
        del keep
        if st:
            raise RuntimeError("tide_background_estimate: %d %s"
                               % (st, self.lib.tide_error_detail().decode()))
        return self._take(b), self._take(r), s

    def noise_model(self, bkg, gain, rdnoise, ncombine):
        im, keep = self._image(bkg)
        v = Image()
        st = self.lib.tide_noise_model(self.ctx, C.byref(im), gain, rdnoise, ncombine,
                                       C.byref(v))
        del keep
        if st:
            raise RuntimeError("tide_noise_model: %d %s" % (st, self.lib.tide_error_detail()))
        return self._take(v)


def maxrel(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b)) / np.max(np.abs(b)))


def test_source_extractor(t):
    d = fits.getdata(os.path.join(DATA, "sep/image.fits")).astype(np.float32)
    back = fits.getdata(os.path.join(DATA, "sep/back.fits")).astype(np.float32)
    rms = fits.getdata(os.path.join(DATA, "sep/rms.fits")).astype(np.float32)
    b, r, s = t.background(d)  # defaults = default.sex
    eb = np.abs(b.astype(np.float64) - back)
    er = np.abs(r.astype(np.float64) - rms)
    print("SE image.fits: background max |diff| %.3g ADU (%.2g rel), RMS(diff) %.3g = %.2g x "
          "mean(rms); rms map max |diff| %.3g (%.2g rel)"
          % (eb.max(), eb.max() / np.abs(back).max(), np.sqrt(np.mean(eb ** 2)),
             np.sqrt(np.mean(eb ** 2)) / rms.mean(), er.max(), er.max() / rms.max()))
    check(np.all(eb <= REL * np.abs(back)), "SE background within 1e-6 relative")
    check(np.all(er <= REL * np.abs(rms)), "SE rms within 1e-6 relative")
    check(np.sqrt(np.mean(eb ** 2)) <= 0.01 * rms.mean(), "issue: RMS(tide-back) <= 1% mean rms")
    check((s.nx_mesh, s.ny_mesh) == (4, 4), "4x4 meshes")


def test_sep(t):
    d = fits.getdata(os.path.join(DATA, "sextractor/galaxies.fits")).astype(np.float32)
    rng = np.random.default_rng(7)
    mask = np.zeros(d.shape, np.uint16)
    mask[100:400, 200:300] = 1
    mask[700:720, :] = 4
    dn = d.copy()
    for _ in range(30):
        y, x = rng.integers(0, 1000, 2)
        dn[y:y + rng.integers(5, 150), x:x + rng.integers(5, 150)] = np.nan
    cases = [("default", d, None, {}),
             ("mesh 32, filter 5x3, thresh 0.5", d, None,
              dict(mesh_w=32, mesh_h=32, filter_w=5, filter_h=3, filter_thresh=0.5)),
             ("mesh 50x70", d, None, dict(mesh_w=50, mesh_h=70)),
             ("mask", d, mask, {}),
             ("NaN blocks", dn, None, {}),
             ("mesh 200", d, None, dict(mesh_w=200, mesh_h=200)),
             ("mesh 1000x30, filter 1", d, None,
              dict(mesh_w=1000, mesh_h=30, filter_w=1, filter_h=1))]
    for name, data, m, kw in cases:
        t0 = time.perf_counter()
        b, r, s = t.background(data, mask=m, **kw)
        t1 = time.perf_counter()
        sb = sep.Background(data, mask=(m > 0) if m is not None else None,
                            bw=kw.get("mesh_w", 64), bh=kw.get("mesh_h", 64),
                            fw=kw.get("filter_w", 3), fh=kw.get("filter_h", 3),
                            fthresh=kw.get("filter_thresh", 0.0))
        sbb, sbr = sb.back(), sb.rms()
        t2 = time.perf_counter()
        eb, er = maxrel(b, sbb), maxrel(r, sbr)
        print("sep galaxies.fits %-32s background %.2g, rms %.2g (rel to max); global %.6g/%.6g "
              "vs %.6g/%.6g; tide %.1f ms, sep %.1f ms"
              % (name, eb, er, s.global_back, s.global_rms, sb.globalback, sb.globalrms,
                 (t1 - t0) * 1e3, (t2 - t1) * 1e3))
        check(eb <= REL, name + ": background vs sep")
        check(er <= 10 * REL, name + ": rms vs sep")
        check(abs(s.global_back - sb.globalback) <= REL * abs(sb.globalback), name + ": global")
        check(abs(s.global_rms - sb.globalrms) <= REL * sb.globalrms, name + ": global rms")


def test_noise_model(t):
    bk = np.array([[0.0, 10.0, 1e4, -5.0], [np.nan, 3.5, 250.0, 7e4]], np.float32)
    v = t.noise_model(bk, 2.2, 6.0, 5)
    want = (np.maximum(bk.astype(np.float64), 0) / 2.2 + (6.0 / 2.2) ** 2) / 5
    ok = np.isnan(v[1, 0]) and np.allclose(np.delete(v.ravel(), 4), np.delete(want.ravel(), 4),
                                           rtol=1e-6, atol=0)
    check(ok, "noise model formula")


t = Tide()
test_source_extractor(t)
test_sep(t)
test_noise_model(t)
t.close()
print("FAILED: %d" % len(failures) if failures else "ok")
sys.exit(1 if failures else 0)
