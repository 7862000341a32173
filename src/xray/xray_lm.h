/* xray_lm.h — tide xray's Levenberg–Marquardt refinement in lane form, shared by the CPU twin and
 * the CUDA kernel (TIDE_HD): on the GPU one warp refines one trace, its 32 lanes splitting the
 * samples (model rows), the entries of the normal equations and the rows of the elimination,
 * with the per-trace state in the warp's slice of shared memory; on the CPU the same code runs
 * its lanes one after another.
 *
 * Every sum keeps the order of the sequential algorithm (samples in increasing order, each
 * sum owned by one lane), so the lanes change where a number is computed, never how it
 * rounds: the CPU twin gives the bits the one-thread-per-trace code gave, and the GPU differs
 * from it only by CUDA's libm in the last bits, which the step-based stop keeps below 1e-9.
 *
 * The refinement is variable projection (Golub & Pereyra 1973, with Kaufman's 1975 Jacobian):
 * the model A e^(−bt) cos(ωt + φ) + c is linear in the Cartesian amplitudes α = A cos φ,
 * β = −A sin φ and in c, so for any (ω, b) they are solved by linear least squares, and
 * Levenberg–Marquardt steps only (ω, b). The steps come from the normal equations of all the
 * parameters, damped in (ω, b) alone: eliminating the linear block is the Schur complement
 * Jᵀ P⊥ J of Kaufman's projected Jacobian. Stepping all of (ω, b, A, φ, c) together walked, for
 * half the per-pixel traces, the valley of a slow real mode trading with the constant (their
 * amplitudes growing without bound) for the whole iteration limit. */
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

/** The most active parameters of a refinement of fits with @p components singular values:
 *  each mode takes one (real) or two of them and has two or four parameters, and the
 *  constant one, so 2 components + 1, and at most those of XRAY_LM_MAXMODES modes. */
TIDE_HD static inline int xray_lm_active_cap(int components) {
    const int a = 2 * components + 1, b = xray_lm_params(XRAY_LM_MAXMODES);
    return a < b ? a : b;
}

/* The scratch U: a chunk of XRAY_LANES model rows (4M + 1 derivatives and the residual), or
 * the damped system (A × A), or the lanes' χ² terms (2 × XRAY_LANES). */
TIDE_HD static inline int64_t xray_lm_scratch_doubles(int P, int A) {
    const int64_t rows = (int64_t)XRAY_LANES * (P + 1), sys = (int64_t)A * A;
    return rows > sys ? rows : sys;
}

/** Doubles of workspace (a warp's shared memory on the GPU) xray_lm_refine needs for fits with
 *  @p components singular values. */
TIDE_HD static inline int64_t xray_lm_work_doubles(int components) {
    const int P = xray_lm_params(xray_lm_mode_cap(components)), A = xray_lm_active_cap(components);
    /* θ and θ' (P each); the step, the gradient, the linear block's gradient and solution (A
     * each); the lower triangles of JᵀJ and of the linear block; two sums; U; 3A ints */
    return 2 * P + 4 * A + (int64_t)A * (A + 1) + 2 + xray_lm_scratch_doubles(P, A) +
           (3 * A + 1) / 2;
}

/* The model at time t for theta (ω, b, α, β per mode, then c: α e^(−bt) cos ωt +
 * β e^(−bt) sin ωt + … + c), and when @p full is not NULL its derivatives in every parameter
 * (full[4k + 0..3] in ω_k, b_k, α_k, β_k; full[4M] in c). */
TIDE_HD static inline double xray_lm_eval(const double *th, int M, double t, double *full) {
    double f = th[4 * M];
    for (int k = 0; k < M; k++) {
        const double om = th[4 * k], b = th[4 * k + 1], al = th[4 * k + 2], be = th[4 * k + 3];
#ifdef __CUDA_ARCH__
        double sn, cs; /* one argument reduction for both: the model rows are most of the work */
        sincos(om * t, &sn, &cs);
#else
        const double sn = sin(om * t), cs = cos(om * t);
#endif
        const double e = exp(-b * t), ec = e * cs, es = e * sn;
        const double v = al * ec + be * es;
        f += v;
        if (full) {
            full[4 * k + 0] = t * (be * ec - al * es);
            full[4 * k + 1] = -t * v;
            full[4 * k + 2] = ec;
            full[4 * k + 3] = es;
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
            (th[4 * k] == 0.0 && th[4 * k + 1] * span <= 0.01 / edge) ||
            (th[4 * k] != 0.0 && fabs(th[4 * k]) * span <= 0.01 / edge))
            return 1;
    return 0;
}

/* The packed lower triangle Np of an na × na symmetric system into U (row-major), each
 * diagonal entry of a parameter flagged in @p damp (NULL: none) scaled by 1 + lam (Marquardt's
 * scaled damping; an empty one gets lam · 1e-300), and g into x. */
TIDE_HD static inline void xray_lm_system(const double *Np, const double *g, int na,
                                          const int *damp, double lam, double *U, double *x) {
    XRAY_PHASE(for (int e = lane; e < na * na; e += XRAY_LANES) {
        const int a = e / na, b = e % na, hi = a > b ? a : b, lo = a > b ? b : a;
        const double v = Np[hi * (hi + 1) / 2 + lo];
        U[e] = a == b && damp && damp[a] ? v + lam * (v > 0 ? v : 1e-300) : v;
    } for (int a = lane; a < na; a += XRAY_LANES) x[a] = g[a]);
}

/* The projection of variable projection: the linear parameters lin[0..nl) of th (α, β of each
 * mode, c) replaced by the least-squares solution for th's (ω, b), by one Gauss–Newton step of
 * the linear problem from their values (exact but for rounding: the model is linear in them).
 * @p gl, @p Nl and @p dl: the linear block's gradient, triangle and step. Returns 0, or -1
 * when the linear block is singular. */
TIDE_HD static inline int xray_lm_project(const double *s, int n, double dt, double *th, int M,
                                          const int *lin, int nl, double *U, double *gl, double *Nl,
                                          double *dl) {
    xray_lm_normal(s, n, dt, th, M, lin, nl, U, gl, Nl);
    xray_lm_system(Nl, gl, nl, NULL, 0.0, U, dl);
    if (xray_lm_solve(U, dl, nl))
        return -1;
    XRAY_PHASE(if (lane == 0) for (int a = 0; a < nl; a++) th[lin[a]] += dl[a]);
    return 0;
}

/* Whether the (ω, b) of every mode of tn lie in the band (xray_lm_refine), the real modes
 * being those of th. */
TIDE_HD static inline int xray_lm_in_band(const double *th, const double *tn, int M, int n,
                                          double dt) {
    int in = 1;
    for (int k = 0; k < M; k++)
        in &= fabs(tn[4 * k]) <= 3.141592653589793 / dt && tn[4 * k + 1] <= 1.0 / dt &&
              tn[4 * k + 1] >= -2.0 / (dt * (n - 1)) &&
              (th[4 * k] != 0.0 || tn[4 * k + 1] * dt * (n - 1) >= 0.01) &&
              (th[4 * k] == 0.0 || fabs(tn[4 * k]) * dt * (n - 1) >= 0.01);
    return in;
}

/** Refine an LPSVD fit @p res of trace @p s (n samples, spacing dt) by variable projection
 *  (this file's head): Levenberg–Marquardt steps of every mode's (ω, b) together (real modes
 *  keep ω = 0), each trial's amplitudes, phases and constant solved by linear least squares.
 *  Marquardt's scaled damping λ diag(JᵀJ) on the (ω, b) entries, λ from 1e-3, ÷3 after a
 *  step that lowers χ² and ×5 after one that does not (or that leaves the band: |ω| <= π/dt,
 *  -2/span <= b <= 1/dt, b·span >= 0.01 for a real mode, |ω|·span >= 0.01 for another).
 *  Near the minimum (λ <= 1e-2) a step within χ²'s rounding is taken too, and the iteration
 *  stops when a step moves no (ω, b) by more than 1e-12 of max(|value|, 1) (or, below 1e-9,
 *  stops shrinking, or shrinks linearly with less than 1e-12 left to go), when no step is
 *  taken at λ > 1e12, when a mode is pressed within 1e-3 of the band's edge (a trial having
 *  just left it: rejected), or after XRAY_LM_MAXIT iterations. The result replaces @p res
 *  only when it converged within XRAY_LM_MAXIT iterations to a lower χ² with finite values
 *  and no mode at the band's edge; modes are re-sorted by amplitude. Returns the iterations,
 *  0 when nothing was done (status not ok, or more modes than xray_lm_mode_cap(@p
 *  components)). @p w: xray_lm_work_doubles(components) doubles. On the GPU every lane of one warp
 * calls it with the same arguments (w in the warp's shared memory). */
TIDE_HD static inline int xray_lm_refine(const double *s, int n, double dt, int components,
                                         double *w, tide_xray_lp_result *res) {
    const int M = res->nmodes, mcap = xray_lm_mode_cap(components);
    const int P = xray_lm_params(mcap), A = xray_lm_active_cap(components);
    int na = 0, nl = 0;
    for (int k = 0; k < M; k++) {
        const int real = res->omega[k] == 0.0;
        na += real ? 2 : 4;
        nl += real ? 1 : 2;
    }
    na++;
    nl++;
    if (res->status != TIDE_XRAY_OK || M < 1 || M > mcap || na > A)
        return 0;
    double *th = w, *tn = th + P, *d = tn + P, *g = d + A, *gl = g + A, *dl = gl + A;
    double *Np = dl + A, *Nl = Np + A * (A + 1) / 2, *sums = Nl + A * (A + 1) / 2, *U = sums + 2;
    int *act = (int *)(U + xray_lm_scratch_doubles(P, A)), *nonlin = act + A, *lin = nonlin + A;
    /* act: every parameter, nonlin[a]: whether act[a] is an ω or a b; lin: the linear ones */
    XRAY_PHASE(if (lane == 0) {
        int q = 0, l = 0;
        for (int k = 0; k < M; k++) {
            const int real = res->omega[k] == 0.0;
            th[4 * k] = res->omega[k];
            th[4 * k + 1] = res->decay[k];
            th[4 * k + 2] = res->amp[k] * cos(res->phase[k]);
            th[4 * k + 3] = real ? 0.0 : -res->amp[k] * sin(res->phase[k]);
            if (!real) {
                nonlin[q] = 1;
                act[q++] = 4 * k;
            }
            nonlin[q] = 1;
            act[q++] = 4 * k + 1;
            nonlin[q] = 0;
            act[q++] = lin[l++] = 4 * k + 2;
            if (!real) {
                nonlin[q] = 0;
                act[q++] = lin[l++] = 4 * k + 3;
            }
        }
        th[4 * M] = res->constant;
        nonlin[q] = 0;
        act[q] = lin[l] = 4 * M;
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
        /* at (ω, b) and their projected amplitudes: the linear block's gradient is ~0, and the
         * damped solve's (ω, b) part is the projected problem's step */
        xray_lm_normal(s, n, dt, th, M, act, na, U, g, Np);
        int improved = 0, outside = 0;
        while (lam <= 1e12) {
            xray_lm_system(Np, g, na, nonlin, lam, U, d);
            if (xray_lm_solve(U, d, na)) {
                lam *= 5.0;
                continue;
            }
            XRAY_PHASE(if (lane == 0) {
                for (int a = 0; a <= 4 * M; a++)
                    tn[a] = th[a];
                for (int a = 0; a < na; a++)
                    if (nonlin[a])
                        tn[act[a]] += d[a];
            });
            /* a step out of the band counts as a failed one: |ω| beyond Nyquist, b beyond
             * 1/dt (a mode fitting one sample) or below -2/span (growing e² over the span), a
             * real mode decaying by less than 1% over the span (LPSVD's own rule: such a mode
             * is the constant), or an oscillating one turning by less than 0.01 rad over it
             * (a limit of t e^(−bt) with β ~ 1/ω: a valley without a floor) */
            const int inband = xray_lm_in_band(th, tn, M, n, dt);
            double cn = INFINITY, cnb = 0.0;
            if (inband && !xray_lm_project(s, n, dt, tn, M, lin, nl, U, gl, Nl, dl)) {
                xray_lm_chi2(s, n, dt, tn, M, U, sums);
                cn = sums[0];
                cnb = sums[1] * 16.0 * 2.220446049250313e-16;
            }
            /* Near the minimum χ² is flat to rounding: it resolves the parameters only to
             * ~sqrt(ε) of their size, so a test of χ² alone would stop two backends (whose exp
             * and cos differ in the last bit) ~1e-8 apart. There a Gauss–Newton step (λ small)
             * is taken when χ² rises by no more than its rounding bound, and the iteration stops
             * on the step itself: when it moves no (ω, b) by more than 1e-12 of max(|value|,
             * 1), or when below 1e-9 it no longer halves (the gradient's own rounding), or when
             * the steps shrink linearly (ratio ρ <= 1/2) and the distance they have left to go,
             * step ρ / (1 - ρ), is below 1e-12 (an iteration less, ~2e-13 of the value). */
            const int gn = lam <= 1e-2;
            if (inband && isfinite(cn) && (cn < chi || (gn && cn <= chi + chb + cnb))) {
                double step = 0.0;
                for (int a = 0; a < na; a++)
                    if (nonlin[a])
                        step = fmax(step, fabs(d[a]) / fmax(fabs(tn[act[a]]), 1.0));
                XRAY_PHASE(for (int a = lane; a <= 4 * M; a += XRAY_LANES) th[a] = tn[a]);
                if (cn < chi)
                    chi = cn, chb = cnb;
                const int done = gn && (step <= 1e-12 || (step < 1e-9 && step > 0.9 * last) ||
                                        (last < INFINITY && step <= 0.5 * last &&
                                         step * step <= 1e-12 * (last - step)));
                last = gn ? step : INFINITY;
                /* pressed against the wall (a trial just left the band, and a mode lies within
                 * 1e-3 of its edge): the steps would only creep towards it, to be rejected
                 * below (a real mode with the constant, whose valley has its floor at b = 0) */
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
    /* no better χ², or no convergence in XRAY_LM_MAXIT steps: where the steps stopped says
     * nothing */
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
            double om = th[4 * k], al = th[4 * k + 2], be = th[4 * k + 3];
            if (om < 0) { /* e(α cos ωt + β sin ωt) with ω < 0 is the same with -ω, -β */
                om = -om;
                be = -be;
            }
            res->omega[k] = om;
            res->decay[k] = th[4 * k + 1];
            res->amp[k] = sqrt(al * al + be * be);
            res->phase[k] = atan2(0.0 - be, al); /* 0 - β: +0 for a real mode's β = 0 */
        }
        res->constant = th[4 * M];
        res->chi2 = chi / n;
        xray_sort_modes(res, M);
    });
    return it;
}

#endif
