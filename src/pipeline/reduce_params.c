/* reduce_params.c — the pipeline's parameters: defaults, the configuration's processing keys
 * and the frame's instrument values, and their check. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tide/reduce.h"
#include "tide/status.h"

void tide_pipeline_params_default(tide_pipeline_params *p) {
    memset(p, 0, sizeof *p);
    /* Gain unknown until the frame or the configuration says: the noise comes from the data
     * and there is no Poisson term (Source Extractor's GAIN 0), so the result does not depend
     * on the units of the pixels. */
    p->gain = 0.0;
    p->rdnoise = 0.0;
    p->saturate = NAN;
    p->bias = 0.0;
    p->ncombine = 1;
    p->cosmetics = 1;
    tide_cosmetics_params_default(&p->cos);
    tide_bkg_params_default(&p->bkg);
    p->noise = TIDE_NOISE_MEASURED;
    p->fwhm_guess = 3.0;
    p->refine_fwhm = 1;
    tide_detect_params_default(&p->det);
    p->psf = 1;
    tide_psf_params_default(&p->psfp);
    p->naper = 3;
    p->aper_radii[0] = 3.0;
    p->aper_radii[1] = 5.0;
    p->aper_radii[2] = 8.0;
    tide_aper_params_default(&p->aper);
    /* Saturated and bleed pixels keep their light in the sums (as in Source Extractor): the
     * FLAGS say the source is saturated. Defects that are not sky are excluded, and the flux
     * is scaled for the excluded area (sep's default). */
    p->aper.mask_bits = TIDE_MASK_NODATA | TIDE_MASK_BAD | TIDE_MASK_HOT | TIDE_MASK_COLD |
                        TIDE_MASK_COSMIC | TIDE_MASK_USER;
    p->aper.mask_correct = 1;
    tide_kron_params_default(&p->kron);
    p->kron.aper = p->aper;
    tide_psffit_params_default(&p->psffit);
    p->psffit.mask_bits = p->aper.mask_bits;
    tide_apcorr_params_default(&p->apcorr);
    p->apcorr.aper = p->aper;
    p->keep_maps = 0;
}

/* A processing key's value when it is set; leaves *out alone otherwise. */
static int cfg_dbl(const tide_config *cfg, const char *key, double *out) {
    if (!tide_config_is_set(cfg, key))
        return 0;
    return tide_config_get_dbl(cfg, key, out);
}

static int cfg_int(const tide_config *cfg, const char *key, int64_t *out) {
    if (!tide_config_is_set(cfg, key))
        return 0;
    return tide_config_get_int(cfg, key, out);
}

int tide_pipeline_params_from_config(tide_pipeline_params *p, const tide_config *cfg,
                                     const tide_instrument *inst) {
    if (!p)
        return tide_error(TIDE_E_INVAL, "pipeline parameters: NULL");
    int st = 0;
    if (cfg) {
        int64_t v = 0;
        double d = 0;
        if (tide_config_is_set(cfg, "processing.back_size") &&
            !(st = cfg_int(cfg, "processing.back_size", &v)))
            p->bkg.mesh_w = p->bkg.mesh_h = v;
        if (!st && tide_config_is_set(cfg, "processing.back_filtersize") &&
            !(st = cfg_int(cfg, "processing.back_filtersize", &v)))
            p->bkg.filter_w = p->bkg.filter_h = (int)v;
        if (!st && tide_config_is_set(cfg, "processing.detect_thresh") &&
            !(st = cfg_dbl(cfg, "processing.detect_thresh", &d)))
            p->det.thresh = d;
        if (!st && tide_config_is_set(cfg, "processing.detect_minarea") &&
            !(st = cfg_int(cfg, "processing.detect_minarea", &v)))
            p->det.minarea = v;
        if (!st && tide_config_is_set(cfg, "processing.deblend_nthresh") &&
            !(st = cfg_int(cfg, "processing.deblend_nthresh", &v)))
            p->det.deblend_nthresh = (int)v;
        if (!st && tide_config_is_set(cfg, "processing.deblend_cont") &&
            !(st = cfg_dbl(cfg, "processing.deblend_cont", &d)))
            p->det.deblend_mincont = d;
        if (!st && tide_config_is_set(cfg, "processing.fwhm_guess") &&
            !(st = cfg_dbl(cfg, "processing.fwhm_guess", &d)))
            p->fwhm_guess = d;
        if (!st && tide_config_is_set(cfg, "processing.psf_stamp") &&
            !(st = cfg_int(cfg, "processing.psf_stamp", &v)))
            p->psfp.stamp = (int)(v | 1); /* odd */
        if (!st && tide_config_is_set(cfg, "processing.psf_nstars") &&
            !(st = cfg_int(cfg, "processing.psf_nstars", &v)))
            p->psfp.max_stars = (int)(v > 100000 ? 100000 : v);
        if (!st && tide_config_is_set(cfg, "processing.psf_neigen") &&
            !(st = cfg_int(cfg, "processing.psf_neigen", &v)))
            p->psfp.k = (int)(v > TIDE_PSF_MAX_K ? TIDE_PSF_MAX_K : v);
        if (!st && tide_config_is_set(cfg, "processing.aper_radii")) {
            const double *r = NULL;
            int n = 0;
            st = tide_config_get_array(cfg, "processing.aper_radii", &r, &n);
            if (!st && n > TIDE_PIPELINE_MAX_APER)
                st = tide_error(TIDE_E_RANGE,
                                "processing.aper_radii: %d radii, at most %d are allowed", n,
                                TIDE_PIPELINE_MAX_APER);
            if (!st) {
                p->naper = n;
                for (int i = 0; i < n; i++)
                    p->aper_radii[i] = r[i];
            }
        }
        if (!st && tide_config_is_set(cfg, "processing.clean_cosmics")) {
            int b = 1;
            if (!(st = tide_config_get_bool(cfg, "processing.clean_cosmics", &b)))
                p->cos.cosmic = b;
        }
        if (!st && tide_config_is_set(cfg, "processing.cr_sigma") &&
            !(st = cfg_dbl(cfg, "processing.cr_sigma", &d)))
            p->cos.sigclip = d;
        if (st)
            return st;
    }
    if (inst) {
        if (inst->source[TIDE_INST_GAIN] != TIDE_INST_MISSING && isfinite(inst->gain))
            p->gain = inst->gain;
        if (inst->source[TIDE_INST_RDNOISE] != TIDE_INST_MISSING && isfinite(inst->rdnoise))
            p->rdnoise = inst->rdnoise;
        if (inst->source[TIDE_INST_SATURATE] != TIDE_INST_MISSING && isfinite(inst->saturate))
            p->saturate = inst->saturate;
        if (inst->source[TIDE_INST_NCOMBINE] != TIDE_INST_MISSING && inst->ncombine >= 1)
            p->ncombine = (int)(inst->ncombine > 1000000 ? 1000000 : inst->ncombine);
    }
    return 0;
}

int tide_pipeline_params_check(const tide_pipeline_params *p) {
    if (!p)
        return tide_error(TIDE_E_INVAL, "pipeline parameters: NULL");
    if (!(p->gain >= 0) || !isfinite(p->gain))
        return tide_error(TIDE_E_INVAL, "gain must be > 0 e-/ADU, or 0 when unknown (got %g)",
                          p->gain);
    if (p->gain == 0 && p->noise == TIDE_NOISE_MODEL)
        return tide_error(TIDE_E_INVAL, "the model noise needs the gain: the frame has no GAIN "
                                        "and camera.gain is not set (set it, or use the "
                                        "measured noise)");
    if (!(p->rdnoise >= 0) || !isfinite(p->rdnoise))
        return tide_error(TIDE_E_INVAL, "rdnoise must be >= 0 e- (got %g)", p->rdnoise);
    if (!isfinite(p->bias))
        return tide_error(TIDE_E_INVAL, "bias must be finite (got %g)", p->bias);
    if (p->ncombine < 1)
        return tide_error(TIDE_E_INVAL, "ncombine must be >= 1 (got %d)", p->ncombine);
    if (!(p->fwhm_guess > 0) || !isfinite(p->fwhm_guess) || p->fwhm_guess > 100)
        return tide_error(TIDE_E_INVAL, "fwhm_guess must be in (0, 100] pixels (got %g)",
                          p->fwhm_guess);
    if (p->naper < 1 || p->naper > TIDE_PIPELINE_MAX_APER)
        return tide_error(TIDE_E_INVAL, "need 1 to %d aperture radii (got %d)",
                          TIDE_PIPELINE_MAX_APER, p->naper);
    for (int i = 0; i < p->naper; i++)
        if (!(p->aper_radii[i] > 0) || !isfinite(p->aper_radii[i]) || p->aper_radii[i] > 1000)
            return tide_error(TIDE_E_INVAL,
                              "aperture radius %d must be in (0, 1000] pixels "
                              "(got %g)",
                              i + 1, p->aper_radii[i]);
    if (p->noise != TIDE_NOISE_MEASURED && p->noise != TIDE_NOISE_MODEL)
        return tide_error(TIDE_E_INVAL, "noise source %d is neither measured nor model",
                          (int)p->noise);
    if (!isnan(p->saturate) && !(p->saturate > 0))
        return tide_error(TIDE_E_INVAL, "saturate must be > 0 ADU or NaN (got %g)", p->saturate);
    return 0;
}
