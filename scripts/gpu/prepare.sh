#!/usr/bin/env bash
# prepare.sh — here, on the build machine: build tide with the CUDA backend for sm_90 (+PTX),
# and gather what the GPU machine lacks (cfitsio, wcslib, FFTW, jansson...) and the real test
# data into .gpu/, so `device run` with carry [".gpu"] can run scripts/gpu/run.sh there.
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
# fpack: the tile-decoding benchmark compresses its frames there (scripts/gpu/run.sh decode)
extra+=("$(command -v fpack)")
../shared/device/bundle-libs.sh .gpu build-gpu/tide build-gpu/tests/test_* build-gpu/libtide.so \
  "${extra[@]}"
mkdir -p .gpu/bin
cp build-gpu/tide build-gpu/tests/test_* "${extra[@]}" .gpu/bin/
cp -P build-gpu/libtide.so* .gpu/lib/
# Debug sections are most of the size; the carried tree must stay under 64 MiB.
strip --strip-unneeded .gpu/bin/* .gpu/lib/*.so* 2>/dev/null || true
cp -r ../shared/data .gpu/data
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +uncommitted)" > .gpu/commit
du -sh .gpu | awk '{print "prepare: " $2 " " $1}'
