"""Peer test: tide's L.A.Cosmic pass against astroscrappy (Debian python3-astroscrappy, the
optimised L.A.Cosmic of Curtis McCully, van Dokkum 2001) on a `tide sim` frame.

Both run with the same parameters (sigclip 4.5, sigfrac 0.3, objlim 5, 4 iterations, gain,
read noise, bias removed) and true (non-separable) medians with median cleaning
(astroscrappy sepmed=False, cleantype='medmask', fsmode='median'); tide's hot/cold pass is
off so that both flag hot pixels as cosmic rays, and so is the bad-column pass (astroscrappy
flags bad columns as cosmic rays). Pixels within 3 px of saturation are left
out (the two protect saturated stars differently). Required: each mask contains >= 90% of
the other's pixels, and >= 90% of the simulator's injected cosmic-ray pixels are in tide's.
tide runs through libtide (ctypes) on the context's default backend.
Skips (77) when astroscrappy is not installed."""
import ctypes as C
import os
import subprocess
import sys
import tempfile

import numpy as np
from astropy.io import fits

try:
    import astroscrappy
except ImportError:
    print("SKIP: python3-astroscrappy is not installed")
    sys.exit(77)

MASK_SATURATED, MASK_HOT, MASK_COSMIC, MASK_BLEED = 2, 8, 32, 64


class Image(C.Structure):
    _fields_ = [("width", C.c_int64), ("height", C.c_int64), ("stride", C.c_int64),
                ("pix", C.POINTER(C.c_float)), ("mask", C.POINTER(C.c_uint16)),
                ("var", C.POINTER(C.c_float)), ("location", C.c_int), ("owns", C.c_int)]


class Params(C.Structure):
    _fields_ = [("gain", C.c_double), ("rdnoise", C.c_double), ("bias", C.c_double),
                ("saturation", C.c_double), ("bleed", C.c_int), ("bleed_axis", C.c_int),
                ("bleed_frac", C.c_double), ("bleed_grow", C.c_int), ("badcol", C.c_int),
                ("badcol_sigma", C.c_double), ("badcol_minrun", C.c_int), ("hot", C.c_int),
                ("cold", C.c_int), ("hot_sigma", C.c_double), ("cold_sigma", C.c_double),
                ("hot_isolation", C.c_double), ("hot_ratio", C.c_double), ("cosmic", C.c_int),
                ("sigclip", C.c_double), ("sigfrac", C.c_double), ("objlim", C.c_double),
                ("niter", C.c_int), ("sat_protect", C.c_int), ("inpaint", C.c_int),
                ("inpaint_bits", C.c_uint16), ("skip_bits", C.c_uint16),
                ("noise_rms", C.c_double), ("psf_fwhm", C.c_double), ("psf_width", C.c_double),
                ("psf_round", C.c_double)]


class Report(C.Structure):
    _fields_ = [("n", C.c_int64 * 7), ("iters", C.c_int), ("per_iter", C.c_int64 * 16),
                ("ms", C.c_double * 7)]


def main():
    lib = C.CDLL(os.environ["TIDE_LIB"])
    lib.tide_cosmetics_params_size.restype = C.c_int64
    assert lib.tide_cosmetics_params_size() == C.sizeof(Params), "Params layout drifted"
    lib.tide_error_detail.restype = C.c_char_p
    tmp = tempfile.mkdtemp()
    frame = os.path.join(tmp, "f.fits")
    subprocess.run([os.environ["TIDE_BIN"], "sim", "-o", frame, "--mask", "--width", "1024",
                    "--height", "1024", "--nstars", "1500", "--mag-bright", "9.5",
                    "--mag-faint", "18", "--cr-rate", "2000", "--seed", "17", "--threads", "0"],
                   check=True)
    with fits.open(frame) as hl:
        data = hl[0].data.astype(np.float32)
        h = hl[0].header
        truth = hl["MASK"].data.astype(np.uint16)
    gain, rdn, bias, sat = h["GAIN"], h["RDNOISE"], h["SIMBIAS"], h["SATURATE"]
    satlev = bias + 0.98 * (sat - bias)

    # tide
    ctx = C.c_void_p()
    assert lib.tide_ctx_create(C.byref(ctx), None) == 0
    pix = np.ascontiguousarray(data.copy())
    mask = np.zeros(pix.shape, np.uint16)
    im = Image(pix.shape[1], pix.shape[0], pix.shape[1],
               pix.ctypes.data_as(C.POINTER(C.c_float)),
               mask.ctypes.data_as(C.POINTER(C.c_uint16)), None, 0, 0)
    p = Params()
    lib.tide_cosmetics_params_default(C.byref(p))
    p.gain, p.rdnoise, p.bias, p.saturation = gain, rdn, bias, satlev
    p.hot = p.cold = p.badcol = 0
    rep = Report()
    st = lib.tide_cosmetics_apply(ctx, C.byref(im), C.byref(p), C.byref(rep))
    assert st == 0, lib.tide_error_detail()
    lib.tide_ctx_destroy(ctx)
    tide_cr = (mask & MASK_COSMIC) != 0

    # astroscrappy on the bias-subtracted frame
    ref, _ = astroscrappy.detect_cosmics(data - np.float32(bias), sigclip=4.5, sigfrac=0.3,
                                         objlim=5.0, gain=gain, readnoise=rdn,
                                         satlevel=satlev - bias, niter=4, sepmed=False,
                                         cleantype="medmask", fsmode="median")
    ref = ref.astype(bool)

    # leave out pixels within 3 px of saturation/bleed (either tool's protection)
    sat_any = (mask & (MASK_SATURATED | MASK_BLEED)) != 0
    near = np.zeros_like(sat_any)
    ys, xs = np.nonzero(sat_any)
    for dy in range(-3, 4):
        for dx in range(-3, 4):
            near[np.clip(ys + dy, 0, near.shape[0] - 1), np.clip(xs + dx, 0, near.shape[1] - 1)] = True
    a, b = tide_cr & ~near, ref & ~near
    both = np.count_nonzero(a & b)
    rec = both / max(1, np.count_nonzero(b))
    prec = both / max(1, np.count_nonzero(a))
    injected = ((truth & MASK_COSMIC) != 0) & ~near & ((truth & ~MASK_COSMIC) == 0)
    found = np.count_nonzero(injected & a) / max(1, np.count_nonzero(injected))
    found_ref = np.count_nonzero(injected & b) / max(1, np.count_nonzero(injected))
    print(f"tide {np.count_nonzero(a)} px, astroscrappy {np.count_nonzero(b)} px, both {both}: "
          f"{100 * rec:.2f}% of astroscrappy's in tide's, {100 * prec:.2f}% of tide's in "
          f"astroscrappy's; injected CR pixels found: tide {100 * found:.2f}%, "
          f"astroscrappy {100 * found_ref:.2f}% (tide {rep.ms[4]:.0f} ms)")
    fail = []
    if rec < 0.90:
        fail.append(f"only {rec:.3f} of astroscrappy's pixels in tide's mask")
    if prec < 0.90:
        fail.append(f"only {prec:.3f} of tide's pixels in astroscrappy's mask")
    if found < 0.90:
        fail.append(f"only {found:.3f} of injected CR pixels found")
    for f in fail:
        print("FAIL:", f)
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
