/* test_xray_lpsvd.c — recovery of cuPhoton's validation pair of damped modes by tide's batched
 * LPSVD (with and without the Levenberg–Marquardt refinement) across an S/N sweep, against the
 * Cramér–Rao bounds from the model's Jacobian: bias and scatter per parameter in units of the
 * bound. Also noiseless recovery to 1e-8, statuses of degenerate traces, and the CPU time per
 * trace (printed, never asserted). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "tide_test.h"
#include "xray/xray_math.h"

#define NS 95 /* samples after the zero delay: cuPhoton's 96 over 9.5 units, minus one */
#define DT 0.1
#define NTRIAL 300

static tide_xray_lp_result truth(void) {
    tide_xray_lp_result t;
    memset(&t, 0, sizeof t);
    const double om[2] = {1.25, 0.45}, de[2] = {0.09, 0.03}, am[2] = {2.4, 0.9},
                 ph[2] = {0.30, -0.75};
    t.nmodes = 2;
    for (int k = 0; k < 2; k++) {
        t.omega[k] = om[k];
        t.decay[k] = de[k];
        t.amp[k] = am[k];
        t.phase[k] = ph[k];
    }
    t.constant = 0.15;
    return t;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The fitted mode nearest truth mode k in ω (within 0.3 rad/unit, cuPhoton's matching), or -1. */
static int match(const tide_xray_lp_result *r, double om) {
    int b = -1;
    for (int i = 0; i < r->nmodes; i++)
        if (fabs(r->omega[i] - om) < 0.3 &&
            (b < 0 || fabs(r->omega[i] - om) < fabs(r->omega[b] - om)))
            b = i;
    return b;
}

static void noiseless(tide_ctx *ctx) {
    const tide_xray_lp_result t = truth();
    double s[NS];
    for (int j = 0; j < NS; j++)
        s[j] = xray_model(&t, j * DT);
    for (int refine = 0; refine < 2; refine++) {
        tide_xray_lp_result r;
        CHECK_OK(tide_xray_lpsvd_batch(ctx, s, 1, NS, DT, 5, refine, &r));
        CHECK(r.status == TIDE_XRAY_OK);
        CHECK(r.nmodes == 2);
        for (int k = 0; k < 2 && r.nmodes == 2; k++) {
            CHECK_CLOSE(r.omega[k], t.omega[k], 1e-8);
            CHECK_CLOSE(r.decay[k], t.decay[k], 1e-8);
            CHECK_CLOSE(r.amp[k], t.amp[k], 1e-8);
            CHECK_CLOSE(r.phase[k], t.phase[k], 1e-8);
        }
        CHECK_CLOSE(r.constant, t.constant, 1e-8);
        CHECK(r.chi2 < 1e-20);
    }
    /* more components than the signal holds: extra singular values are noise-free zeros */
    tide_xray_lp_result r;
    CHECK_OK(tide_xray_lpsvd_batch(ctx, s, 1, NS, DT, 12, 0, &r));
    CHECK(r.status == TIDE_XRAY_OK);
    CHECK(match(&r, 1.25) >= 0 && match(&r, 0.45) >= 0);
    if (r.status == TIDE_XRAY_OK && match(&r, 1.25) >= 0)
        CHECK_CLOSE(r.omega[match(&r, 1.25)], 1.25, 1e-6);
}

static void degenerate(tide_ctx *ctx) {
    double s[3 * NS];
    memset(s, 0, sizeof s); /* trace 0: zeros */
    for (int j = 0; j < NS; j++)
        s[NS + j] = j == 7 ? NAN : 1.0; /* trace 1: a NaN */
    for (int j = 0; j < NS; j++)
        s[2 * NS + j] = 0.5; /* trace 2: a constant, no mode */
    tide_xray_lp_result r[3];
    CHECK_OK(tide_xray_lpsvd_batch(ctx, s, 3, NS, DT, 5, 1, r));
    CHECK(r[0].status == TIDE_XRAY_SKIPPED && r[0].reason == TIDE_XRAY_R_ZERO);
    CHECK(r[1].status == TIDE_XRAY_SKIPPED && r[1].reason == TIDE_XRAY_R_NONFINITE);
    CHECK(r[2].status == TIDE_XRAY_FAILED && r[2].reason == TIDE_XRAY_R_NOMODE);
    CHECK(tide_xray_lpsvd_batch(ctx, s, 1, NS, DT, 0, 0, r) == TIDE_E_INVAL);
    CHECK(tide_xray_lpsvd_batch(ctx, s, 1, NS, 0.0, 5, 0, r) == TIDE_E_INVAL);
}

/* One S/N level: NTRIAL noisy traces; bias and scatter of every parameter over its bound. */
static void sweep(tide_ctx *ctx, double sigma, int refine, int strict) {
    const tide_xray_lp_result t = truth();
    double crb[9];
    CHECK_OK(tide_xray_crb(&t, NS, DT, sigma, crb));
    double *s = malloc(sizeof(double) * NS * NTRIAL);
    tide_xray_lp_result *r = malloc(sizeof *r * NTRIAL);
    if (!s || !r) {
        CHECK(0);
        free(s);
        free(r);
        return;
    }
    for (int i = 0; i < NTRIAL; i++) {
        sim_rng g = sim_rng_make(20, 1, (uint64_t)i);
        for (int j = 0; j < NS; j++)
            s[i * NS + j] = xray_model(&t, j * DT) + sigma * sim_rng_gauss(&g);
    }
    const double t0 = now_s();
    CHECK_OK(tide_xray_lpsvd_batch(ctx, s, NTRIAL, NS, DT, 5, refine, r));
    const double el = now_s() - t0;
    double sum[9] = {0}, sq[9] = {0};
    int nm = 0, nok = 0;
    for (int i = 0; i < NTRIAL; i++) {
        nok += r[i].status == TIDE_XRAY_OK;
        const int a = match(&r[i], 1.25), b = match(&r[i], 0.45);
        if (r[i].status != TIDE_XRAY_OK || a < 0 || b < 0 || a == b)
            continue;
        nm++;
        const int id[2] = {a, b};
        for (int k = 0; k < 2; k++) {
            double d[4] = {r[i].omega[id[k]] - t.omega[k], r[i].decay[id[k]] - t.decay[k],
                           r[i].amp[id[k]] - t.amp[k], r[i].phase[id[k]] - t.phase[k]};
            d[3] = atan2(sin(d[3]), cos(d[3]));
            for (int q = 0; q < 4; q++) {
                sum[4 * k + q] += d[q];
                sq[4 * k + q] += d[q] * d[q];
            }
        }
        sum[8] += r[i].constant - t.constant;
        sq[8] += (r[i].constant - t.constant) * (r[i].constant - t.constant);
    }
    printf("sigma %.4g (S/N %.0f) %s: %d/%d ok, %d matched, %.1f us/trace\n", sigma,
           t.amp[0] / sigma, refine ? "LPSVD+LM" : "LPSVD   ", nok, NTRIAL, nm, 1e6 * el / NTRIAL);
    const char *nm9[9] = {"w1", "b1", "A1", "p1", "w2", "b2", "A2", "p2", "c"};
    printf("   bias/CRB:");
    for (int q = 0; q < 9; q++)
        printf(" %s %+.2f", nm9[q], nm ? sum[q] / nm / crb[q] : NAN);
    printf("\n   std/CRB: ");
    for (int q = 0; q < 9; q++) {
        const double m = nm ? sum[q] / nm : 0, v = nm ? sq[q] / nm - m * m : 0;
        printf(" %s %.2f", nm9[q], sqrt(fmax(v, 0)) / crb[q]);
    }
    printf("\n");
    /* strict 2: every parameter efficient; 1: the fast mode efficient, the slow one (0.68
     * cycles over the span, nearly collinear with the constant and its own damping) has a
     * likelihood with other minima of lower χ² than the truth's, so only a loose bound; 0:
     * reported only */
    for (int q = 0; q < 9 && nm > 0 && strict > 0; q++) {
        const double m = sum[q] / nm, sd = sqrt(fmax(sq[q] / nm - m * m, 0));
        const int tight = strict == 2 || q < 4;
        /* the mean of NTRIAL draws scatters by CRB/sqrt(NTRIAL) = 0.06 CRB */
        const double bmax = tight ? (q == 1 && strict == 1 ? 0.5 : 0.3) : 1.0;
        const double lo = tight ? 0.8 : 0.0, hi = tight ? 1.25 : 2.0;
        if (!(fabs(m) < bmax * crb[q] && sd > lo * crb[q] && sd < hi * crb[q]))
            printf("   FAIL %s: bias %.3g, scatter %.3g CRB\n", nm9[q], m / crb[q], sd / crb[q]);
        CHECK(fabs(m) < bmax * crb[q]);
        CHECK(sd > lo * crb[q] && sd < hi * crb[q]);
    }
    if (strict > 0)
        CHECK(nm >= NTRIAL * 98 / 100);
    free(s);
    free(r);
}

int main(void) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!ctx)
        return TIDE_TEST_RESULT();
    noiseless(ctx);
    degenerate(ctx);
    /* S/N = A1 / σ of 2400, 600 and 240 (and 48, reported) */
    const double sig[4] = {0.001, 0.004, 0.01, 0.05};
    const int strict[4] = {2, 2, 1, 0};
    for (int i = 0; i < 4; i++) {
        sweep(ctx, sig[i], 0, 0);
        sweep(ctx, sig[i], 1, strict[i]);
    }
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
