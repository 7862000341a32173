#!/bin/bash
# xray_bench.sh — issue 20's speed figure: a Jungfrau-1M-sized pair (1024×1024 pixels, 100
# delays) simulated in full, then `tide xray fit --bench` per 16×16 tile, per 16-column strip
# with ±3 rows integrated (cuPhoton's default tiling) and per pixel, and beside them NumPy's
# per-trace loop (bench/xray_numpy.py, cuPhoton's method) on the strips' own traces.
#
# usage: bench/xray_bench.sh [WORKDIR] [TIDE] (WORKDIR needs ~1 GB; default $OUT or /tmp)
# Each fit runs twice: the second times the pair "from HDF5 in the page cache".
# XRAY_BENCH_SIM="--ny 64 --nx 64" makes a small pair instead (a smoke run of the script).
set -eu
W=${1:-${OUT:-/tmp}}/xray-bench
TIDE=${2:-build/tide}
PY=${TIDE_PYTHON:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$W"
# shellcheck disable=SC2086
[ -s "$W/sim/on.h5" ] || "$TIDE" xray sim -o "$W/sim" ${XRAY_BENCH_SIM:-}
"$TIDE" xray probe "$W/sim/on.h5" "$W/sim/off.h5"
run() { # run NAME ARGS...
    local name=$1
    shift
    echo "== $name"
    "$TIDE" xray fit "$W/sim/on.h5" "$W/sim/off.h5" -o "$W/$name" --no-png --bench "$@"
    "$TIDE" xray fit "$W/sim/on.h5" "$W/sim/off.h5" -o "$W/$name" --no-png --bench "$@"
}
run tile16 --tile-y 16 --integrate 0
run strips --traces
run strips-lpsvd --no-refine --traces
run pixel --tile-x 1 --tile-y 1 --integrate 0
echo "== NumPy per-trace loop on the strips' traces (LPSVD alone, as cuPhoton)"
"$PY" "$HERE/xray_numpy.py" "$W/strips-lpsvd" --max 8192
