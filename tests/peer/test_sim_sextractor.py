"""Peer test: Source Extractor finds the simulator's bright stars at their true positions.

A default `tide sim` frame (2048x2048, ~2000 stars, noise and defects on) goes through
source-extractor with a minimal configuration (no filter, 5-sigma detection, windowed
centroids). Of the isolated, unsaturated stars with expected S/N > 30 (truth catalog), at least
95 % must be detected within 1 px of their true position (FITS 1-based, the convention both
use), with a median offset < 0.1 px. Skips (77) when source-extractor is not installed."""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from astropy.io import fits

SEX = shutil.which("source-extractor") or shutil.which("sex")


def main():
    if SEX is None:
        print("SKIP: source-extractor not installed")
        return 77
    tide = os.environ["TIDE_BIN"]
    tmp = tempfile.mkdtemp(prefix="tide_sim_sex_")
    try:
        frame, truth = os.path.join(tmp, "f.fits"), os.path.join(tmp, "t.fits")
        subprocess.run([tide, "sim", "--seed", "11", "--nstars", "4000", "-o", frame, "--truth", truth],
                       check=True)
        with open(os.path.join(tmp, "p.param"), "w") as f:
            f.write("XWIN_IMAGE\nYWIN_IMAGE\nX_IMAGE\nY_IMAGE\nFLUX_AUTO\nFLAGS\n")
        with open(os.path.join(tmp, "c.sex"), "w") as f:
            f.write(
                "CATALOG_NAME out.cat\nCATALOG_TYPE ASCII_HEAD\nPARAMETERS_NAME p.param\n"
                "DETECT_MINAREA 5\nDETECT_THRESH 5\nANALYSIS_THRESH 5\nFILTER N\n"
                "DEBLEND_NTHRESH 32\nDEBLEND_MINCONT 0.005\nCLEAN Y\nCLEAN_PARAM 1.0\n"
                "SATUR_KEY SATURATE\nGAIN_KEY GAIN\nPIXEL_SCALE 0\nBACK_SIZE 64\n"
                "BACK_FILTERSIZE 3\nCHECKIMAGE_TYPE NONE\nVERBOSE_TYPE QUIET\n"
                "MEMORY_PIXSTACK 1000000\n")
        subprocess.run([SEX, frame, "-c", "c.sex"], cwd=tmp, check=True)
        cat = np.loadtxt(os.path.join(tmp, "out.cat"), comments="#", ndmin=2)
        sx, sy = cat[:, 0], cat[:, 1]

        h = fits.getheader(frame)
        t = fits.getdata(truth, 1)
        gain, rn, sky = h["GAIN"], h["RDNOISE"], h["SIMSKY"]
        W, H = h["NAXIS1"], h["NAXIS2"]
        X, Y = t["X_TRUE"], t["Y_TRUE"]
        flux_e = t["FLUX_E"]
        # Expected S/N in an aperture of radius 1.5 FWHM.
        npix = np.pi * (1.5 * t["FWHM"]) ** 2
        snr = flux_e / np.sqrt(flux_e + npix * (sky * gain + rn ** 2))
        types = np.char.strip(t["TYPE"].astype(str))
        pointlike = (types == "star") | (types == "variable") | (types == "moving")
        sel = pointlike & (t["SATURATED"] == 0) & (snr > 30)
        sel &= (X > 10) & (Y > 10) & (X < W - 10) & (Y < H - 10)
        sel &= t["PEAK"] + sky + h["SIMBIAS"] < 0.8 * h["SATURATE"]
        # Isolated: no other object within 12 px brighter than 2 % of the star.
        idx = np.nonzero(sel)[0]
        keep = []
        for i in idx:
            d = np.hypot(X - X[i], Y - Y[i])
            near = (d < 12) & (d > 0) & (flux_e > 0.02 * flux_e[i])
            if not near.any():
                keep.append(i)
        keep = np.array(keep)
        if len(keep) < 50:
            print(f"FAIL: only {len(keep)} test stars")
            return 1
        offs = []
        for i in keep:
            d = np.hypot(sx - X[i], sy - Y[i])
            offs.append(d.min())
        offs = np.array(offs)
        found = offs < 1.0
        frac, med = found.mean(), np.median(offs[found])
        print(f"{len(cat)} detections; {len(keep)} test stars; matched {frac:.4f} within 1 px; "
              f"median offset {med:.4f} px; 90th percentile {np.percentile(offs[found], 90):.4f}")
        ok = True
        if frac < 0.95:
            print("FAIL: fewer than 95 % of the bright isolated stars found within 1 px")
            miss = keep[~found]
            for i in miss[:10]:
                print("  missed", X[i], Y[i], t["MAG"][i], offs[list(keep).index(i)])
            ok = False
        if med >= 0.1:
            print("FAIL: median offset >= 0.1 px")
            ok = False
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
