#!/usr/bin/python3
"""peer_sep.py — time sep (the Python library of Source Extractor's algorithms) on the frames
that `tide bench --reduce` reduces, for bench/compare.py.

Frames are written by `tide sim` with the bench's simulator parameters (seed, size, stars,
galaxies: the same pixels, the simulator being deterministic), read once, then timed:

  full      background (sep.Background 64x64 meshes, 3x3 filter; back and rms maps),
            subtraction, extraction at 5 sigma of the rms map (minarea 5, 32 thresholds,
            contrast 0.005, sep's default 3x3 filter), sum_circle at three radii with errors,
            windowed positions (flux_radius within min(6 A, 30 px), then winpos with
            sig = 2/2.3548 * r_half)
  extract   sep.extract alone on the same background-subtracted frame and rms map

Each figure is the median of --repeats runs after one warm-up (sep is single-threaded).

usage:
  peer_sep.py --bench-json TIDE_BENCH.json -o SEP.json [--tide TIDE] [--repeats N]
  peer_sep.py --sizes 2048x2048 [--stars-sparse 300] [--stars-dense 130000] -o SEP.json

Run it with /usr/bin/python3 (Debian's numpy, astropy and python3-sep)."""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import sep
from astropy.io import fits

RADII = (3.0, 5.0, 8.0)
NPIX_151MP = 14200 * 10650


def frames_from_bench(path):
    """The (seed, width, height, nstars, ngalaxies, density) of every run of a tide bench
    --reduce JSON document."""
    with open(path) as f:
        doc = json.load(f)
    if doc.get("bench") != "reduce":
        sys.exit(f"{path}: not a `tide bench --reduce` JSON document")
    out = []
    for r in doc["runs"]:
        s = r["sim"]
        out.append(dict(seed=s["seed"], width=s["width"], height=s["height"],
                        nstars=s["nstars"], ngalaxies=s["ngalaxies"], density=r["density"]))
    return out


def frames_from_args(a):
    out = []
    for spec in a.sizes.split(","):
        w, h = (int(v) for v in spec.lower().split("x"))
        if a.stars_sparse > 0:
            out.append(dict(seed=a.seed, width=w, height=h, nstars=a.stars_sparse,
                            ngalaxies=a.ngal, density="sparse"))
        if a.stars_dense > 0:
            n = max(2000, round(a.stars_dense * w * h / NPIX_151MP))
            out.append(dict(seed=a.seed, width=w, height=h, nstars=n, ngalaxies=a.ngal,
                            density="dense"))
    return out


def simulate(tide, fr, path):
    cmd = [tide, "sim", "-o", path, "--seed", str(fr["seed"]), "--width", str(fr["width"]),
           "--height", str(fr["height"]), "--nstars", str(fr["nstars"]),
           "--ngal", str(fr["ngalaxies"])]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with fits.open(path, memmap=False) as hdul:
        data = np.ascontiguousarray(hdul[0].data, dtype=np.float32)
        gain = float(hdul[0].header.get("GAIN", 1.0))
    return data, gain


def full_reduction(data, gain):
    """sep's equivalent of tide's background + detection + aperture + windowed centroids;
    returns (per-step seconds, number of sources)."""
    t = {}
    t0 = time.perf_counter()
    bkg = sep.Background(data, bw=64, bh=64, fw=3, fh=3)
    back = bkg.back()
    rms = bkg.rms()
    sub = data - back
    t1 = time.perf_counter()
    objs = sep.extract(sub, 5.0, err=rms, minarea=5, deblend_nthresh=32, deblend_cont=0.005)
    t2 = time.perf_counter()
    x, y = objs["x"], objs["y"]
    for r in RADII:
        sep.sum_circle(sub, x, y, r, err=rms, gain=gain, subpix=5)
    t3 = time.perf_counter()
    # Half-light radius within 6 A (Source Extractor's habit), capped at 30 px so a bleed trail
    # or a merged blob does not dominate the time.
    rmax = np.clip(6.0 * objs["a"], 3.0, 30.0)
    rhalf, _ = sep.flux_radius(sub, x, y, rmax, 0.5, normflux=objs["flux"], subpix=5)
    sig = 2.0 / 2.3548 * np.clip(rhalf, 0.5, None)
    sep.winpos(sub, x, y, sig)
    t4 = time.perf_counter()
    t["background"] = t1 - t0
    t["extract"] = t2 - t1
    t["aperture"] = t3 - t2
    t["winpos"] = t4 - t3
    t["total"] = t4 - t0
    return t, len(objs), sub, rms


def median_ms(v):
    return 1e3 * statistics.median(v)


def fit_pixstack(data):
    """The smallest pixel stack (from sep's default of 300,000, doubling) with which sep
    extracts this frame: sep allocates the whole stack on every call, so a generous fixed one
    would slow it down unfairly."""
    n = 300_000
    bkg = sep.Background(data, bw=64, bh=64, fw=3, fh=3)
    sub, rms = data - bkg.back(), bkg.rms()
    while True:
        sep.set_extract_pixstack(n)
        try:
            sep.extract(sub, 5.0, err=rms, minarea=5)
            return n
        except Exception as e:
            if "pixel buffer" not in str(e) or n >= data.size:
                raise
            n *= 2


def time_frame(fr, data, gain, repeats):
    pixstack = fit_pixstack(data)
    full_reduction(data, gain)  # warm-up
    runs = []
    for _ in range(repeats):  # keep only the last run's maps: a 151 MP map is 0.6 GB
        t, nsrc, sub, rms = full_reduction(data, gain)
        runs.append(t)
    steps = {k: median_ms([r[k] for r in runs]) for k in runs[0]}
    sep.extract(sub, 5.0, err=rms, minarea=5)  # warm-up
    ext = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        objs = sep.extract(sub, 5.0, err=rms, minarea=5, deblend_nthresh=32,
                           deblend_cont=0.005)
        ext.append(time.perf_counter() - t0)
    return dict(fr, megapixels=fr["width"] * fr["height"] * 1e-6, pixstack=pixstack,
                n_sources=nsrc,
                n_extract=len(objs), ms=steps, extract_only_ms=median_ms(ext),
                extract_only_min_ms=1e3 * min(ext))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench-json", help="take the frames from a tide bench --reduce JSON")
    ap.add_argument("--sizes", default="2048x2048", help="WxH[,WxH...] [2048x2048]")
    ap.add_argument("--stars-sparse", type=int, default=300)
    ap.add_argument("--stars-dense", type=int, default=130000,
                    help="stars at 14200x10650, scaled with the area (at least 2000)")
    ap.add_argument("--ngal", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tide", default=os.environ.get("TIDE_BIN", shutil.which("tide") or "tide"))
    ap.add_argument("-o", "--output", required=True, help="JSON file ('-' = stdout)")
    a = ap.parse_args()
    frames = frames_from_bench(a.bench_json) if a.bench_json else frames_from_args(a)
    # tide's deblending limit is 1024 sub-objects; sep's default is 1024 too, set for clarity.
    sep.set_sub_object_limit(1024)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for fr in frames:
            path = os.path.join(tmp, "frame.fits")
            data, gain = simulate(a.tide, fr, path)
            os.unlink(path)
            try:
                res = time_frame(fr, data, gain, a.repeats)
            except Exception as e:  # sep refuses some crowded frames: record it, go on
                res = dict(fr, error=str(e))
            results.append(res)
            if "error" in res:
                print(f"{fr['width']}x{fr['height']} {fr['density']}: sep failed: {res['error']}",
                      file=sys.stderr)
            else:
                print(f"{fr['width']}x{fr['height']} {fr['density']}: {res['n_sources']} sources,"
                      f" full {res['ms']['total']:.1f} ms, extract alone "
                      f"{res['extract_only_ms']:.1f} ms", file=sys.stderr)
    doc = dict(peer="sep", sep_version=sep.__version__, numpy_version=np.__version__,
               python=platform.python_version(), machine=platform.machine(),
               cpu=platform.processor() or platform.machine(), threads=1,
               repeats=a.repeats, radii=list(RADII),
               date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), frames=results)
    text = json.dumps(doc, indent=1) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
