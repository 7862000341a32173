/* diff_prep.c — one input frame of the difference pipeline on its own grid: WCS, background,
 * variance, saturation and FWHM (diff.h stages 1-3), and the overlap check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/select_f64.h"
#include "diff_internal.h"
#include "difference/noise/noise_ops.h"
#include "diff_side.h"
#include "tide/background.h"
#include "tide/cosmetics.h"
#include "tide/detect.h"
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

/* Median FWHM of the clean, isolated, bright sources, then again of those within 25% of it
 * (galaxies and blends sit above the stars' mode). 0 when fewer than 3 qualify. */
static double stars_fwhm(const tide_table *t, int64_t *nused) {
    const double *fw = tide_table_f64(t, "FWHM"), *snr = tide_table_f64(t, "SNR");
    const int32_t *fl = tide_table_i32(t, "FLAGS");
    *nused = 0;
    if (!fw || !snr || !fl || t->nrows < 3)
        return 0;
    double *v = malloc(sizeof(double) * (size_t)t->nrows);
    if (!v)
        return 0;
    int64_t m = 0;
    for (int64_t i = 0; i < t->nrows; i++)
        if (fl[i] == 0 && snr[i] >= 20 && isfinite(fw[i]) && fw[i] > 0.5 && fw[i] < 100)
            v[m++] = fw[i];
    double med = 0;
    if (m >= 3) {
        med = tide_median_f64(v, m);
        int64_t k = 0;
        for (int64_t i = 0; i < m; i++)
            if (fabs(v[i] - med) <= 0.25 * med)
                v[k++] = v[i];
        if (k >= 3) {
            med = tide_median_f64(v, k);
            m = k;
        }
        *nused = m;
    }
    free(v);
    return med;
}

static int header_dbl(const tide_header *h, const char *key, double *v) {
    double x;
    if (h && tide_header_get_dbl(h, key, &x) == 0 && isfinite(x)) {
        *v = x;
        return 1;
    }
    tide_error_clear();
    return 0;
}

int tide_diffp_prepare_frame(tide_ctx *ctx, const tide_image *im, const tide_header *hdr,
                             tide_wcs *wcs, const char *name, double gain, double sat,
                             double fwhm_given, double fwhm_guess, const tide_bkg_params *bkgp,
                             const tide_cosmetics_params *cosp, const tide_subtract_params *sky,
                             tide_diffp_frame *f) {
    memset(f, 0, sizeof *f);
    f->wcs = wcs;
    f->name = name && *name ? name : "frame";
    if (!im || !im->pix || im->width < 1 || im->height < 1 || im->location != TIDE_HOST)
        return tide_error(TIDE_E_INVAL, "%s: diff needs a host image with pixels", f->name);
    if (!hdr)
        return tide_error(TIDE_E_NOTFOUND, "%s: no header, hence no WCS; tide diff needs the "
                                           "celestial WCS of both frames", f->name);
    const double t_wcs = tide_now();
    int st = f->wcs ? 0 : tide_wcs_from_header(hdr, f->name, &f->wcs);
    if (st == TIDE_E_NOTFOUND)
        return tide_error(st, "%s: no celestial WCS in the header; tide diff needs the WCS of "
                              "both frames to put them on one grid", f->name);
    if (st)
        return st;
    tide_wcs_summary sum;
    st = tide_wcs_summarize(f->wcs, im->width, im->height, &sum);
    tide_timer_add(ctx, "diffp.wcs", 1e3 * (tide_now() - t_wcs));
    if (st)
        return tide_error_prefix(st, "%s: ", f->name);
    f->scale = sum.scale_arcsec;
    f->gain = gain;
    if (!(f->gain > 0) && !header_dbl(hdr, "GAIN", &f->gain))
        f->gain = 0;
    f->saturate = sat;
    if (!isfinite(f->saturate) && !header_dbl(hdr, "SATURATE", &f->saturate))
        f->saturate = NAN;

    const tide_location where = ctx->backend == TIDE_BACKEND_CUDA ? TIDE_DEVICE : TIDE_HOST;
    tide_timer tm;
    tide_timer_start(ctx, &tm, "diffp.upload");
    st = tide_image_alloc(ctx, &f->work, im->width, im->height, where,
                          TIDE_IMAGE_MASK | TIDE_IMAGE_VAR);
    if (!st) {
        tide_image src = *im; /* the input's own variance, if any, is replaced by the model */
        src.var = NULL;
        st = tide_image_copy(ctx, &f->work, &src);
    }
    tide_timer_stop(ctx, &tm, NULL);
    if (!st && cosp) {
        /* Cosmic rays, hot pixels, bleed trails: flagged, so the kernel fit and the
         * candidates ignore them (a cosmic ray is a change no survey wants to follow). */
        tide_cosmetics_params cp = *cosp;
        tide_cosmetics_report cr;
        st = tide_cosmetics_params_from_header(&cp, hdr);
        if (f->gain > 0)
            cp.gain = f->gain;
        cp.saturation = f->saturate;
        /* The mask before, to undo a pass whose noise model does not fit the frame. */
        const size_t mbytes = (size_t)(f->work.stride * f->work.height) * sizeof(uint16_t);
        const int dev = f->work.location == TIDE_DEVICE;
        void *saved = NULL;
        if (!st)
            st = dev ? tide_device_alloc(ctx, mbytes, &saved)
                     : ((saved = malloc(mbytes)) ? 0 : tide_error(TIDE_E_NOMEM, "out of memory"));
        if (!st)
            st = tide_memcpy(ctx, saved, dev, f->work.mask, dev, mbytes);
        if (!st)
            st = tide_cosmetics_apply(ctx, &f->work, &cp, &cr);
        /* L.A.Cosmic's noise model needs the sky still in the frame: on a sky-subtracted
         * frame (DECam community pipeline cutouts) it sees noise everywhere and flags a third
         * of the pixels. More than 1% of the frame flagged means the model does not fit:
         * the flags are dropped and the run says so. */
        const int64_t nflag = st ? 0 : cr.n_cosmic + cr.n_hot + cr.n_cold;
        if (!st && nflag > (im->width * im->height) / 100) {
            st = tide_memcpy(ctx, f->work.mask, dev, saved, dev, mbytes);
            tide_log(&ctx->log, TIDE_LOG_WARN, "diff",
                     "%s: cosmetics flagged %lld of %lld pixels (is the sky subtracted? the "
                     "noise model needs it): flags dropped",
                     f->name, (long long)nflag, (long long)(im->width * im->height));
        } else if (!st) {
            f->ncosmic = cr.n_cosmic;
        }
        if (dev)
            tide_device_free(ctx, saved);
        else
            free(saved);
        if (st)
            return tide_error_prefix(st, "%s: cosmetics: ", f->name);
    }
    if (st)
        return st;
    tide_image bkg = {0}, rms = {0};
    tide_bkg_summary bs;
    st = tide_background_estimate(ctx, &f->work, bkgp, &bkg, &rms, &bs);
    if (st == TIDE_E_EMPTY)
        return tide_error_prefix(st, "%s: no valid pixel: ", f->name);
    if (!st && (bkg.stride != im->width || rms.stride != im->width))
        st = tide_error(TIDE_E_INTERNAL, "%s: background maps with a row stride", f->name);
    if (!st) {
        f->sky = bs.global_back;
        f->sky_rms = bs.global_rms;
        /* Saturation is judged on the raw value, so the level is the header's ADU. */
        st = TIDE_DISPATCH(ctx, tide_diffp_prepare, im->width, im->height, f->work.stride,
                           f->work.pix, f->work.mask, f->work.var, bkg.pix, rms.pix,
                           (float)f->gain, isfinite(f->saturate) ? (float)f->saturate : NAN);
    }
    f->fwhm = fwhm_given;
    if (!st && !(fwhm_given > 0)) {
        tide_detect_params dp;
        tide_detect_params_default(&dp);
        dp.fwhm_guess = fwhm_guess > 0 ? fwhm_guess : 3.0;
        dp.deblend_nthresh = 1; /* blends are dropped, not split: fewer, cleaner stars */
        tide_table t;
        tide_table_init(&t);
        tide_timer_start(ctx, &tm, "diffp.fwhm");
        st = tide_detect(ctx, &f->work, &rms, NULL, &dp, &t);
        tide_timer_stop(ctx, &tm, NULL);
        if (!st) {
            const double fw = stars_fwhm(&t, &f->nfwhm);
            /* the unflagged bright sources, candidates for the PSF model of the fits */
            const double *X = tide_table_f64(&t, "XWIN"), *Y = tide_table_f64(&t, "YWIN"),
                         *F = tide_table_f64(&t, "FLUX_ISO"), *S = tide_table_f64(&t, "SNR");
            const int32_t *G = tide_table_i32(&t, "FLAGS");
            if (X && Y && F && S && G && t.nrows > 0) {
                f->star_x = malloc(sizeof(double) * (size_t)t.nrows);
                f->star_y = malloc(sizeof(double) * (size_t)t.nrows);
                f->star_f = malloc(sizeof(double) * (size_t)t.nrows);
                if (!f->star_x || !f->star_y || !f->star_f)
                    st = tide_error(TIDE_E_NOMEM, "%s: out of memory", f->name);
                for (int64_t i = 0; !st && i < t.nrows; i++)
                    if (G[i] == 0 && S[i] >= 20) {
                        f->star_x[f->nstar] = X[i];
                        f->star_y[f->nstar] = Y[i];
                        f->star_f[f->nstar++] = F[i];
                    }
            }
            f->fwhm = fw > 0 ? fw : dp.fwhm_guess;
            tide_log(&ctx->log, TIDE_LOG_INFO, "diff", "%s: FWHM %.3f px from %lld stars",
                     f->name, f->fwhm, (long long)f->nfwhm);
        } else {
            tide_error_prefix(st, "%s: measuring the FWHM: ", f->name);
        }
        tide_table_free(&t);
    }
    tide_image_free(ctx, &bkg);
    tide_image_free(ctx, &rms);
    if (!st && sky) {
        tide_timer_start(ctx, &tm, "diffp.sky");
        st = tide_subtract_sky_noise(ctx, &f->work, sky->mask_bits, &f->sub_sky, &f->sub_var);
        tide_timer_stop(ctx, &tm, NULL);
        if (st)
            tide_error_prefix(st, "%s: ", f->name);
        f->sub_sky_known = !st;
        f->sub_sky_bits = sky->mask_bits;
    }
    return st;
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
    int st = tide_diffp_prepare_frame(ctx, j->in->im, j->in->hdr, j->in->wcs, j->in->name,
                                      j->in->gain, j->in->sat, j->in->fwhm_given, j->fwhm_guess,
                                      j->bkg, j->cos, j->in->sky, j->f);
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
        in += x[k] >= -0.5 && x[k] <= (double)w2 - 0.5 && y[k] >= -0.5 &&
              y[k] <= (double)h2 - 0.5;
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
    const int st = tide_psf_build(ctx, &f->work, NULL, f->nstar, f->star_x, f->star_y,
                                  f->star_f, &pp, &m);
    float *out = NULL;
    if (st) {
        tide_log(&ctx->log, TIDE_LOG_INFO, "diff", "%s: no PSF model (%s): Gaussian fits",
                 f->name, tide_error_detail());
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
                 "%s: too few PSF stars (%d): Gaussian fits of FWHM %.3f", f->name, m.nstars,
                 fwhm);
    }
    tide_psf_free(&m);
    return out;
}
