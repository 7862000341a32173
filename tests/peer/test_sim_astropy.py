"""Peer test: astropy reads `tide sim` output.

- The frame's header has the camera keywords (GAIN, RDNOISE, SATURATE, EXPTIME, FILTER,
  DATE-OBS, FOCALEN, XPIXSZ, YPIXSZ, RA, DEC, OBJCTRA, OBJCTDEC) and the SIM* parameters.
- astropy's WCS (wcslib, with SIP) maps the truth X_TRUE, Y_TRUE (FITS 1-based) to the truth
  RA, DEC within 0.01 arcsec, for both epochs; its inverse (AP/BP) maps back within 0.01 px.
- The reference catalog follows MAG_frame = MAG + SIMCOLT * COLOR within 5 MAGERR.
- On a noiseless frame (--no-noise --no-defects --sky 0 --bias 0) an isolated star's pixels
  sum to its truth FLUX within 1 %.
- The frame's median is near bias + sky and nothing exceeds SATURATE."""
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np
from astropy.io import fits
from astropy.wcs import WCS

FAIL = []


def check(cond, what):
    if not cond:
        FAIL.append(what)
        print("FAIL:", what)


def wcs_check(frame, truth, label):
    h = fits.getheader(frame)
    t = fits.getdata(truth, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = WCS(h)
    check(w.sip is not None, f"{label}: astropy sees no SIP")
    ra, dec = w.all_pix2world(t["X_TRUE"], t["Y_TRUE"], 1)
    d = np.hypot((ra - t["RA"]) * np.cos(np.radians(t["DEC"])), dec - t["DEC"]) * 3600
    print(f"{label}: {len(t)} objects, astropy pix->sky max error {d.max():.3g} arcsec")
    check(d.max() < 0.01, f"{label}: pix->sky error {d.max()} arcsec >= 0.01")
    x, y = w.all_world2pix(t["RA"], t["DEC"], 1)
    e = np.hypot(x - t["X_TRUE"], y - t["Y_TRUE"]).max()
    print(f"{label}: astropy sky->pix max error {e:.3g} px")
    check(e < 0.01, f"{label}: sky->pix error {e} px")
    # The AP/BP polynomial alone (what tools that do not iterate use), from the header cards.
    foc = w.wcs.s2p(np.column_stack([t["RA"], t["DEC"]]), 1)["imgcrd"]
    U, V = np.linalg.solve(w.wcs.cd, foc.T)
    du, dv = np.zeros_like(U), np.zeros_like(V)
    for key, val in h.items():
        for pre, acc in (("AP_", du), ("BP_", dv)):
            if key.startswith(pre) and key != pre + "ORDER":
                i, j = map(int, key[len(pre):].split("_"))
                acc += val * U ** i * V ** j
    e2 = np.hypot(U + du + h["CRPIX1"] - t["X_TRUE"], V + dv + h["CRPIX2"] - t["Y_TRUE"]).max()
    print(f"{label}: AP/BP inverse max error {e2:.3g} px")
    check(e2 < 0.01, f"{label}: AP/BP inverse error {e2} px")
    return h, t


def main():
    tide = os.environ["TIDE_BIN"]
    tmp = tempfile.mkdtemp(prefix="tide_sim_astropy_")
    try:
        p = lambda n: os.path.join(tmp, n)
        subprocess.run([tide, "sim", "--seed", "5", "--width", "1500", "--height", "1100",
                        "--nstars", "1500", "-o", p("f1.fits"), "--truth", p("t1.fits"),
                        "--refcat", p("r.fits"), "--epoch2", p("f2.fits"), "--truth2",
                        p("t2.fits")], check=True)
        h, t = wcs_check(p("f1.fits"), p("t1.fits"), "epoch 1")
        h2, t2 = wcs_check(p("f2.fits"), p("t2.fits"), "epoch 2")
        for k in ["GAIN", "RDNOISE", "SATURATE", "EXPTIME", "FILTER", "DATE-OBS", "FOCALEN",
                  "XPIXSZ", "YPIXSZ", "RA", "DEC", "OBJCTRA", "OBJCTDEC", "SIMSEED", "SIMZPADU",
                  "CTYPE1", "A_ORDER", "AP_ORDER", "BP_ORDER"]:
            check(k in h, f"header lacks {k}")
        check(h["CTYPE1"] == "RA---TAN-SIP" and h["CTYPE2"] == "DEC--TAN-SIP", "CTYPE")
        check(h2["DATE-OBS"] > h["DATE-OBS"], "epoch 2 DATE-OBS is not later")
        types2 = set(np.char.strip(t2["TYPE"].astype(str)))
        check({"transient", "moving", "variable", "star", "galaxy"} <= types2,
              f"epoch 2 types {types2}")
        check("transient" not in set(np.char.strip(t["TYPE"].astype(str))),
              "a transient in epoch 1")

        d = fits.getdata(p("f1.fits")).astype(np.float64)
        med = np.median(d)
        print(f"frame median {med:.1f}, bias+sky {h['SIMBIAS'] + h['SIMSKY']:.1f}, "
              f"max {d.max():.0f}, SATURATE {h['SATURATE']}")
        check(abs(med - (h["SIMBIAS"] + h["SIMSKY"])) < 0.1 * h["SIMSKY"], "median level")
        check(d.max() <= h["SATURATE"], "pixel above SATURATE")

        r = fits.getdata(p("r.fits"), 1)
        ids = {i: k for k, i in enumerate(t["ID"])}
        c = fits.getheader(p("t1.fits"), 1).get("SIMCOLT", 0.05)
        dev = [abs(r["MAG"][j] + c * r["COLOR"][j] - t["MAG"][ids[i]]) / r["MAGERR"][j]
               for j, i in enumerate(r["ID"]) if i in ids]
        print(f"refcat: {len(r)} rows, {len(dev)} in frame, max |dev|/err {max(dev):.2f}")
        check(len(dev) > 20 and max(dev) < 5, "reference catalog colour term")

        # Noiseless flux conservation through the CLI.
        subprocess.run([tide, "sim", "--seed", "3", "--width", "900", "--height", "800",
                        "--nstars", "30", "--ngal", "0", "--no-noise", "--no-defects", "--sky",
                        "0", "--bias", "0", "--nmoving", "0", "--nvariable", "0", "--ntransient",
                        "0", "-o", p("n.fits"), "--truth", p("nt.fits")], check=True)
        d = fits.getdata(p("n.fits")).astype(np.float64)
        t = fits.getdata(p("nt.fits"), 1)
        R, n = 40, 0
        for i in range(len(t)):
            x, y = t["X_TRUE"][i] - 1, t["Y_TRUE"][i] - 1
            if t["SATURATED"][i] or x < R or y < R or x > d.shape[1] - R - 1 or \
                    y > d.shape[0] - R - 1:
                continue
            dd = np.hypot(t["X_TRUE"] - t["X_TRUE"][i], t["Y_TRUE"] - t["Y_TRUE"][i])
            if (dd < 2 * R).sum() > 1:
                continue
            yy, xx = np.mgrid[0:d.shape[0], 0:d.shape[1]]
            s = d[(xx - x) ** 2 + (yy - y) ** 2 <= R * R].sum()
            check(abs(s / t["FLUX"][i] - 1) < 0.01, f"star {t['ID'][i]} sums to "
                  f"{s / t['FLUX'][i]:.4f} of FLUX")
            n += 1
        print(f"flux conservation: {n} isolated stars")
        check(n >= 5, "too few isolated stars for the flux test")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if FAIL else 0


if __name__ == "__main__":
    sys.exit(main())
