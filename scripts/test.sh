#!/usr/bin/env bash
# test.sh — the README's second command: install what is missing, build, run every test.
# GPU tests report themselves skipped where no GPU is present (CI); scripts/gpu/ runs them on
# the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
