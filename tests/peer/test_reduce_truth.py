"""Truth test of `tide reduce` on simulated 2048x2048 frames (issue 3, "Against truth").

Frames come from `tide sim` (Moffat PSF varying over the field, sky gradient, bias, Poisson and
read noise, saturation with bleed trails, cosmic rays, hot pixels, bad columns) with its truth
catalog, and go through `tide reduce` with default parameters (only --bias: the simulator keeps
its bias level in the frame). Measured against truth, every figure is printed, pass or not:

  completeness     >= 98 % of clean point sources with S/N >= 10 detected within 1 px
  false detections <= 1 per 10^6 pixels at 5 sigma, on a pure-noise frame (sky, gradient,
                   Poisson and read noise, no objects, no defects); also reported: unmatched
                   detections on the star frame (defects and deblending fragments included)
  flux bias        |median(F / F_true - 1)| < 0.5 % at S/N >= 50 for FLUX_OPT and FLUX_PSF
  centroids        RMS of the XWIN/YWIN offset (radial) <= 0.05 x FWHM at S/N >= 50
  FWHM             header FWHM and corner FWHMs within 2 % of the truth PSF field there
  flux errors      pulls (F - F_true) / FLUXERR with RMS 1 +- 0.1 for FLUX_PSF and FLUX_OPT
                   (5 <= S/N <= 200, where the PSF and aperture-correction model errors are
                   small against the noise)

"Clean" sources: point sources (star, variable), not saturated, at least 8 px inside the frame,
no other truth object brighter than 1 % of their flux within 15 px (so the test measures the
stages, not blending), and FLAGS == 0 for the flux, centroid and pull figures. The S/N of a
truth source is that of an aperture of radius 1.5 FWHM with the known sky, gain and read noise.
A crowded frame (30000 stars) is measured the same way and reported ("info"/"miss"), not
enforced. Runtime: three `tide sim` + `tide reduce` runs, about 30 s on 2 cores."""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from astropy.io import fits

W = H = 2048


def run(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        print("command failed:", " ".join(args), "\n", r.stdout, r.stderr)
        sys.exit(1)
    return r.stdout


def match(xt, yt, xc, yc, radius):
    """For each truth position, the index of the nearest catalog source within radius (-1)."""
    idx = np.full(len(xt), -1)
    if len(xc) == 0:
        return idx
    order = np.argsort(yc)
    ys = yc[order]
    for i in range(len(xt)):
        lo, hi = np.searchsorted(ys, yt[i] - radius), np.searchsorted(ys, yt[i] + radius)
        if hi <= lo:
            continue
        cand = order[lo:hi]
        d = np.hypot(xc[cand] - xt[i], yc[cand] - yt[i])
        k = np.argmin(d)
        if d[k] <= radius:
            idx[i] = cand[k]
    return idx


def robust_rms(v):
    v = v[np.isfinite(v)]
    return 1.4826 * np.median(np.abs(v - np.median(v))) if len(v) else np.nan


def clipped_rms(v, k=5.0):
    v = v[np.isfinite(v)]
    v = v[np.abs(v) < k]
    return np.sqrt(np.mean(v ** 2)) if len(v) else np.nan


def measure(tide, tmp, tag, seed, nstars, enforce):
    """Reduce one simulated frame and compare with its truth; returns (ok, report lines).
    With enforce False every figure is reported as info."""
    frame, truth, cat = (os.path.join(tmp, tag + n) for n in ("_f.fits", "_t.fits", "_c.fits"))
    run([tide, "sim", "--seed", str(seed), "--nstars", str(nstars), "-o", frame, "--truth",
         truth])
    h = fits.getheader(frame)
    run([tide, "reduce", frame, "-o", cat, "--bias", str(h["SIMBIAS"]), "--backend", "cpu"])
    c = fits.open(cat)[1]
    d, ch = c.data, c.header
    t = fits.getdata(truth, 1)

    gain, rn, sky = h["GAIN"], h["RDNOISE"], h["SIMSKY"]
    X, Y, F, FW = t["X_TRUE"], t["Y_TRUE"], t["FLUX"], t["FWHM"]
    Fe = t["FLUX_E"]
    npix = np.pi * (1.5 * FW) ** 2
    snr = Fe / np.sqrt(Fe + npix * (sky * gain + rn ** 2))
    types = np.char.strip(t["TYPE"].astype(str))
    point = (types == "star") | (types == "variable")
    inside = (X > 8) & (Y > 8) & (X < W - 8) & (Y < H - 8)
    iso = np.ones(len(t), bool)
    order = np.argsort(Y)
    ys = Y[order]
    for i in range(len(t)):
        lo, hi = np.searchsorted(ys, Y[i] - 15), np.searchsorted(ys, Y[i] + 15)
        nb = order[lo:hi]
        nb = nb[nb != i]
        dd = np.hypot(X[nb] - X[i], Y[nb] - Y[i])
        if np.any((dd < 15) & (F[nb] > 0.01 * F[i])):
            iso[i] = False
    clean = point & inside & iso & (t["SATURATED"] == 0)

    xc, yc = d["XWIN_IMAGE"], d["YWIN_IMAGE"]
    m = match(X, Y, xc, yc, 1.0)
    ok = True
    report = []

    def check(name, value, cond, target):
        nonlocal ok
        status = "ok" if cond else "FAIL"
        if not enforce:
            status = "info" if cond else "miss"
        elif not cond:
            ok = False
        report.append(f"{status:4s} [{tag}] {name}: {value} (target {target})")

    # completeness
    sel = clean & (snr >= 10)
    comp = np.mean(m[sel] >= 0)
    check("completeness at S/N >= 10", f"{comp:.4f} of {sel.sum()}", comp >= 0.98, ">= 0.98")
    sel_all = point & inside & (t["SATURATED"] == 0) & (snr >= 10)
    report.append(f"info [{tag}] completeness, all unsaturated point sources S/N >= 10 (blends "
                  f"included): {np.mean(m[sel_all] >= 0):.4f} of {sel_all.sum()}")
    for lo_, hi_ in ((5, 7), (7, 10), (10, 20), (20, 50)):
        s = clean & (snr >= lo_) & (snr < hi_)
        if s.sum():
            report.append(f"info [{tag}] completeness at {lo_} <= S/N < {hi_}: {np.mean(m[s] >= 0):.4f} "
                          f"of {s.sum()}")

    # unmatched detections on the star frame (any truth object within 2 px)
    mt = match(xc, yc, X, Y, 2.0)
    unmatched = np.sum(mt < 0)
    report.append(f"info [{tag}] unmatched detections on the star frame: {unmatched} of {len(d)} "
                  f"({unmatched / (W * H / 1e6):.2f} per 10^6 px; defects, bleed trails and "
                  f"deblending fragments included; {np.sum((mt < 0) & (d['FLAGS'] == 0))} with "
                  f"FLAGS == 0)")

    good = (m >= 0) & clean
    gi = m[good]
    fl = d["FLAGS"][gi] == 0
    bright = (snr[good] >= 50) & fl

    # flux bias
    for col in ("FLUX_OPT", "FLUX_PSF", "FLUX_AUTO"):
        r = d[col][gi][bright] / F[good][bright] - 1
        r = r[np.isfinite(r)]
        med = np.median(r) if len(r) else np.nan
        if col == "FLUX_AUTO":
            report.append(f"info [{tag}] median {col} bias at S/N >= 50: {100 * med:+.3f} % "
                          f"({len(r)} stars; Kron apertures miss light by design)")
        else:
            check(f"median {col} bias at S/N >= 50", f"{100 * med:+.3f} % ({len(r)} stars)",
                  abs(med) < 0.005, "< 0.5 %")

    # centroids
    dx = (xc[gi] - X[good])[bright]
    dy = (yc[gi] - Y[good])[bright]
    fwhm0 = ch["FWHM"]
    rad = np.sqrt(np.mean(dx ** 2 + dy ** 2))
    check("centroid RMS (radial) at S/N >= 50", f"{rad:.4f} px = {rad / fwhm0:.4f} FWHM "
          f"(per axis {np.sqrt(np.mean(dx ** 2)):.4f}, {np.sqrt(np.mean(dy ** 2)):.4f} px; "
          f"median offset {np.median(dx):+.4f}, {np.median(dy):+.4f})",
          rad <= 0.05 * fwhm0, "<= 0.05 FWHM")

    # FWHM at the centre and corners: the truth field is quadratic in x, y (sim_psf.c), so
    # a least-squares quadratic through the truth FWHM column gives it exactly anywhere.
    A = np.c_[np.ones_like(X), X, Y, X * X, X * Y, Y * Y]
    co = np.linalg.lstsq(A, FW, rcond=None)[0]

    def fw_at(px, py):  # FITS 1-based
        return co @ [1, px, py, px * px, px * py, py * py]

    for key, (px, py) in (("FWHM", ((W + 1) / 2, (H + 1) / 2)), ("FWHMLL", (1, 1)),
                          ("FWHMLR", (W, 1)), ("FWHMUL", (1, H)), ("FWHMUR", (W, H))):
        tv = fw_at(px, py)
        rel = ch[key] / tv - 1
        check(f"{key}", f"{ch[key]:.4f} px vs truth {tv:.4f} ({100 * rel:+.2f} %)",
              abs(rel) <= 0.02, "within 2 %")

    # pulls
    mid = (snr[good] >= 5) & (snr[good] <= 200) & fl
    for col in ("FLUX_PSF", "FLUX_OPT", "FLUX_AUTO"):
        pull = (d[col][gi][mid] - F[good][mid]) / d["FLUXERR" + col[4:]][gi][mid]
        pull = pull[np.isfinite(pull)]
        cr, rr = clipped_rms(pull), robust_rms(pull)
        txt = f"RMS {cr:.3f} (5-sigma clipped), robust {rr:.3f}, mean {np.mean(pull):+.3f} " \
              f"({len(pull)} stars)"
        if col == "FLUX_AUTO":
            report.append(f"info [{tag}] {col} pulls: {txt} (biased: Kron misses light)")
        else:
            check(f"{col} pulls", txt, abs(cr - 1) <= 0.1, "1 +- 0.1")

    report.insert(0, f"[{tag}] {nstars} stars: {len(d)} sources in the catalog; {clean.sum()} "
                     f"clean truth point sources; PSFMODEL {ch['PSFMODEL']}, "
                     f"{ch.get('PSFNSTAR')} PSF stars")
    return ok, report


def main():
    tide = os.environ["TIDE_BIN"]
    tmp = tempfile.mkdtemp(prefix="tide_reduce_truth_")
    try:
        return run_all(tide, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_all(tide, tmp):
    ok, report = measure(tide, tmp, "sparse", 7, 4000, True)
    # A crowded frame (30000 stars: blends everywhere) is reported, not enforced: the targets
    # are met on isolated stars of the sparse frame; see the report for the crowded figures.
    _, crowded = measure(tide, tmp, "crowded", 17, 30000, False)
    report += crowded
    h = fits.getheader(os.path.join(tmp, "sparse_f.fits"))

    def check(name, value, cond, target):
        nonlocal ok
        if not cond:
            ok = False
        report.append(f"{'ok' if cond else 'FAIL':4s} {name}: {value} (target {target})")

    # false detections on a pure-noise frame
    noise, ncat = os.path.join(tmp, "n.fits"), os.path.join(tmp, "nc.fits")
    run([tide, "sim", "--seed", "8", "--nstars", "0", "--ngal", "0", "--no-defects",
         "--nmoving", "0", "-o", noise])
    run([tide, "reduce", noise, "-o", ncat, "--bias", str(h["SIMBIAS"]), "--backend", "cpu"])
    nd = len(fits.getdata(ncat, 1))
    per = nd / (W * H / 1e6)
    check("false detections at 5 sigma on a pure-noise frame", f"{nd} ({per:.2f} per 10^6 px)",
          per <= 1.0, "<= 1 per 10^6 px")

    print("\n".join(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
