/* rice_decode.c — tide_rice_decode: RICE_1 tile streams decoded with every input byte read
 * checked against the stream's end (see rice_decode.h for the format). */
#include "io/rice_decode.h"

#include "tide/status.h"

/* The bit reader: the unread bits of the bytes loaded so far are the low n bits of buf (the
 * bits above are always zero), p the next byte. n stays below 40: a load happens only while
 * fewer bits are held than one request needs, and no request needs more than 32. */
typedef struct {
    const uint8_t *p, *end;
    uint64_t buf;
    int n;
} rice_bits;

/* Hold at least k (<= 32) bits; -1 when the stream ends first. */
static inline int rb_fill(rice_bits *r, int k) {
    while (r->n < k) {
        if (r->p == r->end)
            return -1;
        r->buf = (r->buf << 8) | *r->p++;
        r->n += 8;
    }
    return 0;
}

/* The next k (1..32) bits, after rb_fill(r, k). */
static inline uint32_t rb_take(rice_bits *r, int k) {
    r->n -= k;
    uint32_t v = (uint32_t)(r->buf >> r->n) & (uint32_t)((1ull << k) - 1);
    r->buf &= (1ull << r->n) - 1;
    return v;
}

/* The unary part of a code: the zeros before the next one bit (which is consumed too).
 * -1 when the stream ends first. The count is bounded by the input, 8 zeros per byte. */
static inline int rb_unary(rice_bits *r, uint64_t *zeros) {
    uint64_t z = 0;
    while (r->buf == 0) { /* every held bit is a zero */
        z += (uint64_t)r->n;
        if (r->p == r->end)
            return -1;
        r->buf = *r->p++;
        r->n = 8;
    }
    int top = 63 - __builtin_clzll(r->buf); /* the one bit's position, < n */
    z += (uint64_t)(r->n - 1 - top);
    r->n = top;
    r->buf &= (1ull << top) - 1;
    *zeros = z;
    return 0;
}

static int rice_end(size_t nin, int64_t pix, int64_t npix) {
    return tide_error(TIDE_E_FORMAT, "RICE stream of %zu bytes ends before pixel %lld of %lld",
                      nin, (long long)pix + 1, (long long)npix);
}

/* The decoder for one pixel size; always inlined so that each size gets its own loop with
 * the store and the bit widths as constants. */
static inline __attribute__((always_inline)) int
rice_run(const uint8_t *in, size_t nin, const int bytepix, int blocksize, int64_t npix,
         void *out, size_t *used) {
    const int fsbits = bytepix == 1 ? 3 : bytepix == 2 ? 4 : 5;
    const int fsmax = bytepix == 1 ? 6 : bytepix == 2 ? 14 : 25;
    const int bbits = 8 * bytepix;
    uint8_t *o8 = out;
    uint16_t *o16 = out;
    uint32_t *o32 = out;
#define RICE_STORE(idx, v)                                                                    \
    do {                                                                                      \
        if (bytepix == 1)                                                                     \
            o8[idx] = (uint8_t)(v);                                                           \
        else if (bytepix == 2)                                                                \
            o16[idx] = (uint16_t)(v);                                                         \
        else                                                                                  \
            o32[idx] = (uint32_t)(v);                                                         \
    } while (0)

    if (nin < (size_t)bytepix)
        return rice_end(nin, 0, npix);
    /* The first pixel, verbatim and big-endian: the first difference is then zero. */
    uint32_t last = 0;
    for (int k = 0; k < bytepix; k++)
        last = (last << 8) | in[k];
    rice_bits r = {in + bytepix, in + nin, 0, 0};

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
    *used = (size_t)(r.p - in);
    return TIDE_OK;
}

int tide_rice_decode_used(const uint8_t *in, size_t nin, int bytepix, int blocksize,
                          int64_t npix, void *out, size_t *used) {
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
