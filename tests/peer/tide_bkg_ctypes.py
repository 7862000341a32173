"""ctypes binding of tide's background API (include/tide/background.h) for the peer tests.

Struct layouts mirror the public headers: tide_ctx_options (ctx.h), tide_image (image.h),
tide_bkg_params and tide_bkg_summary (background.h)."""
import ctypes as C
import os

import numpy as np


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
