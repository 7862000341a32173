#!/bin/bash
# tide info: HDU listing, compression, image selection, WCS summary (against astropy), key
# header values, --json (valid JSON, checked field by field), --help and usage errors.
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
D=${TIDE_SHARED_DATA:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# --- text output --------------------------------------------------------------------------
out=$("$TIDE" info "$D/compressed/m13_rice.fits") || bad "info m13_rice.fits failed"
grep -q "2 HDUs" <<<"$out" || bad "m13_rice: HDU count: $out"
grep -Eq "1 +compressed image +COMPRESSED_IMAGE +16 +300 x 300 +RICE_1, tile 300 x 1" <<<"$out" \
    || bad "m13_rice: HDU 1 line: $out"
grep -q "image     HDU 1: 300 x 300" <<<"$out" || bad "m13_rice: image line: $out"
grep -q "RA---TAN DEC--TAN" <<<"$out" || bad "m13_rice: WCS line: $out"

out=$("$TIDE" info "$D/compressed/tess_diff_rice_dither1.fits.fz") || bad "info TESS failed"
grep -q "SUBTRACTIVE_DITHER_1" <<<"$out" || bad "TESS: quantization not shown: $out"
grep -q "SIP distortion" <<<"$out" || bad "TESS: SIP not shown: $out"
grep -Eq "TELESCOP += TESS" <<<"$out" || bad "TESS: TELESCOP: $out"
grep -Eq "EXPTIME += 1425.599651" <<<"$out" || bad "TESS: EXPTIME: $out"

out=$("$TIDE" info "$D/sextractor/galaxies.fits") || bad "info galaxies.fits failed"
grep -q "BSCALE 2.92273835509 BZERO 3713.66692596" <<<"$out" || bad "galaxies: scaling: $out"
grep -q "WCS       none" <<<"$out" || bad "galaxies: WCS should be none: $out"

# TNX: described, the WCS line names the unsupported convention, exit 0
out=$("$TIDE" info "$D/wcs/tnx.fits") || bad "info tnx.fits failed"
grep -q "TNX" <<<"$out" || bad "tnx: WCS line does not name TNX: $out"
grep -Eq "FILTER += z SDSS" <<<"$out" || bad "tnx: FILTER: $out"

# a section: the image line gives the section's size
out=$("$TIDE" info "$D/wcs/sipsample.fits[0][11:100,21:80]") || bad "info with a section failed"
grep -q "image     HDU 0: 90 x 60" <<<"$out" || bad "section size: $out"

# --- JSON, checked against astropy --------------------------------------------------------
for f in compressed/m13.fits compressed/m13_hcomp.fits compressed/tess_diff_rice_dither1.fits.fz \
         compressed/compressed_with_nan.fits wcs/1904-66_ZEA.fits wcs/sipsample.fits wcs/tpv.fits \
         wcs/tnx.fits diff/DEC-OBS18b.mini.fits sep/image.fits "wcs/sipsample.fits[0][11:100,21:80]"; do
    "$TIDE" info --json "$D/$f" >"$T/info.json" 2>"$T/err" || { bad "info --json $f: $(cat "$T/err")"; continue; }
    "$PY" - "$D/$f" "$T/info.json" <<'PYEOF' || bad "info --json $f: see above"
import json, sys, re, warnings
import numpy as np
from astropy.io import fits
from astropy.wcs import WCS
warnings.simplefilter("ignore")
spec, js = sys.argv[1], json.load(open(sys.argv[2]))
path = re.sub(r"\[.*$", "", spec)
errs = []
with fits.open(path, disable_image_compression=True) as raw:
    if len(js["hdus"]) != len(raw):
        errs.append("%d HDUs, astropy %d" % (len(js["hdus"]), len(raw)))
    for d, h in zip(js["hdus"], raw):
        hd = h.header
        if hd.get("ZIMAGE"):
            want = ("compressed image", hd["ZBITPIX"], [hd["ZNAXIS%d" % i] for i in range(1, hd["ZNAXIS"] + 1)])
            if d["compression"] != hd["ZCMPTYPE"]:
                errs.append("HDU %d compression %s vs %s" % (d["index"], d["compression"], hd["ZCMPTYPE"]))
        else:
            kind = "image" if hd["NAXIS"] else "empty"
            want = (kind, hd["BITPIX"], [hd["NAXIS%d" % i] for i in range(1, hd["NAXIS"] + 1)])
        if (d["type"], d["bitpix"], d["shape"]) != want:
            errs.append("HDU %d: %s vs astropy %s" % (d["index"], (d["type"], d["bitpix"], d["shape"]), want))
with fits.open(path) as hl:
    idx = next(i for i, h in enumerate(hl) if h.header.get("NAXIS", 0) >= 2)
    hdr = hl[idx].header
    w, h = hdr["NAXIS1"], hdr["NAXIS2"]
    x0 = y0 = 0
    if "[" in spec:  # the section of the test: [11:100,21:80]
        x0, y0, w, h = 10, 20, 90, 60
    if js["image"] != {"hdu": idx, "width": w, "height": h}:
        errs.append("image %s, expected hdu %d %dx%d" % (js["image"], idx, w, h))
    has_wcs = "TNX" not in hdr.get("CTYPE1", "") and WCS(hdr).has_celestial
    if has_wcs != (js["wcs"] is not None):
        errs.append("wcs present %s, expected %s" % (js["wcs"] is not None, has_wcs))
    if "TNX" in hdr.get("CTYPE1", "") and "TNX" not in js.get("wcs_error", ""):
        errs.append("TNX not named in wcs_error")
    if js["wcs"]:
        wcs = WCS(hdr)
        ra, dec = wcs.all_pix2world([[x0 + (w - 1) / 2, y0 + (h - 1) / 2]], 0)[0]
        dra = ((js["wcs"]["ra_center"] - ra + 180) % 360 - 180) * np.cos(np.radians(dec))
        if abs(dra) > 1e-6 or abs(js["wcs"]["dec_center"] - dec) > 1e-6:
            errs.append("centre %.8f %.8f vs astropy %.8f %.8f" % (js["wcs"]["ra_center"], js["wcs"]["dec_center"], ra, dec))
        if js["wcs"]["sip"] != ("-SIP" in hdr["CTYPE1"]):
            errs.append("sip flag")
    for k, v in js["keys"].items():
        a = hdr.get(k)
        if a is None and idx > 0:
            a = hl[0].header.get(k)
        if isinstance(a, str):
            ok = v == a.rstrip()
        else:
            ok = isinstance(v, (int, float)) and abs(v - a) <= 1e-12 * max(1.0, abs(a))
        if not ok:
            errs.append("key %s = %r, astropy %r" % (k, v, a))
    for k in ("OBJECT", "FILTER", "EXPTIME", "GAIN", "RDNOISE", "SATURATE", "DATE-OBS", "TELESCOP", "INSTRUME"):
        if (k in hdr or (idx > 0 and k in hl[0].header)) and k not in js["keys"]:
            errs.append("key %s missing" % k)
for e in errs:
    print("  %s: %s" % (spec, e))
sys.exit(1 if errs else 0)
PYEOF
done

# a file of tables only: image null, exit 0
"$PY" -c "
import numpy as np, sys
from astropy.io import fits
c = fits.BinTableHDU.from_columns([fits.Column(name='RA', format='D', array=np.zeros(3))], name='REFCAT')
fits.HDUList([fits.PrimaryHDU(), c]).writeto(sys.argv[1])" "$T/cat.fits"
j=$("$TIDE" info --json "$T/cat.fits") || bad "info --json on a table file failed"
"$PY" -c "
import json, sys
j = json.loads(sys.argv[1])
assert j['image'] is None and j['wcs'] is None, j
assert j['hdus'][1]['type'] == 'bintable' and j['hdus'][1]['rows'] == 3 and j['hdus'][1]['extname'] == 'REFCAT', j
" "$j" || bad "info --json table file: $j"

# --- help and usage -----------------------------------------------------------------------
"$TIDE" info --help | grep -q -- "--json" || bad "--help lacks --json"
"$TIDE" info >/dev/null 2>&1; [ $? -eq 2 ] || bad "no FILE should exit 2"
"$TIDE" info --bogus "$D/sep/image.fits" >/dev/null 2>&1; [ $? -eq 2 ] || bad "unknown option should exit 2"
"$TIDE" info "$D/sep/image.fits" "$D/sep/rms.fits" >/dev/null 2>&1; [ $? -eq 2 ] || bad "two FILEs should exit 2"

[ $fail -eq 0 ] && echo "tide info ok"
exit $fail
