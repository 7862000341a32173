/* bench_diff_int.h — the options and results of `tide bench --diff`, shared by its runner
 * (bench_diff.c) and its printers (bench_diff_out.c). Not public. */
#ifndef TIDE_CLI_BENCH_DIFF_INT_H
#define TIDE_CLI_BENCH_DIFF_INT_H
#include <stdint.h>
#include <stdio.h>

#include "bench_util.h"
#include "tide/tide.h"

#define BD_MAX_REPEATS TIDE_BENCH_MAX_REPEATS
#define BD_MAX_STAGES 64
#define BD_NDIP 3 /* Gaussian dipole + point source, Gaussian dipole only, PSF dipole + PS */

typedef struct bd_opts {
    int64_t w, h;
    int repeats, warmup;
    int64_t transients; /* < 0: scaled with the area */
    int64_t stamps;
    int disk; /* 1: FITS read + write around each run */
    char workdir[1024];
    const char *json_path;
    int json_stdout;
} bd_opts;

/* The subtraction alone at one spatial degree. */
typedef struct bd_sub {
    int degree, kernel_w, npoly, nstamps;
    double ms;
    double r2c_ms, c2r_ms; /* bare transforms of the padded shape */
    double fft_floor_ms;   /* one forward + npoly inverse transforms */
    double bytes_floor_ms;
} bd_sub;

/* One batch of dipole fits. */
typedef struct bd_dip {
    int64_t n;
    int device; /* 1: device-resident arrays */
    double ms, per_s;
} bd_dip;

typedef struct bd_result {
    int64_t nstars, ntransient, nvariable;
    double sim_ms;
    double bpms;     /* copy bandwidth, bytes read + written per ms */
    double d2h_gbps; /* pinned device-to-host copy, GB/s (CUDA; 0 on the CPU) */
    /* a. the whole run */
    double read_ms, run_ms, write_ms, run_min_ms, run_max_ms;
    int64_t ncand, nfitted;
    double fwhm_sci, fwhm_tmpl;
    int kernel_w, spatial_degree;
    size_t peak_bytes;
    int nstages;
    tide_bench_stage stages[BD_MAX_STAGES]; /* context timers over the runs */
    double stage_ms[BD_MAX_STAGES];         /* their medians */
    /* a2. per exposure against a prepared template */
    double tmpl_prep_ms, run_tmpl_ms, run_tmpl_min_ms, run_tmpl_max_ms;
    /* b. reprojection */
    double reproj_call_ms, reproj_plan_ms, reproj_exec_ms, reproj_floor_ms;
    int reproj_exact;
    /* c. subtraction, degree 0 and 2 */
    bd_sub sub[2];
    /* d. dipole fits */
    bd_dip dip[BD_NDIP];
} bd_result;

/** Text report on @p f. */
void tide_bd_print_text(FILE *f, const tide_ctx *ctx, const bd_opts *o, const bd_result *r);
/** JSON report on @p f. */
void tide_bd_print_json(FILE *f, const tide_ctx *ctx, const bd_opts *o, const bd_result *r);

/** tide_bench_time (bench_util.h) with the options' repeats and warm-up. */
int tide_bd_time_median(tide_ctx *ctx, const bd_opts *o, tide_bench_fn fn, void *arg, double *ms);
/** Part d: dipole fit throughput (bench_diff_dipole.c), into r->dip. */
int tide_bd_dipoles(tide_ctx *ctx, const bd_opts *o, bd_result *r);

#endif
