#!/usr/bin/env bash
# run.sh [tests|tests-xray|tests-decode|reduce|diff|xray|decode|worker|ab|gpu-tests|mosaic|file] — there, on the GPU
# machine (repository root, carried .gpu/): run every test (GPU agreement tests included) and
# the benchmarks, and write a report to $OUT. With "tests", only the tests (a quick check that
# costs less device time); "tests-xray" and "tests-decode", the tests and that benchmark;
# "reduce", only the reduction benchmark; "diff", only the difference-pipeline benchmark;
# "xray", only tide xray's detector-sized benchmark beside NumPy's loop (bench/xray_bench.sh);
# "decode", only the tile decoders beside cfitsio ("tests-decode": the tests, those and the
# real/bogus scoring); "rb", only the real/bogus scoring; "worker", issue 17's sustained rates
# (scripts/gpu/run-worker.sh; needs TIDE_GPU_PG=1 at prepare time for the PostgreSQL half).
# "ab": the reduce and diff benchmarks of this build and of a base build alternating, two runs
# each (a base tide binary packed by `scripts/gpu/prepare.sh --base COMMIT` as
# .gpu/base-tide.xz), issue 15's "no speed target regresses" check. "gpu-tests": only the
# test programs named test_gpu_* (the CUDA twins), each also under compute-sanitizer memcheck
# when TIDE_GPU_MEMCHECK names them (comma-separated). "mosaic": a 62-CCD exposure reduced.
# "file": a 151 MP frame file to catalog, plain and RICE-compressed (tide bench --file).
# Reports never go into git: they go to $OUT, else to bench/results/local/ (ignored). The run's
# headline figures are written as LATEST.md beside them (scripts/gpu/latest.py) and, when the
# run writes into this tree, over bench/results/LATEST.md; after a device call, copy the
# fetched LATEST.md there and commit it alone.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/bench/results/local}
mkdir -p "$out"
root=$PWD
# prepare.sh packs a .gpu/ that would not travel whole (past 48 MiB) into one tarball
if [ -f .gpu/pack.tar.xz ]; then
  tar xJf .gpu/pack.tar.xz -C .gpu || { echo "run.sh: cannot unpack .gpu/pack.tar.xz" >&2; exit 1; }
fi
export LD_LIBRARY_PATH=$root/.gpu/lib:${LD_LIBRARY_PATH:-}
export TIDE_SHARED_DATA=$root/.gpu/data TIDE_SOURCE_DIR=$root
# the tests that write compressed files call fpack, which travels in .gpu/bin
export PATH=$root/.gpu/bin:$PATH
{
  echo "# tide GPU run"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(cat .gpu/commit 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  echo
} > "$out/report.md"

# Every C test program (unit + GPU agreement); Python peer tests need Debian's astropy, which
# the GPU machine lacks, so they run in CI instead.
fail=0
# The headline page (LATEST.md) from what this run wrote, then the report; exit with $fail.
finish() {
  if command -v python3 >/dev/null; then
    python3 scripts/gpu/latest.py "$out" "$out/LATEST.md" || fail=1
    [ -z "${OUT:-}" ] && cp "$out/LATEST.md" bench/results/LATEST.md
  fi
  exit $fail
}
if [ "${1:-all}" = reduce ]; then
  timeout 500 .gpu/bin/tide bench --reduce --backend cuda --repeats 5 \
    --json "$out/bench-reduce-cuda.json" >> "$out/report.md" 2>&1 || fail=1
  finish
fi
if [ "${1:-all}" = worker ]; then
  bash scripts/gpu/run-worker.sh "$out" || fail=1
  finish
fi
if [ "${1:-all}" = diff ]; then
  timeout 500 .gpu/bin/tide bench --diff --backend cuda --repeats 5 \
    --json "$out/bench-diff-cuda.json" >> "$out/report.md" 2>&1 || fail=1
  finish
fi
# tide xray on a Jungfrau-1M-sized pair beside NumPy's per-trace loop (issue 20).
xray_bench() {
  echo "## tide xray (bench/xray_bench.sh)" >> "$out/report.md"
  TIDE_PYTHON=$(command -v python3) timeout 400 bash bench/xray_bench.sh /tmp .gpu/bin/tide \
    >> "$out/report.md" 2>&1 || fail=1
}
# tide's tile decoders beside cfitsio (issue 19): a 4096² int16 frame made here, compressed by
# the carried fpack with RICE_1 and GZIP_2, and the real quantized-float TESS file.
decode_bench() {
  echo "## tile decoding (tide bench --decode)" >> "$out/report.md"
  local d=/tmp/tide-decode
  mkdir -p "$d"
  python3 bench/make_int16_frame.py "$d/d16.fits" 4096 || fail=1
  rm -f "$d/d16_rice.fits" "$d/d16_gz2.fits"
  .gpu/bin/fpack -r -O "$d/d16_rice.fits" "$d/d16.fits" && .gpu/bin/fpack -g2 -O "$d/d16_gz2.fits" \
    "$d/d16.fits" || fail=1
  for f in "$d/d16_rice.fits" "$d/d16_gz2.fits" .gpu/data/compressed/tess_diff_rice_dither1.fits.fz; do
    echo "### $(basename "$f")" >> "$out/report.md"
    TIDE_GPU_TILE_DECODE=1 timeout 120 .gpu/bin/tide bench --decode "$f" --threads 16 --repeats 7 \
      >> "$out/report.md" 2>&1 \
      || fail=1
  done
}
# real/bogus scoring of 10,000 candidates (issue 18: <= 10 ms): a model trained there on 10
# simulated pairs, then tide bench --rb on every core. libxgboost travels in .gpu/lib.
rb_bench() {
  echo "## real/bogus scoring (tide bench --rb)" >> "$out/report.md"
  local d=/tmp/tide-rb
  mkdir -p "$d"
  timeout 200 .gpu/bin/tide rb train --sim 10 --size 512 --train-threads 16 -o "$d/m.json" \
    >> "$out/report.md" 2>&1 || fail=1
  timeout 100 .gpu/bin/tide bench --rb --model "$d/m.json" --threads 16 >> "$out/report.md" 2>&1 \
    || fail=1
}
# A 62-CCD 2k x 4k mosaic exposure reduced file to catalogs (issue 19: <= 1.5 s).
mosaic_bench() {
  echo "## mosaic exposure (tide bench --mosaic)" >> "$out/report.md"
  mkdir -p /tmp/tide-mosaic
  timeout 300 .gpu/bin/tide bench --mosaic --backend cuda --dir /tmp/tide-mosaic \
    >> "$out/report.md" 2>&1 || fail=1
}
if [ "${1:-all}" = mosaic ]; then
  mosaic_bench
  finish
fi
# A 151 MP frame file to catalog on a warm job (issue 19: <= 250 ms RICE-compressed): plain,
# fpack's default (floats quantized, RICE_1) with the GPU tile decoder and with the host's,
# and the decoders alone beside cfitsio on the same file.
file_bench() {
  echo "## 151 MP file to catalog (tide bench --file)" >> "$out/report.md"
  local d=/tmp/tide-file
  mkdir -p "$d"
  [ -s "$d/big.fits" ] || timeout 200 .gpu/bin/tide sim -o "$d/big.fits" --width 14200 \
    --height 10650 --nstars 130000 > /dev/null || fail=1
  rm -f "$d/big.fits.fz"
  .gpu/bin/fpack -O "$d/big.fits.fz" "$d/big.fits" || fail=1
  ls -l "$d" >> "$out/report.md"
  for f in "$d/big.fits" "$d/big.fits.fz"; do
    timeout 120 .gpu/bin/tide bench --file "$f" --bias 1000 --backend cuda --repeats 5 \
      >> "$out/report.md" 2>&1 || fail=1
  done
  TIDE_GPU_TILE_DECODE=0 timeout 120 .gpu/bin/tide bench --file "$d/big.fits.fz" --bias 1000 \
    --backend cuda --repeats 5 >> "$out/report.md" 2>&1 || fail=1
  timeout 120 .gpu/bin/tide bench --decode "$d/big.fits.fz" --threads 16 --repeats 5 \
    >> "$out/report.md" 2>&1 || fail=1
}
if [ "${1:-all}" = file ]; then
  file_bench
  finish
fi
# Two builds side by side in one call: base, this, base, this (reduce, then diff).
ab_bench() {
  local base=/tmp/tide-base
  xz -dc .gpu/base-tide.xz > "$base" && chmod +x "$base" || { echo "no base build" >&2; fail=1; return; }
  echo "## A/B: base $(cat .gpu/base-commit 2>/dev/null) and this build" >> "$out/report.md"
  for kind in reduce diff; do
    for run in 1 2; do
      for b in base this; do
        local exe=.gpu/bin/tide
        [ $b = base ] && exe=$base
        echo "### $kind, $b, run $run" >> "$out/report.md"
        local sizes=()  # the two frames issue 3's targets name
        [ $kind = reduce ] && sizes=(--sizes 2048x2048,14200x10650)
        timeout 280 "$exe" bench --$kind --backend cuda --repeats 5 "${sizes[@]}" \
          --json "$out/ab-$kind-$b-$run.json" >> "$out/report.md" 2>&1 || fail=1
      done
    done
  done
}
# The CUDA twins' tests alone, some under compute-sanitizer's memcheck.
gpu_tests() {
  echo "## GPU tests" >> "$out/report.md"
  local cs
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for t in .gpu/bin/test_gpu_*; do
    local name r
    name=$(basename "$t")
    (cd .gpu/bin && timeout 200 "./$name") > "$out/$name.log" 2>&1
    case $? in 0) r=pass ;; 77) r=skip ;; *) r="FAIL"; fail=1 ;; esac
    echo "- $name: $r" >> "$out/report.md"
    [ "$r" = pass ] || tail -20 "$out/$name.log" >> "$out/report.md"
    if [ -n "$cs" ] && [[ ",${TIDE_GPU_MEMCHECK:-}," == *",$name,"* ]]; then
      (cd .gpu/bin && timeout 300 "$cs" --tool memcheck --error-exitcode 9 "./$name") \
        > "$out/$name.memcheck.log" 2>&1
      case $? in 0) r=clean ;; 77) r=skip ;; *) r="ERRORS"; fail=1 ;; esac
      echo "- $name under memcheck: $r" >> "$out/report.md"
      tail -5 "$out/$name.memcheck.log" >> "$out/report.md"
    fi
  done
  tar czf "$out/gpu-test-logs.tgz" -C "$out" $(cd "$out" && ls test_gpu_*.log) 2>/dev/null \
    && rm -f "$out"/test_gpu_*.log
}
if [ "${1:-all}" = ab ]; then
  ab_bench
  finish
fi
if [ "${1:-all}" = gpu-tests ]; then
  gpu_tests
  finish
fi
if [ "${1:-all}" = rb ]; then
  rb_bench
  finish
fi
if [ "${1:-all}" = decode ]; then
  decode_bench
  finish
fi
if [ "${1:-all}" = xray ]; then
  xray_bench
  finish
fi
echo "## tests" >> "$out/report.md"
for t in .gpu/bin/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  (cd .gpu/bin && TIDE_BIN=$root/.gpu/bin/tide TIDE_LIB=$root/.gpu/lib/libtide.so \
     timeout 300 "./$name") > "$out/$name.log" 2>&1
  rc=$?
  case $rc in 0) r=pass ;; 77) r=skip ;; *) r="FAIL($rc)"; fail=1 ;; esac
  echo "- $name: $r" >> "$out/report.md"
  [ "$r" = pass ] || tail -20 "$out/$name.log" >> "$out/report.md"
done
# The shell tests that need a GPU (the C ones above skip themselves without one).
for t in tests/cli/test_memory_fallback.sh; do
  name=$(basename "$t" .sh)
  TIDE_BIN=$root/.gpu/bin/tide TIDE_PYTHON=$(command -v python3) timeout 300 bash "$t" \
    > "$out/$name.log" 2>&1
  case $? in 0) r=pass ;; 77) r=skip ;; *) r="FAIL"; fail=1 ;; esac
  echo "- $name: $r" >> "$out/report.md"
  [ "$r" = pass ] || tail -20 "$out/$name.log" >> "$out/report.md"
done
tar czf "$out/test-logs.tgz" -C "$out" $(cd "$out" && ls test_*.log) 2>/dev/null && rm -f "$out"/test_*.log

if [ "${1:-all}" = tests ]; then
  finish
fi
if [ "${1:-all}" = tests-xray ]; then
  xray_bench
  finish
fi
if [ "${1:-all}" = tests-decode ]; then
  decode_bench
  rb_bench
  finish
fi
echo >> "$out/report.md"
echo "## benchmarks" >> "$out/report.md"
.gpu/bin/tide bench --backend cuda --json "$out/bench-cuda.json" >> "$out/report.md" 2>&1 || fail=1
.gpu/bin/tide bench --backend cpu --threads 16 --sizes 2048x2048,4787x3193 \
  --json "$out/bench-cpu.json" >> "$out/report.md" 2>&1 || fail=1
echo "## reduction (tide bench --reduce)" >> "$out/report.md"
timeout 400 .gpu/bin/tide bench --reduce --backend cuda --repeats 5 \
  --json "$out/bench-reduce-cuda.json" >> "$out/report.md" 2>&1 || fail=1
echo "## difference pipeline (tide bench --diff)" >> "$out/report.md"
timeout 400 .gpu/bin/tide bench --diff --backend cuda --repeats 5 \
  --json "$out/bench-diff-cuda.json" >> "$out/report.md" 2>&1 || fail=1
if [ -x .gpu/bin/detect_vs_sep ]; then
  echo "## detection beside sep (bench/detect_vs_sep.c)" >> "$out/report.md"
  timeout 300 .gpu/bin/detect_vs_sep --backend cuda >> "$out/report.md" 2>&1 || fail=1
fi
xray_bench
decode_bench
rb_bench
echo "## simulator" >> "$out/report.md"
TIMEFORMAT="sim 14200x10650, 150000 stars: %R s wall"
{ time .gpu/bin/tide sim -o /tmp/big.fits --width 14200 --height 10650 --nstars 150000 \
    --json; } >> "$out/report.md" 2>&1 || fail=1
finish
