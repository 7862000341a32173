"""Tile-compressed FITS: tide decodes exactly what cfitsio's funpack decodes.

Every compressed file in $TIDE_SHARED_DATA/compressed/, plus files fpack makes here from
awkward images with every codec and quantization option (RICE_1, GZIP_1, GZIP_2, HCOMPRESS_1
lossless and lossy, PLIO_1, NO_DITHER, SUBTRACTIVE_DITHER_1, SUBTRACTIVE_DITHER_2, lossless
GZIP floats, odd tiles, one whole-image tile), is unpacked by funpack and read by tide through
ctypes. tide holds float32, so the oracle is funpack's output cast to float32 (float64 data are
cast once, exactly as tide casts them); equality is exact and NaN must sit where funpack has
NaN. Also: m13_*.fits equal m13.fits, the TESS frame has 77,930 NaN.
"""
import ctypes
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
from astropy.io import fits


class TideImage(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int64), ("height", ctypes.c_int64),
                ("stride", ctypes.c_int64), ("pix", ctypes.POINTER(ctypes.c_float)),
                ("mask", ctypes.POINTER(ctypes.c_uint16)), ("var", ctypes.POINTER(ctypes.c_float)),
                ("location", ctypes.c_int), ("owns", ctypes.c_int)]


LIB = ctypes.CDLL(os.environ["TIDE_LIB"])
LIB.tide_fits_read_image.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                     ctypes.POINTER(TideImage), ctypes.c_void_p]
LIB.tide_image_free.argtypes = [ctypes.c_void_p, ctypes.POINTER(TideImage)]
LIB.tide_error_detail.restype = ctypes.c_char_p
DATA = os.environ["TIDE_SHARED_DATA"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tide_read(spec):
    """(pixels float32 HxW, mask uint16 HxW) as tide reads them."""
    im = TideImage()
    st = LIB.tide_fits_read_image(None, spec.encode(), ctypes.byref(im), None)
    if st != 0:
        raise RuntimeError("tide_fits_read_image(%s) = %d: %s"
                           % (spec, st, LIB.tide_error_detail().decode()))
    h, w = im.height, im.width
    pix = np.ctypeslib.as_array(im.pix, shape=(h * im.stride,)).reshape(h, im.stride)[:, :w].copy()
    mask = np.ctypeslib.as_array(im.mask, shape=(h * im.stride,)).reshape(h, im.stride)[:, :w].copy()
    LIB.tide_image_free(None, ctypes.byref(im))
    return pix, mask


def funpack(path, tmpdir):
    out = os.path.join(tmpdir, "funpacked_" + os.path.basename(path).replace(".fz", "") + ".fits")
    if os.path.exists(out):
        os.unlink(out)
    subprocess.run(["funpack", "-O", out, path], check=True, capture_output=True)
    return out


def oracle(path):
    """The first image HDU of an uncompressed file, BSCALE/BZERO and BLANK applied in float64
    by astropy, then cast to float32 once."""
    with fits.open(path) as hl:
        for hdu in hl:
            if hdu.data is not None and hdu.header.get("NAXIS", 0) >= 2:
                data = hdu.data.astype(np.float64)
                blank = hdu.header.get("BLANK")
                if blank is not None and not np.issubdtype(hdu.data.dtype, np.floating):
                    # astropy applies scaling; find blanks on the raw values
                    raw = fits.getdata(path, ext=hl.index_of(hdu), do_not_scale_image_data=True)
                    data[raw == blank] = np.nan
                return data.astype(np.float32)
    raise RuntimeError("no image in " + path)


def same(name, got, want):
    pix, mask = got
    ok_shape = pix.shape == want.shape
    check(ok_shape, "%s: shape %s vs funpack %s" % (name, pix.shape, want.shape))
    if not ok_shape:
        return
    nan_t, nan_f = np.isnan(pix), np.isnan(want)
    check(np.array_equal(nan_t, nan_f), "%s: NaN at %d pixels, funpack %d (%d differ)"
          % (name, nan_t.sum(), nan_f.sum(), (nan_t != nan_f).sum()))
    check(np.array_equal((mask & 1) != 0, nan_t), "%s: NODATA mask bit != NaN" % name)
    fin = ~nan_f & ~nan_t
    diff = (pix[fin] != want[fin]).sum()
    check(diff == 0, "%s: %d pixels differ from funpack (max |d| %g)"
          % (name, diff, np.max(np.abs(pix[fin].astype(np.float64) - want[fin])) if diff else 0))
    # bit-for-bit, signed zeros included
    check(np.array_equal(pix[fin].view(np.uint32), want[fin].view(np.uint32)),
          "%s: not bit-identical" % name)


def funpack_unreliable(fz, has_nulls):
    """cfitsio 4.2.0's funpack scrambles a tile of a quantized float image when the tile spans
    several rows and holds a null pixel (rows of the tile land at the wrong place, the rest is
    zero; e.g. compressed_with_nan.fits, 6x6 tiles). For those files the oracle is astropy's
    own decoder (a separate copy of the algorithm) on every non-null pixel, plus the known null
    positions. Returns the ZTILE2 when that applies, else 0."""
    with fits.open(fz, disable_image_compression=True) as hl:
        for h in hl:
            if h.header.get("ZIMAGE") and h.header.get("ZBITPIX", 0) < 0 and has_nulls:
                rows = h.header.get("ZTILE2", 1)
                if rows > 1 and h.header.get("ZQUANTIZ", "") != "NONE":
                    return rows
    return 0


def same_as_astropy(name, got, fz, null_mask):
    """tide equals astropy's decoding (cast to float32) off the nulls, NaN exactly on them."""
    pix, mask = got
    ap = fits.getdata(fz).astype(np.float32)
    check(pix.shape == ap.shape, "%s: shape" % name)
    if pix.shape != ap.shape:
        return
    check(np.array_equal(np.isnan(pix), null_mask), "%s: NaN at %d pixels, expected %d"
          % (name, np.isnan(pix).sum(), null_mask.sum()))
    check(np.array_equal((mask & 1) != 0, null_mask), "%s: NODATA mask" % name)
    ok = ~null_mask
    check(np.array_equal(pix[ok].view(np.uint32), ap[ok].view(np.uint32)),
          "%s: %d pixels differ from astropy" % (name, (pix[ok] != ap[ok]).sum()))


def is_compressed(path):
    with fits.open(path, disable_image_compression=True) as hl:
        return any(h.header.get("ZIMAGE") for h in hl)


def shared_files(tmpdir):
    files = sorted(glob.glob(os.path.join(DATA, "compressed", "*.fits*")))
    check(len(files) >= 9, "expected the 9 shared compressed/ files, found %d" % len(files))
    for path in files:
        name = os.path.basename(path)
        got = tide_read(path)
        if name == "compressed_with_nan.fits" and funpack_unreliable(path, True):
            nulls = np.zeros((12, 12), bool)
            nulls[1, 1] = True  # the file's one NaN (numpy [1,1]: FITS pixel [2,2])
            same_as_astropy(name, got, path, nulls)
            fp = oracle(funpack(path, tmpdir))
            print("    note: funpack %s this file (%d pixels differ from tide)"
                  % ("agrees on" if np.array_equal(fp, got[0], equal_nan=True) else "mis-decodes",
                     (~((fp == got[0]) | (np.isnan(fp) & np.isnan(got[0])))).sum()))
        elif is_compressed(path):
            same(name, got, oracle(funpack(path, tmpdir)))
        else:
            same(name + " (plain)", got, oracle(path))
        print("ok  %-36s %dx%d, %d NaN" % (name, got[0].shape[1], got[0].shape[0],
                                          np.isnan(got[0]).sum()))
    ref = tide_read(os.path.join(DATA, "compressed", "m13.fits"))[0]
    for c in ("rice", "gzip", "hcomp", "plio"):
        got = tide_read(os.path.join(DATA, "compressed", "m13_%s.fits" % c))[0]
        check(np.array_equal(got, ref), "m13_%s.fits != m13.fits" % c)
    tess = tide_read(os.path.join(DATA, "compressed", "tess_diff_rice_dither1.fits.fz"))[0]
    check(np.isnan(tess).sum() == 77930, "TESS: %d NaN, expected 77930" % np.isnan(tess).sum())
    d2 = tide_read(os.path.join(DATA, "compressed", "test_rice_dither2_seed42.fits.fz"))[0]
    plain = fits.getdata(os.path.join(DATA, "compressed", "test_rice_dither2_seed42.fits"))
    check(np.array_equal(d2, plain.astype(np.float32)), "dither2 .fz != its .fits")
    nan = tide_read(os.path.join(DATA, "compressed", "compressed_with_nan.fits"))[0]
    check(np.isnan(nan).sum() == 1 and np.isnan(nan[1, 1]), "compressed_with_nan: one NaN at [1,1]")
    r = np.round(nan.astype(np.float64)).ravel()
    check(np.array_equal(np.delete(r, 13), np.delete(np.arange(144.0), 13)),
          "compressed_with_nan: values 0..143 after rounding")


def made_files(tmpdir):
    """fpack every codec and quantization on awkward images, compare with funpack."""
    rng = np.random.default_rng(7)
    h, w = 131, 257  # prime-ish, not multiples of any tile
    sky = (1000 + 30 * rng.standard_normal((h, w))).astype(np.float32)
    sky[40:45, 100:110] += 5e4
    sky[rng.integers(0, h, 60), rng.integers(0, w, 60)] = np.nan
    sky[5, :20] = 0.0  # exact zeros: SUBTRACTIVE_DITHER_2 keeps them
    sky[6, 3] = np.inf
    f32 = os.path.join(tmpdir, "f32.fits")
    fits.PrimaryHDU(sky).writeto(f32, overwrite=True)
    f64 = os.path.join(tmpdir, "f64.fits")
    fits.PrimaryHDU(sky.astype(np.float64) * 1.0000001).writeto(f64, overwrite=True)
    i16 = os.path.join(tmpdir, "i16.fits")
    raw = rng.integers(0, 30000, (h, w)).astype(np.int16)
    raw[7, 7:12] = -32768
    hd = fits.PrimaryHDU(raw)
    hd.header["BLANK"] = -32768
    hd.header["BSCALE"] = 0.5
    hd.header["BZERO"] = 100.0
    hd.writeto(i16, overwrite=True)
    # astropy may rewrite scaling on write; make sure raw values and keywords are as intended
    with fits.open(i16, mode="update", do_not_scale_image_data=True) as hl:
        hl[0].data[:] = raw
        hl[0].header["BSCALE"] = 0.5
        hl[0].header["BZERO"] = 100.0
        hl[0].header["BLANK"] = -32768
    u8 = os.path.join(tmpdir, "u8.fits")
    fits.PrimaryHDU(rng.integers(0, 200, (h, w)).astype(np.uint8)).writeto(u8, overwrite=True)
    i32 = os.path.join(tmpdir, "i32.fits")
    fits.PrimaryHDU(rng.integers(-2**30, 2**30, (h, w)).astype(np.int32)).writeto(i32, overwrite=True)
    pos16 = os.path.join(tmpdir, "pos16.fits")
    fits.PrimaryHDU(rng.integers(0, 4096, (h, w)).astype(np.int16)).writeto(pos16, overwrite=True)

    cases = [
        (f32, ["-r"]), (f32, ["-r", "-q", "2"]), (f32, ["-r", "-qz", "4"]), (f32, ["-r", "-q0", "4"]),
        (f32, ["-h"]), (f32, ["-g1"]), (f32, ["-g2"]), (f32, ["-g", "-q", "0"]),
        (f32, ["-r", "-t", "64,32"]), (f32, ["-r", "-w"]), (f32, ["-r", "-qt", "4"]),
        (f64, ["-r"]), (f64, ["-qz", "1"]), (f64, ["-g2", "-q", "0"]), (f64, ["-h"]),
        (i16, ["-r"]), (i16, ["-g1"]), (i16, ["-g2"]), (i16, ["-h"]), (i16, ["-h", "-s", "2.5"]),
        (u8, ["-r"]), (u8, ["-p"]), (u8, ["-g2", "-t", "17,9"]), (u8, ["-h"]),
        (i32, ["-r"]), (i32, ["-g2"]), (i32, ["-h"]), (pos16, ["-p"]), (pos16, ["-h", "-w"]),
    ]
    for k, (src, opts) in enumerate(cases):
        fz = os.path.join(tmpdir, "case%02d.fits.fz" % k)
        if os.path.exists(fz):
            os.unlink(fz)
        p = subprocess.run(["fpack"] + opts + ["-O", fz, src], capture_output=True, text=True)
        name = "%s %s" % (os.path.basename(src), " ".join(opts))
        if p.returncode != 0 or not os.path.exists(fz):
            check(False, "fpack %s failed: %s" % (name, p.stderr.strip()))
            continue
        with fits.open(fz, disable_image_compression=True) as hl:
            hdr = hl[1].header
            desc = "%s %s" % (hdr.get("ZCMPTYPE"), hdr.get("ZQUANTIZ", ""))
        src_data = fits.getdata(src).astype(np.float64)
        if funpack_unreliable(fz, bool((~np.isfinite(src_data)).any())):
            same_as_astropy(name, tide_read(fz), fz, ~np.isfinite(src_data))
            desc += " (funpack unreliable here: astropy oracle)"
        else:
            same(name, tide_read(fz), oracle(funpack(fz, tmpdir)))
        if src in (f32, f64):  # against the truth: within the noise (sigma 30), funpack's
            # scrambled tiles are off by ~1000
            t = tide_read(fz)[0].astype(np.float64)
            fin = np.isfinite(src_data)
            err = np.max(np.abs(t[fin] - src_data[fin]))
            check(err <= 30.0, "%s: max |tide - original| = %g > 30" % (name, err))
        # by index and with a section: the same pixels
        sec = tide_read(fz + "[1][10:60,3:50]")[0]
        full = tide_read(fz + "[1]")[0]
        check(np.array_equal(sec, full[2:50, 9:60], equal_nan=True), "%s: section" % name)
        print("ok  %-28s -> %s" % (name, desc))


def main():
    for tool in ("funpack", "fpack"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            print("SKIP: %s not installed (Debian libcfitsio-bin)" % tool)
            return 77
    with tempfile.TemporaryDirectory() as tmpdir:
        shared_files(tmpdir)
        made_files(tmpdir)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all exact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
