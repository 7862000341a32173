#!/bin/bash
# The real-frame gauntlet (issue 15): fetches Debian's eso-midas-testdata into a cache outside
# the repository (apt-get download + dpkg -x, no install; ${TIDE_REAL_CACHE:-~/.cache/tide/real}),
# then runs gauntlet.py on it and on $TIDE_SHARED_DATA: tide reduce (CPU) against Source
# Extractor and solve-field on every 2-D sky image, one markdown table (stdout and
# gauntlet-table.md in the working directory), failing on a row that misses a target beyond
# known-misses.txt. `gauntlet.sh --table` prints the table and a suggested known-misses.txt
# and never fails on a row (for refreshing the list after a merge).
# Needs: TIDE_BIN (or build-cpu/tide), source-extractor, solve-field, /usr/bin/python3 with
# numpy + astropy. Skips (77) when neither the package nor the shared data is available, or
# when a peer is missing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
TIDE=${TIDE_BIN:-$here/../../build-cpu/tide}
PY=${TIDE_PYTHON:-/usr/bin/python3}
[ -x "$TIDE" ] || { echo "FAIL: no tide binary at $TIDE (set TIDE_BIN)"; exit 1; }
for t in source-extractor solve-field; do
    command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/install-deps.sh)"; exit 77; }
done
. "$here/fetch_midas.sh" || exit 1
dirs=()
m=$(ls -d "$cache"/midas/usr/lib/eso-midas/*/test 2>/dev/null | head -1)
[ -n "$m" ] && for s in prim fits; do [ -d "$m/$s" ] && dirs+=("$m/$s"); done
sd=${TIDE_SHARED_DATA:-/nonexistent}
for s in sep sextractor astrometry wcs diff compressed; do
    [ -d "$sd/$s" ] && dirs+=("$sd/$s")
done
[ ${#dirs[@]} -gt 0 ] || { echo "SKIP: no eso-midas-testdata and no shared data"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tide-gauntlet.XXXXXX")
[ -n "${TIDE_GAUNTLET_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
args=()
[ "${1:-}" = "--table" ] && args+=(--table)
[ -n "${TIDE_GAUNTLET_ONLY:-}" ] && args+=(--only "$TIDE_GAUNTLET_ONLY")
[ -n "${TIDE_GAUNTLET_KNOWN:-}" ] && args+=(--known "$TIDE_GAUNTLET_KNOWN")
"$PY" "$here/gauntlet.py" --tide "$TIDE" --work "$work" "${args[@]}" "${dirs[@]}"
