#!/usr/bin/env bash
# check-headers.sh — every installed header (include/tide/*.h) compiles alone, as a user's
# program would include it: one C11 translation unit per header, strict ISO C (no POSIX or GNU
# extensions asked for), warnings as errors, include/ as the only tide include path, and the
# headers it pulls in listed to show none comes from src/. Each header is also included twice,
# to catch a broken include guard. Registered as the test `check_headers`.
# Usage: scripts/check-headers.sh [repository root]   (CC picks the compiler; cc by default)
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for h in "$root"/include/tide/*.h; do
  name=tide/$(basename "$h")
  printf '#include "%s"\n#include "%s"\nint tide_header_alone_%d;\n' "$name" "$name" "$n" \
    > "$tmp/tu.c"
  n=$((n + 1))
  if ! "$cc" -std=c11 -pedantic-errors -Wall -Wextra -Werror -fsyntax-only -H \
       -I"$root/include" "$tmp/tu.c" 2> "$tmp/err"; then
    echo "check-headers: $name does not compile alone:"
    grep -v '^\.' "$tmp/err" | sed '/^Multiple include guards/,$d; s/^/  /'
    fail=1
    continue
  fi
  # -H lists each header opened, one per line, prefixed with dots by depth.
  if grep -E '^\.+ ' "$tmp/err" | grep -F "$root/src/" > "$tmp/src"; then
    echo "check-headers: $name includes private headers of src/:"
    sed 's/^/  /' "$tmp/src"
    fail=1
  fi
done
[ "$fail" = 0 ] || exit 1
echo "check-headers: all $n public headers compile alone and include nothing of src/"
