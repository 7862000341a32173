#!/bin/bash
# tide xray end to end on the CPU: sim writes a 1024×1024-pixel, 100-delay pair (lit only in a
# 128×128 ROI, so the files stay small), probe describes it, fit recovers the simulated modes
# per 16×16 tile (zero delay found in the data), the maps' FITS/HDF5/PNG/JSON outputs have
# their shapes, the Savitzky–Golay smoothing equals scipy's savgol_filter, the legate-cube
# layout works, sim is deterministic, and corrupt or mismatched inputs (made with h5py) give
# errors naming the file and the dataset.
set -u
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$PY" -c 'import numpy, h5py, scipy.signal, astropy' 2>/dev/null ||
    { echo "skip: needs python3-numpy, python3-h5py, python3-scipy, python3-astropy"; exit 77; }

# ---- sim, probe ---------------------------------------------------------------------------
"$TIDE" xray sim -o "$T/s" --active 448,448,128,128 --seed 7 >/dev/null || bad "sim failed"
"$TIDE" xray sim -o "$T/s2" --active 448,448,128,128 --seed 7 >/dev/null || bad "sim 2 failed"
cmp -s "$T/s/on.h5" "$T/s2/on.h5" && cmp -s "$T/s/off.h5" "$T/s2/off.h5" ||
    bad "sim is not deterministic"
rm -rf "$T/s2"
out=$("$TIDE" xray probe "$T/s/on.h5" "$T/s/off.h5") || bad "probe failed"
echo "$out" | grep -q "cropped-cube, imgs float32 100 frames x 1024 x 1024" || bad "probe: $out"
echo "$out" | grep -q "pair: consistent" || bad "probe pair: $out"
"$TIDE" xray probe "$T/s/on.h5" "$T/s/off.h5" --json >"$T/probe.json" || bad "probe --json"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["on"]["shape"]==[100,1024,1024] and d["on"]["uniform"], d' "$T/probe.json" || bad "probe json"

# ---- fit per 16x16 tile, recovery against truth.h5 ----------------------------------------
"$TIDE" xray fit "$T/s/on.h5" "$T/s/off.h5" -o "$T/f" --roi 448,448,128,128 --tile-y 16 \
    --integrate 0 --traces --backend cpu >"$T/fit.txt" || { bad "fit failed"; cat "$T/fit.txt"; }
grep -q "64 traces (8 x 8): 64 ok" "$T/fit.txt" || bad "fit: $(cat "$T/fit.txt")"
"$PY" - "$T" <<'PYEOF' || bad "recovery / outputs"
import json, sys
import numpy as np, h5py
from astropy.io import fits
from scipy.signal import savgol_filter
t = sys.argv[1]
s = json.load(open(f"{t}/f/summary.json"))
assert s["zero_index"] == 4 and s["zero_from_data"], s
assert s["ok"] == 64 and len(s["inputs"][0]["sha256"]) == 64, s
tr = h5py.File(f"{t}/s/truth.h5", "r")
ys, xs = slice(448 // 16, 576 // 16), slice(448 // 16, 576 // 16)
om, amp, dec = tr["omega"][:, ys, xs], tr["amp"][:, ys, xs], tr["decay"][:, ys, xs]
with fits.open(f"{t}/f/maps.fits") as h:
    names = [x.name for x in h]
    for n in ("FREQ", "DAMP", "AMP", "PHASE", "FFT", "STATUS"):
        assert n in names, names
    f = h["FREQ"].data * 2 * np.pi
    a = h["AMP"].data
    assert f.shape == (2, 8, 8) and h["STATUS"].data.shape == (8, 8), f.shape
    assert (h["STATUS"].data == 1).all()
    assert h["FFT"].data.shape[1:] == (8, 8)
rel = lambda x, y: np.abs(x - y) / np.abs(y)
# maps are ordered by amplitude; match each truth mode to the fitted one nearest in frequency
k1 = np.argmin(np.abs(f - om[0][None]), axis=0)
k2 = np.argmin(np.abs(f - om[1][None]), axis=0)
pick = lambda m, k: np.take_along_axis(m, k[None], 0)[0]
assert (k1 != k2).all()
e_w1, e_w2, e_a1 = rel(pick(f, k1), om[0]), rel(pick(f, k2), om[1]), rel(pick(a, k1), amp[0])
print(f"recovery per tile: |dw1/w1| median {np.median(e_w1):.2e} max {e_w1.max():.2e}, "
      f"|dw2/w2| median {np.median(e_w2):.2e}, |dA1/A1| median {np.median(e_a1):.2e}")
assert np.median(e_w1) < 0.005 and e_w1.max() < 0.03, e_w1
assert np.median(e_w2) < 0.05, e_w2
assert np.median(e_a1) < 0.03, e_a1
m = h5py.File(f"{t}/f/maps.h5", "r")
assert m["freq"].shape == (2, 8, 8) and m["fit_status"].shape == (8, 8)
assert np.allclose(m["freq"][...], h5py.File(f"{t}/f/maps.h5", "r")["freq"][...], equal_nan=True)
# the smoothing of the fitted segment is scipy's savgol_filter (mode interp)
x = h5py.File(f"{t}/f/traces.h5", "r")
r, sm, st = x["ratio"][...], x["smoothed"][...], int(x["fit_start"][0])
ref = savgol_filter(r[:, :, st:st + sm.shape[2]], 5, 3, axis=2)
d = np.abs(ref - sm).max()
print(f"savgol vs scipy: max |diff| {d:.2e}")
assert d < 1e-12, d
PYEOF
for p in status freq_0 amp_0 freq_1 amp_1 damp_0; do
    [ -s "$T/f/$p.png" ] || bad "no $p.png"
done

# ---- default tiling (16-column strips, rows integrated +-3), traces alone -----------------
"$TIDE" xray fit "$T/s/on.h5" "$T/s/off.h5" -o "$T/g" --roi 448,448,128,128 --no-png \
    --bench >"$T/g.txt" || bad "default fit failed"
grep -q "1024 traces (128 x 8): 1024 ok" "$T/g.txt" || bad "default fit: $(cat "$T/g.txt")"
grep -q "^bench: read" "$T/g.txt" || bad "no bench line"
"$TIDE" xray traces "$T/s/on.h5" "$T/s/off.h5" -o "$T/tr" --roi 448,448,128,128 >/dev/null ||
    bad "traces failed"
[ -s "$T/tr/traces.h5" ] && [ -s "$T/tr/summary.json" ] && [ ! -e "$T/tr/maps.fits" ] ||
    bad "traces outputs"

# ---- legate-cube ------------------------------------------------------------------------------
"$TIDE" xray sim -o "$T/l" --layout legate --ny 64 --nx 64 >/dev/null || bad "legate sim"
out=$("$TIDE" xray probe "$T/l/on.h5" "$T/l/off.h5") || bad "legate probe"
echo "$out" | grep -q "legate-cube, jungfrau1M_data" || bad "legate probe: $out"
echo "$out" | grep -q "monitor ipm3__sum" || bad "legate monitor: $out"
"$TIDE" xray fit "$T/l/on.h5" "$T/l/off.h5" -o "$T/lf" --tile-y 16 --zero-index 4 --no-png \
    >"$T/lf.txt" || bad "legate fit"
grep -q "16 traces (4 x 4): 16 ok" "$T/lf.txt" || bad "legate fit: $(cat "$T/lf.txt")"
"$TIDE" xray fit "$T/l/on.h5" "$T/l/off.h5" -o "$T/lz" --tile-y 16 --zero-delay 0.36 --no-png \
    --json >"$T/lz.json" || bad "fit --zero-delay"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["zero_index"]==4 and d["ok"]==16, d' "$T/lz.json" ||
    bad "--zero-delay 0.36: $(cat "$T/lz.json")"

# ---- distortions: glitches and a chirp are absorbed; heavy clipping fails with a reason -------
"$TIDE" xray sim -o "$T/d1" --ny 64 --nx 64 --glitches 0.001 --chirp 0.01 >/dev/null &&
    "$TIDE" xray fit "$T/d1/on.h5" "$T/d1/off.h5" -o "$T/d1f" --tile-y 16 --integrate 0 --no-png \
        >"$T/d1.txt" || bad "glitch/chirp sim or fit"
grep -q "16 traces (4 x 4): 16 ok" "$T/d1.txt" || bad "glitches + chirp: $(cat "$T/d1.txt")"
"$TIDE" xray sim -o "$T/d2" --ny 64 --nx 64 --clip 1300 >/dev/null &&
    "$TIDE" xray fit "$T/d2/on.h5" "$T/d2/off.h5" -o "$T/d2f" --tile-y 16 --integrate 0 --no-png \
        >/dev/null || bad "clip sim or fit"
"$PY" -c '
import sys, h5py, numpy as np
m = h5py.File(sys.argv[1], "r")
st, rs = m["fit_status"][...], m["reason"][...]
assert set(np.unique(st)) <= {1, 3} and (rs[st == 3] == 7).all() and (rs[st == 1] == 0).all(), (st, rs)
' "$T/d2f/maps.h5" || bad "clipped fit statuses"

# ---- bad inputs -------------------------------------------------------------------------------
"$TIDE" xray sim -o "$T/m" --ny 64 --nx 48 >/dev/null || bad "sim m"
"$PY" - "$T" <<'PYEOF' || bad "cannot make bad files"
import sys, shutil
import numpy as np, h5py
t = sys.argv[1]
def variant(name, fn):
    shutil.copy(f"{t}/l/on.h5" if name.startswith("leg") else f"{t}/m/on.h5", f"{t}/{name}.h5")
    with h5py.File(f"{t}/{name}.h5", "r+") as h:
        fn(h)
variant("noi0", lambda h: h.__delitem__("i0"))
def rank2(h):
    del h["imgs"]; h["imgs"] = np.zeros((100, 64), np.float32)
variant("rank2", rank2)
def nan(h):
    v = h["scan_var"][...]; v[5] = np.nan; h["scan_var"][...] = v
variant("nandelay", nan)
def short(h):
    del h["bin_count"]; h["bin_count"] = np.ones(99)
variant("short", short)
def shift(h):
    h["scan_var"][...] = h["scan_var"][...] + 0.05
variant("shifted", shift)
def nonuni(h):
    v = h["scan_var"][...]; v[50:] += 0.03; h["scan_var"][...] = v
variant("nonuniform", nonuni)
def legmon(h):
    del h["ipm3__sum"]
variant("legnomon", legmon)
variant("noimgs", lambda h: h.__delitem__("imgs"))
# the same cube chunked per frame and gzip-compressed, as a facility may write it
for r in ("on", "off"):
    shutil.copy(f"{t}/m/{r}.h5", f"{t}/gz_{r}.h5")
    with h5py.File(f"{t}/gz_{r}.h5", "r+") as h:
        d = h["imgs"][...]
        del h["imgs"]
        h.create_dataset("imgs", data=d, chunks=(1,) + d.shape[1:], compression="gzip")
open(f"{t}/text.h5", "w").write("not hdf5\n")
PYEOF
"$TIDE" xray fit "$T/m/on.h5" "$T/m/off.h5" -o "$T/mf" --tile-y 16 --no-png >/dev/null &&
    "$TIDE" xray fit "$T/gz_on.h5" "$T/gz_off.h5" -o "$T/gzf" --tile-y 16 --no-png --block-rows 5 \
        >/dev/null || bad "fit of the gzip cube"
"$PY" -c '
import sys, h5py, numpy as np
a, b = (h5py.File(f"{sys.argv[1]}/{d}/maps.h5", "r") for d in ("mf", "gzf"))
for k in ("freq", "amp", "damp", "phase", "fft", "fit_status"):
    assert np.array_equal(a[k][...], b[k][...], equal_nan=True), k
' "$T" || bad "the gzip cube read in 5-row blocks gives other maps"

expect_err() { # expect_err PATTERN ARGS...: exit 1 and stderr matching PATTERN
    local pat=$1
    shift
    "$TIDE" xray "$@" >/dev/null 2>"$T/err.txt"
    local rc=$?
    [ $rc -eq 1 ] || bad "xray $* exited $rc, expected 1"
    grep -q -- "$pat" "$T/err.txt" || bad "xray $*: '$(cat "$T/err.txt")' lacks '$pat'"
}
M="$T/m/off.h5"
expect_err "noi0.h5: dataset i0 is missing" probe "$T/noi0.h5" "$M"
expect_err "rank2.h5: dataset imgs has rank 2, expected 3" probe "$T/rank2.h5" "$M"
expect_err "nandelay.h5: dataset scan_var: delay 5 is not finite" probe "$T/nandelay.h5" "$M"
expect_err "short.h5: dataset bin_count has 99 values" probe "$T/short.h5" "$M"
expect_err "shifted.h5 and .*off.h5: dataset scan_var differs at frame 0" probe "$T/shifted.h5" "$M"
expect_err "legnomon.h5: legate-cube without a monitor pair" probe "$T/legnomon.h5" "$T/l/off.h5"
expect_err "noimgs.h5: neither dataset imgs" probe "$T/noimgs.h5" "$M"
expect_err "text.h5: cannot open as an HDF5 file" probe "$T/text.h5" "$M"
expect_err "absent.h5: cannot open" probe "$T/absent.h5" "$M"
expect_err "dataset imgs shapes differ" probe "$T/m/on.h5" "$T/s/off.h5"
expect_err "different layouts" probe "$T/s/on.h5" "$T/l/off.h5"
expect_err "nonuniform.h5: dataset scan_var: delays are not equally spaced" \
    fit "$T/nonuniform.h5" "$T/nonuniform.h5" -o "$T/x1"
expect_err "ROI 40,0,16,16 is outside" fit "$T/m/on.h5" "$M" -o "$T/x2" --roi 40,0,16,16
[ ! -e "$T/x1/maps.fits" ] && [ ! -e "$T/x2/maps.fits" ] || bad "failed fit left outputs"
"$TIDE" xray fit "$T/m/on.h5" "$M" >/dev/null 2>&1
[ $? -eq 2 ] || bad "fit without -o: not a usage error"
"$TIDE" xray frobnicate >/dev/null 2>&1
[ $? -eq 2 ] || bad "unknown subcommand: not a usage error"

[ $fail -eq 0 ] && echo "ok"
exit $fail
