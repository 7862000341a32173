"""tide reproject against astropy's reproject (Debian python3-reproject) on real DECam frames
with TPV distortion.

Like for like: reproject_interp(order='bilinear') interpolates surface brightness bilinearly
(scipy map_coordinates, order 1) at the exact per-pixel mapping of astropy.wcs (wcslib), so
tide runs with --kernel bilinear --no-conserve (no Jacobian factor). tide reads the float64
frames as float32, so reproject is given the same float32-rounded pixels. tide maps TPV through
its node grid (measured error <= 0.001 px, reported in RPMAPERR); reproject maps every pixel
exactly.

Compared away from edges: pixels whose tide mask is 0 (no EDGE, NODATA: the whole 2x2
footprint inside the input frame) and whose reproject value is finite, eroded by one more
pixel. The frames are sky-subtracted (median ~1, sky noise ~30 ADU), so a relative error
against the pixel value alone is undefined near zero; the error is taken relative to
max(|reproject|, sigma_sky), sigma_sky the input's robust (MAD) noise, and must be <= 1e-3
(issue 5). Star pixels (|value| > 20 sigma_sky) are also checked on their own against
|value| alone.

Cases: b onto a's grid (same WCS in these files: an identity mapping through TPV), and b
onto a north-up TAN grid made by tide (--grid north-up): a 90-degree rotation through the
TPV distortion. And Calabretta's 1904-66 field in ZEA and ZPN onto its TAN grid (the grid
path for non-TAN projections)."""
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

try:
    from astropy.io import fits
    from astropy.wcs import WCS, FITSFixedWarning
    from reproject import reproject_interp
except ImportError as e:  # pragma: no cover
    print("SKIP: needs astropy and python3-reproject:", e)
    sys.exit(77)

warnings.simplefilter("ignore", FITSFixedWarning)
TIDE = os.environ["TIDE_BIN"]
DATA = os.path.join(os.environ["TIDE_SHARED_DATA"], "diff")
A = os.path.join(DATA, "DEC-OBS04a.mini.fits")
B = os.path.join(DATA, "DEC-OBS04b.mini.fits")
TOL = 1e-3
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def run(args):
    r = subprocess.run([TIDE] + args, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit("tide failed: " + " ".join(args))
    return r.stdout


def compare(label, tide_out, ref_header_wcs, shape, src=B, floor=None):
    with fits.open(src) as hb:
        data = hb[0].data.astype(np.float32).astype(np.float64)
        wb = WCS(hb[0].header)
    ref, foot = reproject_interp((data, wb), ref_header_wcs, shape_out=shape, order="bilinear")
    with fits.open(tide_out) as ht:
        t = ht[0].data.astype(np.float64)
        mask = ht["MASK"].data.astype(np.int64)
        maperr = ht[0].header.get("RPMAPERR", 0.0)
    ok = (mask == 0) & np.isfinite(ref) & np.isfinite(t)
    # erode by one pixel: away from every edge of the footprint
    er = ok.copy()
    er[1:, :] &= ok[:-1, :]
    er[:-1, :] &= ok[1:, :]
    er[:, 1:] &= ok[:, :-1]
    er[:, :-1] &= ok[:, 1:]
    med = np.median(data)
    sig = 1.4826 * np.median(np.abs(data - med)) if floor is None else floor
    d = np.abs(t - ref)
    rel = d[er] / np.maximum(np.abs(ref[er]), sig)
    stars = er & (np.abs(ref) > 20 * sig)
    rel_star = d[stars] / np.abs(ref[stars])
    print(f"{label}: {er.sum()} px compared (of {t.size}), floor {sig:.3g}, tide grid "
          f"error {maperr:.2e} px; max |dt| {d[er].max():.3e}, max rel {rel.max():.3e}, "
          f"median rel {np.median(rel):.3e}; {stars.sum()} star px max rel "
          f"{rel_star.max() if stars.any() else 0:.3e}")
    check(er.sum() > (0.8 if floor is None else 0.3) * data.size,
          label + ": too few pixels compared")
    check(rel.max() <= TOL, f"{label}: max relative difference {rel.max():.3e} > {TOL}")
    if stars.any():
        check(rel_star.max() <= TOL, f"{label}: star pixels {rel_star.max():.3e} > {TOL}")
    # tide's NaN (no input pixel lands: off the frame, or the nearest input pixel is NaN) is
    # NaN in reproject too, whose bilinear needs all four neighbours; every tide NaN has NODATA
    tnan = ~np.isfinite(t)
    check(np.all(~np.isfinite(ref[tnan])), label + ": tide NaN where reproject has a value")
    check(np.all((mask[tnan] & 1) != 0), label + ": a tide NaN without the NODATA bit")
    check(tnan.sum() <= (foot == 0).sum(), label)
    return rel.max()


with tempfile.TemporaryDirectory() as tmp:
    out1 = os.path.join(tmp, "b_on_a.fits")
    print(run(["reproject", B, "--onto", A, "-o", out1, "--kernel", "bilinear",
               "--no-conserve", "--backend", "cpu"]).strip())
    with fits.open(A) as ha:
        wa = WCS(ha[0].header)
        shape = ha[0].data.shape
    compare("b onto a (TPV -> TPV)", out1, wa, shape)

    out2 = os.path.join(tmp, "b_northup.fits")
    print(run(["reproject", B, "--grid", "north-up", "-o", out2, "--kernel", "bilinear",
               "--no-conserve", "--backend", "cpu"]).strip())
    with fits.open(out2) as ho:
        wo = WCS(ho[0].header)
        shape2 = ho[0].data.shape
        cov = fits.getdata(out2.replace(".fits", ".coverage.fits"))
    check(abs(wo.wcs.cd[0, 1]) < 1e-12 if wo.wcs.has_cd() else abs(wo.wcs.get_pc()[0, 1]) < 1e-12,
          "north-up grid is not north up")
    compare("b onto north-up TAN (TPV -> TAN)", out2, wo, shape2)
    check(cov.max() <= 1.0 + 1e-6 and cov.min() >= 0.0, "coverage outside [0, 1]")

# other projections through the grid path: Calabretta's 1904-66 field (12.8 deg wide, with
# blank corners) in ZEA and ZPN onto its TAN grid. The values are not sky-subtracted noise, so
# the floor of the relative difference is 1% of the TAN image's maximum.
WCSD = os.path.join(os.environ["TIDE_SHARED_DATA"], "wcs")
with tempfile.TemporaryDirectory() as tmp:
    tan = os.path.join(WCSD, "1904-66_TAN.fits")
    with fits.open(tan) as ht:
        wt = WCS(ht[0].header)
        shape_t = ht[0].data.shape
        floor = 0.01 * np.nanmax(ht[0].data)
    for proj in ("ZEA", "ZPN"):
        src = os.path.join(WCSD, f"1904-66_{proj}.fits")
        out = os.path.join(tmp, proj + ".fits")
        print(run(["reproject", src, "--onto", tan, "-o", out, "--kernel", "bilinear",
                   "--no-conserve", "--backend", "cpu"]).strip())
        compare(f"1904-66 {proj} onto TAN", out, wt, shape_t, src=src, floor=floor)

# command-line errors: usage (exit 2) and a missing file named in the message (exit 1)
with tempfile.TemporaryDirectory() as tmp:
    o = os.path.join(tmp, "x.fits")
    for args, rc in ((["reproject", B, "-o", o], 2),
                     (["reproject", B, "--onto", A, "--grid", "north-up", "-o", o], 2),
                     (["reproject", A, B, "--onto", A, "-o", o], 2),
                     (["reproject", B, "--grid", "south-up", "-o", o], 2),
                     (["reproject", B, "--onto", A, "--kernel", "cubic", "-o", o], 2),
                     (["reproject", B + ".missing", "--onto", A, "-o", o], 1)):
        r = subprocess.run([TIDE] + args, capture_output=True, text=True)
        check(r.returncode == rc, f"{args[1:]}: exit {r.returncode}, want {rc}: {r.stderr}")
        if rc == 1:
            check("missing" in r.stderr, "the error does not name the file: " + r.stderr)
    check(not os.path.exists(o), "an output was written by a failed run")

if failures:
    print(f"{failures} check(s) failed")
    sys.exit(1)
print("ok")
