#!/usr/bin/env bash
# test.sh — the README's second command: install what is missing, build, run every test.
# GPU tests report themselves skipped where no GPU is present (CI); scripts/gpu/ runs them on
# the GPU machine. Then the sanitizer build runs the whole suite again (test-sanitize.sh) and
# each fuzz harness runs for 40 s (fuzz.sh); TIDE_TEST_QUICK=1 skips both. On CI's 2 cores:
# ~6 min normal build and tests, ~13 min sanitizer build and tests, ~6 min fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
[ "${TIDE_TEST_QUICK:-0}" = 1 ] && exit 0
# both run, whatever the first says; either failing fails the test command
st=0
scripts/test-sanitize.sh build-sanitize || st=1
scripts/fuzz.sh 40 || st=1
exit $st
