"""Plain FITS files of $TIDE_SHARED_DATA read by tide agree with astropy exactly.

For every uncompressed image in sep/, sextractor/, wcs/, diff/ (int16 with BSCALE/BZERO like
galaxies.fits, uint8, int16 with BZERO 32768, float32, float64): tide's float32 pixels equal
astropy's raw values scaled in float64 (raw * BSCALE + BZERO) and cast to float32 once, BLANK
and NaN become NaN with the NODATA mask bit; and every keyword astropy parses from the header
has the same value in tide's header (numbers exactly, strings exactly).
"""
import ctypes
import glob
import math
import os
import sys
import warnings

import numpy as np
from astropy.io import fits

warnings.simplefilter("ignore")  # ESO-LOG cards in galaxies.fits


class TideImage(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int64), ("height", ctypes.c_int64),
                ("stride", ctypes.c_int64), ("pix", ctypes.POINTER(ctypes.c_float)),
                ("mask", ctypes.POINTER(ctypes.c_uint16)), ("var", ctypes.POINTER(ctypes.c_float)),
                ("location", ctypes.c_int), ("owns", ctypes.c_int)]


class TideHeader(ctypes.Structure):
    _fields_ = [("cards", ctypes.c_void_p), ("ncards", ctypes.c_int), ("capacity", ctypes.c_int)]


LIB = ctypes.CDLL(os.environ["TIDE_LIB"])
LIB.tide_fits_read_image.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                     ctypes.POINTER(TideImage), ctypes.POINTER(TideHeader)]
LIB.tide_image_free.argtypes = [ctypes.c_void_p, ctypes.POINTER(TideImage)]
LIB.tide_header_free.argtypes = [ctypes.POINTER(TideHeader)]
LIB.tide_header_get_dbl.argtypes = [ctypes.POINTER(TideHeader), ctypes.c_char_p,
                                    ctypes.POINTER(ctypes.c_double)]
LIB.tide_header_get_str.argtypes = [ctypes.POINTER(TideHeader), ctypes.c_char_p,
                                    ctypes.c_char_p, ctypes.c_int]
LIB.tide_header_get_bool.argtypes = [ctypes.POINTER(TideHeader), ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_int)]
LIB.tide_error_detail.restype = ctypes.c_char_p
DATA = os.environ["TIDE_SHARED_DATA"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tide_read(spec):
    im, hdr = TideImage(), TideHeader()
    st = LIB.tide_fits_read_image(None, spec.encode(), ctypes.byref(im), ctypes.byref(hdr))
    if st != 0:
        raise RuntimeError("tide_fits_read_image(%s) = %d: %s"
                           % (spec, st, LIB.tide_error_detail().decode()))
    h, w, s = im.height, im.width, im.stride
    pix = np.ctypeslib.as_array(im.pix, shape=(h * s,)).reshape(h, s)[:, :w].copy()
    mask = np.ctypeslib.as_array(im.mask, shape=(h * s,)).reshape(h, s)[:, :w].copy()
    LIB.tide_image_free(None, ctypes.byref(im))
    return pix, mask, hdr


def expected(path):
    with fits.open(path, do_not_scale_image_data=True) as hl:
        hdu = next(h for h in hl if h.data is not None and h.header.get("NAXIS", 0) >= 2)
        raw = hdu.data
        hd = hdu.header
        val = raw.astype(np.float64) * float(hd.get("BSCALE", 1.0)) + float(hd.get("BZERO", 0.0))
        if "BLANK" in hd and not np.issubdtype(raw.dtype, np.floating):
            val[raw == hd["BLANK"]] = np.nan
        val[~np.isfinite(val)] = np.nan
        return val.astype(np.float32), hd


def compare_header(name, hdr, ahd):
    n = 0
    seen = set()
    for card in ahd.cards:
        key = card.keyword
        # value cards only ("= " in columns 9-10); a repeated key reads as its first card
        if not key or key in seen or len(key) > 8 or card.image[8:10] != "= ":
            continue
        seen.add(key)
        try:
            v = card.value
        except Exception:
            continue
        if isinstance(v, bool):
            b = ctypes.c_int(-1)
            st = LIB.tide_header_get_bool(ctypes.byref(hdr), key.encode(), ctypes.byref(b))
            check(st == 0 and bool(b.value) == v, "%s: %s = %s, tide %s (st %d)"
                  % (name, key, v, b.value, st))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            d = ctypes.c_double(math.nan)
            st = LIB.tide_header_get_dbl(ctypes.byref(hdr), key.encode(), ctypes.byref(d))
            check(st == 0 and d.value == float(v), "%s: %s = %r, tide %r (st %d)"
                  % (name, key, v, d.value, st))
        elif isinstance(v, str):
            buf = ctypes.create_string_buffer(100)
            st = LIB.tide_header_get_str(ctypes.byref(hdr), key.encode(), buf, 100)
            check(st == 0 and buf.value.decode() == v.rstrip(), "%s: %s = %r, tide %r (st %d)"
                  % (name, key, v, buf.value, st))
        else:
            continue
        n += 1
    return n


def main():
    files = []
    for sub in ("sep", "sextractor", "wcs", "diff"):
        files += sorted(glob.glob(os.path.join(DATA, sub, "*.fits")))
    check(len(files) >= 15, "expected >= 15 images in the shared data, found %d" % len(files))
    for path in files:
        name = os.path.relpath(path, DATA)
        pix, mask, hdr = tide_read(path)
        want, ahd = expected(path)
        ok = pix.shape == want.shape
        check(ok, "%s: shape %s, astropy %s" % (name, pix.shape, want.shape))
        if ok:
            nt, nw = np.isnan(pix), np.isnan(want)
            check(np.array_equal(nt, nw), "%s: NaN %d vs %d" % (name, nt.sum(), nw.sum()))
            check(np.array_equal((mask & 1) != 0, nw), "%s: NODATA bits" % name)
            fin = ~nw
            check(np.array_equal(pix[fin].view(np.uint32), want[fin].view(np.uint32)),
                  "%s: %d pixels differ" % (name, (pix[fin] != want[fin]).sum()))
        nkeys = compare_header(name, hdr, ahd)
        LIB.tide_header_free(ctypes.byref(hdr))
        print("ok  %-32s %5dx%-5d BITPIX %3d BSCALE %-14s BZERO %-14s %3d keys"
              % (name, pix.shape[1], pix.shape[0], ahd["BITPIX"], ahd.get("BSCALE", "-"),
                 ahd.get("BZERO", "-"), nkeys))
    # the int16 galaxies: scaling really applied (not raw integers)
    pix = tide_read(os.path.join(DATA, "sextractor", "galaxies.fits"))[0]
    raw = fits.getdata(os.path.join(DATA, "sextractor", "galaxies.fits"),
                       do_not_scale_image_data=True)
    check(float(pix[0, 0]) == float(np.float32(raw[0, 0] * 2.92273835509 + 3713.66692596)),
          "galaxies.fits: pixel [1,1] is not raw*BSCALE+BZERO")
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all exact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
