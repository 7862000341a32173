#!/usr/bin/env bash
# fuzz.sh [SECONDS] [HARNESS...] — run each libFuzzer harness of fuzz/ for SECONDS (default
# 60) from its committed seed corpus (fuzz/corpus/HARNESS) and fail on any crash, leak or hang
# not listed in fuzz/known-crashes.txt. Builds the harnesses first (the sanitizer build of
# scripts/test-sanitize.sh, TIDE_FUZZ=ON; TIDE_FUZZ_BUILD names another build directory).
# Each harness runs in libFuzzer's fork mode and keeps going after a crash, so one known
# cfitsio bug does not end its run; every crash input is then run again alone, its stack
# matched against the known list. What the run found stays in the build tree:
#   BUILD/fuzz/work/HARNESS      the corpus it grew (seeds are never changed)
#   BUILD/fuzz/artifacts/HARNESS crash-*, leak-*, timeout-*, oom-* inputs and their .log
#                                (emptied when the harness runs again)
# fuzz/README.md describes longer campaigns.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
build=${TIDE_FUZZ_BUILD:-build-sanitize}
cc=${TIDE_SANITIZE_CC:-$(command -v clang || command -v clang-14 || true)}
[ -n "$cc" ] || { echo "fuzz: no clang (scripts/install-deps.sh)"; exit 1; }
CC=$cc cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTIDE_ENABLE_CUDA=OFF -DTIDE_SANITIZE=ON -DTIDE_FUZZ=ON >/dev/null
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.c; do harnesses+=("$(basename "$f" .c)"); done
fi
cmake --build "$build" -j"$(nproc)" --target "${harnesses[@]}" >/dev/null
supp=$PWD/tests/sanitizer
# Leaks are checked per input (libFuzzer's -detect_leaks); allocations larger than the
# malloc limit are reported as oom, not followed.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS_EXTRA:-}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
# function names in the stacks (the known-crash patterns and the suppressions match them)
sym=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)
[ -n "$sym" ] && export ASAN_SYMBOLIZER_PATH=$sym

known=fuzz/known-crashes.txt
fail=0
for h in "${harnesses[@]}"; do
  bin=$build/fuzz/$h
  work=$build/fuzz/work/$h
  art=$build/fuzz/artifacts/$h
  rm -rf "$art" # the previous run's findings (copy them elsewhere to keep them)
  mkdir -p "$work" "$art"
  log=$art/run.log
  t0=$(date +%s)
  # -fork=1: one child at a time (CI has 2 cores), restarted after each crash
  "$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$secs" \
    -timeout=30 -rss_limit_mb=2560 -malloc_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$art/" -print_final_stats=1 "$work" "fuzz/corpus/$h" >"$log" 2>&1 || true
  execs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  echo "fuzz: $h: $((${execs:-0})) executions in $(( $(date +%s) - t0 )) s"
  for a in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
    [ -f "$a" ] || continue
    case $a in *.log) continue ;; esac
    [ -f "$a.log" ] || ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" "$bin" -timeout=30 -rss_limit_mb=2560 -malloc_limit_mb=2048 "$a" >"$a.log" 2>&1 || true
    why=""
    while read -r name pattern; do
      case $name in ''|'#'*) continue ;; esac
      if grep -Eq "$pattern" "$a.log"; then why=$name; break; fi
    done <"$known"
    # the first three frames of the report that are tide's or a library's, not the fuzzer's,
    # the sanitizer's or libc's abort path
    top=$(grep -E '^ +#[0-9]+ 0x[0-9a-f]+ in ' "$a.log" | sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in //' \
          | grep -v -E '^(fuzzer::|__sanitizer|__asan|__interceptor|__lsan|__ubsan|__pthread_kill|__libc|__fortify_fail|__chk_fail)|^(malloc|calloc|realloc|free|abort|raise|LLVMFuzzerTestOneInput|main) ' \
          | head -3 | sed -E 's/ \(BuildId[^)]*\)//; s/ \/[^ ]*\/([^/ ]+)$/ \1/' | paste -sd '<' - || true)
    kind=$(grep -m1 -Eo 'ERROR: [A-Za-z]+: [A-Za-z-]+( on| of)?|runtime error: .{0,60}|ERROR: libFuzzer: [a-z-]+|buffer overflow detected' "$a.log" || echo "?")
    if [ -n "$why" ]; then
      echo "fuzz: $h: known ($why): $a: $kind: $top"
    elif ! grep -q -E 'ERROR: |runtime error: |buffer overflow detected|deadly signal' "$a.log"; then
      # libFuzzer saw it in the fork, but alone the input runs clean (state of an earlier
      # input, or the machine): reported for a look, not a failure
      echo "fuzz: $h: not reproduced alone (not a failure): $a"
    elif [[ $(basename "$a") == oom-* ]]; then
      # a size from the file asked for more than the malloc limit: reported, not a failure
      # (a reader may need that much for a real file; README.md)
      echo "fuzz: $h: oom (not a failure): $a: $top"
    else
      echo "fuzz: $h: NEW: $a: $kind: $top"
      fail=1
    fi
  done
done
[ $fail -eq 0 ] && echo "fuzz: no crash other than the known ones (fuzz/known-crashes.txt)"
exit $fail
