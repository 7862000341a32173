/* reduce.c — tide_pipeline_run: stage order, memory plan and fallbacks of the reduction
 * pipeline (reduce.h). The stages do the science; this file decides what runs when, where
 * each image lives and for how long, and what happens when a stage has too little to work
 * with. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prepare.h"
#include "reduce_internal.h"
#include "reduction/maps/map_ops.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "tide/wcs.h"
#include "core/ctx_internal.h"

/* Everything a run holds; released in one place. */
typedef struct pipe_run {
    tide_ctx *ctx;
    tide_pipeline_params p;
    tide_image work;  /* the frame: then background-subtracted; with mask */
    tide_image bmap;  /* background map */
    tide_image rmap;  /* RMS map, then (measured noise) the variance map in place */
    tide_image var;   /* variance map of the noise model */
    tide_table first; /* detection pass 1 */
    tide_table det;   /* detection pass 2: the sources */
    tide_pipe_phot ph;
    int has_psf;
    double fwhm; /* the first pass's FWHM (else the guess): the PSF stage's guess */
} pipe_run;

/* What stages 1-3 made: the prepared frame, its maps and the first pass. */
static void release_prepared(pipe_run *r) {
    tide_image_free(r->ctx, &r->work);
    tide_image_free(r->ctx, &r->bmap);
    tide_image_free(r->ctx, &r->rmap);
    tide_table_free(&r->first);
}

static void run_release(pipe_run *r) {
    release_prepared(r);
    tide_image_free(r->ctx, &r->var);
    tide_table_free(&r->det);
    tide_pipe_phot_free(&r->ph);
}

/* Stage timing: every stage is one tide_timer named "reduce.<stage>". */
#define STAGE(r, name, call)                                                                       \
    do {                                                                                           \
        tide_timer tm_;                                                                            \
        int ts_ = tide_timer_start((r)->ctx, &tm_, name);                                          \
        st = ts_ ? ts_ : (call);                                                                   \
        if (!ts_) {                                                                                \
            int te_ = tide_timer_stop((r)->ctx, &tm_, NULL);                                       \
            if (!st)                                                                               \
                st = te_;                                                                          \
        }                                                                                          \
    } while (0)

/* Copy the detector values into the stages' parameters. */
static void propagate(tide_pipeline_params *p) {
    p->cos.gain = p->gain;
    p->cos.rdnoise = p->rdnoise;
    p->cos.bias = p->bias;
    p->cos.saturation = p->saturate;
    p->det.fwhm_guess = p->fwhm_guess;
    p->det.gain = p->gain * p->ncombine;
    p->psfp.fwhm_guess = p->fwhm_guess;
    p->aper.gain = p->gain;
    p->aper.ncombine = p->ncombine;
    p->kron.aper.gain = p->gain;
    p->kron.aper.ncombine = p->ncombine;
    p->kron.aper.mask_bits = p->aper.mask_bits;
    p->kron.aper.mask_correct = p->aper.mask_correct;
    p->psffit.gain = p->gain;
    p->psffit.ncombine = p->ncombine;
    p->apcorr.aper = p->aper;
}

/* Sample image @p im at n host positions into host @p out, in one batch on the device. */
static int gather(tide_ctx *ctx, const tide_image *im, int64_t n, const double *x, const double *y,
                  float *out) {
    if (n <= 0)
        return 0;
    if (im->location == TIDE_HOST)
        return tide_pipe_gather_cpu(ctx, im->pix, im->stride, im->width, im->height, n, x, y, out);
#ifdef TIDE_HAVE_CUDA
    void *buf = NULL;
    const size_t nd = (size_t)n * sizeof(double), nf = (size_t)n * sizeof(float);
    int st = tide_device_alloc(ctx, 2 * nd + nf, &buf);
    if (st)
        return st;
    double *dx = buf, *dy = (double *)((char *)buf + nd);
    float *dout = (float *)((char *)buf + 2 * nd);
    st = tide_memcpy(ctx, dx, 1, x, 0, nd);
    if (!st)
        st = tide_memcpy(ctx, dy, 1, y, 0, nd);
    if (!st)
        st =
            tide_pipe_gather_cuda(ctx, im->pix, im->stride, im->width, im->height, n, dx, dy, dout);
    if (!st)
        st = tide_memcpy(ctx, out, 0, dout, 1, nf);
    tide_device_free(ctx, buf);
    return st;
#else
    return tide_error(TIDE_E_INVAL, "reduce: a device image in a build without CUDA");
#endif
}

/* Stages 1-2: the frame's preparation (prepare.h): the working copy, cosmetics, background,
 * subtraction. */
static int stage_frame(pipe_run *r, const tide_image *frame, tide_pipeline_result *out) {
    tide_ctx *ctx = r->ctx;
    const tide_prep_params pp = {
        .name = r->p.source[0] ? r->p.source : "frame",
        .cos = r->p.cosmetics ? &r->p.cos : NULL,
        .cos_guard = 0,
        .bkg = &r->p.bkg,
        .variance = 0,
        .timers = {"reduce.upload", "reduce.cosmetics", "reduce.background"},
    };
    tide_prepared f;
    int st = tide_prep_frame(ctx, frame, &pp, &f);
    if (st)
        return st;
    r->work = f.work;
    r->bmap = f.bkg;
    r->rmap = f.rms;
    out->bkg = f.bkgs;
    out->cos = f.cr;
    if (r->p.keep_maps) {
        st = tide_image_clone(ctx, &out->back_map, &r->bmap, TIDE_HOST);
        if (!st)
            st = tide_image_clone(ctx, &out->rms_map, &r->rmap, TIDE_HOST);
    }
    return st;
}

/* Stage 3: first detection, and the FWHM of its stars. */
static int stage_first(pipe_run *r, tide_pipeline_result *out) {
    tide_ctx *ctx = r->ctx;
    tide_pipeline_params *p = &r->p;
    int st = 0;
    /* Saturation: the cosmetics stage masks it exactly; without it (or without a known level)
     * the stages compare background-subtracted values with the level less the global sky. */
    double sat_sub = 0;
    if (isfinite(p->saturate) && !p->cosmetics)
        sat_sub = p->saturate - out->bkg.global_back;
    if (sat_sub > 0) {
        p->det.saturation = sat_sub;
        p->psfp.saturation = sat_sub;
    }
    tide_detect_params d1 = p->det;
    st = tide_prep_first_pass(ctx, &r->work, &r->rmap, &d1, "reduce.detect1", &r->first);
    if (st)
        return st;
    out->n_first = r->first.nrows;

    r->fwhm = p->fwhm_guess;
    if (p->refine_fwhm) {
        /* the PSF stage's guess: the configured one may be far off */
        const tide_prep_fwhm_rule rule = TIDE_PREP_FWHM_REDUCE;
        const double f = tide_prep_fwhm(&r->first, &rule, NULL);
        if (f > 0.5 && f < 100) {
            r->fwhm = f;
            tide_log(&ctx->log, TIDE_LOG_INFO, "reduce",
                     "first pass: %lld sources, median FWHM %.3f px (guess %.3f)",
                     (long long)r->first.nrows, f, p->fwhm_guess);
        }
    }
    return 0;
}

/* Undersampled stars: the cosmetics ran before any FWHM was known, and below
 * COS_PSF_BELOW px their hot-pixel and cosmic-ray tests take star cores for defects
 * (cosmetics.h, psf_fwhm). When the first pass measured such a FWHM and the stage flagged
 * any hot or cosmic-ray pixel, the frame is prepared and detected again with the stars'
 * FWHM given to the cosmetics. Other frames, and a psf_fwhm set by the caller, run once. */
#define COS_PSF_BELOW 2.5
static int stage_recosmetics(pipe_run *r, const tide_image *frame, tide_pipeline_result *out) {
    tide_pipeline_params *p = &r->p;
    const tide_cosmetics_report was = out->cos;
    if (!p->cosmetics || p->cos.psf_fwhm > 0 || !(r->fwhm >= 0.5 && r->fwhm < COS_PSF_BELOW) ||
        was.n_hot + was.n_cosmic == 0)
        return 0;
    p->cos.psf_fwhm = r->fwhm;
    release_prepared(r);
    tide_image_free(r->ctx, &out->back_map);
    tide_image_free(r->ctx, &out->rms_map);
    int st = stage_frame(r, frame, out);
    if (!st)
        st = stage_first(r, out);
    if (!st)
        tide_log(&r->ctx->log, TIDE_LOG_INFO, "reduce",
                 "%s: first-pass FWHM %.3f px: cosmetics again, releasing star-like profiles: "
                 "%lld hot and %lld cosmic-ray pixels (were %lld and %lld), FWHM now %.3f px",
                 p->source[0] ? p->source : "frame", p->cos.psf_fwhm, (long long)out->cos.n_hot,
                 (long long)out->cos.n_cosmic, (long long)was.n_hot, (long long)was.n_cosmic,
                 r->fwhm);
    return st;
}

/* Stages 3b-5: PSF model, final detection. */
static int stage_detect(pipe_run *r, tide_pipeline_result *out) {
    tide_ctx *ctx = r->ctx;
    tide_pipeline_params *p = &r->p;
    int st = 0;
    const double fwhm = r->fwhm;
    p->psfp.fwhm_guess = fwhm;
    if (p->psfp.stamp > 0 && p->psfp.stamp < 5.0 * fwhm) {
        int s = (int)ceil(6.0 * fwhm) | 1;
        p->psfp.stamp = s > TIDE_PSF_MAX_STAMP ? TIDE_PSF_MAX_STAMP : s;
    }
    if (p->psf) {
        const int64_t n = r->first.nrows;
        const double *x = n ? tide_table_f64(&r->first, "XWIN") : NULL;
        const double *y = n ? tide_table_f64(&r->first, "YWIN") : NULL;
        const double *f = n ? tide_table_f64(&r->first, "FLUX_ISO") : NULL;
        STAGE(r, "reduce.psf",
              tide_psf_build(ctx, &r->work, &r->rmap, n, x, y, f, &p->psfp, &out->psf));
        if (st && st != TIDE_E_NOMEM && st != TIDE_E_CUDA && st != TIDE_E_INTERNAL) {
            tide_log(&ctx->log, TIDE_LOG_WARN, "reduce",
                     "PSF model failed (%s: %s); detection and PSF photometry use a Gaussian "
                     "of FWHM %.3f px",
                     tide_strerror(st), tide_error_detail(), fwhm);
            st = 0;
            p->psf = 0;
        }
        if (st)
            return st;
    }
    if (!p->psf) {
        /* A model with no stars at all is the PSF stage's Gaussian fallback. */
        tide_psf_params gp = p->psfp;
        gp.fwhm_guess = fwhm;
        STAGE(r, "reduce.psf",
              tide_psf_build(ctx, &r->work, &r->rmap, 0, NULL, NULL, NULL, &gp, &out->psf));
        if (st)
            return st;
    }
    out->psf_fallback = out->psf.gaussian_fallback;
    if (out->psf_fallback)
        tide_log(&ctx->log, TIDE_LOG_WARN, "reduce",
                 "%s: Gaussian PSF of FWHM %.3f px (%d PSF stars of %d candidates); the "
                 "catalog header says PSFMODEL = 'GAUSSIAN', PSFFBWHY = '%s'",
                 p->source[0] ? p->source : "frame", out->psf.fwhm, out->psf.nstars,
                 out->psf.ncandidates, out->psf.fallback_why[0] ? out->psf.fallback_why : "NSTARS");
    r->has_psf = 1;
    tide_detect_params d2 = p->det;
    d2.fwhm_guess = out->psf.fwhm > 0 ? out->psf.fwhm : fwhm;
    STAGE(r, "reduce.detect2", tide_detect(ctx, &r->work, &r->rmap, &out->psf, &d2, &r->det));
    if (!st)
        STAGE(r, "reduce.carry",
              tide_pipe_carry_first(&r->first, &r->det, d2.fwhm_guess, &out->n_carried));
    if (!st && out->n_carried > 0)
        tide_log(&ctx->log, TIDE_LOG_INFO, "reduce",
                 "%s: %lld first-pass sources have no second-pass source within %.2f px: "
                 "kept from the first pass (FLAGS_TIDE 2048, NFIRSTKP)",
                 p->source[0] ? p->source : "frame", (long long)out->n_carried,
                 d2.fwhm_guess > 1.0 ? d2.fwhm_guess : 1.0);
    return st;
}

/* Stage 6a: BACKGROUND at the sources, then the variance map; the background and RMS maps
 * are released here, before photometry, to keep the device peak down. */
static int stage_noise(pipe_run *r) {
    tide_ctx *ctx = r->ctx;
    const tide_pipeline_params *p = &r->p;
    tide_pipe_phot *ph = &r->ph;
    int st = 0;
    if (ph->n > 0)
        STAGE(r, "reduce.gather", gather(ctx, &r->bmap, ph->n, ph->x, ph->y, ph->background));
    if (st)
        return st;
    if (p->noise == TIDE_NOISE_MODEL) {
        STAGE(r, "reduce.noise",
              TIDE_DISPATCH(ctx, tide_pipe_map, TIDE_PIPE_ADD_CONST, r->bmap.width, r->bmap.height,
                            r->bmap.pix, r->bmap.stride, NULL, 0, (float)-p->bias));
        if (!st)
            STAGE(r, "reduce.noise",
                  tide_noise_model(ctx, &r->bmap, p->gain, p->rdnoise, p->ncombine, &r->var));
        tide_image_free(ctx, &r->rmap);
    } else {
        STAGE(r, "reduce.noise",
              TIDE_DISPATCH(ctx, tide_pipe_map, TIDE_PIPE_SQUARE, r->rmap.width, r->rmap.height,
                            r->rmap.pix, r->rmap.stride, NULL, 0, 0.0f));
        r->var = r->rmap; /* the RMS map becomes the variance map in place */
        memset(&r->rmap, 0, sizeof r->rmap);
    }
    tide_image_free(ctx, &r->bmap);
    return st;
}

/* Stage 6b: photometry of the final sources. */
static int stage_phot(pipe_run *r, tide_pipeline_result *out) {
    tide_ctx *ctx = r->ctx;
    tide_pipeline_params *p = &r->p;
    tide_pipe_phot *ph = &r->ph;
    const int64_t n = ph->n;
    int st = 0;
    if (n == 0)
        return 0;
    const double *a = tide_table_f64(&r->det, "A"), *b = tide_table_f64(&r->det, "B");
    const double *th = tide_table_f64(&r->det, "THETA"), *snr = tide_table_f64(&r->det, "SNR");
    const int32_t *dfl = tide_table_i32(&r->det, "FLAGS");
    if (!a || !b || !th || !snr || !dfl)
        return tide_error(TIDE_E_INTERNAL, "reduce: the detection table lacks A/B/THETA/SNR/FLAGS");
    STAGE(r, "reduce.aperture",
          tide_aperture_photometry(ctx, &r->work, &r->var, n, ph->x, ph->y, ph->naper, ph->radii,
                                   &p->aper, ph->flux_aper, ph->fluxerr_aper, ph->aper_flags));
    if (!st)
        STAGE(r, "reduce.kron",
              tide_kron_photometry(ctx, &r->work, &r->var, n, ph->x, ph->y, a, b, th, &p->kron,
                                   ph->kron_radius, ph->flux_auto, ph->fluxerr_auto,
                                   ph->kron_flags));
    if (!st)
        STAGE(r, "reduce.psfphot",
              tide_psf_photometry_ex(ctx, &r->work, &r->var, &out->psf, n, ph->x, ph->y, &p->psffit,
                                     ph->flux_psf, ph->fluxerr_psf, ph->chi2_psf, ph->psf_flags));
    if (st)
        return st;
    /* Aperture corrections and the optimal radius, from the isolated clean stars. */
    int32_t *cf = malloc(sizeof(int32_t) * (size_t)n);
    if (!cf)
        return tide_error(TIDE_E_NOMEM, "reduce: %lld flags", (long long)n);
    for (int64_t i = 0; i < n; i++)
        cf[i] = dfl[i] | ph->aper_flags[i];
    p->apcorr.fwhm = out->psf.fwhm > 0 ? out->psf.fwhm : p->psfp.fwhm_guess;
    STAGE(r, "reduce.apcorr",
          tide_apcorr_build(ctx, &r->work, &r->var, n, ph->x, ph->y, snr, cf, &p->apcorr,
                            &out->apcorr));
    free(cf);
    if (st == TIDE_E_EMPTY) {
        tide_log(&ctx->log, TIDE_LOG_WARN, "reduce",
                 "too few isolated stars for aperture corrections (%s): FLUX_OPT is NaN, "
                 "APCFALLB = T",
                 tide_error_detail());
        st = 0;
        out->has_apcorr = 0;
        for (int64_t i = 0; i < n; i++)
            ph->opt_flags[i] |= TIDE_PHOT_FIT_FAILED;
        return 0;
    }
    if (st)
        return st;
    out->has_apcorr = 1;
    STAGE(r, "reduce.optimal",
          tide_optimal_photometry(ctx, &r->work, &r->var, &out->apcorr, n, ph->x, ph->y, snr,
                                  &p->aper, ph->flux_opt, ph->fluxerr_opt, ph->rad_opt,
                                  ph->opt_flags));
    return st;
}

/* Sky positions of the sources when the frame has a celestial WCS, which the result keeps
 * (the calibration's starting point). Returns 0: a frame without a usable one gets no sky
 * columns (and a warning), not an error. */
static int sky_positions(pipe_run *r, tide_pipe_wcs_job *wj, tide_pipeline_result *out) {
    tide_pipe_phot *ph = &r->ph;
    if (!wj->hdr)
        return 0;
    tide_wcs *w = NULL;
    int st = tide_pipe_wcs_finish(wj, &w);
    if (st) {
        if (st != TIDE_E_NOTFOUND && ph->n > 0)
            tide_log(&r->ctx->log, TIDE_LOG_WARN, "reduce",
                     "no ALPHA_J2000/DELTA_J2000 columns: %s", tide_error_detail());
        tide_error_clear();
        return 0;
    }
    out->wcs = w;
    if (ph->n == 0)
        return 0;
    ph->ra = malloc(sizeof(double) * (size_t)ph->n);
    ph->dec = malloc(sizeof(double) * (size_t)ph->n);
    if (!ph->ra || !ph->dec || tide_wcs_pix2sky(w, ph->n, ph->x, ph->y, ph->ra, ph->dec)) {
        free(ph->ra), free(ph->dec);
        ph->ra = ph->dec = NULL;
        tide_error_clear();
    }
    return 0;
}

int tide_pipeline_run(tide_ctx *ctx, const tide_image *frame, const tide_header *hdr,
                      const tide_pipeline_params *pin, tide_pipeline_result *out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_pipeline_run: NULL result");
    memset(out, 0, sizeof *out);
    tide_table_init(&out->catalog);
    tide_header_init(&out->header);
    if (!ctx || !frame)
        return tide_error(TIDE_E_INVAL, "tide_pipeline_run: NULL context or frame");
    const double t0 = tide_now();
    pipe_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    tide_table_init(&r.first);
    tide_table_init(&r.det);
    if (pin)
        r.p = *pin;
    else
        tide_pipeline_params_default(&r.p);
    const char *src = r.p.source[0] ? r.p.source : "frame";
    int st = tide_pipeline_params_check(&r.p);
    if (st)
        return tide_error_prefix(st, "%s: ", src);
    if (frame->width < 1 || frame->height < 1 || !frame->pix)
        return tide_error(TIDE_E_INVAL, "%s: empty image (%lldx%lld)", src, (long long)frame->width,
                          (long long)frame->height);
    if (frame->location == TIDE_DEVICE && ctx->backend != TIDE_BACKEND_CUDA)
        return tide_error(TIDE_E_INVAL, "%s: a device image on a CPU context", src);
    propagate(&r.p);
    if (ctx->backend == TIDE_BACKEND_CUDA)
        tide_device_reset_peak(ctx);
    tide_pipe_wcs_job wj; /* the WCS, parsed beside the stages until the sky positions */
    tide_pipe_wcs_start(&wj, hdr, src);

    st = stage_frame(&r, frame, out);
    if (!st)
        st = stage_first(&r, out);
    if (!st)
        st = stage_recosmetics(&r, frame, out);
    if (!st)
        st = stage_detect(&r, out);
    const int64_t n = st ? 0 : r.det.nrows;
    if (!st)
        st = tide_pipe_phot_alloc(&r.ph, n, r.p.naper, r.p.aper_radii);
    if (!st && n > 0) {
        /* windowed centroids, but the barycentre of a source not peaked like the PSF */
        int64_t nbary = 0;
        st = tide_pipe_centres(&r.det, &out->psf, frame->width, frame->height, r.ph.x, r.ph.y,
                               &nbary);
        if (!st && nbary > 0)
            tide_log(&ctx->log, TIDE_LOG_DEBUG, "reduce",
                     "%s: %lld resolved sources centred on their barycentre (their windowed "
                     "centroid wandered)",
                     src, (long long)nbary);
    }
    if (!st)
        st = stage_noise(&r);
    if (!st)
        st = stage_phot(&r, out);
    if (!st)
        STAGE(&r, "reduce.sky", sky_positions(&r, &wj, out));
    tide_pipe_wcs_discard(&wj);
    if (!st) {
        tide_timer tm;
        st = tide_timer_start(ctx, &tm, "reduce.catalog");
        if (!st)
            st = tide_pipe_catalog_build(&r.det, &r.ph, &out->catalog);
        if (!st)
            st = tide_timer_stop(ctx, &tm, NULL);
    }
    out->n_sources = out->catalog.nrows;
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        size_t cur = 0, peak = 0;
        tide_device_usage(ctx, &cur, &peak);
        out->device_peak = peak;
    }
    run_release(&r);
    if (!st)
        STAGE(&r, "reduce.header",
              tide_pipe_header_build(ctx, &r.p, out, frame->width, frame->height, &out->header));
    out->ms_total = 1e3 * (tide_now() - t0);
    if (st) {
        tide_pipeline_result_free(out);
        return st;
    }
    tide_log(&ctx->log, TIDE_LOG_INFO, "reduce",
             "%s: %lld sources (first pass %lld), FWHM %.3f px%s, sky %.6g ± %.6g ADU, %.1f ms",
             src, (long long)out->n_sources, (long long)out->n_first, out->psf.fwhm,
             out->psf_fallback ? " (Gaussian fallback)" : "", out->bkg.global_back,
             out->bkg.global_rms, out->ms_total);
    return 0;
}

void tide_pipeline_result_free(tide_pipeline_result *r) {
    if (!r)
        return;
    tide_table_free(&r->catalog);
    tide_header_free(&r->header);
    tide_psf_free(&r->psf);
    tide_apcorr_free(&r->apcorr);
    tide_image_free(NULL, &r->back_map);
    tide_image_free(NULL, &r->rms_map);
    tide_wcs_free(r->wcs);
    memset(r, 0, sizeof *r);
}
