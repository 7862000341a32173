/* rice_encode.h — the RICE_1 encoder of one tile, shared by the CPU encoder (tile_encode.c)
 * and its CUDA twin (tile_encode_cuda.cu), so that both write the same bytes.
 *
 * The stream is the one rice_decode.h reads (FITS standard 4.0, sec. 10.4.1; Pence et al.
 * 2009), laid out as cfitsio's fits_rcomp / fits_rcomp_short / fits_rcomp_byte lay it out:
 *  - the first value as BYTEPIX bytes, big-endian;
 *  - then blocks of BLOCKSIZE values (the last may be shorter). Each value's difference from
 *    the previous one, taken in the pixel's width (8, 16 or 32 bits) and read as signed, is
 *    mapped to unsigned (2d for d >= 0, -2d - 1 else). From the block's sum S of n mapped
 *    differences, fs is the bit length of floor(max(0, (S - n/2 - 1) / n)) / 2 (integer
 *    division, n/2 rounded down). fs >= FSMAX: the code FSMAX + 1, then every difference in
 *    8 * BYTEPIX bits; fs = 0 and S = 0: the code 0 alone; otherwise the code fs + 1, then
 *    each difference as (d >> fs) zeros, a one and its fs low bits;
 *  - bits most significant first; the last byte padded with zeros.
 * Codes are FSBITS wide: 3/4/5 bits, FSMAX 6/14/25 for BYTEPIX 1/2/4.
 * Pure integer arithmetic: the bytes are the same on every backend. Not public. */
#ifndef TIDE_RICE_ENCODE_H
#define TIDE_RICE_ENCODE_H
#include <stdint.h>

#include "core/gpu/hd.h"

/** Bytes that always hold the stream of @p npix values of @p bytepix bytes in blocks of
 *  @p blocksize. Per block of n values the Rice branch writes at most
 *  FSBITS + n (FSMAX + 2.5) + 1 bits (fs < FSMAX bounds the low bits, and the block sum
 *  below n 2^(fs+1) + n/2 + 1 bounds the unary parts by 2.5 n + 1), the verbatim branch
 *  FSBITS + 8 n BYTEPIX. */
TIDE_HD static inline int64_t tide_rice_encode_bound(int64_t npix, int bytepix, int blocksize) {
    const int fsbits = bytepix == 1 ? 3 : bytepix == 2 ? 4 : 5;
    const int fsmax = bytepix == 1 ? 6 : bytepix == 2 ? 14 : 25;
    const int64_t per = 8 * bytepix > fsmax + 3 ? 8 * bytepix : fsmax + 3;
    const int64_t nblocks = (npix + blocksize - 1) / blocksize;
    return bytepix + (nblocks * (fsbits + 1) + npix * per + 7) / 8 + 8;
}

/** The bit writer: @c acc holds @c n (< 32) pending bits in its low end. */
typedef struct {
    uint8_t *p;
    uint64_t acc;
    int n;
} tide_rice_writer;

/** Append the @p k (0..32) low bits of @p v; whole 32-bit words go out at once. */
TIDE_HD static inline void tide_rice_put(tide_rice_writer *w, uint32_t v, int k) {
    if (k == 0)
        return;
    const uint64_t mask = k == 32 ? 0xffffffffull : ((1ull << k) - 1);
    w->acc = (w->acc << k) | ((uint64_t)v & mask); /* n + k <= 63: nothing falls off */
    w->n += k;
    if (w->n >= 32) {
        w->n -= 32;
        const uint32_t word = (uint32_t)(w->acc >> w->n);
        w->p[0] = (uint8_t)(word >> 24);
        w->p[1] = (uint8_t)(word >> 16);
        w->p[2] = (uint8_t)(word >> 8);
        w->p[3] = (uint8_t)word;
        w->p += 4;
    }
}

/** Append @p z zeros and a one (the unary part of a Rice code). */
TIDE_HD static inline void tide_rice_put_unary(tide_rice_writer *w, uint32_t z) {
    while (z >= 32) {
        tide_rice_put(w, 0, 32);
        z -= 32;
    }
    tide_rice_put(w, 1, (int)z + 1);
}

/** The mapped difference of @p v from @p last in a pixel of @p bits bits (8, 16, 32). */
TIDE_HD static inline uint32_t tide_rice_map(uint32_t v, uint32_t last, int bits) {
    const int sh = 32 - bits;
    const int32_t d = (int32_t)((v - last) << sh) >> sh; /* the difference, sign-extended */
    return d < 0 ? ~((uint32_t)d << 1) : (uint32_t)d << 1;
}

/** Encode the @p npix (>= 1) values @p a (each the pixel's bits in the low 8 * @p bytepix
 *  bits; higher bits ignored) in blocks of @p blocksize into @p out, which holds
 *  tide_rice_encode_bound() bytes. Returns the bytes written. */
TIDE_HD static inline int64_t tide_rice_encode(const uint32_t *a, int64_t npix, int bytepix,
                                               int blocksize, uint8_t *out) {
    const int fsbits = bytepix == 1 ? 3 : bytepix == 2 ? 4 : 5;
    const int fsmax = bytepix == 1 ? 6 : bytepix == 2 ? 14 : 25;
    const int bbits = 8 * bytepix;
    const uint32_t vmask = bytepix == 4 ? 0xffffffffu : (1u << bbits) - 1u;
    tide_rice_writer w = {out, 0, 0};
    uint32_t last = a[0] & vmask;
    for (int k = bytepix - 1; k >= 0; k--)
        *w.p++ = (uint8_t)(last >> (8 * k));
    for (int64_t i = 0; i < npix; i += blocksize) {
        const int n = npix - i < blocksize ? (int)(npix - i) : blocksize;
        /* First pass: the block's sum, which picks fs; the differences are recomputed in
         * the second pass rather than stored, so no per-block buffer is needed. */
        int64_t sum = 0;
        uint32_t prev = last;
        for (int j = 0; j < n; j++) {
            const uint32_t v = a[i + j] & vmask;
            sum += tide_rice_map(v, prev, bbits);
            prev = v;
        }
        int64_t dpsum = (sum - n / 2 - 1) / n;
        if (dpsum < 0)
            dpsum = 0;
        uint32_t psum = (uint32_t)dpsum >> 1;
        int fs = 0;
        while (psum) {
            psum >>= 1;
            fs++;
        }
        if (fs >= fsmax) { /* high entropy: the differences verbatim */
            tide_rice_put(&w, (uint32_t)fsmax + 1, fsbits);
            for (int j = 0; j < n; j++) {
                const uint32_t v = a[i + j] & vmask;
                tide_rice_put(&w, tide_rice_map(v, last, bbits), bbits);
                last = v;
            }
        } else if (fs == 0 && sum == 0) { /* every difference zero */
            tide_rice_put(&w, 0, fsbits);
        } else {
            tide_rice_put(&w, (uint32_t)fs + 1, fsbits);
            const uint32_t lowmask = fs ? (1u << fs) - 1u : 0u;
            for (int j = 0; j < n; j++) {
                const uint32_t v = a[i + j] & vmask;
                const uint32_t d = tide_rice_map(v, last, bbits), top = d >> fs;
                if (top + 1 + (uint32_t)fs <= 32) { /* the usual code: one put */
                    tide_rice_put(&w, (1u << fs) | (d & lowmask), (int)top + 1 + fs);
                } else {
                    tide_rice_put_unary(&w, top);
                    tide_rice_put(&w, d & lowmask, fs);
                }
                last = v;
            }
        }
        last = prev;
    }
    while (w.n >= 8) { /* the whole bytes left, then the last one padded with zeros */
        w.n -= 8;
        *w.p++ = (uint8_t)(w.acc >> w.n);
    }
    if (w.n > 0)
        *w.p++ = (uint8_t)(w.acc << (8 - w.n));
    return (int64_t)(w.p - out);
}

#endif
