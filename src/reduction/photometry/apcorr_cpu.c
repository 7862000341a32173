/* apcorr_cpu.c — CPU twins of the optimal-photometry per-source kernels. */
#include "apcorr_kernels.h"
#include "apcorr_math.h"
#include "tide/photometry.h"

int tide_apcorr_radius_cpu(tide_ctx *ctx, const tide_apcorr_table *t, int64_t n, const double *snr,
                           double *r, int32_t *flags) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        int clipped;
        r[i] = tide_apcorr_law(t, snr[i], &clipped);
        if (clipped)
            flags[i] |= TIDE_PHOT_APCORR_EXTRAP;
    }
    return 0;
}

int tide_apcorr_apply_cpu(tide_ctx *ctx, const tide_apcorr_table *t, int64_t n, const double *x,
                          const double *y, const double *r, double *flux, double *fluxerr) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double c, ce;
        tide_apcorr_at(t, r[i], x[i], y[i], &c, &ce);
        tide_apcorr_correct(flux[i], fluxerr[i], c, ce, &flux[i], &fluxerr[i]);
    }
    return 0;
}
