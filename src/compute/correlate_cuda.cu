/* correlate_cuda.cu — the CUDA kernels of FFT correlation.
 *
 * The costs that matter on a 151 MP frame are memory passes, so: padding is one pass that
 * writes the whole padded buffer (halo, reflection, NaN/mask zeroing included); the product
 * rebuilds H_k(u, v) = sum_j rows[j][u] cols[v][j] in registers from tables that sit in shared
 * memory and L1 (kh complex multiply-adds per element, no spectrum in memory), so it costs one
 * read and one write of the half-spectrum; cropping is one pass into a device output, or a 2-D
 * memcpy straight into a host output. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "correlate_kernels.h"
#include "correlate_math.h"
#include "core/gpu/cuda_check.h"
#include "tide/memory.h"
#include "tide/status.h"

#define PAD_THREADS 256
#define PAD_ELEMS 8  /* elements per thread in the streaming kernels */
#define TILE_U 32    /* half-spectrum columns per block (one warp wide) */
#define BLOCK_ROWS 8 /* warps per block */
#define ROWS_PER_THREAD 8
#define JCHUNK 32 /* kernel rows of the table staged in shared memory at a time */

/* The padded buffer's bulk: image pixels (cleaned) where the image is, zero elsewhere. Each
 * thread handles PAD_ELEMS elements of one padded row, loading them all before storing any so
 * that enough bytes are in flight to stream at full bandwidth. Reflected halos are written
 * afterwards by corr_halo_kernel, so this pass carries no reflection arithmetic. */
__global__ void corr_pad_kernel(float *__restrict__ X, const float *__restrict__ pix,
                                const uint16_t *__restrict__ mask, int64_t w, int64_t h, int64_t rx,
                                int64_t ry, int64_t stride, int64_t py, int64_t pitch,
                                uint16_t bits) {
    const int64_t a0 = (int64_t)blockIdx.x * (PAD_THREADS * PAD_ELEMS) + threadIdx.x;
    for (int64_t b = blockIdx.y; b < py; b += gridDim.y) {
        const int64_t y = b - ry;
        const int row_in = y >= 0 && y < h;
        const float *src = pix + (row_in ? y : 0) * stride - rx;
        const uint16_t *msk = mask ? mask + (row_in ? y : 0) * stride - rx : NULL;
        float v[PAD_ELEMS];
#pragma unroll
        for (int e = 0; e < PAD_ELEMS; e++) {
            const int64_t a = a0 + e * PAD_THREADS;
            const int in = row_in && a >= rx && a < rx + w;
            v[e] = in ? tide_corr_clean(src[a], msk ? msk[a] : (uint16_t)0, bits) : 0.0f;
        }
#pragma unroll
        for (int e = 0; e < PAD_ELEMS; e++) {
            const int64_t a = a0 + e * PAD_THREADS;
            if (a < pitch)
                X[b * pitch + a] = v[e];
        }
    }
}

/* Reflect padding: the halo band around the image, (w + 2 rx) x (h + 2 ry) minus w x h, one
 * thread per element: rows [0, ry) and [ry + h, h + 2 ry) in full, then the rx columns on each
 * side of the image rows. */
__global__ void corr_halo_kernel(float *__restrict__ X, const float *__restrict__ pix,
                                 const uint16_t *__restrict__ mask, int64_t w, int64_t h,
                                 int64_t rx, int64_t ry, int64_t stride, int64_t pitch,
                                 uint16_t bits) {
    const int64_t ew = w + 2 * rx, band = ry * ew, side = h * rx;
    const int64_t n = 2 * band + 2 * side;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t a, b;
        if (i < 2 * band) {
            const int64_t r = i / ew;
            a = i - r * ew;
            b = r < ry ? r : h + r; /* r in [ry, 2 ry) -> rows h + ry .. h + 2 ry - 1 */
        } else {
            const int64_t k = i - 2 * band, r = k / (2 * rx), q = k - r * 2 * rx;
            b = ry + r;
            a = q < rx ? q : w + q; /* q in [rx, 2 rx) -> columns rx + w .. w + 2 rx - 1 */
        }
        const int64_t s = tide_corr_source(a, b, w, h, rx, ry, stride, 1);
        X[b * pitch + a] =
            s < 0 ? 0.0f : tide_corr_clean(pix[s], mask ? mask[s] : (uint16_t)0, bits);
    }
}

/* out[y][x] = Y[y + ry][x + rx]: the crop for device outputs, PAD_ELEMS per thread. */
__global__ void corr_crop_kernel(float *__restrict__ out, int64_t ostride,
                                 const float *__restrict__ Y, int64_t pitch, int64_t w, int64_t h,
                                 int64_t rx, int64_t ry) {
    const int64_t x0 = (int64_t)blockIdx.x * (PAD_THREADS * PAD_ELEMS) + threadIdx.x;
    for (int64_t y = blockIdx.y; y < h; y += gridDim.y) {
        const float *src = Y + (y + ry) * pitch + rx;
        float v[PAD_ELEMS];
#pragma unroll
        for (int e = 0; e < PAD_ELEMS; e++) {
            const int64_t x = x0 + e * PAD_THREADS;
            v[e] = x < w ? src[x] : 0.0f;
        }
#pragma unroll
        for (int e = 0; e < PAD_ELEMS; e++) {
            const int64_t x = x0 + e * PAD_THREADS;
            if (x < w)
                out[y * ostride + x] = v[e];
        }
    }
}

/* C[v][u] = B[v][u] * H(u, v), H = p_v * sum_j rows[j][u] w_v^j by Horner (correlate_math.h).
 * A warp covers 32 consecutive u of one row v, so loads of B and stores of C are coalesced;
 * rows[j][u] is staged in shared memory in chunks, highest j first as Horner needs. B is
 * loaded first (its latency overlaps the arithmetic), and the row loop is innermost so its
 * ROWS_PER_THREAD Horner chains are independent. */
__global__ void corr_multiply_kernel(const float2 *B, float2 *C, const float2 *__restrict__ rows,
                                     const float2 *__restrict__ cols, int64_t cw, int64_t py,
                                     int64_t kh, int64_t pitch_c) {
    __shared__ float2 rs[JCHUNK][TILE_U];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t u = (int64_t)blockIdx.x * TILE_U + tx;
    const int64_t v0 = (int64_t)blockIdx.y * (BLOCK_ROWS * ROWS_PER_THREAD) + ty;
    float acc_re[ROWS_PER_THREAD], acc_im[ROWS_PER_THREAD];
    float2 b[ROWS_PER_THREAD], wv[ROWS_PER_THREAD];
#pragma unroll
    for (int r = 0; r < ROWS_PER_THREAD; r++) {
        const int64_t v = v0 + (int64_t)r * BLOCK_ROWS;
        acc_re[r] = acc_im[r] = 0.0f;
        b[r] = (u < cw && v < py) ? B[v * pitch_c + u] : make_float2(0.0f, 0.0f);
        wv[r] = v < py ? cols[2 * v] : make_float2(0.0f, 0.0f);
    }
    const int64_t nchunks = (kh + JCHUNK - 1) / JCHUNK;
    for (int64_t c = nchunks - 1; c >= 0; c--) {
        const int64_t j0 = c * JCHUNK;
        const int jn = (int)(kh - j0 < JCHUNK ? kh - j0 : JCHUNK);
        for (int t = ty; t < jn; t += BLOCK_ROWS)
            rs[t][tx] = u < cw ? rows[(j0 + t) * cw + u] : make_float2(0.0f, 0.0f);
        __syncthreads();
        for (int jj = jn - 1; jj >= 0; jj--) {
            const float2 rv = rs[jj][tx];
#pragma unroll
            for (int r = 0; r < ROWS_PER_THREAD; r++)
                tide_corr_horner(&acc_re[r], &acc_im[r], wv[r].x, wv[r].y, rv.x, rv.y);
        }
        __syncthreads();
    }
    if (u >= cw)
        return;
#pragma unroll
    for (int r = 0; r < ROWS_PER_THREAD; r++) {
        const int64_t v = v0 + (int64_t)r * BLOCK_ROWS;
        if (v < py) {
            const float2 p = cols[2 * v + 1];
            float2 hk, o;
            tide_corr_cmul(acc_re[r], acc_im[r], p.x, p.y, &hk.x, &hk.y);
            tide_corr_cmul(b[r].x, b[r].y, hk.x, hk.y, &o.x, &o.y);
            C[v * pitch_c + u] = o;
        }
    }
}

/* tide_corr_rows: one thread per (k, j, u), tide_corr_row_entry as on the CPU. */
__global__ void corr_rows_kernel(const float *__restrict__ ker, const double *__restrict__ root,
                                 int64_t n, int64_t kh, int64_t kw, int64_t rx, int64_t cw,
                                 int64_t px, int sign, float *__restrict__ rows) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n)
        return;
    const int64_t u = e % cw, kj = e / cw; /* kj = k kh + j: row kj of the kernels' rows */
    tide_corr_row_entry(ker + kj * kw, kw, rx, u, px, root, sign, rows + 2 * e);
}

extern "C" int tide_corr_rows_cuda(tide_ctx *ctx, struct tide_correlator *c, const double *root) {
    /* the roots and kernels up in one buffer (roots first: 8-byte aligned) */
    const size_t rb = (size_t)c->px * 2 * sizeof(double);
    const size_t kb = (size_t)(c->nk * c->kw * c->kh) * sizeof(float);
    void *d = NULL;
    int st = tide_device_alloc(ctx, rb + kb, &d);
    if (!st)
        st = tide_memcpy(ctx, d, 1, root, 0, rb);
    if (!st)
        st = tide_memcpy(ctx, (unsigned char *)d + rb, 1, c->kernels, 0, kb);
    if (!st) {
        const int64_t n = (int64_t)c->nk * c->kh * c->cw;
        corr_rows_kernel<<<(unsigned)((n + PAD_THREADS - 1) / PAD_THREADS), PAD_THREADS, 0,
                           (cudaStream_t)ctx->stream>>>(
            (const float *)((unsigned char *)d + rb), (const double *)d, n, c->kh, c->kw, c->rx,
            c->cw, c->px, c->opt.convolve ? -1 : 1, c->rows);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            st = tide_error(TIDE_E_CUDA, "correlator tables: %s", cudaGetErrorString(e));
    }
    tide_device_free(ctx, d); /* stream-ordered: after the kernel has read it */
    return st;
}

extern "C" int tide_corr_prepare_cuda(tide_ctx *ctx, struct tide_correlator *c) {
    (void)ctx;
    (void)c; /* spectra are rebuilt on the fly by the product kernel */
    return TIDE_OK;
}

extern "C" int tide_corr_pad_cuda(tide_ctx *ctx, const struct tide_correlator *c,
                                  const tide_image *in) {
    if (in->location != TIDE_DEVICE)
        return tide_error(TIDE_E_INTERNAL, "correlate: CUDA pad needs a device input");
    dim3 block(PAD_THREADS);
    unsigned gy = (unsigned)(c->py < 65535 ? c->py : 65535);
    dim3 grid((unsigned)((c->pitch + PAD_THREADS * PAD_ELEMS - 1) / (PAD_THREADS * PAD_ELEMS)), gy);
    corr_pad_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(
        c->X, in->pix, in->mask, c->w, c->h, c->rx, c->ry, in->stride, c->py, c->pitch,
        c->opt.mask_bits);
    TIDE_CUDA_LAUNCHED();
    const int64_t halo = 2 * c->ry * (c->w + 2 * c->rx) + 2 * c->h * c->rx;
    if (c->opt.pad == TIDE_PAD_REFLECT && halo > 0) {
        const int64_t nb = (halo + PAD_THREADS - 1) / PAD_THREADS;
        corr_halo_kernel<<<(unsigned)(nb < 65535 ? nb : 65535), PAD_THREADS, 0,
                           (cudaStream_t)ctx->stream>>>(c->X, in->pix, in->mask, c->w, c->h, c->rx,
                                                        c->ry, in->stride, c->pitch,
                                                        c->opt.mask_bits);
        TIDE_CUDA_LAUNCHED();
    }
    return TIDE_OK;
}

extern "C" int tide_corr_multiply_cuda(tide_ctx *ctx, const struct tide_correlator *c, int k) {
    dim3 block(TILE_U, BLOCK_ROWS);
    const int64_t rows_per_block = BLOCK_ROWS * ROWS_PER_THREAD;
    const int64_t gy = (c->py + rows_per_block - 1) / rows_per_block;
    if (gy > 65535)
        return tide_error(TIDE_E_RANGE, "correlate: %lld padded rows exceed the CUDA grid",
                          (long long)c->py);
    dim3 grid((unsigned)((c->cw + TILE_U - 1) / TILE_U), (unsigned)gy);
    const float2 *rows = (const float2 *)c->rows + (int64_t)k * c->kh * c->cw;
    corr_multiply_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(
        (const float2 *)c->X, (float2 *)c->Y, rows, (const float2 *)c->cols, c->cw, c->py, c->kh,
        c->cw);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK;
}

extern "C" int tide_corr_crop_cuda(tide_ctx *ctx, const struct tide_correlator *c,
                                   tide_image *out) {
    if (out->location == TIDE_DEVICE) {
        /* A kernel, not cudaMemcpy2D: the copy engine streams unaligned rows far slower. */
        dim3 block(PAD_THREADS);
        unsigned gy = (unsigned)(c->h < 65535 ? c->h : 65535);
        dim3 grid((unsigned)((c->w + PAD_THREADS * PAD_ELEMS - 1) / (PAD_THREADS * PAD_ELEMS)), gy);
        corr_crop_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(
            out->pix, out->stride, c->Y, c->pitch, c->w, c->h, c->rx, c->ry);
        TIDE_CUDA_LAUNCHED();
        return TIDE_OK;
    }
    const float *src = c->Y + c->ry * c->pitch + c->rx;
    TIDE_CUDA_TRY(cudaMemcpy2DAsync(out->pix, (size_t)out->stride * sizeof(float), src,
                                    (size_t)c->pitch * sizeof(float), (size_t)c->w * sizeof(float),
                                    (size_t)c->h, cudaMemcpyDeviceToHost,
                                    (cudaStream_t)ctx->stream));
    return TIDE_OK;
}
