/* xray_synth.h — traces of cuPhoton's validation pair of damped modes, (1.25, 0.09, 2.4, 0.30)
 * and (0.45, 0.03, 0.9, −0.75) as (ω, b, A, φ) plus 0.15, with each trace's frequencies
 * varied by ±10% and amplitudes by ±20% and white noise of @p sigma (counter-based: trace i's
 * draws depend on seed and i alone); with more than 2 traces, trace 0 is zeros and trace 1
 * has a NaN (the degenerate statuses). The tide xray twin tests. */
#ifndef TIDE_TEST_XRAY_SYNTH_H
#define TIDE_TEST_XRAY_SYNTH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/rng.h"
#include "xray/xray_math.h"

static inline void xray_synth_traces(double *s, int64_t ntr, int n, double dt, double sigma,
                                     uint64_t seed) {
    for (int64_t i = 0; i < ntr; i++) {
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
        for (int j = 0; j < n; j++)
            s[i * n + j] = xray_model(&t, j * dt) + sigma * sim_rng_gauss(&g);
    }
    if (ntr > 2) {
        memset(s, 0, sizeof(double) * (size_t)n);
        s[n + 9] = NAN;
    }
}

/* |a - b| <= tol max(|a|, |b|, 1), NaN equal to NaN. */
static inline int xray_synth_close(double a, double b, double tol) {
    if (isnan(a) && isnan(b))
        return 1;
    return fabs(a - b) <= tol * fmax(fmax(fabs(a), fabs(b)), 1.0);
}

/* Traces whose results differ beyond @p tol relative (statuses, reasons and mode counts
 * must match); @p worst gets the largest relative difference below 1. */
static inline int64_t xray_synth_compare(const tide_xray_lp_result *c, const tide_xray_lp_result *g,
                                         int64_t n, double tol, double *worst) {
    int64_t bad = 0;
    *worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        int ok =
            c[i].status == g[i].status && c[i].reason == g[i].reason && c[i].nmodes == g[i].nmodes;
        if (ok && c[i].status == TIDE_XRAY_OK) {
            ok &= xray_synth_close(c[i].constant, g[i].constant, tol);
            for (int k = 0; k < c[i].nmodes; k++) {
                const double a[4] = {c[i].omega[k], c[i].decay[k], c[i].amp[k], c[i].phase[k]};
                const double b[4] = {g[i].omega[k], g[i].decay[k], g[i].amp[k], g[i].phase[k]};
                for (int q = 0; q < 4; q++) {
                    ok &= xray_synth_close(a[q], b[q], tol);
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

#endif
