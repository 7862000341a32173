/* subtract.c — PSF-matched subtraction (subtract.h): the algorithm, once, for both backends.
 *
 * Order: choose the frame to convolve -> kernel basis -> stamps (one per grid cell, on a
 * peak) and their weights -> the reference correlated with every basis kernel at the stamps
 * (directly, or by a batched FFT correlation of the frame and a gather) -> per-stamp normal
 * matrices (backend, double) -> global normal equations with the spatial polynomials at the
 * stamp centres (host, Alard 2000) -> Cholesky with a condition check -> stamp clipping and
 * refit (a constant-kernel screen first) -> the per-term kernels K_p and sum_p P_p (R * K_p) + B ->
 * difference, variance, mask -> optional decorrelation (subtract_decorr.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "subtract_internal.h"
#include "subtract_kernels.h"
#include "subtract_math.h"
#include "tide/ctx.h"
#include "tide/fft.h"
#include "tide/log.h"
#include "tide/memory.h"
#include "tide/stats.h"
#include "tide/status.h"
#include "tide/subtract.h"
#include "tide/timer.h"
#include "core/ctx_internal.h"

void tide_subtract_params_default(tide_subtract_params *p) {
    memset(p, 0, sizeof *p);
    p->ngauss = 3;
    p->degrees[0] = 6;
    p->degrees[1] = 4;
    p->degrees[2] = 2;
    p->degrees[3] = 2;
    p->spatial_degree = 2;
    p->bg_degree = 1;
    p->convolve = TIDE_SUB_AUTO;
    p->mask_bits = TIDE_MASK_NODATA | TIDE_MASK_SATURATED | TIDE_MASK_BAD | TIDE_MASK_HOT |
                   TIDE_MASK_COSMIC | TIDE_MASK_BLEED | TIDE_MASK_USER;
    p->clip_sigma = 3.0;
    p->stamp_snr = 10.0;
    p->clip_iter = 2;
    p->nstars = -1;
}

/* ---- backend memory -------------------------------------------------------------------- */
static int balloc(tide_ctx *ctx, size_t bytes, void **p) {
    *p = NULL;
    if (ctx->backend == TIDE_BACKEND_CUDA)
        return tide_device_alloc(ctx, bytes ? bytes : 1, p);
    *p = malloc(bytes ? bytes : 1);
    return *p ? TIDE_OK : tide_error(TIDE_E_NOMEM, "subtract: %zu bytes", bytes);
}
static void bfree(tide_ctx *ctx, void *p) {
    if (ctx->backend == TIDE_BACKEND_CUDA)
        tide_device_free(ctx, p);
    else
        free(p);
}
static int to_host(tide_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (ctx->backend == TIDE_BACKEND_CUDA)
        return tide_memcpy(ctx, dst, 0, src, 1, bytes);
    memcpy(dst, src, bytes);
    return TIDE_OK;
}
/* ---- setup ----------------------------------------------------------------------------- */
#define FWHM_TO_SIGMA 0.42466090014400953 /* 1 / (2 sqrt(2 ln 2)) */

/* Basis sigmas: HOTPANTS README advice, s_m = sqrt(s_target^2 - s_ref^2) and 0.5, 1, 2 x s_m,
 * kept >= 0.5 px and 1.6x apart so the Gaussians stay distinguishable on the pixel grid. */
static void choose_sigmas(const tide_subtract_params *p, double f_ref, double f_tgt, double *s) {
    int ng = p->ngauss;
    if (p->sigmas[0] > 0.0) {
        for (int g = 0; g < ng; g++)
            s[g] = p->sigmas[g];
        return;
    }
    if (!(f_ref > 0.0) || !(f_tgt > 0.0)) {
        const double hp[4] = {0.7, 1.5, 3.0, 6.0};
        for (int g = 0; g < ng; g++)
            s[g] = hp[g];
        return;
    }
    double sr = f_ref * FWHM_TO_SIGMA, st = f_tgt * FWHM_TO_SIGMA;
    double sm = st > sr ? sqrt(st * st - sr * sr) : 0.0;
    double f = ng == 1 ? 1.0 : 0.5;
    for (int g = 0; g < ng; g++, f *= 2.0) {
        double v = f * sm;
        double lo = g == 0 ? 0.5 : 1.6 * s[g - 1];
        s[g] = v > lo ? v : lo;
    }
}

int tide_subtract_sky_noise(tide_ctx *ctx, const tide_image *im, uint16_t bits, double *sky,
                            double *var) {
    if (!ctx || !im || !sky || !var)
        return tide_error(TIDE_E_INVAL, "subtract: sky noise: NULL argument");
    tide_sigclip_params cp = tide_sigclip_defaults();
    tide_sigclip_result cr;
    /* rows spread over the frame, ~256k pixels (at least 64 rows), are plenty for two
     * numbers and far cheaper on a large frame */
    tide_image sub = *im;
    int64_t step = im->width * im->height / 262144;
    if (step > im->height / 64)
        step = im->height / 64;
    if (step < 1)
        step = 1;
    sub.height = im->height / step;
    sub.stride = im->stride * step;
    sub.var = NULL;
    int st = tide_reduce_sigma_clip(ctx, &sub, bits, &cp, &cr);
    if (st)
        return tide_error_prefix(st, "subtract: sky noise: ");
    *sky = cr.median;
    float v = (float)(cr.std * cr.std);
    if (!(v > 0.0f))
        v = 1.0f;
    *var = v;
    return TIDE_OK;
}

/* The frame's sky and noise for the fit (the variance constant for a frame without a variance
 * plane, the stamp threshold, and the decorrelation's noise): the template's given ones when
 * the caller measured them, else measured here. */
static int sky_noise(tide_ctx *ctx, const tide_image *im, const tide_subtract_params *p,
                     int is_tmpl, double *sky, float *var) {
    if (is_tmpl && p->tmpl_sky_known) {
        *sky = p->tmpl_sky;
        *var = (float)p->tmpl_var;
        return TIDE_OK;
    }
    double v;
    int st = tide_subtract_sky_noise(ctx, im, p->mask_bits, sky, &v);
    *var = (float)v;
    return st;
}

/* Correlate @p in with @p nk host kernels into @p out (allocated on the backend). */
static int correlate_into(tide_ctx *ctx, const tide_image *in, int nk, const float *k, int kw,
                          uint16_t bits, tide_image *out) {
    const float *ptr[TIDE_SUB_MAXPOLY];
    for (int i = 0; i < nk; i++)
        ptr[i] = k + (size_t)i * (size_t)kw * (size_t)kw;
    tide_correlate_options opt = {TIDE_PAD_ZERO, 0, bits};
    tide_correlator *c = NULL;
    int st = tide_correlator_create(ctx, in->width, in->height, nk, ptr, kw, kw, &opt, &c);
    if (!st)
        st = tide_correlator_run(ctx, c, in, out);
    tide_correlator_free(ctx, c);
    return st;
}

static void free_images(tide_ctx *ctx, tide_image *im, int n) {
    for (int i = 0; i < n; i++)
        tide_image_free(ctx, &im[i]);
}

/* ---- the whole subtraction ------------------------------------------------------------- */
static int check_inputs(tide_ctx *ctx, const tide_image *sci, const tide_image *tmpl,
                        const tide_subtract_params *p) {
    if (p->tmpl_sky_known && !(isfinite(p->tmpl_sky) && p->tmpl_var > 0.0))
        return tide_error(TIDE_E_INVAL,
                          "subtract: the given template sky %g and variance %g "
                          "are not a finite level and a positive variance",
                          p->tmpl_sky, p->tmpl_var);
    if (!sci || !tmpl || !sci->pix || !tmpl->pix)
        return tide_error(TIDE_E_INVAL, "subtract: NULL science or template image");
    if (sci->width != tmpl->width || sci->height != tmpl->height)
        return tide_error(TIDE_E_INVAL,
                          "subtract: science is %lld x %lld, template %lld x "
                          "%lld; reproject them onto one grid first",
                          (long long)sci->width, (long long)sci->height, (long long)tmpl->width,
                          (long long)tmpl->height);
    if (sci->location != tmpl->location)
        return tide_error(TIDE_E_INVAL, "subtract: science and template live on different "
                                        "sides (host / device)");
    if (sci->location == TIDE_DEVICE && ctx->backend != TIDE_BACKEND_CUDA)
        return tide_error(TIDE_E_INVAL, "subtract: device images on a CPU context");
    if (p->ngauss < 1 || p->ngauss > 4)
        return tide_error(TIDE_E_INVAL, "subtract: ngauss %d (1..4)", p->ngauss);
    if (p->spatial_degree < 0 || p->spatial_degree > 4 || p->bg_degree < 0 || p->bg_degree > 4)
        return tide_error(TIDE_E_INVAL,
                          "subtract: spatial degree %d / background degree %d "
                          "(0..4)",
                          p->spatial_degree, p->bg_degree);
    if (p->nstamps_x < 0 || p->nstamps_x > 200 || p->nstamps_y < 0 || p->nstamps_y > 200 ||
        p->stamp_half < 0 || p->stamp_half > 200)
        return tide_error(TIDE_E_INVAL,
                          "subtract: stamp grid %d x %d (0..200), stamp half-width "
                          "%d (0..200)",
                          p->nstamps_x, p->nstamps_y, p->stamp_half);
    if (p->kernel_half < 0 || p->kernel_half > 64 || p->clip_iter < 0)
        return tide_error(TIDE_E_INVAL, "subtract: kernel half-width %d (0..64), clip_iter %d",
                          p->kernel_half, p->clip_iter);
    return TIDE_OK;
}

typedef struct sub_work {
    int64_t *centre;
    float *W, *D;
    double *Q;
    float *kdev;      /* the basis kernels on the device */
    tide_image *bimg; /* the basis-convolved frames (fft_basis) */
    int nbimg;
    tide_image conv[TIDE_SUB_MAXPOLY];
    tide_image dsci, dtmpl; /* device copies of host inputs on a CUDA context */
} sub_work;

static void work_free(tide_ctx *ctx, sub_work *w) {
    bfree(ctx, w->kdev);
    bfree(ctx, w->centre);
    bfree(ctx, w->W);
    bfree(ctx, w->D);
    bfree(ctx, w->Q);
    if (w->bimg)
        free_images(ctx, w->bimg, w->nbimg);
    free(w->bimg);
    free_images(ctx, w->conv, TIDE_SUB_MAXPOLY);
    tide_image_free(ctx, &w->dsci);
    tide_image_free(ctx, &w->dtmpl);
}

int tide_subtract_convolved(const tide_subtract_params *p, double fwhm_sci, double fwhm_tmpl) {
    if (p && p->convolve != TIDE_SUB_AUTO)
        return p->convolve;
    return fwhm_sci > 0.0 && fwhm_tmpl > 0.0 && fwhm_sci < fwhm_tmpl ? TIDE_SUB_CONVOLVE_SCIENCE
                                                                     : TIDE_SUB_CONVOLVE_TEMPLATE;
}

static int subtract_run(tide_ctx *ctx, const tide_image *sci, const tide_image *tmpl,
                        double fwhm_sci, double fwhm_tmpl, const tide_subtract_params *p,
                        tide_subtract_result *r, sub_work *w) {
    int st;
    tide_timer tm;
    memset(&tm, 0, sizeof tm);
    const int conv = tide_subtract_convolved(p, fwhm_sci, fwhm_tmpl);
    const tide_image *ref = conv == TIDE_SUB_CONVOLVE_SCIENCE ? sci : tmpl;
    const tide_image *tgt = conv == TIDE_SUB_CONVOLVE_SCIENCE ? tmpl : sci;
    double f_ref = conv == TIDE_SUB_CONVOLVE_SCIENCE ? fwhm_sci : fwhm_tmpl;
    double f_tgt = conv == TIDE_SUB_CONVOLVE_SCIENCE ? fwhm_tmpl : fwhm_sci;
    r->convolved = conv;
    double sig[4];
    choose_sigmas(p, f_ref, f_tgt, sig);
    int kh = p->kernel_half > 0 ? p->kernel_half : (int)ceil(4.0 * sig[p->ngauss - 1]);
    if (kh < 3)
        kh = 3;
    double fmax = f_ref > f_tgt ? f_ref : f_tgt;
    int hs = p->stamp_half > 0 ? p->stamp_half : kh + (fmax > 0.0 ? (int)ceil(fmax) : 3);
    int64_t W = sci->width, H = sci->height;
    if (W < 2 * (hs + kh) + 1 || H < 2 * (hs + kh) + 1)
        return tide_error(TIDE_E_RANGE,
                          "subtract: frame %lld x %lld is smaller than one stamp "
                          "with its kernel (%d px)",
                          (long long)W, (long long)H, 2 * (hs + kh) + 1);
    tide_sub_basis B;
    if ((st = tide_sub_basis_make(kh, p->ngauss, sig, p->degrees, &B)))
        return st;
    fit_layout L;
    L.nb = B.nb;
    L.sdeg = p->spatial_degree;
    L.bgdeg = p->bg_degree;
    L.npk = tide_sub_npoly(L.sdeg);
    L.nbg = tide_sub_npoly(L.bgdeg);
    L.nc = L.nb + 3;

    L.n = 1 + (L.nb - 1) * L.npk + L.nbg;
    L.sky_ref = 0.0;
    float var_ref = 0.0f, var_tgt = 0.0f;
    double sky_ref = 0.0, sky_tgt = 0.0;
    tide_timer_start(ctx, &tm, "subtract.noise");
    if ((st = sky_noise(ctx, ref, p, ref == tmpl, &sky_ref, &var_ref)) ||
        (st = sky_noise(ctx, tgt, p, tgt == tmpl, &sky_tgt, &var_tgt)))
        goto done;
    /* stamps only on sources: a pure-noise reference stamp biases the fit towards a zero
     * kernel (noise in the regressor; Alard-Lupton assumes a clean reference) */
    float vmin = (float)(sky_ref + p->stamp_snr * sqrt((double)var_ref));
    L.sky_ref = sky_ref;
    tide_timer_stop(ctx, &tm, NULL);
    tide_timer_start(ctx, &tm, "subtract.stamps");
    r->decor_sigma_ref = sqrt(var_ref);
    r->decor_sigma_target = sqrt(var_tgt);
    /* stamps */
    int span = 2 * hs + 1;
    /* cells about one stamp wide (at most 20 x 20), each with a stamp on its brightest
     * peak: every isolated star gets its own stamp, which a fit on a few stars needs (to
     * clip a mover's stamp it must have others to compare) */
    int ncx = p->nstamps_x > 0 ? p->nstamps_x : (int)(W / span);
    int ncy = p->nstamps_y > 0 ? p->nstamps_y : (int)(H / span);
    ncx = ncx < 1 ? 1 : ncx > 20 && p->nstamps_x <= 0 ? 20 : ncx;
    ncy = ncy < 1 ? 1 : ncy > 20 && p->nstamps_y <= 0 ? 20 : ncy;
    tide_sub_geom g = {W, H, ncx * ncy, hs, (int64_t)span * span, L.nc, kh, p->mask_bits};
    size_t nD = (size_t)g.ns * (size_t)g.nc * (size_t)g.npx;
    size_t nQ = (size_t)g.ns * (size_t)g.nc * (size_t)g.nc;
    if ((st = balloc(ctx, (size_t)g.ns * sizeof(int64_t), (void **)&w->centre)) ||
        (st = balloc(ctx, (size_t)g.ns * (size_t)g.npx * sizeof(float), (void **)&w->W)) ||
        (st = balloc(ctx, nD * sizeof(float), (void **)&w->D)) ||
        (st = balloc(ctx, nQ * sizeof(double), (void **)&w->Q)))
        goto done;
    if ((st = TIDE_DISPATCH(ctx, tide_sub_select, ref, tgt, &g, ncx, ncy, hs + kh, vmin,
                            w->centre)) ||
        (st = TIDE_DISPATCH(ctx, tide_sub_weights, ref, tgt, &g, var_ref, var_tgt, w->centre, w->W,
                            w->D)))
        goto done;
    /* The basis-convolved reference at the stamps: by default directly at the stamp pixels
     * (about nstamps * stamp^2 * kernel^2 * nb operations, a few % of the frame's worth of
     * full-frame FFTs); with fft_basis by one batched FFT correlation of the whole frame
     * (one forward transform shared by all kernels; the correlator stays cached in the
     * context), gathered at the stamps. */
    if (!p->fft_basis) {
        float *kd = B.k;
        size_t kb = (size_t)L.nb * B.kw * B.kw * sizeof(float);
        if (ctx->backend == TIDE_BACKEND_CUDA) {
            if ((st = balloc(ctx, kb, (void **)&w->kdev)) ||
                (st = tide_memcpy(ctx, w->kdev, 1, B.k, 0, kb)))
                goto done;
            kd = w->kdev;
        }
        st = TIDE_DISPATCH(ctx, tide_sub_basis_stamps, ref, &g, kd, L.nb, w->centre, w->D);
    } else {
        const float **kp = malloc((size_t)L.nb * sizeof *kp);
        w->bimg = calloc((size_t)L.nb, sizeof *w->bimg);
        w->nbimg = L.nb;
        if (!kp || !w->bimg) {
            free(kp);
            st = tide_error(TIDE_E_NOMEM, "subtract: basis images");
            goto done;
        }
        for (int k = 0; k < L.nb; k++)
            kp[k] = B.k + (size_t)k * B.kw * B.kw;
        tide_correlate_options opt = {TIDE_PAD_ZERO, 0, p->mask_bits};
        st = tide_correlate(ctx, ref, L.nb, kp, B.kw, B.kw, &opt, w->bimg);
        free(kp);
        for (int k = 0; k < L.nb && !st; k++)
            st = TIDE_DISPATCH(ctx, tide_sub_gather, &w->bimg[k], &g, k, w->centre, w->D);
        free_images(ctx, w->bimg, w->nbimg);
    }
    if (st || (st = TIDE_DISPATCH(ctx, tide_sub_normal, &g, w->D, w->W, w->Q)))
        goto done;
    tide_timer_stop(ctx, &tm, NULL);
    tide_timer_start(ctx, &tm, "subtract.fit");
    /* host: stamp bookkeeping and the fit */
    {
        int64_t *centre = malloc((size_t)g.ns * sizeof *centre);
        /* the per-stamp normal matrices on the host: the CPU's own, or the GPU's copied into
         * a reused, page-locked buffer (~8 MB) */
        const int dev = ctx->backend == TIDE_BACKEND_CUDA;
        double *Qh = dev ? tide_host_alloc(nQ * sizeof *Qh) : w->Q;
        int64_t *npix = calloc((size_t)g.ns, sizeof *npix);
        int *keep = calloc((size_t)g.ns, sizeof *keep);
        double *a = calloc((size_t)L.n, sizeof *a);
        if (!centre || !Qh || !npix || !keep || !a)
            st = tide_error(TIDE_E_NOMEM, "subtract: stamp tables");
        if (!st && !(st = to_host(ctx, centre, w->centre, (size_t)g.ns * sizeof *centre)) && dev)
            st = tide_memcpy(ctx, Qh, 0, w->Q, 1, nQ * sizeof *Qh);
        if (!st) {
            r->nstamps_total = 0;
            for (int s = 0; s < g.ns; s++) {
                /* the stamp's fit pixels, from Q instead of copying W back: Q[var][ones] =
                 * sum_i W_i (1/W_i) 1 over pixels with W_i > 0 (0 elsewhere), each term 1 to
                 * float rounding (2^-24), so the sum is the count to far better than 0.5 */
                double cnt = Qh[((size_t)s * g.nc + (size_t)L.nb + 1) * g.nc + (size_t)L.nb];
                npix[s] = isfinite(cnt) && cnt > 0.0 ? (int64_t)llround(cnt) : 0;
                keep[s] = centre[s] >= 0 && npix[s] >= g.npx / 4;
                r->nstamps_total += keep[s];
            }
            /* The screen: a bad stamp (a mover, a variable) drags a spatially varying fit
             * towards itself until every stamp fits badly and none stands out to be clipped
             * (the walkthrough with 5 stars and degree 1: chi2/px 374). A constant kernel and
             * background, fitted first with clipping, cannot follow one stamp, so it stands
             * out; the full fit then starts from the stamps the screen kept. */
            int nclean = r->nstamps_total;
            if (!st && (L.sdeg > 0 || L.bgdeg > 0) && nclean >= 3) {
                fit_layout L0 = L;
                L0.sdeg = L0.bgdeg = 0;
                L0.npk = L0.nbg = 1;
                L0.n = L0.nb + 1;
                st = tide_sub_fit_clip(ctx, &L0, &g, centre, Qh, w->Q, npix, p, keep, a, r);
                nclean = 0;
                for (int s = 0; s < g.ns; s++)
                    nclean += keep[s] != 0;
            }
            /* The kernel's spatial variation and the background are polynomials over the
             * stamps (the background is one constant per stamp: its monomials are taken at
             * the stamp centres), so each term needs stamps of its own: with no more than
             * 2 npoly stamps a polynomial fits every stamp exactly, a bad stamp (a mover, a
             * variable) can no longer be told from a good one, and the surface is
             * extrapolated from a handful of points over the frame (the walkthrough: 4
             * stamps, degree 1, 12-sigma residuals; a background tilted across the frame).
             * Each degree is lowered until there are at least npoly + 2 usable stamps (the
             * DECam pair OBS18, 5 stamps: degree 1 leaves 0.97 sigma, degree 0 1.6). */
            const int d0 = L.sdeg, b0 = L.bgdeg;
            while (L.sdeg > 0 && tide_sub_npoly(L.sdeg) + 2 > nclean)
                L.sdeg--;
            while (L.bgdeg > 0 && tide_sub_npoly(L.bgdeg) + 2 > nclean)
                L.bgdeg--;
            if (L.sdeg != d0 || L.bgdeg != b0) {
                L.npk = tide_sub_npoly(L.sdeg);
                L.nbg = tide_sub_npoly(L.bgdeg);
                L.n = 1 + (L.nb - 1) * L.npk + L.nbg;
                tide_log(&ctx->log, TIDE_LOG_INFO, "subtract",
                         "%d usable stamps: kernel spatial degree %d -> %d, background "
                         "degree %d -> %d",
                         nclean, d0, L.sdeg, b0, L.bgdeg);
            }
            if (!st)
                st = tide_sub_fit_clip(ctx, &L, &g, centre, Qh, w->Q, npix, p, keep, a, r);
        }
        if (!st)
            st = tide_sub_kernel_terms(&L, &B, a, r);
        free(centre);
        free(npix);
        free(keep);
        free(a);
        if (dev)
            tide_host_free(Qh);
        if (st)
            goto done;
    }
    tide_timer_stop(ctx, &tm, NULL);
    tide_timer_start(ctx, &tm, "subtract.convolve");
    r->width = W;
    r->height = H;
    r->kernel_half = kh;
    r->kernel_w = B.kw;
    r->spatial_degree = L.sdeg;
    r->npoly = L.npk;
    r->bg_degree = L.bgdeg;
    size_t kn = (size_t)B.kw * (size_t)B.kw;
    if (!(r->kernel_center = malloc(kn * sizeof(float)))) {
        st = tide_error(TIDE_E_NOMEM, "subtract: kernel");
        goto done;
    }
    tide_subtract_kernel_at(r, 0.5 * (double)(W - 1), 0.5 * (double)(H - 1), r->kernel_center);
    double ksum = 0.0, k2 = 0.0;
    for (size_t i = 0; i < kn; i++) {
        ksum += r->kernel_center[i];
        k2 += (double)r->kernel_center[i] * r->kernel_center[i];
    }
    r->kernel_sum = ksum;
    /* the matched model, its variance, the difference */
    tide_location loc = ctx->backend == TIDE_BACKEND_CUDA ? TIDE_DEVICE : TIDE_HOST;
    if ((st = correlate_into(ctx, ref, L.npk, r->kernel_terms, B.kw, p->mask_bits, w->conv)))
        goto done;
    tide_sub_model m;
    memset(&m, 0, sizeof m);
    for (int q = 0; q < L.npk; q++)
        m.conv[q] = w->conv[q].pix;
    m.npoly = L.npk;
    m.sdeg = L.sdeg;
    for (int q = 0; q < L.nbg; q++)
        m.bg[q] = r->bg_coef[q];
    m.bgdeg = L.bgdeg;
    m.var_tgt_const = var_tgt;
    m.var_ref = ref->var;
    m.var_ref_stride = ref->stride;
    m.var_ref_const = var_ref;
    m.k2 = (float)k2;
    m.sign = conv == TIDE_SUB_CONVOLVE_TEMPLATE ? 1.0f : -1.0f;
    /* after decorrelation the noise is white at var_t + k0^2 var_r instead of the smoothed
     * var_t + sum(K^2) var_r (Reiss & Lupton 2016 eq. 1); scale the variance plane so. */
    m.var_scale = 1.0f;
    if (p->decorrelate && var_tgt + k2 * var_ref > 0.0)
        m.var_scale = (float)((var_tgt + ksum * ksum * var_ref) / (var_tgt + k2 * var_ref));
    tide_timer_stop(ctx, &tm, NULL);
    tide_timer_start(ctx, &tm, "subtract.combine");
    if ((st = tide_image_alloc(ctx, &r->diff, W, H, loc, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR)) ||
        (st = tide_image_alloc(ctx, &r->matched, W, H, loc, 0)) ||
        (st = TIDE_DISPATCH(ctx, tide_sub_combine, &m, tgt, &r->diff, &r->matched)) ||
        (st = TIDE_DISPATCH(ctx, tide_sub_mask, ref, tgt, &g, &r->diff)))
        goto done;
    tide_timer_stop(ctx, &tm, NULL);
    if (p->decorrelate) {
        tide_timer_start(ctx, &tm, "subtract.decorrelate");
        st = tide_sub_decorrelate(ctx, r, var_ref, var_tgt, p->mask_bits);
        tide_timer_stop(ctx, &tm, NULL);
    }
    tide_log(&ctx->log, TIDE_LOG_INFO, "subtract",
             "%s convolved, kernel %dx%d, %d basis x %d terms + %d bg, %d/%d stamps, "
             "%lld px, chi2/px %.3f, kernel sum %.5f, cond %.3g%s",
             conv == TIDE_SUB_CONVOLVE_TEMPLATE ? "template" : "science", B.kw, B.kw, L.nb, L.npk,
             L.nbg, r->nstamps, r->nstamps_total, (long long)r->nfit,
             r->nfit ? r->chi2 / (double)r->nfit : 0.0, r->kernel_sum, r->cond,
             r->regularised ? " (regularised)" : "");
done:
    if (tm.ev0) /* a stage left running by an error: release its CUDA events */
        tide_timer_stop(ctx, &tm, NULL);
    tide_sub_basis_free(&B);
    return st;
}

int tide_subtract(tide_ctx *ctx, const tide_image *sci, const tide_image *tmpl, double fwhm_sci,
                  double fwhm_tmpl, const tide_subtract_params *pin, tide_subtract_result *r) {
    if (!ctx || !r)
        return tide_error(TIDE_E_INVAL, "subtract: NULL context or result");
    memset(r, 0, sizeof *r);
    tide_subtract_params p;
    if (pin)
        p = *pin;
    else
        tide_subtract_params_default(&p);
    int st = check_inputs(ctx, sci, tmpl, &p);
    if (st)
        return st;
    const int d0 = p.spatial_degree;
    p.spatial_degree = tide_subtract_degree_for_stars(d0, p.nstars);
    if (p.spatial_degree != d0)
        tide_log(&ctx->log, TIDE_LOG_INFO, "subtract",
                 "%lld clean stars: kernel spatial degree lowered from %d to %d",
                 (long long)p.nstars, d0, p.spatial_degree);
    r->spatial_degree_stars = p.spatial_degree;
    sub_work w;
    memset(&w, 0, sizeof w);
    int host_in = sci->location == TIDE_HOST && ctx->backend == TIDE_BACKEND_CUDA;
    if (host_in) {
        if ((st = tide_image_clone(ctx, &w.dsci, sci, TIDE_DEVICE)) ||
            (st = tide_image_clone(ctx, &w.dtmpl, tmpl, TIDE_DEVICE))) {
            work_free(ctx, &w);
            return st;
        }
        sci = &w.dsci;
        tmpl = &w.dtmpl;
    }
    st = subtract_run(ctx, sci, tmpl, fwhm_sci, fwhm_tmpl, &p, r, &w);
    work_free(ctx, &w);
    if (!st && host_in) {
        tide_image hd, hm;
        if (!(st = tide_image_clone(ctx, &hd, &r->diff, TIDE_HOST))) {
            tide_image_free(ctx, &r->diff);
            r->diff = hd;
        }
        if (!st && !(st = tide_image_clone(ctx, &hm, &r->matched, TIDE_HOST))) {
            tide_image_free(ctx, &r->matched);
            r->matched = hm;
        }
    }
    if (st)
        tide_subtract_result_free(ctx, r);
    return st;
}

void tide_subtract_result_free(tide_ctx *ctx, tide_subtract_result *r) {
    if (!r)
        return;
    tide_image_free(ctx, &r->diff);
    tide_image_free(ctx, &r->matched);
    free(r->kernel_center);
    free(r->kernel_terms);
    free(r->bg_coef);
    memset(r, 0, sizeof *r);
}
