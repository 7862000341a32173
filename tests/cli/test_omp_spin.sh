#!/bin/bash
# CLI test of the OpenMP spin policy (src/cli/omp_spin.c): `tide diff` and `tide bench --diff`
# run with GOMP_SPINCOUNT=10000 (the program re-executes itself once with it), a user's
# GOMP_SPINCOUNT or OMP_WAIT_POLICY is kept, and the other commands keep libgomp's default.
# libgomp's OMP_DISPLAY_ENV=verbose prints the value each start of the program sees.
set -u
TIDE=${TIDE_BIN:?TIDE_BIN is not set}
# The policy is libgomp's (GOMP_SPINCOUNT); a clang build runs on LLVM's libomp, which has none.
ldd "$TIDE" | grep -q libgomp || { echo "SKIP: $TIDE is not linked against libgomp"; exit 77; }
# the test sets these itself
unset GOMP_SPINCOUNT OMP_WAIT_POLICY TIDE_OMP_SPIN_SET
tmp=$(mktemp -d /tmp/tide_cli_spin.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
# the value of the last start of the program
spin() { grep -E "GOMP_SPINCOUNT = " | tail -1 | sed -E "s/.*= '([0-9]+)'.*/\1/"; }

"$TIDE" sim -o "$tmp/a.fits" --epoch2 "$tmp/b.fits" --width 256 --height 256 --nstars 80 \
    --ngal 3 --seed 3 >/dev/null 2>"$tmp/sim.err" || { cat "$tmp/sim.err"; echo "FAIL: sim"; exit 1; }

v=$(OMP_DISPLAY_ENV=verbose "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/o1" --backend cpu 2>&1 | spin)
[ "$v" = 10000 ] && ok "tide diff: GOMP_SPINCOUNT $v" || bad "tide diff ran with GOMP_SPINCOUNT '$v'"
[ -f "$tmp/o1/candidates.fits" ] && ok "tide diff wrote its outputs after the re-exec" \
    || bad "tide diff wrote no candidates after the re-exec"
v=$(GOMP_SPINCOUNT=77 OMP_DISPLAY_ENV=verbose "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" -o "$tmp/o2" \
    --backend cpu 2>&1 | spin)
[ "$v" = 77 ] && ok "a user's GOMP_SPINCOUNT is kept" || bad "GOMP_SPINCOUNT=77 became '$v'"
n=$(OMP_WAIT_POLICY=active OMP_DISPLAY_ENV=verbose "$TIDE" diff "$tmp/b.fits" "$tmp/a.fits" \
    -o "$tmp/o3" --backend cpu 2>&1 | grep -c "GOMP_SPINCOUNT = ")
[ "$n" = 1 ] && ok "OMP_WAIT_POLICY set: no re-exec" || bad "OMP_WAIT_POLICY set: $n starts"
v=$(OMP_DISPLAY_ENV=verbose "$TIDE" stats "$tmp/a.fits" 2>&1 | spin)
[ "$v" != 10000 ] && ok "tide stats keeps libgomp's default ($v)" || bad "tide stats changed the spin"
v=$(OMP_DISPLAY_ENV=verbose "$TIDE" bench --diff --help 2>&1 | spin)
[ "$v" = 10000 ] && ok "tide bench --diff: GOMP_SPINCOUNT $v" || bad "bench --diff: '$v'"
exit $fail
