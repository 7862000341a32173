/* xray_lm_stats.c — counts of the LM refinement (xray_lm.h) on the smoothed segments of a
 * `tide xray fit --traces` run (traces.h5): refine_iter histogram split by accepted/rejected,
 * rejection reasons, model evaluations per iteration and the CPU time of LPSVD and of the
 * refinement per trace, one thread. Not built by CMake:
 *   gcc -std=c11 -O2 -Isrc -Iinclude $(pkg-config --cflags hdf5) bench/xray_lm_stats.c \
 *       -o xray_lm_stats $(pkg-config --libs hdf5) -lm
 *   ./xray_lm_stats OUT/traces.h5 [components] [results.bin] */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static long long n_chi2, n_normal, n_solve, n_rej_maxit, n_rej_chi, n_rej_wall, n_rej_edge,
    n_rej_nf;
#define XRAY_LM_STAT(what) (n_##what++)
#include "xray/xray_lm.h"
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
int main(int argc, char **argv) {
    const int comps = argc > 2 ? atoi(argv[2]) : 5;
    hid_t f = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "smoothed", H5P_DEFAULT), sp = H5Dget_space(d);
    hsize_t dims[3];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    const int64_t ntr = dims[0] * dims[1];
    const int n = (int)dims[2];
    double *s = malloc(sizeof(double) * ntr * n);
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, s);
    hid_t dd = H5Dopen2(f, "delay", H5P_DEFAULT), sd = H5Dget_space(dd);
    hsize_t F;
    H5Sget_simple_extent_dims(sd, &F, NULL);
    double *del = malloc(sizeof(double) * F);
    H5Dread(dd, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, del);
    const double dt = (del[F - 1] - del[0]) / (double)(F - 1);
    double *w = malloc(sizeof(double) * (xray_lp_work_doubles(n) + xray_lm_work_doubles(comps)));
    tide_xray_lp_result *r0 = calloc(ntr, sizeof *r0), *r1 = calloc(ntr, sizeof *r1);
    double tlp = 0, tlm = 0;
    for (int64_t i = 0; i < ntr; i++) {
        double t0 = now_s();
        xray_lpsvd(s + i * n, n, dt, comps, w, &r0[i]);
        double t1 = now_s();
        r1[i] = r0[i];
        r1[i].refine_iter = xray_lm_refine(s + i * n, n, dt, comps, w, &r1[i]);
        tlm += now_s() - t1;
        tlp += t1 - t0;
    }
    long long hista[12] = {0}, histr[12] = {0}, rreal = 0, rmax = 0, nacc_real = 0, nreal = 0;
    long long hist[12] = {0}, nref = 0, acc = 0, itsum = 0, itacc = 0, modes[9] = {0};
    const int edges[12] = {1, 5, 10, 15, 20, 30, 50, 100, 150, 200, 201, 1 << 30};
    for (int64_t i = 0; i < ntr; i++) {
        const int it = r1[i].refine_iter;
        if (r0[i].status != TIDE_XRAY_OK || r0[i].nmodes < 1)
            continue;
        modes[r0[i].nmodes]++;
        nref++;
        itsum += it;
        int b = 0;
        while (it >= edges[b])
            b++;
        hist[b]++;
        r1[i].refine_iter = 0;
        int real = 0;
        for (int k = 0; k < r0[i].nmodes; k++)
            real |= r0[i].omega[k] == 0.0;
        nreal += real;
        const int a = memcmp(&r0[i], &r1[i], sizeof r0[i]) != 0;
        if (a) {
            acc++;
            itacc += it;
            hista[b]++;
            nacc_real += real;
        } else {
            histr[b]++;
            if (it >= 200) {
                rmax++;
                rreal += real;
            }
        }
        r1[i].refine_iter = it;
    }
    printf("%lld traces of %d samples, dt %.4g, %d components; %lld ok after LPSVD\n",
           (long long)ntr, n, dt, comps, nref);
    printf("modes:");
    for (int k = 1; k < 9; k++)
        if (modes[k])
            printf(" %d:%lld", k, modes[k]);
    printf("\nrefine_iter histogram (ok traces):\n");
    const char *lab[12] = {"0",     "1-4",   "5-9",     "10-14",   "15-19", "20-29",
                           "30-49", "50-99", "100-149", "150-199", "200",   ">200"};
    for (int b = 0; b < 12; b++)
        if (hist[b])
            printf("  %-8s %7lld  %5.1f%%   accepted %6lld rejected %6lld\n", lab[b], hist[b],
                   100.0 * hist[b] / nref, hista[b], histr[b]);
    printf("LPSVD starts with a real mode: %lld; of them accepted %lld; of the maxit traces "
           "%lld/%lld\n",
           nreal, nacc_real, rreal, rmax);
    printf("accepted %lld (%.1f%%), rejected %lld: maxit %lld, chi %lld, wall %lld, edge %lld, "
           "nonfinite %lld\n",
           acc, 100.0 * acc / nref, nref - acc, n_rej_maxit, n_rej_chi, n_rej_wall, n_rej_edge,
           n_rej_nf);
    printf("iterations: mean %.1f, of accepted %.1f; total %lld, of which in rejected %.1f%%\n",
           (double)itsum / nref, acc ? (double)itacc / acc : 0.0, itsum,
           100.0 * (itsum - itacc) / itsum);
    printf("per iteration: normal %.3f, solves %.3f, chi2 %.3f\n", (double)n_normal / itsum,
           (double)n_solve / itsum, (double)n_chi2 / itsum);
    printf("time: LPSVD %.1f us/trace, LM %.1f us/trace (%.3f s total)\n", 1e6 * tlp / ntr,
           1e6 * tlm / ntr, tlm);
    FILE *o = argc > 3 ? fopen(argv[3], "wb") : NULL;
    if (o) {
        fwrite(r1, sizeof *r1, ntr, o);
        fclose(o);
    }
    return 0;
}
