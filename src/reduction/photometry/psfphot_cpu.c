/* psfphot_cpu.c — CPU twin of the PSF-fit kernel: one source per OpenMP iteration; its stamp
 * is either given or evaluated from the model (the steps of psfphot_math.h in order, which is
 * tide_psf_eval_pixel exactly), then two passes over it (sky-variance weights, then with the
 * model's Poisson variance). */
#include <math.h>
#include <stdlib.h>
#include "psfphot_kernels.h"
#include "psfphot_math.h"
#include "tide/photometry.h"
#include "tide/status.h"

/* The source's local PSF from the model into out (side²); cen (side² floats) and R (side²
 * doubles) are scratch. */
static void eval_stamp(const tide_psffit_job *job, double x, double y, float *cen, double *R,
                       float *out) {
    const int side = job->side, npix = side * side;
    const double u = psfphot_scaled(x, job->model_w), v = psfphot_scaled(y, job->model_h);
    double c[1 + TIDE_PSF_MAX_K];
    for (int b = 0; b < job->nbasis; b++)
        c[b] = psfphot_coef(job->coef, job->ncoef, job->degree, b, u, v);
    double sum = 0.0;
    for (int p = 0; p < npix; p++) {
        const double s = psfphot_centred(job->basis, npix, job->nbasis, c, p);
        cen[p] = (float)s;
        sum += s;
    }
    if (sum != 0.0) {
        const double inv = 1.0 / sum;
        for (int p = 0; p < npix; p++)
            cen[p] = (float)((double)cen[p] * inv);
    }
    int ix, iy;
    double frx, fry, wx[2 * PSF_LANCZOS_A], wy[2 * PSF_LANCZOS_A];
    psfphot_shift_setup(x, y, &ix, &iy, &frx, &fry);
    psf_lanczos_weights(frx, wx);
    psf_lanczos_weights(fry, wy);
    for (int py = 0; py < side; py++)
        for (int i = 0; i < side; i++)
            R[py * side + i] = psfphot_shift_row(cen, side, i, py, ix, wx);
    sum = 0.0;
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++) {
            const double acc = psfphot_shift_col(R, side, i, j, iy, wy);
            out[j * side + i] = (float)acc;
            sum += acc;
        }
    if (sum != 0.0)
        for (int p = 0; p < npix; p++)
            out[p] = (float)((double)out[p] / sum);
}

static void fit_one(const tide_psffit_job *job, int64_t s, const float *P) {
    const tide_ap_planes *im = &job->im;
    const double cx = job->x[s], cy = job->y[s];
    const int side = job->side;
    int32_t fl = 0;
    double F = 0.0, B = 0.0, ferr = 0.0, chi2 = 0.0;
    int ok = P && isfinite(cx) && isfinite(cy);
    const int passes = job->gain_eff > 0.0 ? 2 : 1;
    const double fr2 = job->fit_radius * job->fit_radius;
    for (int pass = 0; ok && pass < passes; pass++) {
        tide_psffit_sums sm = {0, 0, 0, 0, 0, 0, 0};
        const int64_t i0 = tide_psffit_origin(cx, side), j0 = tide_psffit_origin(cy, side);
        for (int v = 0; v < side; v++)
            for (int u = 0; u < side; u++) {
                const float p = P[v * side + u];
                float d, sv;
                const int32_t r =
                    psfphot_pixel(im, i0 + u, j0 + v, cx, cy, job->fit_radius, fr2, p, &d, &sv);
                if (r) {
                    if (r > 0)
                        fl |= r;
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
    if (job->stamps) {
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t s = 0; s < job->n; s++)
            fit_one(job, s, job->stamps + (size_t)s * job->side * job->side);
        return 0;
    }
    const size_t npix = (size_t)job->side * job->side;
    int nomem = 0;
#pragma omp parallel
    {
        /* scratch per thread, reused across its sources: R (doubles), then two stamps */
        double *R = malloc((sizeof(double) + 2 * sizeof(float)) * npix);
        float *buf = R ? (float *)(R + npix) : NULL;
        if (!buf) {
#pragma omp atomic write
            nomem = 1;
        }
#pragma omp for schedule(dynamic, 64)
        for (int64_t s = 0; s < job->n; s++) {
            const double x = job->x[s], y = job->y[s];
            const int fin = buf && isfinite(x) && isfinite(y);
            if (fin)
                eval_stamp(job, x, y, buf, R, buf + npix);
            fit_one(job, s, fin ? buf + npix : NULL);
        }
        free(R);
    }
    if (nomem)
        return tide_error(TIDE_E_NOMEM, "tide_psf_photometry: out of host memory for stamps");
    return 0;
}
