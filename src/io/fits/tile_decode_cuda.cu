/* tile_decode_cuda.cu — the CUDA twin of tide's RICE_1 tile decoder: one thread per tile
 * decodes its stream (a tile's blocks follow each other in the bitstream, so a tile is
 * sequential; images have thousands of tiles), with the checks of rice_decode.c: every byte
 * read is inside the tile's stream, a block code above FSMAX + 1 or a difference wider than
 * 32 bits stops the tile with a status. A second kernel converts one pixel per thread with
 * tile_quant_math.h, finding its place in the dither sequence from its index in the tile. */
#include <cuda_runtime.h>

#include "core/gpu/cuda_check.h"
#include "tile_decode_kernels.h"

/* The bit reader of rice_decode.c, one byte at a time: the unread bits are the top n bits of
 * buf. */
struct dev_bits {
    const uint8_t *p, *end;
    uint64_t buf;
    int n;
};

__device__ static inline void db_refill(dev_bits *r) {
    while (r->n < 56 && r->p < r->end) {
        r->buf |= (uint64_t)*r->p++ << (56 - r->n);
        r->n += 8;
    }
}

__device__ static inline int db_fill(dev_bits *r, int k) {
    if (r->n < k)
        db_refill(r);
    return r->n < k ? -1 : 0;
}

__device__ static inline uint32_t db_take(dev_bits *r, int k) {
    uint32_t v = (uint32_t)(r->buf >> (64 - k));
    r->buf <<= k;
    r->n -= k;
    return v;
}

__device__ static inline int db_unary(dev_bits *r, uint64_t *zeros) {
    uint64_t z = 0;
    for (;;) {
        int lz = r->buf ? __clzll((long long)r->buf) : 64;
        if (lz < r->n) {
            z += (uint64_t)lz;
            r->buf <<= lz;
            r->buf <<= 1;
            r->n -= lz + 1;
            *zeros = z;
            return 0;
        }
        z += (uint64_t)r->n;
        r->buf = 0;
        r->n = 0;
        if (r->p == r->end)
            return -1;
        db_refill(r);
    }
}

__device__ static inline int32_t widen(uint32_t v, int bytepix) {
    return bytepix == 1   ? (int32_t)(uint8_t)v
           : bytepix == 2 ? (int32_t)(int16_t)(uint16_t)v
                          : (int32_t)v;
}

__global__ void tile_rice_kernel(const uint8_t *unit, const tide_tile_job *jobs, int64_t ntiles,
                                 int bytepix, int blocksize, int32_t *scratch, int32_t *err) {
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= ntiles)
        return;
    const tide_tile_job j = jobs[k];
    const uint8_t *in = unit + j.stream_off;
    const int64_t nin = j.stream_len, npix = j.npix;
    int32_t *out = scratch + j.scratch_off;
    const int fsbits = bytepix == 1 ? 3 : bytepix == 2 ? 4 : 5;
    const int fsmax = bytepix == 1 ? 6 : bytepix == 2 ? 14 : 25;
    const int bbits = 8 * bytepix;
    const uint32_t mask = bytepix == 4 ? 0xffffffffu : (1u << bbits) - 1u;
    if (nin < bytepix) {
        err[k] = TIDE_TILE_SHORT;
        return;
    }
    uint32_t last = 0;
    for (int b = 0; b < bytepix; b++)
        last = (last << 8) | in[b];
    dev_bits r = {in + bytepix, in + nin, 0, 0};
    db_refill(&r);
    int64_t i = 0;
    int status = TIDE_TILE_OK;
    while (i < npix && !status) {
        int64_t imax = npix - i > blocksize ? i + blocksize : npix;
        if (db_fill(&r, fsbits)) {
            status = TIDE_TILE_SHORT;
            break;
        }
        int fs = (int)db_take(&r, fsbits) - 1;
        if (fs < 0) {
            for (; i < imax; i++)
                out[i] = widen(last & mask, bytepix);
        } else if (fs == fsmax) {
            for (; i < imax; i++) {
                if (db_fill(&r, bbits)) {
                    status = TIDE_TILE_SHORT;
                    break;
                }
                uint32_t d = db_take(&r, bbits);
                d = (d & 1) ? ~(d >> 1) : d >> 1;
                last += d;
                out[i] = widen(last & mask, bytepix);
            }
        } else if (fs > fsmax) {
            status = TIDE_TILE_BADCODE;
        } else {
            const uint64_t zmax = 0xffffffffull >> fs;
            for (; i < imax; i++) {
                uint64_t z;
                if (r.n < 32)
                    db_refill(&r);
                if (db_unary(&r, &z)) {
                    status = TIDE_TILE_SHORT;
                    break;
                }
                if (z > zmax) {
                    status = TIDE_TILE_WIDE;
                    break;
                }
                uint32_t d = (uint32_t)(z << fs);
                if (fs) {
                    if (db_fill(&r, fs)) {
                        status = TIDE_TILE_SHORT;
                        break;
                    }
                    d |= db_take(&r, fs);
                }
                d = (d & 1) ? ~(d >> 1) : d >> 1;
                last += d;
                out[i] = widen(last & mask, bytepix);
            }
        }
    }
    err[k] = status;
}

__global__ void tile_convert_kernel(const int32_t *scratch, const tide_tile_job *jobs,
                                    const tide_tile_conv *conv, const float *rand, int64_t width,
                                    int64_t height, int64_t zt1, int64_t zt2, int64_t n1,
                                    float *out, uint16_t *mask) {
    const int64_t n = width * height;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t x = i % width, y = i / width;
        const int64_t k = (y / zt2) * n1 + x / zt1;
        const int64_t p = (y - jobs[k].y0) * jobs[k].tw + (x - jobs[k].x0);
        const tide_tile_conv c = conv[k];
        const float rv = c.dither ? tide_tile_dither_at(rand, c.first_rand, p) : 0.0f;
        const float v = tide_tile_value(&c, scratch[jobs[k].scratch_off + p], rv);
        if (mask) { /* the reader's marking, fused (tide_fits_read_image_at) */
            const int bad = !isfinite(v);
            out[i] = bad ? NAN : v;
            mask[i] = bad ? (uint16_t)TIDE_MASK_NODATA : (uint16_t)0;
        } else {
            out[i] = v; /* the decoder's twin: tide_tile_decode_cpu's bits */
        }
    }
}

extern "C" int tide_tile_rice_cuda(tide_ctx *ctx, const uint8_t *d_unit,
                                   const tide_tile_job *d_jobs, int64_t ntiles, int bytepix,
                                   int blocksize, int32_t *d_scratch, int32_t *d_err) {
    if (ntiles <= 0)
        return 0;
    const int block = 32; /* one tile a thread: one warp a block spreads tiles over the SMs */
    const unsigned grid = (unsigned)((ntiles + block - 1) / block);
    tile_rice_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(d_unit, d_jobs, ntiles, bytepix,
                                                                    blocksize, d_scratch, d_err);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

extern "C" int tide_tile_convert_cuda(tide_ctx *ctx, const int32_t *d_scratch,
                                      const tide_tile_job *d_jobs, const tide_tile_conv *d_conv,
                                      const float *d_rand, int64_t width, int64_t height,
                                      int64_t ztile1, int64_t ztile2, int64_t ntile1, float *d_out,
                                      uint16_t *d_mask) {
    const int64_t n = width * height;
    if (n <= 0)
        return 0;
    const int block = 256;
    int64_t g = (n + block - 1) / block;
    const unsigned grid = (unsigned)(g > 65535 * 16 ? 65535 * 16 : g);
    tile_convert_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(
        d_scratch, d_jobs, d_conv, d_rand, width, height, ztile1, ztile2, ntile1, d_out, d_mask);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
