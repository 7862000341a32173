/* test_gpu_xray.c — the CUDA twin of tide xray's batched LPSVD against the CPU twin: traces of
 * cuPhoton's validation pair with parameters varied per trace, noiseless and at S/N 2400, 240
 * and 48, with and without the LM refinement, and degenerate traces; statuses equal and every
 * parameter within 1e-9 relative (at S/N 48, where a trace's likelihood has several minima
 * nearly as deep, the share within 1e-9 is printed and must exceed 99%). Prints the GPU and CPU
 * time per trace for a Jungfrau-sized batch of 65536 traces. Skips without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "tide_test.h"
#include "xray/xray_math.h"

#define NS 95
#define DT 0.1

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int close_rel(double a, double b, double tol) {
    if (isnan(a) && isnan(b))
        return 1;
    return fabs(a - b) <= tol * fmax(fmax(fabs(a), fabs(b)), 1.0);
}

static void make(double *s, int64_t n, double sigma, uint64_t seed) {
    for (int64_t i = 0; i < n; i++) {
        sim_rng g = sim_rng_make(seed, 2, (uint64_t)i);
        tide_xray_lp_result t;
        memset(&t, 0, sizeof t);
        t.nmodes = 2;
        t.omega[0] = 1.25 * sim_rng_range(&g, 0.9, 1.1);
        t.omega[1] = 0.45 * sim_rng_range(&g, 0.9, 1.1);
        t.decay[0] = 0.09;
        t.decay[1] = 0.03;
        t.amp[0] = 2.4 * sim_rng_range(&g, 0.8, 1.2);
        t.amp[1] = 0.9 * sim_rng_range(&g, 0.8, 1.2);
        t.phase[0] = 0.30;
        t.phase[1] = -0.75;
        t.constant = 0.15;
        for (int j = 0; j < NS; j++)
            s[i * NS + j] = xray_model(&t, j * DT) + sigma * sim_rng_gauss(&g);
    }
    if (n > 2) { /* degenerate: zeros, a NaN */
        memset(s, 0, sizeof(double) * NS);
        s[NS + 9] = NAN;
    }
}

/* Traces whose results differ beyond tol; statuses must match exactly. */
static int64_t compare(const tide_xray_lp_result *c, const tide_xray_lp_result *g, int64_t n,
                       double tol, double *worst) {
    int64_t bad = 0;
    *worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        CHECK(c[i].status == g[i].status && c[i].reason == g[i].reason);
        int ok = c[i].status == g[i].status && c[i].nmodes == g[i].nmodes;
        if (ok && c[i].status == TIDE_XRAY_OK) {
            ok &= close_rel(c[i].constant, g[i].constant, tol);
            for (int k = 0; k < c[i].nmodes; k++) {
                const double a[4] = {c[i].omega[k], c[i].decay[k], c[i].amp[k], c[i].phase[k]};
                const double b[4] = {g[i].omega[k], g[i].decay[k], g[i].amp[k], g[i].phase[k]};
                for (int q = 0; q < 4; q++) {
                    ok &= close_rel(a[q], b[q], tol);
                    const double d = fabs(a[q] - b[q]) / fmax(fmax(fabs(a[q]), fabs(b[q])), 1.0);
                    if (d > *worst && d < 1.0)
                        *worst = d;
                }
            }
        }
        bad += !ok;
    }
    return bad;
}

int main(void) {
    if (!tide_cuda_available(NULL)) {
        printf("skip: no GPU\n");
        return 77;
    }
    tide_ctx *cpu = tide_test_ctx(TIDE_BACKEND_CPU, 0), *gpu = tide_test_ctx(TIDE_BACKEND_CUDA, 0);
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();
    const int64_t n = 4096;
    double *s = malloc(sizeof(double) * NS * 65536);
    tide_xray_lp_result *rc = malloc(sizeof *rc * 65536), *rg = malloc(sizeof *rg * 65536);
    if (!s || !rc || !rg) {
        CHECK(0);
        return TIDE_TEST_RESULT();
    }
    const double sig[4] = {0.0, 0.001, 0.01, 0.05};
    for (int l = 0; l < 4; l++)
        for (int refine = 0; refine < 2; refine++) {
            make(s, n, sig[l], 30 + (uint64_t)l);
            CHECK_OK(tide_xray_lpsvd_batch(cpu, s, n, NS, DT, 5, refine, rc));
            CHECK_OK(tide_xray_lpsvd_batch(gpu, s, n, NS, DT, 5, refine, rg));
            double worst;
            const int64_t bad = compare(rc, rg, n, 1e-9, &worst);
            printf("sigma %.3g %s: %lld/%lld traces beyond 1e-9, worst relative difference "
                   "%.2e\n",
                   sig[l], refine ? "LPSVD+LM" : "LPSVD", (long long)bad, (long long)n, worst);
            if (sig[l] < 0.02)
                CHECK(bad == 0);
            else
                CHECK(bad * 100 < n);
        }
    /* longer traces (beyond XRAY_GPU_NMAX samples: the device-buffer workspace) */
    {
        enum { N2 = 150 };
        const int64_t n2 = 1024;
        for (int64_t i = 0; i < n2; i++) {
            sim_rng g = sim_rng_make(40, 2, (uint64_t)i);
            tide_xray_lp_result t;
            memset(&t, 0, sizeof t);
            t.nmodes = 1;
            t.omega[0] = sim_rng_range(&g, 0.8, 1.6);
            t.decay[0] = 0.05;
            t.amp[0] = 1.0;
            t.phase[0] = 0.2;
            t.constant = 0.1;
            for (int j = 0; j < N2; j++)
                s[i * N2 + j] = xray_model(&t, j * DT) + 0.002 * sim_rng_gauss(&g);
        }
        CHECK_OK(tide_xray_lpsvd_batch(cpu, s, n2, N2, DT, 2, 1, rc));
        CHECK_OK(tide_xray_lpsvd_batch(gpu, s, n2, N2, DT, 2, 1, rg));
        double worst;
        const int64_t bad = compare(rc, rg, n2, 1e-9, &worst);
        printf("150 samples: %lld/%lld traces beyond 1e-9, worst %.2e\n", (long long)bad,
               (long long)n2, worst);
        CHECK(bad == 0);
    }
    /* speed: a Jungfrau-1M strip grid (1024 rows x 64 strips) of traces, printed only */
    make(s, 65536, 0.01, 99);
    for (int refine = 0; refine < 2; refine++) {
        CHECK_OK(tide_xray_lpsvd_batch(gpu, s, 1024, NS, DT, 5, refine, rg)); /* warm */
        double t0 = now_s();
        CHECK_OK(tide_xray_lpsvd_batch(gpu, s, 65536, NS, DT, 5, refine, rg));
        const double tg = now_s() - t0;
        t0 = now_s();
        CHECK_OK(tide_xray_lpsvd_batch(cpu, s, 65536, NS, DT, 5, refine, rc));
        const double tc = now_s() - t0;
        printf("65536 traces %s: GPU %.3f s (%.2f us/trace), CPU %.3f s (%.2f us/trace)\n",
               refine ? "LPSVD+LM" : "LPSVD", tg, 1e6 * tg / 65536, tc, 1e6 * tc / 65536);
    }
    free(s);
    free(rc);
    free(rg);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
