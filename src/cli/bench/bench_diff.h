/* bench_diff.h — what `tide bench --diff` (bench_diff.c) takes from cmd_bench.c. Not public. */
#ifndef TIDE_CLI_BENCH_DIFF_H
#define TIDE_CLI_BENCH_DIFF_H
#include <stddef.h>

#include "tide/tide.h"

/** Copy bandwidth of the context's memory (device on CUDA, host on the CPU) in bytes per
 *  millisecond, bytes read plus bytes written, over a @p bytes buffer: the median of
 *  @p repeats copies after @p warmup (cmd_bench.c, the figure `tide bench` reports). */
int tide_bench_copy_bandwidth(tide_ctx *ctx, int repeats, int warmup, size_t bytes, double *bpms);

#endif
