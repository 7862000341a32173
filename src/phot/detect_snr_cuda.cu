/* detect_snr_cuda.cu — CUDA twin of the per-pixel S/N combination (detect_filter_math.h). */
#include "core/cuda_check.h"
#include "phot/detect_cuda_util.h"
#include "phot/detect_filter_math.h"
#include "phot/detect_kernels.h"
#include "tide/memory.h"
#include "tide/status.h"

typedef struct {
    const float *p[TIDE_DET_MAX_BASIS];
    int64_t stride[TIDE_DET_MAX_BASIS];
} corr_views;

/* The S/N kernels run on a 2-D grid (x in blocks of 256, one row per block row, rows
 * beyond the grid's y extent by a block-uniform loop): no 64-bit division per pixel. */
static dim3 row_grid(int64_t W, int64_t H) {
    return dim3((unsigned)((W + 255) / 256), (unsigned)(H < 1 ? 1 : (H > 65535 ? 65535 : H)));
}

static __global__ void k_snr(const tide_det_filter *f, corr_views R, const float *sub,
                             const uint16_t *mask, int64_t sstride, const float *rms,
                             int64_t rstride, float *snr, int64_t ostride, int64_t W, int64_t H) {
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= W) return;
    for (int64_t y = blockIdx.y; y < H; y += gridDim.y) {
        float r[TIDE_DET_MAX_BASIS];
        for (int b = 0; b < f->nbasis; b++) r[b] = R.p[b][y * R.stride[b] + x];
        uint16_t m = mask ? mask[y * sstride + x] : 0;
        snr[y * ostride + x] =
            tide_det_snr_pixel(f, x, y, r, sub[y * sstride + x], rms[y * rstride + x], m);
    }
}

extern "C" int tide_det_snr_cuda(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                                 const tide_image *R, const tide_det_filter *f,
                                 tide_image *snr) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    tide_det_filter *df = NULL;
    int st = tide_det_dalloc(ctx, sizeof *f, (void **)&df);
    if (st) return st;
    st = tide_memcpy(ctx, df, 1, f, 0, sizeof *f);
    corr_views v;
    memset(&v, 0, sizeof v);
    for (int b = 0; b < f->nbasis; b++) {
        v.p[b] = R[b].pix;
        v.stride[b] = R[b].stride;
    }
    if (!st) {
        k_snr<<<row_grid(sub->width, sub->height), 256, 0, s>>>(
            df, v, sub->pix, sub->mask, sub->stride, rms->pix, rms->stride, snr->pix,
            snr->stride, sub->width, sub->height);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) st = tide_error(TIDE_E_CUDA, "tide_detect: S/N kernel: %s",
                                              cudaGetErrorString(e));
    }
    tide_device_free(ctx, df); /* stream-ordered: after the kernel that reads it */
    return st;
}

/* ---- streamed form, one basis at a time (detect_kernels.h) ------------------------------ */

static __global__ void k_snr_accum(const tide_det_filter *f, int b, const float *R,
                                   int64_t rstride, double *F, int64_t W, int64_t H) {
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= W) return;
    for (int64_t y = blockIdx.y; y < H; y += gridDim.y) {
        const int64_t i = y * W + x;
        double acc = b == 0 ? 0.0 : F[i];
        F[i] = tide_det_snr_accum_pixel(f, x, y, b, acc, R[y * rstride + x]);
    }
}

static __global__ void k_snr_finish(const tide_det_filter *f, const double *F, const float *sub,
                                    const uint16_t *mask, int64_t sstride, const float *rms,
                                    int64_t rstride, float *snr, int64_t ostride, int64_t W,
                                    int64_t H) {
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= W) return;
    for (int64_t y = blockIdx.y; y < H; y += gridDim.y) {
        const int64_t i = y * W + x;
        uint16_t m = mask ? mask[y * sstride + x] : 0;
        snr[y * ostride + x] =
            tide_det_snr_from_sum(f, x, y, F[i], sub[y * sstride + x], rms[y * rstride + x], m);
    }
}

static int upload_filter(tide_ctx *ctx, const tide_det_filter *f, tide_det_filter **df) {
    *df = NULL;
    int st = tide_det_dalloc(ctx, sizeof *f, (void **)df);
    if (!st) st = tide_memcpy(ctx, *df, 1, f, 0, sizeof *f);
    return st;
}

static int launched(tide_ctx *ctx, const char *what) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "tide_detect: %s kernel: %s", what, cudaGetErrorString(e));
    return TIDE_OK; /* stream-ordered: no wait between the launches */
}

extern "C" int tide_det_snr_accum_cuda(tide_ctx *ctx, const tide_image *Rb, int b,
                                       const tide_det_filter *f, double *F) {
    if (b < 0 || b >= f->nbasis)
        return tide_error(TIDE_E_INVAL, "tide_detect: basis %d outside 0..%d", b, f->nbasis - 1);
    cudaStream_t s = (cudaStream_t)ctx->stream;
    tide_det_filter *df = NULL;
    int st = upload_filter(ctx, f, &df);
    if (!st) {
        k_snr_accum<<<row_grid(Rb->width, Rb->height), 256, 0, s>>>(df, b, Rb->pix, Rb->stride,
                                                                    F, Rb->width, Rb->height);
        st = launched(ctx, "S/N accumulation");
    }
    tide_device_free(ctx, df);
    return st;
}

extern "C" int tide_det_snr_finish_cuda(tide_ctx *ctx, const tide_image *sub,
                                        const tide_image *rms, const double *F,
                                        const tide_det_filter *f, tide_image *snr) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    tide_det_filter *df = NULL;
    int st = upload_filter(ctx, f, &df);
    if (!st) {
        k_snr_finish<<<row_grid(sub->width, sub->height), 256, 0, s>>>(
            df, F, sub->pix, sub->mask, sub->stride, rms->pix, rms->stride, snr->pix,
            snr->stride, sub->width, sub->height);
        st = launched(ctx, "S/N");
    }
    tide_device_free(ctx, df);
    return st;
}
