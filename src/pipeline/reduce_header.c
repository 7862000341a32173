/* reduce_header.c — the catalog header: how the frame was reduced and what was found
 * (reduce.h lists the keys). Only values that the same frame and options reproduce go in:
 * no timings, no dates, so catalogs compare byte for byte between runs. */
#include <math.h>
#include <stdio.h>

#include "reduce_internal.h"
#include "tide/status.h"

/* Set a real key only when the value is finite (FITS has no NaN). */
static int set_dbl(tide_header *h, const char *key, double v, const char *comment) {
    return isfinite(v) ? tide_header_set_dbl(h, key, v, comment) : 0;
}

int tide_pipe_header_build(tide_ctx *ctx, const tide_pipeline_params *p,
                           const tide_pipeline_result *r, int64_t width, int64_t height,
                           tide_header *h) {
    int st = 0;
#define T(call)                                                                                    \
    do {                                                                                           \
        if (!st)                                                                                   \
            st = (call);                                                                           \
    } while (0)
    T(tide_header_set_str(h, "TIDEVERS", TIDE_VERSION_STRING, "tide version"));
    T(tide_header_set_str(h, "BACKEND", tide_backend_name(ctx->backend), "compute backend"));
    T(tide_header_set_str(h, "DEVICE", ctx->device_name, "compute device"));
    if (p->source[0]) {
        char src[69];
        snprintf(src, sizeof src, "%s", p->source);
        T(tide_header_set_str(h, "FRAME", src, "reduced frame"));
    }
    T(tide_header_set_int(h, "IMAGEW", width, "frame width, pixels"));
    T(tide_header_set_int(h, "IMAGEH", height, "frame height, pixels"));
    T(tide_header_set_dbl(h, "GAIN", p->gain, "gain used, e-/ADU (0: unknown, no Poisson)"));
    T(tide_header_set_dbl(h, "RDNOISE", p->rdnoise, "read noise used, e-"));
    T(set_dbl(h, "SATURATE", p->saturate, "saturation level used, ADU"));
    T(tide_header_set_int(h, "NCOMBINE", p->ncombine, "frames averaged into the frame"));
    T(tide_header_set_dbl(h, "BIAS", p->bias, "zero level still in the frame, ADU"));
    /* background */
    T(set_dbl(h, "SKYLEVEL", r->bkg.global_back, "median background, ADU"));
    T(set_dbl(h, "SKYRMS", r->bkg.global_rms, "median background RMS, ADU"));
    T(tide_header_set_int(h, "BACKSIZE", p->bkg.mesh_w, "background mesh, pixels"));
    T(tide_header_set_int(h, "BACKFILT", p->bkg.filter_w, "background filter, meshes"));
    T(tide_header_set_str(h, "NOISESRC", p->noise == TIDE_NOISE_MODEL ? "MODEL" : "MEASURED",
                          "sky variance of the flux errors"));
    /* detection */
    T(tide_header_set_dbl(h, "DETTHRES", p->det.thresh, "detection threshold, S/N"));
    T(tide_header_set_int(h, "DETMINAR", p->det.minarea, "minimum area, pixels"));
    T(tide_header_set_int(h, "DEBNTHR", p->det.deblend_nthresh, "deblending levels"));
    T(tide_header_set_dbl(h, "DEBMINC", p->det.deblend_mincont, "deblending contrast"));
    T(tide_header_set_int(h, "NFIRST", r->n_first, "sources of the first (Gaussian) pass"));
    T(tide_header_set_int(h, "NDETECT", r->n_sources, "sources in the catalog"));
    T(tide_header_set_int(h, "NFIRSTKP", r->n_carried, "of which kept from the first pass"));
    /* PSF */
    T(tide_psf_to_header(&r->psf, h));
    T(tide_header_set_bool(h, "PSFFALLB", r->psf_fallback,
                           "T: PSF model failed (PSFFBWHY): Gaussian"));
    /* photometry */
    T(tide_header_set_int(h, "NAPER", p->naper, "aperture radii"));
    for (int k = 0; k < p->naper && !st; k++) {
        char key[16];
        snprintf(key, sizeof key, "APER%02d", k + 1);
        T(tide_header_set_dbl(h, key, p->aper_radii[k], "FLUX_APER radius, pixels"));
    }
    T(tide_header_set_bool(h, "APCFALLB", !r->has_apcorr,
                           "T: too few stars for aperture corrections"));
    if (r->has_apcorr && !st) {
        const tide_apcorr_model *m = &r->apcorr;
        const double xc = 0.5 * (double)(width - 1), yc = 0.5 * (double)(height - 1);
        T(set_dbl(h, "APCREF", m->r_ref, "aperture-correction reference radius, px"));
        T(tide_header_set_int(h, "APCNSTAR", m->nstars_corr, "aperture-correction stars"));
        T(tide_header_set_int(h, "APCNLAW", m->nstars_law, "optimal-radius law stars"));
        T(set_dbl(h, "APCLAWA", m->law_a, "log10 r_opt = A log10 SNR + B: A"));
        T(set_dbl(h, "APCLAWB", m->law_b, "log10 r_opt = A log10 SNR + B: B"));
        T(tide_header_set_bool(h, "APCLAWFB", m->law_fallback,
                               "T: r_opt from the mean growth curve"));
        for (int k = 0; k < p->naper && !st; k++) {
            double c = NAN, ce = NAN;
            if (tide_apcorr_eval(m, p->aper_radii[k], xc, yc, &c, &ce)) {
                tide_error_clear(); /* a radius outside the model's grid: no key */
                continue;
            }
            char key[16];
            snprintf(key, sizeof key, "APCOR%02d", k + 1);
            T(set_dbl(h, key, c, "F(APERnn)/F(APCREF) at the frame centre"));
        }
        static const int snrs[] = {10, 30, 100, 300, 1000};
        for (int k = 0; k < 5 && !st; k++) {
            char key[16], com[64];
            snprintf(key, sizeof key, "ROPT%d", snrs[k]);
            snprintf(com, sizeof com, "S/N-optimal radius at detection S/N %d, px", snrs[k]);
            T(set_dbl(h, key, tide_apcorr_radius(m, snrs[k]), com));
        }
    }
    /* cosmetics */
    T(tide_header_set_int(h, "NSATPIX", r->cos.n_saturated, "saturated pixels"));
    T(tide_header_set_int(h, "NBLEED", r->cos.n_bleed, "bleed-trail pixels"));
    T(tide_header_set_int(h, "NHOTPIX", r->cos.n_hot, "hot pixels"));
    T(tide_header_set_int(h, "NCOLDPIX", r->cos.n_cold, "cold pixels"));
    T(tide_header_set_int(h, "NCOSMIC", r->cos.n_cosmic, "cosmic-ray pixels"));
    T(set_dbl(h, "COSPSFFW", p->cosmetics ? p->cos.psf_fwhm : 0.0,
              "px: star-like hot/CR candidates released; 0 = off"));
#undef T
    return st;
}
