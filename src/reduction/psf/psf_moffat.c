/* psf_moffat.c — elliptical Moffats (Moffat 1969, A&A 3, 455) fitted to PSF stamps by
 * Levenberg–Marquardt (Marquardt 1963; damping of the normal matrix's diagonal), several
 * side by side.
 *
 * The model and its gradient are psf_moffat_model.c's. The quadratic form of the model keeps
 * the fit smooth through round shapes (no angle degeneracy at e = 0). From it: with
 * l1 <= l2 the eigenvalues of [[cxx, cxy], [cxy, cyy]], the semi-axes scale as a = 1/sqrt(l1),
 * b = 1/sqrt(l2), alpha^2 = a b, FWHM = 2 alpha sqrt(2^(1/beta) - 1) (the geometric-mean
 * FWHM, the simulator's convention), ellipticity 1 - b/a, theta the angle of the major axis
 * from +x towards +y.
 *
 * Each fit is a state machine that runs until it needs the model evaluated at a new point;
 * the evaluations all running fits need are then computed in one parallel region (every
 * pixel of every fit shared out across the team, then every row's sums), and each fit
 * resumes. A fit's arithmetic is that of a fit on its own: the PSF summary's four corner fits
 * take a quarter of the parallel regions of four fits in turn. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "psf_internal.h"
#include "tide/status.h"

#define NP PSF_MOFFAT_NP
#define NPIX PSF_MOFFAT_NPIX
#define NROW PSF_MOFFAT_NROW
#define PI 3.14159265358979323846

/* What a fit waits for. */
typedef enum { LM_EVAL_START, LM_EVAL_TRIAL, LM_DONE } lm_need;

/* One Levenberg–Marquardt run on one stamp. */
typedef struct lm_run {
    const float *stamp;
    int np;            /**< 7, or 6 with beta held */
    double gtol, rtol; /**< stopping rules (lm_iterate) */
    double p[NP];      /**< the current point */
    double jtj[NP * NP], jtr[NP], chi2, lambda;
    double trial[NP]; /**< the point being evaluated */
    int fresh;        /**< jtj, jtr are new since the last gn_gain test */
    int it;           /**< iterations */
    lm_need need;
    double *pix;  /**< side² × NPIX: each pixel's residual and gradient */
    double *rows; /**< side × NROW: each row's sums */
    double e_chi2, e_jtj[NP * NP], e_jtr[NP]; /**< the evaluation asked for */
} lm_run;

/* The stamp geometry all runs of one batch share. */
typedef struct lm_batch {
    int side, nsub;
    double rsub;
    int threads;
    lm_run **waiting; /**< room for a pointer to each run */
} lm_batch;

static int valid(const double *p, int side) {
    return p[0] > 0 && p[3] > 0 && p[5] > 0 && p[3] * p[5] - p[4] * p[4] > 0 && p[6] > 1.01 &&
           p[6] < 60.0 && p[1] > -1 && p[1] < side && p[2] > -1 && p[2] < side;
}

/* The most any step can gain under the linear model at the current point: the undamped
 * Gauss–Newton decrease g^T H^-1 g (g = J^T r, H = J^T J; chi2(p + d) ~ chi2 - 2 d.g +
 * d^T H d, least at d = H^-1 g), or INFINITY when H is not positive definite. */
static double gn_gain(int np, const double *jtj, const double *jtr) {
    double a[NP * NP], x[NP];
    for (int r = 0; r < np; r++) {
        for (int c = 0; c < np; c++)
            a[r * np + c] = jtj[r * NP + c];
        x[r] = jtr[r];
    }
    if (psf_cholesky_solve(np, a, x))
        return INFINITY;
    double g = 0.0;
    for (int k = 0; k < np; k++)
        g += x[k] * jtr[k];
    return g;
}

/* The evaluations of every run waiting for one, in one parallel region: each pixel's terms
 * (the pixels of all runs dealt out one at a time in turn: the sub-sampled discs are most
 * of the work), then each row's sums in pixel order, then per run the rows in row order, so
 * a run's chi2, J^T J and J^T r do not depend on the team or on the other runs. */
static void evaluate_waiting(const lm_batch *b, lm_run *runs, int n) {
    lm_run **w = b->waiting;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (runs[i].need != LM_DONE)
            w[m++] = &runs[i];
    const int side = b->side, npx = side * side;
#pragma omp parallel num_threads(b->threads) if (b->threads > 1)
    {
#pragma omp for schedule(static, 1)
        for (int t = 0; t < m * npx; t++) {
            const lm_run *r = w[t / npx];
            const int k = t % npx;
            psf_moffat_pixel(r->stamp, side, k % side, k / side, b->nsub, b->rsub,
                             r->need == LM_EVAL_START ? r->p : r->trial, 1,
                             r->pix + (size_t)k * NPIX);
        }
#pragma omp for schedule(static)
        for (int t = 0; t < m * side; t++) {
            const lm_run *r = w[t / side];
            const int j = t % side;
            psf_moffat_row(r->pix + (size_t)j * side * NPIX, side, r->np, 1,
                           r->rows + (size_t)j * NROW);
        }
    }
    for (int q = 0; q < m; q++) {
        lm_run *r = w[q];
        double chi2 = 0.0;
        memset(r->e_jtj, 0, sizeof r->e_jtj);
        memset(r->e_jtr, 0, sizeof r->e_jtr);
        for (int j = 0; j < side; j++) {
            const double *o = r->rows + (size_t)j * NROW;
            chi2 += o[0];
            for (int a = 0; a < NP; a++)
                r->e_jtr[a] += o[1 + a];
            for (int a = 0, t = 0; a < NP; a++)
                for (int c = 0; c <= a; c++, t++)
                    r->e_jtj[a * NP + c] += o[1 + NP + t];
        }
        for (int a = 0; a < NP; a++)
            for (int c = a + 1; c < NP; c++)
                r->e_jtj[a * NP + c] = r->e_jtj[c * NP + a];
        r->e_chi2 = chi2;
    }
}

/* Iterate until the run needs an evaluation at its trial point, or is done. Stops when no
 * step can gain more than gtol of chi2 (gn_gain, tested before a trial is evaluated: the
 * last steps of a fit are otherwise rounding noise, each evaluated and rejected while lambda
 * grows, and were half the evaluations of a free-beta fit), when an accepted step gains less
 * than gtol of chi2, or when the next step would change no parameter by more than rtol of
 * itself. */
static void lm_iterate(lm_run *r, int side) {
    const int np = r->np;
    double a[NP * NP], dlt[NP];
    for (; r->it < 200 && r->lambda < 1e10; r->it++) {
        if (r->fresh && gn_gain(np, r->jtj, r->jtr) <= r->gtol * r->chi2)
            break; /* converged */
        r->fresh = 0;
        for (int i = 0; i < np; i++)
            for (int c = 0; c < np; c++)
                a[i * np + c] = r->jtj[i * NP + c];
        for (int k = 0; k < np; k++) {
            a[k * np + k] *= 1.0 + r->lambda;
            dlt[k] = r->jtr[k];
        }
        if (psf_cholesky_solve(np, a, dlt)) {
            r->lambda *= 10.0;
            continue;
        }
        memcpy(r->trial, r->p, sizeof r->trial);
        double rel = 0.0;
        for (int k = 0; k < np; k++) {
            r->trial[k] = r->p[k] + dlt[k];
            rel = fmax(rel, fabs(dlt[k]) / fmax(fabs(r->p[k]), 1e-3));
        }
        if (rel < r->rtol)
            break;                    /* converged */
        if (!valid(r->trial, side)) { /* chi2 infinite there: rejected */
            r->lambda *= 10.0;
            continue;
        }
        r->need = LM_EVAL_TRIAL;
        return;
    }
    r->need = LM_DONE;
}

/* Resume the run with the evaluation it asked for. */
static void lm_resume(lm_run *r, int side) {
    if (r->need == LM_EVAL_START) {
        r->chi2 = r->e_chi2;
        memcpy(r->jtj, r->e_jtj, sizeof r->jtj);
        memcpy(r->jtr, r->e_jtr, sizeof r->jtr);
        r->lambda = 1e-3;
        r->fresh = 1;
        r->it = 0;
    } else {
        const double c2 = r->e_chi2;
        if (c2 <= r->chi2) {
            memcpy(r->p, r->trial, sizeof r->p);
            memcpy(r->jtj, r->e_jtj, sizeof r->jtj);
            memcpy(r->jtr, r->e_jtr, sizeof r->jtr);
            r->fresh = 1;
            const double gain = r->chi2 - c2;
            r->chi2 = c2;
            r->lambda = fmax(r->lambda * 0.1, 1e-12);
            if (gain <= r->gtol * r->chi2) { /* converged */
                r->need = LM_DONE;
                return;
            }
        } else {
            r->lambda *= 10.0;
        }
        r->it++;
    }
    lm_iterate(r, side);
}

/* Levenberg–Marquardt from each run's p (updated in place) to convergence, the runs side
 * by side. */
static void lm_all(const lm_batch *b, lm_run *runs, int n, double gtol, double rtol) {
    int waiting = 0;
    for (int i = 0; i < n; i++) {
        runs[i].gtol = gtol;
        runs[i].rtol = rtol;
        waiting += runs[i].need == LM_EVAL_START;
    }
    while (waiting) {
        evaluate_waiting(b, runs, n);
        waiting = 0;
        for (int i = 0; i < n; i++) {
            if (runs[i].need == LM_DONE)
                continue;
            lm_resume(&runs[i], b->side);
            waiting += runs[i].need != LM_DONE;
        }
    }
}

/* The fit's figures from its final point. */
static void describe(const double *p, double chi2, int side, double peak, psf_moffat *out) {
    const double tr = p[3] + p[5], det = p[3] * p[5] - p[4] * p[4];
    const double disc = sqrt(fmax(0.0, 0.25 * (p[3] - p[5]) * (p[3] - p[5]) + p[4] * p[4]));
    const double l1 = 0.5 * tr - disc, l2 = 0.5 * tr + disc;
    const double alpha = pow(det, -0.25);
    out->amp = p[0];
    out->x0 = p[1];
    out->y0 = p[2];
    out->cxx = p[3];
    out->cxy = p[4];
    out->cyy = p[5];
    out->beta = p[6];
    out->fwhm = 2.0 * alpha * sqrt(pow(2.0, 1.0 / p[6]) - 1.0);
    out->ellip = l1 > 0 ? 1.0 - sqrt(l1 / l2) : 0.0;
    out->theta_deg = 0.5 * atan2(-2.0 * p[4], p[5] - p[3]) * 180.0 / PI;
    if (out->theta_deg <= -90.0)
        out->theta_deg += 180.0;
    out->rms = sqrt(chi2 / (side * side)) / peak;
    out->ok = isfinite(out->fwhm) && out->fwhm > 0 && l1 > 0;
}

int psf_moffat_fit_many(int n, const float *const *stamps, int side, double fwhm_guess,
                        double beta_fixed, const psf_moffat *const *start, int threads,
                        psf_moffat *out) {
    for (int i = 0; i < n; i++)
        memset(&out[i], 0, sizeof out[i]);
    if (n <= 0 || side > TIDE_PSF_MAX_STAMP)
        return 0;
    int nsub = (int)ceil(15.0 / fwhm_guess);
    nsub = nsub < 3 ? 3 : (nsub > 9 ? 9 : nsub);
    nsub |= 1;
    const int h = side / 2;
    const double beta0 = beta_fixed > 1.0 ? beta_fixed : 3.0;
    const double alpha0 = fwhm_guess / (2.0 * sqrt(pow(2.0, 1.0 / beta0) - 1.0));
    const double rsub = 2.5 * fwhm_guess;
    lm_run *runs = calloc((size_t)n, sizeof *runs);
    double *peak = malloc(sizeof(double) * (size_t)n);
    /* each pixel's terms, a 64-byte line per pixel so no two threads write one line */
    const size_t per = ((size_t)side * side * NPIX + (size_t)side * NROW + 7) / 8 * 8;
    double *scratch = aligned_alloc(64, sizeof(double) * per * (size_t)n);
    int *which = malloc(sizeof(int) * (size_t)n);
    lm_run **waiting = malloc(sizeof(lm_run *) * (size_t)n);
    double(*start_p)[NP] = malloc(sizeof(double) * NP * (size_t)n);
    if (!runs || !peak || !scratch || !which || !waiting || !start_p) {
        free(runs), free(peak), free(scratch), free(which), free(waiting), free(start_p);
        return tide_error(TIDE_E_NOMEM, "psf: %d Moffat fits of %d×%d stamps", n, side, side);
    }
    int m = 0; /* the stamps with a positive peak, packed into runs[0..m) */
    for (int i = 0; i < n; i++) {
        double pk = 0.0;
        for (int k = 0; k < side * side; k++)
            pk = fmax(pk, stamps[i][k]);
        if (!(pk > 0.0))
            continue;
        lm_run *r = &runs[m];
        r->stamp = stamps[i];
        r->np = beta_fixed > 1.0 ? NP - 1 : NP; /* beta is the last parameter */
        r->pix = scratch + per * (size_t)m;
        r->rows = r->pix + (size_t)side * side * NPIX;
        const double p0[NP] = {pk,   h, h, 1.0 / (alpha0 * alpha0), 0.0, 1.0 / (alpha0 * alpha0),
                               beta0};
        memcpy(r->p, p0, sizeof r->p);
        const psf_moffat *s0 = start ? start[i] : NULL;
        if (s0 && s0->ok) {
            const double q[NP] = {pk, s0->x0, s0->y0, s0->cxx, s0->cxy, s0->cyy, beta0};
            if (valid(q, side))
                memcpy(r->p, q, sizeof r->p);
        }
        peak[m] = pk;
        which[m++] = i;
    }
    /* Every evaluation takes the caller's whole team, even the pixel-centre ones of ~15 µs on
     * one core: a smaller team leaves pool threads asleep that the next full team must wake
     * (psf_lanczos.c's note; measured slower with teams of half the threads, CHANGES.md). */
    lm_batch b = {side, 1, rsub, threads > 1 ? threads : 1, waiting};
    /* With 5 × 5 or more sub-samples, first loosely converged on pixel-centre values
     * (1/nsub^2 of the cost): the fit of the integrated model then starts near its minimum
     * and takes ~2 fewer of its evaluations; the same objective and stopping rule as a
     * single integrated fit. (At 3 × 3 the saving does not pay for the extra fit.) */
    if (nsub >= 5) {
        for (int q = 0; q < m; q++) {
            memcpy(start_p[q], runs[q].p, sizeof start_p[q]);
            runs[q].need = LM_EVAL_START;
        }
        lm_all(&b, runs, m, 1e-6, 1e-5);
        for (int q = 0; q < m; q++)
            if (!valid(runs[q].p, side))
                memcpy(runs[q].p, start_p[q], sizeof start_p[q]);
    }
    b.nsub = nsub;
    for (int q = 0; q < m; q++)
        runs[q].need = LM_EVAL_START;
    lm_all(&b, runs, m, 1e-12, 1e-9);
    for (int q = 0; q < m; q++)
        describe(runs[q].p, runs[q].chi2, side, peak[q], &out[which[q]]);
    free(runs), free(peak), free(scratch), free(which), free(waiting), free(start_p);
    return 0;
}

int psf_moffat_fit(const float *stamp, int side, double fwhm_guess, double beta_fixed,
                   const psf_moffat *start, int threads, psf_moffat *out) {
    return psf_moffat_fit_many(1, &stamp, side, fwhm_guess, beta_fixed, &start, threads, out);
}
