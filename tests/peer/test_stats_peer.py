"""Peer test: `tide stats --json` against numpy and astropy.stats.sigma_clipped_stats.

Pixels are read with astropy without its own scaling and scaled in float64 then rounded to
float32, which is what cfitsio does, so tide and the reference see the same float32 values.
The references then run in float64 (the definition tide implements). Tolerances: counts,
min and max exact (as float32: %.9g round-trips them); mean, median, std and the sigma-clipped trio 1e-6 relative (tide prints
%.9g, so the printed value itself is good to ~5e-10)."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
from astropy.io import fits
from astropy import log
from astropy.stats import sigma_clipped_stats

log.setLevel("ERROR")  # the ESO-LOG cards of galaxies.fits are noisy, not wrong

TIDE = os.environ["TIDE_BIN"]
DATA = os.environ["TIDE_SHARED_DATA"]
REL = 1e-6
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def close(a, b, rel=REL):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def read_like_cfitsio(path):
    with fits.open(path, do_not_scale_image_data=True) as hl:
        for h in hl:
            if h.data is not None and h.header.get("NAXIS", 0) >= 2:
                raw = h.data
                hdr = h.header
                break
    data = raw.astype(np.float64)
    blank = hdr.get("BLANK") if raw.dtype.kind in "iu" else None
    data = data * hdr.get("BSCALE", 1.0) + hdr.get("BZERO", 0.0)
    data = data.astype(np.float32)
    bad = ~np.isfinite(data)
    if blank is not None:
        bad |= raw == blank
    return data, bad


def run_tide(path, *extra):
    out = subprocess.run([TIDE, "stats", "--json", "--backend", "cpu", *extra, path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr)
    check(out.returncode == 0, f"tide stats {path} exit {out.returncode}")
    return json.loads(out.stdout)


def compare(path, sigma=3.0, maxiters=5):
    name = os.path.relpath(path, DATA)
    t = run_tide(path, "--sigma", str(sigma), "--maxiters", str(maxiters))
    data, bad = read_like_cfitsio(path)
    v = data[~bad].astype(np.float64)
    check(t["n_total"] == data.size, f"{name}: n_total {t['n_total']} vs {data.size}")
    check(t["n_valid"] == v.size, f"{name}: n_valid {t['n_valid']} vs {v.size}")
    check(t["n_nodata"] == int(bad.sum()), f"{name}: n_nodata")
    # %.9g round-trips a float32, so min and max compare exactly as float32
    check(np.float32(t["min"]) == np.float32(v.min()), f"{name}: min {t['min']!r} vs {v.min()!r}")
    check(np.float32(t["max"]) == np.float32(v.max()), f"{name}: max {t['max']!r} vs {v.max()!r}")
    for key, ref in (("mean", v.mean()), ("median", np.median(v)), ("std", v.std())):
        check(close(t[key], ref), f"{name}: {key} {t[key]!r} vs numpy {ref!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cm, cmed, cs = sigma_clipped_stats(v, sigma=sigma, maxiters=maxiters)
    for key, ref in (("clip_mean", cm), ("clip_median", cmed), ("clip_std", cs)):
        check(close(t[key], float(ref)), f"{name}: {key} {t[key]!r} vs astropy {ref!r}")
    # astropy on float32 input accumulates its mean and std in float32 and, on large frames,
    # clips a different set of pixels (galaxies.fits: clipped mean off by 36 ADU); tide
    # accumulates in double, so the float64 call is the reference.
    print(f"{name} sigma {sigma} maxiters {maxiters}: mean {t['mean']} median {t['median']} "
          f"std {t['std']} clip {t['clip_mean']} {t['clip_median']} {t['clip_std']} "
          f"(astropy {cm:.9g} {cmed:.9g} {cs:.9g})")


for rel in ("sep/image.fits", "sextractor/galaxies.fits"):
    compare(os.path.join(DATA, rel))
compare(os.path.join(DATA, "sextractor/galaxies.fits"), sigma=2.5, maxiters=10)
compare(os.path.join(DATA, "diff/DEC-OBS04a.mini.fits"))

sys.exit(1 if failures else 0)
