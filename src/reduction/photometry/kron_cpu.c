/* kron_cpu.c — CPU twin of the Kron kernel: one source per OpenMP iteration. */
#include <math.h>
#include "aperture_math.h"
#include "aperture_pixel.h"
#include "kron_kernels.h"
#include "kron_math.h"
#include "tide/photometry.h"

static void kron_one(const tide_kron_job *job, int64_t s) {
    const tide_ap_planes *im = &job->im;
    const double cx = job->x[s], cy = job->y[s];
    const tide_kron_geom g = tide_kron_geometry(job->a[s], job->b[s], job->theta[s]);
    int32_t fl = 0;
    if (!g.ok || !isfinite(cx) || !isfinite(cy)) {
        job->flux[s] = 0.0;
        job->fluxerr[s] = 0.0;
        if (job->kron_radius)
            job->kron_radius[s] = 0.0;
        job->flags[s] = TIDE_PHOT_FIT_FAILED;
        return;
    }
    /* first moment within nsig */
    int64_t x0, x1, y0, y1;
    tide_kron_box(&g, cx, cy, job->nsig, &x0, &x1, &y0, &y1);
    double r1 = 0.0, v1 = 0.0;
    const double ns2 = job->nsig * job->nsig;
    for (int64_t j = y0 < 0 ? 0 : y0; j <= y1 && j < im->height; j++)
        for (int64_t i = x0 < 0 ? 0 : x0; i <= x1 && i < im->width; i++) {
            const double dx = i - cx, dy = j - cy;
            const double r2 = g.cxx * dx * dx + g.cyy * dy * dy + g.cxy * dx * dy;
            double d, v;
            if (r2 > ns2 || !tide_ap_read(im, i, j, &d, &v))
                continue;
            r1 += sqrt(r2) * d;
            v1 += d;
        }
    int failed;
    const double K = tide_kron_radius(r1, v1, job->kron_fact, job->min_radius, &failed);
    if (failed)
        fl |= TIDE_PHOT_FIT_FAILED;
    /* flux in the ellipse of scale K */
    tide_kron_box(&g, cx, cy, K, &x0, &x1, &y0, &y1);
    tide_ap_acc a = tide_ap_acc_zero();
    for (int64_t j = y0; j <= y1; j++)
        for (int64_t i = x0; i <= x1; i++) {
            const double w =
                tide_ap_ellipse_frac(i - cx, j - cy, g.cxx, g.cyy, g.cxy, K, g.reach, job->subpix);
            if (w > 0.0)
                tide_ap_add(&a, im, i, j, w, cx, cy, job->mask_correct);
        }
    int32_t af;
    tide_ap_finalize(a.sf, a.sv, a.aval, a.amask, a.amiss, a.aout, 0.0, 0.0, job->mask_correct,
                     job->gain_eff, &job->flux[s], &job->fluxerr[s], &af);
    if (job->kron_radius)
        job->kron_radius[s] = K;
    job->flags[s] = fl | af;
}

int tide_kron_cpu(tide_ctx *ctx, const tide_kron_job *job) {
    (void)ctx;
#pragma omp parallel for schedule(dynamic, 32)
    for (int64_t s = 0; s < job->n; s++)
        kron_one(job, s);
    return 0;
}
