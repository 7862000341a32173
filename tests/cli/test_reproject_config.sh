#!/bin/bash
# CLI test of `tide reproject --config/--set/--mask-saturated` (issue 16): a configuration that
# changes no instrument value gives byte-identical outputs; --mask-saturated flags the pixels
# at or above the header's SATURATE (through the keyword map), and a configured level
# (camera.saturate, keyword map off) flags more, the same from --set as from a file; a bad
# configuration is an error naming it.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
tmp=$(mktemp -d /tmp/tide_cli_rpcfg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

"$TIDE" sim -o "$tmp/a.fits" --epoch2 "$tmp/b.fits" --width 256 --height 256 --nstars 120 \
    --seed 5 >/dev/null 2>"$tmp/sim.err" || { cat "$tmp/sim.err"; echo "FAIL: sim"; exit 1; }
rp() { # rp OUT ARGS...
    local out=$1
    shift
    "$TIDE" reproject "$tmp/b.fits" --onto "$tmp/a.fits" -o "$tmp/$out.fits" --backend cpu \
        --no-coverage "$@" >"$tmp/$out.log" 2>&1
}
flagged() { sed -n 's/.*: \([0-9]*\) pixels at or above the saturation level flagged/\1/p' "$1"; }

echo '{ "instrument": { "name": "simulated camera" } }' >"$tmp/named.json"
rp r0 || { cat "$tmp/r0.log"; bad "default run failed"; }
rp r1 --config "$tmp/named.json" || { cat "$tmp/r1.log"; bad "--config failed"; }
cmp -s "$tmp/r0.fits" "$tmp/r1.fits" && ok "same defaults, same output" ||
    bad "a configuration changed the output"

rp s0 --mask-saturated || { cat "$tmp/s0.log"; bad "--mask-saturated failed"; }
echo '{ "keywords": { "saturate": null }, "camera": { "saturate": 2500.0 } }' >"$tmp/sat.json"
rp s1 --mask-saturated --config "$tmp/sat.json" || { cat "$tmp/s1.log"; bad "sat.json failed"; }
rp s2 --mask-saturated --set keywords.saturate=null --set camera.saturate=2500 ||
    { cat "$tmp/s2.log"; bad "--set failed"; }
n0=$(flagged "$tmp/s0.log")
n1=$(flagged "$tmp/s1.log")
echo "flagged: header SATURATE $n0, camera.saturate 2500 $n1"
if [ -n "$n0" ] && [ -n "$n1" ] && [ "$n1" -gt "$n0" ] &&
    ! cmp -s "$tmp/s0.fits" "$tmp/s1.fits"; then
    ok "a configured saturation level flags more"
else
    bad "the configured saturation level did not reach the mask"
fi
cmp -s "$tmp/s1.fits" "$tmp/s2.fits" && ok "--set and --config agree" || bad "--set differs"
rp s3 --mask-saturated --set keywords.saturate=null
grep -q "no saturation level" "$tmp/s3.log" && cmp -s "$tmp/r0.fits" "$tmp/s3.fits" &&
    ok "no level: nothing flagged" || { cat "$tmp/s3.log"; bad "no level"; }

echo '{ "camera": { "saturate": "high" } }' >"$tmp/badcfg.json"
rp e1 --config "$tmp/badcfg.json"
rc=$?
if [ $rc -eq 1 ] && grep -q "badcfg.json" "$tmp/e1.log" && [ ! -e "$tmp/e1.fits" ]; then
    ok "bad configuration: exit 1, named"
else
    cat "$tmp/e1.log"; bad "bad configuration: rc $rc"
fi
exit $fail
