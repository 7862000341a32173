/* aperture.c — circular aperture photometry, the algorithm once for both backends
 * (DESIGN §3): validate, move the per-source arrays to the backend in one batch, run the
 * local-background kernel (optional), then the exact-overlap sum kernel, fold the flags. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "aperture_internal.h"
#include "aperture_kernels.h"
#include "tide/photometry.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

void tide_aper_params_default(tide_aper_params *p) {
    memset(p, 0, sizeof *p);
    p->mask_bits = 0xFFFFu;
    p->mask_correct = 0;
    p->gain = 0.0;
    p->ncombine = 1;
    p->bkgann_in = 0.0;
    p->bkgann_out = 0.0;
    p->bkgann_sigma = 3.0;
    p->bkgann_maxiters = 5;
    p->bkgann_minpix = 10;
}

/* Upper bound on the number of pixel centres in rin <= d < rout: the area of the annulus
 * widened by a pixel's half-diagonal on both sides. */
static double annulus_bound(double rin, double rout) {
    const double ro = rout + 0.7072, ri = rin > 0.7072 ? rin - 0.7072 : 0.0;
    return 3.14159265358979 * (ro * ro - ri * ri);
}

int tide_phot_check_aper(const char *who, const tide_aper_params *p) {
    if (p->ncombine < 1)
        return tide_error(TIDE_E_INVAL, "%s: ncombine = %d < 1", who, p->ncombine);
    if (p->bkgann_out > 0.0) {
        if (!(p->bkgann_in >= 0.0) || !(p->bkgann_out > p->bkgann_in))
            return tide_error(TIDE_E_INVAL, "%s: annulus %g..%g px is not 0 <= in < out", who,
                              p->bkgann_in, p->bkgann_out);
        if (annulus_bound(p->bkgann_in, p->bkgann_out) > TIDE_PHOT_ANNULUS_MAX)
            return tide_error(TIDE_E_RANGE, "%s: annulus %g..%g px may hold more than %d pixels",
                              who, p->bkgann_in, p->bkgann_out, TIDE_PHOT_ANNULUS_MAX);
        if (!(p->bkgann_sigma > 0.0))
            return tide_error(TIDE_E_INVAL, "%s: bkgann_sigma = %g <= 0", who, p->bkgann_sigma);
    }
    return 0;
}

/* The shared body: per_source = 0 → nr common radii; 1 → radii[i*nr + k]. */
static int aper_run(tide_ctx *ctx, const char *who, const tide_image *sub, const tide_image *var,
                    int64_t n, const double *x, const double *y, int nr, int per_source,
                    const double *radii, const tide_aper_params *pin, double *flux, double *fluxerr,
                    int32_t *flags, tide_aper_extra *ex) {
    int st = tide_phot_check_common(who, ctx, sub, n, x, y);
    if (st)
        return st;
    tide_aper_params p;
    if (pin)
        p = *pin;
    else
        tide_aper_params_default(&p);
    if ((st = tide_phot_check_aper(who, &p)))
        return st;
    if (nr < 1 || !radii)
        return tide_error(TIDE_E_INVAL, "%s: no radii", who);
    if (!flux || !fluxerr)
        return tide_error(TIDE_E_INVAL, "%s: NULL flux or fluxerr", who);
    const int64_t nrad = per_source ? n * nr : nr;
    for (int64_t k = 0; k < nrad; k++)
        if (!(radii[k] > 0.0) || !isfinite(radii[k])) {
            if (per_source)
                continue; /* that source is flagged, not the call refused */
            return tide_error(TIDE_E_INVAL, "%s: radius %lld is %g (must be > 0)", who,
                              (long long)k, radii[k]);
        }
    if (n == 0)
        return 0;
    const int64_t no = n * nr;

    tide_phot_mem m;
    tide_phot_mem_init(&m, ctx);
    tide_ap_job job;
    memset(&job, 0, sizeof job);
    st = tide_phot_planes(&m, who, sub, var, p.mask_bits, &job.im);
    job.n = n;
    job.nr = nr;
    job.per_source = per_source;
    job.mask_correct = p.mask_correct;
    job.gain_eff = p.gain > 0.0 ? p.gain * p.ncombine : 0.0;
    const void *kp;
    if (!st && !(st = tide_phot_mem_in(&m, x, sizeof(double) * n, &kp)))
        job.x = kp;
    if (!st && !(st = tide_phot_mem_in(&m, y, sizeof(double) * n, &kp)))
        job.y = kp;
    if (!st && !(st = tide_phot_mem_in(&m, radii, sizeof(double) * nrad, &kp)))
        job.radii = kp;
    void *o;
    if (!st && !(st = tide_phot_mem_out(&m, flux, sizeof(double) * no, &o)))
        job.flux = o;
    if (!st && !(st = tide_phot_mem_out(&m, fluxerr, sizeof(double) * no, &o)))
        job.fluxerr = o;
    if (!st && !(st = tide_phot_mem_out(&m, ex ? ex->area : NULL, sizeof(double) * no, &o)))
        job.area = o;
    if (!st && !(st = tide_phot_mem_out(&m, ex ? ex->masked_area : NULL, sizeof(double) * no, &o)))
        job.masked_area = o;
    if (!st && !(st = tide_phot_mem_out(&m, ex ? ex->aper_flags : NULL, sizeof(int32_t) * no, &o)))
        job.aflags = o;
    int32_t *kflags = NULL; /* per-source flags from the annulus */
    if (!st && !(st = tide_phot_mem_out(&m, NULL, sizeof(int32_t) * n, &o)))
        kflags = o;

    if (!st && p.bkgann_out > 0.0) {
        tide_ann_job aj;
        memset(&aj, 0, sizeof aj);
        aj.im = job.im;
        aj.n = n;
        aj.x = job.x;
        aj.y = job.y;
        aj.rin = p.bkgann_in;
        aj.rout = p.bkgann_out;
        aj.sigma = p.bkgann_sigma;
        aj.maxiters = p.bkgann_maxiters;
        aj.minpix = p.bkgann_minpix;
        aj.flags = kflags;
        if (!(st = tide_phot_mem_out(&m, ex ? ex->bkg : NULL, sizeof(double) * n, &o)))
            aj.bkg = o;
        if (!st && !(st = tide_phot_mem_out(&m, ex ? ex->bkg_err : NULL, sizeof(double) * n, &o)))
            aj.bkg_err = o;
        if (!st)
            st = TIDE_DISPATCH(ctx, tide_ap_annulus, &aj);
        job.bkg = aj.bkg;
        job.bkg_err = aj.bkg_err;
        if (!st && ex)
            st = tide_phot_mem_fetch(&m, ex->bkg, aj.bkg, sizeof(double) * n);
        if (!st && ex)
            st = tide_phot_mem_fetch(&m, ex->bkg_err, aj.bkg_err, sizeof(double) * n);
    } else if (ex) {
        if (ex->bkg)
            memset(ex->bkg, 0, sizeof(double) * n);
        if (ex->bkg_err)
            memset(ex->bkg_err, 0, sizeof(double) * n);
    }
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_ap_sum, &job);
    if (!st)
        st = tide_phot_mem_fetch(&m, flux, job.flux, sizeof(double) * no);
    if (!st)
        st = tide_phot_mem_fetch(&m, fluxerr, job.fluxerr, sizeof(double) * no);
    if (!st && ex)
        st = tide_phot_mem_fetch(&m, ex->area, job.area, sizeof(double) * no);
    if (!st && ex)
        st = tide_phot_mem_fetch(&m, ex->masked_area, job.masked_area, sizeof(double) * no);
    if (!st && flags) {
        /* per-aperture flags are needed on the host to fold them per source */
        int32_t *af = ex && ex->aper_flags ? ex->aper_flags : malloc(sizeof(int32_t) * no);
        int32_t *sf = malloc(sizeof(int32_t) * n);
        if (!af || !sf)
            st = tide_error(TIDE_E_NOMEM, "%s: out of host memory", who);
        if (!st)
            st = tide_phot_mem_fetch(&m, af, job.aflags, sizeof(int32_t) * no);
        if (!st)
            st = tide_phot_mem_fetch(&m, sf, kflags, sizeof(int32_t) * n);
        if (!st)
            for (int64_t i = 0; i < n; i++) {
                int32_t f = sf[i];
                for (int k = 0; k < nr; k++)
                    f |= af[i * nr + k];
                flags[i] = f;
            }
        if (!(ex && ex->aper_flags))
            free(af);
        free(sf);
    } else if (!st && ex && ex->aper_flags) {
        st = tide_phot_mem_fetch(&m, ex->aper_flags, job.aflags, sizeof(int32_t) * no);
    }
    tide_phot_mem_free(&m);
    return st;
}

int tide_aperture_photometry_ex(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                                int64_t n, const double *x, const double *y, int nr,
                                const double *radii, const tide_aper_params *p, double *flux,
                                double *fluxerr, int32_t *flags, tide_aper_extra *ex) {
    return aper_run(ctx, "tide_aperture_photometry", sub, var, n, x, y, nr, 0, radii, p, flux,
                    fluxerr, flags, ex);
}

int tide_aperture_photometry(tide_ctx *ctx, const tide_image *sub, const tide_image *var, int64_t n,
                             const double *x, const double *y, int nr, const double *radii,
                             const tide_aper_params *p, double *flux, double *fluxerr,
                             int32_t *flags) {
    return aper_run(ctx, "tide_aperture_photometry", sub, var, n, x, y, nr, 0, radii, p, flux,
                    fluxerr, flags, NULL);
}

int tide_aperture_photometry_r(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                               int64_t n, const double *x, const double *y, const double *r,
                               const tide_aper_params *p, double *flux, double *fluxerr,
                               int32_t *flags) {
    return aper_run(ctx, "tide_aperture_photometry_r", sub, var, n, x, y, 1, 1, r, p, flux, fluxerr,
                    flags, NULL);
}
