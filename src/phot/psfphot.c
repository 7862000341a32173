/* psfphot.c — PSF-fit photometry at fixed positions, the algorithm once for both backends
 * (DESIGN §3). Stamps of the local PSF are built on the host with tide_psf_eval_pixel in
 * chunks (the PSF model lives on the host), each chunk goes to the backend in one copy and
 * is fitted there, one source per warp on the GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "phot/aperture_internal.h"
#include "phot/psfphot_kernels.h"
#include "tide/photometry.h"
#include "tide/psf.h"
#include "tide/status.h"

/* Sources per chunk of host-built stamps: bounds host memory to ~64 MB for 31² stamps. */
#define PSFPHOT_CHUNK 16384

void tide_psffit_params_default(tide_psffit_params *p) {
    memset(p, 0, sizeof *p);
    p->mask_bits = 0xFFFFu;
    p->gain = 0.0;
    p->ncombine = 1;
    p->fit_radius = 0.0;
    p->fit_background = 0;
}

int tide_psf_photometry_stamps(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                               int64_t n, const double *x, const double *y, int side,
                               const float *stamps, const tide_psffit_params *pin,
                               double *flux, double *fluxerr, double *chi2, int32_t *flags) {
    const char *who = "tide_psf_photometry";
    int st = tide_phot_check_common(who, ctx, sub, n, x, y);
    if (st) return st;
    tide_psffit_params p;
    if (pin) p = *pin;
    else tide_psffit_params_default(&p);
    if (side < 1 || !(side & 1)) return tide_error(TIDE_E_INVAL, "%s: stamp side %d is not odd", who, side);
    if (n > 0 && (!stamps || !flux || !fluxerr))
        return tide_error(TIDE_E_INVAL, "%s: NULL stamps, flux or fluxerr", who);
    if (p.ncombine < 1) return tide_error(TIDE_E_INVAL, "%s: ncombine < 1", who);
    if (!var && !sub->var)
        return tide_error(TIDE_E_INVAL, "%s: a variance image is required for the weights", who);
    if (n == 0) return 0;

    tide_phot_mem m;
    tide_phot_mem_init(&m, ctx);
    tide_psffit_job job;
    memset(&job, 0, sizeof job);
    st = tide_phot_planes(&m, who, sub, var, p.mask_bits, &job.im);
    job.n = n;
    job.side = side;
    job.gain_eff = p.gain > 0.0 ? p.gain * p.ncombine : 0.0;
    job.fit_radius = p.fit_radius;
    job.fit_bkg = p.fit_background;
    const size_t nb = sizeof(double) * (size_t)n;
    const void *kp;
    if (!st && !(st = tide_phot_mem_in(&m, x, nb, &kp))) job.x = kp;
    if (!st && !(st = tide_phot_mem_in(&m, y, nb, &kp))) job.y = kp;
    if (!st && !(st = tide_phot_mem_in(&m, stamps, sizeof(float) * (size_t)n * side * side, &kp)))
        job.stamps = kp;
    void *o;
    if (!st && !(st = tide_phot_mem_out(&m, flux, nb, &o))) job.flux = o;
    if (!st && !(st = tide_phot_mem_out(&m, fluxerr, nb, &o))) job.fluxerr = o;
    if (!st && !(st = tide_phot_mem_out(&m, chi2, nb, &o))) job.chi2 = o;
    if (!st && !(st = tide_phot_mem_out(&m, flags, sizeof(int32_t) * n, &o))) job.flags = o;
    if (!st) st = TIDE_DISPATCH(ctx, tide_psffit, &job);
    if (!st) st = tide_phot_mem_fetch(&m, flux, job.flux, nb);
    if (!st) st = tide_phot_mem_fetch(&m, fluxerr, job.fluxerr, nb);
    if (!st) st = tide_phot_mem_fetch(&m, chi2, job.chi2, nb);
    if (!st) st = tide_phot_mem_fetch(&m, flags, job.flags, sizeof(int32_t) * n);
    tide_phot_mem_free(&m);
    return st;
}

int tide_psf_photometry_ex(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                           const struct tide_psf_model *psf, int64_t n, const double *x,
                           const double *y, const tide_psffit_params *p, double *flux,
                           double *fluxerr, double *chi2, int32_t *flags) {
    const char *who = "tide_psf_photometry";
    int st = tide_phot_check_common(who, ctx, sub, n, x, y);
    if (st) return st;
    if (!psf || !psf->basis || psf->stamp < 1)
        return tide_error(TIDE_E_INVAL, "%s: no PSF model", who);
    if (n > 0 && (!flux || !fluxerr))
        return tide_error(TIDE_E_INVAL, "%s: NULL flux or fluxerr", who);
    const int side = psf->stamp;
    const int64_t chunk = n < PSFPHOT_CHUNK ? n : PSFPHOT_CHUNK;
    if (n == 0) return 0;
    float *stamps = malloc(sizeof(float) * (size_t)chunk * side * side);
    if (!stamps) return tide_error(TIDE_E_NOMEM, "%s: out of host memory for stamps", who);
    for (int64_t c0 = 0; c0 < n && !st; c0 += chunk) {
        const int64_t cn = n - c0 < chunk ? n - c0 : chunk;
        /* the PSF model is host-side: evaluate the chunk's stamps (parallel, independent) */
        int est = 0;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < cn; i++) {
            float *s = stamps + (size_t)i * side * side;
            memset(s, 0, sizeof(float) * (size_t)side * side);
            int e = isfinite(x[c0 + i]) && isfinite(y[c0 + i])
                        ? tide_psf_eval_pixel(psf, x[c0 + i], y[c0 + i], s)
                        : 0;
            if (e) {
#pragma omp atomic write
                est = e;
            }
        }
        if (est) {
            st = tide_error_prefix(est, "%s: evaluating the PSF: ", who);
            break;
        }
        st = tide_psf_photometry_stamps(ctx, sub, var, cn, x + c0, y + c0, side, stamps, p,
                                        flux + c0, fluxerr + c0, chi2 ? chi2 + c0 : NULL,
                                        flags ? flags + c0 : NULL);
    }
    free(stamps);
    return st;
}

int tide_psf_photometry(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                        const struct tide_psf_model *psf, int64_t n, const double *x,
                        const double *y, double *flux, double *fluxerr, double *chi2) {
    return tide_psf_photometry_ex(ctx, sub, var, psf, n, x, y, NULL, flux, fluxerr, chi2, NULL);
}
