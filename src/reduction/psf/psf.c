/* psf.c — tide_psf_build: the PSF stage's algorithm, once for both backends (DESIGN §3).
 * Candidate screening and the model fit run on the host over small arrays; the per-star pixel
 * work (centroid, measurement, recentred stamps) runs batched on the context's backend, with
 * the candidate arrays moved in one copy each way. See psf.h for the method. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psf_internal.h"
#include "psf_kernels.h"
#include "tide/log.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "core/ctx_internal.h"

void tide_psf_params_default(tide_psf_params *p) {
    memset(p, 0, sizeof *p);
    p->fwhm_guess = 3.0;
    p->stamp = 0;
    p->isolation = 0.0;
    p->iso_flux_ratio = 20.0;
    p->snr_min = 30.0;
    p->snr_max = 0.0;
    p->flux_min = 0.0;
    p->flux_max = 0.0;
    p->saturation = 0.0;
    p->mask_bits = (uint16_t)(0xFFFFu & ~(unsigned)TIDE_MASK_INTERP);
    p->max_stars = 500;
    p->min_stars = 10;
    p->k = 5;
    p->degree = 2;
    p->central_fraction = 0.5;
    p->clip_sigma = 3.0;
    p->clip_iters = 10;
    p->outlier_sigma = 5.0;
    p->size_tolerance = 0.25;
    p->summary = 1;
}

static int make_plan(const tide_psf_params *in, psf_plan *pl) {
    if (in)
        pl->p = *in;
    else
        tide_psf_params_default(&pl->p);
    tide_psf_params *p = &pl->p;
    if (!(p->fwhm_guess > 0.3 && p->fwhm_guess < 50.0))
        return tide_error(TIDE_E_INVAL, "psf: fwhm_guess = %g pixels is outside (0.3, 50)",
                          p->fwhm_guess);
    if (p->stamp == 0) {
        int s = (int)ceil(6.0 * p->fwhm_guess);
        s |= 1;
        pl->side = s < 15 ? 15 : (s > TIDE_PSF_MAX_STAMP ? TIDE_PSF_MAX_STAMP : s);
    } else if (p->stamp < 5 || p->stamp > TIDE_PSF_MAX_STAMP || p->stamp % 2 == 0) {
        return tide_error(TIDE_E_INVAL, "psf: stamp = %d must be odd and in [5, %d]", p->stamp,
                          TIDE_PSF_MAX_STAMP);
    } else {
        pl->side = p->stamp;
    }
    pl->half = pl->side / 2;
    pl->isolation = p->isolation > 0 ? p->isolation : pl->half + 2.0;
    if (p->k < 0 || p->k > TIDE_PSF_MAX_K)
        return tide_error(TIDE_E_INVAL, "psf: k = %d outside [0, %d]", p->k, TIDE_PSF_MAX_K);
    if (p->degree < 0 || p->degree > TIDE_PSF_MAX_DEGREE)
        return tide_error(TIDE_E_INVAL, "psf: degree = %d outside [0, %d]", p->degree,
                          TIDE_PSF_MAX_DEGREE);
    if (p->max_stars < 1 || p->min_stars < 1)
        return tide_error(TIDE_E_INVAL, "psf: max_stars = %d and min_stars = %d must be >= 1",
                          p->max_stars, p->min_stars);
    if (!(p->central_fraction > 0.0 && p->central_fraction <= 1.0) || !(p->clip_sigma > 0) ||
        p->clip_iters < 1 || !(p->outlier_sigma > 0) || !(p->iso_flux_ratio >= 1.0) ||
        !(p->size_tolerance > 0))
        return tide_error(TIDE_E_INVAL, "psf: central_fraction in (0, 1], clip_sigma > 0, "
                                        "clip_iters >= 1, outlier_sigma > 0, iso_flux_ratio >= 1, "
                                        "size_tolerance > 0");
    return 0;
}

static void kernel_params(const psf_plan *pl, psf_kparams *kp) {
    const double sig = pl->p.fwhm_guess / 2.3548200450309493;
    memset(kp, 0, sizeof *kp);
    kp->half = pl->half;
    kp->cwin = (int)ceil(3.0 * sig) + 2;
    if (kp->cwin > pl->half)
        kp->cwin = pl->half;
    kp->inv2s2 = 1.0 / (2.0 * sig * sig);
    kp->max_shift = fmax(1.0, pl->p.fwhm_guess);
    kp->ap_r2 = (1.5 * pl->p.fwhm_guess) * (1.5 * pl->p.fwhm_guess);
    kp->saturation = pl->p.saturation;
    kp->snr_floor = 0.5 * pl->p.snr_min; /* the quick S/N is cruder: a wide margin */
    kp->mask_bits = pl->p.mask_bits;
}

/* Buffers where the context computes: host memory on a CPU context, device memory on CUDA. */
static int on_device(const tide_ctx *ctx) {
    return ctx->backend == TIDE_BACKEND_CUDA;
}

static int buf_alloc(tide_ctx *ctx, size_t bytes, void **p) {
    *p = NULL;
    if (bytes == 0)
        bytes = 8;
    if (on_device(ctx))
        return tide_device_alloc(ctx, bytes, p);
    *p = malloc(bytes);
    return *p ? 0 : tide_error(TIDE_E_NOMEM, "psf: %zu bytes", bytes);
}

static void buf_free(tide_ctx *ctx, void *p) {
    if (!p)
        return;
    if (on_device(ctx))
        tide_device_free(ctx, p);
    else
        free(p);
}

/* The images as the backend needs them: a CUDA context uploads host images once. */
typedef struct psf_images {
    tide_image sub, rms;
    const tide_image *psub, *prms;
} psf_images;

static int images_prepare(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                          psf_images *im) {
    memset(im, 0, sizeof *im);
    im->psub = sub;
    im->prms = rms;
    const tide_location want = on_device(ctx) ? TIDE_DEVICE : TIDE_HOST;
    if (!on_device(ctx)) {
        if (sub->location != TIDE_HOST || (rms && rms->location != TIDE_HOST))
            return tide_error(TIDE_E_INVAL, "tide_psf_build: a CPU context needs host images");
        return 0;
    }
    int st = 0;
    if (sub->location != want) {
        if ((st = tide_image_clone(ctx, &im->sub, sub, want)))
            return st;
        im->psub = &im->sub;
    }
    if (rms && rms->location != want) {
        if ((st = tide_image_clone(ctx, &im->rms, rms, want)))
            return st;
        im->prms = &im->rms;
    }
    return 0;
}

static void images_release(tide_ctx *ctx, psf_images *im) {
    if (im->sub.pix)
        tide_image_free(ctx, &im->sub);
    if (im->rms.pix)
        tide_image_free(ctx, &im->rms);
}

/* Measure the screened candidates (kernel 1) and extract the chosen stars' stamps
 * (kernel 2); fills s (host). */
static int measure_and_extract(tide_ctx *ctx, const psf_plan *pl, const psf_images *im, int64_t nc,
                               const double *cx, const double *cy, psf_stars *s,
                               tide_psf_model *m) {
    psf_kparams kp;
    kernel_params(pl, &kp);
    const int side = pl->side, npix = side * side;
    const int dev = on_device(ctx);
    void *dx = NULL, *dy = NULL, *dmeas = NULL, *dflags = NULL, *dst = NULL, *dsum = NULL;
    double *meas = malloc(sizeof(double) * (size_t)(nc * PSF_NMEAS + 1));
    int32_t *flags = malloc(sizeof(int32_t) * (size_t)(nc + 1));
    int *pick = malloc(sizeof(int) * (size_t)(nc + 1));
    double *sums = NULL, *hx = NULL, *hy = NULL;
    int st = (!meas || !flags || !pick) ? tide_error(TIDE_E_NOMEM, "psf: measurements") : 0;
    if (!st)
        st = buf_alloc(ctx, sizeof(double) * (size_t)nc, &dx);
    if (!st)
        st = buf_alloc(ctx, sizeof(double) * (size_t)nc, &dy);
    if (!st)
        st = buf_alloc(ctx, sizeof(double) * (size_t)nc * PSF_NMEAS, &dmeas);
    if (!st)
        st = buf_alloc(ctx, sizeof(int32_t) * (size_t)nc, &dflags);
    if (!st)
        st = tide_memcpy(ctx, dx, dev, cx, 0, sizeof(double) * (size_t)nc);
    if (!st)
        st = tide_memcpy(ctx, dy, dev, cy, 0, sizeof(double) * (size_t)nc);
    if (!st)
        st = TIDE_DISPATCH(ctx, psf_measure, im->psub, im->prms, &kp, nc, (const double *)dx,
                           (const double *)dy, (double *)dmeas, (int32_t *)dflags);
    if (!st)
        st = tide_memcpy(ctx, meas, 0, dmeas, dev, sizeof(double) * (size_t)nc * PSF_NMEAS);
    if (!st)
        st = tide_memcpy(ctx, flags, 0, dflags, dev, sizeof(int32_t) * (size_t)nc);
    int ns = 0;
    if (!st)
        ns = psf_choose_stars(pl, nc, meas, flags, pick, m);
    if (ns < 0)
        st = ns;
    if (!st) {
        hx = malloc(sizeof(double) * (size_t)(ns + 1) * 2);
        sums = malloc(sizeof(double) * (size_t)(ns + 1));
        s->stamps = malloc(sizeof(float) * (size_t)(ns + 1) * npix);
        if (!hx || !sums || !s->stamps)
            st = tide_error(TIDE_E_NOMEM, "psf: %d stamps", ns);
    }
    if (!st) {
        hy = hx + ns + 1;
        for (int k = 0; k < ns; k++) {
            hx[k] = meas[(size_t)pick[k] * PSF_NMEAS + PSF_M_XC];
            hy[k] = meas[(size_t)pick[k] * PSF_NMEAS + PSF_M_YC];
        }
        /* reuse the candidate position buffers for the chosen stars (ns <= nc) */
        st = tide_memcpy(ctx, dx, dev, hx, 0, sizeof(double) * (size_t)ns);
        if (!st)
            st = tide_memcpy(ctx, dy, dev, hy, 0, sizeof(double) * (size_t)ns);
        if (!st)
            st = buf_alloc(ctx, sizeof(float) * (size_t)ns * npix, &dst);
        if (!st)
            st = buf_alloc(ctx, sizeof(double) * (size_t)ns, &dsum);
        if (!st && ns > 0)
            st = TIDE_DISPATCH(ctx, psf_extract, im->psub, &kp, ns, (const double *)dx,
                               (const double *)dy, (float *)dst, (double *)dsum);
        if (!st)
            st = tide_memcpy(ctx, s->stamps, 0, dst, dev, sizeof(float) * (size_t)ns * npix);
        if (!st)
            st = tide_memcpy(ctx, sums, 0, dsum, dev, sizeof(double) * (size_t)ns);
    }
    if (!st) {
        s->side = side;
        s->x = malloc(sizeof(double) * (size_t)(ns + 1) * 6);
        if (!s->x)
            st = tide_error(TIDE_E_NOMEM, "psf: star arrays");
    }
    if (!st) {
        s->y = s->x + ns + 1;
        s->u = s->y + ns + 1;
        s->v = s->u + ns + 1;
        s->snr = s->v + ns + 1;
        s->noise = s->snr + ns + 1;
        int k2 = 0;
        for (int k = 0; k < ns; k++) {
            const double *mk = meas + (size_t)pick[k] * PSF_NMEAS;
            if (!(sums[k] > 0.0)) {
                m->nreject[4]++; /* TIDE_PSF_REJ_SNR: nothing left after resampling */
                continue;
            }
            if (k2 != k)
                memmove(s->stamps + (size_t)k2 * npix, s->stamps + (size_t)k * npix,
                        sizeof(float) * (size_t)npix);
            s->x[k2] = hx[k];
            s->y[k2] = hy[k];
            s->u[k2] = m->width > 1
                           ? (2.0 * hx[k] - (double)(m->width - 1)) / (double)(m->width - 1)
                           : 0.0;
            s->v[k2] = m->height > 1
                           ? (2.0 * hy[k] - (double)(m->height - 1)) / (double)(m->height - 1)
                           : 0.0;
            s->snr[k2] = mk[PSF_M_SNR];
            s->noise[k2] = mk[PSF_M_NOISE] / sums[k];
            k2++;
        }
        s->n = k2;
    }
    buf_free(ctx, dx), buf_free(ctx, dy), buf_free(ctx, dmeas), buf_free(ctx, dflags);
    buf_free(ctx, dst), buf_free(ctx, dsum);
    free(meas), free(flags), free(pick), free(sums), free(hx);
    return st;
}

static void stars_free(psf_stars *s) {
    free(s->stamps);
    free(s->x); /* y, u, v, snr, noise share x's block */
    memset(s, 0, sizeof *s);
}

/* Moffat fits at the centre and the corners. The corners hold beta at the centre's value, so
 * the centre goes first; the four corners are independent, start from the centre's shape
 * and are fitted side by side (one parallel region: no synchronisation inside a fit, which
 * an oversubscribed host punishes). */
static void summarise(const psf_plan *pl, tide_psf_model *m) {
    const int npix = m->stamp * m->stamp;
    float *st = malloc(sizeof(float) * (size_t)npix * 5);
    if (!st)
        return;
    const double cu[5] = {0.0, -1.0, 1.0, -1.0, 1.0}, cv[5] = {0.0, -1.0, -1.0, 1.0, 1.0};
    psf_moffat f0;
    psf_eval_uv(m, cu[0], cv[0], st);
    psf_moffat_fit(st, m->stamp, pl->p.fwhm_guess, 0.0, NULL, pl->threads, &f0);
    m->fwhm = f0.ok ? f0.fwhm : 0.0;
    m->beta = f0.ok ? f0.beta : 0.0;
    m->ellipticity = f0.ok ? f0.ellip : 0.0;
    m->theta = f0.ok ? f0.theta_deg : 0.0;
    const double beta = m->beta;
    psf_moffat fc[4];
    /* the four corners side by side, each round of their model evaluations shared out across
     * the whole team at once (each fit's result is that of a fit on its own) */
    const float *sc[4];
    const psf_moffat *start[4] = {&f0, &f0, &f0, &f0};
    for (int c = 1; c < 5; c++) {
        psf_eval_uv(m, cu[c], cv[c], st + (size_t)c * npix);
        sc[c - 1] = st + (size_t)c * npix;
    }
    psf_moffat_fit_many(4, sc, m->stamp, pl->p.fwhm_guess, beta, start, pl->threads, fc);
    for (int c = 0; c < 4; c++) {
        m->fwhm_corner[c] = fc[c].ok ? fc[c].fwhm : 0.0;
        m->ellip_corner[c] = fc[c].ok ? fc[c].ellip : 0.0;
    }
    free(st);
}

/* Too few stars, or a model that failed its checks (@p why, @p detail for the log): a
 * Gaussian of the FWHM measured on the stars there are (their plain mean stamp), or of
 * fwhm_guess when there are none or the fit fails. */
static int fallback(tide_ctx *ctx, const psf_plan *pl, const psf_stars *s, tide_psf_model *m,
                    const char *why, const char *detail) {
    double fwhm = pl->p.fwhm_guess;
    const char *src = "configured";
    const int npix = pl->side * pl->side;
    if (s->n > 0) {
        float *mean = calloc((size_t)npix, sizeof(float));
        if (!mean)
            return tide_error(TIDE_E_NOMEM, "psf: fallback");
        for (int p = 0; p < npix; p++) {
            double a = 0.0;
            for (int i = 0; i < s->n; i++)
                a += s->stamps[(size_t)i * npix + p];
            mean[p] = (float)(a / s->n);
        }
        psf_moffat f;
        psf_moffat_fit(mean, pl->side, pl->p.fwhm_guess, 0.0, NULL, pl->threads, &f);
        free(mean);
        if (f.ok && f.fwhm > 0.5 && f.fwhm < 0.5 * pl->side) {
            fwhm = f.fwhm;
            src = "measured";
        }
    }
    int st = psf_gaussian_model(m, pl->side, fwhm);
    if (st)
        return st;
    m->nstars = s->n;
    m->nref = s->n;
    free(m->star_x);
    free(m->star_y);
    m->star_x = malloc(sizeof(double) * (size_t)(s->n + 1));
    m->star_y = malloc(sizeof(double) * (size_t)(s->n + 1));
    if (!m->star_x || !m->star_y)
        return tide_error(TIDE_E_NOMEM, "psf: fallback stars");
    for (int i = 0; i < s->n; i++) {
        m->star_x[i] = s->x[i];
        m->star_y[i] = s->y[i];
    }
    snprintf(m->fallback_why, sizeof m->fallback_why, "%s", why);
    tide_log(&ctx->log, TIDE_LOG_WARN, "psf",
             "%s (PSFFBWHY = '%s'; %d PSF star(s), minimum %d, of %d candidates): Gaussian PSF "
             "of the %s FWHM %.2f px",
             detail, why, s->n, pl->p.min_stars, m->ncandidates, src, fwhm);
    return 0;
}

/* The checks a built model must pass (psf.h's header comment); returns the reason code of
 * the first that fails, with its detail in @p msg, or NULL. */
static const char *model_check(const psf_plan *pl, const tide_psf_model *m, char *msg, size_t cap) {
    if (pl->p.summary) {
        if (!(m->fwhm > 0.0) || !(m->beta > 1.0)) {
            snprintf(msg, cap, "no Moffat fits the model (FWHM %.3g px, beta %.3g)", m->fwhm,
                     m->beta);
            return "WINGS";
        }
        /* Moffat: alpha = FWHM / (2 sqrt(2^(1/beta) - 1)), 1 - F(<r) = (1 + r²/alpha²)^(1-beta) */
        const double alpha = m->fwhm / (2.0 * sqrt(pow(2.0, 1.0 / m->beta) - 1.0));
        const double r = 0.5 * m->stamp, q = r / alpha;
        const double out = pow(1.0 + q * q, 1.0 - m->beta);
        if (out > 0.05) {
            snprintf(msg, cap,
                     "the Moffat summary (FWHM %.3f px, beta %.2f) puts %.1f%% of the flux "
                     "outside the %d px stamp",
                     m->fwhm, m->beta, 100.0 * out, m->stamp);
            return "WINGS";
        }
    }
    if (pl->p.summary) {
        /* The corners' Moffat FWHMs come from the spatial polynomial extrapolated to the
         * frame's corners. Few stars over a field can make it run away (0.06 and 1318 px
         * on a real 400x400 frame with 22 stars), and the second detection filters each
         * corner with its FWHM: a factor of 2 from the centre is no optics' PSF change over
         * one detector, so it is taken as an ill-determined spatial model. */
        for (int c = 0; c < 4; c++) {
            const double f = m->fwhm_corner[c];
            if (!(f >= 0.5 * m->fwhm && f <= 2.0 * m->fwhm)) {
                snprintf(msg, cap,
                         "corner %d's FWHM %.3g px is not within a factor 2 of the centre's "
                         "%.3f px",
                         c, f, m->fwhm);
                return "CORNERS";
            }
        }
    }
    if (m->resid_rms > 0.1) {
        snprintf(msg, cap, "the model misses its stars by %.1f%% of the peak (median RMS)",
                 100.0 * m->resid_rms);
        return "RESID";
    }
    return NULL;
}

int tide_psf_build(tide_ctx *ctx, const tide_image *sub, const tide_image *rms, int64_t n,
                   const double *x, const double *y, const double *flux, const tide_psf_params *p,
                   tide_psf_model *out) {
    if (!ctx || !sub || !out || n < 0 || (n > 0 && (!x || !y)))
        return tide_error(TIDE_E_INVAL, "tide_psf_build: NULL argument or n < 0");
    memset(out, 0, sizeof *out);
    if (!sub->pix || sub->width < 1 || sub->height < 1)
        return tide_error(TIDE_E_INVAL, "tide_psf_build: empty image");
    if (rms && (rms->width != sub->width || rms->height != sub->height || !rms->pix))
        return tide_error(TIDE_E_INVAL, "tide_psf_build: rms is %lldx%lld, image %lldx%lld",
                          (long long)rms->width, (long long)rms->height, (long long)sub->width,
                          (long long)sub->height);
    if (n > INT32_MAX)
        return tide_error(TIDE_E_RANGE, "tide_psf_build: %lld candidates", (long long)n);
    psf_plan pl;
    memset(&pl, 0, sizeof pl);
    int st = make_plan(p, &pl);
    if (st)
        return st;
    pl.threads = ctx->threads;
    pl.ctx = ctx;
    out->width = sub->width;
    out->height = sub->height;
    out->ncandidates = (int)n;

    psf_stars s;
    memset(&s, 0, sizeof s);
    psf_images im;
    memset(&im, 0, sizeof im);
    const int64_t cap = 4 * (int64_t)pl.p.max_stars;
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n + 1));
    double *cx = malloc(sizeof(double) * (size_t)(2 * n + 2));
    if (!idx || !cx) {
        free(idx), free(cx);
        return tide_error(TIDE_E_NOMEM, "tide_psf_build: %lld candidates", (long long)n);
    }
    double *cy = cx + n + 1;
    tide_timer tm;
    tide_timer_start(ctx, &tm, "psf.select");
    int64_t nc = psf_select_candidates(&pl, sub->width, sub->height, n, x, y, flux, cap, idx, out);
    tide_timer_stop(ctx, &tm, NULL);
    if (nc < 0)
        st = (int)nc;
    for (int64_t k = 0; k < nc; k++) {
        cx[k] = x[idx[k]];
        cy[k] = y[idx[k]];
    }
    if (!st)
        st = images_prepare(ctx, sub, rms, &im);
    if (!st && nc > 0) {
        tide_timer_start(ctx, &tm, "psf.measure");
        st = measure_and_extract(ctx, &pl, &im, nc, cx, cy, &s, out);
        tide_timer_stop(ctx, &tm, NULL);
    }
    images_release(ctx, &im);
    free(idx), free(cx);
    if (!st) {
        if (s.n < pl.p.min_stars) {
            st = fallback(ctx, &pl, &s, out, "NSTARS", "too few PSF stars");
        } else {
            tide_timer_start(ctx, &tm, "psf.model");
            st = psf_model_fit(&pl, &s, sub->width, sub->height, out);
            tide_timer_stop(ctx, &tm, NULL);
            tide_timer_start(ctx, &tm, "psf.summary");
            if (!st && pl.p.summary)
                summarise(&pl, out);
            tide_timer_stop(ctx, &tm, NULL);
            char msg[160];
            const char *why = st ? NULL : model_check(&pl, out, msg, sizeof msg);
            if (why && !strcmp(why, "CORNERS") && out->degree > 0) {
                /* A spatially constant model of the same stars before the Gaussian. */
                tide_log(&ctx->log, TIDE_LOG_WARN, "psf",
                         "%s: the PSF model's spatial variation is ill-determined by %d "
                         "stars; refitting it constant over the frame (degree 0)",
                         msg, out->nstars);
                pl.p.degree = 0;
                tide_timer_start(ctx, &tm, "psf.model");
                st = psf_model_fit(&pl, &s, sub->width, sub->height, out);
                tide_timer_stop(ctx, &tm, NULL);
                if (!st)
                    summarise(&pl, out);
                why = st ? NULL : model_check(&pl, out, msg, sizeof msg);
            }
            if (why) {
                tide_log(&ctx->log, TIDE_LOG_INFO, "psf",
                         "%d PSF stars of %d candidates; FWHM %.3f px, beta %.2f, residual "
                         "%.4f of the peak: the model fails its checks",
                         out->nstars, out->ncandidates, out->fwhm, out->beta, out->resid_rms);
                st = fallback(ctx, &pl, &s, out, why, msg);
            } else if (!st)
                tide_log(&ctx->log, TIDE_LOG_INFO, "psf",
                         "%d PSF stars (%d in the reference) of %d candidates; %d eigen-PSFs, "
                         "degree %d; FWHM %.3f px (corners %.3f %.3f %.3f %.3f), beta %.2f, "
                         "ellipticity %.3f",
                         out->nstars, out->nref, out->ncandidates, out->nbasis - 1, out->degree,
                         out->fwhm, out->fwhm_corner[0], out->fwhm_corner[1], out->fwhm_corner[2],
                         out->fwhm_corner[3], out->beta, out->ellipticity);
        }
    }
    stars_free(&s);
    if (st)
        tide_psf_free(out);
    return st;
}
