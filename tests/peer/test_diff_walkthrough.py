"""The classic difference-imaging walkthrough (issue 5, "Accuracy"): two 256x256 frames of the
same sky with three static stars and one faint mover; the science frame is blurred by an extra
Gaussian of sigma 0.65 px and shifted by (20, -32) px, its TAN WCS updated to match. After
`tide diff SCI TMPL -o DIR`:

  - static stars cancel: |difference| summed in a 3x3 box at each star is within 3x its
    propagated noise (sqrt of the summed VAR plane);
  - the kernel sums to 1 +- 0.01 (both frames have the same photometric scale);
  - the mover's two lobes are recovered within 0.1 px of their true positions on the
    template grid (positive lobe: the science position; negative: the template position).

Frames are rendered with pixel-integrated Gaussians (erf), Poisson-like Gaussian noise with
gain 1, fixed seed. Run with /usr/bin/python3 (astropy, numpy); env TIDE_BIN."""
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from astropy.io import fits
from astropy.wcs import WCS

N = 256
SHIFT = (20.0, -32.0)          # science pixel = template pixel + SHIFT
SIG_T = 1.2                    # template PSF sigma, px
SIG_S = math.hypot(SIG_T, 0.65)  # science: template PSF blurred by sigma 0.65
SKY_T, SKY_S = 1000.0, 1150.0
STARS = [(60.3, 90.7, 150000.0), (150.6, 180.2, 100000.0), (200.2, 70.5, 70000.0)]  # template px
MOVER_T = (110.25, 130.4)      # mover in the template (0-based template px)
MOVER_STEP = (2.9, 2.1)        # its motion between the epochs (template px)
MOVER_FLUX = 12000.0


def erf_profile(c, s, n):
    e = np.array([math.erf((k - c) / (math.sqrt(2) * s)) for k in np.arange(n + 1) - 0.5])
    return 0.5 * np.diff(e)


def render(sources, sigma, sky, rng):
    img = np.full((N, N), sky)
    for x, y, f in sources:
        img += f * np.outer(erf_profile(y, sigma, N), erf_profile(x, sigma, N))
    return (img + rng.normal(size=img.shape) * np.sqrt(img)).astype(np.float32)


def header(crpix_shift):
    w = WCS(naxis=2)
    w.wcs.ctype = ["RA---TAN", "DEC--TAN"]
    w.wcs.crval = [150.0, 2.2]
    w.wcs.crpix = [128.5 + crpix_shift[0], 128.5 + crpix_shift[1]]
    s = 0.27 / 3600
    w.wcs.cd = [[-s, 0.0], [0.0, s]]
    h = w.to_header()
    h["GAIN"] = 1.0
    h["SATURATE"] = 1e9
    return h


def main():
    tide = os.environ.get("TIDE_BIN")
    if not tide or not os.path.exists(tide):
        print("TIDE_BIN not set")
        return 77
    rng = np.random.default_rng(20261129)
    mover_s_t = (MOVER_T[0] + MOVER_STEP[0], MOVER_T[1] + MOVER_STEP[1])
    tmpl = render(STARS + [(MOVER_T[0], MOVER_T[1], MOVER_FLUX)], SIG_T, SKY_T, rng)
    sci_src = [(x + SHIFT[0], y + SHIFT[1], f) for x, y, f in STARS]
    sci_src.append((mover_s_t[0] + SHIFT[0], mover_s_t[1] + SHIFT[1], MOVER_FLUX))
    sci = render(sci_src, SIG_S, SKY_S, rng)
    work = tempfile.mkdtemp(prefix="tide_diff_walk_")
    try:
        sp, tp, out = (os.path.join(work, n) for n in ("sci.fits", "tmpl.fits", "out"))
        fits.PrimaryHDU(sci, header(SHIFT)).writeto(sp)
        fits.PrimaryHDU(tmpl, header((0, 0))).writeto(tp)
        r = subprocess.run([tide, "diff", sp, tp, "-o", out, "--backend", "cpu"],
                           capture_output=True, text=True)
        print(r.stdout, r.stderr)
        if r.returncode != 0:
            print("FAIL: tide diff exited", r.returncode)
            return 1
        fails = []
        with fits.open(os.path.join(out, "difference.fits")) as h:
            d = h[0].data.astype(float)
            # the propagated variance (VAR is scaled by VARSCALE for PSF-sized sums)
            var = h["VAR"].data.astype(float) / float(h[0].header.get("VARSCALE", 1.0))
            mask = h["MASK"].data
        for x, y, f in STARS:
            ix, iy = int(round(x)), int(round(y))
            box = d[iy - 1:iy + 2, ix - 1:ix + 2]
            vbox = var[iy - 1:iy + 2, ix - 1:ix + 2]
            res, sig = box.sum(), math.sqrt(vbox.sum())
            ok = np.isfinite(res) and abs(res) <= 3 * sig
            print(f"star ({x:.1f},{y:.1f}) flux {f:.0f}: 3x3 residual {res:.1f} noise {sig:.1f}"
                  f" ratio {abs(res) / sig:.2f} mask {int(np.bitwise_or.reduce(mask[iy, ix].ravel()))}")
            if not ok:
                fails.append(f"star at ({x},{y}) does not cancel: {res:.1f} > 3 x {sig:.1f}")
        with fits.open(os.path.join(out, "kernel.fits")) as h:
            ksum = float(h[0].header["KSUM"])
            kpix = float(h[0].data.sum())
        print(f"kernel sum {ksum:.5f} (pixels {kpix:.5f})")
        if abs(ksum - 1) > 0.01:
            fails.append(f"kernel sum {ksum} not within 1 +- 0.01")
        with fits.open(os.path.join(out, "candidates.fits")) as h:
            c = h[1].data
        pos_true = (mover_s_t[0] + 1, mover_s_t[1] + 1)  # FITS 1-based
        neg_true = (MOVER_T[0] + 1, MOVER_T[1] + 1)
        best, bd = None, 1e9
        for row in c:
            dd = math.hypot(row["X_IMAGE"] - 0.5 * (pos_true[0] + neg_true[0]),
                            row["Y_IMAGE"] - 0.5 * (pos_true[1] + neg_true[1]))
            if dd < bd:
                best, bd = row, dd
        print(f"{len(c)} candidates; nearest to the mover at {bd:.2f} px")
        if best is None or bd > 5:
            fails.append("no candidate at the mover")
        else:
            ep = math.hypot(best["DIP_XPOS"] - pos_true[0], best["DIP_YPOS"] - pos_true[1])
            en = math.hypot(best["DIP_XNEG"] - neg_true[0], best["DIP_YNEG"] - neg_true[1])
            print(f"mover: + lobe ({best['DIP_XPOS']:.3f},{best['DIP_YPOS']:.3f}) true "
                  f"({pos_true[0]:.3f},{pos_true[1]:.3f}) err {ep:.3f} px; - lobe "
                  f"({best['DIP_XNEG']:.3f},{best['DIP_YNEG']:.3f}) true ({neg_true[0]:.3f},"
                  f"{neg_true[1]:.3f}) err {en:.3f} px; status {best['FIT_STATUS']}, "
                  f"flux {best['DIP_FLUX']:.1f} (true {MOVER_FLUX:.0f})")
            if not (ep <= 0.1 and en <= 0.1):
                fails.append(f"mover lobes off: {ep:.3f}, {en:.3f} px (limit 0.1)")
        for name in ("kernel.png", "matched.png", "difference.png", "candidates.png"):
            with open(os.path.join(out, name), "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    fails.append(f"{name} is not a PNG")
        if fails:
            print("FAIL:\n  " + "\n  ".join(fails))
            return 1
        print("PASS")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
