#!/usr/bin/env bash
# check-format.sh — every C and CUDA file of the repository is laid out as .clang-format says
# (clang-format --dry-run -Werror), listing each file that is not.
#
# Enforced only once the tree has been formatted as a whole: until the marker file
# .clang-format-enforced exists at the root the check exits 77 (skipped) at once; `--force`
# runs it regardless. To turn it on: clang-format -i on the files `--force` lists, then
# `touch .clang-format-enforced` and commit both. Registered as the test `check_format`.
# Usage: scripts/check-format.sh [--force] [repository root]
set -euo pipefail
force=0
if [ "${1:-}" = --force ]; then
  force=1
  shift
fi
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$root"
if [ ! -e .clang-format-enforced ] && [ "$force" = 0 ]; then
  echo "check-format: not enforced until .clang-format-enforced exists (skipped);" \
       "scripts/check-format.sh --force lists the files that differ"
  exit 77
fi
if ! command -v clang-format > /dev/null; then
  echo "check-format: clang-format is missing (scripts/install-deps.sh installs it)"
  exit 1
fi
# The files git knows (a checkout), else every such file below the root (an unpacked tarball).
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cu')
else
  mapfile -t files < <(find . -path './build*' -prune -o \( -name '*.c' -o -name '*.h' -o \
                         -name '*.cu' \) -print | sed 's|^\./||' | sort)
fi
# One clang-format for all files; each place that differs is reported as FILE:LINE:COL: error.
mapfile -t bad < <(clang-format --dry-run -Werror "${files[@]}" 2>&1 |
                   sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [ ${#bad[@]} -eq 0 ]; then
  echo "check-format: all ${#files[@]} C/CUDA files follow .clang-format"
  exit 0
fi
printf '%s\n' "${bad[@]}" | sed 's/$/: differs from .clang-format (clang-format -i fixes it)/'
echo "check-format: ${#bad[@]} of ${#files[@]} files differ from .clang-format"
exit 1
