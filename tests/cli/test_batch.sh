#!/bin/bash
# `tide batch` in one process (issue 17): 12 small simulated frames (10 reduced, 2 differenced
# against their templates) and two bad entries (a missing file, a non-FITS file) give the
# catalogs and difference directories of `tide reduce` and `tide diff --template` byte for
# byte, the store's rows, the failures named in the summary with their reasons, exit 1
# because of them and exit 0 without them; the manifest as a list and as a JSON array; the
# store alone; task options; the usage errors; the progress line only when asked or on a
# terminal.
set -u
TIDE=${TIDE_BIN:?}
SRC=${TIDE_SOURCE_DIR:?}
PY=${TIDE_PYTHON:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
. "$SRC/tests/common/batch_frames.sh"
make_batch_frames || { echo "FAIL: could not make the frames"; exit 1; }
B=(--backend cpu --threads 1 --no-progress)

# all the entries: the good ones written, the two bad ones named, exit 1
"$TIDE" batch "$T/all.jsonl" --outdir "$T/a" --store "$T/a.db" "${B[@]}" >"$T/a.txt" 2>"$T/a.err"
rc=$?
[ $rc = 1 ] || bad "batch with bad entries: exit $rc (1 expected)"
same_outputs "$T/a" || bad "batch outputs differ from tide reduce / tide diff"
grep -q "^14 tasks: 12 done, 0 incomplete, 2 failed" "$T/a.txt" || bad "summary: $(cat "$T/a.txt")"
grep -q "failed missing: .*missing.fits: no such file" "$T/a.txt" || bad "missing file not named"
grep -q "failed junk: .*junk.fits: not a FITS file" "$T/a.txt" || bad "non-FITS file not named"
[ ! -e "$T/a/missing.cat.fits" ] && [ ! -e "$T/a/junk.cat.fits" ] || bad "a bad entry wrote a catalog"
[ -s "$T/a.err" ] && grep -v "warn" "$T/a.err" | grep -q . && bad "stderr: $(cat "$T/a.err")"
n=$("$PY" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from images').fetchone()[0])" "$T/a.db")
[ "$n" = 10 ] || bad "store holds $n images (10 expected)"

# the JSON summary: every task's outcome, the failures with their reasons
"$TIDE" batch "$T/all.jsonl" --outdir "$T/j" "${B[@]}" --json >"$T/j.json" 2>/dev/null
[ $? = 1 ] || bad "batch --json with bad entries: exit not 1"
"$PY" - "$T/j.json" <<'PYEOF' || bad "JSON summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert (s["tasks"], s["done"], s["incomplete"], s["failed"]) == (14, 12, 0, 2), s
assert s["ranks"] == 1 and s["per_rank"] == [14], s["per_rank"]
by = {r["id"]: r for r in s["results"]}
assert by["missing"]["outcome"] == "failed" and "no such file" in by["missing"]["reason"]
assert by["junk"]["outcome"] == "failed" and "not a FITS file" in by["junk"]["reason"]
assert by["f1"]["outcome"] == "done" and by["f1"]["n_sources"] > 20, by["f1"]
assert by["f1"]["output"].endswith("/j/f1.cat.fits")
d = [r for r in s["results"] if r["output"].endswith("/j/s1")]
assert d and d[0]["outcome"] == "done", d
assert s["rate"] > 0 and s["wall_s"] > 0
PYEOF

# the good entries only: exit 0
"$TIDE" batch "$T/good.jsonl" --outdir "$T/g" "${B[@]}" >"$T/g.txt" 2>/dev/null
rc=$?
[ $rc = 0 ] || bad "batch of good entries: exit $rc: $(cat "$T/g.txt")"
same_outputs "$T/g" || bad "outputs of the good manifest differ"

# a plain list of paths and a JSON array: reduce tasks, the same catalogs
printf '%s\n' "$T/f1.fits" "" "# a comment" "$T/f2.fits" >"$T/list.txt"
"$TIDE" batch "$T/list.txt" --outdir "$T/l" "${B[@]}" >/dev/null 2>&1 || bad "batch of a list"
cmp -s "$T/ref/f1.cat.fits" "$T/l/f1.cat.fits" && cmp -s "$T/ref/f2.cat.fits" "$T/l/f2.cat.fits" \
    || bad "catalogs of a list differ"
printf '[{"path": "%s"},\n {"path": "%s", "out": "%s"}]\n' "$T/f3.fits" "$T/f4.fits" "$T/x4.fits" \
    >"$T/array.json"
"$TIDE" batch "$T/array.json" --outdir "$T/r" "${B[@]}" >/dev/null 2>&1 || bad "batch of an array"
cmp -s "$T/ref/f3.cat.fits" "$T/r/f3.cat.fits" && cmp -s "$T/ref/f4.cat.fits" "$T/x4.fits" \
    || bad "catalogs of an array differ"

# the store alone: rows, no files
"$TIDE" batch "$T/list.txt" --store "$T/only.db" "${B[@]}" >/dev/null 2>&1 || bad "store only"
n=$("$PY" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from images').fetchone()[0])" "$T/only.db")
[ "$n" = 2 ] || bad "store-only batch stored $n images (2 expected)"

# options of a task = tide reduce --set; a typo fails that task, naming the key
"$TIDE" reduce "$T/f5.fits" -o "$T/o5ref.fits" --set detect_thresh=3.5 --backend cpu --threads 1 \
    >/dev/null 2>&1 || bad "tide reduce --set"
printf '{"path": "%s", "out": "%s", "options": {"detect_thresh": 3.5}}\n' "$T/f5.fits" "$T/o5.fits" \
    >"$T/opt.jsonl"
printf '{"path": "%s", "id": "typo", "options": {"detect_thresold": 3}}\n{"path": "%s" "x"}\n' \
    "$T/f6.fits" "$T/f6.fits" >>"$T/opt.jsonl"
"$TIDE" batch "$T/opt.jsonl" --outdir "$T/o" "${B[@]}" >"$T/o.txt" 2>/dev/null
[ $? = 1 ] || bad "typo in options: exit not 1"
cmp -s "$T/o5ref.fits" "$T/o5.fits" || bad "catalog with task options differs from tide reduce --set"
grep -q 'failed typo: .*option "detect_thresold"' "$T/o.txt" || bad "typo not named: $(cat "$T/o.txt")"
grep -q 'failed .*opt.jsonl:3: .*not JSON at line 1 column' "$T/o.txt" || bad "bad JSON line not named"

# two tasks writing one output: the second fails, naming the first
printf '{"path": "%s"}\n{"path": "%s", "id": "again"}\n' "$T/f7.fits" "$T/f7.fits" >"$T/dup.jsonl"
"$TIDE" batch "$T/dup.jsonl" --outdir "$T/d" "${B[@]}" >"$T/d.txt" 2>/dev/null
[ $? = 1 ] || bad "duplicate output: exit not 1"
grep -q "failed again: .*f7.cat.fits: the output of task" "$T/d.txt" || bad "duplicate: $(cat "$T/d.txt")"

# usage: no manifest, nowhere to write, a manifest that cannot be read
"$TIDE" batch >/dev/null 2>&1; [ $? = 2 ] || bad "no manifest: exit not 2"
"$TIDE" batch "$T/list.txt" "${B[@]}" >/dev/null 2>"$T/u.err"; rc=$?
[ $rc = 2 ] || bad "no --outdir or --store: exit $rc (2 expected)"
grep -q "nowhere to go" "$T/u.err" || bad "no outdir: $(cat "$T/u.err")"
"$TIDE" batch "$T/nope.txt" --outdir "$T/n" "${B[@]}" >/dev/null 2>"$T/n.err"; rc=$?
[ $rc = 1 ] && grep -q "nope.txt" "$T/n.err" || bad "unreadable manifest: exit $rc, $(cat "$T/n.err")"
"$TIDE" batch --help | grep -q "JSON lines" || bad "--help"

# progress: asked for, a line redrawn in place; not a terminal, nothing; --json, nothing
"$TIDE" batch "$T/list.txt" --outdir "$T/p" --backend cpu --threads 1 --progress \
    >/dev/null 2>"$T/p.err" || bad "--progress run"
grep -q $'\r2/2 tasks done, 0 failed' "$T/p.err" || bad "progress line: $(cat -v "$T/p.err")"
"$TIDE" batch "$T/list.txt" --outdir "$T/p" --backend cpu --threads 1 >/dev/null 2>"$T/p2.err"
grep -q "tasks done" "$T/p2.err" && bad "progress drawn on a file"
"$TIDE" batch "$T/list.txt" --outdir "$T/p" --backend cpu --threads 1 --progress --json \
    >/dev/null 2>"$T/p3.err"
grep -q "tasks done" "$T/p3.err" && bad "progress drawn with --json"

[ $fail = 0 ] && echo "ok"
exit $fail
