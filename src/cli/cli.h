/* cli.h — what every `tide` subcommand shares: the common options, context creation, and
 * turning a status into a message and an exit code.
 *
 * Exit codes: 0 success, 1 the work failed (bad input, I/O, no GPU...), 2 usage error. */
#ifndef TIDE_CLI_H
#define TIDE_CLI_H
#include "tide/tide.h"

/** Options every computing command takes. */
typedef struct tide_cli_common {
    tide_ctx_options ctx_opt; /**< --backend, --device, --threads, --log-level, --log-json */
    int json;                 /**< --json: print results as one JSON document */
} tide_cli_common;

/** Defaults: auto backend, device 0, log level warn to stderr, text output. */
void tide_cli_common_init(tide_cli_common *c);

/** If argv[*i] is a common option, consume it (and its value, advancing *i) and return 1; return
 *  0 if it is not one; return -1 after printing a usage message if its value is bad. */
int tide_cli_common_option(tide_cli_common *c, const char *cmd, int argc, char **argv, int *i);

/** Help text for the common options, for each command's --help. */
extern const char *tide_cli_common_help;

/** Create the context; on failure print the error and return NULL. */
tide_ctx *tide_cli_make_ctx(const tide_cli_common *c, const char *cmd);

/** Print "tide CMD: error: <what>: <detail>" to stderr and return exit code 1. */
int tide_cli_fail(const char *cmd, int status);

/** Print "tide CMD: <msg>" and a hint to run --help, return exit code 2. */
int tide_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Refuse outputs that are the same file as an input or as each other (tide_outputs_check,
 *  outfile.h), before any work: print the error and return exit code 1, or return 0. */
int tide_cli_check_outputs(const char *cmd, const char *const *inputs, int nin,
                           const char *const *outputs, int nout);

/** A command's option that takes a value: a non-negative number into *num, or text into
 *  *str (exactly one of the two is non-NULL). */
typedef struct tide_cli_valopt {
    const char *name;
    double *num;
    const char **str;
} tide_cli_valopt;

/** If argv[*i] is one of the @p n options of @p opts, take its value (advancing *i) and return
 *  1; return 0 when it is none of them; return -1 after a usage message when the value is
 *  missing or is not a finite number >= 0. */
int tide_cli_value_option(const char *cmd, const tide_cli_valopt *opts, int n, int argc,
                          char **argv, int *i);

/** A whole string as a finite number: 0, or -1 (and *out untouched). */
int tide_cli_parse_number(const char *s, double *out);

/** Parse the value @p v of option @p opt of @p cmd as a number in [@p lo, @p hi] into @p out:
 *  0, or the usage error (printed, exit code 2) naming the option, the range and the value. */
int tide_cli_parse_range(const char *cmd, const char *opt, const char *v, double lo, double hi,
                         double *out);

/** Write @p s as a JSON string literal (quotes and escapes) to @p f. */
void tide_cli_json_string(FILE *f, const char *s);

/** Subcommands: each is int tide_cmd_NAME(int argc, char **argv) with argv[0] = "NAME". */
int tide_cmd_info(int argc, char **argv);
int tide_cmd_stats(int argc, char **argv);
int tide_cmd_sim(int argc, char **argv);
int tide_cmd_bench(int argc, char **argv);

/** For `tide diff` and `tide bench --diff` (two host threads side by side), re-execute the
 *  program once with a shorter OpenMP spin (GOMP_SPINCOUNT, omp_spin.c) unless the user set
 *  GOMP_SPINCOUNT or OMP_WAIT_POLICY. Returns when nothing is re-executed. */
void tide_cli_omp_spin(int argc, char **argv);
int tide_cmd_config(int argc, char **argv);
int tide_cmd_reduce(int argc, char **argv);
int tide_cmd_diff(int argc, char **argv);
int tide_cmd_reproject(int argc, char **argv);
int tide_cmd_fit_dipoles(int argc, char **argv);
int tide_cmd_solve(int argc, char **argv);
int tide_cmd_index(int argc, char **argv);
int tide_cmd_query(int argc, char **argv);
int tide_cmd_batch(int argc, char **argv);
int tide_cmd_worker(int argc, char **argv);
int tide_cmd_submit(int argc, char **argv);
int tide_cmd_watch(int argc, char **argv);
int tide_cmd_xray(int argc, char **argv);
int tide_cmd_rb(int argc, char **argv);
/** `tide review` (cmd_review.c): reviewers, queues, the review page, export. */
int tide_cmd_review(int argc, char **argv);
/** `tide rb score` (cmd_rb_score.c), argv from the word "score". */
int tide_cmd_rb_score(int argc, char **argv);

/** `tide bench --xmatch` (bench_xmatch.c) and `tide bench --store` (bench_store.c): argv as
 *  tide_cmd_bench received it. */
int tide_bench_xmatch(int argc, char **argv);
int tide_bench_store(int argc, char **argv);
/** `tide bench --calib` (bench_calib.c): the complete reduce of issue 4. */
int tide_bench_calib(int argc, char **argv);
/** `tide bench --diff` (bench_diff.c): the difference pipeline of issue 5. */
int tide_bench_diff(int argc, char **argv);
/** `tide bench --worker` (bench_worker.c): the worker's sustained rate (issue 17). */
int tide_bench_worker(int argc, char **argv);
/** `tide bench --decode FILE` (bench_decode.c): tile decoding beside cfitsio (issue 19). */
int tide_bench_decode(int argc, char **argv);
/** `tide bench --stack FILE...`: N frames read one by one beside one tide_fits_read_stack
 *  call, to the host and the device (bench_stack.c). */
int tide_bench_stack(int argc, char **argv);
/** `tide bench --mosaic` (bench_mosaic.c): a 62-CCD exposure reduced in one job (issue 19). */
int tide_bench_mosaic(int argc, char **argv);
/** `tide bench --file FRAME` (bench_file.c): FRAME reduced file to catalog on a warm job. */
int tide_bench_file(int argc, char **argv);
/** `tide bench --encode FILE`: tide's RICE_1 tile encoder beside cfitsio's (bench_encode.c). */
int tide_bench_encode(int argc, char **argv);
/** `tide bench --rb` (bench_rb.c): real/bogus scoring of 10,000 candidates (issue 18). */
int tide_bench_rb(int argc, char **argv);

#endif
