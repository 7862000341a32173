#!/usr/bin/env bash
# test_walls_checks.sh — the wall checks can fail: on a copy of the tree with one break of each
# kind planted, check-layers.sh, check-headers.sh and check-format.sh each exit 1 and name the
# file and line; on the tree as it is, check-layers and check-headers pass.
set -euo pipefail
src=${TIDE_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/include" "$src/src" "$src/docs" "$src/scripts" "$src/.clang-format" "$tmp/"
bash "$tmp/scripts/check-layers.sh" "$tmp" > /dev/null
bash "$tmp/scripts/check-headers.sh" "$tmp" > /dev/null

# Layers: a higher layer from core, another module's internal header, src/ from a public header.
echo '#include "tide/diff.h"' >> "$tmp/src/core/image.c"
echo '#include "reduction/psf/psf_internal.h"' >> "$tmp/src/reduction/detect/detect.c"
sed -i 's|^#include "tide/export.h"$|#include "tide/export.h"\n#include "core/rng.h"|' \
  "$tmp/include/tide/log.h"
set +e
out=$(bash "$tmp/scripts/check-layers.sh" "$tmp")
rc=$?
set -e
[ "$rc" = 1 ] || { echo "check-layers: rc $rc, want 1"; echo "$out"; exit 1; }
n=$(wc -l < "$src/src/core/image.c")
for want in "src/core/image.c:$((n + 1)): #include \"tide/diff.h\": tide/diff.h belongs to pipeline" \
            "src/reduction/detect/detect.c:" "is internal to reduction/psf, not reduction/detect" \
            "include/tide/log.h:" "a public header includes src/core/rng.h"; do
  grep -qF "$want" <<< "$out" || { echo "check-layers did not report: $want"; echo "$out"; exit 1; }
done
# A folder the table does not know is an error of the table (2).
mkdir "$tmp/src/newfolder"
set +e
bash "$tmp/scripts/check-layers.sh" "$tmp" > /dev/null
rc=$?
set -e
[ "$rc" = 2 ] || { echo "check-layers on an unknown folder: rc $rc, want 2"; exit 1; }

# Headers: a public header that needs a POSIX type it does not include.
echo 'static inline int tide_walls_probe(void) { ssize_t n = 0; return (int)n; }' \
  >> "$tmp/include/tide/png.h"
set +e
out=$(bash "$tmp/scripts/check-headers.sh" "$tmp")
rc=$?
set -e
[ "$rc" = 1 ] || { echo "check-headers: rc $rc, want 1"; exit 1; }
grep -qF "tide/png.h does not compile alone" <<< "$out" || { echo "$out"; exit 1; }

# Format: skipped without the marker, a failure with it (a file laid out against the style).
if command -v clang-format > /dev/null; then
  mkdir "$tmp/fmt"
  cp "$src/.clang-format" "$tmp/fmt/"
  printf 'int  f( int x ){return x;}\n' > "$tmp/fmt/bad.c"
  set +e
  bash "$tmp/scripts/check-format.sh" "$tmp/fmt" > /dev/null; rc_skip=$?
  touch "$tmp/fmt/.clang-format-enforced"
  out=$(bash "$tmp/scripts/check-format.sh" "$tmp/fmt"); rc=$?
  set -e
  [ "$rc_skip" = 77 ] || { echo "check-format without the marker: rc $rc_skip, want 77"; exit 1; }
  [ "$rc" = 1 ] || { echo "check-format with the marker: rc $rc, want 1"; exit 1; }
  grep -qF "bad.c: differs from .clang-format" <<< "$out" || { echo "$out"; exit 1; }
fi
echo ok
