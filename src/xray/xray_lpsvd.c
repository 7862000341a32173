/* xray_lpsvd.c — tide_xray_lpsvd_batch: argument checks and the dispatch to the CPU twin or,
 * on a CUDA context, to the CUDA twin's chunk pipeline (xray_lpsvd_pipeline_cuda), whose
 * packed results are unpacked here; reason names; and the Cramér–Rao bounds of the
 * damped-cosine model from its Jacobian. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tide/memory.h"
#include "tide/status.h"
#include "xray/xray_kernels.h"
#include "xray/xray_math.h"
#include "xray/xray_pack.h"

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

#ifdef TIDE_HAVE_CUDA
/* Traces per device chunk: the stages' buffers are per chunk (R, V and σ of each trace, 9 KB
 * for 96 samples; beyond XRAY_GPU_NMAX samples the whole LPSVD workspace). The finish kernel
 * runs a trace per thread, and 65,536 threads left it at a quarter of the H200's occupancy:
 * per pixel, 131,072 a chunk took the finish from 444 to 302 ms and the refinement from 920 to
 * 832 (262,144: 295 and 789, but the first chunk's staging, which nothing overlaps, grew as
 * much). TIDE_XRAY_CHUNK=N sets another (a tuning experiment). */
#define XRAY_CHUNK 131072

static int64_t chunk_traces(void) {
    const char *v = getenv("TIDE_XRAY_CHUNK");
    const long long c = v ? atoll(v) : 0;
    return c >= 1024 && c <= (1 << 24) ? (int64_t)c : XRAY_CHUNK;
}

/* Where a chunk's packed results go (xray_lpsvd_pipeline_cuda's callback). */
typedef struct xray_unpack_arg {
    int components;
    tide_xray_lp_result *results;
} xray_unpack_arg;

static void unpack_chunk(void *arg, int64_t s0, int64_t m, const int *pi, const double *pd) {
    const xray_unpack_arg *a = arg;
    const int64_t npd = xray_pack_doubles(a->components);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; i++)
        xray_unpack(pi + i * XRAY_PACK_INTS, pd + i * npd, a->components, &a->results[s0 + i]);
}
#endif

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
    xray_unpack_arg ua = {components, results};
    const int st = xray_lpsvd_pipeline_cuda(ctx, &jb, chunk_traces(), unpack_chunk, &ua);
    xray_kernel_times_report(ntr);
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
