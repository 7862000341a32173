/* tile_inflate_cuda.cu — GZIP_1 / GZIP_2 tiles inflated on the GPU: one warp per tile runs
 * inflate_math.h (lane 0 decodes the symbols; the lanes fill the Huffman tables, copy stored
 * blocks and compute the CRC-32 in pieces), checks the member's CRC-32 and ISIZE and that it
 * inflates to a whole number of pixels, then the lanes undo GZIP_2's byte planes or the
 * big-endian order and convert the pixels with tile_quant_math.h straight into the image.
 * A tile that fails any check gets a status and the host hands the image to the CPU twin. */
#include <cuda_runtime.h>

#include "core/gpu/cuda_check.h"
#include "inflate_math.h"
#include "tile_inflate_kernels.h"

/* Warps per block: the shared memory of four inflate states (4 KiB each) and one CRC table. */
#define WARPS 4

/* The pixel value @p p of an inflated tile of @p npix values of @p bytes bytes, big-endian,
 * or in byte planes (GZIP_2: all most significant bytes first). */
__device__ static inline uint64_t tile_word(const uint8_t *raw, int64_t npix, int bytes, int planes,
                                            int64_t p) {
    uint64_t v = 0;
    for (int b = 0; b < bytes; b++)
        v = v << 8 | (planes ? raw[(int64_t)b * npix + p] : raw[p * bytes + b]);
    return v;
}

__global__ void tile_gzip_kernel(const uint8_t *unit, const tide_tile_gzip_job *jobs,
                                 int64_t ntiles, tide_tile_gzip_image img,
                                 const tide_tile_conv *conv, const float *rand, uint8_t *raw,
                                 float *out, uint16_t *mask, int32_t *err) {
    __shared__ tide_inflate_state state[WARPS];
    __shared__ uint32_t crc[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        crc[i] = tide_infl_crc_entry((uint32_t)i);
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t k = (int64_t)blockIdx.x * WARPS + warp;
    if (k >= ntiles)
        return; /* a whole warp: no lane of a working warp leaves */
    const tide_tile_gzip_job j = jobs[k];
    uint8_t *dst = raw + j.raw_off;
    size_t got = 0;
    int st = tide_inflate_gzip(&state[warp], crc, unit + j.stream_off, (size_t)j.stream_len, dst,
                               (size_t)j.raw_cap, &got, lane, 32);
    int bytes = 0;
    for (int b = 1; !st && b <= 8; b *= 2)
        if ((j.sizes & b) && got == (size_t)j.npix * (size_t)b)
            bytes = b;
    if (!st && !bytes)
        st = TIDE_TILE_GZIP_SIZE;
    if (st) {
        if (lane == 0)
            err[k] = st;
        return;
    }
    /* as tide_tile_decode_cpu: fallback tiles are IEEE values, null-checked, never shuffled;
     * float images' 8-byte and lossless tiles too, with the tile's null check and scaling */
    const int planes = img.shuffled && !j.fallback && bytes > 1;
    const int reals = j.fallback || (img.float_image && (img.lossless || bytes == 8));
    const tide_tile_conv c = conv[3 * k + (bytes == 1 ? 0 : bytes == 2 ? 1 : 2)];
    for (int64_t p = lane; p < j.npix; p += 32) {
        const uint64_t v = tile_word(dst, j.npix, bytes, planes, p);
        float f;
        if (reals && j.fallback) {
            f = tide_tile_real_value(v, bytes, 1, 1.0, 0.0);
        } else if (reals) {
            f = tide_tile_real_value(v, bytes, c.has_null, c.scale, c.zero);
        } else {
            const int64_t x = bytes == 1   ? (int64_t)(uint8_t)v
                              : bytes == 2 ? (int64_t)(int16_t)(uint16_t)v
                                           : (int64_t)(int32_t)(uint32_t)v;
            const float rv = c.dither ? tide_tile_dither_at(rand, c.first_rand, p) : 0.0f;
            f = tide_tile_value(&c, x, rv);
        }
        const int64_t o = (j.y0 + p / j.tw) * img.width + j.x0 + p % j.tw;
        if (mask) { /* the reader's marking, fused (tide_fits_read_image_at), as RICE's */
            const int isbad = !isfinite(f);
            out[o] = isbad ? NAN : f;
            mask[o] = isbad ? (uint16_t)TIDE_MASK_NODATA : (uint16_t)0;
        } else {
            out[o] = f; /* the decoder's twin: tide_tile_decode_cpu's bits */
        }
    }
    if (lane == 0)
        err[k] = 0;
}

extern "C" int tide_tile_gzip_cuda(tide_ctx *ctx, const uint8_t *d_unit,
                                   const tide_tile_gzip_job *d_jobs, int64_t ntiles,
                                   tide_tile_gzip_image img, const tide_tile_conv *d_conv,
                                   const float *d_rand, uint8_t *d_raw, float *d_out,
                                   uint16_t *d_mask, int32_t *d_err) {
    if (ntiles <= 0)
        return 0;
    const unsigned grid = (unsigned)((ntiles + WARPS - 1) / WARPS);
    tile_gzip_kernel<<<grid, WARPS * 32, 0, (cudaStream_t)ctx->stream>>>(
        d_unit, d_jobs, ntiles, img, d_conv, d_rand, d_raw, d_out, d_mask, d_err);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
