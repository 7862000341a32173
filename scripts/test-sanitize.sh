#!/usr/bin/env bash
# test-sanitize.sh [BUILD_DIR] [CTEST_ARGS...] — the whole test suite under AddressSanitizer,
# UndefinedBehaviorSanitizer and LeakSanitizer: a clang, CPU-only build (TIDE_SANITIZE=ON,
# TIDE_FUZZ=ON: the fuzz harnesses come from the same objects, so scripts/fuzz.sh builds
# nothing more), then ctest. Fails on a failing test, and on any sanitizer report written by
# any process of any test (sanitizer-logs/ of the build: a report from a command that a test
# expects to fail would otherwise pass unseen). scripts/test.sh runs it after the normal tests.
# 2 cores: ~3 min build, ~10 min tests (595 s measured; the solver and bench tests with
# wall-clock limits run alone). Python tests that load libtide through ctypes run with ASan's
# runtime preloaded and no leak check (label "preload", tests/sanitizer/tests.cmake).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-sanitize}
[ $# -gt 0 ] && shift
# clang, or Debian's clang-14 alone (package clang-14 installs no plain "clang")
cc=${TIDE_SANITIZE_CC:-$(command -v clang || command -v clang-14 || true)}
[ -n "$cc" ] || { echo "test-sanitize: no clang (scripts/install-deps.sh)"; exit 1; }
CC=$cc cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIDE_ENABLE_CUDA=OFF \
  -DTIDE_SANITIZE=ON -DTIDE_FUZZ=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
logs=$build/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
st=0
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@" || st=$?
# A file holding only warnings (allocator_may_return_null's "failed to allocate" when a test
# feeds a huge size on purpose) is not a report.
reports=$(grep -l -E 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$logs"/* 2>/dev/null || true)
if [ -n "$reports" ]; then
  echo "test-sanitize: sanitizer reports ($logs):"
  for f in $reports; do
    echo "--- $f"
    cat "$f"
  done
  st=1
fi
[ $st -eq 0 ] && echo "test-sanitize: every test passed, no sanitizer report"
exit $st
