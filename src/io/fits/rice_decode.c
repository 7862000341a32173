/* rice_decode.c — tide_rice_decode: RICE_1 tile streams decoded with every input byte read
 * checked against the stream's end (see rice_decode.h for the format). */
#include "rice_decode.h"

#include "tide/status.h"

/* The bit reader. The unread bits are the top n bits of buf, most significant first; the
 * bits below them are either zero or the leading bits of the bytes from p on (a refill ORs
 * those same bits into the same places again, so they do no harm). Where 8 bytes remain, a
 * refill loads them at once and keeps the whole bytes that fit (n >= 56 after it); near the
 * end it loads byte by byte, never past the end. No request needs more than 32 bits. */
typedef struct {
    const uint8_t *p, *end;
    uint64_t buf;
    int n;
} rice_bits;

static inline uint64_t load_be64(const uint8_t *b) {
    uint64_t v;
    __builtin_memcpy(&v, b, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void rb_refill(rice_bits *r) {
    if (r->end - r->p >= 8) {
        r->buf |= load_be64(r->p) >> r->n;
        int bytes = (63 - r->n) >> 3;
        r->p += bytes;
        r->n += bytes * 8;
    } else {
        while (r->n < 56 && r->p < r->end) {
            r->buf |= (uint64_t)*r->p++ << (56 - r->n);
            r->n += 8;
        }
    }
}

/* Hold at least k (<= 32) bits; -1 when the stream ends first. */
static inline int rb_fill(rice_bits *r, int k) {
    if (r->n < k)
        rb_refill(r);
    return r->n < k ? -1 : 0;
}

/* The next k (1..32) bits, after rb_fill(r, k). */
static inline uint32_t rb_take(rice_bits *r, int k) {
    uint32_t v = (uint32_t)(r->buf >> (64 - k));
    r->buf <<= k;
    r->n -= k;
    return v;
}

/* The unary part of a code: the zeros before the next one bit (which is consumed too).
 * -1 when the stream ends first. The count is bounded by the input, 8 zeros per byte. */
static inline int rb_unary(rice_bits *r, uint64_t *zeros) {
    uint64_t z = 0;
    for (;;) {
        int lz = r->buf ? __builtin_clzll(r->buf) : 64;
        if (lz < r->n) {
            z += (uint64_t)lz;
            r->buf <<= lz; /* lz < n <= 64 - 8 */
            r->buf <<= 1;
            r->n -= lz + 1;
            *zeros = z;
            return 0;
        }
        z += (uint64_t)r->n; /* every held bit is a zero */
        r->buf = 0;
        r->n = 0;
        if (r->p == r->end)
            return -1;
        rb_refill(r);
    }
}

static int rice_end(size_t nin, int64_t pix, int64_t npix) {
    return tide_error(TIDE_E_FORMAT, "RICE stream of %zu bytes ends before pixel %lld of %lld", nin,
                      (long long)pix + 1, (long long)npix);
}

/* The decoder for one pixel size; always inlined so that each size gets its own loop with
 * the store and the bit widths as constants. */
static inline __attribute__((always_inline)) int rice_run(const uint8_t *in, size_t nin,
                                                          const int bytepix, int blocksize,
                                                          int64_t npix, void *out, size_t *used) {
    const int fsbits = bytepix == 1 ? 3 : bytepix == 2 ? 4 : 5;
    const int fsmax = bytepix == 1 ? 6 : bytepix == 2 ? 14 : 25;
    const int bbits = 8 * bytepix;
    uint8_t *o8 = out;
    uint16_t *o16 = out;
    uint32_t *o32 = out;
#define RICE_STORE(idx, v)                                                                         \
    do {                                                                                           \
        if (bytepix == 1)                                                                          \
            o8[idx] = (uint8_t)(v);                                                                \
        else if (bytepix == 2)                                                                     \
            o16[idx] = (uint16_t)(v);                                                              \
        else                                                                                       \
            o32[idx] = (uint32_t)(v);                                                              \
    } while (0)

    if (nin < (size_t)bytepix)
        return rice_end(nin, 0, npix);
    /* The first pixel, verbatim and big-endian: the first difference is then zero. */
    uint32_t last = 0;
    for (int k = 0; k < bytepix; k++)
        last = (last << 8) | in[k];
    rice_bits r = {in + bytepix, in + nin, 0, 0};
    rb_refill(&r);

    int64_t i = 0;
    while (i < npix) {
        int64_t imax = npix - i > blocksize ? i + blocksize : npix;
        if (rb_fill(&r, fsbits))
            return rice_end(nin, i, npix);
        int fs = (int)rb_take(&r, fsbits) - 1;
        if (fs < 0) { /* a block of zero differences */
            for (; i < imax; i++)
                RICE_STORE(i, last);
        } else if (fs == fsmax) { /* differences stored verbatim */
            for (; i < imax; i++) {
                if (rb_fill(&r, bbits))
                    return rice_end(nin, i, npix);
                uint32_t d = rb_take(&r, bbits);
                d = (d & 1) ? ~(d >> 1) : d >> 1;
                last += d;
                RICE_STORE(i, last);
            }
        } else if (fs > fsmax) {
            return tide_error(TIDE_E_FORMAT,
                              "RICE block code %d before pixel %lld is above the largest valid "
                              "one (%d)",
                              fs + 1, (long long)i + 1, fsmax + 1);
        } else { /* Rice codes: a unary high part and fs low bits */
            const uint64_t zmax = 0xffffffffull >> fs;
            for (; i < imax; i++) {
                uint64_t z;
                if (r.n < 32)
                    rb_refill(&r);
                if (rb_unary(&r, &z))
                    return rice_end(nin, i, npix);
                if (z > zmax)
                    return tide_error(TIDE_E_FORMAT,
                                      "RICE difference at pixel %lld is wider than 32 bits "
                                      "(%llu leading zeros with %d low bits)",
                                      (long long)i + 1, (unsigned long long)z, fs);
                uint32_t d = (uint32_t)(z << fs);
                if (fs) {
                    if (rb_fill(&r, fs))
                        return rice_end(nin, i, npix);
                    d |= rb_take(&r, fs);
                }
                d = (d & 1) ? ~(d >> 1) : d >> 1;
                last += d;
                RICE_STORE(i, last);
            }
        }
    }
#undef RICE_STORE
    /* Bytes of which a bit was used (cfitsio's count): those loaded less the unread bits. */
    *used = ((size_t)(r.p - in) * 8 - (size_t)r.n + 7) / 8;
    return TIDE_OK;
}

int tide_rice_decode_used(const uint8_t *in, size_t nin, int bytepix, int blocksize, int64_t npix,
                          void *out, size_t *used) {
    size_t u = 0;
    if (!used)
        used = &u;
    *used = 0;
    if ((!in && nin) || !out || npix < 1 || blocksize < 1)
        return tide_error(TIDE_E_INVAL,
                          "RICE decode: bad arguments (%zu bytes, %lld pixels, block %d)", nin,
                          (long long)npix, blocksize);
    switch (bytepix) {
    case 1: return rice_run(in, nin, 1, blocksize, npix, out, used);
    case 2: return rice_run(in, nin, 2, blocksize, npix, out, used);
    case 4: return rice_run(in, nin, 4, blocksize, npix, out, used);
    default:
        return tide_error(TIDE_E_INVAL, "RICE decode: %d bytes per pixel (1, 2 or 4 expected)",
                          bytepix);
    }
}

int tide_rice_decode(const uint8_t *in, size_t nin, int bytepix, int blocksize, int64_t npix,
                     void *out) {
    return tide_rice_decode_used(in, nin, bytepix, blocksize, npix, out, NULL);
}
