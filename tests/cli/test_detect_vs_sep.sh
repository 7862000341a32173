#!/bin/bash
# bench/detect_vs_sep (built where libsep-dev is installed): on a small simulated frame it runs
# both detectors on the same background-subtracted frame and prints one row with both source
# counts (plausible: each finds hundreds to thousands of the 2,000 stars), both times and their
# ratio; bad options exit 2. Skipped (77) when the program was not built.
set -u
TIDE=${TIDE_BIN:?}
B=$(dirname "$TIDE")/detect_vs_sep
[ -x "$B" ] || { echo "detect_vs_sep not built (no libsep): skipped"; exit 77; }
fail=0
out=$("$B" --sizes 512x512 --repeats 1 --backend cpu) || { echo "FAIL: exit $?"; exit 1; }
echo "$out"
row=$(echo "$out" | awk '$1 == "512x512"')
[ -n "$row" ] || { echo "FAIL: no 512x512 row"; fail=1; }
set -- $row
for v in "$2" "$3" "$4" "$5"; do
  awk -v v="$v" 'BEGIN { exit !(v + 0 > 0) }' || { echo "FAIL: '$v' is not a positive number"; fail=1; }
done
awk -v a="$2" -v b="$4" 'BEGIN { exit !(a >= 100 && a <= 3000 && b >= 100 && b <= 3000) }' ||
  { echo "FAIL: source counts tide $2, sep $4 outside 100..3000"; fail=1; }
case "$6" in *x) ;; *) echo "FAIL: no ratio column ($6)"; fail=1 ;; esac
"$B" --sizes 10x10 > /dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: a 10x10 frame must be a usage error"; fail=1; }
"$B" --bogus > /dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: an unknown option must be a usage error"; fail=1; }
[ $fail -eq 0 ] && echo ok
exit $fail
