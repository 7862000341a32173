#!/bin/bash
# test_config.sh — `tide config`: layers and origins, --set, --plain round trip, --keys, a real
# DECam frame resolved through config/instruments/decam.json, and bad configurations (non-zero
# exit, message naming FILE:LINE:COLUMN, nothing on stdout).
set -u
: "${TIDE_BIN:?}" "${TIDE_SOURCE_DIR:?}"
PY=${TIDE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# run NAME EXPECTED_EXIT ARGS...: run tide config, keep stdout/stderr in $T/NAME.{out,err}
run() {
    local name=$1 want=$2
    shift 2
    "$TIDE_BIN" config "$@" >"$T/$name.out" 2>"$T/$name.err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "$name: exit $rc, wanted $want: $(cat "$T/$name.err")"
}
# expect_err NAME TEXT: stderr of NAME contains TEXT, stdout is empty
expect_err() {
    grep -qF -- "$2" "$T/$1.err" || fail "$1: stderr lacks '$2': $(cat "$T/$1.err")"
    [ ! -s "$T/$1.out" ] || fail "$1: stdout not empty"
}
# check NAME PYTHON_EXPR: evaluate an assertion on the JSON stdout of NAME (as d)
check() {
    "$PY" - "$T/$1.out" "$2" <<'EOF' || fail "$1: $2"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    ok = eval(sys.argv[2])
except Exception as e:
    print("%s: %s" % (type(e).__name__, e), file=sys.stderr)
    ok = False
if not ok:
    print("assertion false:", sys.argv[2], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}

run help 0 --help
grep -q -- "--set SECTION.KEY=VAL" "$T/help.out" || fail "help lacks --set"

# ---- built-ins only -------------------------------------------------------------------------
run builtin 0 --default none
check builtin 'd["config"]["processing"]["back_size"] == 64 and d["config"]["camera"]["gain"] is None'
check builtin 'd["config"]["processing"]["aper_radii"] == [3.0, 5.0, 8.0]'
check builtin 'd["config"]["camera"]["_origin"]["gain"] == "built-in" and d["layers"]["default"] is None'

# ---- the layers: default.json (via TIDE_CONFIG_DIR) -> instrument -> --set --------------------
mkdir -p "$T/site"
cat >"$T/site/default.json" <<'EOF'
{
  "camera": {
    "gain": 2.0,
    "rdnoise": 4.0
  },
  "processing": {"back_size": 32}
}
EOF
cat >"$T/inst.json" <<'EOF'
{
  "instrument": {"name": "TestCam"},
  "camera": {
    "rdnoise": 3.0
  }
}
EOF
TIDE_CONFIG_DIR="$T/site" run layers 0 --config "$T/inst.json" --set processing.back_size=128 \
    --set processing.aper_radii=2,4
check layers 'd["layers"]["default"].endswith("site/default.json") and d["layers"]["instrument"].endswith("inst.json")'
check layers 'd["config"]["camera"]["gain"] == 2.0 and d["config"]["camera"]["_origin"]["gain"].endswith("site/default.json:3:13")'
check layers 'd["config"]["camera"]["rdnoise"] == 3.0 and d["config"]["camera"]["_origin"]["rdnoise"].endswith("inst.json:4:16")'
check layers 'd["config"]["processing"]["back_size"] == 128 and d["config"]["processing"]["_origin"]["back_size"] == "override"'
check layers 'd["config"]["processing"]["aper_radii"] == [2.0, 4.0] and d["config"]["instrument"]["name"] == "TestCam"'
check layers 'd["config"]["processing"]["_origin"]["detect_thresh"] == "built-in"'

# without TIDE_CONFIG_DIR the source tree's default.json is found
env -u TIDE_CONFIG_DIR "$TIDE_BIN" config >"$T/srcdef.out" 2>"$T/srcdef.err" || fail "srcdef: $(cat "$T/srcdef.err")"
check srcdef 'd["layers"]["default"] is not None and d["layers"]["default"].endswith("config/default.json")'

# ---- --plain is a configuration file: it loads back to the same values ----------------------
TIDE_CONFIG_DIR="$T/site" run plain 0 --config "$T/inst.json" --set camera.saturate=60000 --plain
cp "$T/plain.out" "$T/again.json"
run again 0 --default none --config "$T/again.json" --plain
cmp -s "$T/plain.out" "$T/again.out" || fail "--plain does not round-trip"
# and so is the full output with _origin members (comments to the loader)
run full 0 --default none --config "$T/inst.json"
"$PY" -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["config"], open(sys.argv[2],"w"))' \
    "$T/full.out" "$T/full.json" || fail "cannot extract config"
run fullback 0 --default none --config "$T/full.json"

# ---- --keys ---------------------------------------------------------------------------------
run keys 0 --keys
grep -q "^camera.gain" "$T/keys.out" || fail "--keys lacks camera.gain"
run keysjson 0 --keys --json
check keysjson 'len(d) > 40 and any(k["key"] == "processing.aper_radii" and k["type"] == "array of numbers" for k in d)'

# ---- a real DECam CCD through the shipped DECam configuration -------------------------------
DECAM=${TIDE_SHARED_DATA:-}/diff/DEC-OBS04a.mini.fits
if [ -f "$DECAM" ]; then
    run decam 0 --default none --config "$TIDE_SOURCE_DIR/config/instruments/decam.json" "$DECAM"
    check decam 'd["frame"]["width"] == 256 and d["frame"]["height"] == 256'
    check decam 'abs(d["frame"]["instrument"]["gain"]["value"] - 3.984046692260535) < 1e-12 and d["frame"]["instrument"]["gain"]["source"] == "header"'
    check decam 'd["frame"]["instrument"]["exptime"]["value"] == 330.0 and d["frame"]["instrument"]["filter"]["value"].startswith("i DECam")'
    # RA1 = '21:13:28.18' (hours), DEC1 = '-66:02:39.8'; the header's CENRA1/CENDEC1 agree to 1e-3 deg
    check decam 'abs(d["frame"]["instrument"]["ra"]["value"] - 318.3674) < 1e-3 and abs(d["frame"]["instrument"]["dec"]["value"] + 66.0444) < 1e-3'
    check decam 'd["frame"]["instrument"]["ra"]["keyword"] == "RA1"'
    check decam 'd["frame"]["instrument"]["pixsize"]["source"] == "camera" and d["frame"]["instrument"]["pixsize"]["keyword"] is None'
    check decam 'abs(d["frame"]["instrument"]["pixscale"]["value"] - 0.263) < 0.001 and d["frame"]["instrument"]["pixscale"]["source"] == "derived"'
    check decam 'd["frame"]["instrument"]["ncombine"]["source"] == "camera" and d["frame"]["instrument"]["object"]["value"] is None'
    # an override of the camera value wins over the header
    run decamov 0 --default none --config "$TIDE_SOURCE_DIR/config/instruments/decam.json" \
        --set camera.gain=5 "$DECAM"
    check decamov 'd["frame"]["instrument"]["gain"]["value"] == 5.0 and d["frame"]["instrument"]["gain"]["source"] == "override"'
else
    echo "note: $DECAM not found; DECam frame checks skipped"
fi

# ---- bad configurations ---------------------------------------------------------------------
cat >"$T/unknown.json" <<'EOF'
{
  "camera": {
    "gain": 2.0,
    "gian": 3.0
  }
}
EOF
run unknown 1 --default none --config "$T/unknown.json"
expect_err unknown "unknown.json:4:5: unknown key 'gian' in section 'camera' (did you mean 'gain'?)"

cat >"$T/malformed.json" <<'EOF'
{
  "camera": {
    "gain": 2.0
    "rdnoise": 3
  }
}
EOF
run malformed 1 --default none --config "$T/malformed.json"
expect_err malformed "malformed.json:4:13: malformed JSON: '}' expected near '\"rdnoise\"'"

printf '{"processing": {\n  "back_size": "big"\n}}\n' >"$T/type.json"
run type 1 --default none --config "$T/type.json"
expect_err type "type.json:2:16: processing.back_size must be an integer, got a string"

printf '{"camera": {"gain": 2}, "camra": {}}' >"$T/section.json"
run section 1 --default none --config "$T/section.json"
expect_err section "section.json:1:25: unknown section 'camra'"

# a broken default.json is reported too
mkdir -p "$T/badsite"
printf '{"processing": {"detect_thresh": -1}}' >"$T/badsite/default.json"
TIDE_CONFIG_DIR="$T/badsite" run badsite 1
expect_err badsite "badsite/default.json:1:34: processing.detect_thresh -1 is out of range"

run badset 1 --default none --set camera.gain=fast
expect_err badset "--set camera.gain=fast: camera.gain must be a number"
run badsetkey 1 --default none --set processing.nope=1
expect_err badsetkey "unknown key 'nope' in section 'processing'"
run missing 1 --default none --config "$T/does-not-exist.json"
expect_err missing "does-not-exist.json: cannot open"
run badopt 2 --frobnicate
run twoframes 2 a.fits b.fits
run twoconfigs 2 --config a.json --config b.json
run noval 2 --set
printf 'not a FITS file\n' >"$T/notfits.fits"
run notfits 1 --default none "$T/notfits.fits"
grep -qF "notfits.fits" "$T/notfits.err" || fail "notfits: message does not name the file: $(cat "$T/notfits.err")"
[ ! -s "$T/notfits.out" ] || fail "notfits: stdout not empty"

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)" >&2
    exit 1
fi
echo ok
