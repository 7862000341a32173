#!/bin/bash
# CLI test of mosaic exposures (issue 19): `tide sim --ccds` writes an exposure of CCD
# extensions that is the same for any thread count; `tide reduce` of it writes one catalog
# HDU per CCD and per-CCD side outputs, and refuses CSV on standard output; `tide diff` of an
# 8-CCD exposure against a template mosaic gives, CCD by CCD, the same files as each CCD pair
# differenced alone (SCIENCE[N] TEMPLATE[N]), and skips a CCD the template lacks.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
tmp=$(mktemp -d /tmp/tide_cli_mosaic.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
export SOURCE_DATE_EPOCH=1700000000

# The exposure and a second epoch: identical bytes with 1 and 2 threads.
args=(--ccds 8 --width 256 --height 512 --nstars 150 --ngal 4 --seed 5 --ccd-gap 40
      --e2-dra 4 --e2-ddec -3 --e2-rotation 0.01 --ntransient 6)
"$TIDE" sim "${args[@]}" --threads 1 -o "$tmp/t1.fits" --epoch2 "$tmp/s1.fits" >/dev/null ||
    bad "sim, 1 thread"
"$TIDE" sim "${args[@]}" --threads 2 -o "$tmp/tmpl.fits" --epoch2 "$tmp/sci.fits" \
    --truth "$tmp/truth.fits" >/dev/null || bad "sim, 2 threads"
cmp -s "$tmp/t1.fits" "$tmp/tmpl.fits" && cmp -s "$tmp/s1.fits" "$tmp/sci.fits" &&
    ok "mosaic identical for 1 and 2 threads" || bad "mosaic depends on the thread count"
info=$("$TIDE" info "$tmp/sci.fits")
[ "$(grep -c ' image  *CCD0' <<<"$info")" = 8 ] && ok "8 CCD extensions" || bad "tide info: $info"
"$TIDE" sim --ccds 2 --mask -o "$tmp/x.fits" >/dev/null 2>&1
[ $? = 2 ] && ok "--mask with --ccds refused" || bad "--mask with --ccds accepted"

# reduce: one table per CCD, per-CCD maps, no CSV on standard output.
"$TIDE" reduce "$tmp/tmpl.fits" -o "$tmp/cat.fits" --back "$tmp/back.fits" --default none \
    --bias 1000 >/dev/null || bad "reduce of the mosaic"
cinfo=$("$TIDE" info "$tmp/cat.fits")
[ "$(grep -c 'bintable  *CCD0' <<<"$cinfo")" = 8 ] && ok "8 catalog tables" || bad "catalog: $cinfo"
[ -f "$tmp/back.CCD08.fits" ] && ok "per-CCD maps" || bad "no back.CCD08.fits"
"$TIDE" reduce "$tmp/tmpl.fits" --csv - --default none >/dev/null 2>"$tmp/err"
grep -q "one file per CCD" "$tmp/err" && ok "CSV on stdout refused" || bad "CSV - accepted"

# diff: the mosaic CCD by CCD equals each pair alone.
"$TIDE" diff "$tmp/sci.fits" "$tmp/tmpl.fits" -o "$tmp/dm" --default none >"$tmp/dm.txt" 2>&1 ||
    bad "diff of the mosaics: $(tail -3 "$tmp/dm.txt")"
for k in 1 2 3 4 5 6 7 8; do
    "$TIDE" diff "$tmp/sci.fits[$k]" "$tmp/tmpl.fits[$k]" -o "$tmp/d$k" --default none \
        >/dev/null 2>&1 || bad "diff of CCD $k alone"
    for f in difference.fits candidates.fits kernel.fits; do
        cmp -s "$tmp/dm/CCD0$k/$f" "$tmp/d$k/$f" || bad "CCD $k: $f differs from the pair alone"
    done
done
[ $fail = 0 ] && ok "8 CCDs equal their pairs alone"

# A CCD the template lacks: reported and skipped, the others differenced.
"$TIDE" sim --ccds 7 --width 256 --height 512 --nstars 150 --ngal 4 --seed 5 --ccd-gap 40 \
    -o "$tmp/tmpl7.fits" >/dev/null || bad "sim of 7 CCDs"
"$TIDE" diff "$tmp/sci.fits" "$tmp/tmpl7.fits" -o "$tmp/d7" --default none >"$tmp/d7.txt" 2>&1
grep -q "CCD08): no such CCD in the template" "$tmp/d7.txt" && ok "missing CCD reported" ||
    bad "missing CCD not reported: $(tail -3 "$tmp/d7.txt")"
[ ! -e "$tmp/d7/CCD08" ] && ok "missing CCD skipped" || bad "CCD08 written without a template"
exit $fail
