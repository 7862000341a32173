/* dipole_cpu.c — CPU twin of the batched dipole fits and of the stamp cutter. Stamps are
 * spread over OpenMP threads; inside a stamp the 32 lanes of the CUDA warp are emulated
 * (pixel t summed in lane t mod 32, lanes merged in the shuffle tree) so both backends do the
 * same additions in the same order. */
#include <math.h>
#include <string.h>
#include "dipole_kernels.h"
#include "dipole_math.h"
#include "dipole_stamp_math.h"

/* The warp's __shfl_down tree: lane l < off adds lane l + off, off = 16, 8, 4, 2, 1. */
static void lanes_merge(double (*S)[DIP_NSUM]) {
    for (int off = DIP_LANES / 2; off > 0; off >>= 1)
        for (int l = 0; l < off; l++)
            for (int k = 0; k < DIP_NSUM; k++)
                S[l][k] = S[l][k] + S[l + off][k];
}

static void run_fit(dip_lm *st, int side, const float *P, const float *V, const uint16_t *M,
                    uint16_t bits, const float *psf, int psf_side) {
    const int npix = side * side;
    double S[DIP_LANES][DIP_NSUM];
    while (!st->done) {
        memset(S, 0, sizeof S);
        dip_shape sh;
        dip_fit_shape(st->ptry, st->kind, &sh);
        for (int t = 0; t < npix; t++) {
            const double w = dip_weight(P[t], V[t], M ? M[t] : 0, bits);
            if (w > 0.0)
                dip_accum(st->kind, &sh, psf, psf_side, (double)(t % side), (double)(t / side),
                          (double)P[t], w, S[t % DIP_LANES]);
        }
        lanes_merge(S);
        dip_lm_step(st, S[0]);
    }
}

static void fit_one(const tide_dipole_job *jb, int64_t s) {
    const int side = jb->side, npix = side * side;
    const tide_dipole_params *p = &jb->p;
    const float *P = jb->pix + s * npix, *V = jb->var + s * npix;
    const uint16_t *M = jb->mask ? jb->mask + s * npix : NULL;
    const float *psf =
        p->psf ? p->psf + (p->psf_per_stamp ? s * p->psf_side * p->psf_side : 0) : NULL;
    int tp = -1, tn = -1, ta = -1;
    double sp = NAN, sn = NAN, sa = NAN;
    for (int t = 0; t < npix; t++) {
        const double sc = dip_score(P, V, M, p->mask_bits, side, t);
        if (dip_better(sc, t, sp, tp))
            sp = sc, tp = t;
        if (dip_better(-sc, t, sn, tn))
            sn = -sc, tn = t;
        if (dip_better(fabs(sc), t, sa, ta))
            sa = fabs(sc), ta = t;
    }
    const int kd = p->model == TIDE_DIPOLE_PSF ? DIP_K_PDIP : DIP_K_GDIP;
    double q[DIP_MAXP];
    dip_lm dp, ps;
    dip_start(kd, side, tp, tn, p->sigma_guess, q);
    dip_lm_init(&dp, kd, q, p->max_iter, p->tol, p->lambda0, side);
    if (tp < 0 || tn < 0 || tp == tn) {
        dp.status = TIDE_DIPOLE_BADINPUT;
        dp.done = 1;
    }
    run_fit(&dp, side, P, V, M, p->mask_bits, psf, p->psf_side);
    dip_start(kd + 1, side, ta, -1, p->sigma_guess, q);
    dip_lm_init(&ps, kd + 1, q, p->max_iter, p->tol, p->lambda0, side);
    if (ta < 0 || !p->fit_ps) {
        ps.status = TIDE_DIPOLE_BADINPUT;
        ps.done = 1;
    }
    run_fit(&ps, side, P, V, M, p->mask_bits, psf, p->psf_side);
    const double h = (double)((side - 1) / 2);
    const double ox = jb->x0 ? jb->x0[s] - h : 0.0, oy = jb->y0 ? jb->y0[s] - h : 0.0;
    dip_finish_dipole(&dp, ox, oy, &jb->out[s]);
    dip_finish_ps(&ps, p->fit_ps, ox, oy, &jb->out[s]);
}

int tide_dipole_batch_cpu(tide_ctx *ctx, const tide_dipole_job *job) {
    (void)ctx;
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t s = 0; s < job->n; s++)
        fit_one(job, s);
    return 0;
}

int tide_stamp_cut_cpu(tide_ctx *ctx, const tide_stamp_job *job) {
    (void)ctx;
    const int64_t np = (int64_t)job->side * job->side;
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < job->n; s++) {
        for (int64_t t = 0; t < np; t++)
            stamp_cut_pixel(job, s, t);
        const int ok = stamp_ok(job->x[s], job->y[s]);
        if (job->cx)
            job->cx[s] = ok ? (double)stamp_centre(job->x[s]) : NAN;
        if (job->cy)
            job->cy[s] = ok ? (double)stamp_centre(job->y[s]) : NAN;
    }
    return 0;
}
