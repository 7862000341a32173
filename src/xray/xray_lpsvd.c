/* xray_lpsvd.c — tide_xray_lpsvd_batch: argument checks and the dispatch to the CPU twin or,
 * on a CUDA context, chunks of traces copied to the device, the CUDA twin, the results copied
 * back; reason names; and the Cramér–Rao bounds of the damped-cosine model from its
 * Jacobian. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tide/memory.h"
#include "tide/status.h"
#include "xray/xray_kernels.h"
#include "xray/xray_math.h"
#include "xray/xray_pack.h"

/* Traces per device chunk: the stages' buffers are per chunk (R, V and σ of each trace, 9 KB
 * for 96 samples; beyond XRAY_GPU_NMAX samples the whole LPSVD workspace). */
#define XRAY_CHUNK 65536

const char *tide_xray_reason_name(int reason) {
    switch (reason) {
    case TIDE_XRAY_R_NONE: return "ok";
    case TIDE_XRAY_R_SHORT: return "too few samples";
    case TIDE_XRAY_R_NONFINITE: return "non-finite value";
    case TIDE_XRAY_R_ZERO: return "zero trace";
    case TIDE_XRAY_R_SVD: return "Hankel SVD failed";
    case TIDE_XRAY_R_ROOTS: return "roots did not converge";
    case TIDE_XRAY_R_LSQ: return "amplitude least squares failed";
    case TIDE_XRAY_R_NOMODE: return "no damped mode";
    case TIDE_XRAY_R_NOLIGHT: return "no light (off sum or monitor <= 0)";
    default: return "unknown";
    }
}

int tide_xray_lpsvd_batch(struct tide_ctx *ctx, const double *traces, int64_t ntr, int n, double dt,
                          int components, int refine, tide_xray_lp_result *results) {
    if (!ctx || ntr < 0 || n < 1 || n > 65536 || !(dt > 0) || components < 1 ||
        components > TIDE_XRAY_MAX_COMPONENTS || (ntr > 0 && (!traces || !results)))
        return tide_error(TIDE_E_INVAL,
                          "xray lpsvd: %lld traces of %d samples, dt %g, %d "
                          "components",
                          (long long)ntr, n, dt, components);
    xray_lp_job jb = {traces, ntr, n, dt, components, refine, results, NULL};
    if (ntr == 0)
        return 0;
    if (ctx->backend != TIDE_BACKEND_CUDA)
        return xray_lpsvd_batch_cpu(ctx, &jb);
#ifdef TIDE_HAVE_CUDA
    const int64_t chunk = ntr < XRAY_CHUNK ? ntr : XRAY_CHUNK, nw = xray_lp_work_doubles(n);
    const int64_t npd = xray_pack_doubles(components);
    void *dtr = NULL, *dres = NULL, *dw = NULL, *dpi = NULL, *dpd = NULL;
    int *hpi = malloc(sizeof(int) * (size_t)(chunk * XRAY_PACK_INTS));
    double *hpd = malloc(sizeof(double) * (size_t)(chunk * npd));
    int st = hpi && hpd
                 ? 0
                 : tide_error(TIDE_E_NOMEM, "xray lpsvd: %lld packed results", (long long)chunk);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(double) * (size_t)(chunk * n), &dtr);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(tide_xray_lp_result) * (size_t)chunk, &dres);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(int) * (size_t)(chunk * XRAY_PACK_INTS), &dpi);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(double) * (size_t)(chunk * npd), &dpd);
    if (!st && n > XRAY_GPU_NMAX)
        st = tide_device_alloc(ctx, sizeof(double) * (size_t)(chunk * nw), &dw);
    for (int64_t s0 = 0; !st && s0 < ntr; s0 += chunk) {
        const int64_t m = ntr - s0 < chunk ? ntr - s0 : chunk;
        st = tide_memcpy(ctx, dtr, 1, traces + s0 * n, 0, sizeof(double) * (size_t)(m * n));
        if (st)
            break;
        jb.traces = (const double *)dtr;
        jb.ntr = m;
        jb.out = (tide_xray_lp_result *)dres;
        jb.work = (double *)dw;
        st = xray_lpsvd_batch_cuda(ctx, &jb);
        /* the used part of each result only (xray_pack.h): 1,064 bytes a trace otherwise */
        if (!st)
            st = xray_pack_batch_cuda(ctx, (const tide_xray_lp_result *)dres, m, components,
                                      (int *)dpi, (double *)dpd);
        if (!st)
            st = tide_memcpy(ctx, hpi, 0, dpi, 1, sizeof(int) * (size_t)(m * XRAY_PACK_INTS));
        if (!st)
            st = tide_memcpy(ctx, hpd, 0, dpd, 1, sizeof(double) * (size_t)(m * npd));
        if (st)
            break;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < m; i++)
            xray_unpack(hpi + i * XRAY_PACK_INTS, hpd + i * npd, components, &results[s0 + i]);
    }
    xray_kernel_times_report(ntr);
    tide_device_free(ctx, dw);
    tide_device_free(ctx, dpd);
    tide_device_free(ctx, dpi);
    tide_device_free(ctx, dres);
    tide_device_free(ctx, dtr);
    free(hpi);
    free(hpd);
    return st;
#else
    return tide_error(TIDE_E_NODEVICE, "xray lpsvd: built without CUDA");
#endif
}

/* Cholesky factor and inverse of the SPD matrix A (p × p, row-major) in place. */
static int spd_inverse(double *A, int p) {
    double L[27 * 27];
    if (p > 27)
        return -1;
    memset(L, 0, sizeof L);
    for (int j = 0; j < p; j++) {
        double d = A[j * p + j];
        for (int k = 0; k < j; k++)
            d -= L[j * p + k] * L[j * p + k];
        if (!(d > 0))
            return -1;
        L[j * p + j] = sqrt(d);
        for (int i = j + 1; i < p; i++) {
            double s = A[i * p + j];
            for (int k = 0; k < j; k++)
                s -= L[i * p + k] * L[j * p + k];
            L[i * p + j] = s / L[j * p + j];
        }
    }
    /* columns of A⁻¹ by forward and back substitution of unit vectors */
    for (int c = 0; c < p; c++) {
        double y[27];
        for (int i = 0; i < p; i++) {
            double s = i == c ? 1.0 : 0.0;
            for (int k = 0; k < i; k++)
                s -= L[i * p + k] * y[k];
            y[i] = s / L[i * p + i];
        }
        for (int i = p - 1; i >= 0; i--) {
            double s = y[i];
            for (int k = i + 1; k < p; k++)
                s -= L[k * p + i] * y[k];
            y[i] = s / L[i * p + i];
        }
        for (int i = 0; i < p; i++)
            A[i * p + c] = y[i];
    }
    return 0;
}

int tide_xray_crb(const tide_xray_lp_result *tr, int n, double dt, double sigma, double *crb) {
    const int M = tr->nmodes, p = 4 * M + 1;
    if (M < 0 || p > 27 || n < p || !(sigma > 0) || !(dt > 0))
        return tide_error(TIDE_E_INVAL, "xray crb: %d modes, %d samples", M, n);
    double F[27 * 27], J[27];
    memset(F, 0, sizeof F);
    for (int j = 0; j < n; j++) {
        const double t = j * dt;
        for (int k = 0; k < M; k++) {
            const double e = exp(-tr->decay[k] * t), a = tr->omega[k] * t + tr->phase[k];
            const double A = tr->amp[k], c = cos(a), s = sin(a);
            J[4 * k + 0] = -A * t * e * s; /* ∂/∂ω */
            J[4 * k + 1] = -A * t * e * c; /* ∂/∂b */
            J[4 * k + 2] = e * c;          /* ∂/∂A */
            J[4 * k + 3] = -A * e * s;     /* ∂/∂φ */
        }
        J[4 * M] = 1.0;
        for (int a = 0; a < p; a++)
            for (int b = 0; b < p; b++)
                F[a * p + b] += J[a] * J[b] / (sigma * sigma);
    }
    if (spd_inverse(F, p))
        return tide_error(TIDE_E_RANGE, "xray crb: singular Fisher matrix");
    for (int a = 0; a < p; a++)
        crb[a] = sqrt(F[a * p + a]);
    return 0;
}
