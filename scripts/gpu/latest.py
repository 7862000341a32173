#!/usr/bin/env python3
"""latest.py DIR [OUT.md] — the headline figures of one benchmark run as bench/results/LATEST.md.

DIR is a run's output folder ($OUT of scripts/gpu/run.sh): report.md (date, commit, device,
the test list) and the JSON of `tide bench --reduce` / `--diff` / `--worker` (bench-worker.json of
`run.sh worker`) when they ran. The page is
rewritten whole, so the repository keeps one current summary while the full reports stay
outside git (bench/results/README.md). Without OUT.md it prints the page."""
import json
import os
import sys


def load(d, name):
    try:
        with open(os.path.join(d, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def header(d):
    """date, commit, device and the pass/skip/fail counts from report.md."""
    date = commit = device = "unknown"
    counts = {"pass": 0, "skip": 0, "fail": 0}
    try:
        lines = open(os.path.join(d, "report.md")).read().splitlines()
    except OSError:
        lines = []
    for i, ln in enumerate(lines):
        if ln.startswith("date: "):
            date = ln[6:]
        elif ln.startswith("commit: "):
            commit = ln[8:]
            if i + 1 < len(lines) and lines[i + 1].strip():
                device = lines[i + 1].strip()
        elif ln.startswith("- test_"):
            r = ln.rsplit(": ", 1)[-1]
            counts["pass" if r == "pass" else "skip" if r == "skip" else "fail"] += 1
    return date, commit, device, counts


def reduce_rows(j):
    rows = []
    for r in j.get("runs", []):
        size = f"{r['width']}×{r['height']} {r['density']}"
        peak = r.get("peak_device_bytes", 0) / 2**30
        rows.append(f"| {size} | {r['n_sources']} | {r['e2e_ms']:.2f} ms "
                    f"({r['e2e_min_ms']:.2f}–{r['e2e_max_ms']:.2f}) | {peak:.2f} GiB |")
    return rows


def diff_rows(j):
    d = j.get("diff", {})
    rows = [f"| `tide_diff_run`, host in/out ({d.get('candidates', 0)} candidates) | "
            f"{d.get('run', {}).get('ms', float('nan')):.1f} ms "
            f"({d.get('run_min_ms', float('nan')):.1f}–{d.get('run_max_ms', float('nan')):.1f}) |"]
    if "run_template" in d:
        rows.append(f"| against a template prepared once | {d['run_template']['ms']:.1f} ms |")
    for s in j.get("subtract", []):
        rows.append(f"| subtraction, kernel degree {s['spatial_degree']} | {s['ms']:.1f} ms |")
    rp = j.get("reproject", {}).get("one_call")
    if rp:
        rows.append(f"| reprojection, one call | {rp['ms']:.2f} ms |")
    for p in j.get("dipole", []):
        rows.append(f"| dipole fits `{p['model']}` | {p['stamps_per_s'] / 1e6:.2f} M stamps/s |")
    if "write" in d:
        rows.append(f"| `tide_diff_write` | {d['write']['ms']:.0f} ms |")
    return rows


def worker_rows(j):
    """one row per store and runner count of bench-worker.json ({"sqlite": ..., "postgresql": ...})."""
    rows = []
    for store in ("sqlite", "postgresql"):
        w = j.get(store)
        if not w:
            continue
        size = "×".join(str(v) for v in w.get("size", []))
        cold = w.get("cold_reduce_median_ms", -1)
        cold_s = f"{1e3 / cold:.2f} frames/s" if cold and cold > 0 else "—"
        spf = w.get("sources_per_frame")
        extra = f", {spf:.0f} sources/frame" if spf else ""
        for r in w.get("worker", []):
            rows.append(f"| {store} | {size}{extra} | {r['runners']} | {r['frames_per_s']:.2f} | "
                        f"{r['service_p50_ms']:.0f} / {r['service_p99_ms']:.0f} ms | {cold_s} |")
    return rows


def page(d):
    date, commit, device, c = header(d)
    out = ["# Latest GPU run", "",
           "Written by `scripts/gpu/latest.py` from one run of `scripts/gpu/run.sh`; the full",
           "report and the JSON stay with that run's `$OUT` (not in git).", "",
           f"- date: {date}", f"- commit: {commit}", f"- device: {device}", ""]
    if sum(c.values()):
        out += ["## Tests", "",
                f"{c['pass']} C test programs pass, {c['skip']} skip, {c['fail']} fail.", ""]
    red = load(d, "bench-reduce-cuda.json")
    if red:
        out += ["## `tide bench --reduce --backend cuda` (end to end, median of repeats)", "",
                "| frame | sources | end to end | peak device |", "|---|---|---|---|"]
        out += reduce_rows(red) + [""]
    dif = load(d, "bench-diff-cuda.json")
    if dif:
        out += [f"## `tide bench --diff --backend cuda` ({dif.get('width')}²)", "",
                "| figure | median |", "|---|---|"]
        out += diff_rows(dif) + [""]
    wrk = load(d, "bench-worker.json")
    if wrk and worker_rows(wrk):
        out += ["## `tide bench --worker` (one worker, frame file to committed store)", "",
                "| store | frame | runners | frames/s | service p50 / p99 | cold `tide reduce` |",
                "|---|---|---|---|---|---|"]
        out += worker_rows(wrk) + [""]
    return "\n".join(out)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    text = page(sys.argv[1])
    if len(sys.argv) == 3:
        tmp = sys.argv[2] + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, sys.argv[2])
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
