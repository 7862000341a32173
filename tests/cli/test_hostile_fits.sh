#!/bin/bash
# Hostile FITS input (issue 22): headers that crash cfitsio 4.2 when it parses them, sizes that
# wrap, a NaN stamp, malformed scaling and WCS keywords, names in cfitsio's extended syntax, a
# huge thread count, two diff inputs with one stem. Each case is built here, byte by byte. A
# refused input must exit 1 with a message naming the file and what is wrong, and write
# nothing; a tolerated oddity must still be read.
#
# The cfitsio cases reproduce, in plain ASCII, the aborts found by fuzzing
# (../shared/reliability/): an integer keyword whose value is a long non-number overflows
# ffc2j's message buffer, an unquoted 70-character TTYPEn overflows ffgtbp's column name.
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
mkdir "$T/w" && cd "$T/w" || exit 1
E=$T/err # messages live outside the working folder, which must not change

"$PY" - <<'PYEOF' || { echo "cannot make test files"; exit 1; }
import numpy as np

def card(k, v=None):
    s = f"{k:<8}= {v}" if v is not None else k
    return s.ljust(80)[:80]

def header(cards):
    s = "".join(cards) + "END".ljust(80)
    return (s + " " * ((2880 - len(s) % 2880) % 2880)).encode("latin-1")

def pad(b):
    return b + b"\0" * ((2880 - len(b) % 2880) % 2880)

def primary(extra=(), data=None, bitpix=-32):
    data = np.arange(64, dtype=">f4").reshape(8, 8) if data is None else data
    c = [card("SIMPLE", "T"), card("BITPIX", str(bitpix)), card("NAXIS", str(data.ndim))]
    c += [card(f"NAXIS{i + 1}", str(n)) for i, n in enumerate(data.shape[::-1])]
    return header(c + list(extra)) + pad(data.tobytes())

def image_ext(cards):
    return header([card("XTENSION", "'IMAGE   '")] + cards)

w = lambda name, b: open(name, "wb").write(b)
w("good.fits", primary([card("OBJECT", "'field 7'")]))
# tolerated: a non-ASCII byte in a comment, a lowercase value nobody parses
w("latin1_comment.fits", primary([(card("OBSERVER", "'Muller'") [:40] + "/ M\xfcller, \xb0C").ljust(80)]))
# refused: ffc2j's buffer (EXTVER read as an integer), ffgtbp's column name
w("int_string.fits", primary() + image_ext([card("BITPIX", "8"), card("NAXIS", "0"),
  card("PCOUNT", "0"), card("GCOUNT", "1"), card("EXTVER", "(Flexible Image Transport System) format")]))
w("int_digits.fits", primary() + image_ext([card("BITPIX", "8"), card("NAXIS", "0"),
  card("PCOUNT", "0"), card("GCOUNT", "1"), card("EXTVER", "1" * 36)]))
w("ttype_unquoted.fits", primary() + header([card("XTENSION", "'BINTABLE'"), card("BITPIX", "8"),
  card("NAXIS", "2"), card("NAXIS1", "4"), card("NAXIS2", "1"), card("PCOUNT", "0"),
  card("GCOUNT", "1"), card("TFIELDS", "1"), card("TTYPE1", "A" * 70), card("TFORM1", "'E'")]) +
  pad(b"\0" * 4))
w("control_char.fits", primary([card("OBJECT", "'a\x01b'")]))
w("no_end.fits", primary()[:2880].replace(b"END" + b" " * 77, b" " * 80))
w("bitpix7.fits", primary(bitpix=7))
w("naxis1000.fits", header([card("SIMPLE", "T"), card("BITPIX", "8"), card("NAXIS", "1000")]))
# a data size that wraps: 16 x (2^58 + 1) floats is 2^64 + 64 bytes
w("wrap.fits", header([card("SIMPLE", "T"), card("BITPIX", "-32"), card("NAXIS", "3"),
  card("NAXIS1", "16"), card("NAXIS2", str(2**58 + 1)), card("NAXIS3", "1")]) + b"\0" * 23040)
w("bscale0.fits", primary([card("BSCALE", "0")], np.arange(64, dtype=">i2").reshape(8, 8), 16))
w("bscale_nan.fits", primary([card("BSCALE", "NAN")], np.arange(64, dtype=">i2").reshape(8, 8), 16))
# stamps for fit-dipoles: one 9x9 dipole stamp with a NaN pixel (cfitsio reports the null)
y, x = np.mgrid[0:9, 0:9]
st = (100 * np.exp(-((x - 3) ** 2 + (y - 4) ** 2) / 4.0) - 100 * np.exp(-((x - 5.5) ** 2 + (y - 4) ** 2) / 4.0))
st = st.astype(">f4")[None]
st[0, 1, 1] = np.nan
var = np.ones_like(st)
w("stamps_nan.fits", primary(data=st) + image_ext([card("BITPIX", "-32"), card("NAXIS", "3"),
  card("NAXIS1", "9"), card("NAXIS2", "9"), card("NAXIS3", "1"), card("PCOUNT", "0"),
  card("GCOUNT", "1"), card("EXTNAME", "'VAR'")]) + pad(var.tobytes()))
# WCS: singular CD, an all-zero CD (cdfix would make it 1 deg/px), no scale, absurd SIP
wcs = [card("CTYPE1", "'RA---TAN'"), card("CTYPE2", "'DEC--TAN'"), card("CRVAL1", "150.0"),
       card("CRVAL2", "2.2"), card("CRPIX1", "4.5"), card("CRPIX2", "4.5")]
w("wcs_singular.fits", primary(wcs + [card("CD1_1", "1E-4"), card("CD1_2", "2E-4"),
  card("CD2_1", "1E-4"), card("CD2_2", "2E-4")]))
w("wcs_zero.fits", primary(wcs + [card(k, "0.0") for k in ("CD1_1", "CD1_2", "CD2_1", "CD2_2")]))
w("wcs_noscale.fits", primary(wcs))
w("wcs_sip1000.fits", primary([card("CTYPE1", "'RA---TAN-SIP'"), card("CTYPE2", "'DEC--TAN-SIP'")]
  + wcs[2:] + [card("CD1_1", "1E-4"), card("CD2_2", "1E-4"), card("A_ORDER", "1000"),
  card("B_ORDER", "2")]))
w("wcs_ok.fits", primary(wcs + [card("CD1_1", "-1E-4"), card("CD2_2", "1E-4")]))
# a WCS string without its closing quote: wcspih's strcpy overflowed on it (fuzzing)
w("wcs_unclosed.fits", primary([card("CTYPE1", "'RA---TAN"), card("CTYPE2", "'DEC--TAN'")] +
  wcs[2:] + [card("CD1_1", "-1E-4"), card("CD2_2", "1E-4")]))
# bytes above 126 in commentary and comments are tolerated by the scan; wcslib's header lexer
# must never see them (it crashed on some, found by fuzzing)
w("wcs_highbytes.fits", primary(wcs + [card("CD1_1", "-1E-4"), card("CD2_2", "1E-4"),
  ("COMMENT \xff\xfe\x80 observer's notes \xe9\xe8" + "\xa7" * 40).ljust(80)[:80],
  (card("FILTER", "'R'")[:30] + "/ \xb0\xff\x7f\x80").ljust(80)]))
# cards cfitsio reads otherwise than tide (issue 22, fuzzing): a second ZIMAGE that hid the
# tile check from a ZTILE2 = 0 (cfitsio's SIGFPE), keyword forms cfitsio's lookup still finds
import io
from astropy.io import fits
b = io.BytesIO()
fits.HDUList([fits.PrimaryHDU(), fits.CompImageHDU(np.arange(256, dtype=np.int16).reshape(16, 16),
              compression_type="RICE_1")]).writeto(b)
rice = b.getvalue()
def edit(blob, key, new=None, add=()):
    """Replace card KEY of the second header with NEW; put the cards ADD before its END."""
    out = bytearray(blob)
    at = lambda k, start=2880: next(i for i in range(start, len(out), 80) if out[i:i + 8] == k.ljust(8).encode())
    if new is not None:
        i = at(key)
        out[i:i + 80] = new.ljust(80).encode()
    end = at("END")
    assert (end + 80 * (len(add) + 1)) <= (end // 2880 + 1) * 2880, "no room in the header block"
    for c in add:
        out[end:end + 80] = c.ljust(80).encode()
        end += 80
    out[end:end + 80] = "END".ljust(80).encode()
    return bytes(out)
w("zimage_twice.fits", edit(rice, "ZTILE2", card("ZTILE2", "0"), [card("ZIMAGE", "F")]))
w("ztile_nospace.fits", edit(rice, "ZTILE2", "ZTILE2  =0"))
w("ztile_lower.fits", edit(rice, "ZTILE2", card("ztile2", "0")))
# cfitsio takes ' BINTABLE' and '3DTABLE' for binary tables too: the tile check must run
w("xtension_3d.fits", edit(edit(rice, "ZTILE2", card("ZTILE2", "0")), "XTENSION", card("XTENSION", "'3DTABLE '")))
w("xtension_blank.fits", edit(edit(rice, "ZTILE2", card("ZTILE2", "0")), "XTENSION", card("XTENSION", "' BINTABLE'")))
w("bscale_hierarch.fits", primary(["HIERARCH BSCALE = 0".ljust(80)], np.arange(64, dtype=">i2").reshape(8, 8), 16))
w("bzero_twice.fits", primary([card("BZERO", "0"), card("BZERO", "32768")], np.arange(64, dtype=">i2").reshape(8, 8), 16))
PYEOF

# refuse FILE WORDS...: `tide info FILE` and `tide stats FILE` exit 1, stderr names the file
# and each WORD, stdout is empty and no file appears.
refuse() {
    local f=$1
    shift
    for cmd in info stats; do
        local before after out rc
        before=$(ls -A | sort)
        out=$("$TIDE" "$cmd" --backend cpu "$f" 2>"$E"); rc=$?
        after=$(ls -A | sort)
        [ $rc -eq 1 ] || bad "$cmd $f: exit $rc, want 1 ($(head -c 300 "$E"))"
        [ -z "$out" ] || bad "$cmd $f: printed on stdout"
        [ "$before" = "$after" ] || bad "$cmd $f: files changed"
        grep -qF "$f" "$E" || bad "$cmd $f: message does not name the file: $(cat "$E")"
        for word in "$@"; do
            grep -qiF -- "$word" "$E" || bad "$cmd $f: message lacks '$word': $(cat "$E")"
        done
    done
    rm -f "$E"
}
accept() {
    local f=$1
    "$TIDE" stats --backend cpu "$f" >/dev/null 2>"$E" || bad "stats $f: refused: $(cat "$E")"
    "$TIDE" info "$f" >/dev/null 2>"$E" || bad "info $f: refused: $(cat "$E")"
    rm -f "$E"
}

accept good.fits
accept latin1_comment.fits
refuse int_string.fits "HDU 1" "EXTVER must be an integer"
refuse int_digits.fits "HDU 1" "EXTVER must be an integer"
refuse ttype_unquoted.fits "HDU 1" "TTYPE1 must be a quoted string"
refuse control_char.fits "HDU 0" "control character"
refuse no_end.fits "no END card"
refuse bitpix7.fits "BITPIX"
refuse naxis1000.fits "NAXIS"
refuse wrap.fits "overflows"
refuse bscale0.fits "BSCALE = 0"
refuse bscale_nan.fits "BSCALE must be a number"
refuse zimage_twice.fits "HDU 1" "both set ZIMAGE"
refuse ztile_nospace.fits "HDU 1" "cfitsio would read it as ZTILE2"
refuse ztile_lower.fits "HDU 1" "cfitsio would read it as ZTILE2"
refuse xtension_3d.fits "HDU 1" "ZTILE2 = 0"
refuse xtension_blank.fits "HDU 1" "ZTILE2 = 0"
refuse bscale_hierarch.fits "HDU 0" "cfitsio would read it as BSCALE"
refuse bzero_twice.fits "HDU 0" "both set BZERO"

# fit-dipoles: the wrapped cube is refused, the NaN stamp pixel is skipped (no crash)
"$TIDE" fit-dipoles --backend cpu wrap.fits -o fit.fits 2>"$E"; rc=$?
[ $rc -eq 1 ] && grep -q "overflows" "$E" || bad "fit-dipoles wrap.fits: exit $rc: $(cat "$E")"
[ ! -e fit.fits ] || bad "fit-dipoles wrap.fits wrote fit.fits"
"$TIDE" fit-dipoles --backend cpu stamps_nan.fits -o fit.fits >/dev/null 2>"$E" ||
    bad "fit-dipoles stamps_nan.fits failed: $(cat "$E")"
"$PY" - <<'PYEOF' || bad "fit-dipoles of the NaN stamp: wrong result"
from astropy.io import fits
t = fits.getdata("fit.fits", "DIPOLES")
assert len(t) == 1 and t["NPIX"][0] == 80, t["NPIX"]  # 81 pixels less the NaN one
assert t["FIT_STATUS"][0] == 0, t["FIT_STATUS"]
# 1-based stamp coordinates: the lobes were drawn at 0-based x = 3 and 5.5
assert abs(t["DIP_XPOS"][0] - 4) < 0.05 and abs(t["DIP_XNEG"][0] - 6.5) < 0.05
PYEOF

# WCS: a singular or missing scale is no WCS, with the reason; a sane one is read
for f in wcs_singular:singular wcs_zero:singular wcs_noscale:"no pixel scale" wcs_sip1000:A_ORDER; do
    out=$("$TIDE" info "${f%%:*}.fits" 2>&1)
    echo "$out" | grep -q "WCS error: .*${f#*:}" || bad "info ${f%%:*}: the WCS problem is not reported: $out"
    echo "$out" | grep -q "arcsec/pixel" && bad "info ${f%%:*}: printed a scale: $out"
done
"$TIDE" info wcs_highbytes.fits 2>"$E" | grep -q "scale 0.3600 arcsec/pixel" ||
    bad "info wcs_highbytes.fits: the WCS beside non-ASCII comments is lost: $(cat "$E")"
"$TIDE" info wcs_unclosed.fits >/dev/null 2>"$E"; rc=$?
[ $rc -eq 0 ] || bad "info wcs_unclosed.fits: exit $rc (the broken CTYPE1 must only cost the WCS)"
"$TIDE" info wcs_ok.fits | grep -q "scale 0.3600 arcsec/pixel" || bad "info wcs_ok.fits: scale 0.36\"/px not shown"

# names: local files only, unless --cfitsio-names
for spec in "http://127.0.0.1:9/a.fits" "mem://" "-" "stdin" "good.fits[1][x>5]" \
            "good.fits[bin x,y]" "good.fits(copy.fits)" "good.fits[pix X*2]"; do
    "$TIDE" stats --backend cpu "$spec" >/dev/null 2>"$E" </dev/null; rc=$?
    [ $rc -eq 1 ] && grep -q "not a local FITS file name" "$E" ||
        bad "stats '$spec': exit $rc: $(cat "$E")"
done
[ ! -e copy.fits ] || bad "an output named in an input name was written"
"$TIDE" stats --backend cpu "good.fits[0][2:5,2:5]" >/dev/null 2>"$E" || bad "section refused: $(cat "$E")"
"$TIDE" stats --backend cpu "good.fits+0" >/dev/null 2>"$E" || bad "FILE+N refused: $(cat "$E")"
"$TIDE" stats --backend cpu --cfitsio-names - <good.fits >/dev/null 2>"$E" ||
    bad "--cfitsio-names did not allow stdin: $(cat "$E")"

# threads: an absurd team is refused, not a crash inside libgomp
"$TIDE" stats --backend cpu --threads 100000 good.fits >/dev/null 2>"$E"; rc=$?
[ $rc -eq 1 ] && grep -q "threads = 100000" "$E" || bad "--threads 100000: exit $rc: $(cat "$E")"

# diff: two science frames with one stem are refused, the message names the shared output
"$TIDE" diff --backend cpu --template good.fits good.fits good.fit -o out 2>"$E" >/dev/null; rc=$?
[ $rc -eq 2 ] && grep -q "would both write out/good" "$E" || bad "diff one stem: exit $rc: $(cat "$E")"

[ $fail -eq 0 ] && echo "all hostile-FITS cases pass"
exit $fail
