/* test_subtract_sim.c — subtraction of a `tide sim` pair: epoch 1 (template, FWHM 3 px) and
 * epoch 2 (science, seeing x1.3, transparency 0.85) at the same pointing. The difference must
 * be consistent with noise at the static stars (normalised aperture residual RMS <= 1.5) and
 * the kernel sum must be the transparency ratio, with constant and varying kernels. */
#include <stdint.h>
#include <stdio.h>

#include "tide/tide.h"
#include "tide_test.h"

#define N 1024

/* Variance from the frame itself (as the reduction stage would give it): Poisson + read
 * noise; pixels at SATURATE are masked. */
static void add_var(tide_image *im, const tide_sim_params *p) {
    int64_t n = im->width * im->height;
    im->var = malloc((size_t)n * sizeof(float));
    if (!im->mask)
        im->mask = calloc((size_t)n, sizeof(uint16_t));
    double sat = p->bias + p->fullwell / p->gain;
    for (int64_t i = 0; i < n; i++) {
        double e = im->pix[i] - p->bias;
        im->var[i] =
            (float)((e > 0 ? e : 0) / p->gain + (p->rdnoise / p->gain) * (p->rdnoise / p->gain));
        if (im->pix[i] >= sat * 0.98)
            im->mask[i] |= TIDE_MASK_SATURATED;
    }
}

static double residual_rms(const tide_subtract_result *r, const tide_table *truth, int *nstar) {
    const double *x = tide_table_f64(truth, "X_TRUE"), *y = tide_table_f64(truth, "Y_TRUE");
    const double *f = tide_table_f64(truth, "FLUX");
    const int16_t *type = tide_table_column(truth, "TYPE_ID")->data;
    const int16_t *sat = tide_table_column(truth, "SATURATED")->data;
    double q = 0.0;
    int m = 0;
    for (int64_t k = 0; k < truth->nrows; k++) {
        if (type[k] != 0 || sat[k] || f[k] < 3000.0)
            continue;
        double cx = x[k] - 1.0, cy = y[k] - 1.0; /* FITS 1-based -> 0-based */
        if (cx < 40 || cy < 40 || cx > N - 41 || cy > N - 41)
            continue;
        int near = 0; /* keep away from things that change */
        for (int64_t j = 0; j < truth->nrows && !near; j++)
            if (type[j] >= 2 && fabs(x[j] - x[k]) < 15 && fabs(y[j] - y[k]) < 15)
                near = 1;
        if (near)
            continue;
        int64_t ix = (int64_t)floor(cx + 0.5), iy = (int64_t)floor(cy + 0.5);
        double s = 0.0, v = 0.0;
        int bad = 0;
        for (int64_t j = iy - 3; j <= iy + 3; j++)
            for (int64_t i = ix - 3; i <= ix + 3; i++) {
                int64_t idx = j * r->diff.stride + i;
                if (r->diff.mask[idx])
                    bad = 1;
                s += r->diff.pix[idx];
                v += r->diff.var[idx];
            }
        if (bad)
            continue;
        q += s * s / v;
        m++;
    }
    *nstar = m;
    return m ? sqrt(q / m) : INFINITY;
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.width = p.height = N;
    p.nstars = 500;
    p.ngalaxies = 20;
    p.defects = 0;
    p.with_mask = 0;
    p.e2_dra = 0.0;
    p.e2_ddec = 0.0;
    p.e2_rotation = 0.0;
    tide_sim_sky *sky = NULL;
    tide_sim_frame e1, e2;
    memset(&e1, 0, sizeof e1);
    memset(&e2, 0, sizeof e2);
    CHECK_OK(tide_sim_sky_make(ctx, &p, &sky));
    CHECK_OK(tide_sim_epoch(ctx, sky, 1, &e1));
    CHECK_OK(tide_sim_epoch(ctx, sky, 2, &e2));
    if (tide_test_failures)
        return TIDE_TEST_RESULT();
    add_var(&e1.image, &p);
    add_var(&e2.image, &p);
    tide_subtract_params sp;
    tide_subtract_params_default(&sp);
    sp.bg_degree = 2; /* the simulated sky has a quadratic term */
    for (int sd = 0; sd <= 2; sd += 2) {
        sp.spatial_degree = sd;
        tide_subtract_result r;
        CHECK_OK(
            tide_subtract(ctx, &e2.image, &e1.image, p.fwhm * p.e2_fwhm_scale, p.fwhm, &sp, &r));
        if (!r.diff.pix)
            break;
        int m;
        double rms = residual_rms(&r, &e1.truth, &m);
        printf("sim pair %dx%d, spatial degree %d: kernel sum %.4f (transparency %.2f), "
               "%d/%d stamps, chi2/px %.3f, cond %.3g; normalised residual rms %.3f over %d "
               "stars\n",
               N, N, sd, r.kernel_sum, p.e2_transparency, r.nstamps, r.nstamps_total,
               r.chi2 / (double)r.nfit, r.cond, rms, m);
        CHECK(r.convolved == TIDE_SUB_CONVOLVE_TEMPLATE);
        CHECK(m >= 50);
        CHECK(rms <= 1.5);
        CHECK_CLOSE(r.kernel_sum, p.e2_transparency, 0.01);
        tide_subtract_result_free(ctx, &r);
    }
    /* the planes added here are ours */
    free(e1.image.var);
    free(e2.image.var);
    free(e1.image.mask);
    free(e2.image.mask);
    e1.image.var = e2.image.var = NULL;
    e1.image.mask = e2.image.mask = NULL;
    tide_sim_frame_free(ctx, &e1);
    tide_sim_frame_free(ctx, &e2);
    tide_sim_sky_free(sky);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
