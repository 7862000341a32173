/* test_xray_lm.c — tide xray's code in lane form (xray_lm.h's refinement, xray_svd_lanes.h's
 * QR and Jacobi SVD of the R factor), on the CPU, as a proxy for its CUDA twin:
 *  - LPSVD with the lane-form QR and SVD and the refinement, the lanes of each phase run last to
 *    first, give the same bits as the CPU twin (the sequential SVD, the lanes first to last):
 *    no lane reads what another writes within a phase, which the GPU's warp, running them in
 *    no particular order, needs, and the lane form rounds as the sequential code;
 *  - the packing of the GPU's copy back (xray_pack.h) loses nothing of a result;
 *  - every sample moved by one ulp (the size of the last-bit differences of CUDA's exp, cos
 *    and sin) moves no refined parameter by more than 1e-9 relative: the step-based stop makes
 *    the result insensitive to rounding, which is what holds the GPU to the CPU within 1e-9.
 *    At S/N 48 some traces' likelihoods have several minima nearly as deep; there the share
 *    within 1e-9 must exceed 99% (test_gpu_xray's rule). */
#define XRAY_LANES_REVERSED 1 /* this file's copy of xray_lm.h; the library keeps 0..31 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xray_synth.h"
#include "tide_test.h"
#include "xray/xray_lm.h"
#include "xray/xray_pack.h"
#include "xray/xray_svd_lanes.h"

#define NS 95
#define DT 0.1
#define NTR 512

/* LPSVD + refinement of every trace with this file's (reversed-lane) xray_svd_lanes.h and
 * xray_lm.h. */
static void refine_reversed(const double *s, int64_t ntr, int n, int components,
                            tide_xray_lp_result *out) {
    const int64_t nlp = xray_lp_work_doubles(n), nlm = xray_lm_work_doubles(components);
    double *w = malloc(sizeof(double) * (size_t)(nlp + XRAY_SVD_LANES_SCRATCH(n) + nlm));
    if (!w) {
        CHECK(0);
        return;
    }
    int m, r;
    xray_lp_sizes(n, &m, &r);
    double *B = w, *V = B + m * r, *R = V + r * r, *sig = R + r * r, *red = sig + r;
    for (int64_t i = 0; i < ntr; i++) {
        /* LPSVD as the GPU runs it: the QR and the Jacobi SVD of R in lane form */
        const double *si = s + i * n;
        if (!xray_lpsvd_check(si, n, DT, components, &out[i]))
            continue;
        for (int c = 0; c < r; c++)
            for (int j = 0; j < m; j++)
                B[c * m + j] = si[c + 1 + j];
        xray_qr_r_lanes(B, m, m, r, R, red);
        xray_lpsvd_finish(si, n, DT, components, V, sig,
                          xray_jacobi_svd_lanes(R, r, r, r, V, sig, red),
                          red + XRAY_SVD_LANES_SCRATCH(r), &out[i]);
        out[i].refine_iter = xray_lm_refine(s + i * n, n, DT, components, w, &out[i]);
    }
    free(w);
}

/* The GPU's copy back packs each result's used part (xray_pack.h): unpacked, it is the result. */
static void pack_round_trip(const tide_xray_lp_result *res, int64_t ntr, int components) {
    int64_t same = 0;
    for (int64_t i = 0; i < ntr; i++) {
        int pi[XRAY_PACK_INTS];
        double pd[2 + 4 * TIDE_XRAY_MAX_COMPONENTS];
        tide_xray_lp_result u;
        memset(&u, 0, sizeof u);
        xray_pack(&res[i], components, pi, pd);
        xray_unpack(pi, pd, components, &u);
        same += !memcmp(&u, &res[i], sizeof u);
    }
    CHECK(same == ntr);
}

int main(void) {
    tide_ctx *cpu = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!cpu)
        return TIDE_TEST_RESULT();
    double *s = malloc(sizeof(double) * NS * NTR), *sp = malloc(sizeof(double) * NS * NTR);
    tide_xray_lp_result *a = malloc(sizeof *a * NTR), *b = malloc(sizeof *b * NTR);
    if (!s || !sp || !a || !b) {
        CHECK(0);
        return TIDE_TEST_RESULT();
    }
    const double sig[4] = {0.0, 0.001, 0.01, 0.05};
    const int comps[2] = {5, 8};
    for (int l = 0; l < 4; l++)
        for (int c = 0; c < 2; c++) {
            xray_synth_traces(s, NTR, NS, DT, sig[l], 50 + (uint64_t)l);
            /* memcmp below: the padding and the unused modes zero in both */
            memset(a, 0, sizeof *a * NTR);
            memset(b, 0, sizeof *b * NTR);
            CHECK_OK(tide_xray_lpsvd_batch(cpu, s, NTR, NS, DT, comps[c], 1, a));
            refine_reversed(s, NTR, NS, comps[c], b);
            int64_t same = 0, refined = 0;
            for (int64_t i = 0; i < NTR; i++) {
                same += !memcmp(&a[i], &b[i], sizeof a[i]);
                refined += a[i].refine_iter > 0;
            }
            printf("sigma %.3g, %d components: lanes reversed, %lld/%d traces the same bits "
                   "(%lld refined)\n",
                   sig[l], comps[c], (long long)same, NTR, (long long)refined);
            CHECK(same == NTR);
            CHECK(refined > NTR / 2);
            pack_round_trip(a, NTR, comps[c]);
            /* one ulp up or down per sample, by the sample's parity (zeros stay: the zero
             * trace is a status of its own) */
            for (int64_t j = 0; j < (int64_t)NS * NTR; j++)
                sp[j] = s[j] == 0.0 ? 0.0 : nextafter(s[j], (j & 1) ? INFINITY : -INFINITY);
            CHECK_OK(tide_xray_lpsvd_batch(cpu, sp, NTR, NS, DT, comps[c], 1, b));
            double worst;
            const int64_t bad = xray_synth_compare(a, b, NTR, 1e-9, &worst);
            printf("  inputs moved by one ulp: %lld/%d traces beyond 1e-9, worst relative "
                   "difference %.2e\n",
                   (long long)bad, NTR, worst);
            if (sig[l] < 0.02)
                CHECK(bad == 0);
            else
                CHECK(bad * 100 < NTR);
        }
    free(s);
    free(sp);
    free(a);
    free(b);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
