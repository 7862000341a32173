#!/usr/bin/env bash
# prepare.sh — here, on the build machine: build tide with the CUDA backend for sm_90 (+PTX),
# and gather what the GPU machine lacks (cfitsio, wcslib, FFTW, jansson...) and the real test
# data into .gpu/, so `device run` with carry [".gpu"] can run scripts/gpu/run.sh there.
# TIDE_GPU_PG=1: also a relocatable PostgreSQL 15 + Q3C (scripts/gpu/pg-bundle.sh) as
# .gpu/pg.tar.xz, for `run.sh worker` (~20 MB: the tree itself, ~74 MB with ICU's data, would
# not fit the 64 MiB that travels). A .gpu/ past 48 MiB is packed (below).
# --base COMMIT: also build that commit's tide (a worktree under /tmp) and pack it as
# .gpu/base-tide.xz for `run.sh ab` (the speed A/B of two builds in one device call).
set -euo pipefail
cd "$(dirname "$0")/../.."
base=""
[ "${1:-}" = --base ] && base=$(git rev-parse --short "${2:?--base needs a commit}")
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
# libxgboost: tide rb opens it at run time (dlopen), so the bundler cannot see it in tide
xgb=$(ls /usr/lib/x86_64-linux-gnu/libxgboost.so.0 2>/dev/null || true)
[ -n "$xgb" ] && extra+=("$(readlink -f "$xgb")")
../shared/device/bundle-libs.sh .gpu build-gpu/tide build-gpu/tests/test_* build-gpu/libtide.so \
  "${extra[@]}"
mkdir -p .gpu/bin
cp build-gpu/tide build-gpu/tests/test_* "${extra[@]}" .gpu/bin/
cp -P build-gpu/libtide.so* .gpu/lib/
if [ -n "$xgb" ]; then # under its soname, and out of bin/
  rm -f ".gpu/bin/$(basename "$(readlink -f "$xgb")")"
  cp "$(readlink -f "$xgb")" .gpu/lib/libxgboost.so.0
fi
# Debug sections are most of the size; the carried tree must stay under 64 MiB.
strip --strip-unneeded .gpu/bin/* .gpu/lib/*.so* 2>/dev/null || true
cp -r ../shared/data .gpu/data
if [ "${TIDE_GPU_PG:-0}" = 1 ]; then
  stage=$(mktemp -d)
  scripts/gpu/pg-bundle.sh "$stage/pg"
  tar -C "$stage" -cf - pg | xz -T0 -6 > .gpu/pg.tar.xz
  rm -rf "$stage"
fi
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +uncommitted)" > .gpu/commit
# 64 MiB travel in all (the working tree included): past 48, the programs, libraries and data
# travel as one xz tarball (157 MB -> 35 MB with 101 test programs), which run.sh unpacks.
if [ "$(du -sm .gpu | cut -f1)" -gt 48 ]; then
  pack=$(mktemp /tmp/tide-gpu-pack.XXXXXX)
  tar -C .gpu -cf - --exclude=./pg.tar.xz --exclude=./commit . | xz -T0 -6 > "$pack"
  find .gpu -mindepth 1 -maxdepth 1 ! -name pg.tar.xz ! -name commit -exec rm -rf {} +
  mv "$pack" .gpu/pack.tar.xz && chmod 0644 .gpu/pack.tar.xz
fi
if [ -n "$base" ]; then
  bt=/tmp/tide-base-$base
  [ -d "$bt" ] || git worktree add --detach "$bt" "$base" >/dev/null
  cmake -S "$bt" -B "$bt/build-gpu" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DTIDE_SHARED_DATA=/nonexistent >/dev/null
  cmake --build "$bt/build-gpu" -j"$(nproc)" --target tide
  strip --strip-unneeded -o /tmp/tide-base-exe "$bt/build-gpu/tide"
  xz -T0 -6 -c /tmp/tide-base-exe > .gpu/base-tide.xz && rm -f /tmp/tide-base-exe
  echo "$base" > .gpu/base-commit
fi
du -sh .gpu | awk '{print "prepare: " $2 " " $1}'
