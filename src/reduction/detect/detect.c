/* detect.c — source detection, the algorithm once for both backends (detect.h): matched
 * filter kernels and their Gram matrix, FFT correlation, then the backend kernels for the
 * S/N map, labelling, deblending and measurements, and the output table. */
#include "tide/detect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_kernels.h"
#include "tide/fft.h"
#include "tide/memory.h"
#include "tide/psf.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "core/ctx_internal.h"

void tide_detect_params_default(tide_detect_params *p) {
    memset(p, 0, sizeof *p);
    p->thresh = 5.0;
    p->minarea = 5;
    p->fwhm_guess = 3.0;
    p->deblend_nthresh = 32;
    p->deblend_mincont = 0.005;
    p->deblend_limit = 1024;
    p->saturation = 0.0;
    p->gain = 0.0;
    p->filter_mask_bits =
        TIDE_MASK_NODATA | TIDE_MASK_BAD | TIDE_MASK_HOT | TIDE_MASK_COLD | TIDE_MASK_COSMIC;
    p->bad_mask_bits = p->filter_mask_bits;
    p->winpos_niter = 16;
    p->winpos_eps = 1e-4;
}

void tide_detect_maps_free(tide_ctx *ctx, tide_detect_maps *m) {
    if (!m)
        return;
    tide_image_free(ctx, &m->snr);
    if (m->seg) {
        if (m->location == TIDE_DEVICE)
            tide_device_free(ctx, m->seg);
        else
            free(m->seg);
    }
    memset(m, 0, sizeof *m);
}

static int check_params(const tide_detect_params *p, const tide_psf_model *psf) {
    if (!(p->thresh > 0.0) || !isfinite(p->thresh))
        return tide_error(TIDE_E_INVAL, "tide_detect: thresh must be > 0 (got %g)", p->thresh);
    if (p->minarea < 1)
        return tide_error(TIDE_E_INVAL, "tide_detect: minarea must be >= 1 (got %lld)",
                          (long long)p->minarea);
    if (!psf && !(p->fwhm_guess > 0.0 && p->fwhm_guess < 200.0))
        return tide_error(TIDE_E_INVAL,
                          "tide_detect: fwhm_guess must be in (0, 200) pixels "
                          "(got %g)",
                          p->fwhm_guess);
    if (p->deblend_limit < 1 || !(p->deblend_mincont >= 0.0) || p->deblend_nthresh > 1024)
        return tide_error(TIDE_E_INVAL, "tide_detect: deblend_limit must be >= 1, "
                                        "deblend_mincont >= 0 and deblend_nthresh <= 1024");
    if (p->winpos_niter < 0 || !(p->winpos_eps > 0.0))
        return tide_error(TIDE_E_INVAL, "tide_detect: winpos_niter >= 0 and winpos_eps > 0");
    if (psf) {
        const int nt = (psf->degree + 1) * (psf->degree + 2) / 2;
        if (psf->nbasis < 1 || psf->nbasis > TIDE_DET_MAX_BASIS || psf->stamp < 1 ||
            psf->stamp % 2 == 0 || !psf->basis || !psf->coef || psf->degree < 0 ||
            psf->ncoef != nt || nt > TIDE_DET_MAX_COEF)
            return tide_error(TIDE_E_INVAL,
                              "tide_detect: PSF model has nbasis %d, stamp %d, "
                              "degree %d, ncoef %d (need 1..%d basis, odd stamp, ncoef = "
                              "(d+1)(d+2)/2 <= %d)",
                              psf->nbasis, psf->stamp, psf->degree, psf->ncoef, TIDE_DET_MAX_BASIS,
                              TIDE_DET_MAX_COEF);
    }
    return 0;
}

static int check_image(const tide_image *im, const char *name, int64_t w, int64_t h) {
    if (!im || !im->pix || im->width < 1 || im->height < 1 || im->stride < im->width)
        return tide_error(TIDE_E_INVAL, "tide_detect: %s is missing or empty", name);
    if (w >= 0 && (im->width != w || im->height != h))
        return tide_error(TIDE_E_INVAL, "tide_detect: %s is %lld x %lld, the frame %lld x %lld",
                          name, (long long)im->width, (long long)im->height, (long long)w,
                          (long long)h);
    return 0;
}

/* The matched-filter kernels (host), their Gram matrix and coefficient polynomials. */
static int build_filter(const tide_psf_model *psf, const tide_detect_params *p, int64_t w,
                        int64_t h, float **kbuf, int64_t *ks, tide_det_filter *f) {
    memset(f, 0, sizeof *f);
    if (psf) { /* a model check_params accepted */
        *ks = psf->stamp;
        size_t n = (size_t)psf->nbasis * (size_t)(*ks * *ks);
        *kbuf = malloc(n * sizeof(float));
        if (!*kbuf)
            return tide_error(TIDE_E_NOMEM, "tide_detect: kernel buffer");
        memcpy(*kbuf, psf->basis, n * sizeof(float));
        f->nbasis = psf->nbasis;
        f->degree = psf->degree;
        f->ncoef = psf->ncoef;
        memcpy(f->coef, psf->coef, sizeof(double) * (size_t)(psf->nbasis * psf->ncoef));
        f->width = psf->width > 0 ? psf->width : w;
        f->height = psf->height > 0 ? psf->height : h;
    } else {
        /* unit-sum Gaussian out to ~3.1 sigma */
        double sig = p->fwhm_guess / 2.3548200450309493;
        int64_t half = (int64_t)ceil(1.3 * p->fwhm_guess);
        if (half < 1)
            half = 1;
        *ks = 2 * half + 1;
        *kbuf = malloc(sizeof(float) * (size_t)(*ks * *ks));
        if (!*kbuf)
            return tide_error(TIDE_E_NOMEM, "tide_detect: kernel buffer");
        double s = 0.0;
        for (int64_t j = 0; j < *ks; j++)
            for (int64_t i = 0; i < *ks; i++) {
                double dx = (double)(i - half), dy = (double)(j - half);
                s += exp(-0.5 * (dx * dx + dy * dy) / (sig * sig));
            }
        for (int64_t j = 0; j < *ks; j++)
            for (int64_t i = 0; i < *ks; i++) {
                double dx = (double)(i - half), dy = (double)(j - half);
                (*kbuf)[j * *ks + i] = (float)(exp(-0.5 * (dx * dx + dy * dy) / (sig * sig)) / s);
            }
        f->nbasis = 1;
        f->degree = 0;
        f->ncoef = 1;
        f->coef[0] = 1.0;
        f->width = w;
        f->height = h;
    }
    const int64_t kk = *ks * *ks;
    for (int a = 0; a < f->nbasis; a++)
        for (int b = 0; b < f->nbasis; b++) {
            double s = 0.0;
            for (int64_t q = 0; q < kk; q++)
                s += (double)(*kbuf)[a * kk + q] * (double)(*kbuf)[b * kk + q];
            f->gram[a * f->nbasis + b] = s;
        }
    f->nodata_bits = TIDE_MASK_NODATA;
    return 0;
}

/* The PSF FWHM at the corners, for the centroid windows: the model's summary, its FWHM where
 * a corner fit failed, the guess without either (or without a model). */
static void corner_fwhm(const tide_psf_model *psf, const tide_detect_params *p,
                        double fwhm_corner[4]) {
    for (int c = 0; c < 4; c++)
        fwhm_corner[c] = !psf                        ? p->fwhm_guess
                         : psf->fwhm_corner[c] > 0.0 ? psf->fwhm_corner[c]
                         : psf->fwhm > 0.0           ? psf->fwhm
                                                     : p->fwhm_guess;
}

static const struct {
    int idx;
    const char *name, *unit, *comment;
} f64_cols[] = {
    {TIDE_DET_X, "X", "pixel", "barycentre x (0-based)"},
    {TIDE_DET_Y, "Y", "pixel", "barycentre y (0-based)"},
    {TIDE_DET_XWIN, "XWIN", "pixel", "windowed centroid x (0-based)"},
    {TIDE_DET_YWIN, "YWIN", "pixel", "windowed centroid y (0-based)"},
    {TIDE_DET_ERRX_WIN, "ERRX_WIN", "pixel", "RMS error of XWIN"},
    {TIDE_DET_ERRY_WIN, "ERRY_WIN", "pixel", "RMS error of YWIN"},
    {TIDE_DET_X2, "X2", "pixel**2", "second moment along x"},
    {TIDE_DET_Y2, "Y2", "pixel**2", "second moment along y"},
    {TIDE_DET_XY, "XY", "pixel**2", "second moment xy"},
    {TIDE_DET_A, "A", "pixel", "RMS along the major axis"},
    {TIDE_DET_B, "B", "pixel", "RMS along the minor axis"},
    {TIDE_DET_THETA, "THETA", "deg", "major-axis angle, CCW from +x"},
    {TIDE_DET_FWHM, "FWHM", "pixel", "Gaussian-equivalent FWHM"},
    {TIDE_DET_PEAK, "PEAK", "count", "brightest footprint pixel"},
    {TIDE_DET_SNR, "SNR", "", "matched-filter S/N at the peak"},
    {TIDE_DET_FLUX_ISO, "FLUX_ISO", "count", "isophotal flux"},
    {TIDE_DET_FLUXERR_ISO, "FLUXERR_ISO", "count", "isophotal flux error"},
};

static int add_columns(tide_table *t) {
    int st = 0;
    for (size_t c = 0; c < sizeof f64_cols / sizeof f64_cols[0] && !st; c++)
        st = tide_table_add_column(t, f64_cols[c].name, TIDE_COL_F64, 1, f64_cols[c].unit,
                                   f64_cols[c].comment, NULL);
    if (!st)
        st = tide_table_add_column(t, "ISOAREA", TIDE_COL_I64, 1, "pixel**2", "footprint pixels",
                                   NULL);
    if (!st)
        st = tide_table_add_column(t, "XPEAK", TIDE_COL_I64, 1, "pixel",
                                   "x of the S/N peak (0-based)", NULL);
    if (!st)
        st = tide_table_add_column(t, "YPEAK", TIDE_COL_I64, 1, "pixel",
                                   "y of the S/N peak (0-based)", NULL);
    if (!st)
        st = tide_table_add_column(t, "FLAGS", TIDE_COL_I32, 1, "", "extraction flags", NULL);
    if (!st)
        st =
            tide_table_add_column(t, "PARENT", TIDE_COL_I64, 1, "", "parent footprint index", NULL);
    return st;
}

/* Copy (from the device when needed) the measurement arrays into the table. */
static int fill_table(tide_ctx *ctx, const tide_det_work *w, int on_dev, tide_table *t) {
    const int64_t n = w->nsrc;
    int st = tide_table_resize(t, n);
    if (st || n == 0)
        return st;
    double *f64 = malloc(sizeof(double) * (size_t)(TIDE_DET_NF64 * n));
    int64_t *i64 = malloc(sizeof(int64_t) * (size_t)(4 * n));
    int32_t *fl = malloc(sizeof(int32_t) * (size_t)n);
    if (!f64 || !i64 || !fl)
        st = tide_error(TIDE_E_NOMEM, "tide_detect: output columns");
    if (!st)
        st = tide_memcpy(ctx, f64, 0, w->f64, on_dev, sizeof(double) * TIDE_DET_NF64 * n);
    if (!st)
        st = tide_memcpy(ctx, i64, 0, w->i64, on_dev, sizeof(int64_t) * 3 * n);
    if (!st)
        st = tide_memcpy(ctx, i64 + 3 * n, 0, w->src_parent, on_dev, sizeof(int64_t) * n);
    if (!st)
        st = tide_memcpy(ctx, fl, 0, w->flags, on_dev, sizeof(int32_t) * n);
    if (!st) {
        for (size_t c = 0; c < sizeof f64_cols / sizeof f64_cols[0]; c++)
            memcpy(tide_table_f64(t, f64_cols[c].name), f64 + f64_cols[c].idx * n,
                   sizeof(double) * n);
        memcpy(tide_table_i64(t, "ISOAREA"), i64, sizeof(int64_t) * n);
        memcpy(tide_table_i64(t, "XPEAK"), i64 + n, sizeof(int64_t) * n);
        memcpy(tide_table_i64(t, "YPEAK"), i64 + 2 * n, sizeof(int64_t) * n);
        memcpy(tide_table_i64(t, "PARENT"), i64 + 3 * n, sizeof(int64_t) * n);
        memcpy(tide_table_i32(t, "FLAGS"), fl, sizeof(int32_t) * n);
    }
    free(f64);
    free(i64);
    free(fl);
    return st;
}

static void work_free(tide_ctx *ctx, tide_det_work *w) {
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        tide_det_work_free_cuda(ctx, w);
        return;
    }
#endif
    tide_det_work_free_cpu(ctx, w);
}

/* The S/N map (steps 1-2 of detect.h). The call owns its correlator and frees it before it
 * returns, so no padded buffer outlives detection (tide_correlate would keep it in the
 * context, and the two detection passes of a reduction, with different kernels, would only
 * evict each other's). With several bases on an untiled correlator (every CUDA one), the
 * frame is transformed once and the bases are correlated one at a time, each folded into the
 * double numerator F at once (tide_det_snr_accum, same sum in the same order as
 * tide_det_snr), read in place from the correlator's result buffer
 * (tide_correlator_run_one_view), so no correlation image is stored: at 151 MP that is
 * 1.13 GiB for F instead of 6 x 0.56 GiB for R. Otherwise (one basis, or a tiled CPU
 * correlator that cannot keep a spectrum) all R[b] at once and tide_det_snr. */
static int matched_filter(tide_ctx *ctx, const tide_image *s_in, const tide_image *r_in,
                          const float *const *kp, int64_t ks, const tide_correlate_options *opt,
                          const tide_det_filter *f, tide_location loc, tide_image *R,
                          tide_image *snr) {
    const int64_t W = s_in->width, H = s_in->height;
    tide_correlator *corr = NULL;
    int st = tide_correlator_create(ctx, W, H, f->nbasis, kp, ks, ks, opt, &corr);
    if (st)
        return st;
    if (!tide_correlator_streams(corr)) {
        st = tide_correlator_run(ctx, corr, s_in, R);
        tide_correlator_free(ctx, corr);
        if (!st)
            st = tide_image_alloc(ctx, snr, W, H, loc, 0);
        if (!st)
            st = TIDE_DISPATCH(ctx, tide_det_snr, s_in, r_in, R, f, snr);
        return st;
    }
    const size_t fbytes = sizeof(double) * (size_t)(W * H);
    double *F = NULL;
    if (loc == TIDE_DEVICE)
        st = tide_device_alloc(ctx, fbytes, (void **)&F);
    else if (!(F = malloc(fbytes)))
        st = tide_error(TIDE_E_NOMEM, "tide_detect: S/N numerator");
    if (!st)
        st = tide_correlator_forward(ctx, corr, s_in);
    for (int b = 0; b < f->nbasis && !st; b++) {
        tide_image Rb; /* a view of the correlator's result buffer: no copy, no image */
        st = tide_correlator_run_one_view(ctx, corr, b, &Rb);
        if (!st)
            st = TIDE_DISPATCH(ctx, tide_det_snr_accum, &Rb, b, f, F);
    }
    tide_correlator_free(ctx, corr);
    if (!st)
        st = tide_image_alloc(ctx, snr, W, H, loc, 0);
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_det_snr_finish, s_in, r_in, F, f, snr);
    if (loc == TIDE_DEVICE)
        tide_device_free(ctx, F);
    else
        free(F);
    return st;
}

/* tide_detect_ex, with the S/N map made here (snr_given NULL) or given. */
static int detect(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                  const tide_psf_model *psf, const tide_detect_params *pin,
                  const tide_image *snr_given, tide_table *sources, tide_detect_maps *maps) {
    tide_detect_params p;
    if (pin)
        p = *pin;
    else
        tide_detect_params_default(&p);
    if (maps)
        memset(maps, 0, sizeof *maps);
    if (!ctx || !sources)
        return tide_error(TIDE_E_INVAL, "tide_detect: NULL context or table");
    int st = check_params(&p, psf);
    if (!st)
        st = check_image(sub, "sub", -1, -1);
    if (!st)
        st = check_image(rms, "rms", sub->width, sub->height);
    if (st)
        return st;
    const int64_t W = sub->width, H = sub->height;
    if (W * H >= INT32_MAX)
        return tide_error(TIDE_E_RANGE, "tide_detect: %lld x %lld frame has 2^31 pixels or more",
                          (long long)W, (long long)H);
    const int cuda = ctx->backend == TIDE_BACKEND_CUDA;
    const tide_location loc = cuda ? TIDE_DEVICE : TIDE_HOST;
    if (!cuda && (sub->location != TIDE_HOST || rms->location != TIDE_HOST))
        return tide_error(TIDE_E_INVAL, "tide_detect: a CPU context needs host images");

    tide_image dsub = {0}, drms = {0}, snr = {0};
    tide_image R[TIDE_DET_MAX_BASIS];
    memset(R, 0, sizeof R);
    tide_det_work w;
    memset(&w, 0, sizeof w);
    float *kbuf = NULL;
    int64_t ks = 0;
    tide_det_filter f;
    memset(&f, 0, sizeof f);
    tide_det_mparams mp;
    memset(&mp, 0, sizeof mp);
    const tide_image *s_in = sub, *r_in = rms;

    if (tide_table_column(sources, "XWIN") == NULL)
        st = add_columns(sources);
    /* the kernels only for a map made here */
    if (!st && !snr_given)
        st = build_filter(psf, &p, W, H, &kbuf, &ks, &f);
    /* A CUDA context works on device images: upload host inputs once. */
    if (!st && cuda && sub->location == TIDE_HOST) {
        st = tide_image_clone(ctx, &dsub, sub, TIDE_DEVICE);
        s_in = &dsub;
    }
    if (!st && cuda && rms->location == TIDE_HOST) {
        st = tide_image_clone(ctx, &drms, rms, TIDE_DEVICE);
        r_in = &drms;
    }
    if (!st && snr_given &&
        (snr_given->location != loc || snr_given->width != W || snr_given->height != H ||
         snr_given->stride != W || !snr_given->pix))
        st = tide_error(TIDE_E_INVAL,
                        "tide_detect: the given S/N map must be %lld x %lld "
                        "(row stride %lld) where the context computes",
                        (long long)W, (long long)H, (long long)W);
    tide_timer tm;
    if (!st && snr_given) {
        snr = *snr_given; /* a view: never freed here */
        snr.owns = 0;
        snr.mask = NULL;
        snr.var = NULL;
    } else if (!st) {
        const float *kp[TIDE_DET_MAX_BASIS];
        for (int b = 0; b < f.nbasis; b++)
            kp[b] = kbuf + (size_t)b * (size_t)(ks * ks);
        tide_correlate_options opt = {0};
        opt.pad = TIDE_PAD_ZERO;
        opt.mask_bits = p.filter_mask_bits;
        tide_timer_start(ctx, &tm, "detect.filter");
        st = matched_filter(ctx, s_in, r_in, kp, ks, &opt, &f, loc, R, &snr);
        tide_timer_stop(ctx, &tm, NULL);
    }
    for (int b = 0; b < TIDE_DET_MAX_BASIS; b++)
        tide_image_free(ctx, &R[b]);

    w.width = W;
    w.height = H;
    w.npix = W * H;
    if (!st) {
        tide_timer_start(ctx, &tm, "detect.label");
        st = TIDE_DISPATCH(ctx, tide_det_label, &snr, p.thresh, p.minarea, &w);
        tide_timer_stop(ctx, &tm, NULL);
    }
    if (!st && w.nparent > 0) {
        tide_timer_start(ctx, &tm, "detect.deblend");
        st = TIDE_DISPATCH(ctx, tide_det_deblend, &w, p.thresh, p.deblend_nthresh,
                           p.deblend_mincont, p.minarea, p.deblend_limit);
        tide_timer_stop(ctx, &tm, NULL);
    }
    if (!st && w.nsrc > 0) {
        corner_fwhm(psf, &p, mp.fwhm_corner);
        mp.width = W;
        mp.height = H;
        mp.saturation = p.saturation;
        mp.gain = p.gain;
        mp.bad_bits = p.bad_mask_bits;
        mp.niter = p.winpos_niter;
        mp.eps = p.winpos_eps;
        tide_timer_start(ctx, &tm, "detect.measure");
        st = TIDE_DISPATCH(ctx, tide_det_measure, s_in, r_in, &snr, &mp, &w);
        tide_timer_stop(ctx, &tm, NULL);
    }
    if (!st)
        st = fill_table(ctx, &w, cuda, sources);
    if (snr_given)
        memset(&snr, 0, sizeof snr); /* the caller's */
    if (!st && maps) {
        maps->snr = snr;
        memset(&snr, 0, sizeof snr);
        maps->width = W;
        maps->height = H;
        maps->location = loc;
        maps->nparents = w.nparent;
        if (!w.seg) { /* no parent: an all -1 map */
            size_t bytes = sizeof(int32_t) * (size_t)(W * H);
            if (cuda) {
                st = tide_device_alloc(ctx, bytes, (void **)&maps->seg);
                /* 0xFF bytes = -1 */
                if (!st) {
                    int32_t *tmp = malloc(bytes);
                    if (!tmp)
                        st = tide_error(TIDE_E_NOMEM, "tide_detect: seg map");
                    else {
                        memset(tmp, 0xFF, bytes);
                        st = tide_memcpy(ctx, maps->seg, 1, tmp, 0, bytes);
                        free(tmp);
                    }
                }
            } else {
                maps->seg = malloc(bytes);
                if (!maps->seg)
                    st = tide_error(TIDE_E_NOMEM, "tide_detect: seg map");
                else
                    memset(maps->seg, 0xFF, bytes);
            }
        } else {
            maps->seg = w.seg;
            w.seg = NULL;
        }
        if (st)
            tide_detect_maps_free(ctx, maps);
    }
    work_free(ctx, &w);
    tide_image_free(ctx, &snr);
    tide_image_free(ctx, &dsub);
    tide_image_free(ctx, &drms);
    free(kbuf);
    if (st)
        tide_table_resize(sources, 0);
    return st;
}

int tide_detect_ex(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                   const tide_psf_model *psf, const tide_detect_params *p, tide_table *sources,
                   tide_detect_maps *maps) {
    return detect(ctx, sub, rms, psf, p, NULL, sources, maps);
}

int tide_detect_with_snr(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                         const tide_psf_model *psf, const tide_detect_params *p,
                         const tide_image *snr, tide_table *sources) {
    if (!snr)
        return tide_error(TIDE_E_INVAL, "tide_detect_with_snr: NULL S/N map");
    return detect(ctx, sub, rms, psf, p, snr, sources, NULL);
}

int tide_detect(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                const tide_psf_model *psf, const tide_detect_params *p, tide_table *sources) {
    return tide_detect_ex(ctx, sub, rms, psf, p, sources, NULL);
}
