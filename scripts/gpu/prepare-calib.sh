#!/usr/bin/env bash
# prepare-calib.sh — here, on the build machine: gather what `run-calib.sh` needs on the GPU
# machine into .gpu-calib/: the CUDA build of tide (scripts/gpu/prepare.sh builds it in
# build-gpu) with its libraries (astrometry.net, GSL, ERFA, SQLite, libpq...), and a
# relocatable PostgreSQL 15 server with Q3C (that machine has none) as one xz tarball.
# Then: device run with carry [".gpu-calib"] and `bash scripts/gpu/run-calib.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
ex=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$ex")"
grep -qx '/.gpu-calib/' "$ex" 2>/dev/null || echo '/.gpu-calib/' >> "$ex"
[ -x build-gpu/tide ] || { echo "prepare-calib: run scripts/gpu/prepare.sh first" >&2; exit 1; }
rm -rf .gpu-calib && mkdir -p .gpu-calib/bin
../shared/device/bundle-libs.sh .gpu-calib build-gpu/tide
cp build-gpu/tide .gpu-calib/bin/
strip --strip-unneeded .gpu-calib/bin/* .gpu-calib/lib/*.so* 2>/dev/null || true

# PostgreSQL: the relocatable bundle (scripts/gpu/pg-bundle.sh), as pg/ in the tarball.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
scripts/gpu/pg-bundle.sh "$stage/pg"
tar -C "$stage" -cf - pg | xz -T0 -6 > .gpu-calib/pg.tar.xz
# tide and its libraries (~45 MB) + PostgreSQL (~20 MB) would be over the 64 MiB that travel:
# they go as one xz tarball, which run-calib.sh unpacks (as prepare.sh's pack.tar.xz).
pack=$(mktemp /tmp/tide-gpu-pack.XXXXXX)
tar -C .gpu-calib -cf - bin lib | xz -T0 -6 > "$pack"
rm -rf .gpu-calib/bin .gpu-calib/lib
mv "$pack" .gpu-calib/pack.tar.xz && chmod 0644 .gpu-calib/pack.tar.xz
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +uncommitted)" > .gpu-calib/commit
du -sh .gpu-calib | awk '{print "prepare-calib: " $2 " " $1}'
