/* hcompress_check.c — an HCOMPRESS_1 tile stream walked bit by bit the way cfitsio 4.2.0's
 * fits_hdecompress reads it, with every byte read checked against the stream's length.
 *
 * fits_hdecompress takes no stream length: a cut or crafted stream makes it read past its
 * buffer, a bad bit-plane format code makes it return without freeing its scratch array
 * (the leak of cfitsio_hdecompress_leak.fits), a quadrant with no pixels but bit planes
 * makes it write one byte into a 0-byte allocation, and more bit planes than the pixel type
 * has bits shift past the type's width. This walk reads the same fields in the same order
 * (header, the four quadrants' bit planes, direct or quadtree coded, the end nybble, one
 * sign bit per nonzero pixel), keeping only which pixels are nonzero, and fails where
 * cfitsio would misbehave or the stream ends first. It does not compute the pixels (no
 * inverse H-transform): values are not checked, only that decoding stays in bounds. */
#include <math.h>
#include <stdlib.h>

#include "fits_tiles_codec.h"
#include "tide/status.h"

/* cfitsio's bit input: bytes are taken one at a time only when bits are needed. */
typedef struct {
    const uint8_t *p, *end;
    unsigned buf;
    int bits;
} hc_bits;

/* The next n (1..8) bits into *v; -1 when the stream ends first. */
static inline int hc_get(hc_bits *r, int n, unsigned *v) {
    if (r->bits < n) {
        if (r->p == r->end)
            return -1;
        r->buf = ((r->buf << 8) | *r->p++) & 0xffff;
        r->bits += 8;
    }
    r->bits -= n;
    *v = (r->buf >> r->bits) & ((1u << n) - 1);
    return 0;
}

/* cfitsio's input_huffman: the 4-bit quadtree code of a variable-length prefix code. */
static int hc_huffman(hc_bits *r, unsigned *out) {
    unsigned c, b;
    if (hc_get(r, 3, &c))
        return -1;
    if (c < 4) {
        *out = 1u << c;
        return 0;
    }
    if (hc_get(r, 1, &b))
        return -1;
    c = (c << 1) | b;
    static const unsigned four[] = {3, 5, 10, 12, 15};
    if (c < 13) {
        *out = four[c - 8];
        return 0;
    }
    if (hc_get(r, 1, &b))
        return -1;
    c = (c << 1) | b;
    static const unsigned five[] = {6, 7, 9, 11, 13};
    if (c < 31) {
        *out = five[c - 26];
        return 0;
    }
    if (hc_get(r, 1, &b))
        return -1;
    c = (c << 1) | b;
    *out = c == 62 ? 0 : 14;
    return 0;
}

/* cfitsio's qtree_copy: the 4-bit values of a[(nx+1)/2, (ny+1)/2] expanded to one bit per
 * element of b[nx, ny] (row stride n), in place when a == b; bits off an odd edge dropped. */
static void hc_copy(unsigned char *a, int64_t nx, int64_t ny, unsigned char *b, int64_t n) {
    int64_t nx2 = (nx + 1) / 2, ny2 = (ny + 1) / 2, k = ny2 * (nx2 - 1) + ny2 - 1, i, j;
    for (i = nx2 - 1; i >= 0; i--) {
        int64_t s00 = 2 * (n * i + ny2 - 1);
        for (j = ny2 - 1; j >= 0; j--) {
            b[s00] = a[k];
            k--;
            s00 -= 2;
        }
    }
    for (i = 0; i < nx - 1; i += 2) {
        int64_t s00 = n * i, s10 = s00 + n;
        for (j = 0; j < ny - 1; j += 2) {
            unsigned v = b[s00];
            b[s10 + 1] = v & 1;
            b[s10] = (v >> 1) & 1;
            b[s00 + 1] = (v >> 2) & 1;
            b[s00] = (v >> 3) & 1;
            s00 += 2;
            s10 += 2;
        }
        if (j < ny) {
            b[s10] = (b[s00] >> 1) & 1;
            b[s00] = (b[s00] >> 3) & 1;
        }
    }
    if (i < nx) {
        int64_t s00 = n * i;
        for (j = 0; j < ny - 1; j += 2) {
            b[s00 + 1] = (b[s00] >> 2) & 1;
            b[s00] = (b[s00] >> 3) & 1;
            s00 += 2;
        }
        if (j < ny)
            b[s00] = (b[s00] >> 3) & 1;
    }
}

/* cfitsio's qtree_bitins, keeping only which pixels of the quadrant (row stride n) get a
 * bit: each 4-bit code of a[(nx+1)/2, (ny+1)/2] covers a 2 x 2 block, cut at odd edges. */
static void hc_bitins(const unsigned char *a, int64_t nx, int64_t ny, unsigned char *nz,
                      int64_t n) {
    int64_t k = 0, i, j;
    for (i = 0; i < nx - 1; i += 2) {
        int64_t s00 = n * i, s10 = s00 + n;
        for (j = 0; j < ny - 1; j += 2) {
            unsigned v = a[k++];
            nz[s10 + 1] |= v & 1;
            nz[s10] |= (v >> 1) & 1;
            nz[s00 + 1] |= (v >> 2) & 1;
            nz[s00] |= (v >> 3) & 1;
            s00 += 2;
            s10 += 2;
        }
        if (j < ny) {
            unsigned v = a[k++];
            nz[s10] |= (v >> 1) & 1;
            nz[s00] |= (v >> 3) & 1;
        }
    }
    if (i < nx) {
        int64_t s00 = n * i;
        for (j = 0; j < ny - 1; j += 2) {
            unsigned v = a[k++];
            nz[s00 + 1] |= (v >> 2) & 1;
            nz[s00] |= (v >> 3) & 1;
            s00 += 2;
        }
        if (j < ny)
            nz[s00] |= (a[k++] >> 3) & 1;
    }
}

#define HC_END(r) tide_error(TIDE_E_FORMAT, "HCOMPRESS stream of %zu bytes is cut short", (r))

/* cfitsio's qtree_decode of one quadrant of nqx x nqy pixels at nz (row stride n). */
static int hc_quadrant(hc_bits *r, size_t nin, unsigned char *nz, int64_t n, int64_t nqx,
                       int64_t nqy, int nbitplanes, unsigned char *scratch) {
    if (nbitplanes == 0)
        return 0;
    if (nqx < 1 || nqy < 1) /* cfitsio would write its first code into a 0-byte array */
        return tide_error(TIDE_E_FORMAT,
                          "HCOMPRESS quadrant of %lld x %lld pixels has %d bit planes",
                          (long long)nqx, (long long)nqy, nbitplanes);
    int64_t nqmax = nqx > nqy ? nqx : nqy;
    int log2n = (int)(log((float)nqmax) / log(2.0) + 0.5); /* as cfitsio rounds it */
    if (nqmax > ((int64_t)1 << log2n))
        log2n += 1;
    int64_t nqx2 = (nqx + 1) / 2, nqy2 = (nqy + 1) / 2;
    for (int bit = nbitplanes - 1; bit >= 0; bit--) {
        unsigned b;
        if (hc_get(r, 4, &b))
            return HC_END(nin);
        if (b == 0) { /* the bit plane written directly, 4 pixels a nybble */
            for (int64_t k = 0; k < nqx2 * nqy2; k++) {
                unsigned v;
                if (hc_get(r, 4, &v))
                    return HC_END(nin);
                scratch[k] = (unsigned char)v;
            }
        } else if (b != 0xf) {
            return tide_error(TIDE_E_FORMAT,
                              "HCOMPRESS bit plane %d has format code %u (0 or 15 expected)", bit,
                              b);
        } else { /* quadtree coded: log2n expansions from one code */
            unsigned v;
            if (hc_huffman(r, &v))
                return HC_END(nin);
            scratch[0] = (unsigned char)v;
            int64_t nx = 1, ny = 1, nfx = nqx, nfy = nqy, c = (int64_t)1 << log2n;
            for (int k = 1; k < log2n; k++) {
                c >>= 1;
                nx <<= 1;
                ny <<= 1;
                if (nfx <= c)
                    nx -= 1;
                else
                    nfx -= c;
                if (nfy <= c)
                    ny -= 1;
                else
                    nfy -= c;
                hc_copy(scratch, nx, ny, scratch, ny);
                for (int64_t i = nx * ny - 1; i >= 0; i--)
                    if (scratch[i]) {
                        if (hc_huffman(r, &v))
                            return HC_END(nin);
                        scratch[i] = (unsigned char)v;
                    }
            }
        }
        hc_bitins(scratch, nqx, nqy, nz, n);
    }
    return 0;
}

static int64_t be32s(const uint8_t *b) {
    return (int32_t)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) |
                     (uint32_t)b[3]);
}

int tide_tile_check_hcompress(const uint8_t *in, size_t nin, int64_t n1, int64_t n2, int wide) {
    /* magic (2), nx, ny, scale (4 each), the sum of all pixels (8), bit planes (3) */
    if (nin < 25)
        return tide_error(TIDE_E_FORMAT, "HCOMPRESS stream of %zu bytes is shorter than its header",
                          nin);
    if (in[0] != 0xDD || in[1] != 0x99)
        return tide_error(TIDE_E_FORMAT,
                          "HCOMPRESS stream does not start with 0xDD 0x99 (0x%02X 0x%02X)", in[0],
                          in[1]);
    int64_t nx = be32s(in + 2), ny = be32s(in + 6);
    if (nx != n2 || ny != n1)
        return tide_error(TIDE_E_FORMAT,
                          "HCOMPRESS stream is of %lld x %lld pixels, the tile of %lld x %lld",
                          (long long)ny, (long long)nx, (long long)n1, (long long)n2);
    int planes[3], maxplanes = wide ? 64 : 32;
    for (int q = 0; q < 3; q++) {
        planes[q] = in[22 + q];
        if (planes[q] > maxplanes)
            return tide_error(TIDE_E_FORMAT,
                              "HCOMPRESS quadrant has %d bit planes, more than the %d bits of "
                              "its pixels",
                              planes[q], maxplanes);
    }
    int64_t nel = nx * ny, nx2 = (nx + 1) / 2, ny2 = (ny + 1) / 2;
    unsigned char *nz = calloc((size_t)nel, 1);
    unsigned char *scratch = malloc((size_t)(nx2 * ny2 > 0 ? nx2 * ny2 : 1));
    if (!nz || !scratch) {
        free(nz);
        free(scratch);
        return tide_error(TIDE_E_NOMEM, "HCOMPRESS check: out of memory");
    }
    hc_bits r = {in + 25, in + nin, 0, 0};
    int st = hc_quadrant(&r, nin, nz, ny, nx2, ny2, planes[0], scratch);
    if (!st)
        st = hc_quadrant(&r, nin, nz + ny2, ny, nx2, ny / 2, planes[1], scratch);
    if (!st)
        st = hc_quadrant(&r, nin, nz + ny * nx2, ny, nx / 2, ny2, planes[1], scratch);
    if (!st)
        st = hc_quadrant(&r, nin, nz + ny * nx2 + ny2, ny, nx / 2, ny / 2, planes[2], scratch);
    unsigned v = 0;
    if (!st && hc_get(&r, 4, &v))
        st = HC_END(nin);
    if (!st && v != 0)
        st = tide_error(TIDE_E_FORMAT, "HCOMPRESS stream lacks its end-of-planes code");
    /* The sign bits, one per nonzero pixel, from the next whole byte. */
    r.bits = 0;
    for (int64_t i = 0; !st && i < nel; i++)
        if (nz[i] && hc_get(&r, 1, &v))
            st = HC_END(nin);
    free(nz);
    free(scratch);
    return st;
}
