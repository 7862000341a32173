/* cosmetics.c — the cosmetics stage, once for both backends (DESIGN §3): parameters,
 * validation, workspace, the order of the passes and the report. The passes themselves are
 * in cosmetics_kernels.h (per pixel) and cosmetics_lacosmic.c (the cosmic-ray iteration). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cosmetics_internal.h"
#include "cosmetics_kernels.h"
#include "tide/background.h"
#include "tide/log.h"
#include "tide/memory.h"
#include "tide/stats.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "core/ctx_internal.h"

void tide_cosmetics_params_default(tide_cosmetics_params *p) {
    memset(p, 0, sizeof *p);
    p->gain = 1.0;
    p->rdnoise = 0.0;
    p->bias = 0.0;
    p->saturation = NAN;
    p->bleed = 1;
    p->bleed_axis = 0;
    p->bleed_frac = 0.5;
    p->bleed_grow = 2;
    p->badcol = 1;
    p->badcol_sigma = 3.0;
    p->badcol_minrun = 3;
    p->hot = 1;
    p->cold = 1;
    p->hot_sigma = 5.0;
    p->cold_sigma = 5.0;
    p->hot_isolation = 0.5;
    p->hot_ratio = 4.0;
    p->cosmic = 1;
    p->sigclip = 4.5;
    p->sigfrac = 0.3;
    p->objlim = 5.0;
    p->niter = 4;
    p->sat_protect = 2;
    p->inpaint = 0;
    p->inpaint_bits = TIDE_MASK_HOT | TIDE_MASK_COLD | TIDE_MASK_COSMIC;
    p->skip_bits = TIDE_MASK_NODATA | TIDE_MASK_BAD | TIDE_MASK_USER;
    p->psf_fwhm = 0.0;
    p->psf_width = 0.4;
    p->psf_round = 0.3;
}

int64_t tide_cosmetics_params_size(void) {
    return (int64_t)sizeof(tide_cosmetics_params);
}

/* Read the first of @p keys present into *out; 0 if none is present. */
static int header_first(const tide_header *h, const char *const *keys, int n, double *out) {
    for (int i = 0; i < n; i++) {
        if (tide_header_find(h, keys[i]) < 0)
            continue;
        double v;
        int st = tide_header_get_dbl(h, keys[i], &v);
        if (st)
            return tide_error_prefix(st, "cosmetics parameters: ");
        *out = v;
        return 0;
    }
    return 0;
}

int tide_cosmetics_params_from_header(tide_cosmetics_params *p, const tide_header *h) {
    static const char *const sat[] = {"SATURATE"}, *const gain[] = {"GAIN", "EGAIN"},
                             *const ron[] = {"RDNOISE", "READNOIS", "RON"};
    if (!p || !h)
        return tide_error(TIDE_E_INVAL, "cosmetics parameters from header: NULL argument");
    int st = header_first(h, sat, 1, &p->saturation);
    if (!st)
        st = header_first(h, gain, 2, &p->gain);
    if (!st)
        st = header_first(h, ron, 3, &p->rdnoise);
    return st;
}

int tide_cosmetics_params_check(const tide_cosmetics_params *p) {
#define BAD(cond, name)                                                                            \
    if (cond)                                                                                      \
        return tide_error(TIDE_E_INVAL, "cosmetics: parameter %s out of range", name);
    BAD(!(p->gain >= 0) || !isfinite(p->gain), "gain (must be >= 0; 0 = unknown)");
    BAD(!(p->noise_rms >= 0) || !isfinite(p->noise_rms), "noise_rms (must be >= 0)");
    BAD(!(p->rdnoise >= 0) || !isfinite(p->rdnoise), "rdnoise (must be >= 0)");
    BAD(!isfinite(p->bias), "bias");
    BAD(isinf(p->saturation), "saturation (finite or NaN)");
    BAD(!(p->bleed_frac > 0 && p->bleed_frac < 1), "bleed_frac (0 < f < 1)");
    BAD(p->bleed_grow < 0 || p->bleed_grow > 1024, "bleed_grow (0..1024)");
    BAD(p->bleed_axis != 0 && p->bleed_axis != 1, "bleed_axis (0 or 1)");
    BAD(!(p->badcol_sigma > 0) || p->badcol_minrun < 1, "badcol_sigma/badcol_minrun");
    BAD(!(p->hot_sigma > 0) || !(p->cold_sigma > 0), "hot_sigma/cold_sigma (> 0)");
    BAD(!(p->hot_isolation >= 0 && p->hot_isolation <= 1), "hot_isolation (0..1)");
    BAD(!(p->hot_ratio > 0), "hot_ratio (> 0)");
    BAD(!(p->sigclip > 0) || !(p->sigfrac > 0 && p->sigfrac <= 1), "sigclip/sigfrac");
    BAD(!(p->objlim >= 0), "objlim (>= 0)");
    BAD(p->niter < 1 || p->niter > 16, "niter (1..16)");
    BAD(p->sat_protect < 0 || p->sat_protect > 8, "sat_protect (0..8)");
    BAD(!(p->psf_fwhm == 0 || (p->psf_fwhm >= 0.5 && p->psf_fwhm <= 20)),
        "psf_fwhm (0 = off, or 0.5..20 px)");
    BAD(!(p->psf_width >= 0 && p->psf_width <= 1), "psf_width (0..1)");
    BAD(!(p->psf_round >= 0 && p->psf_round <= 1), "psf_round (0..1)");
#undef BAD
    return 0;
}

int tide_cos_alloc(tide_ctx *ctx, int on_device, size_t bytes, void **p) {
    *p = NULL;
    if (bytes == 0)
        bytes = 64;
    if (on_device)
        return tide_device_alloc(ctx, bytes, p);
    *p = malloc(bytes);
    return *p ? 0 : tide_error(TIDE_E_NOMEM, "cosmetics: cannot allocate %zu bytes", bytes);
}

void tide_cos_free(tide_ctx *ctx, int on_device, void *p) {
    if (!p)
        return;
    if (on_device)
        tide_device_free(ctx, p);
    else
        free(p);
}

static void work_free(tide_ctx *ctx, tide_cos_work *wk) {
    tide_cos_free(ctx, wk->on_device, wk->flag);
    tide_cos_free(ctx, wk->on_device, wk->flag2);
    tide_cos_free(ctx, wk->on_device, wk->flag3);
    tide_cos_free(ctx, wk->on_device, wk->W);
    tide_cos_free(ctx, wk->on_device, wk->N);
    tide_cos_free(ctx, wk->on_device, wk->S);
    tide_cos_free(ctx, wk->on_device, wk->SP);
    memset(wk, 0, sizeof *wk);
}

static int work_alloc(tide_ctx *ctx, tide_cos_work *wk, int64_t npix, int cosmic) {
    const size_t nb = (size_t)npix, nf = (size_t)npix * sizeof(float);
    int st = tide_cos_alloc(ctx, wk->on_device, nb, (void **)&wk->flag);
    if (!st)
        st = tide_cos_alloc(ctx, wk->on_device, nb, (void **)&wk->flag2);
    if (!st && cosmic) {
        st = tide_cos_alloc(ctx, wk->on_device, nb, (void **)&wk->flag3);
        if (!st)
            st = tide_cos_alloc(ctx, wk->on_device, nf, (void **)&wk->W);
        if (!st)
            st = tide_cos_alloc(ctx, wk->on_device, nf, (void **)&wk->N);
        if (!st)
            st = tide_cos_alloc(ctx, wk->on_device, nf, (void **)&wk->S);
        if (!st)
            st = tide_cos_alloc(ctx, wk->on_device, nf, (void **)&wk->SP);
    }
    return st;
}

/* Time one pass: run @p call between a timer start and stop, adding the time to *ms. */
#define TIMED(name, ms, call)                                                                      \
    do {                                                                                           \
        tide_timer t_;                                                                             \
        double ms_ = 0;                                                                            \
        if (!st)                                                                                   \
            st = tide_timer_start(ctx, &t_, name);                                                 \
        if (!st) {                                                                                 \
            st = (call);                                                                           \
            int st2_ = tide_timer_stop(ctx, &t_, &ms_);                                            \
            if (!st)                                                                               \
                st = st2_;                                                                         \
            (ms) += ms_;                                                                           \
        }                                                                                          \
    } while (0)

/* The frame's pixel noise σ (the noise without a gain, and the check of the model with one)
 * and sky level: the global RMS and level of Source
 * Extractor's background estimate (tide_background_estimate with its defaults: the median
 * over 64×64 meshes of each mesh's clipped σ) of the pixels valid under @p vbits. Meshes follow
 * sky gradients and vignetting that a frame-wide spread would count as noise (ccd.fits: 41 ADU
 * frame-wide against 13.5 per mesh), the clipping drops sources and defects, and the σ of
 * a·I + b is a·σ, so the masks do not depend on the data's units. No valid pixel gives 0 (no
 * pass will run then; no check of the model). */
static int measure_noise(tide_ctx *ctx, const tide_image *im, uint16_t vbits, double *sigma,
                         double *sky) {
    tide_bkg_params bp;
    tide_bkg_params_default(&bp);
    bp.mask_bits = vbits;
    tide_bkg_summary s;
    *sigma = 0.0;
    *sky = 0.0;
    int st = tide_background_estimate(ctx, im, &bp, NULL, NULL, &s);
    if (st == TIDE_E_EMPTY) {
        tide_error_clear();
        return 0;
    }
    if (st)
        return tide_error_prefix(st, "cosmetics: the frame's noise: ");
    *sigma = s.global_rms;
    *sky = s.global_back;
    return 0;
}

/* With a gain: the model's σ at the frame's sky level against the σ measured there (as
 * measure_noise). A frame whose sky was subtracted (DECam community-pipeline products, many
 * archive frames) still carries the sky's photon noise, but its level is ~0, so the model
 * gives only the read noise: 3 ADU against 34 measured on DEC-OBS04a, and L.A.Cosmic and the
 * hot/cold/bad-column passes then flag half the frame, stars included. When the measured σ
 * exceeds the model's by more than TIDE_COS_MODEL_SLACK, the missing photon noise is put
 * back as a constant variance (in the read-noise term, e-²) that makes the model meet the
 * measurement at the sky level; sources still add their own Poisson term above it. The
 * slack keeps frames the model describes (σ within a few per cent of it: sources and
 * clipping move the measured σ a little) exactly as they were. A model above the
 * measurement (an average of frames, a gain too low) is kept: it can only miss faint hits. */
#define TIDE_COS_MODEL_SLACK 1.25
static int check_model(tide_ctx *ctx, const tide_image *im, uint16_t vbits,
                       tide_cosmetics_params *pm) {
    double sig, sky;
    int st = measure_noise(ctx, im, vbits, &sig, &sky);
    if (st || !(sig > 0.0))
        return st;
    const double g = pm->gain, rn2 = pm->rdnoise * pm->rdnoise;
    const double e = g * (sky - pm->bias) > 1e-5 * g ? g * (sky - pm->bias) : 1e-5 * g;
    const double model = sqrt(e + rn2) / g;
    if (!(sig > TIDE_COS_MODEL_SLACK * model))
        return 0;
    pm->rdnoise = sqrt(g * g * sig * sig - e);
    tide_log(&ctx->log, TIDE_LOG_WARN, "cosmetics",
             "the noise model (gain %.6g e-/ADU, read noise %.6g e-) gives %.6g ADU at the sky "
             "level %.6g ADU, the frame has %.6g ADU (sky subtracted?): using %.6g e- of "
             "constant noise instead of the read noise",
             g, sqrt(rn2), model, sky, sig, pm->rdnoise);
    return 0;
}

/* The passes on an image that lives where the context computes. */
static int run_passes(tide_ctx *ctx, tide_image *im, const tide_cosmetics_params *p,
                      tide_cosmetics_report *r) {
    const tide_cos_geom g = {im->width, im->height, im->stride};
    const int64_t npix = im->width * im->height;
    tide_cosmetics_params pm = *p;
    if (!(pm.gain > 0.0) && !(pm.noise_rms > 0.0)) {
        double sky;
        int s0 = measure_noise(ctx, im, (uint16_t)(p->skip_bits | TIDE_MASK_NODATA), &pm.noise_rms,
                               &sky);
        if (s0)
            return s0;
        tide_log(&ctx->log, TIDE_LOG_INFO, "cosmetics",
                 "no gain: pixel noise %.6g ADU from the frame's background RMS (sky %.6g), no "
                 "Poisson term",
                 pm.noise_rms, sky);
    } else if (pm.gain > 0.0 && (pm.hot || pm.cold || pm.badcol || pm.cosmic)) {
        int s0 = check_model(ctx, im, (uint16_t)(p->skip_bits | TIDE_MASK_NODATA), &pm);
        if (s0)
            return s0;
    }
    p = &pm;
    const tide_cos_noise nm = tide_cos_noise_of(p);
    int64_t c0[16], c1[16];
    tide_cos_work wk;
    memset(&wk, 0, sizeof wk);
    wk.on_device = im->location == TIDE_DEVICE;
    int st = TIDE_DISPATCH(ctx, tide_cos_count, &g, im->mask, c0);

    /* Typical level for pixels with no usable neighbour: the median of the valid pixels (of
     * the mask as given). The CPU takes it only when the cosmic-ray pass will need it, from
     * a copy of the input mask, and first just asks whether any pixel is valid. */
    const uint16_t vbits = (uint16_t)(p->skip_bits | TIDE_MASK_NODATA);
    double med = 0.0;
    int any_valid = 1;
    uint16_t *mask0 = NULL;
    const int lazy = ctx->backend != TIDE_BACKEND_CUDA;
    if (!st && lazy) {
        any_valid = tide_cos_any_valid_cpu(ctx, &g, im->pix, im->mask, vbits);
        const size_t mb = sizeof(uint16_t) * (size_t)(im->stride * im->height);
        if (any_valid && p->cosmic && (mask0 = malloc(mb)) != NULL)
            memcpy(mask0, im->mask, mb);
        else if (any_valid && p->cosmic)
            st = tide_error(TIDE_E_NOMEM, "cosmetics: cannot allocate %zu bytes", mb);
    } else if (!st) {
        int s2 = tide_reduce_median(ctx, im, vbits, &med);
        if (s2 == TIDE_E_EMPTY) {
            any_valid = 0;
            med = 0.0;
            tide_error_clear();
        } else {
            st = s2;
        }
    }
    const int cosmic = p->cosmic && any_valid;
    if (!st)
        st = work_alloc(ctx, &wk, npix, cosmic);

    if (isfinite(p->saturation)) {
        TIMED("cosmetics.saturation", r->ms_saturation,
              TIDE_DISPATCH(ctx, tide_cos_saturate, &g, im->pix, im->mask, (float)p->saturation));
        if (p->bleed) {
            const float hi = (float)(p->bias + p->bleed_frac * (p->saturation - p->bias));
            TIMED("cosmetics.bleed", r->ms_bleed,
                  TIDE_DISPATCH(ctx, tide_cos_bleed, &g, im->pix, im->mask, hi, p->bleed_axis,
                                p->bleed_grow, wk.flag));
        }
    }
    if (p->badcol && any_valid) {
        const uint16_t ex =
            (uint16_t)(p->skip_bits | TIDE_MASK_NODATA | TIDE_MASK_SATURATED | TIDE_MASK_BLEED);
        TIMED("cosmetics.badcol", r->ms_badcol,
              TIDE_DISPATCH(ctx, tide_cos_badcol, &g, im->pix, im->mask, &nm, ex,
                            (float)p->badcol_sigma, p->badcol_minrun, wk.flag2, wk.flag));
        TIMED("cosmetics.badcol", r->ms_badcol,
              TIDE_DISPATCH(ctx, tide_cos_apply, &g, wk.flag, im->mask, (uint16_t)TIDE_MASK_BAD,
                            (uint16_t)0, (int64_t *)NULL));
    }
    if ((p->hot || p->cold) && any_valid) {
        tide_cos_hot hp;
        hp.hot_sigma = (float)p->hot_sigma;
        hp.cold_sigma = (float)p->cold_sigma;
        hp.isolation = (float)p->hot_isolation;
        hp.ratio = (float)p->hot_ratio;
        hp.do_hot = p->hot;
        hp.do_cold = p->cold;
        hp.excl =
            (uint16_t)(p->skip_bits | TIDE_MASK_NODATA | TIDE_MASK_SATURATED | TIDE_MASK_BLEED);
        hp.psf = tide_cos_psf_of(p);
        TIMED("cosmetics.hotcold", r->ms_hotcold,
              TIDE_DISPATCH(ctx, tide_cos_hotcold, &g, im->pix, im->mask, &nm, &hp, wk.flag));
        TIMED("cosmetics.hotcold", r->ms_hotcold,
              TIDE_DISPATCH(ctx, tide_cos_apply, &g, wk.flag, im->mask, (uint16_t)TIDE_MASK_HOT,
                            (uint16_t)TIDE_MASK_COLD, (int64_t *)NULL));
    }
    if (cosmic && lazy && !st) {
        /* the lacosmic working copy's fill (cosmetics_lacosmic.c): repl = excl */
        const uint16_t repl = (uint16_t)(p->skip_bits | TIDE_MASK_HOT | TIDE_MASK_COLD |
                                         TIDE_MASK_COSMIC | TIDE_MASK_NODATA);
        if (tide_cos_fill_needs_fallback_cpu(ctx, &g, im->pix, im->mask, repl, repl)) {
            tide_image orig = *im;
            orig.mask = mask0;
            orig.var = NULL;
            st = tide_reduce_median(ctx, &orig, vbits, &med);
        }
    }
    free(mask0);
    if (cosmic)
        TIMED("cosmetics.cosmic", r->ms_cosmic,
              tide_cos_lacosmic(ctx, im, &g, p, &wk, (float)med, r));
    if (p->inpaint && p->inpaint_bits) {
        /* Neighbours: any pixel without a defect, skip, saturation or bleed bit. */
        const uint16_t ex =
            (uint16_t)(p->inpaint_bits | p->skip_bits | TIDE_MASK_NODATA | TIDE_MASK_SATURATED |
                       TIDE_MASK_BLEED | TIDE_MASK_HOT | TIDE_MASK_COLD | TIDE_MASK_COSMIC);
        TIMED("cosmetics.inpaint", r->ms_inpaint,
              TIDE_DISPATCH(ctx, tide_cos_fill, &g, im->pix, im->stride, im->mask, im->pix,
                            im->stride, p->inpaint_bits, ex, 0, 0, 0.0f, wk.flag));
        TIMED("cosmetics.inpaint", r->ms_inpaint,
              TIDE_DISPATCH(ctx, tide_cos_apply, &g, wk.flag, im->mask, (uint16_t)TIDE_MASK_INTERP,
                            (uint16_t)0, (int64_t *)NULL));
    }
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_cos_count, &g, im->mask, c1);
    if (!st) {
        r->n_saturated = c1[1] - c0[1];
        r->n_bad = c1[2] - c0[2];
        r->n_hot = c1[3] - c0[3];
        r->n_cold = c1[4] - c0[4];
        r->n_cosmic = c1[5] - c0[5];
        r->n_bleed = c1[6] - c0[6];
        r->n_interp = c1[8] - c0[8];
    }
    work_free(ctx, &wk);
    return st;
}

/* Copy the mask plane of device image @p src back into host image @p dst (same size). */
static int copy_mask(tide_ctx *ctx, tide_image *dst, const tide_image *src) {
    if (dst->stride == src->stride)
        return tide_memcpy(ctx, dst->mask, 0, src->mask, 1,
                           sizeof(uint16_t) * (size_t)(src->stride * src->height));
    for (int64_t y = 0; y < src->height; y++) {
        int st = tide_memcpy(ctx, dst->mask + y * dst->stride, 0, src->mask + y * src->stride, 1,
                             sizeof(uint16_t) * (size_t)src->width);
        if (st)
            return st;
    }
    return 0;
}

int tide_cosmetics_apply(tide_ctx *ctx, tide_image *im, const tide_cosmetics_params *p,
                         tide_cosmetics_report *r) {
    tide_cosmetics_params def;
    tide_cosmetics_report rep;
    if (!ctx || !im)
        return tide_error(TIDE_E_INVAL, "cosmetics: NULL context or image");
    if (!p) {
        tide_cosmetics_params_default(&def);
        p = &def;
    }
    if (!r)
        r = &rep;
    memset(r, 0, sizeof *r);
    if (!im->mask || !im->pix)
        return tide_error(TIDE_E_INVAL, "cosmetics: the image needs pixels and a mask plane");
    if (im->width <= 0 || im->height <= 0 || im->stride < im->width)
        return tide_error(TIDE_E_INVAL, "cosmetics: bad image size %lldx%lld (stride %lld)",
                          (long long)im->width, (long long)im->height, (long long)im->stride);
    int st = tide_cosmetics_params_check(p);
    if (st)
        return st;
    const double t0 = tide_now();
    if (ctx->backend != TIDE_BACKEND_CUDA) {
        if (im->location != TIDE_HOST)
            return tide_error(TIDE_E_INVAL, "cosmetics: a CPU context needs a host image");
        st = run_passes(ctx, im, p, r);
    } else if (im->location == TIDE_DEVICE) {
        st = run_passes(ctx, im, p, r);
    } else {
        /* A host image on a CUDA context: upload, clean, copy the mask (and pixels when
         * inpainting) back. */
        tide_image dev;
        memset(&dev, 0, sizeof dev);
        st = tide_image_clone(ctx, &dev, im, TIDE_DEVICE);
        if (!st)
            st = run_passes(ctx, &dev, p, r);
        if (!st) {
            tide_image back = *im, src = dev;
            back.var = src.var = NULL;
            if (p->inpaint)
                st = tide_image_copy(ctx, &back, &src);
            else
                st = copy_mask(ctx, im, &dev);
        }
        tide_image_free(ctx, &dev);
    }
    r->ms_total = (tide_now() - t0) * 1e3;
    return st;
}
