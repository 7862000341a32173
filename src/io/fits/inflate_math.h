/* inflate_math.h — tide's own DEFLATE decoder (RFC 1951) with the gzip (RFC 1952) and zlib
 * (RFC 1950) wrappers, as `static inline` functions compiled for the host and for CUDA device
 * code: the GPU decoder of GZIP_1 / GZIP_2 tiles (tile_inflate_cuda.cu) runs this very code,
 * and test_inflate drives it on the CPU against libdeflate, the CPU twin.
 *
 * Why a decoder of our own: nvCOMP is not a dependency and libdeflate does not run on the
 * device. cfitsio writes each GZIP tile as one gzip member (zlib's deflateInit2 with
 * windowBits 31: a 10-byte header, raw DEFLATE, CRC-32 and ISIZE), which is what
 * libdeflate_gzip_decompress reads on the CPU side.
 *
 * Bounded: every input byte read is checked against the stream's end, every output byte
 * against the buffer's capacity, every match distance against the bytes already written;
 * over-subscribed or incomplete Huffman codes (other than the empty code and the one-code
 * code RFC 1951 allows), code-length repeats past the end, symbols 286/287 and distances
 * 30/31 are errors. The decoder is never more lenient than libdeflate: a stream it accepts,
 * libdeflate accepts with the same bytes (the GPU relies on this: a tile the device accepts
 * must be the CPU twin's, a tile it refuses is decoded again by the CPU twin, which names the
 * error).
 *
 * Tables: a canonical code per alphabet (counts, first codes, symbols sorted by length) and a
 * direct lookup of TIDE_INFL_LBITS (litlen) / TIDE_INFL_DBITS (distance, precode) bits; codes
 * longer than that are decoded canonically, bit by bit (rare: they are the least frequent
 * symbols). Length and distance bases are computed, not tabled, so no constant table has to
 * live in device memory; the CRC-32 table is the caller's (built by tide_infl_crc_entry).
 *
 * Warp cooperation: tide_inflate_gzip and its helpers take (lane, nlanes) and must be called
 * by all nlanes lanes with the same state (in shared memory on the device). Lane 0 reads the
 * bitstream and decodes symbols; all lanes fill the lookup tables, copy stored blocks and
 * compute the CRC-32 in pieces (joined with GF(2) polynomial products, as zlib's
 * crc32_combine). TIDE_INFL_SYNC orders them (__syncwarp on the device, nothing on the host,
 * where nlanes is 1). Not public. */
#ifndef TIDE_INFLATE_MATH_H
#define TIDE_INFLATE_MATH_H
#include <stddef.h>
#include <stdint.h>

#include "core/gpu/hd.h"

/* A test may define TIDE_INFL_SYNC itself (test_inflate_lanes: a barrier of host threads). */
#ifndef TIDE_INFL_SYNC
#ifdef __CUDA_ARCH__
#define TIDE_INFL_SYNC() __syncwarp()
#else
#define TIDE_INFL_SYNC() ((void)0)
#endif
#endif

/** Direct-lookup bits of the literal/length and of the distance (and precode) tables. */
#define TIDE_INFL_LBITS 10
#define TIDE_INFL_DBITS 8

/** Most lanes that cooperate on one stream (a warp). */
#define TIDE_INFL_MAX_LANES 32

/** Outcomes of tide_inflate_gzip / tide_inflate_zlib. */
enum {
    TIDE_INFL_OK = 0,
    TIDE_INFL_SHORT = 1, /**< the stream ends before its last block does */
    TIDE_INFL_BAD = 2,   /**< a wrong block type, code, length, distance or wrapper field */
    TIDE_INFL_FULL = 3,  /**< it inflates to more than the output's capacity */
    TIDE_INFL_CHECK = 4  /**< CRC-32 / ISIZE (gzip) or Adler-32 (zlib) do not match */
};

/** A canonical Huffman code and its lookup table. */
typedef struct {
    uint16_t count[16]; /**< codes of each length (count[0] unused) */
    uint16_t first[16]; /**< the first code of each length */
    uint16_t offs[16];  /**< index in sorted of the first symbol of each length */
    uint16_t ncodes;    /**< symbols with a code */
    uint16_t *sorted;   /**< the symbols with a code, by length then value */
    uint16_t *fast;     /**< 1 << bits entries, next bits LSB first: sym << 4 | length; 0 when
                         *   the code is longer than bits (or the bits begin no code) */
    int bits;
} tide_infl_huff;

/** The bit reader: bits enter buf from the least significant end (DEFLATE's order). */
typedef struct {
    const uint8_t *p, *end;
    uint64_t buf;
    int n; /**< valid bits in buf */
} tide_infl_reader;

/** One stream's decoding state (shared by the lanes that decode it). */
typedef struct {
    tide_infl_reader r;
    uint8_t *out;
    size_t n, cap; /**< bytes written, capacity */
    int status, final, type, static_ready;
    int nlit, ndist;   /**< the block's literal/length and distance code lengths in lens */
    size_t stored_len; /**< a stored block's bytes, copied by all lanes */
    const uint8_t *stored_src;
    tide_infl_huff lit, dist;
    uint32_t crc_part[TIDE_INFL_MAX_LANES];
    uint16_t lit_fast[1 << TIDE_INFL_LBITS], dist_fast[1 << TIDE_INFL_DBITS];
    uint16_t lit_sorted[288], dist_sorted[32];
    uint8_t lens[288 + 32];
} tide_inflate_state;

TIDE_HD static inline void tide_infl_refill(tide_infl_reader *r) {
    while (r->n <= 56 && r->p < r->end) {
        r->buf |= (uint64_t)*r->p++ << r->n;
        r->n += 8;
    }
}

/** Take @p k (0..32) bits into *v; -1 when the stream has fewer left. */
TIDE_HD static inline int tide_infl_take(tide_infl_reader *r, int k, uint32_t *v) {
    if (r->n < k) {
        tide_infl_refill(r);
        if (r->n < k)
            return -1;
    }
    *v = (uint32_t)(r->buf & ((1ull << k) - 1));
    r->buf >>= k;
    r->n -= k;
    return 0;
}

TIDE_HD static inline unsigned tide_infl_reverse(unsigned code, int len) {
#ifdef __CUDA_ARCH__
    return __brev(code) >> (32 - len);
#else
    unsigned r = 0;
    for (int i = 0; i < len; i++, code >>= 1)
        r = (r << 1) | (code & 1u);
    return r;
#endif
}

/** Lane 0: the canonical code of the @p n lengths @p lens. -1 for an over-subscribed code, or
 *  an incomplete one other than the empty code and a single code of length 1. */
TIDE_HD static inline int tide_infl_huff_prepare(tide_infl_huff *h, const uint8_t *lens, int n) {
    for (int l = 0; l < 16; l++)
        h->count[l] = 0;
    for (int i = 0; i < n; i++)
        h->count[lens[i]]++;
    int left = 1, total = 0;
    for (int l = 1; l < 16; l++) {
        left = (left << 1) - h->count[l];
        total += h->count[l];
        if (left < 0)
            return -1;
    }
    if (left > 0 && !(total == 0 || (total == 1 && h->count[1] == 1)))
        return -1;
    unsigned code = 0, idx = 0;
    uint16_t next[16];
    for (int l = 1; l < 16; l++) {
        h->first[l] = (uint16_t)code;
        h->offs[l] = (uint16_t)idx;
        next[l] = (uint16_t)idx;
        idx += h->count[l];
        code = (code + h->count[l]) << 1;
    }
    for (int i = 0; i < n; i++)
        if (lens[i])
            h->sorted[next[lens[i]]++] = (uint16_t)i;
    h->ncodes = (uint16_t)total;
    return 0;
}

/** All lanes, before tide_infl_huff_fill (and a TIDE_INFL_SYNC): the lookup table zeroed. */
TIDE_HD static inline void tide_infl_huff_clear(tide_infl_huff *h, int lane, int nlanes) {
    for (unsigned i = (unsigned)lane; i < 1u << h->bits; i += (unsigned)nlanes)
        h->fast[i] = 0;
}

/** All lanes: the lookup table of a prepared code (@p lens as given to prepare), each lane
 *  the entries of every nlanes-th symbol. */
TIDE_HD static inline void tide_infl_huff_fill(tide_infl_huff *h, const uint8_t *lens, int lane,
                                               int nlanes) {
    const unsigned size = 1u << h->bits;
    for (unsigned j = (unsigned)lane; j < h->ncodes; j += (unsigned)nlanes) {
        const unsigned sym = h->sorted[j];
        const int len = lens[sym];
        if (len > h->bits)
            continue;
        const unsigned code = h->first[len] + (j - h->offs[len]);
        const uint16_t e = (uint16_t)(sym << 4 | (unsigned)len);
        for (unsigned i = tide_infl_reverse(code, len); i < size; i += 1u << len)
            h->fast[i] = e; /* codes are prefix-free: lanes write disjoint entries */
    }
}

/** All lanes: tide_infl_huff_clear then tide_infl_huff_fill, each followed by a sync. */
TIDE_HD static inline void tide_infl_huff_build(tide_infl_huff *h, const uint8_t *lens, int lane,
                                                int nlanes) {
    tide_infl_huff_clear(h, lane, nlanes);
    TIDE_INFL_SYNC();
    tide_infl_huff_fill(h, lens, lane, nlanes);
    TIDE_INFL_SYNC();
}

/** The next symbol of code @p h, or -1 (a code the stream does not have, or past its end). */
TIDE_HD static inline int tide_infl_decode(tide_infl_reader *r, const tide_infl_huff *h) {
    if (r->n < 15)
        tide_infl_refill(r);
    const unsigned e = h->fast[r->buf & ((1u << h->bits) - 1)];
    if (e) {
        const int len = (int)(e & 15);
        if (len > r->n)
            return -1;
        r->buf >>= len;
        r->n -= len;
        return (int)(e >> 4);
    }
    unsigned code = 0;
    uint64_t b = r->buf;
    for (int len = 1; len < 16 && len <= r->n; len++, b >>= 1) {
        code |= (unsigned)(b & 1);
        const unsigned d = code - h->first[len]; /* wraps when code < first: no match */
        if (d < h->count[len]) {
            r->buf >>= len;
            r->n -= len;
            return h->sorted[h->offs[len] + d];
        }
        code <<= 1;
    }
    return -1;
}

/** Length symbol 257 + @p c (c < 29): its base and extra bits (RFC 1951 3.2.5, computed). */
TIDE_HD static inline unsigned tide_infl_len_base(int c, int *extra) {
    if (c < 8) {
        *extra = 0;
        return 3u + (unsigned)c;
    }
    if (c == 28) {
        *extra = 0;
        return 258;
    }
    *extra = (c - 4) >> 2;
    return ((4u + (unsigned)(c & 3)) << *extra) + 3u;
}

/** Distance symbol @p c (c < 30): its base and extra bits. */
TIDE_HD static inline unsigned tide_infl_dist_base(int c, int *extra) {
    if (c < 4) {
        *extra = 0;
        return 1u + (unsigned)c;
    }
    *extra = (c - 2) >> 1;
    return ((2u + (unsigned)(c & 1)) << *extra) + 1u;
}

/** Lane 0: the compressed data of a Huffman block, up to its end-of-block symbol. */
TIDE_HD static inline int tide_infl_codes(tide_inflate_state *s) {
    tide_infl_reader r = s->r; /* in registers for the loop */
    uint8_t *out = s->out;
    size_t n = s->n;
    const size_t cap = s->cap;
    int st = TIDE_INFL_OK;
    for (;;) {
        if (r.n < 48)
            tide_infl_refill(&r);
        const int sym = tide_infl_decode(&r, &s->lit);
        if (sym < 0) {
            st = r.p == r.end ? TIDE_INFL_SHORT : TIDE_INFL_BAD;
            break;
        }
        if (sym < 256) {
            if (n >= cap) {
                st = TIDE_INFL_FULL;
                break;
            }
            out[n++] = (uint8_t)sym;
            continue;
        }
        if (sym == 256)
            break;
        if (sym > 285) {
            st = TIDE_INFL_BAD;
            break;
        }
        int eb;
        uint32_t x;
        size_t len = tide_infl_len_base(sym - 257, &eb);
        if (tide_infl_take(&r, eb, &x)) {
            st = TIDE_INFL_SHORT;
            break;
        }
        len += x;
        const int ds = tide_infl_decode(&r, &s->dist);
        if (ds < 0 || ds > 29) {
            st = ds < 0 && r.p == r.end ? TIDE_INFL_SHORT : TIDE_INFL_BAD;
            break;
        }
        size_t dist = tide_infl_dist_base(ds, &eb);
        if (tide_infl_take(&r, eb, &x)) {
            st = TIDE_INFL_SHORT;
            break;
        }
        dist += x;
        if (dist > n) {
            st = TIDE_INFL_BAD;
            break;
        }
        if (len > cap - n) {
            st = TIDE_INFL_FULL;
            break;
        }
        const uint8_t *src = out + n - dist;
        for (size_t i = 0; i < len; i++)
            out[n + i] = src[i]; /* byte by byte: an overlapping match repeats itself */
        n += len;
    }
    s->r = r;
    s->n = n;
    return st;
}

/** Lane 0: a dynamic block's header: the precode, then the literal/length and distance code
 *  lengths into s->lens (the precode's table is built in s->dist's arrays first). */
TIDE_HD static inline int tide_infl_dynamic_lengths(tide_inflate_state *s, int phase) {
    tide_infl_reader *r = &s->r;
    if (phase == 0) {
        uint32_t hlit, hdist, hclen;
        if (tide_infl_take(r, 5, &hlit) || tide_infl_take(r, 5, &hdist) ||
            tide_infl_take(r, 4, &hclen))
            return TIDE_INFL_SHORT;
        s->nlit = (int)hlit + 257;
        s->ndist = (int)hdist + 1;
        if (hlit + 257 > 286 || hdist + 1 > 30)
            return TIDE_INFL_BAD;
        const uint8_t order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                   11, 4,  12, 3, 13, 2, 14, 1, 15};
        for (int i = 0; i < 19; i++) {
            uint32_t v = 0;
            if ((uint32_t)i < hclen + 4 && tide_infl_take(r, 3, &v))
                return TIDE_INFL_SHORT;
            s->lens[order[i]] = (uint8_t)v;
        }
        s->dist.bits = TIDE_INFL_DBITS; /* precode lengths are at most 7 */
        return tide_infl_huff_prepare(&s->dist, s->lens, 19) ? TIDE_INFL_BAD : TIDE_INFL_OK;
    }
    /* phase 1: the precode's table is filled, its lengths are no longer read: s->lens takes
     * the code lengths */
    const int nlit = s->nlit, total = nlit + s->ndist;
    uint8_t *lens = s->lens;
    for (int i = 0; i < total;) {
        const int sym = tide_infl_decode(r, &s->dist);
        if (sym < 0)
            return r->p == r->end ? TIDE_INFL_SHORT : TIDE_INFL_BAD;
        if (sym < 16) {
            lens[i++] = (uint8_t)sym;
            continue;
        }
        uint32_t rep;
        uint8_t val = 0;
        int k = sym == 16 ? 2 : sym == 17 ? 3 : 7;
        if (tide_infl_take(r, k, &rep))
            return TIDE_INFL_SHORT;
        rep += sym == 18 ? 11 : 3;
        if (sym == 16) {
            if (i == 0)
                return TIDE_INFL_BAD;
            val = lens[i - 1];
        }
        if ((int)rep > total - i)
            return TIDE_INFL_BAD;
        for (uint32_t j = 0; j < rep; j++)
            lens[i++] = val;
    }
    if (lens[256] == 0) /* no end-of-block code: the block could not end */
        return TIDE_INFL_BAD;
    s->lit.bits = TIDE_INFL_LBITS;
    s->dist.bits = TIDE_INFL_DBITS;
    if (tide_infl_huff_prepare(&s->lit, s->lens, nlit) ||
        tide_infl_huff_prepare(&s->dist, s->lens + nlit, total - nlit))
        return TIDE_INFL_BAD;
    s->static_ready = 0;
    return TIDE_INFL_OK;
}

/** Lane 0: the fixed codes of RFC 1951 3.2.6 (all 288 / 32 symbols, so that both codes are
 *  complete; 286, 287, 30 and 31 are refused when decoded). */
TIDE_HD static inline int tide_infl_static_codes(tide_inflate_state *s) {
    for (int i = 0; i < 288; i++)
        s->lens[i] = (uint8_t)(i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8);
    for (int i = 0; i < 32; i++)
        s->lens[288 + i] = 5;
    s->nlit = 288;
    s->ndist = 32;
    s->lit.bits = TIDE_INFL_LBITS;
    s->dist.bits = TIDE_INFL_DBITS;
    tide_infl_huff_prepare(&s->lit, s->lens, 288);
    tide_infl_huff_prepare(&s->dist, s->lens + 288, 32);
    return TIDE_INFL_OK;
}

/** Lane 0: a block's first bits; a stored block's length checked and its source noted. */
TIDE_HD static inline int tide_infl_block_header(tide_inflate_state *s) {
    tide_infl_reader *r = &s->r;
    uint32_t fin, type;
    if (tide_infl_take(r, 1, &fin) || tide_infl_take(r, 2, &type))
        return TIDE_INFL_SHORT;
    s->final = (int)fin;
    s->type = (int)type;
    if (type == 3)
        return TIDE_INFL_BAD;
    if (type != 0)
        return TIDE_INFL_OK;
    uint32_t drop, len, nlen;
    tide_infl_take(r, r->n & 7, &drop); /* to the byte boundary */
    if (tide_infl_take(r, 16, &len) || tide_infl_take(r, 16, &nlen))
        return TIDE_INFL_SHORT;
    r->p -= r->n >> 3; /* give back the whole bytes read ahead: the copy reads the input */
    r->buf = 0;
    r->n = 0;
    if (len != (~nlen & 0xffffu))
        return TIDE_INFL_BAD;
    if (len > s->cap - s->n)
        return TIDE_INFL_FULL;
    if (len > (size_t)(r->end - r->p))
        return TIDE_INFL_SHORT;
    s->stored_src = r->p;
    s->stored_len = len;
    return TIDE_INFL_OK;
}

/** Lane 0: a stream of @p nin bytes at @p in to inflate into @p cap bytes at @p out. */
TIDE_HD static inline void tide_infl_setup(tide_inflate_state *s, const uint8_t *in, size_t nin,
                                           uint8_t *out, size_t cap) {
    s->r.p = in;
    s->r.end = in + nin;
    s->r.buf = 0;
    s->r.n = 0;
    s->out = out;
    s->n = 0;
    s->cap = cap;
    s->status = TIDE_INFL_OK;
    s->static_ready = 0;
    s->lit.sorted = s->lit_sorted;
    s->lit.fast = s->lit_fast;
    s->dist.sorted = s->dist_sorted;
    s->dist.fast = s->dist_fast;
}

/** All lanes: inflate the raw DEFLATE stream lane 0 set up (tide_infl_setup). Returns
 *  TIDE_INFL_*; s->n is the bytes written and s->r.p the byte after the last one the stream
 *  used. */
TIDE_HD static inline int tide_inflate_raw(tide_inflate_state *s, int lane, int nlanes) {
    for (;;) {
        TIDE_INFL_SYNC();
        if (lane == 0)
            s->status = tide_infl_block_header(s);
        TIDE_INFL_SYNC();
        if (s->status)
            break;
        if (s->type == 0) {
            const uint8_t *src = s->stored_src;
            uint8_t *dst = s->out + s->n;
            for (size_t i = (size_t)lane; i < s->stored_len; i += (size_t)nlanes)
                dst[i] = src[i];
            TIDE_INFL_SYNC();
            if (lane == 0) {
                s->n += s->stored_len;
                s->r.p += s->stored_len;
            }
        } else {
            int fill = 1;
            if (s->type == 2) {
                if (lane == 0)
                    s->status = tide_infl_dynamic_lengths(s, 0);
                TIDE_INFL_SYNC();
                if (s->status)
                    break;
                tide_infl_huff_build(&s->dist, s->lens, lane, nlanes);
                if (lane == 0)
                    s->status = tide_infl_dynamic_lengths(s, 1);
                TIDE_INFL_SYNC();
                if (s->status)
                    break;
            } else if (s->static_ready) {
                fill = 0; /* the previous block's fixed tables are still there */
            } else if (lane == 0) {
                tide_infl_static_codes(s);
            }
            if (fill) {
                TIDE_INFL_SYNC();
                tide_infl_huff_build(&s->lit, s->lens, lane, nlanes);
                tide_infl_huff_build(&s->dist, s->lens + s->nlit, lane, nlanes);
            }
            if (lane == 0) {
                s->static_ready = s->type == 1;
                s->status = tide_infl_codes(s);
            }
        }
        TIDE_INFL_SYNC();
        if (s->status || s->final)
            break;
    }
    TIDE_INFL_SYNC();
    if (lane == 0 && !s->status) { /* the partial last byte is used; whole bytes read ahead */
        s->r.p -= s->r.n >> 3;
        s->r.n = 0;
        s->r.buf = 0;
    }
    TIDE_INFL_SYNC();
    return s->status;
}

/** Entry @p i (0..255) of the CRC-32 table (ISO 3309, reflected polynomial 0xEDB88320). */
TIDE_HD static inline uint32_t tide_infl_crc_entry(uint32_t i) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
        c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    return c;
}

/** The CRC register @p c after the @p n bytes at @p p (no pre- or post-inversion). */
TIDE_HD static inline uint32_t tide_infl_crc_update(const uint32_t *t, uint32_t c, const uint8_t *p,
                                                    size_t n) {
    for (size_t i = 0; i < n; i++)
        c = t[(c ^ p[i]) & 0xffu] ^ (c >> 8);
    return c;
}

/** @p a times @p b modulo the CRC polynomial, both reflected (bit 31 is x^0). */
TIDE_HD static inline uint32_t tide_infl_crc_mul(uint32_t a, uint32_t b) {
    uint32_t p = 0;
    for (uint32_t m = 1u << 31; m; m >>= 1) {
        if (a & m)
            p ^= b;
        b = b & 1 ? (b >> 1) ^ 0xEDB88320u : b >> 1;
    }
    return p;
}

/** x^(8 n) modulo the polynomial: what appending @p n bytes does to a register. */
TIDE_HD static inline uint32_t tide_infl_crc_shift(size_t n) {
    uint32_t r = 1u << 31, x = 1u << 23; /* 1 and x^8 */
    for (; n; n >>= 1) {
        if (n & 1)
            r = tide_infl_crc_mul(r, x);
        x = tide_infl_crc_mul(x, x);
    }
    return r;
}

/** Lane @p lane's piece of the CRC-32 of @p n bytes: the register over its share (the first
 *  share from the initial all-ones register, the others from zero). */
TIDE_HD static inline uint32_t tide_infl_crc_piece(const uint32_t *t, const uint8_t *p, size_t n,
                                                   int lane, int nlanes) {
    const size_t per = (n + (size_t)nlanes - 1) / (size_t)nlanes;
    size_t lo = per * (size_t)lane, hi = lo + per;
    lo = lo > n ? n : lo;
    hi = hi > n ? n : hi;
    return tide_infl_crc_update(t, lane == 0 ? 0xffffffffu : 0u, p + lo, hi - lo);
}

/** The CRC-32 of @p n bytes from the @p nlanes pieces: each register so far is carried over
 *  the next share (times x^(8 len)) and that share's piece added (zlib's crc32_combine). */
TIDE_HD static inline uint32_t tide_infl_crc_join(const uint32_t *piece, size_t n, int nlanes) {
    const size_t per = (n + (size_t)nlanes - 1) / (size_t)nlanes;
    const uint32_t whole = tide_infl_crc_shift(per);
    uint32_t c = piece[0];
    for (int i = 1; i < nlanes && per * (size_t)i < n; i++) {
        const size_t lo = per * (size_t)i, len = n - lo < per ? n - lo : per;
        c = tide_infl_crc_mul(len == per ? whole : tide_infl_crc_shift(len), c) ^ piece[i];
    }
    return ~c;
}

/** The Adler-32 of @p n bytes (RFC 1950 8.2). */
TIDE_HD static inline uint32_t tide_infl_adler32(const uint8_t *p, size_t n) {
    uint32_t a = 1, b = 0;
    while (n) {
        size_t k = n < 5552 ? n : 5552; /* no overflow of b before the modulo */
        n -= k;
        while (k--) {
            a += *p++;
            b += a;
        }
        a %= 65521u;
        b %= 65521u;
    }
    return b << 16 | a;
}

TIDE_HD static inline uint32_t tide_infl_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/** The length of the gzip member header at @p in (@p nin bytes), or 0 when it is wrong: the
 *  checks of libdeflate_gzip_decompress (magic, method 8, no reserved flag, optional fields
 *  inside the stream with room for the 8-byte trailer after them). */
TIDE_HD static inline size_t tide_infl_gzip_header(const uint8_t *in, size_t nin) {
    if (nin < 18 || in[0] != 0x1f || in[1] != 0x8b || in[2] != 8 || (in[3] & 0xe0))
        return 0;
    const unsigned flg = in[3];
    size_t p = 10;
    if (flg & 4) { /* FEXTRA */
        const size_t xlen = (size_t)in[p] | (size_t)in[p + 1] << 8;
        p += 2;
        if (nin - p < xlen + 8)
            return 0;
        p += xlen;
    }
    for (unsigned f = 8; f <= 16; f <<= 1) /* FNAME, then FCOMMENT: zero-terminated */
        if (flg & f) {
            while (p < nin && in[p] != 0)
                p++;
            if (p == nin)
                return 0;
            p++;
        }
    if (flg & 2) /* FHCRC (not checked, as libdeflate) */
        p += 2;
    return p <= nin && nin - p >= 8 ? p : 0;
}

/** All lanes: inflate the gzip member of @p nin bytes at @p in into at most @p cap bytes at
 *  @p out, checking its CRC-32 (@p crc_table: 256 tide_infl_crc_entry values) and ISIZE;
 *  bytes after the member are ignored, as libdeflate ignores them. *got gets the bytes
 *  written. Returns TIDE_INFL_* (the same on every lane). */
TIDE_HD static inline int tide_inflate_gzip(tide_inflate_state *s, const uint32_t *crc_table,
                                            const uint8_t *in, size_t nin, uint8_t *out, size_t cap,
                                            size_t *got, int lane, int nlanes) {
    if (lane == 0) {
        const size_t h = tide_infl_gzip_header(in, nin);
        tide_infl_setup(s, in + h, h ? nin - h - 8 : 0, out, cap);
        s->status = h ? TIDE_INFL_OK : TIDE_INFL_BAD;
    }
    TIDE_INFL_SYNC();
    int st = s->status;
    if (!st)
        st = tide_inflate_raw(s, lane, nlanes);
    if (!st) {
        s->crc_part[lane] = tide_infl_crc_piece(crc_table, s->out, s->n, lane, nlanes);
        TIDE_INFL_SYNC();
        if (lane == 0) {
            const uint8_t *f = s->r.p; /* the trailer follows the last block */
            if (tide_infl_crc_join(s->crc_part, s->n, nlanes) != tide_infl_le32(f) ||
                (uint32_t)s->n != tide_infl_le32(f + 4))
                s->status = TIDE_INFL_CHECK;
        }
        TIDE_INFL_SYNC();
        st = s->status;
    }
    *got = s->n;
    return st;
}

/** Lane 0 alone (nlanes 1 on the host): the zlib stream of @p nin bytes at @p in, with the
 *  checks of libdeflate_zlib_decompress (method 8, window <= 32 KiB, header check, no preset
 *  dictionary, Adler-32 trailer). Returns TIDE_INFL_*; *got the bytes written. */
TIDE_HD static inline int tide_inflate_zlib(tide_inflate_state *s, const uint8_t *in, size_t nin,
                                            uint8_t *out, size_t cap, size_t *got) {
    *got = 0;
    if (nin < 6 || (in[0] & 0x0f) != 8 || (in[0] >> 4) > 7 ||
        ((unsigned)in[0] << 8 | in[1]) % 31 != 0 || (in[1] & 0x20))
        return TIDE_INFL_BAD;
    tide_infl_setup(s, in + 2, nin - 6, out, cap);
    int st = tide_inflate_raw(s, 0, 1);
    *got = s->n;
    if (st)
        return st;
    const uint8_t *f = s->r.p;
    const uint32_t want = (uint32_t)f[0] << 24 | (uint32_t)f[1] << 16 | (uint32_t)f[2] << 8 | f[3];
    return tide_infl_adler32(out, s->n) == want ? TIDE_INFL_OK : TIDE_INFL_CHECK;
}

#endif
