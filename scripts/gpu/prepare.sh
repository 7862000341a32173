#!/usr/bin/env bash
# prepare.sh — here, on the build machine: build tide with the CUDA backend for sm_90 (+PTX),
# and gather what the GPU machine lacks (cfitsio, wcslib, FFTW, jansson...) and the real test
# data into .gpu/, so `device run` with carry [".gpu"] can run scripts/gpu/run.sh there.
# TIDE_GPU_PG=1: also a relocatable PostgreSQL 15 + Q3C (scripts/gpu/pg-bundle.sh) as
# .gpu/pg.tar.xz, for `run.sh worker` (~20 MB: the tree itself, ~74 MB with ICU's data, would
# not fit the 64 MiB that travels).
set -euo pipefail
cd "$(dirname "$0")/../.."
ex=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$ex")"
grep -qx '/.gpu/' "$ex" 2>/dev/null || echo '/.gpu/' >> "$ex"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DTIDE_SHARED_DATA=/nonexistent >/dev/null
cmake --build build-gpu -j"$(nproc)"
grep -q 'TIDE_HAVE_CUDA' build-gpu/CMakeFiles/tide_obj.dir/flags.make \
  || { echo "prepare: build-gpu has no CUDA backend" >&2; exit 1; }
rm -rf .gpu && mkdir -p .gpu
extra=()  # the detection-vs-sep comparison, built where libsep-dev is installed
[ -x build-gpu/detect_vs_sep ] && extra=(build-gpu/detect_vs_sep)
../shared/device/bundle-libs.sh .gpu build-gpu/tide build-gpu/tests/test_* build-gpu/libtide.so \
  "${extra[@]}"
mkdir -p .gpu/bin
cp build-gpu/tide build-gpu/tests/test_* "${extra[@]}" .gpu/bin/
cp -P build-gpu/libtide.so* .gpu/lib/
# Debug sections are most of the size; the carried tree must stay under 64 MiB.
strip --strip-unneeded .gpu/bin/* .gpu/lib/*.so* 2>/dev/null || true
cp -r ../shared/data .gpu/data
if [ "${TIDE_GPU_PG:-0}" = 1 ]; then
  stage=$(mktemp -d)
  scripts/gpu/pg-bundle.sh "$stage/pg"
  tar -C "$stage" -cf - pg | xz -T0 -6 > .gpu/pg.tar.xz
  rm -rf "$stage"
  # 64 MiB travel in all: past 60, keep what `run.sh worker` needs (tide, its libraries, the
  # bundle) and leave the test programs and the data behind.
  if [ "$(du -sm .gpu | cut -f1)" -gt 60 ]; then
    rm -rf .gpu/data .gpu/bin/test_* .gpu/bin/detect_vs_sep
    echo "prepare: over 60 MiB with PostgreSQL: test programs and data left out (run.sh worker only)"
  fi
fi
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +uncommitted)" > .gpu/commit
du -sh .gpu | awk '{print "prepare: " $2 " " $1}'
