/* bench_util.h — what the `tide bench` families share: medians of repeats, a monotonic clock
 * and the WxH size lists of their options. Not public. */
#ifndef TIDE_CLI_BENCH_UTIL_H
#define TIDE_CLI_BENCH_UTIL_H
#include <stdint.h>

/** qsort comparison of doubles, ascending. */
int tide_bench_cmp_double(const void *a, const void *b);

/** Median of @p n values (sorts @p v in place); the mean of the two middle ones when n is even. */
double tide_bench_median(double *v, int n);

/** Milliseconds on a monotonic clock. */
double tide_bench_now_ms(void);

/** Parse "W1xH1,W2xH2,..." into @p sizes (at most @p max pairs, each side >= @p min_side);
 *  *n receives the count. Returns 0, or -1 for a malformed list. */
int tide_bench_parse_sizes(const char *s, int64_t (*sizes)[2], int max, int64_t min_side, int *n);

#endif
