/* xray_lm.h — tide xray's Levenberg–Marquardt refinement in lane form, shared by the CPU twin and
 * the CUDA kernel (TIDE_HD): on the GPU one warp refines one trace, its 32 lanes splitting the
 * samples (model rows), the entries of the normal equations and the rows of the elimination,
 * with the per-trace state in the warp's slice of shared memory; on the CPU the same code runs
 * its lanes one after another.
 *
 * Every sum keeps the order of the sequential algorithm (samples in increasing order, each
 * sum owned by one lane), so the lanes change where a number is computed, never how it
 * rounds: the CPU twin gives the bits the one-thread-per-trace code gave, and the GPU differs
 * from it only by CUDA's libm in the last bits, which the step-based stop keeps below 1e-9. */
#ifndef TIDE_XRAY_LM_H
#define TIDE_XRAY_LM_H
#include "xray/xray_lanes.h"
#include "xray/xray_math.h"

/** The most modes the refinement takes (4 parameters each, plus c). */
#define XRAY_LM_MAXMODES 8
#define XRAY_LM_MAXIT 200

/* XRAY_LM_STAT(what): a count of the refinement's work and outcomes (chi2, normal, solve,
 * rej_maxit, rej_chi, rej_wall, rej_edge, rej_nf) for a measuring harness that defines it before
 * this header (bench/xray_lm_stats.c); nothing otherwise. */
#ifndef XRAY_LM_STAT
#define XRAY_LM_STAT(what) ((void)0)
#endif

/** The most modes a refinement of fits with @p components singular values meets: a fit has at
 *  most one mode per singular value, and the refinement takes XRAY_LM_MAXMODES. */
TIDE_HD static inline int xray_lm_mode_cap(int components) {
    return components < XRAY_LM_MAXMODES ? components : XRAY_LM_MAXMODES;
}

/** Parameters of @p mcap modes and the constant. */
TIDE_HD static inline int xray_lm_params(int mcap) {
    return 4 * mcap + 1;
}

/* The scratch U: a chunk of XRAY_LANES model rows (4M + 1 derivatives and the residual), or
 * the damped system (na × na), or the lanes' χ² terms (2 × XRAY_LANES). */
TIDE_HD static inline int64_t xray_lm_scratch_doubles(int P) {
    const int64_t rows = (int64_t)XRAY_LANES * (P + 1), sys = (int64_t)P * P;
    return rows > sys ? rows : sys;
}

/** Doubles of workspace (a warp's shared memory on the GPU) xray_lm_refine needs for fits of
 *  at most @p mcap modes (min(components, XRAY_LM_MAXMODES)). */
TIDE_HD static inline int64_t xray_lm_work_doubles(int mcap) {
    const int P = xray_lm_params(mcap);
    /* θ, θ', the step, the gradient; the lower triangle of JᵀJ; two sums; U; P ints */
    return 4 * P + (int64_t)P * (P + 1) / 2 + 2 + xray_lm_scratch_doubles(P) + (P + 1) / 2;
}

/* The model at time t for theta (ω, b, A, φ per mode, then c), and when @p full is not NULL its
 * derivatives in every parameter (full[4k + 0..3] in ω_k, b_k, A_k, φ_k; full[4M] in c). */
TIDE_HD static inline double xray_lm_eval(const double *th, int M, double t, double *full) {
    double f = th[4 * M];
    for (int k = 0; k < M; k++) {
        const double om = th[4 * k], b = th[4 * k + 1], A = th[4 * k + 2], ph = th[4 * k + 3];
        const double e = exp(-b * t), a = om * t + ph, c = cos(a), s = sin(a);
        f += A * e * c;
        if (full) {
            full[4 * k + 0] = -A * t * e * s;
            full[4 * k + 1] = -A * t * e * c;
            full[4 * k + 2] = e * c;
            full[4 * k + 3] = -A * e * s;
        }
    }
    if (full)
        full[4 * M] = 1.0;
    return f;
}

/* χ² of theta over the trace into sums[0] and the sum of its rounding terms
 * |r| (|s| + |f|) into sums[1]: the lanes evaluate a chunk of samples, then lane 0 and lane 1
 * add the chunk's terms in sample order. */
TIDE_HD static inline void xray_lm_chi2(const double *s, int n, double dt, const double *th, int M,
                                        double *U, double *sums) {
    XRAY_LM_STAT(chi2);
    for (int c0 = 0; c0 < n; c0 += XRAY_LANES) {
        const int nc = n - c0 < XRAY_LANES ? n - c0 : XRAY_LANES;
        XRAY_PHASE(if (lane < nc) {
            const int j = c0 + lane;
            const double f = xray_lm_eval(th, M, j * dt, NULL), r = s[j] - f;
            U[lane] = r * r;
            U[XRAY_LANES + lane] = fabs(r) * (fabs(s[j]) + fabs(f));
        });
        XRAY_PHASE(if (lane < 2) {
            double acc = c0 ? sums[lane] : 0.0;
            for (int q = 0; q < nc; q++)
                acc += U[lane * XRAY_LANES + q];
            sums[lane] = acc;
        });
    }
}

/* The gradient g = Jᵀr and the lower triangle of JᵀJ (packed by rows: entry (a, b ≤ a) at
 * a(a+1)/2 + b) in the active parameters act[0..na): the lanes evaluate a chunk of model rows
 * into U, then each lane adds the chunk's products into the sums it owns, in sample order. */
TIDE_HD static inline void xray_lm_normal(const double *s, int n, double dt, const double *th,
                                          int M, const int *act, int na, double *U, double *g,
                                          double *Np) {
    const int W = 4 * M + 1, RW = W + 1, K = na + na * (na + 1) / 2;
    XRAY_LM_STAT(normal);
    for (int c0 = 0; c0 < n; c0 += XRAY_LANES) {
        const int nc = n - c0 < XRAY_LANES ? n - c0 : XRAY_LANES;
        XRAY_PHASE(if (lane < nc) {
            const int j = c0 + lane;
            U[lane * RW + W] = s[j] - xray_lm_eval(th, M, j * dt, U + lane * RW);
        });
        XRAY_PHASE(for (int e = lane; e < K; e += XRAY_LANES) {
            if (e < na) {
                const int a = act[e];
                double acc = c0 ? g[e] : 0.0;
                for (int q = 0; q < nc; q++)
                    acc += U[q * RW + a] * U[q * RW + W];
                g[e] = acc;
            } else {
                int b = e - na, a = 0;
                while (b > a) {
                    b -= a + 1;
                    a++;
                }
                const int ca = act[a], cb = act[b];
                double acc = c0 ? Np[e - na] : 0.0;
                for (int q = 0; q < nc; q++)
                    acc += U[q * RW + ca] * U[q * RW + cb];
                Np[e - na] = acc;
            }
        });
    }
}

/* Solve the na × na system A x = b in place (A row-major in U, destroyed; b becomes x) by
 * Gaussian elimination with partial pivoting, xray_solve's pieces: every lane finds the same
 * pivot, the lanes swap and eliminate below it a row each, lane 0 substitutes back. Returns 0,
 * or -1 when A is singular. */
TIDE_HD static inline int xray_lm_solve(double *A, double *b, int n) {
    XRAY_LM_STAT(solve);
    for (int k = 0; k < n; k++) {
        const int piv = xray_solve_pivot(A, n, k);
        if (piv < 0)
            return -1;
        if (piv != k)
            XRAY_PHASE(xray_solve_swap(A, b, n, k, piv, lane, XRAY_LANES));
        XRAY_PHASE(for (int i = k + 1 + lane; i < n; i += XRAY_LANES)
                       xray_solve_eliminate(A, b, n, k, i));
    }
    XRAY_PHASE(if (lane == 0) xray_solve_back(A, b, n));
    return 0;
}

/* Whether a mode of th lies at the band's wall (xray_lm_refine), within the relative margin
 * 1 - edge of it. */
TIDE_HD static inline int xray_lm_at_edge(const double *th, int M, int n, double dt, double edge) {
    const double span = dt * (n - 1);
    for (int k = 0; k < M; k++)
        if (fabs(th[4 * k]) >= edge * 3.141592653589793 / dt || th[4 * k + 1] >= edge / dt ||
            th[4 * k + 1] <= -2.0 * edge / span ||
            (th[4 * k] == 0.0 && th[4 * k + 1] * span <= 0.01 / edge))
            return 1;
    return 0;
}

/** Refine an LPSVD fit @p res of trace @p s (n samples, spacing dt) by Levenberg–Marquardt on
 *  every mode's (ω, b, A, φ) and c together (real modes keep ω = 0 and their sign): Marquardt's
 *  scaled damping λ diag(JᵀJ), λ from 1e-3, ÷3 after a step that lowers χ² and ×5 after one
 *  that does not (or that leaves the band |ω| <= π/dt, -2/span <= b <= 1/dt, b·span >= 0.01
 *  for a real mode). Near the minimum (λ <= 1e-2) a step within χ²'s rounding is taken too, and
 *  the iteration stops when a step moves no parameter by more than 1e-12 of max(|value|, 1)
 *  (or, below 1e-9, stops shrinking, or shrinks linearly with less than 1e-12 left to go), when
 *  no step is taken at λ > 1e12, when a mode is pressed within 1e-3 of the band's edge (a
 *  trial having just left it: rejected), or after XRAY_LM_MAXIT iterations. The result
 *  replaces @p res only when it converged within XRAY_LM_MAXIT iterations to a lower χ² with
 *  finite values and no mode at the band's edge; modes are re-sorted by amplitude. Returns the
 *  iterations, 0 when nothing was done (status not ok, or more than @p mcap modes). @p w:
 *  xray_lm_work_doubles(mcap) doubles. On the GPU every lane of one warp calls it with the same
 *  arguments (w in the warp's shared memory). */
TIDE_HD static inline int xray_lm_refine(const double *s, int n, double dt, int mcap, double *w,
                                         tide_xray_lp_result *res) {
    const int M = res->nmodes;
    if (res->status != TIDE_XRAY_OK || M < 1 || M > XRAY_LM_MAXMODES || M > mcap)
        return 0;
    const int P = xray_lm_params(mcap);
    double *th = w, *tn = th + P, *d = tn + P, *g = d + P, *Np = g + P;
    double *sums = Np + P * (P + 1) / 2, *U = sums + 2;
    int *act = (int *)(U + xray_lm_scratch_doubles(P));
    int na = 0;
    for (int k = 0; k < M; k++)
        na += res->omega[k] == 0.0 ? 2 : 4;
    na++;
    XRAY_PHASE(if (lane == 0) {
        int q = 0;
        for (int k = 0; k < M; k++) {
            th[4 * k] = res->omega[k];
            th[4 * k + 1] = res->decay[k];
            th[4 * k + 2] = res->amp[k];
            th[4 * k + 3] = res->phase[k];
            const int real = res->omega[k] == 0.0;
            if (!real)
                act[q++] = 4 * k;
            act[q++] = 4 * k + 1;
            act[q++] = 4 * k + 2;
            if (!real)
                act[q++] = 4 * k + 3;
        }
        th[4 * M] = res->constant;
        act[q] = 4 * M;
    });
    /* χ² and the bound of its rounding (16ε Σ|r|(|s| + |f|): each residual is a difference of
     * numbers of size |s| and |f| computed to a few ε) */
    xray_lm_chi2(s, n, dt, th, M, U, sums);
    double chi = sums[0], chb = sums[1];
    chb *= 16.0 * 2.220446049250313e-16;
    const double chi0 = chi;
    double lam = 1e-3, last = INFINITY;
    int it = 0, wall = 0;
    for (; it < XRAY_LM_MAXIT && lam <= 1e12; it++) {
        xray_lm_normal(s, n, dt, th, M, act, na, U, g, Np);
        int improved = 0, outside = 0;
        while (lam <= 1e12) {
            /* the damped system into U and d (xray_lm_solve destroys its inputs) */
            double *A2 = U;
            XRAY_PHASE(for (int e = lane; e < na * na; e += XRAY_LANES) {
                const int a = e / na, b = e % na, hi = a > b ? a : b, lo = a > b ? b : a;
                const double v = Np[hi * (hi + 1) / 2 + lo];
                A2[e] = a == b ? v + lam * (v > 0 ? v : 1e-300) : v;
            } for (int a = lane; a < na; a += XRAY_LANES) d[a] = g[a]);
            if (xray_lm_solve(A2, d, na)) {
                lam *= 5.0;
                continue;
            }
            XRAY_PHASE(if (lane == 0) {
                for (int a = 0; a <= 4 * M; a++)
                    tn[a] = th[a];
                for (int a = 0; a < na; a++)
                    tn[act[a]] += d[a];
            });
            xray_lm_chi2(s, n, dt, tn, M, U, sums);
            double cn = sums[0], cnb = sums[1];
            cnb *= 16.0 * 2.220446049250313e-16;
            /* a step out of the band counts as a failed one: |ω| beyond Nyquist, b beyond
             * 1/dt (a mode fitting one sample) or below -2/span (growing e² over the span), or
             * a real mode decaying by less than 1% over the span (LPSVD's own rule: such a
             * mode is the constant, and the two together would be a valley without a floor) */
            int inband = 1;
            for (int k = 0; k < M; k++)
                inband &= fabs(tn[4 * k]) <= 3.141592653589793 / dt && tn[4 * k + 1] <= 1.0 / dt &&
                          tn[4 * k + 1] >= -2.0 / (dt * (n - 1)) &&
                          (th[4 * k] != 0.0 || tn[4 * k + 1] * dt * (n - 1) >= 0.01);
            /* Near the minimum χ² is flat to rounding: it resolves the parameters only to
             * ~sqrt(ε) of their size, so a test of χ² alone would stop two backends (whose exp
             * and cos differ in the last bit) ~1e-8 apart. There a Gauss–Newton step (λ small)
             * is taken when χ² rises by no more than its rounding bound, and the iteration stops
             * on the step itself: when it moves no parameter by more than 1e-12 of max(|value|,
             * 1), or when below 1e-9 it no longer halves (the gradient's own rounding), or when
             * the steps shrink linearly (ratio ρ <= 1/2) and the distance they have left to go,
             * step ρ / (1 - ρ), is below 1e-12 (an iteration less, ~2e-13 of the value). */
            const int gn = lam <= 1e-2;
            if (inband && isfinite(cn) && (cn < chi || (gn && cn <= chi + chb + cnb))) {
                double step = 0.0;
                for (int a = 0; a < na; a++)
                    step = fmax(step, fabs(d[a]) / fmax(fabs(tn[act[a]]), 1.0));
                XRAY_PHASE(for (int a = lane; a <= 4 * M; a += XRAY_LANES) th[a] = tn[a]);
                if (cn < chi)
                    chi = cn, chb = cnb;
                const int done = gn && (step <= 1e-12 || (step < 1e-9 && step > 0.9 * last) ||
                                        (last < INFINITY && step <= 0.5 * last &&
                                         step * step <= 1e-12 * (last - step)));
                last = gn ? step : INFINITY;
                /* pressed against the wall (a trial just left the band, and a mode lies within
                 * 1e-3 of its edge): the steps would only creep towards it, tens of iterations,
                 * to be rejected below (a real mode with the constant, whose valley has its floor
                 * at b = 0) */
                wall = outside && xray_lm_at_edge(th, M, n, dt, 1.0 - 1e-3);
                improved = done || wall ? 2 : 1;
                lam /= 3.0;
                break;
            }
            outside |= !inband;
            lam *= 5.0;
        }
        if (improved != 1)
            break;
    }
    /* no better χ², or no convergence in XRAY_LM_MAXIT steps: the steps were walking a valley
     * (a slow real mode trading with the constant at amplitudes far above the data's), and
     * where they stopped says nothing */
    if (it >= XRAY_LM_MAXIT)
        return XRAY_LM_STAT(rej_maxit), it;
    if (wall)
        return XRAY_LM_STAT(rej_wall), it;
    if (!(chi < chi0) || !isfinite(chi))
        return XRAY_LM_STAT(rej_chi), it;
    for (int k = 0; k <= 4 * M; k++)
        if (!isfinite(th[k]))
            return XRAY_LM_STAT(rej_nf), it;
    /* a mode held at the band's edge is no fit: the start was a wrong mode, and the steps
     * ended against the wall (where each backend stops at its own point) */
    if (xray_lm_at_edge(th, M, n, dt, 1.0 - 1e-6))
        return XRAY_LM_STAT(rej_edge), it;
    XRAY_PHASE(if (lane == 0) {
        for (int k = 0; k < M; k++) {
            double A = th[4 * k + 2], ph = th[4 * k + 3], om = th[4 * k];
            if (A < 0) {
                A = -A;
                ph += 3.141592653589793;
            }
            if (om < 0) { /* cos(-ωt + φ) = cos(ωt - φ) */
                om = -om;
                ph = -ph;
            }
            ph = atan2(sin(ph), cos(ph));
            res->omega[k] = om;
            res->decay[k] = th[4 * k + 1];
            res->amp[k] = A;
            res->phase[k] = ph;
        }
        res->constant = th[4 * M];
        res->chi2 = chi / n;
        xray_sort_modes(res, M);
    });
    return it;
}

#endif
