/* bench_reduce.c — `tide bench --reduce` (issue 3, "Speed and memory"; DESIGN §9): the whole
 * reduction of tide_pipeline_run on simulated frames, per stage and end to end, beside floors
 * measured in the same process.
 *
 * Per frame size and star density: simulate the frame in process (tide_sim_run, deterministic
 * for the seed, so `tide sim --seed S --width W --height H --nstars N` writes the same frame
 * for a peer tool), upload it once (CUDA), run the pipeline --warmup times untimed, then
 * --repeats times timed. Each run's stage totals come from the context timers (CUDA events on
 * the GPU), cleared before the run; a stage's figure is the median of its per-run totals, the
 * end-to-end figure the median of one timer around tide_pipeline_run. Peak device memory is
 * the pool's peak during a run (the resident input frame and the context's cached FFT plans
 * and correlator included: what a warm process really holds).
 *
 * Floors. A stage's bytes floor is the bytes it must move — its inputs read once and its
 * outputs written once (the model of each stage is in stage_bytes) — over the copy bandwidth
 * (bytes read + written per ms) measured by cmd_bench.c in the same process. The matched
 * filter also gets an FFT floor: one forward plus nk inverse real FFTs of the padded shape the
 * correlator uses, timed here through the same plan cache. A stage's floor is bytes + FFT; the
 * end-to-end floor is the sum over the reduce.* stages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tide/outfile.h"
#include "bench_reduce.h"
#include "bench_util.h"
#include "cli/cli.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define BR_MAX_RUNS 64
#define BR_MAX_REPEATS TIDE_BENCH_MAX_REPEATS
#define NPIX_151MP (14200.0 * 10650.0)

/* Bytes per pixel of one mask-carrying image pixel as the per-source stages read it: the
 * background-subtracted value, its variance and its mask. */
#define SRC_PIX_BYTES (4.0 + 4.0 + 2.0)

void tide_br_targets(const tide_br_run *r, double *e2e_ms, double *peak_gib) {
    *e2e_ms = -1.0;
    *peak_gib = -1.0;
    if (r->w == 14200 && r->h == 10650) {
        if (r->dense)
            *e2e_ms = 300.0;
        *peak_gib = 6.0;
    } else if (r->w == 2048 && r->h == 2048) {
        *e2e_ms = 15.0;
    }
}

/* ---- the matched filter's FFT floor ----------------------------------------------------- */

/* Wall time of making (and releasing) a correlator of f's shape with f->nk flat kernels. */
static int corr_setup(tide_ctx *ctx, int64_t w, int64_t h, tide_br_fft *f) {
    const int64_t kk = f->ksize * f->ksize;
    float *k = malloc(sizeof(float) * (size_t)(kk * f->nk));
    const float *kp[64];
    if (!k || f->nk > 64) {
        free(k);
        return tide_error(TIDE_E_NOMEM, "bench: correlator kernels");
    }
    for (int b = 0; b < f->nk; b++) {
        for (int64_t i = 0; i < kk; i++)
            k[b * kk + i] = (float)((1.0 + 0.01 * b) / (double)kk);
        kp[b] = k + b * kk;
    }
    tide_correlator *c = NULL;
    int st = tide_sync(ctx);
    const double t0 = tide_now();
    if (!st)
        st = tide_correlator_create(ctx, w, h, f->nk, kp, f->ksize, f->ksize, NULL, &c);
    if (!st)
        st = tide_sync(ctx);
    f->setup_ms = 1e3 * (tide_now() - t0);
    tide_correlator_free(ctx, c);
    free(k);
    return st;
}

/* One forward + nk inverse transforms of the padded shape of a ks x ks correlation (the shape
 * correlate.c chooses: tide_fft_good_size(W + ks - 1) per axis). */
static int fft_floor(tide_ctx *ctx, const tide_br_opts *o, int64_t w, int64_t h,
                     const tide_br_fft *same, tide_br_fft *f) {
    f->px = tide_fft_good_size(w + f->ksize - 1);
    f->py = tide_fft_good_size(h + f->ksize - 1);
    if (same && same->px == f->px && same->py == f->py) {
        f->r2c_ms = same->r2c_ms;
        f->c2r_ms = same->c2r_ms;
    } else {
        const int st =
            tide_bench_fft_pair(ctx, f->px, f->py, o->repeats, o->warmup, &f->r2c_ms, &f->c2r_ms);
        if (st)
            return st;
    }
    f->floor_ms = f->r2c_ms + f->nk * f->c2r_ms;
    return corr_setup(ctx, w, h, f);
}

/* ---- stage floors ----------------------------------------------------------------------- */

/* Value i of a float or double catalog column (NaN when the column is missing). */
static double colv(const tide_table *t, const char *name, int64_t i) {
    const float *f = tide_table_f32(t, name);
    if (f)
        return f[i];
    const double *d = tide_table_f64(t, name);
    return d ? d[i] : NAN;
}

static double table_bytes(const tide_table *t) {
    double b = 0.0;
    for (int c = 0; c < t->ncols; c++)
        b += (double)t->cols[c].repeat * (double)tide_col_type_size(t->cols[c].type);
    return b * (double)t->nrows;
}

/* Bytes stage @p name must move at least (read + write), from the run's result; < 0 when there
 * is no model (sub-stages other than the matched filter). npix-proportional models:
 *   upload      frame read 4 + written 4, mask plane cleared 2                  10 B/px
 *   cosmetics   frame read 4, mask read and written 2 + 2                        8 B/px
 *   background  frame + mask read 6; background, RMS and subtracted frame
 *               written 12                                                     18 B/px
 *   detect1/2   frame + mask + RMS read 10, S/N map written 4 and read 4       18 B/px
 *   filter      per pass: frame + mask + RMS read 10, S/N written 4            14 B/px
 *   noise       RMS read 4, variance written 4                                  8 B/px
 * per source (value + variance + mask = 10 B per pixel read):
 *   aperture    pi r_max^2;  kron  pi max(6A 6B, (k A)(k B));  psfphot  stamp^2;
 *   apcorr      pi r_ref^2 per calibration star;  optimal  pi RAD_OPT^2;
 *   psf         stamp^2 per candidate;  catalog  the table read and written once. */
static double stage_bytes(const char *name, const tide_pipeline_result *res,
                          const tide_pipeline_params *p, int64_t npix) {
    const double np = (double)npix;
    const tide_table *t = &res->catalog;
    const int64_t n = t->nrows;
    const double stamp = res->psf.stamp > 0 ? (double)res->psf.stamp : 0.0;
    if (!strcmp(name, "reduce.upload"))
        return 10.0 * np;
    if (!strcmp(name, "reduce.cosmetics"))
        return 8.0 * np;
    if (!strcmp(name, "reduce.background"))
        return 18.0 * np;
    if (!strcmp(name, "reduce.detect1") || !strcmp(name, "reduce.detect2"))
        return 18.0 * np;
    if (!strcmp(name, "detect.filter"))
        return 2.0 * 14.0 * np;
    if (!strcmp(name, "reduce.noise"))
        return 8.0 * np;
    if (!strcmp(name, "reduce.psf"))
        return (double)res->psf.ncandidates * stamp * stamp * SRC_PIX_BYTES;
    if (!strcmp(name, "reduce.psfphot"))
        return (double)n * stamp * stamp * SRC_PIX_BYTES;
    if (!strcmp(name, "reduce.catalog"))
        return 2.0 * table_bytes(t);
    if (!strcmp(name, "reduce.apcorr"))
        return res->has_apcorr ? res->apcorr.nstars_corr * M_PI * res->apcorr.r_ref *
                                     res->apcorr.r_ref * SRC_PIX_BYTES
                               : 0.0;
    if (!strcmp(name, "reduce.aperture")) {
        double rmax = 0.0;
        for (int k = 0; k < p->naper; k++)
            rmax = p->aper_radii[k] > rmax ? p->aper_radii[k] : rmax;
        return (double)n * M_PI * rmax * rmax * SRC_PIX_BYTES;
    }
    if (!strcmp(name, "reduce.kron") || !strcmp(name, "reduce.optimal")) {
        const int kron = !strcmp(name, "reduce.kron");
        double area = 0.0;
        for (int64_t i = 0; i < n; i++) {
            double a;
            if (kron) {
                const double A = colv(t, "A_IMAGE", i), B = colv(t, "B_IMAGE", i);
                const double k = colv(t, "KRON_RADIUS", i);
                a = M_PI * A * B * (k > 6.0 ? k * k : 36.0);
            } else {
                const double r = colv(t, "RAD_OPT", i);
                a = M_PI * r * r;
            }
            if (isfinite(a))
                area += a;
        }
        return area * SRC_PIX_BYTES;
    }
    return -1.0;
}

/* ---- one run ---------------------------------------------------------------------------- */

/* Per-stage samples of the repeats: names in first-seen order. */
typedef struct stage_acc {
    int n;
    tide_bench_stage st[TIDE_BR_MAX_STAGES];
} stage_acc;

/* The pipeline's parameters for a simulated frame: defaults (== config/default.json) and the
 * simulator's detector, as `tide reduce --bias SIMBIAS` gets them from the header. */
static void sim_pipeline_params(const tide_sim_params *sp, const tide_br_run *r,
                                tide_pipeline_params *p) {
    tide_pipeline_params_default(p);
    p->gain = sp->gain;
    p->rdnoise = sp->rdnoise;
    p->bias = sp->bias;
    p->saturate = sp->bias + sp->fullwell / sp->gain;
    snprintf(p->source, sizeof p->source, "sim %lldx%lld %s", (long long)r->w, (long long)r->h,
             r->dense ? "dense" : "sparse");
}

static int timed_runs(tide_ctx *ctx, const tide_br_opts *o, const tide_image *in,
                      const tide_header *hdr, const tide_pipeline_params *p, tide_br_run *r,
                      stage_acc *acc, tide_pipeline_result *last) {
    const int nrep = o->repeats < BR_MAX_REPEATS ? o->repeats : BR_MAX_REPEATS;
    double e2e[BR_MAX_REPEATS];
    int st = 0;
    for (int i = 0; i < o->warmup && !st; i++) {
        tide_pipeline_result res;
        st = tide_pipeline_run(ctx, in, hdr, p, &res);
        tide_pipeline_result_free(&res);
    }
    for (int k = 0; k < nrep && !st; k++) {
        tide_pipeline_result_free(last);
        tide_timer_clear(ctx);
        tide_timer tm;
        st = tide_timer_start(ctx, &tm, "bench.reduce");
        if (!st)
            st = tide_pipeline_run(ctx, in, hdr, p, last);
        if (!st)
            st = tide_timer_stop(ctx, &tm, &e2e[k]);
        if (st)
            break;
        tide_bench_collect_stages(ctx, acc->st, &acc->n, TIDE_BR_MAX_STAGES, k);
        if (last->device_peak > r->peak_bytes)
            r->peak_bytes = last->device_peak;
    }
    if (st)
        return st;
    tide_bench_range(e2e, nrep, &r->e2e_min_ms, &r->e2e_max_ms);
    r->e2e_ms = tide_bench_median(e2e, nrep);
    r->n_sources = last->n_sources;
    r->n_first = last->n_first;
    r->psf_fallback = last->psf_fallback;
    r->fwhm = last->psf.fwhm;
    return 0;
}

/* Stage medians and floors of a finished run. */
static int summarise(tide_ctx *ctx, const tide_br_opts *o, double bpms, const stage_acc *acc,
                     const tide_pipeline_result *res, const tide_pipeline_params *p,
                     tide_br_run *r) {
    const int nrep = o->repeats < BR_MAX_REPEATS ? o->repeats : BR_MAX_REPEATS;
    /* Pass 1: a Gaussian of the FWHM guess, half-width ceil(1.3 FWHM) (detect.c); pass 2: the
     * PSF model's basis stamps. */
    r->fft[0].ksize = 2 * (int64_t)ceil(1.3 * p->fwhm_guess) + 1;
    r->fft[0].nk = 1;
    r->fft[1].ksize = res->psf.stamp > 0 ? res->psf.stamp : r->fft[0].ksize;
    r->fft[1].nk = res->psf.nbasis > 0 ? res->psf.nbasis : 1;
    int st = fft_floor(ctx, o, r->w, r->h, NULL, &r->fft[0]);
    if (!st)
        st = fft_floor(ctx, o, r->w, r->h, &r->fft[0], &r->fft[1]);
    if (st)
        return st;
    /* Timers are listed as they finish, so a stage's sub-stages come just before it: list each
     * reduce.* stage followed by the sub-stages that finished since the previous one. */
    int order[TIDE_BR_MAX_STAGES], no = 0, pending[TIDE_BR_MAX_STAGES], np = 0;
    for (int k = 0; k < acc->n; k++) {
        if (strncmp(acc->st[k].name, "reduce.", 7)) {
            pending[np++] = k;
            continue;
        }
        order[no++] = k;
        for (int j = 0; j < np; j++)
            order[no++] = pending[j];
        np = 0;
    }
    for (int j = 0; j < np; j++)
        order[no++] = pending[j];
    r->nstages = acc->n;
    r->stage_sum_ms = 0.0;
    r->e2e_floor_ms = 0.0;
    for (int i = 0; i < acc->n; i++) {
        const int k = order[i];
        tide_br_stage *s = &r->stages[i];
        double v[BR_MAX_REPEATS];
        memcpy(v, acc->st[k].samples, sizeof(double) * (size_t)nrep);
        snprintf(s->name, sizeof s->name, "%s", acc->st[k].name);
        s->ms = tide_bench_median(v, nrep);
        s->calls = acc->st[k].calls;
        s->bytes = stage_bytes(s->name, res, p, r->w * r->h);
        s->bytes_floor_ms = s->bytes >= 0 ? s->bytes / bpms : -1.0;
        s->fft_floor_ms = -1.0;
        if (!strcmp(s->name, "reduce.detect1"))
            s->fft_floor_ms = r->fft[0].floor_ms;
        else if (!strcmp(s->name, "reduce.detect2"))
            s->fft_floor_ms = r->fft[1].floor_ms;
        else if (!strcmp(s->name, "detect.filter"))
            s->fft_floor_ms = r->fft[0].floor_ms + r->fft[1].floor_ms;
        if (!strncmp(s->name, "reduce.", 7)) {
            r->stage_sum_ms += s->ms;
            r->e2e_floor_ms += (s->bytes_floor_ms > 0 ? s->bytes_floor_ms : 0.0) +
                               (s->fft_floor_ms > 0 ? s->fft_floor_ms : 0.0);
        }
    }
    return 0;
}

static int run_one(tide_ctx *ctx, const tide_br_opts *o, double bpms, tide_br_run *r) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.seed = o->seed;
    sp.width = r->w;
    sp.height = r->h;
    sp.nstars = r->nstars;
    r->ngalaxies = sp.ngalaxies;
    tide_sim_frame fr;
    memset(&fr, 0, sizeof fr);
    const double t0 = tide_now();
    int st = tide_sim_run(ctx, &sp, &fr, NULL);
    r->sim_ms = 1e3 * (tide_now() - t0);
    if (st)
        return tide_error_prefix(st, "simulating the frame: ");
    tide_table_free(&fr.truth);

    tide_pipeline_params p;
    sim_pipeline_params(&sp, r, &p);
    tide_image dev;
    memset(&dev, 0, sizeof dev);
    const tide_image *in = &fr.image;
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        /* Upload once; the host copy is not needed any more. */
        st = tide_image_clone(ctx, &dev, &fr.image, TIDE_DEVICE);
        if (!st) {
            r->input_bytes =
                (size_t)(dev.stride * dev.height) * (sizeof(float) + (dev.mask ? 2 : 0));
            tide_image_free(ctx, &fr.image);
            in = &dev;
        }
    }
    stage_acc *acc = calloc(1, sizeof *acc);
    if (!st && !acc)
        st = tide_error(TIDE_E_NOMEM, "bench: stage table");
    tide_pipeline_result res;
    memset(&res, 0, sizeof res);
    if (!st)
        st = timed_runs(ctx, o, in, &fr.header, &p, r, acc, &res);
    if (!st)
        st = summarise(ctx, o, bpms, acc, &res, &p, r);
    tide_pipeline_result_free(&res);
    free(acc);
    tide_image_free(ctx, &dev);
    tide_sim_frame_free(ctx, &fr);
    /* Each frame is its own workload: drop its plans, correlator and buffers. */
    tide_fft_cache_clear(ctx);
    return st;
}

/* ---- the command ------------------------------------------------------------------------ */

static int64_t dense_stars(const tide_br_opts *o, int64_t w, int64_t h) {
    const double n = (double)o->stars_dense * (double)(w * h) / NPIX_151MP;
    const int64_t k = (int64_t)llround(n);
    return k < 2000 ? 2000 : k;
}

static int write_json(tide_ctx *ctx, const tide_br_opts *o, double bpms, const tide_br_run *r,
                      int n) {
    if (o->json_stdout)
        tide_br_print_json(stdout, ctx, o, bpms, r, n);
    if (!o->json_path || !strcmp(o->json_path, "-"))
        return 0;
    tide_outfile of;
    FILE *f = NULL;
    int st = tide_outfile_open(&of, o->json_path, &f);
    if (st)
        return st;
    tide_br_print_json(f, ctx, o, bpms, r, n);
    return tide_outfile_close(&of, f);
}

int tide_bench_reduce(tide_ctx *ctx, const tide_br_opts *o, double bpms) {
    tide_br_run *runs = calloc(BR_MAX_RUNS, sizeof *runs);
    if (!runs)
        return tide_error(TIDE_E_NOMEM, "bench: runs");
    int n = 0, st = 0;
    for (int i = 0; i < o->nsizes && !st; i++) {
        for (int dense = 0; dense < 2 && !st && n < BR_MAX_RUNS; dense++) {
            const int64_t stars = dense ? o->stars_dense : o->stars_sparse;
            if (stars <= 0)
                continue;
            tide_br_run *r = &runs[n];
            r->w = o->sizes[i][0];
            r->h = o->sizes[i][1];
            r->dense = dense;
            r->nstars = dense ? dense_stars(o, r->w, r->h) : stars;
            tide_log(&ctx->log, TIDE_LOG_INFO, "bench", "reduce %lld x %lld, %s, %lld stars",
                     (long long)r->w, (long long)r->h, dense ? "dense" : "sparse",
                     (long long)r->nstars);
            st = run_one(ctx, o, bpms, r);
            if (st)
                tide_error_prefix(st, "reduce %lld x %lld %s: ", (long long)r->w, (long long)r->h,
                                  dense ? "dense" : "sparse");
            else
                n++;
        }
    }
    if (!st && !o->json_stdout)
        tide_br_print_text(stdout, ctx, o, bpms, runs, n);
    if (!st)
        st = write_json(ctx, o, bpms, runs, n);
    free(runs);
    return st;
}
