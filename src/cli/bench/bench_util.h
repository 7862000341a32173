/* bench_util.h — what the `tide bench` families share: medians of repeats, a monotonic clock
 * and the WxH size lists of their options. Not public. */
#ifndef TIDE_CLI_BENCH_UTIL_H
#define TIDE_CLI_BENCH_UTIL_H
#include <stdint.h>

#include "cli/cli.h"
#include "tide/ctx.h"

/** qsort comparison of doubles, ascending. */
int tide_bench_cmp_double(const void *a, const void *b);

/** Median of @p n values (sorts @p v in place); the mean of the two middle ones when n is even. */
double tide_bench_median(double *v, int n);
/** The smallest and largest of v[0..n), n > 0. */
void tide_bench_range(const double *v, int n, double *lo, double *hi);

/** One benchmarked call. */
typedef int (*tide_bench_fn)(tide_ctx *ctx, void *arg);

/** Median milliseconds of @p repeats timed calls of @p fn (at most 64) after @p warmup untimed
 *  ones, each between timer marks of stage @p stage (CUDA events on the context's stream,
 *  waited for; a monotonic clock on the CPU). */
int tide_bench_time(tide_ctx *ctx, int repeats, int warmup, const char *stage, tide_bench_fn fn,
                    void *arg, double *ms);

/** Most repeats a benchmark keeps per-run samples of. */
#define TIDE_BENCH_MAX_REPEATS 64

/** One context timer over a benchmark's repeats. */
typedef struct tide_bench_stage {
    char name[48];
    int calls;                              /**< per run (the last repeat's count) */
    double samples[TIDE_BENCH_MAX_REPEATS]; /**< milliseconds per repeat */
} tide_bench_stage;

/** Add the context's stage timers of repeat @p rep (all but the benchmark's own "bench."
 *  stages) to @p st, *n of at most @p max stages, names in first-seen order. */
void tide_bench_collect_stages(const tide_ctx *ctx, tide_bench_stage *st, int *n, int max, int rep);

/** Median milliseconds of an R2C and of a C2R FFT of a @p px × @p py frame (the planned
 *  transforms of tide_fft, in place on a zeroed buffer), each @p repeats times after
 *  @p warmup: the FFT floors of the benchmarks. */
int tide_bench_fft_pair(tide_ctx *ctx, int64_t px, int64_t py, int repeats, int warmup,
                        double *r2c_ms, double *c2r_ms);

/** What argv[*i] was to tide_bench_common_arg. */
enum {
    TIDE_BENCH_ARG_OWN = 0,
    TIDE_BENCH_ARG_TAKEN = 1,
    TIDE_BENCH_ARG_EXIT_OK = 2,
    TIDE_BENCH_ARG_EXIT_USAGE = 3
};

/** The options every `tide bench` family reads alike, at argv[*i]: its own mode flag
 *  (@p mode, e.g. "--calib": skipped), --help / -h (prints @p help and the common options'
 *  help: EXIT_OK), --json FILE (FILE, or "-" for standard output, into *json; a bare --json
 *  is the common flag) and the common options (cli.h; a bad one: EXIT_USAGE, reported).
 *  TAKEN when consumed (*i may have advanced), OWN when the family must read it. */
int tide_bench_common_arg(const char *cmd, const char *mode, const char *help, tide_cli_common *c,
                          int argc, char **argv, int *i, const char **json);

/** The command line of a family timing one FILE on the CPU (--decode, --encode): the common
 *  options (tide_bench_common_arg), --repeats N (1..TIDE_BENCH_MAX_REPEATS, else 5) into
 *  *repeats, --warmup N (0.., else 1) into *warmup, the FILE into *path (required), then a CPU
 *  context of those options into *ctx (*threads its threads). Returns -1 when the command
 *  should run, else its exit code: 0 after --help, 2 after a usage message, 1 without a
 *  context. */
int tide_bench_file_args(const char *cmd, const char *mode, const char *help, tide_cli_common *c,
                         int argc, char **argv, const char **path, const char **json, int *repeats,
                         int *warmup, tide_ctx **ctx, int *threads);

/** A bench option NAME with an integer value in @p lo..@p hi at argv[*i], into *v (*i moves
 *  past the value): 1 when taken, -1 when out of range or malformed (reported), 0 when
 *  argv[*i] is not NAME or has no value after it. */
int tide_bench_int_opt(int argc, char **argv, int *i, const char *name, long long lo, long long hi,
                       long long *v);

/** The current UTC time as ISO 8601, "2026-11-30T01:02:03Z", for the benches' JSON. */
void tide_bench_utc_now(char out[32]);

/** Milliseconds on a monotonic clock. */
double tide_bench_now_ms(void);

/** Parse "W1xH1,W2xH2,..." into @p sizes (at most @p max pairs, each side >= @p min_side);
 *  *n receives the count. Returns 0, or -1 for a malformed list. */
int tide_bench_parse_sizes(const char *s, int64_t (*sizes)[2], int max, int64_t min_side, int *n);

#endif
