#!/bin/bash
# Real frames through tide's header scan (issue 22, and a first brick of issue 15's gauntlet):
# the scan that guards cfitsio (src/io/fits/fits_scan.c, fits_tiles.c) must refuse hostile files
# without refusing real ones. Every FITS file of Debian's eso-midas-testdata (fetched at test
# time into a cache outside the repository: apt-get download + dpkg -x, no install) and of
# ../shared/data goes through `tide info`; none may be refused with one of the scan's reasons.
# Files tide does not read for other reasons (spectra: 1-D; cubes) are fine.
# Skips when the package cannot be fetched and no shared data is present.
set -u
TIDE=${TIDE_BIN:?}
. "$(dirname "$0")/../real/fetch_midas.sh" || exit 1
dirs=()
[ -d "$cache/midas" ] && dirs+=("$cache/midas")
[ -d "${TIDE_SHARED_DATA:-/nonexistent}" ] && dirs+=("$TIDE_SHARED_DATA")
[ ${#dirs[@]} -gt 0 ] || { echo "SKIP: no eso-midas-testdata and no shared data"; exit 77; }

# The scan's and the tile check's words: a real file refused with one of them is a failure.
scan_words='header card|control character|no END card|must be an integer|must be a quoted|BITPIX .*is not|NAXIS (out of range|missing)|overflows|tile [0-9]+:|ZNAXIS|ZTILE|not a local FITS'
n=0 fail=0
while IFS= read -r -d '' f; do
    [ "$(head -c 9 "$f" 2>/dev/null | tr -d '\0')" = "SIMPLE  =" ] || continue
    n=$((n + 1))
    msg=$("$TIDE" info "$f" 2>&1 >/dev/null)
    if echo "$msg" | grep -Eq "$scan_words"; then
        echo "FAIL: $f refused by the header scan: $msg"
        fail=1
    fi
done < <(find "${dirs[@]}" -type f -size -64M -print0)
echo "$n real FITS files read by tide info; none refused by the header scan: $([ $fail -eq 0 ] && echo yes || echo NO)"
[ $n -gt 0 ] || { echo "FAIL: no FITS file found"; exit 1; }
exit $fail
