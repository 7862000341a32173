/* psfphot.c — PSF-fit photometry at fixed positions, the algorithm once for both backends
 * (DESIGN §3). With a PSF model, the model itself (basis images + polynomial coefficients, a
 * few kB) goes to the backend and each source's local stamp is evaluated there, fused with
 * its linear fit (one block per source on the GPU): nothing per source runs on the host.
 * With caller-given stamps, they are copied in one batch and fitted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "aperture_internal.h"
#include "psfphot_kernels.h"
#include "tide/photometry.h"
#include "tide/psf.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

void tide_psffit_params_default(tide_psffit_params *p) {
    memset(p, 0, sizeof *p);
    p->mask_bits = 0xFFFFu;
    p->gain = 0.0;
    p->ncombine = 1;
    p->fit_radius = 0.0;
    p->fit_background = 0;
}

/* Both entry points: stamps (n * side²) given, or NULL and the model psf evaluated. */
static int run_fit(tide_ctx *ctx, const tide_image *sub, const tide_image *var, int64_t n,
                   const double *x, const double *y, int side, const float *stamps,
                   const struct tide_psf_model *psf, const tide_psffit_params *pin, double *flux,
                   double *fluxerr, double *chi2, int32_t *flags) {
    const char *who = "tide_psf_photometry";
    tide_psffit_params p;
    if (pin)
        p = *pin;
    else
        tide_psffit_params_default(&p);
    if (p.ncombine < 1)
        return tide_error(TIDE_E_INVAL, "%s: ncombine < 1", who);
    if (!var && !sub->var)
        return tide_error(TIDE_E_INVAL, "%s: a variance image is required for the weights", who);
    if (n == 0)
        return 0;

    tide_phot_mem m;
    tide_phot_mem_init(&m, ctx);
    tide_psffit_job job;
    memset(&job, 0, sizeof job);
    int st = tide_phot_planes(&m, who, sub, var, p.mask_bits, &job.im);
    job.n = n;
    job.side = side;
    job.gain_eff = p.gain > 0.0 ? p.gain * p.ncombine : 0.0;
    job.fit_radius = p.fit_radius;
    job.fit_bkg = p.fit_background;
    const size_t nb = sizeof(double) * (size_t)n;
    const void *kp;
    if (!st && !(st = tide_phot_mem_in(&m, x, nb, &kp)))
        job.x = kp;
    if (!st && !(st = tide_phot_mem_in(&m, y, nb, &kp)))
        job.y = kp;
    if (stamps) {
        if (!st &&
            !(st = tide_phot_mem_in(&m, stamps, sizeof(float) * (size_t)n * side * side, &kp)))
            job.stamps = kp;
    } else {
        job.nbasis = psf->nbasis;
        job.degree = psf->degree;
        job.ncoef = psf->ncoef;
        job.model_w = psf->width;
        job.model_h = psf->height;
        const size_t bb = sizeof(float) * (size_t)psf->nbasis * side * side;
        if (!st && !(st = tide_phot_mem_in(&m, psf->basis, bb, &kp)))
            job.basis = kp;
        if (!st && !(st = tide_phot_mem_in(&m, psf->coef,
                                           sizeof(double) * (size_t)psf->nbasis * psf->ncoef, &kp)))
            job.coef = kp;
    }
    void *o;
    if (!st && !(st = tide_phot_mem_out(&m, flux, nb, &o)))
        job.flux = o;
    if (!st && !(st = tide_phot_mem_out(&m, fluxerr, nb, &o)))
        job.fluxerr = o;
    if (!st && !(st = tide_phot_mem_out(&m, chi2, nb, &o)))
        job.chi2 = o;
    if (!st && !(st = tide_phot_mem_out(&m, flags, sizeof(int32_t) * n, &o)))
        job.flags = o;
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_psffit, &job);
    if (!st)
        st = tide_phot_mem_fetch(&m, flux, job.flux, nb);
    if (!st)
        st = tide_phot_mem_fetch(&m, fluxerr, job.fluxerr, nb);
    if (!st)
        st = tide_phot_mem_fetch(&m, chi2, job.chi2, nb);
    if (!st)
        st = tide_phot_mem_fetch(&m, flags, job.flags, sizeof(int32_t) * n);
    tide_phot_mem_free(&m);
    return st;
}

int tide_psf_photometry_stamps(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                               int64_t n, const double *x, const double *y, int side,
                               const float *stamps, const tide_psffit_params *p, double *flux,
                               double *fluxerr, double *chi2, int32_t *flags) {
    const char *who = "tide_psf_photometry";
    int st = tide_phot_check_common(who, ctx, sub, n, x, y);
    if (st)
        return st;
    if (side < 1 || !(side & 1))
        return tide_error(TIDE_E_INVAL, "%s: stamp side %d is not odd", who, side);
    if (n > 0 && (!stamps || !flux || !fluxerr))
        return tide_error(TIDE_E_INVAL, "%s: NULL stamps, flux or fluxerr", who);
    return run_fit(ctx, sub, var, n, x, y, side, stamps, NULL, p, flux, fluxerr, chi2, flags);
}

int tide_psf_photometry_ex(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                           const struct tide_psf_model *psf, int64_t n, const double *x,
                           const double *y, const tide_psffit_params *p, double *flux,
                           double *fluxerr, double *chi2, int32_t *flags) {
    const char *who = "tide_psf_photometry";
    int st = tide_phot_check_common(who, ctx, sub, n, x, y);
    if (st)
        return st;
    if (!psf || !psf->basis || psf->stamp < 1)
        return tide_error(TIDE_E_INVAL, "%s: no PSF model", who);
    if (n > 0 && (!flux || !fluxerr))
        return tide_error(TIDE_E_INVAL, "%s: NULL flux or fluxerr", who);
    if (n == 0)
        return 0;
    if (!psf->coef || psf->stamp > TIDE_PSF_MAX_STAMP || !(psf->stamp & 1) || psf->nbasis < 1 ||
        psf->nbasis > 1 + TIDE_PSF_MAX_K || psf->degree < 0 || psf->degree > TIDE_PSF_MAX_DEGREE ||
        psf->ncoef != (psf->degree + 1) * (psf->degree + 2) / 2 || psf->width < 1 ||
        psf->height < 1)
        return tide_error(TIDE_E_INVAL,
                          "%s: evaluating the PSF: tide_psf_eval: not a valid PSF model", who);
    return run_fit(ctx, sub, var, n, x, y, psf->stamp, NULL, psf, p, flux, fluxerr, chi2, flags);
}

int tide_psf_photometry(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                        const struct tide_psf_model *psf, int64_t n, const double *x,
                        const double *y, double *flux, double *fluxerr, double *chi2) {
    return tide_psf_photometry_ex(ctx, sub, var, psf, n, x, y, NULL, flux, fluxerr, chi2, NULL);
}
