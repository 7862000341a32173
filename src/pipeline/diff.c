/* diff.c — tide_diff_run: stage order, memory plan and outputs of the difference pipeline
 * (diff.h). The stages do the science; this file decides what runs when, on which grid,
 * where each image lives and what comes back to the host. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"
#include "diff_side.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"

void tide_diff_params_default(tide_diff_params *p) {
    memset(p, 0, sizeof *p);
    p->grid = TIDE_DIFF_GRID_TEMPLATE;
    p->fwhm_guess = 3.0;
    p->sat_sci = p->sat_tmpl = NAN;
    tide_bkg_params_default(&p->bkg);
    p->cosmetics = 1;
    tide_cosmetics_params_default(&p->cos);
    tide_reproject_params_default(&p->reproj);
    tide_subtract_params_default(&p->sub);
    tide_candidate_params_default(&p->cand);
    tide_dipole_params_default(&p->dip);
    p->dip.model = TIDE_DIPOLE_PSF; /* with the difference's PSF: see diff.h */
    p->stamp = 21;
    p->max_fit = 100000;
    p->keep_stamps = 16;
    p->calibrate_var = 1;
    p->reject_bits =
        TIDE_MASK_NODATA | TIDE_MASK_SATURATED | TIDE_MASK_BLEED | TIDE_MASK_EDGE | TIDE_MASK_BAD;
}

void tide_diff_result_free(tide_diff_result *r) {
    if (!r)
        return;
    tide_image_free(NULL, &r->diff);
    tide_image_free(NULL, &r->matched);
    tide_header_free(&r->header);
    tide_table_free(&r->cands);
    free(r->kernel);
    free(r->kernel_grid);
    free(r->stamps);
    free(r->models);
    memset(r, 0, sizeof *r);
}

/* The PSF stamp of the fits from the unconvolved frame u (tide_diffp_psf_stamp), as a job
 * beside the subtraction (diff_side.h). It cannot fail: without a model the fits use a
 * Gaussian. */
typedef struct psf_job {
    const tide_diffp_frame *u;
    float *psf;
    int side;
} psf_job;

static int psf_job_run(tide_ctx *ctx, void *arg) {
    psf_job *j = arg;
    tide_timer tp;
    const int ts = tide_timer_start(ctx, &tp, "diff.psf");
    j->psf = tide_diffp_psf_stamp(ctx, j->u, j->u->fwhm_out, &j->side);
    if (!ts)
        tide_timer_stop(ctx, &tp, NULL);
    return tide_sync(ctx);
}

/* Everything a run holds; released in one place. */
typedef struct diff_run {
    tide_ctx *ctx;
    tide_diff_params p; /* the run's own copy: the stages complete it */
    tide_diffp_frame sci, tmpl;
    tide_image moved; /* the reprojected frame on the output grid */
    tide_subtract_result sr;
    tide_table cands;
    float *psf; /* PSF stamp of the fits (host), or NULL: a Gaussian */
    int psf_side;
    int tmpl_borrowed; /* tmpl is a prepared template's frame: read, never freed here */
    /* the output grid */
    int on_tmpl;        /* the template's grid (or north-up), not the science frame's */
    const tide_wcs *gw; /* its WCS */
    tide_wcs *grid_wcs; /* owned, for the north-up grid only */
    int64_t W, H;       /* its size */
    double gscale;      /* its pixel scale, arcsec */
    size_t helper_peak; /* the preparation helper's peak device bytes */
} diff_run;

/* The frames of a run: the science frame and the template frame (tmpl, tmpl_hdr) or a
 * prepared template (pt). */
typedef struct diff_inputs {
    const tide_image *sci;
    const tide_header *sci_hdr;
    const tide_image *tmpl;
    const tide_header *tmpl_hdr;
    const tide_diff_template *pt;
    int64_t tw, th;          /* the template's size */
    const tide_header *thdr; /* the template's header */
} diff_inputs;

static void run_release(diff_run *r) {
    tide_diffp_frame_free(r->ctx, &r->sci);
    if (!r->tmpl_borrowed)
        tide_diffp_frame_free(r->ctx, &r->tmpl);
    tide_image_free(r->ctx, &r->moved);
    tide_subtract_result_free(r->ctx, &r->sr);
    tide_table_free(&r->cands);
    free(r->psf);
    tide_wcs_free(r->grid_wcs);
}

#define STAGE(ctx, name, call)                                                                     \
    do {                                                                                           \
        tide_timer tm_;                                                                            \
        int ts_ = tide_timer_start((ctx), &tm_, name);                                             \
        st = ts_ ? ts_ : (call);                                                                   \
        if (!ts_) {                                                                                \
            int te_ = tide_timer_stop((ctx), &tm_, NULL);                                          \
            if (!st)                                                                               \
                st = te_;                                                                          \
        }                                                                                          \
    } while (0)

static int check_params(const tide_diff_params *p) {
    if (p->grid != TIDE_DIFF_GRID_TEMPLATE && p->grid != TIDE_DIFF_GRID_SCIENCE &&
        p->grid != TIDE_DIFF_GRID_NORTHUP)
        return tide_error(TIDE_E_INVAL, "diff: unknown output grid %d", (int)p->grid);
    if (p->stamp < 5 || p->stamp > 255 || !(p->stamp & 1))
        return tide_error(TIDE_E_INVAL, "diff: the fit stamp must be odd, 5..255 px (got %d)",
                          p->stamp);
    if (p->max_fit < 0 || p->keep_stamps < 0)
        return tide_error(TIDE_E_INVAL, "diff: max_fit and keep_stamps must be >= 0");
    if (!isfinite(p->fwhm_sci) || !isfinite(p->fwhm_tmpl) || p->fwhm_sci > 200 ||
        p->fwhm_tmpl > 200)
        return tide_error(TIDE_E_INVAL, "diff: FWHMs must be finite and < 200 px");
    return 0;
}

/* Header of the outputs: the output frame's own cards with the output grid's WCS rewritten
 * and the run's summary. */
static int make_header(const tide_header *grid_hdr, const tide_wcs *w, const diff_run *run,
                       const tide_diff_params *p, tide_diff_result *out) {
    int st = tide_header_copy(&out->header, grid_hdr);
    if (!st)
        st = tide_wcs_to_header(w, &out->header);
    tide_header *h = &out->header;
    if (!st)
        st = tide_header_set_str(h, "DIFFSCI", p->sci_name, "science frame");
    if (!st)
        st = tide_header_set_str(h, "DIFFTMPL", p->tmpl_name, "template frame");
    if (!st)
        st = tide_header_set_str(h, "DIFFGRID",
                                 p->grid == TIDE_DIFF_GRID_TEMPLATE
                                     ? "TEMPLATE"
                                     : (p->grid == TIDE_DIFF_GRID_SCIENCE ? "SCIENCE" : "NORTHUP"),
                                 "pixel grid of the difference");
    if (!st)
        st = tide_header_set_dbl(h, "FWHMSCI", out->fwhm_sci, "[pixel] science FWHM, output grid");
    if (!st)
        st = tide_header_set_dbl(h, "FWHMTMPL", out->fwhm_tmpl,
                                 "[pixel] template FWHM, output grid");
    if (!st)
        st = tide_header_set_dbl(h, "KSUM", out->kernel_sum, "kernel sum (flux ratio)");
    if (!st)
        st = tide_header_set_dbl(h, "KCHI2", out->chi2, "chi2 of the kernel fit");
    if (!st)
        st = tide_header_set_int(h, "KNFIT", out->nfit_pix, "pixels in the kernel fit");
    if (!st)
        st = tide_header_set_dbl(h, "KCOND", run->sr.cond, "condition of the kernel system");
    if (!st)
        st = tide_header_set_int(h, "KCONV", out->convolved, "convolved: 1 template, 2 science");
    if (!st)
        st = tide_header_set_int(h, "KHALF", run->sr.kernel_half, "[pixel] kernel half-width");
    if (!st)
        st =
            tide_header_set_int(h, "KSPDEG", run->sr.spatial_degree_stars, "kernel spatial degree");
    if (!st)
        st = tide_header_set_dbl(h, "SKYSCI", run->sci.sky, "[adu] science background");
    if (!st)
        st = tide_header_set_dbl(h, "SKYTMPL", run->tmpl.sky, "[adu] template background");
    if (!st)
        st = tide_header_set_int(h, "NCAND", out->cands.nrows, "candidates");
    if (!st)
        st = tide_header_set_int(h, "NFIT", out->nfitted, "candidates fitted");
    if (!st)
        st = tide_header_set_dbl(h, "VARSCALE", out->var_scale,
                                 "variance scaled to the noise at the PSF scale");
    if (!st)
        st = tide_header_set_int(h, "NREJECT", out->nrejected,
                                 "candidates dropped on masked pixels");
    return st;
}

/* The kernel at the centre and on a 3 × 3 grid, on the host. */
static int kernels(const tide_subtract_result *sr, tide_diff_result *out) {
    const int kw = sr->kernel_w;
    if (kw < 1 || !sr->kernel_center)
        return tide_error(TIDE_E_INTERNAL, "diff: the subtraction returned no kernel");
    const size_t kn = (size_t)kw * (size_t)kw;
    out->kernel_w = kw;
    out->kernel = malloc(kn * sizeof(float));
    out->kernel_grid = malloc(9 * kn * sizeof(float));
    if (!out->kernel || !out->kernel_grid)
        return tide_error(TIDE_E_NOMEM, "diff: out of memory for the kernels");
    memcpy(out->kernel, sr->kernel_center, kn * sizeof(float));
    static const double f[3] = {0.1, 0.5, 0.9};
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++) {
            const int st = tide_subtract_kernel_at(sr, f[i] * (double)(sr->width - 1),
                                                   f[j] * (double)(sr->height - 1),
                                                   out->kernel_grid + (size_t)(j * 3 + i) * kn);
            if (st)
                return st;
        }
    return 0;
}

/* The difference and the matched image into the host result. On the CPU they are host
 * images already: the result takes them over and the run keeps views (no copy, no fresh
 * pages). On CUDA the copies start here and overlap the candidate search, which reads only
 * the device images; download_wait finishes them. The host planes come from the block cache
 * (image.h), so in a warm process they are page-locked memory reused from the previous run:
 * no page faults, and the copies run by DMA on a side stream. (Faulting fresh memory in on
 * a helper thread during the GPU work was tried: on the GPU machine the faults then stalled
 * the host's own work — the subtraction's fit went from 3 to ~90 ms.) */
static int download_start(tide_ctx *ctx, diff_run *run, tide_diff_result *out) {
    if (run->sr.diff.location == TIDE_HOST && run->sr.matched.location == TIDE_HOST) {
        out->diff = run->sr.diff;
        out->matched = run->sr.matched;
        run->sr.diff.owns = 0;
        run->sr.matched.owns = 0;
        return 0;
    }
    const tide_image *src[2] = {&run->sr.diff, &run->sr.matched};
    tide_image *dst[2] = {&out->diff, &out->matched};
    int st = 0;
    for (int k = 0; k < 2 && !st; k++) {
        const int planes = (src[k]->mask ? TIDE_IMAGE_MASK : 0) |
                           (src[k]->var ? TIDE_IMAGE_VAR : 0) | TIDE_IMAGE_UNINIT;
        st = tide_image_alloc(ctx, dst[k], src[k]->width, src[k]->height, TIDE_HOST, planes);
        if (!st)
            st = tide_image_download_start(ctx, dst[k], src[k]);
    }
    return st;
}

/* Policy: the run's parameters from the caller's (NULL: defaults), with the frames' names,
 * checked. A prepared template brings its own name and is the output grid. */
static int run_params(const tide_diff_params *pp, const tide_diff_template *pt,
                      tide_diff_params *p) {
    if (pp)
        *p = *pp;
    else
        tide_diff_params_default(p);
    if (!p->sci_name[0])
        snprintf(p->sci_name, sizeof p->sci_name, "science");
    if (pt) /* the template's own settings */
        snprintf(p->tmpl_name, sizeof p->tmpl_name, "%s", pt->name);
    if (!p->tmpl_name[0])
        snprintf(p->tmpl_name, sizeof p->tmpl_name, "template");
    int st = check_params(p);
    if (!st && pt && p->grid != TIDE_DIFF_GRID_TEMPLATE)
        st = tide_error(TIDE_E_INVAL,
                        "diff: a prepared template (%s) is the output grid; "
                        "the science or north-up grid needs the template frame",
                        pt->name);
    return st;
}

/* Stages 1-3: WCS, background, variance, FWHM of each frame on its own grid. The WCS and the
 * overlap are checked before the expensive work; the frames' preparation then takes the WCS
 * over. Both frames are prepared at once (tide_diffp_prepare_pair), or the science frame
 * alone against a prepared template. */
static int stage_prepare(diff_run *run, const diff_inputs *in) {
    tide_ctx *ctx = run->ctx;
    tide_diff_params *p = &run->p;
    const tide_diff_template *pt = in->pt;
    tide_wcs *swcs = NULL, *twcs = NULL;
    int st = tide_wcs_from_header(in->sci_hdr, p->sci_name, &swcs);
    if (!st && !pt)
        st = tide_wcs_from_header(in->tmpl_hdr, p->tmpl_name, &twcs);
    if (!st)
        st = tide_diffp_check_overlap(swcs, in->sci->width, in->sci->height, p->sci_name,
                                      pt ? pt->f.wcs : twcs, in->tw, in->th, p->tmpl_name);
    if (st) {
        tide_wcs_free(swcs);
        tide_wcs_free(twcs);
        if (st == TIDE_E_NOTFOUND)
            st = tide_error_prefix(st, "tide diff needs the celestial WCS of both frames: ");
        return st;
    }
    /* the template stays on its grid (the default): its sky noise for the subtraction is
     * measured in its preparation, beside the science frame's */
    const tide_subtract_params *tsky = p->grid == TIDE_DIFF_GRID_TEMPLATE ? &p->sub : NULL;
    const tide_diffp_input fin[2] = {{in->sci, in->sci_hdr, swcs, p->sci_name, p->gain_sci,
                                      p->sat_sci, p->fwhm_sci, NULL, p->config},
                                     {in->tmpl, in->tmpl_hdr, twcs, p->tmpl_name, p->gain_tmpl,
                                      p->sat_tmpl, p->fwhm_tmpl, tsky, p->config}};
    const tide_cosmetics_params *cos = p->cosmetics ? &p->cos : NULL;
    if (pt) {
        st = tide_diffp_prepare_single(ctx, &fin[0], p->fwhm_guess, &p->bkg, cos, &run->sci);
        run->tmpl = pt->f;
        run->tmpl_borrowed = 1;
    } else {
        tide_diffp_frame *fr[2] = {&run->sci, &run->tmpl};
        st = tide_diffp_prepare_pair(ctx, fin, p->fwhm_guess, &p->bkg, cos, fr, &run->helper_peak);
    }
    if (st)
        return st;
    /* The subtraction's kernel degree follows the clean stars behind the FWHMs (subtract.h),
     * when both were measured. */
    const int tmpl_measured = pt ? !pt->fwhm_given : p->fwhm_tmpl <= 0;
    if (p->fwhm_sci <= 0 && tmpl_measured)
        p->sub.nstars = run->sci.nfwhm < run->tmpl.nfwhm ? run->sci.nfwhm : run->tmpl.nfwhm;
    return 0;
}

/* Frame @p f onto the output grid: its pixels, and its stars for the PSF model. */
static int reproject_frame(diff_run *run, tide_diffp_frame *f) {
    tide_ctx *ctx = run->ctx;
    int st = 0;
    STAGE(ctx, "diff.reproject",
          tide_reproject(ctx, &f->work, f->wcs, run->gw, run->W, run->H, &run->p.reproj,
                         &run->moved, NULL));
    if (st)
        return tide_error_prefix(st, "reprojecting %s: ", f->name);
    tide_image_free(ctx, &f->work); /* the frame is no longer needed on its own grid */
    f->work = run->moved;
    if (f->nstar > 0) {
        double *ra = malloc(sizeof(double) * (size_t)f->nstar);
        double *de = malloc(sizeof(double) * (size_t)f->nstar);
        if (!ra || !de || tide_wcs_pix2sky(f->wcs, f->nstar, f->star_x, f->star_y, ra, de) ||
            tide_wcs_sky2pix(run->gw, f->nstar, ra, de, f->star_x, f->star_y)) {
            f->nstar = 0; /* no PSF model then: Gaussian fits */
            tide_error_clear();
        }
        free(ra);
        free(de);
    }
    memset(&run->moved, 0, sizeof run->moved);
    f->fwhm_out = f->fwhm * (run->gscale > 0 ? f->scale / run->gscale : 1.0);
    return 0;
}

/* Stage 4: the output grid, and every frame not on it resampled onto it. */
static int stage_grid(diff_run *run, const diff_inputs *in, tide_diff_result *out) {
    const tide_diff_params *p = &run->p;
    run->on_tmpl = p->grid != TIDE_DIFF_GRID_SCIENCE;
    run->gw = run->on_tmpl ? run->tmpl.wcs : run->sci.wcs;
    run->W = run->on_tmpl ? in->tw : in->sci->width;
    run->H = run->on_tmpl ? in->th : in->sci->height;
    run->gscale = run->on_tmpl ? run->tmpl.scale : run->sci.scale;
    int st = 0;
    if (p->grid == TIDE_DIFF_GRID_NORTHUP) {
        const tide_wcs *ws[2] = {run->sci.wcs, run->tmpl.wcs};
        const int64_t ww[2] = {in->sci->width, in->tw}, hh[2] = {in->sci->height, in->th};
        tide_wcs_summary gs;
        st = tide_reproject_northup(ws, ww, hh, 2, &run->grid_wcs, &run->W, &run->H);
        if (!st)
            st = tide_wcs_summarize(run->grid_wcs, run->W, run->H, &gs);
        if (!st) {
            run->gw = run->grid_wcs;
            run->gscale = gs.scale_arcsec;
        }
    }
    tide_diffp_frame *frames[2] = {&run->sci, &run->tmpl};
    for (int k = 0; k < 2 && !st; k++) {
        if (frames[k]->wcs == run->gw)
            frames[k]->fwhm_out = frames[k]->fwhm;
        else
            st = reproject_frame(run, frames[k]);
    }
    out->fwhm_sci = run->sci.fwhm_out;
    out->fwhm_tmpl = run->tmpl.fwhm_out;
    return st;
}

/* Stage 5: PSF-matched subtraction, and beside it (overlap: a second stream and thread) the
 * PSF model of the fits: the difference's PSF is that of the frame the subtraction leaves
 * unconvolved. */
static int stage_subtract(diff_run *run, tide_diff_result *out) {
    tide_ctx *ctx = run->ctx;
    tide_diff_params *p = &run->p;
    psf_job pj = {NULL, NULL, 0};
    tide_diffp_side side;
    int st = 0;
    int psf_beside = p->dip.model == TIDE_DIPOLE_PSF && !p->dip.psf;
    if (psf_beside) {
        pj.u = tide_subtract_convolved(&p->sub, out->fwhm_sci, out->fwhm_tmpl) ==
                       TIDE_SUB_CONVOLVE_SCIENCE
                   ? &run->tmpl
                   : &run->sci;
        st = tide_sync(ctx); /* the frame is complete before another stream reads it */
        psf_beside = !st;
        if (psf_beside)
            tide_diffp_side_start(ctx, &side, psf_job_run, &pj);
    }
    /* the template's sky noise from its preparation, when it is still that very image */
    if (run->tmpl.sub_sky_known && run->tmpl.wcs == run->gw &&
        run->tmpl.sub_sky_bits == p->sub.mask_bits) {
        p->sub.tmpl_sky_known = 1;
        p->sub.tmpl_sky = run->tmpl.sub_sky;
        p->sub.tmpl_var = run->tmpl.sub_var;
    }
    if (!st) {
        STAGE(ctx, "diff.subtract",
              tide_subtract(ctx, &run->sci.work, &run->tmpl.work, out->fwhm_sci, out->fwhm_tmpl,
                            &p->sub, &run->sr));
        if (st)
            tide_error_prefix(st, "subtracting %s from %s: ", p->tmpl_name, p->sci_name);
    }
    if (psf_beside) { /* also after an error: the job reads the frames freed below */
        const int pst = tide_diffp_side_join(&side, NULL);
        if (!st)
            st = pst;
        run->psf = pj.psf;
        run->psf_side = pj.side;
    }
    if (st)
        return st;
    tide_image_free(ctx, &run->sci.work);
    if (!run->tmpl_borrowed)
        tide_image_free(ctx, &run->tmpl.work);
    out->kernel_sum = run->sr.kernel_sum;
    out->chi2 = run->sr.chi2;
    out->nfit_pix = run->sr.nfit;
    out->convolved = run->sr.convolved;
    return kernels(&run->sr, out);
}

/* The noise of the difference is correlated (resampling, convolution), so the propagated
 * per-pixel variance understates the noise of a PSF-sized sum and the matched-filter S/N
 * would be too high: the variance is scaled to the measured noise at that scale, where the
 * difference lives, before it is downloaded (so the host copy needs no pass). */
static int stage_noise(diff_run *run, double fwhm_d, tide_diff_result *out) {
    tide_ctx *ctx = run->ctx;
    if (!run->p.calibrate_var)
        return 0;
    tide_timer tn;
    tide_timer_start(ctx, &tn, "diff.noise");
    out->var_scale = tide_diffp_noise_scale(ctx, &run->sr.diff, fwhm_d);
    const int st = tide_diffp_scale_var(ctx, &run->sr.diff, (float)out->var_scale);
    tide_timer_stop(ctx, &tn, NULL);
    tide_log(&ctx->log, TIDE_LOG_INFO, "diff",
             "difference noise at the PSF scale: variance scaled by %.4f", out->var_scale);
    return st;
}

/* Stages 6-7, overlapping the download that download_start began: candidates, with the
 * matched PSF (the broader of the two), on the device images while the copies run; then,
 * the copies finished (also after an error: they read the run's device images), the
 * screen on the host mask, stamps and fits. @p st is the run's status so far. */
static int stage_candidates(diff_run *run, int st, double fwhm_d, tide_diff_result *out) {
    tide_ctx *ctx = run->ctx;
    tide_diff_params *p = &run->p;
    if (!st) {
        p->cand.det.fwhm_guess = fwhm_d;
        STAGE(ctx, "diff.candidates",
              tide_diff_candidates(ctx, &run->sr.diff, &p->cand, &run->cands));
    }
    tide_timer tw;
    tide_timer_start(ctx, &tw, "diff.download_wait");
    const int wst = tide_download_wait(ctx);
    tide_timer_stop(ctx, &tw, NULL);
    if (!st)
        st = wst;
    if (!st)
        st = tide_diffp_screen(&out->diff, p->reject_bits, &run->cands, &out->nrejected);
    if (!st)
        STAGE(ctx, "diff.fit",
              tide_diffp_fit(ctx, &run->sr.diff, &run->cands, run->gw, p,
                             run->sr.convolved == TIDE_SUB_CONVOLVE_SCIENCE ? out->fwhm_tmpl
                                                                            : out->fwhm_sci,
                             run->psf, run->psf_side, out));
    if (!st)
        st = tide_sync(ctx);
    return st;
}

/* Stage order of a run against the template frame (tmpl, tmpl_hdr) or a prepared
 * template (pt). */
static int run_pair(tide_ctx *ctx, const tide_image *sci, const tide_header *sci_hdr,
                    const tide_image *tmpl, const tide_header *tmpl_hdr,
                    const tide_diff_template *pt, const tide_diff_params *pp,
                    tide_diff_result *out) {
    if (!ctx || !sci || !(tmpl || pt) || !out)
        return tide_error(TIDE_E_INVAL, "diff: NULL argument");
    memset(out, 0, sizeof *out);
    tide_header_init(&out->header);
    tide_table_init(&out->cands);
    diff_run run;
    memset(&run, 0, sizeof run);
    run.ctx = ctx;
    tide_table_init(&run.cands);
    int st = run_params(pp, pt, &run.p);
    if (st)
        return st;
    const diff_inputs in = {sci,
                            sci_hdr,
                            tmpl,
                            tmpl_hdr,
                            pt,
                            pt ? pt->width : tmpl->width,
                            pt ? pt->height : tmpl->height,
                            pt ? &pt->header : tmpl_hdr};
    const double t0 = tide_now();
    tide_device_reset_peak(ctx);
    st = stage_prepare(&run, &in);
    if (st) {
        run_release(&run);
        return st;
    }
    st = stage_grid(&run, &in, out);
    if (!st)
        st = stage_subtract(&run, out);
    const double fwhm_d = fmax(out->fwhm_sci, out->fwhm_tmpl);
    out->var_scale = 1.0;
    if (!st)
        st = stage_noise(&run, fwhm_d, out);
    if (!st)
        STAGE(ctx, "diff.download", download_start(ctx, &run, out));
    st = stage_candidates(&run, st, fwhm_d, out);
    if (!st)
        STAGE(ctx, "diff.header",
              make_header(run.on_tmpl ? in.thdr : sci_hdr, run.gw, &run, &run.p, out));
    if (!st) {
        size_t cur = 0;
        tide_device_usage(ctx, &cur, &out->device_peak);
        out->device_peak += run.helper_peak; /* an upper bound: the peaks may not coincide */
        out->ms_total = 1e3 * (tide_now() - t0);
        tide_log(&ctx->log, TIDE_LOG_INFO, "diff",
                 "%lldx%lld: FWHM sci %.3f tmpl %.3f px, kernel sum %.5f, %lld candidates "
                 "(%lld fitted), %.1f ms",
                 (long long)run.W, (long long)run.H, out->fwhm_sci, out->fwhm_tmpl, out->kernel_sum,
                 (long long)out->cands.nrows, (long long)out->nfitted, out->ms_total);
    }
    run_release(&run);
    if (st)
        tide_diff_result_free(out);
    return st;
}

int tide_diff_run(tide_ctx *ctx, const tide_image *sci, const tide_header *sci_hdr,
                  const tide_image *tmpl, const tide_header *tmpl_hdr, const tide_diff_params *p,
                  tide_diff_result *out) {
    if (!tmpl)
        return tide_error(TIDE_E_INVAL, "diff: NULL template");
    return run_pair(ctx, sci, sci_hdr, tmpl, tmpl_hdr, NULL, p, out);
}

int tide_diff_run_template(tide_ctx *ctx, const tide_image *sci, const tide_header *sci_hdr,
                           const tide_diff_template *tmpl, const tide_diff_params *p,
                           tide_diff_result *out) {
    if (!tmpl)
        return tide_error(TIDE_E_INVAL, "diff: NULL prepared template");
    return run_pair(ctx, sci, sci_hdr, NULL, NULL, tmpl, p, out);
}
