# tests.cmake — the test environment of a sanitizer build (TIDE_SANITIZE; included by
# tests/CMakeLists.txt after every test is declared).
#
# Every report of every process goes to a file under sanitizer-logs/ in the build tree, not only
# to stderr: a command that is expected to fail (tests/cli/test_bad_input.sh) would otherwise
# hide a sanitizer abort behind its expected non-zero exit. scripts/test-sanitize.sh fails
# when any such file exists after ctest. Third-party noise is suppressed by lsan.supp (leaks)
# and ubsan.supp, third-party frames only.
set(TIDE_SANITIZER_LOGS ${CMAKE_BINARY_DIR}/sanitizer-logs)
set(_supp ${CMAKE_CURRENT_SOURCE_DIR}/sanitizer)
# allocator_may_return_null: a size from a file too large for ASan's allocator is a NULL from
# malloc, as in a normal build (tide and cfitsio check for it), not an abort.
# TIDE_SANITIZE_OPTIONS adds options, e.g. fast_unwind_on_malloc=0 for whole stacks through
# libraries built without frame pointers (slow: for looking into a report, not for CI).
set(TIDE_SANITIZE_OPTIONS "" CACHE STRING "more ASAN_OPTIONS for the tests (a:b=c)")
set(_asan "detect_leaks=1:halt_on_error=1:check_initialization_order=1:strict_init_order=1")
set(_asan "${_asan}:allocator_may_return_null=1:log_path=${TIDE_SANITIZER_LOGS}/report")
if(TIDE_SANITIZE_OPTIONS)
  set(_asan "${_asan}:${TIDE_SANITIZE_OPTIONS}")
endif()
set(_lsan "suppressions=${_supp}/lsan.supp:print_suppressions=0")
set(_ubsan "print_stacktrace=1:halt_on_error=1:suppressions=${_supp}/ubsan.supp")
set(_ubsan "${_ubsan}:log_path=${TIDE_SANITIZER_LOGS}/report")

# Function names in stacks: the suppressions match them (Debian's llvm-14 package).
find_program(TIDE_LLVM_SYMBOLIZER NAMES llvm-symbolizer llvm-symbolizer-14
  HINTS /usr/lib/llvm-14/bin)
set(_sym)
if(TIDE_LLVM_SYMBOLIZER)
  set(_sym "ASAN_SYMBOLIZER_PATH=${TIDE_LLVM_SYMBOLIZER}")
endif()

# Tests that load libtide into a program not built with the sanitizers: Python through ctypes
# (their source names TIDE_LIB) and test_install's program built against the installed
# library. ASan's runtime must come first in such a process, so it is preloaded (the build
# links it shared, -shared-libasan, so the tide they start shares the same one), and leak
# checking is off for them: CPython and numpy keep their memory at exit by design and would
# bury any report of ours (their tide commands are checked, for leaks too, by the other tests).
# Label "preload": `ctest -L preload` runs them, `-LE preload` leaves them out.
foreach(src ${TIDE_C_TESTS} ${TIDE_PY_TESTS} ${TIDE_SH_TESTS})
  get_filename_component(name ${src} NAME_WE)
  if(src MATCHES "/peer/")
    set(name peer_${name})
  elseif(src MATCHES "/cli/")
    set(name cli_${name})
  endif()
  file(READ ${src} _text)
  string(FIND "${_text}" "TIDE_LIB" _uses_lib)
  if((_uses_lib GREATER -1 AND NOT src MATCHES "\\.c$") OR name STREQUAL "cli_test_install")
    set_property(TEST ${name} APPEND PROPERTY LABELS preload)
    set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT "LD_PRELOAD=${TIDE_ASAN_RUNTIME}"
      "ASAN_OPTIONS=${_asan}:detect_leaks=0" "LSAN_OPTIONS=${_lsan}" "UBSAN_OPTIONS=${_ubsan}" ${_sym})
  else()
    set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT
      "ASAN_OPTIONS=${_asan}" "LSAN_OPTIONS=${_lsan}" "UBSAN_OPTIONS=${_ubsan}" ${_sym})
  endif()
endforeach()

# Wall-clock time limits inside these tests (the solver's timeout_s: a 50 s blind solve, a 3 s
# limit that must end a solve within 30 s; bench --diff within 60 s) meet the sanitizers'
# slowdown plus a parallel test's load: they run alone.
foreach(name test_solve test_solve_sim peer_test_solve_field cli_test_bench_diff)
  if(TEST ${name})
    set_property(TEST ${name} PROPERTY RUN_SERIAL TRUE)
  endif()
endforeach()
