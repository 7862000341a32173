#!/bin/bash
# tide query on the SQLite store. Two frames are written through the C API from Python
# (ctypes, the way an observatory script would call libtide), their positions kept aside;
# cones from `tide query` are checked against a brute-force count in Python. Covers: cone in
# text / CSV / JSON, sexagesimal RA/DEC and radius units, --limit, RA wrap, an empty cone,
# image look-up by file, by checksum and by the checksum of a file on disk, TIDE_STORE and
# the default tide-catalog.db, usage errors (exit 2), failures (exit 1), and
# `tide bench --store` on a small catalog (runs, prints a SQLite line, cleans up).
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cd "$T" || exit 1

# --- the insert benchmark, small ---------------------------------------------------------
db="$T/cat.db"
"$TIDE" bench --store --rows 2000 --repeats 1 --dir "$T" >"$T/bench.txt" \
    || bad "bench --store failed: $(cat "$T/bench.txt")"
grep -Eq "^sqlite +[0-9.]+" "$T/bench.txt" || bad "bench --store output: $(cat "$T/bench.txt")"
ls "$T"/tide-bench-store-* >/dev/null 2>&1 && bad "bench --store left its SQLite file behind"

# --- a store with two frames, written through the C API ----------------------------------
LIB=${TIDE_LIB:?}
"$PY" - "$LIB" "$db" <<'PYEOF' || bad "filling the store through the C API failed"
import ctypes, math, random, sys
lib = ctypes.CDLL(sys.argv[1])
db = sys.argv[2].encode()

class Column(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 72), ("unit", ctypes.c_char * 32),
                ("disp", ctypes.c_char * 16), ("comment", ctypes.c_char * 72),
                ("type", ctypes.c_int), ("repeat", ctypes.c_int64), ("data", ctypes.c_void_p)]
class Table(ctypes.Structure):
    _fields_ = [("nrows", ctypes.c_int64), ("capacity", ctypes.c_int64), ("ncols", ctypes.c_int),
                ("cap_cols", ctypes.c_int), ("cols", ctypes.POINTER(Column))]
class Frame(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int64), ("file", ctypes.c_char * 1024),
                ("checksum", ctypes.c_char * 72), ("processed", ctypes.c_char * 32),
                ("tide_version", ctypes.c_char * 32), ("date_obs", ctypes.c_char * 32),
                ("mjd", ctypes.c_double), ("exptime", ctypes.c_double),
                ("filter", ctypes.c_char * 32), ("airmass", ctypes.c_double),
                ("naxis1", ctypes.c_int64), ("naxis2", ctypes.c_int64)] + \
               [(n, ctypes.c_double) for n in ("ra_center", "dec_center", "scale_arcsec",
                "rotation_deg", "fov_w_deg", "fov_h_deg", "zp", "ezp")] + \
               [("zp_nstar", ctypes.c_int64), ("maglim5", ctypes.c_double),
                ("maglim3", ctypes.c_double), ("nsources", ctypes.c_int64),
                ("fwhm", ctypes.c_double), ("sky", ctypes.c_double),
                ("header", ctypes.c_char_p)]
F64, F32, I32 = 0, 1, 3
store = ctypes.c_void_p()
assert lib.tide_store_open(db, None, ctypes.byref(store)) == 0
random.seed(7)
for name, n, ra0, dec0 in ((b"a.fits", 400, 0.0, 10.0), (b"b.fits", 300, 120.0, -45.0)):
    t = Table()
    lib.tide_table_init(ctypes.byref(t))
    for c, ty in ((b"NUMBER", I32), (b"ALPHA_J2000", F64), (b"DELTA_J2000", F64),
                  (b"MAG_AUTO", F32), (b"MAGERR_AUTO", F32)):
        assert lib.tide_table_add_column(ctypes.byref(t), c, ty, ctypes.c_int64(1),
                                         None, None, None) == 0
    assert lib.tide_table_resize(ctypes.byref(t), ctypes.c_int64(n)) == 0
    num = ctypes.cast(t.cols[0].data, ctypes.POINTER(ctypes.c_int32))
    ra = ctypes.cast(t.cols[1].data, ctypes.POINTER(ctypes.c_double))
    dec = ctypes.cast(t.cols[2].data, ctypes.POINTER(ctypes.c_double))
    mag = ctypes.cast(t.cols[3].data, ctypes.POINTER(ctypes.c_float))
    for i in range(n):
        num[i] = i + 1
        ra[i] = (ra0 + random.uniform(-0.5, 0.5)) % 360.0
        dec[i] = dec0 + random.uniform(-0.5, 0.5)
        mag[i] = 14 + 0.01 * i
    f = Frame()
    lib.tide_store_frame_init(ctypes.byref(f))
    f.file = name
    f.filter = b"r"
    f.zp = 25.5
    lib.tide_store_sha256_hex(name, ctypes.c_int64(len(name)),
                              ctypes.c_void_p(ctypes.addressof(f) + Frame.checksum.offset))
    assert lib.tide_store_put_frame(store, ctypes.byref(f), ctypes.byref(t), None) == 0
    with open(name.decode() + ".pos", "w") as out:
        for i in range(n):
            out.write("%d %.17g %.17g\n" % (i + 1, ra[i], dec[i]))
    lib.tide_table_free(ctypes.byref(t))
lib.tide_store_close(store)
PYEOF

# --- cone: text, CSV, JSON against a brute-force count -------------------------------------
brute() { # RA DEC RADIUS_DEG: sources of a.fits and b.fits within the radius
    "$PY" - "$@" <<'PYEOF'
import math, sys
ra0, dec0, r = map(float, sys.argv[1:4])
def sep(a1, d1, a2, d2):
    a1, d1, a2, d2 = map(math.radians, (a1, d1, a2, d2))
    dra = a2 - a1
    x = math.cos(d2) * math.sin(dra)
    y = math.cos(d1) * math.sin(d2) - math.sin(d1) * math.cos(d2) * math.cos(dra)
    z = math.sin(d1) * math.sin(d2) + math.cos(d1) * math.cos(d2) * math.cos(dra)
    return math.degrees(math.atan2(math.hypot(x, y), z))
n = 0
for f in ("a.fits.pos", "b.fits.pos"):
    for line in open(f):
        _, a, d = line.split()
        n += sep(ra0, dec0, float(a), float(d)) <= r
print(n)
PYEOF
}
for cone in "0 10 0.2" "359.8 10.1 0.3" "120 -45 0.5" "0.1 9.9 1"; do
    set -- $cone
    want=$(brute "$1" "$2" "$3")
    got=$("$TIDE" query cone "$1" "$2" "$3" --store "$db" --csv | tail -n +2 | wc -l)
    [ "$want" = "$got" ] || bad "cone $cone: brute force $want, tide query $got"
done
[ "$(brute 0 10 0.2)" -gt 5 ] || bad "the test cone holds too few sources"

out=$("$TIDE" query cone 00:00:00 +10:00:00 12m --store "$db") || bad "sexagesimal cone failed"
n12=$("$TIDE" query cone 0 10 0.2 --store "$db" --csv | tail -n +2 | wc -l)
head -1 <<<"$out" | grep -q "^$n12 sources within 0.2 deg of (0.0000000, +10.0000000)" \
    || bad "text header: $(head -1 <<<"$out")"
grep -q "a.fits" <<<"$out" || bad "text rows name the file: $out"
n720=$("$TIDE" query cone 0 10 "720\"" --store "$db" --csv | tail -n +2 | wc -l)
n720s=$("$TIDE" query cone 0 10 720s --store "$db" --csv | tail -n +2 | wc -l)
[ "$n720" = "$n12" ] && [ "$n720s" = "$n12" ] || bad "radius units: $n12 / $n720 / $n720s"

hdr=$("$TIDE" query cone 0 10 0.2 --store "$db" --csv | head -1)
[ "$hdr" = "IMAGE_ID,FILE,SEQ,ALPHA_J2000,DELTA_J2000,NUMBER,MAG_AUTO,MAGERR_AUTO,SEP_ARCSEC" ] \
    || bad "CSV header: $hdr"

"$TIDE" query cone 0 10 1 --store "$db" --json --limit 3 >"$T/c.json" || bad "JSON cone failed"
"$PY" - "$T/c.json" <<'PYEOF' || bad "JSON cone content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["count"] == 3 and len(d["sources"]) == 3, d["count"]
s = d["sources"]
assert [x["SEQ"] for x in s] == sorted(x["SEQ"] for x in s)
assert all(x["FILE"] == "a.fits" and x["SEP_ARCSEC"] <= 3600 for x in s)
assert s[0]["MAGERR_AUTO"] == 0.0 and isinstance(s[0]["NUMBER"], int)
PYEOF

out=$("$TIDE" query cone 200 80 0.1 --store "$db") || bad "an empty cone is not an error"
grep -q "^0 sources" <<<"$out" || bad "empty cone: $out"

# --- image -----------------------------------------------------------------------------
out=$("$TIDE" query image b.fits --store "sqlite:$db") || bad "query image b.fits failed"
grep -Eq "^file +b.fits" <<<"$out" && grep -Eq "^zp +25.5" <<<"$out" \
    && grep -Eq "^nsources +300" <<<"$out" || bad "query image text: $out"
sum=$("$PY" -c 'import hashlib; print(hashlib.sha256(b"a.fits").hexdigest())')
out=$("$TIDE" query image "$sum" --store "$db" --json) || bad "query image by checksum failed"
"$PY" -c 'import json, sys
d = json.loads(sys.argv[1])
assert d["file"] == "a.fits" and d["airmass"] is None and d["nsources"] == 400' "$out" \
    || bad "query image JSON: $out"
# a file on disk is looked up by its checksum: write the bytes whose SHA-256 is a.fits's key
printf 'a.fits' >"$T/renamed.fits"
out=$("$TIDE" query image "$T/renamed.fits" --store "$db") || bad "image by the file's checksum"
grep -Eq "^file +a.fits" <<<"$out" || bad "image by the file's checksum: $out"
"$TIDE" query image nothing.fits --store "$db" 2>"$T/err"
[ $? = 1 ] || bad "missing image: exit status should be 1"
grep -q "no image" "$T/err" || bad "missing image message: $(cat "$T/err")"

# --- store selection, errors -------------------------------------------------------------
TIDE_STORE="$db" "$TIDE" query cone 0 10 0.2 >/dev/null || bad "TIDE_STORE not used"
(cd "$T" && cp "$db" tide-catalog.db && env -u TIDE_STORE "$TIDE" query cone 0 10 0.2 >/dev/null) \
    || bad "the default tide-catalog.db not used"
mkdir "$T/empty"
(cd "$T/empty" && env -u TIDE_STORE "$TIDE" query cone 0 10 1 2>"$T/err")
[ $? = 1 ] || bad "no store: exit status should be 1"
grep -q "no catalog store at tide-catalog.db" "$T/err" || bad "no store message: $(cat "$T/err")"
[ -e "$T/empty/tide-catalog.db" ] && bad "a query created an empty store"
for args in "cone 0 10" "cone 0 95 1" "cone 0 10 1x" "cone x 10 1" "frob" "cone 0 10 1 --limit 0" \
            "cone 0 10 1 --json --csv" "image"; do
    "$TIDE" query $args --store "$db" >/dev/null 2>&1
    [ $? = 2 ] || bad "usage error expected (exit 2) for: query $args"
done
"$TIDE" query cone 0 10 1 --store "postgresql://127.0.0.1:1/x?connect_timeout=1" 2>"$T/err"
[ $? = 1 ] || bad "unreachable PostgreSQL: exit status should be 1"
grep -q "127.0.0.1" "$T/err" || bad "unreachable PostgreSQL message: $(cat "$T/err")"
"$TIDE" query --help | grep -q "tide-catalog.db" || bad "--help names the default store"

[ $fail = 0 ] && echo "ok"
exit $fail
