#!/bin/bash
# CLI test of `tide diff --config/--default/--set` (issue 16): each frame's instrument values
# come through the configuration as for tide reduce. The built-in defaults, an explicit
# --default none and a configuration that changes no instrument value give byte-identical
# outputs; a saturation level from a configuration file (camera.saturate, keyword map off)
# changes what is masked, and --set gives the same result as the file; an unknown key is an
# error naming it, a malformed --set a usage error, and a configuration file cannot be an
# output.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
tmp=$(mktemp -d /tmp/tide_cli_diffcfg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

"$TIDE" sim -o "$tmp/a.fits" --epoch2 "$tmp/b.fits" --width 256 --height 256 --nstars 120 \
    --seed 11 >/dev/null 2>"$tmp/sim.err" || { cat "$tmp/sim.err"; echo "FAIL: sim"; exit 1; }

run() { # run OUT ARGS...: tide diff b.fits a.fits -o OUT ARGS
    local out=$1
    shift
    "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/$out" --backend cpu --threads 2 "$@" \
        >"$tmp/$out.log" 2>&1
}
mask_mean() {
    "$TIDE" stats "$1[MASK]" --json --backend cpu 2>/dev/null |
        sed -n 's/^ *"mean": \([0-9.e+-]*\),*$/\1/p' | head -1
}

run d0 || { cat "$tmp/d0.log"; bad "default run failed"; }
run d1 --default none || { cat "$tmp/d1.log"; bad "--default none failed"; }
cat >"$tmp/named.json" <<'JEOF'
{ "instrument": { "name": "simulated camera" } }
JEOF
run d2 --config "$tmp/named.json" || { cat "$tmp/d2.log"; bad "--config failed"; }
if cmp -s "$tmp/d0/difference.fits" "$tmp/d1/difference.fits" &&
    cmp -s "$tmp/d0/difference.fits" "$tmp/d2/difference.fits" &&
    cmp -s "$tmp/d0/candidates.fits" "$tmp/d2/candidates.fits"; then
    ok "same defaults, same outputs"
else
    bad "the defaults through a configuration changed the outputs"
fi

# a saturation level from the configuration, not the header's SATURATE
cat >"$tmp/sat.json" <<'JEOF'
{ "keywords": { "saturate": null }, "camera": { "saturate": 2500.0 } }
JEOF
run s1 --config "$tmp/sat.json" || { cat "$tmp/s1.log"; bad "--config sat.json failed"; }
run s2 --set keywords.saturate=null --set camera.saturate=2500 ||
    { cat "$tmp/s2.log"; bad "--set saturation failed"; }
m0=$(mask_mean "$tmp/d0/difference.fits")
m1=$(mask_mean "$tmp/s1/difference.fits")
echo "mask mean: default $m0, camera.saturate 2500: $m1"
if [ -n "$m0" ] && [ -n "$m1" ] && awk -v a="$m0" -v b="$m1" 'BEGIN { exit !(b > a) }'; then
    ok "a configured saturation level masks more"
else
    bad "the configured saturation level did not reach the mask ($m0 -> $m1)"
fi
if cmp -s "$tmp/s1/difference.fits" "$tmp/s2/difference.fits"; then
    ok "--set reaches the same instrument values as the file"
else
    bad "--set and --config differ"
fi

# the gain through the keyword map: a keyword the frames lack makes it unknown
run g1 --set keywords.gain=NOSUCHKW || { cat "$tmp/g1.log"; bad "--set keywords.gain failed"; }
if cmp -s "$tmp/d0/difference.fits" "$tmp/g1/difference.fits"; then
    bad "an unknown gain did not change the variance"
else
    ok "the gain comes through the keyword map"
fi

# errors
run e1 --set camera.nosuchkey=1
rc=$?
if [ $rc -eq 1 ] && grep -q "nosuchkey" "$tmp/e1.log" && [ ! -e "$tmp/e1" ]; then
    ok "unknown key: exit 1, named, no output"
else
    cat "$tmp/e1.log"; bad "unknown key: rc $rc"
fi
run e2 --set camera.saturate
rc=$?
[ $rc -eq 2 ] && ok "malformed --set: exit 2" || { cat "$tmp/e2.log"; bad "malformed --set: rc $rc"; }
"$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/sat.json" --config "$tmp/sat.json" \
    --backend cpu >"$tmp/e3.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ -f "$tmp/sat.json" ] && grep -q saturate "$tmp/sat.json"; then
    ok "a configuration file is not replaced by the outputs (rc $rc)"
else
    cat "$tmp/e3.log"; bad "the configuration file was replaced (rc $rc)"
fi
"$TIDE" diff --help | grep -q -- "--config FILE" && ok "help lists --config" ||
    bad "help lacks --config"
exit $fail
