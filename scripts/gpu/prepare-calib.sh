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

# PostgreSQL: the Debian layout under one root, so the server finds its share/ and lib/
# directories relative to its binary (they are ../../../../share/postgresql/15 and ../lib).
pg=/usr/lib/postgresql/15
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/usr/lib/postgresql/15/bin" "$stage/usr/lib/postgresql/15/lib" \
         "$stage/usr/share/postgresql" "$stage/libs"
for b in postgres initdb pg_ctl psql; do cp "$pg/bin/$b" "$stage/usr/lib/postgresql/15/bin/"; done
cp "$pg"/lib/*.so "$stage/usr/lib/postgresql/15/lib/"
rm -f "$stage/usr/lib/postgresql/15/lib/llvmjit.so"   # JIT is off: LLVM would be 100 MB
cp -r /usr/share/postgresql/15 "$stage/usr/share/postgresql/"
for b in "$stage"/usr/lib/postgresql/15/bin/*; do ldd "$b" | awk '/=> \//{print $3}'; done \
  | sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux|libstdc\+\+|libgcc_s)[.-]' \
  | xargs -I{} cp -L {} "$stage/libs/"
tar cJf .gpu-calib/pg.tar.xz -C "$stage" .
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +uncommitted)" > .gpu-calib/commit
du -sh .gpu-calib | awk '{print "prepare-calib: " $2 " " $1}'
