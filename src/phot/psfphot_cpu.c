/* psfphot_cpu.c — CPU twin of the PSF-fit kernel: one source per OpenMP iteration, two
 * passes over its stamp (sky-variance weights, then with the model's Poisson variance). */
#include <math.h>
#include "phot/psfphot_kernels.h"
#include "phot/psfphot_math.h"
#include "tide/photometry.h"

static void fit_one(const tide_psffit_job *job, int64_t s) {
    const tide_ap_planes *im = &job->im;
    const double cx = job->x[s], cy = job->y[s];
    const int side = job->side;
    const float *P = job->stamps + (size_t)s * side * side;
    int32_t fl = 0;
    double F = 0.0, B = 0.0, ferr = 0.0, chi2 = 0.0;
    int ok = isfinite(cx) && isfinite(cy);
    const int passes = job->gain_eff > 0.0 ? 2 : 1;
    const double fr2 = job->fit_radius * job->fit_radius;
    for (int pass = 0; ok && pass < passes; pass++) {
        tide_psffit_sums sm = {0, 0, 0, 0, 0, 0, 0};
        const int64_t i0 = tide_psffit_origin(cx, side), j0 = tide_psffit_origin(cy, side);
        for (int v = 0; v < side; v++)
            for (int u = 0; u < side; u++) {
                const int64_t i = i0 + u, j = j0 + v;
                if (job->fit_radius > 0.0 && (i - cx) * (i - cx) + (j - cy) * (j - cy) > fr2)
                    continue;
                if (i < 0 || j < 0 || i >= im->width || j >= im->height) {
                    fl |= TIDE_PHOT_TRUNCATED;
                    continue;
                }
                const float d = im->pix[j * im->stride + i];
                const float sv = im->var[j * im->var_stride + i];
                const float p = P[v * side + u];
                if ((im->mask && (im->mask[j * im->stride + i] & im->mask_bits)) ||
                    !isfinite(d) || !isfinite(sv) || !(sv > 0.0f) || !isfinite(p)) {
                    fl |= TIDE_PHOT_MASKED;
                    continue;
                }
                tide_psffit_add(&sm, d, p, tide_psffit_var(sv, pass ? F : 0.0, p, job->gain_eff));
            }
        ok = tide_psffit_solve(&sm, job->fit_bkg, &F, &B, &ferr, &chi2);
    }
    if (!ok) {
        F = ferr = chi2 = NAN;
        fl |= TIDE_PHOT_FIT_FAILED;
    }
    job->flux[s] = F;
    job->fluxerr[s] = ferr;
    job->chi2[s] = chi2;
    job->flags[s] = fl;
}

int tide_psffit_cpu(tide_ctx *ctx, const tide_psffit_job *job) {
    (void)ctx;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t s = 0; s < job->n; s++) fit_one(job, s);
    return 0;
}
