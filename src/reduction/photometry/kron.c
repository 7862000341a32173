/* kron.c — Kron (AUTO) photometry, the algorithm once for both backends (DESIGN §3): the
 * first moment within moment_nsig × (A, B), the Kron radius, then the flux in the scaled
 * ellipse, all per source in one kernel. */
#include <string.h>
#include "aperture_internal.h"
#include "kron_kernels.h"
#include "tide/photometry.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

void tide_kron_params_default(tide_kron_params *p) {
    memset(p, 0, sizeof *p);
    p->kron_fact = 2.5;
    p->min_radius = 3.5;
    p->moment_nsig = 6.0;
    p->subpix = 5;
    tide_aper_params_default(&p->aper);
}

int tide_kron_photometry(tide_ctx *ctx, const tide_image *sub, const tide_image *var, int64_t n,
                         const double *x, const double *y, const double *a, const double *b,
                         const double *theta, const tide_kron_params *pin, double *kron_radius,
                         double *flux, double *fluxerr, int32_t *flags) {
    const char *who = "tide_kron_photometry";
    int st = tide_phot_check_common(who, ctx, sub, n, x, y);
    if (st)
        return st;
    tide_kron_params p;
    if (pin)
        p = *pin;
    else
        tide_kron_params_default(&p);
    if (n > 0 && (!a || !b || !theta || !flux))
        return tide_error(TIDE_E_INVAL, "%s: NULL a, b, theta or flux", who);
    if (!(p.kron_fact > 0.0) || p.min_radius < 0.0 || !(p.moment_nsig > 0.0))
        return tide_error(TIDE_E_INVAL, "%s: kron_fact %g, min_radius %g, moment_nsig %g", who,
                          p.kron_fact, p.min_radius, p.moment_nsig);
    if (p.aper.ncombine < 1)
        return tide_error(TIDE_E_INVAL, "%s: ncombine < 1", who);
    if (p.subpix == 0)
        p.subpix = 5;
    if (p.subpix < 0 || p.subpix > 64)
        return tide_error(TIDE_E_INVAL, "%s: subpix %d not in 1..64", who, p.subpix);
    if (n == 0)
        return 0;

    tide_phot_mem m;
    tide_phot_mem_init(&m, ctx);
    tide_kron_job job;
    memset(&job, 0, sizeof job);
    st = tide_phot_planes(&m, who, sub, var, p.aper.mask_bits, &job.im);
    job.n = n;
    job.kron_fact = p.kron_fact;
    job.min_radius = p.min_radius;
    job.nsig = p.moment_nsig;
    job.subpix = p.subpix;
    job.mask_correct = p.aper.mask_correct;
    job.gain_eff = p.aper.gain > 0.0 ? p.aper.gain * p.aper.ncombine : 0.0;
    const size_t nb = sizeof(double) * (size_t)n;
    const void *kp;
    if (!st && !(st = tide_phot_mem_in(&m, x, nb, &kp)))
        job.x = kp;
    if (!st && !(st = tide_phot_mem_in(&m, y, nb, &kp)))
        job.y = kp;
    if (!st && !(st = tide_phot_mem_in(&m, a, nb, &kp)))
        job.a = kp;
    if (!st && !(st = tide_phot_mem_in(&m, b, nb, &kp)))
        job.b = kp;
    if (!st && !(st = tide_phot_mem_in(&m, theta, nb, &kp)))
        job.theta = kp;
    void *o;
    if (!st && !(st = tide_phot_mem_out(&m, kron_radius, nb, &o)))
        job.kron_radius = o;
    if (!st && !(st = tide_phot_mem_out(&m, flux, nb, &o)))
        job.flux = o;
    if (!st && !(st = tide_phot_mem_out(&m, fluxerr, nb, &o)))
        job.fluxerr = o;
    if (!st && !(st = tide_phot_mem_out(&m, flags, sizeof(int32_t) * n, &o)))
        job.flags = o;
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_kron, &job);
    if (!st)
        st = tide_phot_mem_fetch(&m, kron_radius, job.kron_radius, nb);
    if (!st)
        st = tide_phot_mem_fetch(&m, flux, job.flux, nb);
    if (!st)
        st = tide_phot_mem_fetch(&m, fluxerr, job.fluxerr, nb);
    if (!st)
        st = tide_phot_mem_fetch(&m, flags, job.flags, sizeof(int32_t) * n);
    tide_phot_mem_free(&m);
    return st;
}
