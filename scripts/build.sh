#!/usr/bin/env bash
# build.sh [BUILD_DIR] — configure and build tide (CUDA backend when nvcc is found).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)"
