#!/bin/bash
# fetch_midas.sh — sourced by the tests that read real frames (tests/real/gauntlet.sh,
# tests/cli/test_real_headers.sh): sets $cache to ${TIDE_REAL_CACHE:-~/.cache/tide/real},
# outside the repository, and unpacks Debian's eso-midas-testdata into $cache/midas once
# (apt-get download + dpkg -x: nothing is installed). A failed fetch leaves no $cache/midas;
# the caller decides whether that is a skip.
cache=${TIDE_REAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tide/real}
mkdir -p "$cache" || return 1
if [ ! -d "$cache/midas" ]; then
    fetch_tmp=$(mktemp -d)
    if (cd "$fetch_tmp" && apt-get download -q eso-midas-testdata >/dev/null 2>&1) &&
        dpkg -x "$fetch_tmp"/eso-midas-testdata_*.deb "$fetch_tmp/x"; then
        mv "$fetch_tmp/x" "$cache/midas"
    fi
    rm -rf "$fetch_tmp"
fi
