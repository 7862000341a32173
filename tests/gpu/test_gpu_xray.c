/* test_gpu_xray.c — the CUDA twins of tide xray's batched LPSVD (one trace per thread) and its
 * LM refinement (one trace per warp) against the CPU twin: traces of cuPhoton's validation pair
 * with parameters varied per trace, noiseless and at S/N 2400, 240 and 48, with and without
 * the LM refinement, with 5 and 8 components (8: the refinement's shared memory beyond 48 KB a
 * block), and degenerate traces; statuses equal and every parameter within 1e-9 relative (at
 * S/N 48, where a trace's likelihood has several minima nearly as deep, the share within 1e-9
 * is printed and must exceed 99%). Prints the GPU and CPU time per trace for a Jungfrau-sized
 * batch of 65536 traces (a per-pixel map is 16 such chunks). Skips without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xray_synth.h"
#include "tide_test.h"

#define NS 95
#define DT 0.1

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
        for (int run = 0; run < 3; run++) {
            const int refine = run > 0, comps = run == 2 ? 8 : 5;
            xray_synth_traces(s, n, NS, DT, sig[l], 30 + (uint64_t)l);
            CHECK_OK(tide_xray_lpsvd_batch(cpu, s, n, NS, DT, comps, refine, rc));
            CHECK_OK(tide_xray_lpsvd_batch(gpu, s, n, NS, DT, comps, refine, rg));
            double worst;
            const int64_t bad = xray_synth_compare(rc, rg, n, 1e-9, &worst);
            int64_t iters = 0;
            for (int64_t i = 0; i < n; i++) {
                CHECK(rc[i].status == rg[i].status && rc[i].reason == rg[i].reason);
                iters += rc[i].refine_iter != rg[i].refine_iter;
            }
            printf("sigma %.3g %s, %d components: %lld/%lld traces beyond 1e-9, worst relative "
                   "difference %.2e, %lld with other LM iteration counts\n",
                   sig[l], refine ? "LPSVD+LM" : "LPSVD", comps, (long long)bad, (long long)n,
                   worst, (long long)iters);
            if (sig[l] < 0.02)
                CHECK(bad == 0);
            else
                CHECK(bad * 100 < n);
        }
    /* longer traces: 120 samples (the stage kernels' frames of XRAY_GPU_NMAX) and 150 (beyond
     * it: LPSVD in one kernel with the device-buffer workspace) */
    const int lens[2] = {120, 150};
    for (int q = 0; q < 2; q++) {
        const int n2s = lens[q];
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
            for (int j = 0; j < n2s; j++)
                s[i * n2s + j] = xray_model(&t, j * DT) + 0.002 * sim_rng_gauss(&g);
        }
        CHECK_OK(tide_xray_lpsvd_batch(cpu, s, n2, n2s, DT, 2, 1, rc));
        CHECK_OK(tide_xray_lpsvd_batch(gpu, s, n2, n2s, DT, 2, 1, rg));
        double worst;
        const int64_t bad = xray_synth_compare(rc, rg, n2, 1e-9, &worst);
        printf("%d samples: %lld/%lld traces beyond 1e-9, worst %.2e\n", n2s, (long long)bad,
               (long long)n2, worst);
        CHECK(bad == 0);
    }
    /* speed: a Jungfrau-1M strip grid (1024 rows x 64 strips) of traces, printed only */
    xray_synth_traces(s, 65536, NS, DT, 0.01, 99);
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
