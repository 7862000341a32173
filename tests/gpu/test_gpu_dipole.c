/* test_gpu_dipole.c — CUDA twins of the dipole fits, the stamp cutter and the candidate
 * preparation against the CPU: 10^5 random simulated Gaussian dipoles fitted on the GPU
 * (unbiased, calibrated errors), CPU vs GPU fits agreeing to 1e-6 relative (Gaussian and PSF
 * models, one PSF for all and one per stamp, masks, awkward stamp sizes), and the GPU
 * throughput for 21×21 stamps (host arrays and device-resident). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tide/dipole.h"
#include "tide/memory.h"
#include "tide/tide.h"
#include "tide_test.h"
#include "common/detect_synth.h"
#include "unit/test_dipole_sim.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int rel_ok(double a, double b, double tol) {
    if (isnan(a) && isnan(b))
        return 1;
    return fabs(a - b) <= tol * fmax(fmax(fabs(a), fabs(b)), 1.0);
}

/* Compare fits; returns the number of stamps whose status differs. */
static int64_t compare(const tide_dipole_fit *c, const tide_dipole_fit *g, int64_t n, double tol,
                       const char *what) {
    int64_t nstat = 0, nbad = 0, ncmp = 0;
    double worst = 0.0;
    for (int64_t s = 0; s < n; s++) {
        if (c[s].status != g[s].status || c[s].ps_status != g[s].ps_status) {
            nstat++;
            continue;
        }
        if (c[s].status != TIDE_DIPOLE_CONVERGED)
            continue;
        ncmp++;
        const double a[] = {c[s].xpos,    c[s].ypos,     c[s].xneg,     c[s].yneg,
                            c[s].flux,    c[s].xpos_err, c[s].flux_err, c[s].chi2_dip,
                            c[s].chi2_ps, c[s].ps_x,     c[s].ps_flux,  c[s].sigma1};
        const double b[] = {g[s].xpos,    g[s].ypos,     g[s].xneg,     g[s].yneg,
                            g[s].flux,    g[s].xpos_err, g[s].flux_err, g[s].chi2_dip,
                            g[s].chi2_ps, g[s].ps_x,     g[s].ps_flux,  g[s].sigma1};
        int bad = 0;
        for (size_t k = 0; k < sizeof a / sizeof a[0]; k++) {
            if (!rel_ok(a[k], b[k], tol))
                bad = 1;
            if (isfinite(a[k]) && isfinite(b[k])) {
                const double r = fabs(a[k] - b[k]) / fmax(fmax(fabs(a[k]), fabs(b[k])), 1.0);
                if (r > worst)
                    worst = r;
            }
        }
        nbad += bad;
        if (c[s].npix != g[s].npix)
            nbad++;
    }
    printf("%s: %lld stamps, status differs for %lld, %lld converged compared, %lld beyond "
           "%.0e relative (worst %.2e)\n",
           what, (long long)n, (long long)nstat, (long long)ncmp, (long long)nbad, tol, worst);
    CHECK(nbad <= n / 10000);
    return nstat;
}

static void sim_batch(int64_t n, int side, int model, uint64_t seed, const float *psf, int psf_side,
                      float *pix, float *var, uint16_t *mask, dsim_truth *tr) {
    const int64_t np = (int64_t)side * side;
    for (int64_t s = 0; s < n; s++) {
        dsim_stamp(seed, s, model, 1, side, 20.0, 60.0, 3.0, 5.0, psf, psf_side, 1.6, pix + s * np,
                   var + s * np, &tr[s]);
        if (mask)
            for (int64_t t = 0; t < np; t++)
                mask[s * np + t] =
                    dsim_unif(seed + 99, (uint64_t)(s * np + t)) < 0.03 ? TIDE_MASK_COSMIC : 0;
    }
}

static void truth_stats(const tide_dipole_fit *f, const dsim_truth *tr, int64_t n) {
    double *pull = malloc(sizeof(double) * n);
    const char *names[5] = {"xpos", "ypos", "xneg", "yneg", "flux"};
    int64_t nconv = 0;
    for (int64_t s = 0; s < n; s++)
        nconv += f[s].status == TIDE_DIPOLE_CONVERGED;
    printf("GPU truth test: %lld / %lld converged\n", (long long)nconv, (long long)n);
    CHECK(nconv >= 0.99 * n);
    for (int k = 0; k < 5; k++) {
        for (int64_t s = 0; s < n; s++) {
            double v, e, t;
            switch (k) {
            case 0: v = f[s].xpos, e = f[s].xpos_err, t = tr[s].q[4]; break;
            case 1: v = f[s].ypos, e = f[s].ypos_err, t = tr[s].q[5]; break;
            case 2: v = f[s].xneg, e = f[s].xneg_err, t = tr[s].q[6]; break;
            case 3: v = f[s].yneg, e = f[s].yneg_err, t = tr[s].q[7]; break;
            default: v = f[s].flux, e = f[s].flux_err, t = tr[s].q[0]; break;
            }
            pull[s] = f[s].status == TIDE_DIPOLE_CONVERGED ? (v - t) / e : NAN;
        }
        double med, rms;
        int64_t nf;
        dsim_stats(pull, n, &med, &rms, &nf);
        printf("  %s: median pull %+.4f, pull RMS %.4f (%lld fits)\n", names[k], med, rms,
               (long long)nf);
        CHECK(fabs(med) < 0.1);
        CHECK(fabs(rms - 1.0) < 0.1);
    }
    free(pull);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *cpu = NULL, *gpu = NULL;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    if (!cpu || !gpu)
        return 1;

    /* 1. 10^5 Gaussian dipoles 21×21 on the GPU: truth; first 20000 against the CPU. */
    const int side = 21, np = side * side;
    const int64_t n = 100000, ncpu = 20000;
    float *pix = malloc(sizeof(float) * n * np), *var = malloc(sizeof(float) * n * np);
    dsim_truth *tr = malloc(sizeof *tr * n);
    tide_dipole_fit *fg = malloc(sizeof *fg * n), *fc = malloc(sizeof *fc * n);
    sim_batch(n, side, TIDE_DIPOLE_GAUSS, 11, NULL, 0, pix, var, NULL, tr);
    tide_dipole_params p;
    tide_dipole_params_default(&p);
    CHECK_OK(tide_dipole_fit_stamps(gpu, 1000, side, pix, var, NULL, NULL, NULL, &p, fg));
    double t0 = now_s();
    CHECK_OK(tide_dipole_fit_stamps(gpu, n, side, pix, var, NULL, NULL, NULL, &p, fg));
    const double t_host = now_s() - t0;
    t0 = now_s();
    CHECK_OK(tide_dipole_fit_stamps(cpu, ncpu, side, pix, var, NULL, NULL, NULL, &p, fc));
    const double t_cpu = now_s() - t0;
    truth_stats(fg, tr, n);
    const int64_t nst = compare(fc, fg, ncpu, 1e-6, "gauss 21x21");
    CHECK(nst <= ncpu / 1000);

    /* Device-resident throughput (what a GPU pipeline that cuts its own stamps sees). */
    void *dp = NULL, *dv = NULL, *dout = NULL;
    CHECK_OK(tide_device_alloc(gpu, sizeof(float) * n * np, &dp));
    CHECK_OK(tide_device_alloc(gpu, sizeof(float) * n * np, &dv));
    CHECK_OK(tide_device_alloc(gpu, sizeof(tide_dipole_fit) * n, &dout));
    CHECK_OK(tide_memcpy(gpu, dp, 1, pix, 0, sizeof(float) * n * np));
    CHECK_OK(tide_memcpy(gpu, dv, 1, var, 0, sizeof(float) * n * np));
    tide_dipole_params pd = p;
    pd.fit_ps = 0;
    CHECK_OK(tide_dipole_fit_device(gpu, n, side, dp, dv, NULL, NULL, NULL, &pd, dout));
    CHECK_OK(tide_sync(gpu));
    t0 = now_s();
    CHECK_OK(tide_dipole_fit_device(gpu, n, side, dp, dv, NULL, NULL, NULL, &pd, dout));
    CHECK_OK(tide_sync(gpu));
    const double t_dev_dip = now_s() - t0;
    t0 = now_s();
    CHECK_OK(tide_dipole_fit_device(gpu, n, side, dp, dv, NULL, NULL, NULL, &p, dout));
    CHECK_OK(tide_sync(gpu));
    const double t_dev = now_s() - t0;
    /* PSF-model throughput (one 25x25 PSF for all; the data are Gaussian dipoles). */
    float hpsf[25 * 25];
    dsim_psf(hpsf, 25, 1.6);
    void *dpsf = NULL;
    CHECK_OK(tide_device_alloc(gpu, sizeof hpsf, &dpsf));
    CHECK_OK(tide_memcpy(gpu, dpsf, 1, hpsf, 0, sizeof hpsf));
    tide_dipole_params pq = p;
    pq.model = TIDE_DIPOLE_PSF;
    pq.psf = dpsf;
    pq.psf_side = 25;
    t0 = now_s();
    CHECK_OK(tide_dipole_fit_device(gpu, n, side, dp, dv, NULL, NULL, NULL, &pq, dout));
    CHECK_OK(tide_sync(gpu));
    const double t_dev_psf = now_s() - t0;
    tide_device_free(gpu, dpsf);
    printf("THROUGHPUT 21x21 PSF dipole + point-source fits (25x25 PSF): %.0f stamps/s "
           "device-resident\n",
           n / t_dev_psf);
    CHECK_OK(tide_dipole_fit_device(gpu, n, side, dp, dv, NULL, NULL, NULL, &p, dout));
    CHECK_OK(tide_sync(gpu));
    /* the device entry gives the same bits as the host one */
    tide_dipole_fit *fd = malloc(sizeof *fd * n);
    CHECK_OK(tide_memcpy(gpu, fd, 0, dout, 1, sizeof *fd * n));
    int64_t ndiff = 0;
    for (int64_t s = 0; s < n; s++)
        ndiff += memcmp(&fd[s], &fg[s], sizeof fd[s]) != 0;
    CHECK(ndiff == 0);
    tide_device_free(gpu, dout);
    tide_device_free(gpu, dv);
    tide_device_free(gpu, dp);
    printf("THROUGHPUT 21x21 Gaussian dipole + point-source fits: GPU %.0f stamps/s from host "
           "arrays, %.0f stamps/s device-resident, %.0f stamps/s dipole only (device); CPU %.0f "
           "stamps/s (%d threads) [target >= 1000000 on an H200]\n",
           n / t_host, n / t_dev, n / t_dev_dip, ncpu / t_cpu, cpu->threads);

    /* 2. PSF model: one PSF for all, then one per stamp; masks; an awkward stamp size. */
    const int side2 = 17, np2 = side2 * side2, ps = 25;
    const int64_t n2 = 3001;
    float *psf = malloc(sizeof(float) * n2 * ps * ps);
    dsim_psf(psf, ps, 1.6);
    float *pix2 = malloc(sizeof(float) * n2 * np2), *var2 = malloc(sizeof(float) * n2 * np2);
    uint16_t *mask2 = malloc(sizeof(uint16_t) * n2 * np2);
    sim_batch(n2, side2, TIDE_DIPOLE_PSF, 12, psf, ps, pix2, var2, mask2, tr);
    tide_dipole_params pp;
    tide_dipole_params_default(&pp);
    pp.model = TIDE_DIPOLE_PSF;
    pp.psf = psf;
    pp.psf_side = ps;
    double *x0 = malloc(sizeof(double) * n2), *y0 = malloc(sizeof(double) * n2);
    for (int64_t s = 0; s < n2; s++)
        x0[s] = 1000.0 + s, y0[s] = 3000.0 - 0.5 * s;
    CHECK_OK(tide_dipole_fit_stamps(gpu, n2, side2, pix2, var2, mask2, x0, y0, &pp, fg));
    CHECK_OK(tide_dipole_fit_stamps(cpu, n2, side2, pix2, var2, mask2, x0, y0, &pp, fc));
    CHECK(compare(fc, fg, n2, 1e-6, "psf 17x17, one PSF, masks") <= n2 / 1000);
    for (int64_t s = 1; s < n2; s++) /* per-stamp PSFs of varying width */
        dsim_psf(psf + s * ps * ps, ps, 1.3 + 0.6 * dsim_unif(5, (uint64_t)s));
    pp.psf_per_stamp = 1;
    CHECK_OK(tide_dipole_fit_stamps(gpu, n2, side2, pix2, var2, mask2, NULL, NULL, &pp, fg));
    CHECK_OK(tide_dipole_fit_stamps(cpu, n2, side2, pix2, var2, mask2, NULL, NULL, &pp, fc));
    CHECK(compare(fc, fg, n2, 1e-6, "psf 17x17, per-stamp PSF, masks") <= n2 / 300);
    /* Gaussian model with masks on 17x17 stamps. */
    CHECK_OK(tide_dipole_fit_stamps(gpu, n2, side2, pix2, var2, mask2, NULL, NULL, &p, fg));
    CHECK_OK(tide_dipole_fit_stamps(cpu, n2, side2, pix2, var2, mask2, NULL, NULL, &p, fc));
    CHECK(compare(fc, fg, n2, 1e-6, "gauss 17x17, masks") <= n2 / 300);

    /* 3. Stamp cutting and candidates on a synthetic difference (awkward size). */
    tide_image d = {0}, rms = {0}, dd = {0};
    synth_frame(&d, &rms, 301, 157, 1.0, 77);
    tide_image_free(NULL, &rms);
    d.var = malloc(sizeof(float) * d.width * d.height);
    for (int64_t i = 0; i < d.width * d.height; i++)
        d.var[i] = 1.0f + 0.001f * (float)(i % 7);
    synth_star(&d, 50.3, 60.2, 500.0, 3.0);
    synth_star(&d, 53.1, 61.0, -500.0, 3.0);
    synth_star(&d, 200.7, 100.1, -400.0, 3.0);
    synth_star(&d, 250.2, 20.6, 300.0, 3.0);
    d.mask[5000] = TIDE_MASK_BAD;
    CHECK_OK(tide_image_clone(gpu, &dd, &d, TIDE_DEVICE));
    const int64_t nc = 37;
    double xs[37], ys[37];
    for (int k = 0; k < nc; k++)
        xs[k] = -12.0 + 9.3 * k, ys[k] = 160.0 - 4.9 * k;
    const int sc = 15, npc = sc * sc;
    float *cp = malloc(sizeof(float) * nc * npc), *cv = malloc(sizeof(float) * nc * npc);
    uint16_t *cm = malloc(sizeof(uint16_t) * nc * npc);
    float *gp = malloc(sizeof(float) * nc * npc), *gv = malloc(sizeof(float) * nc * npc);
    uint16_t *gm = malloc(sizeof(uint16_t) * nc * npc);
    double ccx[37], ccy[37], gcx[37], gcy[37];
    CHECK_OK(tide_diff_cut_stamps(cpu, &d, nc, xs, ys, sc, cp, cv, cm, ccx, ccy));
    void *dxs, *dys, *dgp, *dgv, *dgm, *dcx, *dcy;
    CHECK_OK(tide_device_alloc(gpu, sizeof xs, &dxs));
    CHECK_OK(tide_device_alloc(gpu, sizeof ys, &dys));
    CHECK_OK(tide_device_alloc(gpu, sizeof(float) * nc * npc, &dgp));
    CHECK_OK(tide_device_alloc(gpu, sizeof(float) * nc * npc, &dgv));
    CHECK_OK(tide_device_alloc(gpu, sizeof(uint16_t) * nc * npc, &dgm));
    CHECK_OK(tide_device_alloc(gpu, sizeof gcx, &dcx));
    CHECK_OK(tide_device_alloc(gpu, sizeof gcy, &dcy));
    CHECK_OK(tide_memcpy(gpu, dxs, 1, xs, 0, sizeof xs));
    CHECK_OK(tide_memcpy(gpu, dys, 1, ys, 0, sizeof ys));
    CHECK_OK(tide_diff_cut_stamps(gpu, &dd, nc, dxs, dys, sc, dgp, dgv, dgm, dcx, dcy));
    CHECK_OK(tide_memcpy(gpu, gp, 0, dgp, 1, sizeof(float) * nc * npc));
    CHECK_OK(tide_memcpy(gpu, gv, 0, dgv, 1, sizeof(float) * nc * npc));
    CHECK_OK(tide_memcpy(gpu, gm, 0, dgm, 1, sizeof(uint16_t) * nc * npc));
    CHECK_OK(tide_memcpy(gpu, gcx, 0, dcx, 1, sizeof gcx));
    CHECK_OK(tide_memcpy(gpu, gcy, 0, dcy, 1, sizeof gcy));
    int64_t cut_diff = 0;
    for (int64_t i = 0; i < nc * npc; i++)
        cut_diff += memcmp(&cp[i], &gp[i], 4) || memcmp(&cv[i], &gv[i], 4) || cm[i] != gm[i];
    CHECK(cut_diff == 0);
    CHECK(!memcmp(ccx, gcx, sizeof ccx) && !memcmp(ccy, gcy, sizeof ccy));
    printf("stamp cut: %lld pixels differ between CPU and GPU\n", (long long)cut_diff);
    tide_device_free(gpu, dxs);
    tide_device_free(gpu, dys);
    tide_device_free(gpu, dgp);
    tide_device_free(gpu, dgv);
    tide_device_free(gpu, dgm);
    tide_device_free(gpu, dcx);
    tide_device_free(gpu, dcy);

    tide_candidate_params cpp;
    tide_candidate_params_default(&cpp);
    tide_table tc, tg, th;
    tide_table_init(&tc);
    tide_table_init(&tg);
    tide_table_init(&th);
    CHECK_OK(tide_diff_candidates(cpu, &d, &cpp, &tc));
    CHECK_OK(tide_diff_candidates(gpu, &dd, &cpp, &tg));
    CHECK_OK(tide_diff_candidates(gpu, &d, &cpp, &th));
    printf("candidates: CPU %lld, GPU %lld (device image), %lld (host image)\n",
           (long long)tc.nrows, (long long)tg.nrows, (long long)th.nrows);
    CHECK(tc.nrows == 3 && tg.nrows == tc.nrows && th.nrows == tc.nrows);
    if (tg.nrows == tc.nrows && th.nrows == tc.nrows) {
        const double *xc = tide_table_f64(&tc, "X"), *xg = tide_table_f64(&tg, "X");
        const double *xh = tide_table_f64(&th, "X");
        const int32_t *kc = tide_table_i32(&tc, "KIND"), *kg = tide_table_i32(&tg, "KIND");
        for (int64_t i = 0; i < tc.nrows; i++) {
            CHECK(kc[i] == kg[i]);
            CHECK_CLOSE(xc[i], xg[i], 1e-4);
            CHECK_CLOSE(xc[i], xh[i], 1e-4);
        }
    }
    /* The pipeline path: stamps cut and fitted on the GPU (device image, host image). */
    CHECK_OK(tide_diff_fit_candidates(cpu, &d, 21, NULL, NULL, &tc));
    CHECK_OK(tide_diff_fit_candidates(gpu, &dd, 21, NULL, NULL, &tg));
    CHECK_OK(tide_diff_fit_candidates(gpu, &d, 21, NULL, NULL, &th));
    if (tg.nrows == tc.nrows && th.nrows == tc.nrows) {
        const char *cols[] = {"DIP_XPOS", "DIP_YNEG", "DIP_FLUX", "DIP_CHI2", "PS_CHI2"};
        for (int k = 0; k < 5; k++) {
            const double *a = tide_table_f64(&tc, cols[k]), *b = tide_table_f64(&tg, cols[k]);
            const double *c = tide_table_f64(&th, cols[k]);
            CHECK(a && b && c);
            for (int64_t i = 0; a && b && c && i < tc.nrows; i++) {
                CHECK(rel_ok(a[i], b[i], 1e-6));
                CHECK(rel_ok(a[i], c[i], 1e-6));
            }
        }
        const int32_t *sc2 = tide_table_i32(&tc, "FIT_STATUS"),
                      *sg = tide_table_i32(&tg, "FIT_STATUS");
        for (int64_t i = 0; sc2 && sg && i < tc.nrows; i++)
            CHECK(sc2[i] == sg[i]);
    }
    tide_table_free(&tc);
    tide_table_free(&tg);
    tide_table_free(&th);
    tide_image_free(gpu, &dd);
    tide_image_free(NULL, &d);
    free(cp), free(cv), free(cm), free(gp), free(gv), free(gm);
    free(psf), free(pix2), free(var2), free(mask2), free(x0), free(y0);
    free(pix), free(var), free(tr), free(fg), free(fc), free(fd);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
