/* bench_reduce.h — `tide bench --reduce`: the whole reduction (reduce.h) timed per stage
 * and end to end on simulated frames, beside its floors and the targets of issue 3. Shared
 * by cmd_bench.c (options, bandwidth) and bench_reduce*.c (the measurement and its output).
 * Not public. */
#ifndef TIDE_BENCH_REDUCE_H
#define TIDE_BENCH_REDUCE_H
#include <stdint.h>
#include <stdio.h>

#include "tide/tide.h"

/** Most stage timers kept per run (reduce.* stages and their sub-stages). */
#define TIDE_BR_MAX_STAGES 48

/** What `tide bench --reduce` was asked for. */
typedef struct tide_br_opts {
    const int64_t (*sizes)[2]; /**< frame sizes, width x height */
    int nsizes;
    int repeats, warmup;   /**< timed runs (median reported) and untimed runs first */
    int64_t stars_sparse;  /**< stars on every sparse frame, whatever its size; 0 = no
                                sparse frames [300] */
    int64_t stars_dense;   /**< stars on a 151.2 MP dense frame, scaled with the area
                                (at least 2000) on smaller frames; 0 = no dense [130000] */
    uint64_t seed;         /**< simulator seed [1] */
    const char *json_path; /**< JSON file, "-" = standard output, NULL = none */
    int json_stdout;       /**< 1: the JSON goes to standard output instead of the text */
} tide_br_opts;

/** One stage timer's median over the repeats, and its floor. */
typedef struct tide_br_stage {
    char name[48];
    double ms;             /**< median of the per-run totals */
    int calls;             /**< calls per run */
    double bytes;          /**< bytes the stage must move (read + write); < 0: no model */
    double bytes_floor_ms; /**< bytes over the measured copy bandwidth; < 0: no model */
    double fft_floor_ms;   /**< the FFTs it must do, measured; < 0: none */
} tide_br_stage;

/** The padded FFT shape of one matched-filter pass and its measured transforms. */
typedef struct tide_br_fft {
    int64_t ksize, px, py;           /**< kernel side and padded transform shape */
    int nk;                          /**< kernels: inverse transforms per pass */
    double r2c_ms, c2r_ms, floor_ms; /**< floor = r2c + nk * c2r */
    double setup_ms;                 /**< tide_correlator_create for this shape and nk kernels: what
                                          a pass pays when the context's cached correlator is another */
} tide_br_fft;

/** One frame size at one density. */
typedef struct tide_br_run {
    int64_t w, h;
    int dense;      /**< 0 sparse, 1 dense */
    int64_t nstars; /**< stars simulated inside the frame */
    int64_t ngalaxies;
    double sim_ms; /**< simulator wall time (not part of the reduction) */
    int64_t n_sources, n_first;
    int psf_fallback;
    double fwhm;
    double e2e_ms, e2e_min_ms, e2e_max_ms; /**< median, min, max of the timed runs */
    double e2e_floor_ms;                   /**< sum of the stage floors */
    double stage_sum_ms;                   /**< sum of the reduce.* medians */
    size_t peak_bytes;  /**< peak device-pool bytes during a run (max over runs; 0 CPU) */
    size_t input_bytes; /**< the uploaded input frame, resident during the runs (CUDA) */
    int nstages;
    tide_br_stage stages[TIDE_BR_MAX_STAGES];
    tide_br_fft fft[2]; /**< detection pass 1 (Gaussian) and 2 (PSF basis) */
} tide_br_run;

/** Targets of issue 3 ("Speed and memory") for one run; < 0 when none applies. */
void tide_br_targets(const tide_br_run *r, double *e2e_ms, double *peak_gib);

/** Run the reduction benchmark on @p ctx with the copy bandwidth @p bpms (bytes read + written
 *  per millisecond, measured by the caller in the same process) and print the results: text
 *  on standard output, JSON to o->json_path. Returns a status (the CLI turns it into an exit
 *  code). */
int tide_bench_reduce(tide_ctx *ctx, const tide_br_opts *o, double bpms);

/** Text report of @p n runs. */
void tide_br_print_text(FILE *f, const tide_ctx *ctx, const tide_br_opts *o, double bpms,
                        const tide_br_run *r, int n);

/** JSON report of @p n runs. */
void tide_br_print_json(FILE *f, const tide_ctx *ctx, const tide_br_opts *o, double bpms,
                        const tide_br_run *r, int n);

#endif
