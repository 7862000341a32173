#!/bin/bash
# `mpirun -n 4 tide batch` (issue 17) on the CPU backend: the 12 frames and 2 bad entries of
# test_batch.sh handed out by rank 0 to 4 ranks give the same catalogs and difference files
# as `tide reduce` / `tide diff` (byte for byte), the same store rows as one process (four
# processes writing one SQLite store, none failing on its lock), the failures named in the
# summary, exit 1 because of them and 0 without them; rank 0 dispatching only; one rank; and
# no other tide command linking libmpi. Skipped (77) without OpenMPI's mpirun or a
# tide-batch-mpi beside tide (built without libopenmpi-dev).
set -u
TIDE=${TIDE_BIN:?}
SRC=${TIDE_SOURCE_DIR:?}
PY=${TIDE_PYTHON:-python3}
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
[ -x "$(dirname "$TIDE")/tide-batch-mpi" ] || { echo "SKIP: no tide-batch-mpi beside tide"; exit 77; }
# CI runs as root; this machine has 2 cores for 4 ranks
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
# The sanitizer build: OpenMPI's own leaks (tests/sanitizer/lsan.supp) are recognised by the
# OpenMPI frames of their stacks, which ASan's fast unwinder does not reach (the libraries
# have no frame pointers; the components are dlopen'ed and unloaded): the whole stacks, and
# the components kept loaded.
export OMPI_MCA_mca_base_component_disable_dlclose=1
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"; fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
. "$SRC/tests/common/batch_frames.sh"
make_batch_frames || { echo "FAIL: could not make the frames"; exit 1; }
B=(--backend cpu --threads 1 --no-progress)
MPI=(mpirun -n 4 --oversubscribe)

# one process, for the store to compare with
"$TIDE" batch "$T/all.jsonl" --outdir "$T/a" --store "$T/a.db" "${B[@]}" >/dev/null 2>&1
[ $? = 1 ] || bad "plain batch: exit not 1"

# four ranks
"${MPI[@]}" "$TIDE" batch "$T/all.jsonl" --outdir "$T/m" --store "$T/m.db" "${B[@]}" \
    >"$T/m.txt" 2>"$T/m.err"
rc=$?
cat "$T/m.txt"
[ $rc = 1 ] || bad "mpirun batch with bad entries: exit $rc (1 expected)"
same_outputs "$T/m" || bad "outputs under mpirun differ from tide reduce / tide diff"
grep -q "^14 tasks: 12 done, 0 incomplete, 2 failed" "$T/m.txt" || bad "summary: $(cat "$T/m.txt")"
grep -q "failed missing: .*missing.fits: no such file" "$T/m.txt" || bad "missing file not named"
grep -q "failed junk: .*junk.fits: not a FITS file" "$T/m.txt" || bad "non-FITS file not named"
[ "$(grep -c "tasks:" "$T/m.txt")" = 1 ] || bad "more than one rank printed a summary"
per=$(sed -n 's/^  tasks per rank: //p' "$T/m.txt")
[ "$(wc -w <<<"$per")" = 4 ] || bad "tasks per rank: '$per'"
[ "$(($(tr ' ' '+' <<<"$per")))" = 14 ] || bad "tasks per rank do not add up to 14: $per"
grep -qi "locked\|busy" "$T/m.txt" "$T/m.err" && bad "a rank met a locked store: $(cat "$T/m.err")"
"$PY" "$SRC/tests/common/store_dump.py" "$T/a.db" >"$T/a.dump" || bad "dump of the plain store"
"$PY" "$SRC/tests/common/store_dump.py" "$T/m.db" >"$T/m.dump" || bad "dump of the mpirun store"
[ "$(grep -c '^image ' "$T/m.dump")" = 10 ] || bad "mpirun store: $(grep -c '^image ' "$T/m.dump") images"
cmp -s "$T/a.dump" "$T/m.dump" || bad "store rows differ between one process and 4 ranks"

# the good entries: exit 0; rank 0 dispatching only runs nothing itself
"${MPI[@]}" "$TIDE" batch "$T/good.jsonl" --outdir "$T/g" "${B[@]}" --rank0 dispatch --json \
    >"$T/g.json" 2>"$T/g.err"
rc=$?
[ $rc = 0 ] || bad "mpirun batch of good entries: exit $rc: $(cat "$T/g.err")"
same_outputs "$T/g" || bad "outputs of --rank0 dispatch differ"
"$PY" - "$T/g.json" <<'PYEOF' || bad "JSON summary of --rank0 dispatch"
import json, sys
s = json.load(open(sys.argv[1]))
assert (s["tasks"], s["done"], s["failed"], s["ranks"]) == (12, 12, 0, 4), s
assert s["per_rank"][0] == 0 and sum(s["per_rank"]) == 12, s["per_rank"]
PYEOF

# one rank; and the ranks' own thread and device choice (no --threads: the cores shared)
mpirun -n 1 "$TIDE" batch "$T/good.jsonl" --outdir "$T/one" "${B[@]}" >/dev/null 2>&1 \
    || bad "mpirun -n 1 batch failed"
same_outputs "$T/one" || bad "outputs of one rank differ"
"${MPI[@]}" "$TIDE" batch "$T/good.jsonl" --outdir "$T/dflt" --backend cpu --no-progress \
    >"$T/d.txt" 2>&1 || bad "mpirun batch with the default threads: $(cat "$T/d.txt")"
[ -s "$T/dflt/f10.cat.fits" ] || bad "default threads: no catalog"

# usage errors are reported once, by rank 0
"${MPI[@]}" "$TIDE" batch "$T/good.jsonl" --bogus >/dev/null 2>"$T/u.err"
rc=$?
[ $rc = 2 ] || bad "usage error under mpirun: exit $rc (2 expected)"
[ "$(grep -c "unknown option --bogus" "$T/u.err")" = 1 ] || bad "usage error: $(cat "$T/u.err")"

# only tide-batch-mpi links libmpi
ldd "$TIDE" | grep -q libmpi && bad "tide links libmpi"
ldd "$(dirname "$TIDE")/tide-batch-mpi" | grep -q libmpi || bad "tide-batch-mpi does not link libmpi"

[ $fail = 0 ] && echo "ok"
exit $fail
