#!/usr/bin/python3
"""peer_full.py — the peers doing the stages of `tide reduce` on the same frame, timed, for
issue 3's CPU target ("faster than sep plus photutils doing the same stages on the same
frame", on the 2-core development machine).

The frame is written by `tide sim` with the parameters of `tide bench --reduce` (seed, size,
stars, 100 galaxies: the same pixels). Stages, each the established Python tool for it:

  cosmetics   astroscrappy.detect_cosmics (L.A.Cosmic, van Dokkum 2001; gain, read noise and
              saturation of the frame, sigclip 5) — tide's cosmic-ray stage
  background  sep.Background (64-pixel meshes, 3x3 filter), subtraction
  detection   sep.extract at 5 sigma of the RMS map (minarea 5, 32 thresholds, contrast 0.005)
  psf         photutils EPSFBuilder (oversampling 1, 3 iterations) on up to 100 isolated,
              unsaturated stars of S/N 50..1000 (25x25 stamps, extract_stars)
  photometry  sep.sum_circle at 3, 5, 8 px with errors, windowed positions (winpos), and
              photutils BasicPSFPhotometry with the ePSF at the detected positions (positions
              fixed, flux fitted: tide's FLUX_PSF) for every source

Each stage is timed once per run; the figure is the median of --repeats runs after one
warm-up. Everything is single-threaded (these libraries are).

usage: peer_full.py [--size 2048x2048] [--stars 300,3605] [--repeats 3] [--tide TIDE] -o OUT.json
Run it with /usr/bin/python3 (Debian's numpy, astropy, sep, photutils, astroscrappy)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

warnings.simplefilter("ignore")
import astroscrappy  # noqa: E402
import sep  # noqa: E402
from astropy.io import fits  # noqa: E402
from astropy.nddata import NDData  # noqa: E402
from astropy.table import Table  # noqa: E402
from photutils.psf import BasicPSFPhotometry, EPSFBuilder, extract_stars  # noqa: E402
from photutils.psf.groupstars import DAOGroup  # noqa: E402

RADII = (3.0, 5.0, 8.0)


def simulate(tide, width, height, nstars, path):
    subprocess.run([tide, "sim", "-o", path, "--seed", "1", "--width", str(width), "--height",
                    str(height), "--nstars", str(nstars), "--ngal", "100"], check=True,
                   stdout=subprocess.DEVNULL)


def run_once(data, hdr):
    """The five stages on one frame; their times in ms and the source count."""
    t = {}
    gain, rdnoise, sat = hdr["GAIN"], hdr["RDNOISE"], hdr["SATURATE"]
    t0 = time.perf_counter()
    astroscrappy.detect_cosmics(data, gain=gain, readnoise=rdnoise, satlevel=sat, sigclip=5.0,
                                sepmed=True, cleantype="meanmask", niter=4)
    t1 = time.perf_counter()
    bkg = sep.Background(data, bw=64, bh=64, fw=3, fh=3)
    sub = data - bkg.back()
    rms = bkg.rms()
    t2 = time.perf_counter()
    obj = sep.extract(sub, 5.0, err=rms, minarea=5, deblend_nthresh=32, deblend_cont=0.005)
    t3 = time.perf_counter()
    # PSF stars: isolated, unsaturated, S/N 50..1000, away from the edges
    x, y = obj["x"], obj["y"]
    snr = obj["flux"] / np.sqrt(np.maximum(obj["npix"], 1)) / np.median(rms)
    ok = (snr > 50) & (snr < 1000) & (obj["peak"] < 0.8 * (sat - hdr.get("SIMBIAS", 0)))
    ok &= (x > 15) & (x < data.shape[1] - 16) & (y > 15) & (y < data.shape[0] - 16)
    d2 = (x[:, None] - x[None, :]) ** 2 + (y[:, None] - y[None, :]) ** 2 if len(x) < 5000 else None
    if d2 is not None:
        np.fill_diagonal(d2, np.inf)
        ok &= d2.min(axis=1) > 15 ** 2
    idx = np.flatnonzero(ok)[:100]
    epsf = None
    if len(idx) >= 5:
        stars = extract_stars(NDData(sub), Table({"x": x[idx], "y": y[idx]}), size=25)
        epsf, _ = EPSFBuilder(oversampling=1, maxiters=3, progress_bar=False)(stars)
    t4 = time.perf_counter()
    for r in RADII:
        sep.sum_circle(sub, x, y, r, err=rms, subpix=5)
    r_half, _ = sep.flux_radius(sub, x, y, 6.0 * obj["a"], 0.5, normflux=obj["flux"], subpix=5)
    sep.winpos(sub, x, y, 2.0 / 2.3548 * r_half)
    if epsf is not None:
        epsf.x_0.fixed = True
        epsf.y_0.fixed = True
        phot = BasicPSFPhotometry(group_maker=DAOGroup(2.0), bkg_estimator=None,
                                  psf_model=epsf, fitshape=(11, 11))
        phot(image=sub, init_guesses=Table({"x_0": x, "y_0": y, "flux_0": obj["flux"]}))
    t5 = time.perf_counter()
    t.update(cosmetics=1e3 * (t1 - t0), background=1e3 * (t2 - t1), detection=1e3 * (t3 - t2),
             psf=1e3 * (t4 - t3), photometry=1e3 * (t5 - t4), total=1e3 * (t5 - t0))
    return t, len(obj), int(len(idx))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="2048x2048")
    ap.add_argument("--stars", default="300,3605")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tide", default=shutil.which("tide") or "build/tide")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.lower().split("x"))
    tmp = tempfile.mkdtemp(prefix="tide_peer_full.")
    runs = []
    try:
        for n in (int(v) for v in a.stars.split(",")):
            path = os.path.join(tmp, f"frame_{n}.fits")
            simulate(a.tide, w, h, n, path)
            with fits.open(path) as f:
                data = f[0].data.astype(np.float64)
                hdr = f[0].header
            data = np.ascontiguousarray(data)
            run_once(data, hdr)  # warm-up
            times = []
            for _ in range(a.repeats):
                t, nsrc, npsf = run_once(data, hdr)
                times.append(t)
            med = {k: statistics.median(r[k] for r in times) for k in times[0]}
            runs.append(dict(width=w, height=h, nstars=n, sources=nsrc, psf_stars=npsf,
                             ms=med))
            print(f"{w}x{h} {n} stars: {nsrc} sources, {npsf} PSF stars; " +
                  ", ".join(f"{k} {v:.0f} ms" for k, v in med.items()), flush=True)
    finally:
        shutil.rmtree(tmp)
    doc = dict(peer="astroscrappy + sep + photutils", versions=dict(
        sep=sep.__version__, astroscrappy=astroscrappy.__version__,
        photutils=__import__("photutils").__version__), repeats=a.repeats, runs=runs)
    with open(a.output, "w") as f:
        json.dump(doc, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
