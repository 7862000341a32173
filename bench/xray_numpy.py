#!/usr/bin/python3
"""xray_numpy.py — the per-trace NumPy loop that cuPhoton ships (numpy.linalg.svd and
numpy.roots per trace, one after another), timed on the traces `tide xray fit --traces`
wrote, beside tide's own fit of the same traces (issue 20's speed comparison).

usage: xray_numpy.py DIR [--components K] [--max N] [--json]

DIR is a `tide xray fit ... --traces -o DIR` output: DIR/traces.h5 holds the smoothed
segments that tide fitted (dataset `smoothed`, trace grid × samples) and DIR/summary.json the
delay step and model order. The loop fits at most N traces (all by default) with the method of
cuPhoton's linear prediction (LPSVD, Kumaresan–Tufts backward prediction; its defaults), and
prints the seconds per trace and how its frequencies compare with tide's maps.h5.

The method, written here from the description of cuPhoton §7.2: for n + 1 samples,
m = floor(0.75 n) coefficients, n - m rows, Hankel H[i, :] = s[i+1 : i+1+m]; SVD; order
k = min(K, rank); c = V_k Σ_k⁻¹ U_kᵀ s[0:rows]; roots of [1, -c]; decay = ln|z|/dt,
ω = arg(z)/dt, kept with ω >= 0 and decay >= 0; amplitudes and phases by least squares
(numpy.linalg.lstsq) on [e^(-bt) cos ωt, -e^(-bt) sin ωt, ..., 1]."""
import argparse
import json
import os
import sys
import time

import numpy as np


def read_h5(path, name):
    """One float64 dataset of an HDF5 file: through h5py where installed, else through the
    libhdf5 that tide itself links (ctypes; the GPU machine has no h5py), found on
    LD_LIBRARY_PATH or as TIDE_HDF5_LIB."""
    try:
        import h5py
        with h5py.File(path, "r") as h:
            return h[name][...]
    except ImportError:
        pass
    import ctypes
    import ctypes.util
    import glob
    lib_path = os.environ.get("TIDE_HDF5_LIB")
    for d in ([] if lib_path else os.environ.get("LD_LIBRARY_PATH", "").split(":")):
        hits = sorted(glob.glob(os.path.join(d, "libhdf5*.so*")))
        hits = [h for h in hits if "hl" not in os.path.basename(h)]
        if d and hits:
            lib_path = hits[0]
            break
    lib = ctypes.CDLL(lib_path or ctypes.util.find_library("hdf5_serial") or "libhdf5.so")
    hid = ctypes.c_int64
    lib.H5open()
    lib.H5Fopen.restype = hid
    lib.H5Fopen.argtypes = [ctypes.c_char_p, ctypes.c_uint, hid]
    lib.H5Dopen2.restype = hid
    lib.H5Dopen2.argtypes = [hid, ctypes.c_char_p, hid]
    lib.H5Dget_space.restype = hid
    lib.H5Dget_space.argtypes = [hid]
    lib.H5Sget_simple_extent_dims.argtypes = [hid, ctypes.c_void_p, ctypes.c_void_p]
    lib.H5Dread.argtypes = [hid, hid, hid, hid, hid, ctypes.c_void_p]
    for f in ("H5Dclose", "H5Sclose", "H5Fclose"):
        getattr(lib, f).argtypes = [hid]
    fid = lib.H5Fopen(path.encode(), 0, 0)  # H5F_ACC_RDONLY, H5P_DEFAULT
    if fid < 0:
        raise OSError(f"{path}: HDF5 open failed")
    did = lib.H5Dopen2(fid, name.encode(), 0)
    if did < 0:
        raise OSError(f"{path}: no dataset {name}")
    sid = lib.H5Dget_space(did)
    dims = (ctypes.c_uint64 * 32)()
    nd = lib.H5Sget_simple_extent_dims(sid, dims, None)
    out = np.empty(tuple(dims[i] for i in range(nd)), dtype=np.float64)
    native = hid.in_dll(lib, "H5T_NATIVE_DOUBLE_g").value
    if lib.H5Dread(did, native, 0, 0, 0, out.ctypes.data) < 0:  # H5S_ALL, H5P_DEFAULT
        raise OSError(f"{path}: reading {name} failed")
    lib.H5Sclose(sid)
    lib.H5Dclose(did)
    lib.H5Fclose(fid)
    return out


def lpsvd(s, dt, k):
    """One trace: a list of (omega, decay, amp, phase) by decreasing amplitude, and the
    constant."""
    n = len(s) - 1
    m = (3 * n) // 4
    rows = n - m
    H = np.array([s[i + 1:i + 1 + m] for i in range(rows)])
    U, sig, Vt = np.linalg.svd(H, full_matrices=False)
    rank = int(np.sum(np.isfinite(sig) & (sig > 1e-12 * sig[0])))
    k = min(k, rows, rank)
    c = Vt[:k].T @ ((U[:, :k].T @ s[:rows]) / sig[:k])
    z = np.roots(np.concatenate(([1.0], -c)))
    modes = []
    span = dt * (len(s) - 1)
    for w in z:
        mod = abs(w)
        if mod == 0:
            continue
        b = np.log(mod) / dt
        real = abs(w.imag) <= 1e-8 * mod
        if (not real and w.imag < 0) or (real and w.real < 0) or b < 0:
            continue
        if real and b * span < 0.01:
            continue
        modes.append((0.0 if real else np.angle(w) / dt, b, real))
    modes.sort(key=lambda q: q[1])
    used, p = [], 0
    for q in modes:
        need = 1 if q[2] else 2
        if p + need > k:
            break
        used.append(q)
        p += need
    t = np.arange(len(s)) * dt
    cols = []
    for om, b, real in used:
        e = np.exp(-b * t)
        if real:
            cols.append(e)
        else:
            cols += [e * np.cos(om * t), -e * np.sin(om * t)]
    cols.append(np.ones_like(t))
    beta = np.linalg.lstsq(np.array(cols).T, s, rcond=None)[0]
    out, j = [], 0
    for om, b, real in used:
        if real:
            out.append((om, b, abs(beta[j]), 0.0 if beta[j] >= 0 else np.pi))
            j += 1
        else:
            out.append((om, b, float(np.hypot(beta[j], beta[j + 1])),
                        float(np.arctan2(beta[j + 1], beta[j]))))
            j += 2
    out.sort(key=lambda q: -q[2])
    return out, beta[j]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--components", type=int, default=None)
    ap.add_argument("--max", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with open(os.path.join(a.dir, "summary.json")) as f:
        summ = json.load(f)
    dt = summ["dt"]
    k = a.components or summ["parameters"]["components"]
    seg = read_h5(os.path.join(a.dir, "traces.h5"), "smoothed")
    ny, nx, n = seg.shape
    tr = seg.reshape(ny * nx, n)
    if a.max > 0:
        tr = tr[:a.max]
    freq = np.full(len(tr), np.nan)
    t0 = time.perf_counter()
    for i, s in enumerate(tr):
        try:
            modes, _ = lpsvd(s, dt, k)
        except np.linalg.LinAlgError:
            continue
        if modes:
            freq[i] = modes[0][0] / (2 * np.pi)
    el = time.perf_counter() - t0
    res = {"traces": len(tr), "samples": n, "components": k, "numpy_s": el,
           "numpy_us_per_trace": 1e6 * el / max(len(tr), 1),
           "tide_fit_s": summ["seconds"]["fit"],
           "tide_us_per_trace": 1e6 * summ["seconds"]["fit"] / max(summ["traces"], 1),
           "device": summ["device"]}
    maps = os.path.join(a.dir, "maps.h5")
    if os.path.exists(maps):
        tf = read_h5(maps, "freq")[0].reshape(-1)[:len(tr)]
        ok = np.isfinite(tf) & np.isfinite(freq)
        res["freq0_max_abs_diff"] = float(np.max(np.abs(tf[ok] - freq[ok]))) if ok.any() else None
    if a.json:
        print(json.dumps(res))
    else:
        for key, v in res.items():
            print(f"{key}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
