/* diff_prep.c — one input frame of the difference pipeline on its own grid: WCS, instrument
 * values, then the shared preparation (prepare.h: cosmetics, background, variance,
 * saturation, first detection, FWHM) (diff.h stages 1-3), and the overlap check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"
#include "diff_side.h"
#include "prepare.h"
#include "tide/background.h"
#include "tide/config.h"
#include "tide/cosmetics.h"
#include "tide/detect.h"
#include "tide/instrument.h"
#include "tide/memory.h"
#include "tide/psf.h"
#include "tide/status.h"
#include "tide/subtract.h"
#include "tide/timer.h"
#include "core/ctx_internal.h"

void tide_diffp_frame_free(tide_ctx *ctx, tide_diffp_frame *f) {
    if (!f)
        return;
    tide_wcs_free(f->wcs);
    tide_image_free(ctx, &f->work);
    free(f->star_x);
    free(f->star_y);
    free(f->star_f);
    memset(f, 0, sizeof *f);
}

/* The frame's gain, read noise and saturation through the instrument layer (instrument.h),
 * as tide reduce resolves them: the configuration's keyword map, camera defaults and
 * overrides (NULL: the built-in configuration); the run's parameters, when set, first. An
 * unknown gain stays unknown (0: no Poisson term). */
static int frame_instrument(const tide_diffp_input *in, const char *name, double *gain,
                            double *rdnoise, double *sat) {
    tide_config *own = NULL;
    const tide_config *cfg = in->cfg;
    int st = 0;
    if (!cfg) {
        const tide_config_load_options lo = {"", NULL, NULL, 0}; /* built-ins only */
        st = tide_config_load(&own, &lo);
        cfg = own;
    }
    tide_instrument inst;
    if (!st)
        st = tide_instrument_resolve(cfg, in->hdr, name, &inst);
    tide_config_free(own);
    if (st)
        return st;
    *gain = in->gain > 0 ? in->gain
                         : (inst.source[TIDE_INST_GAIN] && isfinite(inst.gain) ? inst.gain : 0);
    *rdnoise = inst.source[TIDE_INST_RDNOISE] && isfinite(inst.rdnoise) ? inst.rdnoise : 0;
    *sat = isfinite(in->sat)
               ? in->sat
               : (inst.source[TIDE_INST_SATURATE] && isfinite(inst.saturate) ? inst.saturate : NAN);
    return 0;
}

/* The unflagged bright sources of the first pass, candidates for the PSF model of the fits. */
static int keep_stars(const tide_table *t, tide_diffp_frame *f) {
    const double *X = tide_table_f64(t, "XWIN"), *Y = tide_table_f64(t, "YWIN"),
                 *F = tide_table_f64(t, "FLUX_ISO"), *S = tide_table_f64(t, "SNR");
    const int32_t *G = tide_table_i32(t, "FLAGS");
    if (!X || !Y || !F || !S || !G || t->nrows < 1)
        return 0;
    f->star_x = malloc(sizeof(double) * (size_t)t->nrows);
    f->star_y = malloc(sizeof(double) * (size_t)t->nrows);
    f->star_f = malloc(sizeof(double) * (size_t)t->nrows);
    if (!f->star_x || !f->star_y || !f->star_f)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", f->name);
    for (int64_t i = 0; i < t->nrows; i++)
        if (G[i] == 0 && S[i] >= 20) {
            f->star_x[f->nstar] = X[i];
            f->star_y[f->nstar] = Y[i];
            f->star_f[f->nstar++] = F[i];
        }
    return 0;
}

/* Stage 3: the FWHM from the first pass (blends dropped, not split: fewer, cleaner stars),
 * and the PSF candidates. */
static int measure_fwhm(tide_ctx *ctx, const tide_image *rms, double fwhm_guess,
                        tide_diffp_frame *f) {
    tide_detect_params dp;
    tide_detect_params_default(&dp);
    dp.fwhm_guess = fwhm_guess > 0 ? fwhm_guess : 3.0;
    dp.deblend_nthresh = 1;
    tide_table t;
    tide_table_init(&t);
    int st = tide_prep_first_pass(ctx, &f->work, rms, &dp, "diffp.fwhm", &t);
    if (!st) {
        const tide_prep_fwhm_rule rule = TIDE_PREP_FWHM_DIFF;
        const double fw = tide_prep_fwhm(&t, &rule, &f->nfwhm);
        st = keep_stars(&t, f);
        f->fwhm = fw > 0 ? fw : dp.fwhm_guess;
        tide_log(&ctx->log, TIDE_LOG_INFO, "diff", "%s: FWHM %.3f px from %lld stars", f->name,
                 f->fwhm, (long long)f->nfwhm);
    } else {
        tide_error_prefix(st, "%s: measuring the FWHM: ", f->name);
    }
    tide_table_free(&t);
    return st;
}

int tide_diffp_prepare_input(tide_ctx *ctx, const tide_diffp_input *in, double fwhm_guess,
                             const tide_bkg_params *bkgp, const tide_cosmetics_params *cosp,
                             tide_diffp_frame *f) {
    const tide_image *im = in->im;
    const tide_header *hdr = in->hdr;
    memset(f, 0, sizeof *f);
    f->wcs = in->wcs;
    f->name = in->name && *in->name ? in->name : "frame";
    if (!im || !im->pix || im->width < 1 || im->height < 1 || im->location != TIDE_HOST)
        return tide_error(TIDE_E_INVAL, "%s: diff needs a host image with pixels", f->name);
    if (!hdr)
        return tide_error(TIDE_E_NOTFOUND,
                          "%s: no header, hence no WCS; tide diff needs the "
                          "celestial WCS of both frames",
                          f->name);
    const double t_wcs = tide_now();
    int st = f->wcs ? 0 : tide_wcs_from_header(hdr, f->name, &f->wcs);
    if (st == TIDE_E_NOTFOUND)
        return tide_error(st,
                          "%s: no celestial WCS in the header; tide diff needs the WCS of "
                          "both frames to put them on one grid",
                          f->name);
    if (st)
        return st;
    tide_wcs_summary sum;
    st = tide_wcs_summarize(f->wcs, im->width, im->height, &sum);
    tide_timer_add(ctx, "diffp.wcs", 1e3 * (tide_now() - t_wcs));
    if (st)
        return tide_error_prefix(st, "%s: ", f->name);
    f->scale = sum.scale_arcsec;
    double rdnoise = 0;
    st = frame_instrument(in, f->name, &f->gain, &rdnoise, &f->saturate);
    if (st)
        return st;

    /* Stage 2: cosmic rays, hot pixels, bleed trails flagged, so the kernel fit and the
     * candidates ignore them (a cosmic ray is a change no survey wants to follow); the
     * background subtracted, the variance made from the maps, saturation flagged. */
    tide_cosmetics_params cp;
    if (cosp) {
        cp = *cosp;
        cp.gain = f->gain;
        cp.rdnoise = rdnoise;
        cp.saturation = f->saturate;
    }
    const tide_prep_params pp = {
        .name = f->name,
        .cos = cosp ? &cp : NULL,
        .cos_guard = 1,
        .bkg = bkgp,
        .variance = 1,
        .gain = f->gain,
        .saturate = f->saturate,
        .timers = {"diffp.upload", NULL, NULL},
    };
    tide_prepared pf;
    st = tide_prep_frame(ctx, im, &pp, &pf);
    if (st)
        return st;
    f->work = pf.work;
    memset(&pf.work, 0, sizeof pf.work);
    f->ncosmic = pf.cos_dropped ? 0 : pf.cr.n_cosmic;
    f->sky = pf.bkgs.global_back;
    f->sky_rms = pf.bkgs.global_rms;
    f->fwhm = in->fwhm_given;
    if (!(in->fwhm_given > 0))
        st = measure_fwhm(ctx, &pf.rms, fwhm_guess, f);
    tide_prep_frame_free(ctx, &pf);
    if (!st && in->sky) {
        tide_timer tm;
        tide_timer_start(ctx, &tm, "diffp.sky");
        st = tide_subtract_sky_noise(ctx, &f->work, in->sky->mask_bits, &f->sub_sky, &f->sub_var);
        tide_timer_stop(ctx, &tm, NULL);
        if (st)
            tide_error_prefix(st, "%s: ", f->name);
        f->sub_sky_known = !st;
        f->sub_sky_bits = in->sky->mask_bits;
    }
    return st;
}

int tide_diffp_prepare_frame(tide_ctx *ctx, const tide_image *im, const tide_header *hdr,
                             tide_wcs *wcs, const char *name, double gain, double sat,
                             double fwhm_given, double fwhm_guess, const tide_bkg_params *bkgp,
                             const tide_cosmetics_params *cosp, const tide_subtract_params *sky,
                             tide_diffp_frame *f) {
    const tide_diffp_input in = {im, hdr, wcs, name, gain, sat, fwhm_given, sky, NULL};
    return tide_diffp_prepare_input(ctx, &in, fwhm_guess, bkgp, cosp, f);
}

/* One frame's preparation on the context given (the pipeline's or its helper), timed as
 * "diff.prepare" and finished on the GPU before it returns. */
typedef struct prep_job {
    const tide_diffp_input *in;
    double fwhm_guess;
    const tide_bkg_params *bkg;
    const tide_cosmetics_params *cos;
    tide_diffp_frame *f;
} prep_job;

static int prep_one(tide_ctx *ctx, void *arg) {
    const prep_job *j = arg;
    tide_timer tm;
    const int ts = tide_timer_start(ctx, &tm, "diff.prepare");
    /* called whatever the timer says: it takes the WCS over */
    int st = tide_diffp_prepare_input(ctx, j->in, j->fwhm_guess, j->bkg, j->cos, j->f);
    if (!ts) {
        const int te = tide_timer_stop(ctx, &tm, NULL);
        if (!st)
            st = te;
    } else if (!st) {
        st = ts;
    }
    if (!st)
        st = tide_sync(ctx);
    return st;
}

int tide_diffp_prepare_single(tide_ctx *ctx, const tide_diffp_input *in, double fwhm_guess,
                              const tide_bkg_params *bkg, const tide_cosmetics_params *cos,
                              tide_diffp_frame *out) {
    prep_job j = {in, fwhm_guess, bkg, cos, out};
    return prep_one(ctx, &j);
}

int tide_diffp_prepare_pair(tide_ctx *ctx, const tide_diffp_input in[2], double fwhm_guess,
                            const tide_bkg_params *bkg, const tide_cosmetics_params *cos,
                            tide_diffp_frame *out[2], size_t *helper_peak) {
    prep_job jobs[2];
    for (int k = 0; k < 2; k++)
        jobs[k] = (prep_job){&in[k], fwhm_guess, bkg, cos, out[k]};
    tide_diffp_side side;
    tide_diffp_side_start(ctx, &side, prep_one, &jobs[1]);
    const int st0 = prep_one(ctx, &jobs[0]);
    char err0[512] = "";
    if (st0)
        snprintf(err0, sizeof err0, "%s", tide_error_detail());
    const int st1 = tide_diffp_side_join(&side, helper_peak);
    if (st0)
        return tide_error(st0, "%s", err0); /* the science frame's error first */
    if (st1)
        return st1;
    tide_image *w = &out[1]->work;
    if (side.helper && w->location == TIDE_DEVICE) {
        /* the helper's stream is synchronised (prep_one): its frame becomes ctx's */
        tide_device_adopt(ctx, side.helper, w->pix);
        tide_device_adopt(ctx, side.helper, w->mask);
        tide_device_adopt(ctx, side.helper, w->var);
    }
    return TIDE_OK;
}

/* How many of an n × n lattice of frame A's pixels land inside frame B's grid. */
static int64_t lattice_inside(const tide_wcs *a, int64_t w1, int64_t h1, const tide_wcs *b,
                              int64_t w2, int64_t h2) {
    enum { N = 17 };
    double x[N * N], y[N * N], ra[N * N], dec[N * N];
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++) {
            x[j * N + i] = -0.5 + (double)w1 * i / (N - 1);
            y[j * N + i] = -0.5 + (double)h1 * j / (N - 1);
        }
    if (tide_wcs_pix2sky(a, N * N, x, y, ra, dec) || tide_wcs_sky2pix(b, N * N, ra, dec, x, y)) {
        tide_error_clear();
        return 0;
    }
    int64_t in = 0;
    for (int k = 0; k < N * N; k++)
        in += x[k] >= -0.5 && x[k] <= (double)w2 - 0.5 && y[k] >= -0.5 && y[k] <= (double)h2 - 0.5;
    return in;
}

int tide_diffp_check_overlap(const tide_wcs *a, int64_t w1, int64_t h1, const char *na,
                             const tide_wcs *b, int64_t w2, int64_t h2, const char *nb) {
    if (lattice_inside(a, w1, h1, b, w2, h2) > 0 || lattice_inside(b, w2, h2, a, w1, h1) > 0)
        return 0;
    double x = 0.5 * (double)(w1 - 1), y = 0.5 * (double)(h1 - 1), r1, d1, r2, d2;
    tide_wcs_pix2sky(a, 1, &x, &y, &r1, &d1);
    x = 0.5 * (double)(w2 - 1);
    y = 0.5 * (double)(h2 - 1);
    tide_wcs_pix2sky(b, 1, &x, &y, &r2, &d2);
    return tide_error(TIDE_E_RANGE,
                      "%s (centre RA %.5f Dec %.5f) and %s (centre RA %.5f Dec %.5f) do not "
                      "overlap on the sky: nothing to subtract",
                      na, r1, d1, nb, r2, d2);
}

float *tide_diffp_psf_stamp(tide_ctx *ctx, const tide_diffp_frame *f, double fwhm, int *side) {
    *side = 0;
    if (f->nstar < 1 || !f->work.pix)
        return NULL;
    tide_psf_params pp;
    tide_psf_params_default(&pp);
    pp.fwhm_guess = fwhm > 0 ? fwhm : 3.0;
    /* The fits take the reference PSF (basis[0]) only: no eigen-PSFs, no Moffat summary
     * (together ~90% of the build on a 4096² frame). */
    pp.k = 0;
    pp.summary = 0;
    tide_psf_model m;
    memset(&m, 0, sizeof m);
    const int st =
        tide_psf_build(ctx, &f->work, NULL, f->nstar, f->star_x, f->star_y, f->star_f, &pp, &m);
    float *out = NULL;
    if (st) {
        tide_log(&ctx->log, TIDE_LOG_INFO, "diff", "%s: no PSF model (%s): Gaussian fits", f->name,
                 tide_error_detail());
        tide_error_clear();
        return NULL;
    }
    if (!m.gaussian_fallback && m.basis && m.stamp >= 3) {
        const size_t n = (size_t)m.stamp * (size_t)m.stamp;
        out = malloc(n * sizeof *out);
        double sum = 0;
        for (size_t i = 0; out && i < n; i++)
            sum += m.basis[i];
        for (size_t i = 0; out && i < n; i++)
            out[i] = (float)(m.basis[i] / sum);
        if (out && sum > 0)
            *side = m.stamp;
        else {
            free(out);
            out = NULL;
        }
        tide_log(&ctx->log, TIDE_LOG_INFO, "diff", "%s: PSF model for the fits from %d stars",
                 f->name, m.nstars);
    } else {
        tide_log(&ctx->log, TIDE_LOG_INFO, "diff",
                 "%s: too few PSF stars (%d): Gaussian fits of FWHM %.3f", f->name, m.nstars, fwhm);
    }
    tide_psf_free(&m);
    return out;
}
