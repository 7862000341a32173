"""tide's WCS against astropy.wcs (Debian python3-astropy) on ../shared/data/wcs/.

Through ctypes on libtide.so ($TIDE_LIB):
  * pixel -> sky on a grid over every file (TAN, ZEA, ZPN, SIP, TPV) agrees with astropy's
    all_pix2world(..., 0) to 1e-6 degree (both use 0-based pixels here);
  * sky -> pixel agrees with astropy's all_world2pix to 1e-6 px, and tide's own round trip
    closes to 1e-6 px;
  * the header tide writes back (tide_wcs_to_header) is read by astropy to the same sky
    positions (1e-6 degree): the written SIP/TPV keywords are understood by another reader;
  * the summary's centre matches astropy at the centre pixel;
  * tnx.fits is refused with TIDE_E_UNSUPPORTED and a detail naming TNX and the file.
Exit 77 (skipped) when TIDE_LIB or TIDE_SHARED_DATA is missing.
"""
import ctypes as C
import os
import sys
import warnings

import numpy as np

try:
    from astropy.io import fits
    from astropy.wcs import WCS, FITSFixedWarning
except ImportError:
    print("SKIP: astropy not available")
    sys.exit(77)

LIB = os.environ.get("TIDE_LIB")
DATA = os.environ.get("TIDE_SHARED_DATA")
if not LIB or not DATA or not os.path.exists(LIB):
    print("SKIP: TIDE_LIB or TIDE_SHARED_DATA not set")
    sys.exit(77)

TOL_DEG = 1e-6
TOL_PIX = 1e-6
TIDE_E_UNSUPPORTED = -6

lib = C.CDLL(LIB)
libc = C.CDLL(None)
libc.free.argtypes = [C.c_void_p]


class Header(C.Structure):
    _fields_ = [("cards", C.c_void_p), ("ncards", C.c_int), ("capacity", C.c_int)]


class Summary(C.Structure):
    _fields_ = [("ctype1", C.c_char * 72), ("ctype2", C.c_char * 72),
                ("radesys", C.c_char * 16), ("equinox", C.c_double),
                ("ra_center", C.c_double), ("dec_center", C.c_double),
                ("scale_arcsec", C.c_double), ("rotation_deg", C.c_double),
                ("fov_x_deg", C.c_double), ("fov_y_deg", C.c_double),
                ("has_sip", C.c_int), ("has_tpv", C.c_int)]


DP = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
lib.tide_header_init.argtypes = [C.POINTER(Header)]
lib.tide_header_free.argtypes = [C.POINTER(Header)]
lib.tide_header_parse.argtypes = [C.POINTER(Header), C.c_char_p, C.c_int]
lib.tide_header_to_string.argtypes = [C.POINTER(Header), C.POINTER(C.c_int)]
lib.tide_header_to_string.restype = C.c_void_p
lib.tide_wcs_from_header.argtypes = [C.POINTER(Header), C.c_char_p, C.POINTER(C.c_void_p)]
lib.tide_wcs_free.argtypes = [C.c_void_p]
lib.tide_wcs_pix2sky.argtypes = [C.c_void_p, C.c_int64, DP, DP, DP, DP]
lib.tide_wcs_sky2pix.argtypes = [C.c_void_p, C.c_int64, DP, DP, DP, DP]
lib.tide_wcs_to_header.argtypes = [C.c_void_p, C.POINTER(Header)]
lib.tide_wcs_summarize.argtypes = [C.c_void_p, C.c_int64, C.c_int64, C.POINTER(Summary)]
lib.tide_error_detail.restype = C.c_char_p

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def raw_header(path):
    """The primary header's cards exactly as stored (astropy would 'fix' some of them)."""
    cards = b""
    with open(path, "rb") as f:
        while True:
            block = f.read(2880)
            if len(block) < 2880:
                raise IOError(path + ": truncated header")
            for i in range(0, 2880, 80):
                card = block[i:i + 80]
                cards += card
                if card[:8] == b"END     ":
                    return cards


def tide_header(cards):
    h = Header()
    lib.tide_header_init(C.byref(h))
    rc = lib.tide_header_parse(C.byref(h), cards, len(cards) // 80)
    assert rc == 0
    return h


def tide_wcs(h, name):
    w = C.c_void_p()
    rc = lib.tide_wcs_from_header(C.byref(h), name.encode(), C.byref(w))
    return rc, w


def pix2sky(w, x, y):
    ra, dec = np.empty_like(x), np.empty_like(x)
    rc = lib.tide_wcs_pix2sky(w, x.size, x, y, ra, dec)
    assert rc == 0, lib.tide_error_detail()
    return ra, dec


def sky2pix(w, ra, dec):
    x, y = np.empty_like(ra), np.empty_like(ra)
    rc = lib.tide_wcs_sky2pix(w, ra.size, ra, dec, x, y)
    assert rc == 0, lib.tide_error_detail()
    return x, y


def sky_diff(ra1, de1, ra2, de2):
    dra = (ra1 - ra2 + 180.0) % 360.0 - 180.0
    return np.maximum(np.abs(dra) * np.cos(np.radians(de2)), np.abs(de1 - de2))


def astropy_wcs(cards):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hdr = fits.Header.fromstring(cards.decode("ascii", "replace"))
        return WCS(hdr), hdr


def compare_file(name):
    path = os.path.join(DATA, "wcs", name)
    cards = raw_header(path)
    aw, hdr = astropy_wcs(cards)
    nx, ny = int(hdr["NAXIS1"]), int(hdr["NAXIS2"])
    g = np.linspace(0.0, 1.0, 25)
    x, y = np.meshgrid(-0.5 + g * nx, -0.5 + g * ny)
    x, y = x.ravel().copy(), y.ravel().copy()

    h = tide_header(cards)
    rc, w = tide_wcs(h, name)
    check(rc == 0, f"{name}: from_header rc {rc}: {lib.tide_error_detail()}")
    if rc:
        return
    ra, de = pix2sky(w, x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ara, ade = aw.all_pix2world(x, y, 0)
    ok = np.isfinite(ara) & np.isfinite(ade)
    check(np.array_equal(ok, np.isfinite(ra)), f"{name}: NaN pattern differs from astropy")
    d = sky_diff(ra[ok], de[ok], ara[ok], ade[ok])
    worst = d.max()
    print(f"{name:20s} {ok.sum():4d} px  pix2sky vs astropy {worst:.2e} deg", end="")
    check(worst <= TOL_DEG, f"{name}: pix2sky differs from astropy by {worst:.3g} deg")

    # sky -> pixel: tide's round trip, and tide against astropy's inverse
    x2, y2 = sky2pix(w, ra[ok], de[ok])
    rt = np.maximum(np.abs(x2 - x[ok]), np.abs(y2 - y[ok])).max()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ax, ay = aw.all_world2pix(ra[ok], de[ok], 0, tolerance=1e-10, maxiter=200,
                                  quiet=True)
    good = np.isfinite(ax) & np.isfinite(ay)
    vs = np.maximum(np.abs(x2 - ax), np.abs(y2 - ay))[good].max()
    print(f"  round trip {rt:.2e} px  sky2pix vs astropy {vs:.2e} px")
    check(rt <= TOL_PIX, f"{name}: sky->pix round trip {rt:.3g} px")
    check(good.mean() > 0.9, f"{name}: astropy's inverse failed on most points")
    check(vs <= TOL_PIX, f"{name}: sky2pix differs from astropy by {vs:.3g} px")

    # the written header, read by astropy
    out = Header()
    lib.tide_header_init(C.byref(out))
    rc = lib.tide_wcs_to_header(w, C.byref(out))
    check(rc == 0, f"{name}: to_header rc {rc}")
    n = C.c_int()
    p = lib.tide_header_to_string(C.byref(out), C.byref(n))
    written = C.string_at(p, 80 * n.value)
    libc.free(p)
    lib.tide_header_free(C.byref(out))
    aw2, _ = astropy_wcs(written + b"END".ljust(80))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bra, bde = aw2.all_pix2world(x, y, 0)
    d2 = sky_diff(bra[ok], bde[ok], ra[ok], de[ok]).max()
    print(f"{'':20s} written header read by astropy: {d2:.2e} deg")
    check(d2 <= TOL_DEG, f"{name}: astropy reads tide's written header {d2:.3g} deg off")

    s = Summary()
    rc = lib.tide_wcs_summarize(w, nx, ny, C.byref(s))
    check(rc == 0, f"{name}: summarize rc {rc}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cra, cde = aw.all_pix2world([(nx - 1) / 2.0], [(ny - 1) / 2.0], 0)
    dc = sky_diff(np.array([s.ra_center]), np.array([s.dec_center]), cra, cde)[0]
    check(dc <= TOL_DEG, f"{name}: summary centre {dc:.3g} deg off")
    print(f"{'':20s} summary: {s.ctype1.decode()} {s.radesys.decode()} "
          f"scale {s.scale_arcsec:.4f}\"/px rot {s.rotation_deg:.3f} sip {s.has_sip} "
          f"tpv {s.has_tpv}")
    lib.tide_wcs_free(w)
    lib.tide_header_free(C.byref(h))


for f in ["1904-66_TAN.fits", "1904-66_ZEA.fits", "1904-66_ZPN.fits", "sipsample.fits",
          "tpv.fits"]:
    compare_file(f)

# TNX: a clear refusal naming the convention and the file
h = tide_header(raw_header(os.path.join(DATA, "wcs", "tnx.fits")))
rc, w = tide_wcs(h, "tnx.fits")
detail = lib.tide_error_detail().decode()
print("tnx.fits:", rc, detail)
check(rc == TIDE_E_UNSUPPORTED, f"tnx.fits: rc {rc}, expected TIDE_E_UNSUPPORTED")
check("TNX" in detail and "tnx.fits" in detail, "tnx.fits: detail must name TNX and the file")
check(not w.value, "tnx.fits: no WCS may be returned")
lib.tide_header_free(C.byref(h))

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
