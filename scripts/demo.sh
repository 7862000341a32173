#!/usr/bin/env bash
# demo.sh — the README's first command: install what is missing, build, then run the main job
# on its embedded default: simulate a realistic frame with known truth, print its statistics
# and what `tide info` says about it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
out=${TIDE_DEMO_DIR:-demo-output}
mkdir -p "$out"
build/tide sim -o "$out/frame.fits" --truth "$out/truth.fits" --refcat "$out/refcat.fits"
build/tide stats "$out/frame.fits"
build/tide info "$out/frame.fits"
