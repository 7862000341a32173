/* tile_encode_core.h — one tile of an image encoded as a RICE_1 row of a tile-compressed HDU:
 * gathered from the image, quantized when it holds floats (tile_quantize_math.h), Rice-coded
 * (rice_encode.h). The CPU encoder (tile_encode.c) runs it on a thread per tile, the CUDA
 * twin (tile_encode_cuda.cu) on a GPU thread per tile: the same code, so the same bytes.
 * Not public. */
#ifndef TIDE_TILE_ENCODE_CORE_H
#define TIDE_TILE_ENCODE_CORE_H
#include <stdint.h>

#include "core/gpu/hd.h"
#include "rice_encode.h"
#include "tile_quantize_math.h"

/** What the image's pixels are, and so how the tiles store them. */
typedef enum {
    TIDE_ENC_U8 = 0,  /**< uint8, BITPIX 8, BYTEPIX 1, lossless */
    TIDE_ENC_I16 = 1, /**< int16, BITPIX 16, BYTEPIX 2, lossless */
    TIDE_ENC_U16 = 2, /**< uint16 as BITPIX 16 with BZERO 32768, BYTEPIX 2, lossless */
    TIDE_ENC_I32 = 3, /**< int32, BITPIX 32, BYTEPIX 4, lossless */
    TIDE_ENC_F32 = 4  /**< float, BITPIX -32, quantized to int32, BYTEPIX 4 */
} tide_enc_kind;

/** How an image is cut into tiles and coded. */
typedef struct {
    int64_t width, height;      /**< the image (rows of width pixels, stride apart) */
    int64_t stride;             /**< elements between rows */
    int64_t ztile1, ztile2;     /**< tile shape (ZTILE1, ZTILE2) */
    int64_t ntile1, ntiles;     /**< tiles per tile row, tiles in all */
    int kind;                   /**< tide_enc_kind */
    int bytepix, blocksize;     /**< RICE_1 parameters */
    float qlevel;               /**< quantization level (floats) */
    int dither0;                /**< ZDITHER0, 1..10000 (floats) */
    int64_t cap;                /**< bytes of one tile's output slot (tide_rice_encode_bound) */
    int64_t tile_px;            /**< pixels of the largest tile */
    int64_t noise_nx, noise_ny; /**< sizes of the noise lists (tile_quantize_math.h) */
} tide_tile_enc_plan;

/** Status of one encoded tile. */
enum {
    TIDE_TILE_ENC_RICE = 0,    /**< a RICE_1 stream in the tile's slot */
    TIDE_TILE_ENC_LOSSLESS = 1 /**< a float tile that cannot be quantized: stored losslessly
                                    (gzip of its IEEE values) by the writer */
};

/** One tile's result. */
typedef struct {
    int64_t nbytes;     /**< bytes of the stream in the slot */
    double scale, zero; /**< ZSCALE / ZZERO (floats; 0 for a lossless tile, as cfitsio) */
    int32_t status;     /**< TIDE_TILE_ENC_* */
    int32_t has_null;   /**< the tile held a null pixel */
} tide_tile_enc_out;

/** Tile @p k's first column, row, width and height. */
TIDE_HD static inline void tide_tile_enc_shape(const tide_tile_enc_plan *p, int64_t k, int64_t *x0,
                                               int64_t *y0, int64_t *tw, int64_t *th) {
    *x0 = (k % p->ntile1) * p->ztile1;
    *y0 = (k / p->ntile1) * p->ztile2;
    *tw = p->width - *x0 < p->ztile1 ? p->width - *x0 : p->ztile1;
    *th = p->height - *y0 < p->ztile2 ? p->height - *y0 : p->ztile2;
}

/** The scratch one tile needs, in bytes: the gathered pixels (4 bytes each), their integers
 *  (4 bytes each), for floats the noise lists and the radix selection's candidates (a row's
 *  width each), its histogram and the row medians. 16-byte aligned pieces. */
TIDE_HD static inline int64_t tide_tile_enc_scratch_bytes(const tide_tile_enc_plan *p) {
    const int64_t a = (p->tile_px * 4 + 15) / 16 * 16;
    const int64_t f = (p->noise_nx * 4 + 15) / 16 * 16, d = p->noise_ny * 8;
    return 2 * a + (p->kind == TIDE_ENC_F32 ? 4 * f + 4 * TIDE_TILE_RADIX_BUCKETS + 3 * d : 0);
}

/** Encode tile @p k of the image @p img (elements of the plan's kind) with the scratch
 *  @p work (tide_tile_enc_scratch_bytes, 16-byte aligned) into @p slot (p->cap bytes);
 *  @p rand is the dither sequence (tide_tile_randoms). */
TIDE_HD static inline void tide_tile_encode_one(const tide_tile_enc_plan *p, const void *img,
                                                int64_t k, const float *rand, uint8_t *work,
                                                uint8_t *slot, tide_tile_enc_out *o) {
    int64_t x0, y0, tw, th;
    tide_tile_enc_shape(p, k, &x0, &y0, &tw, &th);
    const int64_t n = tw * th, a = (p->tile_px * 4 + 15) / 16 * 16;
    uint32_t *vals = (uint32_t *)(work + a);
    o->scale = 0.;
    o->zero = 0.;
    o->has_null = 0;
    o->status = TIDE_TILE_ENC_RICE;
    if (p->kind == TIDE_ENC_F32) {
        float *f = (float *)work;
        const float *src = (const float *)img;
        int nulls = 0;
        for (int64_t y = 0; y < th; y++)
            for (int64_t x = 0; x < tw; x++) {
                const float v = src[(y0 + y) * p->stride + x0 + x];
                f[y * tw + x] = v;
                nulls |= !isfinite(v);
            }
        if (nulls) /* as cfitsio reads a tile with nulls: every null the float null value */
            for (int64_t i = 0; i < n; i++)
                if (!isfinite(f[i]))
                    f[i] = TIDE_TILE_FLOAT_NULL;
        o->has_null = nulls;
        const int64_t fb = (p->noise_nx * 4 + 15) / 16 * 16;
        uint8_t *ns = work + 2 * a;
        uint8_t *rows = ns + 4 * fb + 4 * TIDE_TILE_RADIX_BUCKETS;
        tide_tile_noise_scratch s = {(float *)ns,
                                     (float *)(ns + fb),
                                     (float *)(ns + 2 * fb),
                                     (double *)rows,
                                     (double *)rows + p->noise_ny,
                                     (double *)rows + 2 * p->noise_ny,
                                     (uint32_t *)(ns + 4 * fb),
                                     (uint32_t *)(ns + 3 * fb)};
        for (int64_t i = 0; i < p->noise_nx; i++)
            s.d2[i] = 0.f; /* cfitsio's calloc: the stale entries a first row reads */
        const int i0 = (int)((k + 1 + p->dither0 - 2) % TIDE_TILE_NRANDOM);
        if (!tide_tile_quantize(f, tw, th, nulls, p->qlevel, rand, i0, &s, (int32_t *)vals,
                                &o->scale, &o->zero)) {
            o->status = TIDE_TILE_ENC_LOSSLESS;
            o->scale = o->zero = 0.;
            o->nbytes = 0;
            return;
        }
    } else {
        for (int64_t y = 0; y < th; y++) {
            const int64_t row = (y0 + y) * p->stride + x0;
            uint32_t *dst = vals + y * tw;
            if (p->kind == TIDE_ENC_U8)
                for (int64_t x = 0; x < tw; x++)
                    dst[x] = ((const uint8_t *)img)[row + x];
            else if (p->kind == TIDE_ENC_I16)
                for (int64_t x = 0; x < tw; x++)
                    dst[x] = (uint16_t)((const int16_t *)img)[row + x];
            else if (p->kind == TIDE_ENC_U16) /* stored as v - 32768: the top bit flipped */
                for (int64_t x = 0; x < tw; x++)
                    dst[x] = (uint32_t)(((const uint16_t *)img)[row + x] ^ 0x8000u);
            else
                for (int64_t x = 0; x < tw; x++)
                    dst[x] = (uint32_t)((const int32_t *)img)[row + x];
        }
    }
    o->nbytes = tide_rice_encode(vals, n, p->bytepix, p->blocksize, slot);
}

#endif
