/* test_dipole.c — batched dipole fits on the CPU: model Jacobians against finite differences,
 * 10^4 random simulated Gaussian dipoles with known truth (unbiased positions and fluxes,
 * calibrated errors), PSF dipoles, the point-source vs dipole Δχ², masked pixels, status codes
 * and stamp-to-image coordinates; prints the CPU throughput for 21×21 stamps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tide/dipole.h"
#include "tide/tide.h"
#include "tide_test.h"
#include "unit/test_dipole_sim.h"

#define SIDE 21
#define NPIX (SIDE * SIDE)

static tide_ctx *cpu_ctx(void) {
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    if (tide_ctx_create(&ctx, &o))
        return NULL;
    return ctx;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Analytic Jacobian against central differences for every model. */
static void test_jacobian(void) {
    float psf[25 * 25];
    dsim_psf(psf, 25, 1.7);
    for (int kind = 0; kind < 4; kind++) {
        const int np = dip_nparam(kind);
        double q[DIP_MAXP] = {0};
        if (kind <= DIP_K_GPS) {
            double g[8] = {120.0, log(1.7), log(1.2), 0.4, 9.3, 10.6, 11.2, 8.7};
            memcpy(q, g, sizeof g);
        } else {
            double g[5] = {150.0, 9.3, 10.6, 11.2, 8.7};
            memcpy(q, g, sizeof g);
        }
        double maxerr = 0.0;
        for (int t = 0; t < NPIX; t += 7) {
            const double x = t % SIDE + 0.13, y = t / SIDE - 0.21;
            double J[DIP_MAXP], Jp[DIP_MAXP], Jm[DIP_MAXP];
            dip_shape sh;
            dip_shape_make(q, kind, &sh);
            dip_model(kind, q, &sh, psf, 25, x, y, J);
            for (int k = 0; k < np; k++) {
                double qp[DIP_MAXP], qm[DIP_MAXP];
                memcpy(qp, q, sizeof q);
                memcpy(qm, q, sizeof q);
                const double h = 1e-5;
                qp[k] += h;
                qm[k] -= h;
                dip_shape sp, sm;
                dip_shape_make(qp, kind, &sp);
                dip_shape_make(qm, kind, &sm);
                const double fp = dip_model(kind, qp, &sp, psf, 25, x, y, Jp);
                const double fm = dip_model(kind, qm, &sm, psf, 25, x, y, Jm);
                const double num = (fp - fm) / (2 * h);
                const double e = fabs(num - J[k]) / (fabs(J[k]) + 1e-3);
                if (e > maxerr)
                    maxerr = e;
            }
        }
        printf("jacobian kind %d: max relative error %.2e\n", kind, maxerr);
        CHECK(maxerr < 1e-5);
    }
    /* The Gaussian is unit-sum (pixel-centre sampling of a well-sampled Gaussian). */
    double q[DIP_MAXP] = {1.0, log(1.8), log(1.3), 0.7, 0, 0, 0, 0}, J[DIP_MAXP], sum = 0.0;
    dip_shape sh;
    dip_shape_make(q, DIP_K_GPS, &sh);
    for (int y = -20; y <= 20; y++)
        for (int x = -20; x <= 20; x++)
            sum += dip_model(DIP_K_GPS, q, &sh, NULL, 0, x, y, J);
    CHECK_CLOSE(sum, 1.0, 1e-9);
}

/* Simulate n stamps, fit them, check bias and pull RMS of positions and flux. */
static void test_truth(tide_ctx *ctx, int model, int64_t n, uint64_t seed) {
    float *pix = malloc(sizeof(float) * n * NPIX), *var = malloc(sizeof(float) * n * NPIX);
    dsim_truth *tr = malloc(sizeof *tr * n);
    tide_dipole_fit *fit = malloc(sizeof *fit * n);
    float psf[25 * 25];
    dsim_psf(psf, 25, 1.6);
    for (int64_t s = 0; s < n; s++)
        dsim_stamp(seed, s, model, 1, SIDE, 20.0, 60.0, 3.0, 5.0, psf, 25, 1.6, pix + s * NPIX,
                   var + s * NPIX, &tr[s]);
    tide_dipole_params p;
    tide_dipole_params_default(&p);
    p.model = model;
    if (model == TIDE_DIPOLE_PSF) {
        p.psf = psf;
        p.psf_side = 25;
    }
    const double t0 = now_s();
    CHECK_OK(tide_dipole_fit_stamps(ctx, n, SIDE, pix, var, NULL, NULL, NULL, &p, fit));
    const double dt = now_s() - t0;
    printf("model %d: %lld stamps %dx%d in %.3f s on the CPU (%d threads): %.0f stamps/s "
           "(dipole + point-source fits)\n",
           model, (long long)n, SIDE, SIDE, dt, ctx->threads, n / dt);
    int64_t nconv = 0, niter = 0;
    for (int64_t s = 0; s < n; s++) {
        nconv += fit[s].status == TIDE_DIPOLE_CONVERGED;
        niter += fit[s].niter;
    }
    printf("  converged %lld / %lld, mean iterations %.1f\n", (long long)nconv, (long long)n,
           (double)niter / n);
    CHECK(nconv >= 0.99 * n);
    const int ix = model == TIDE_DIPOLE_GAUSS ? 4 : 1;
    const char *names[5] = {"xpos", "ypos", "xneg", "yneg", "flux"};
    double *pull = malloc(sizeof(double) * n), *clip = malloc(sizeof(double) * n);
    for (int k = 0; k < 5; k++) {
        for (int64_t s = 0; s < n; s++) {
            const tide_dipole_fit *f = &fit[s];
            double v, e, t;
            switch (k) {
            case 0: v = f->xpos, e = f->xpos_err, t = tr[s].q[ix]; break;
            case 1: v = f->ypos, e = f->ypos_err, t = tr[s].q[ix + 1]; break;
            case 2: v = f->xneg, e = f->xneg_err, t = tr[s].q[ix + 2]; break;
            case 3: v = f->yneg, e = f->yneg_err, t = tr[s].q[ix + 3]; break;
            default: v = f->flux, e = f->flux_err, t = tr[s].q[0]; break;
            }
            pull[s] = f->status == TIDE_DIPOLE_CONVERGED ? (v - t) / e : NAN;
            clip[s] = fabs(pull[s]) < 5.0 ? pull[s] : NAN;
        }
        double med, rms, mc, rc;
        int64_t nf, nc;
        dsim_stats(pull, n, &med, &rms, &nf);
        dsim_stats(clip, n, &mc, &rc, &nc);
        printf("  %s: median pull %+.4f, pull RMS %.4f (%lld fits), within 5 sigma %.4f "
               "(%lld)\n",
               names[k], med, rms, (long long)nf, rc, (long long)nc);
        CHECK(fabs(med) < 0.1);
        CHECK(fabs(rms - 1.0) < 0.1);
        CHECK(nc >= nf - n / 1000);
    }
    free(pull);
    free(clip);
    free(pix);
    free(var);
    free(tr);
    free(fit);
}

/* Δχ² = chi2_ps - chi2_dip separates single sources from dipoles. */
static void test_dchi2(tide_ctx *ctx, int model) {
    const int64_t n = 2000;
    float *pix = malloc(sizeof(float) * n * NPIX), *var = malloc(sizeof(float) * n * NPIX);
    dsim_truth *tr = malloc(sizeof *tr * n);
    tide_dipole_fit *fit = malloc(sizeof *fit * n);
    float psf[25 * 25];
    dsim_psf(psf, 25, 1.6);
    for (int64_t s = 0; s < n; s++)
        dsim_stamp(77, s, model, (int)(s & 1), SIDE, 15.0, 60.0, 1.5, 4.0, psf, 25, 1.6,
                   pix + s * NPIX, var + s * NPIX, &tr[s]);
    tide_dipole_params p;
    tide_dipole_params_default(&p);
    p.model = model;
    p.psf = psf;
    p.psf_side = 25;
    CHECK_OK(tide_dipole_fit_stamps(ctx, n, SIDE, pix, var, NULL, NULL, NULL, &p, fit));
    int64_t ok_single = 0, ok_dip = 0, nsingle = 0, ndip = 0, ps_conv = 0;
    double maxs = -INFINITY, mind = INFINITY;
    for (int64_t s = 0; s < n; s++) {
        const double d = fit[s].chi2_ps - fit[s].chi2_dip;
        if (tr[s].dipole) {
            ndip++;
            ok_dip += d > 25.0;
            if (d < mind)
                mind = d;
        } else {
            nsingle++;
            ps_conv += fit[s].ps_status == TIDE_DIPOLE_CONVERGED;
            ok_single += !(d > 25.0);
            if (d > maxs)
                maxs = d;
            /* the point-source fit recovers the single source */
            const int ix = model == TIDE_DIPOLE_GAUSS ? 4 : 1;
            if (fit[s].ps_status == TIDE_DIPOLE_CONVERGED)
                CHECK(fabs(fit[s].ps_x - tr[s].q[ix]) < 6 * fit[s].ps_x_err);
        }
    }
    printf("model %d: delta chi2 > 25 for %lld/%lld dipoles (min %.1f), <= 25 for %lld/%lld "
           "single sources (max %.1f); their point-source fits converged %lld/%lld\n",
           model, (long long)ok_dip, (long long)ndip, mind, (long long)ok_single,
           (long long)nsingle, maxs, (long long)ps_conv, (long long)nsingle);
    CHECK(ok_dip >= 0.99 * ndip);
    CHECK(ok_single >= 0.99 * nsingle);
    CHECK(ps_conv >= 0.99 * nsingle);
    free(pix);
    free(var);
    free(tr);
    free(fit);
}

/* Masked (and NaN) pixels do not change a fit; status codes; image coordinates. */
static void test_mask_status(tide_ctx *ctx) {
    const int64_t n = 64;
    float *pix = malloc(sizeof(float) * n * NPIX), *var = malloc(sizeof(float) * n * NPIX);
    float *pix2 = malloc(sizeof(float) * n * NPIX);
    uint16_t *mask = calloc((size_t)(n * NPIX), sizeof(uint16_t));
    dsim_truth *tr = malloc(sizeof *tr * n);
    tide_dipole_fit *f1 = malloc(sizeof *f1 * n), *f2 = malloc(sizeof *f2 * n);
    for (int64_t s = 0; s < n; s++)
        dsim_stamp(5, s, TIDE_DIPOLE_GAUSS, 1, SIDE, 30.0, 50.0, 3.0, 5.0, NULL, 0, 1.5,
                   pix + s * NPIX, var + s * NPIX, &tr[s]);
    /* mask a column through the middle and a few random pixels, with garbage in them */
    for (int64_t s = 0; s < n; s++)
        for (int t = 0; t < NPIX; t++)
            if (t % SIDE == 10 || dsim_unif(9, (uint64_t)(s * NPIX + t)) < 0.05) {
                mask[s * NPIX + t] = TIDE_MASK_BAD;
                pix[s * NPIX + t] = 1e6f;
            }
    memcpy(pix2, pix, sizeof(float) * n * NPIX);
    for (int64_t i = 0; i < n * NPIX; i++)
        if (mask[i])
            pix2[i] = (i & 1) ? NAN : -3e7f;
    tide_dipole_params p;
    tide_dipole_params_default(&p);
    CHECK_OK(tide_dipole_fit_stamps(ctx, n, SIDE, pix, var, mask, NULL, NULL, &p, f1));
    CHECK_OK(tide_dipole_fit_stamps(ctx, n, SIDE, pix2, var, mask, NULL, NULL, &p, f2));
    int64_t same = 0, close = 0;
    for (int64_t s = 0; s < n; s++) {
        same += !memcmp(&f1[s], &f2[s], sizeof f1[s]);
        close += f1[s].status == TIDE_DIPOLE_CONVERGED &&
                 fabs(f1[s].xpos - tr[s].q[4]) < 5 * f1[s].xpos_err &&
                 fabs(f1[s].flux - tr[s].q[0]) < 5 * f1[s].flux_err;
        CHECK(f1[s].npix < NPIX - SIDE);
    }
    printf("masked pixels: %lld/%lld fits bitwise identical with other garbage, %lld close to "
           "truth\n",
           (long long)same, (long long)n, (long long)close);
    CHECK(same == n);
    CHECK(close >= n - 1);
    /* Without the mask the garbage ruins the fit (the test can fail). */
    p.mask_bits = 0;
    CHECK_OK(tide_dipole_fit_stamps(ctx, 1, SIDE, pix, var, mask, NULL, NULL, &p, f2));
    CHECK(!(fabs(f2[0].flux - tr[0].q[0]) < 5 * f1[0].flux_err));

    /* Status: all masked -> bad input; empty (zero) stamp -> not converged to a dipole. */
    tide_dipole_params_default(&p);
    for (int t = 0; t < NPIX; t++)
        mask[t] = TIDE_MASK_NODATA;
    for (int t = 0; t < NPIX; t++)
        pix[NPIX + t] = 0.0f;
    CHECK_OK(tide_dipole_fit_stamps(ctx, 2, SIDE, pix, var, mask, NULL, NULL, &p, f1));
    CHECK(f1[0].status == TIDE_DIPOLE_BADINPUT);
    CHECK(f1[0].ps_status == TIDE_DIPOLE_BADINPUT);
    CHECK(isnan(f1[0].xpos) && isnan(f1[0].chi2_dip));
    printf("zero stamp: status %d ps_status %d\n", f1[1].status, f1[1].ps_status);
    CHECK(f1[1].status == TIDE_DIPOLE_BADINPUT || f1[1].status == TIDE_DIPOLE_SINGULAR);

    /* Image coordinates: x0, y0 are the stamp centre's position. */
    double x0[2] = {1000.0, 37.0}, y0[2] = {2000.0, 4.0};
    memset(mask, 0, sizeof(uint16_t) * NPIX);
    for (int64_t s = 0; s < 2; s++)
        dsim_stamp(5, s, TIDE_DIPOLE_GAUSS, 1, SIDE, 30.0, 50.0, 3.0, 5.0, NULL, 0, 1.5,
                   pix + s * NPIX, var + s * NPIX, &tr[s]);
    CHECK_OK(tide_dipole_fit_stamps(ctx, 2, SIDE, pix, var, NULL, NULL, NULL, &p, f1));
    CHECK_OK(tide_dipole_fit_stamps(ctx, 2, SIDE, pix, var, NULL, x0, y0, &p, f2));
    for (int s = 0; s < 2; s++) {
        CHECK_CLOSE(f2[s].xpos, f1[s].xpos + x0[s] - 10.0, 1e-9);
        CHECK_CLOSE(f2[s].yneg, f1[s].yneg + y0[s] - 10.0, 1e-9);
        CHECK_CLOSE(f2[s].ps_y, f1[s].ps_y + y0[s] - 10.0, 1e-9);
        CHECK(f2[s].flux == f1[s].flux);
    }
    /* Bad arguments. */
    CHECK(tide_dipole_fit_stamps(ctx, 1, 2, pix, var, NULL, NULL, NULL, &p, f1) == TIDE_E_INVAL);
    p.model = TIDE_DIPOLE_PSF;
    CHECK(tide_dipole_fit_stamps(ctx, 1, SIDE, pix, var, NULL, NULL, NULL, &p, f1) == TIDE_E_INVAL);
    CHECK(tide_dipole_fit_device(ctx, 1, SIDE, pix, var, NULL, NULL, NULL, NULL, f1) ==
          TIDE_E_NODEVICE);
    free(pix);
    free(pix2);
    free(var);
    free(mask);
    free(tr);
    free(f1);
    free(f2);
}

int main(void) {
    tide_ctx *ctx = cpu_ctx();
    if (!ctx) {
        fprintf(stderr, "no CPU context: %s\n", tide_error_detail());
        return 1;
    }
    test_jacobian();
    test_truth(ctx, TIDE_DIPOLE_GAUSS, 10000, 1);
    test_truth(ctx, TIDE_DIPOLE_PSF, 2000, 2);
    test_dchi2(ctx, TIDE_DIPOLE_GAUSS);
    test_dchi2(ctx, TIDE_DIPOLE_PSF);
    test_mask_status(ctx);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
