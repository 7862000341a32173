#!/usr/bin/python3
"""compare.py — put `tide bench --reduce` figures beside sep's (bench/peer_sep.py) for the same
simulated frames and print the ratios (issue 3: detection at least 50x faster than sep on the
GPU; on the CPU, the whole reduction faster than sep doing the same stages).

Frames are matched on (seed, width, height, nstars, ngalaxies). Ratios are sep / tide, so > 1
means tide is faster:

  end to end   sep full (background, extract, 3 apertures, windowed positions) over tide's
               whole reduction (which does more: cosmetics, PSF model, two detection passes,
               Kron, PSF fit, aperture corrections, optimal radius)
  same stages  sep full over tide's background + detection 2 + aperture stages
  detection    sep.extract alone over tide's final detection pass (reduce.detect2) and over
               both passes (detect1 + detect2), on the same background-subtracted frame

usage: compare.py TIDE_BENCH.json SEP.json [-o COMPARISON.json] [--md COMPARISON.md]

SEP.json is peer_sep.py's output, or a comparison JSON written by -o (its sep part is used).
The GPU machine has no sep: compare its bench JSON with sep timed on a CPU machine
(run bench/peer_sep.py there at the five camera sizes), and say so."""
import argparse
import json
import sys

DETECT_TARGET_GPU = 50.0


def stage_ms(run, name):
    for s in run["stages"]:
        if s["name"] == name:
            return s["ms"]
    return 0.0


def key(d):
    s = d.get("sim", d)
    return (s["seed"], s["width"], s["height"], s["nstars"], s["ngalaxies"])


def ratio(a, b):
    return a / b if a and b else None


def compare(tide, peer):
    by_key = {key(f): f for f in peer["frames"]}
    rows = []
    for r in tide["runs"]:
        f = by_key.get(key(r))
        if f is None or "error" in f:
            continue
        d1, d2 = stage_ms(r, "reduce.detect1"), stage_ms(r, "reduce.detect2")
        same = stage_ms(r, "reduce.background") + d2 + stage_ms(r, "reduce.aperture")
        rows.append(dict(
            frame=f"{r['width']}x{r['height']}", density=r["density"], nstars=r["sim"]["nstars"],
            tide_sources=r["n_sources"], sep_sources=f["n_sources"],
            tide_e2e_ms=r["e2e_ms"], tide_same_stages_ms=same, tide_detect2_ms=d2,
            tide_detect_both_ms=d1 + d2, sep_full_ms=f["ms"]["total"],
            sep_extract_ms=f["extract_only_ms"],
            speedup_e2e=ratio(f["ms"]["total"], r["e2e_ms"]),
            speedup_same_stages=ratio(f["ms"]["total"], same),
            speedup_detect=ratio(f["extract_only_ms"], d2),
            speedup_detect_both=ratio(f["extract_only_ms"], d1 + d2)))
    return rows


def fmt(v, p=1):
    return "-" if v is None else f"{v:.{p}f}"


HEAD = ("frame", "density", "stars", "src tide", "src sep", "tide e2e", "sep full", "x e2e",
        "x same", "tide det2", "sep extract", "x detect", "x det 1+2")


def cells(r):
    return (r["frame"], r["density"], str(r["nstars"]), str(r["tide_sources"]),
            str(r["sep_sources"]), fmt(r["tide_e2e_ms"]), fmt(r["sep_full_ms"]),
            fmt(r["speedup_e2e"], 2), fmt(r["speedup_same_stages"], 2),
            fmt(r["tide_detect2_ms"]), fmt(r["sep_extract_ms"]), fmt(r["speedup_detect"], 2),
            fmt(r["speedup_detect_both"], 2))


def print_text(tide, peer, rows, out):
    out.write(f"tide {tide['backend']} on {tide['device']} vs sep "
              f"{peer['sep_version']} (1 thread); times in ms, medians; x = sep / tide\n")
    widths = [max(len(h), *(len(cells(r)[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(HEAD)]
    out.write("  ".join(h.rjust(w) for h, w in zip(HEAD, widths)) + "\n")
    for r in rows:
        out.write("  ".join(c.rjust(w) for c, w in zip(cells(r), widths)) + "\n")
    if tide["backend"] == "cuda":
        for r in rows:
            ok = r["speedup_detect"] is not None and r["speedup_detect"] >= DETECT_TARGET_GPU
            out.write(f"{r['frame']} {r['density']}: detection speedup target >= "
                      f"{DETECT_TARGET_GPU:.0f}x: {'met' if ok else 'NOT met'}\n")


def write_md(tide, peer, rows, path):
    with open(path, "w") as f:
        f.write(f"tide `{tide['backend']}` on {tide['device']}, "
                f"tide {tide['tide_version']}, {tide['date']}; sep {peer['sep_version']} "
                f"(single-threaded), {peer['date']}. Times in ms (medians); x = sep / tide.\n\n")
        f.write("| " + " | ".join(HEAD) + " |\n|" + "---|" * len(HEAD) + "\n")
        for r in rows:
            f.write("| " + " | ".join(cells(r)) + " |\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tide_json")
    ap.add_argument("sep_json")
    ap.add_argument("-o", "--output", help="write tide, sep and the ratios as one JSON")
    ap.add_argument("--md", help="write the table as Markdown")
    a = ap.parse_args()
    with open(a.tide_json) as f:
        tide = json.load(f)
    with open(a.sep_json) as f:
        peer = json.load(f)
    if "frames" not in peer and "sep" in peer:  # an earlier comparison's JSON
        peer = peer["sep"]
    if tide.get("bench") != "reduce":
        sys.exit(f"{a.tide_json}: not a `tide bench --reduce` JSON document")
    rows = compare(tide, peer)
    if not rows:
        sys.exit("no frame of the tide bench matches a sep frame (seed, size, stars, galaxies)")
    print_text(tide, peer, rows, sys.stdout)
    if a.output:
        with open(a.output, "w") as f:
            json.dump(dict(tide=tide, sep=peer, comparison=rows), f, indent=1)
            f.write("\n")
    if a.md:
        write_md(tide, peer, rows, a.md)


if __name__ == "__main__":
    main()
