/* detect_snr_cuda.cu — CUDA twin of the per-pixel S/N combination (detect_filter_math.h).
 *
 * The row form of the CPU twin (detect_snr_cpu.c): one block per row; its threads form the
 * row's polynomials in shared memory (a thread per basis for the coefficients, one per power
 * of u for the kernel energy), then walk the row's pixels with Horner's rule. The same
 * operations in the same order as the CPU, each rounded on its own (tide_dmul/tide_dadd), so
 * the S/N map has the CPU's bits. The filter travels as a kernel parameter (constant bank):
 * no upload and no wait per call. */
#include "core/gpu/cuda_check.h"
#include "detect_cuda_util.h"
#include "detect_filter_math.h"
#include "detect_kernels.h"
#include "tide/memory.h"
#include "tide/status.h"

#define SNR_THREADS 256
#define SNR_DMAX 6 /* TIDE_DET_MAX_COEF = 28 terms: total degree <= 6 */
static_assert((SNR_DMAX + 1) * (SNR_DMAX + 2) / 2 == TIDE_DET_MAX_COEF, "degree bound");
static_assert(TIDE_DET_MAX_BASIS <= SNR_THREADS && 2 * SNR_DMAX + 1 <= SNR_THREADS, "threads");

typedef struct {
    const float *p[TIDE_DET_MAX_BASIS];
    int64_t stride[TIDE_DET_MAX_BASIS];
} corr_views;

/* One block per row, rows beyond the grid by a block-uniform loop. */
static unsigned row_blocks(int64_t H) {
    return (unsigned)(H < 1 ? 1 : (H > 65535 ? 65535 : H));
}

/* The row's coefficient polynomials P (and, with Q, its energy polynomial) in shared memory,
 * by the block's threads; ends with the block synchronised. */
static __device__ void row_polys(const tide_det_filter &f, int64_t y, double *P, double *Q) {
    const double v = tide_det_unorm((double)y, f.height);
    if ((int)threadIdx.x < f.nbasis)
        tide_det_row_coef(&f, v, threadIdx.x, P + threadIdx.x * (f.degree + 1));
    __syncthreads();
    if (Q && (int)threadIdx.x <= 2 * f.degree)
        Q[threadIdx.x] = tide_det_row_energy(&f, P, threadIdx.x);
    if (Q)
        __syncthreads();
}

/* All bases at once (their correlations in R), then S/N. */
static __global__ void k_snr(const __grid_constant__ tide_det_filter f, const corr_views R,
                             const float *sub, const uint16_t *mask, int64_t sstride,
                             const float *rms, int64_t rstride, float *snr, int64_t ostride,
                             int64_t W, int64_t H) {
    __shared__ double P[TIDE_DET_MAX_BASIS * (SNR_DMAX + 1)], Q[2 * SNR_DMAX + 1];
    const int d1 = f.degree + 1;
    for (int64_t y = blockIdx.x; y < H; y += gridDim.x) {
        row_polys(f, y, P, Q);
        for (int64_t x = threadIdx.x; x < W; x += blockDim.x) {
            const double u = tide_det_unorm((double)x, f.width);
            double F = 0.0;
            for (int b = 0; b < f.nbasis; b++)
                F = tide_dadd(F, tide_dmul(tide_det_horner(P + b * d1, f.degree, u),
                                           (double)R.p[b][y * R.stride[b] + x]));
            const double E = tide_det_horner(Q, 2 * f.degree, u);
            snr[y * ostride + x] = tide_det_snr_of(F, E, sub[y * sstride + x], rms[y * rstride + x],
                                                   mask ? mask[y * sstride + x] : 0, f.nodata_bits);
        }
        __syncthreads(); /* P and Q are the next row's */
    }
}

extern "C" int tide_det_snr_cuda(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                                 const tide_image *R, const tide_det_filter *f, tide_image *snr) {
    if (f->degree > SNR_DMAX)
        return tide_error(TIDE_E_INVAL, "tide_detect: degree %d above %d", f->degree, SNR_DMAX);
    corr_views v;
    memset(&v, 0, sizeof v);
    for (int b = 0; b < f->nbasis; b++) {
        v.p[b] = R[b].pix;
        v.stride[b] = R[b].stride;
    }
    k_snr<<<row_blocks(sub->height), SNR_THREADS, 0, (cudaStream_t)ctx->stream>>>(
        *f, v, sub->pix, sub->mask, sub->stride, rms->pix, rms->stride, snr->pix, snr->stride,
        sub->width, sub->height);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "tide_detect: S/N kernel: %s", cudaGetErrorString(e));
    return TIDE_OK;
}

/* ---- streamed form, one basis at a time (detect_kernels.h) ------------------------------ */

/* F (W × H doubles) += c_b R_b; F = 0 + c_0 R_0 for b = 0, as the CPU's chunks. */
static __global__ void k_snr_accum(const __grid_constant__ tide_det_filter f, int b, const float *R,
                                   int64_t rstride, double *F, int64_t W, int64_t H) {
    __shared__ double P[TIDE_DET_MAX_BASIS * (SNR_DMAX + 1)];
    const double *Pb = P + b * (f.degree + 1);
    for (int64_t y = blockIdx.x; y < H; y += gridDim.x) {
        row_polys(f, y, P, NULL);
        for (int64_t x = threadIdx.x; x < W; x += blockDim.x) {
            const double u = tide_det_unorm((double)x, f.width);
            const double t =
                tide_dmul(tide_det_horner(Pb, f.degree, u), (double)R[y * rstride + x]);
            const int64_t i = y * W + x;
            F[i] = tide_dadd(b == 0 ? 0.0 : F[i], t);
        }
        __syncthreads();
    }
}

/* S/N from the numerator F. */
static __global__ void k_snr_finish(const __grid_constant__ tide_det_filter f, const double *F,
                                    const float *sub, const uint16_t *mask, int64_t sstride,
                                    const float *rms, int64_t rstride, float *snr, int64_t ostride,
                                    int64_t W, int64_t H) {
    __shared__ double P[TIDE_DET_MAX_BASIS * (SNR_DMAX + 1)], Q[2 * SNR_DMAX + 1];
    for (int64_t y = blockIdx.x; y < H; y += gridDim.x) {
        row_polys(f, y, P, Q);
        for (int64_t x = threadIdx.x; x < W; x += blockDim.x) {
            const double E = tide_det_horner(Q, 2 * f.degree, tide_det_unorm((double)x, f.width));
            snr[y * ostride + x] =
                tide_det_snr_of(F[y * W + x], E, sub[y * sstride + x], rms[y * rstride + x],
                                mask ? mask[y * sstride + x] : 0, f.nodata_bits);
        }
        __syncthreads();
    }
}

static int launched(const char *what) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "tide_detect: %s kernel: %s", what, cudaGetErrorString(e));
    return TIDE_OK; /* stream-ordered: no wait between the launches */
}

extern "C" int tide_det_snr_accum_cuda(tide_ctx *ctx, const tide_image *Rb, int b,
                                       const tide_det_filter *f, double *F) {
    if (b < 0 || b >= f->nbasis)
        return tide_error(TIDE_E_INVAL, "tide_detect: basis %d outside 0..%d", b, f->nbasis - 1);
    if (f->degree > SNR_DMAX)
        return tide_error(TIDE_E_INVAL, "tide_detect: degree %d above %d", f->degree, SNR_DMAX);
    k_snr_accum<<<row_blocks(Rb->height), SNR_THREADS, 0, (cudaStream_t)ctx->stream>>>(
        *f, b, Rb->pix, Rb->stride, F, Rb->width, Rb->height);
    return launched("S/N accumulation");
}

extern "C" int tide_det_snr_finish_cuda(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                                        const double *F, const tide_det_filter *f,
                                        tide_image *snr) {
    if (f->degree > SNR_DMAX)
        return tide_error(TIDE_E_INVAL, "tide_detect: degree %d above %d", f->degree, SNR_DMAX);
    k_snr_finish<<<row_blocks(sub->height), SNR_THREADS, 0, (cudaStream_t)ctx->stream>>>(
        *f, F, sub->pix, sub->mask, sub->stride, rms->pix, rms->stride, snr->pix, snr->stride,
        sub->width, sub->height);
    return launched("S/N");
}
