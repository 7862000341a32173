/* test_inflate.c — tide's own inflate (io/fits/inflate_math.h, the code the GPU's GZIP tile
 * decoder runs) against libdeflate, its CPU twin, bit for bit:
 *  - streams of libdeflate (levels 0-12) and zlib (levels 0-9, every strategy, small and large
 *    memLevel, gzip headers with name, comment, extra field and header CRC, full / sync /
 *    partial flushes that leave empty stored and fixed blocks) over random bytes, runs,
 *    periodic data, text, skewed bytes (codes longer than the lookup table), 16-bit image
 *    rows, from 0 to 300000 bytes; gzip, zlib and raw DEFLATE;
 *  - streams written here bit by bit: a match at distance 32768, lengths 258, empty blocks of
 *    each type, a dynamic block with a one-code distance code;
 *  - corrupt streams: every truncation, wrong block type, LEN/NLEN, over-subscribed, incomplete
 *    and end-of-block-less codes, code-length repeats before the first length or past the
 *    end, HLIT 287, length symbol 286, distance symbol 30, a distance before the start, the
 *    unused half of a one-code code, output one byte short, CRC / ISIZE / Adler-32 wrong, and
 *    thousands of random mutations: each an error, never a read or a write out of bounds (the
 *    buffers are allocated to their exact sizes: the sanitizer build sees any overrun); and
 *    whatever tide accepts, libdeflate accepts with the same bytes (what the GPU decoder needs
 *    to hand the CPU twin only the tiles it refuses);
 *  - every GZIP tile (COMPRESSED_DATA and GZIP_COMPRESSED_DATA) of ../shared/data/compressed
 *    and of files fpack -g1 / -g2 writes here;
 *  - the warp's pieces run lane by lane: 32 lanes' lookup tables and CRC-32 pieces joined
 *    equal one lane's;
 *  - the speed of tide's inflate beside libdeflate's on one thread (printed, informational). */
#define _GNU_SOURCE
#include <fitsio.h>
#include <libdeflate.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "io/fits/fits_tile_read.h"
#include "io/fits/inflate_math.h"
#include "io/fits/tile_decode.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t g_crc[256];
static tide_inflate_state *g_st;
static struct libdeflate_decompressor *g_ld;
static int g_streams, g_mutants, g_lenient; /* checked streams; mutants; libdeflate-only */

enum { WRAP_GZIP, WRAP_ZLIB, WRAP_RAW };

/* tide's inflate of @p ns bytes (copied to a buffer of exactly that size) into a buffer of
 * exactly @p cap bytes; *out (malloc'd) and *got; *used the stream's bytes (raw only). */
static int tide_run(int wrap, const uint8_t *s, size_t ns, size_t cap, uint8_t **out, size_t *got,
                    size_t *used) {
    uint8_t *in = malloc(ns ? ns : 1);
    memcpy(in, s, ns);
    *out = malloc(cap ? cap : 1);
    int st;
    if (wrap == WRAP_GZIP) {
        st = tide_inflate_gzip(g_st, g_crc, in, ns, *out, cap, got, 0, 1);
    } else if (wrap == WRAP_ZLIB) {
        st = tide_inflate_zlib(g_st, in, ns, *out, cap, got);
    } else {
        tide_infl_setup(g_st, in, ns, *out, cap);
        st = tide_inflate_raw(g_st, 0, 1);
        *got = g_st->n;
        *used = (size_t)(g_st->r.p - in);
    }
    free(in);
    return st;
}

static enum libdeflate_result ld_run(int wrap, const uint8_t *s, size_t ns, uint8_t *out,
                                     size_t cap, size_t *got, size_t *used) {
    if (wrap == WRAP_GZIP)
        return libdeflate_gzip_decompress(g_ld, s, ns, out, cap, got);
    if (wrap == WRAP_ZLIB)
        return libdeflate_zlib_decompress(g_ld, s, ns, out, cap, got);
    return libdeflate_deflate_decompress_ex(g_ld, s, ns, out, cap, used, got);
}

/* Both decoders on one stream with room for @p cap bytes. @p must: 1 the stream is valid
 * (both must decode it, the same bytes), -1 it is wrong (tide must refuse it), 0 unknown
 * (a mutant). Always: tide accepts => libdeflate accepts, the same bytes and stream length.
 * Returns tide's status. */
static int check_stream(const char *what, int wrap, const uint8_t *s, size_t ns, size_t cap,
                        int must) {
    uint8_t *mine = NULL, *ref = malloc(cap ? cap : 1);
    size_t got = 0, ref_got = 0, used = 0, ref_used = 0;
    int st = tide_run(wrap, s, ns, cap, &mine, &got, &used);
    enum libdeflate_result lr = ld_run(wrap, s, ns, ref, cap, &ref_got, &ref_used);
    g_streams++;
    if (!st) {
        int same = lr == LIBDEFLATE_SUCCESS && got == ref_got && !memcmp(mine, ref, got) &&
                   (wrap != WRAP_RAW || used == ref_used);
        if (!same)
            fprintf(stderr, "%s: tide inflates %zu bytes (status 0), libdeflate %d with %zu\n",
                    what, got, (int)lr, ref_got);
        CHECK(same);
    } else if (lr == LIBDEFLATE_SUCCESS) {
        g_lenient++;
    }
    if (must > 0) {
        if (st || lr != LIBDEFLATE_SUCCESS)
            fprintf(stderr, "%s: valid stream of %zu bytes: tide %d, libdeflate %d\n", what, ns, st,
                    (int)lr);
        CHECK(st == 0 && lr == LIBDEFLATE_SUCCESS);
    }
    if (must < 0) {
        if (!st)
            fprintf(stderr, "%s: a wrong stream was accepted\n", what);
        CHECK(st != 0);
    }
    free(mine);
    free(ref);
    return st;
}

/* ---- data to compress ---------------------------------------------------------------------- */

static void make_data(int kind, uint8_t *d, size_t n) {
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case 0: d[i] = (uint8_t)rnd(); break;                            /* incompressible */
        case 1: d[i] = 0; break;                                         /* one long run */
        case 2: d[i] = (uint8_t)("tide inflates tiles "[i % 20]); break; /* periodic */
        case 3: d[i] = (uint8_t)(rnd() % 7 == 0 ? rnd() : ' ' + rnd() % 30); break; /* text */
        case 4: { /* skewed: geometric byte values give codes of up to 15 bits */
            unsigned v = 0;
            while (v < 255 && (rnd() & 3))
                v++;
            d[i] = (uint8_t)v;
            break;
        }
        default: { /* rows of 16-bit pixels, big-endian, a smooth sky with noise */
            size_t p = i / 2;
            int v = 1000 + (int)(300 * sin((double)(p % 512) / 30.0)) + (int)(rnd() % 40);
            d[i] = (uint8_t)(i & 1 ? v & 0xff : v >> 8);
        }
        }
    }
}

/* zlib's deflate of @p d with the given parameters; @p flushes > 0 adds that many
 * flush points of kind @p fl. Returns the stream's size (malloc'd in *out). */
static size_t zlib_deflate(const uint8_t *d, size_t n, int level, int wbits, int memlevel,
                           int strategy, int fl, int flushes, int header, uint8_t **out) {
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, level, Z_DEFLATED, wbits, memlevel, strategy);
    gz_header h;
    memset(&h, 0, sizeof h);
    static unsigned char extra[] = "xfield", name[] = "tile.fits", comment[] = "a tile";
    if (header && wbits > 15) {
        h.extra = extra;
        h.extra_len = sizeof extra;
        h.name = name;
        h.comment = comment;
        h.hcrc = 1;
        h.os = 3;
        deflateSetHeader(&z, &h);
    }
    size_t cap = deflateBound(&z, n) + 64 + 16 * (size_t)flushes;
    *out = malloc(cap);
    z.next_out = *out;
    z.avail_out = (uInt)cap;
    size_t pos = 0, step = flushes > 0 ? n / (size_t)(flushes + 1) + 1 : n;
    while (pos < n) {
        size_t k = n - pos < step ? n - pos : step;
        z.next_in = (Bytef *)(d + pos);
        z.avail_in = (uInt)k;
        pos += k;
        deflate(&z, pos < n && flushes > 0 ? fl : Z_NO_FLUSH);
    }
    z.next_in = NULL;
    z.avail_in = 0;
    deflate(&z, Z_FINISH);
    size_t len = z.total_out;
    deflateEnd(&z);
    return len;
}

/* Every encoder's streams of every kind of data, each size. */
static void encoder_streams(void) {
    const size_t sizes[] = {0, 1, 2, 3, 10, 257, 1000, 4096, 32768, 32769, 65536, 100003, 300000};
    struct libdeflate_compressor *lc[13];
    for (int l = 0; l <= 12; l++)
        lc[l] = libdeflate_alloc_compressor(l);
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int kind = 0; kind < 6; kind++) {
            const size_t n = sizes[si];
            uint8_t *d = malloc(n + 1);
            make_data(kind, d, n);
            char what[160];
            size_t bound = libdeflate_gzip_compress_bound(lc[12], n) + 64;
            uint8_t *c = malloc(bound);
            for (int l = 0; l <= 12; l++) {
                if (n > 65536 && l > 9 && l != 12)
                    continue; /* the slow levels once at large sizes */
                size_t len = libdeflate_gzip_compress(lc[l], d, n, c, bound);
                snprintf(what, sizeof what, "libdeflate gzip level %d, data %d, %zu bytes", l, kind,
                         n);
                check_stream(what, WRAP_GZIP, c, len, n, 1);
                len = libdeflate_zlib_compress(lc[l], d, n, c, bound);
                snprintf(what, sizeof what, "libdeflate zlib level %d, data %d, %zu bytes", l, kind,
                         n);
                check_stream(what, WRAP_ZLIB, c, len, n, 1);
                len = libdeflate_deflate_compress(lc[l], d, n, c, bound);
                snprintf(what, sizeof what, "libdeflate raw level %d, data %d, %zu bytes", l, kind,
                         n);
                check_stream(what, WRAP_RAW, c, len, n, 1);
            }
            free(c);
            const int strategies[] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE,
                                      Z_FIXED};
            for (int level = 0; level <= 9; level += (n > 65536 ? 3 : 1))
                for (int s = 0; s < 5; s++) {
                    const int memlevel = (level + s) % 2 ? 1 : 9;
                    const int fl = (level + s) % 3 == 0   ? Z_FULL_FLUSH
                                   : (level + s) % 3 == 1 ? Z_SYNC_FLUSH
                                                          : Z_PARTIAL_FLUSH;
                    const int flushes = s == 4 ? 0 : (level % 4);
                    uint8_t *z = NULL;
                    size_t len = zlib_deflate(d, n, level, 31, memlevel, strategies[s], fl, flushes,
                                              s == 1, &z);
                    snprintf(what, sizeof what,
                             "zlib gzip level %d strategy %d memlevel %d flushes %d, data %d, %zu "
                             "bytes",
                             level, s, memlevel, flushes, kind, n);
                    check_stream(what, WRAP_GZIP, z, len, n, 1);
                    free(z);
                    len =
                        zlib_deflate(d, n, level, 15, memlevel, strategies[s], fl, flushes, 0, &z);
                    check_stream(what, WRAP_ZLIB, z, len, n, 1);
                    free(z);
                }
            free(d);
        }
    for (int l = 0; l <= 12; l++)
        libdeflate_free_compressor(lc[l]);
}

/* ---- streams written bit by bit -------------------------------------------------------- */

typedef struct {
    uint8_t *b;
    size_t n, cap;
    uint64_t acc;
    int k;
} bitw;

static void put(bitw *w, uint32_t v, int nbits) { /* LSB first, as DEFLATE packs fields */
    for (int i = 0; i < nbits; i++) {
        w->acc |= (uint64_t)((v >> i) & 1) << w->k;
        if (++w->k == 8) {
            if (w->n == w->cap) {
                w->cap = w->cap ? 2 * w->cap : 256;
                w->b = realloc(w->b, w->cap);
            }
            w->b[w->n++] = (uint8_t)w->acc;
            w->acc = 0;
            w->k = 0;
        }
    }
}
static void put_code(bitw *w, uint32_t code, int len) { /* Huffman codes: MSB first */
    for (int i = len - 1; i >= 0; i--)
        put(w, (code >> i) & 1, 1);
}
static void align(bitw *w) {
    if (w->k)
        put(w, 0, 8 - w->k);
}
static void fixed_lit(bitw *w, unsigned sym) { /* RFC 1951 3.2.6 */
    if (sym < 144)
        put_code(w, 0x30 + sym, 8);
    else if (sym < 256)
        put_code(w, 0x190 + sym - 144, 9);
    else if (sym < 280)
        put_code(w, sym - 256, 7);
    else
        put_code(w, 0xc0 + sym - 280, 8);
}
static void stored(bitw *w, int final, const uint8_t *d, unsigned len, unsigned nlen) {
    put(w, (unsigned) final, 1);
    put(w, 0, 2);
    align(w);
    put(w, len, 16);
    put(w, nlen, 16);
    for (unsigned i = 0; d && i < len; i++)
        put(w, d[i], 8);
}

/* The gzip member around raw DEFLATE @p w of the @p n bytes @p d. */
static size_t gzip_wrap(const bitw *w, const uint8_t *d, size_t n, uint8_t **out) {
    const uint8_t hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    size_t len = 10 + w->n + (w->k ? 1 : 0) + 8;
    uint8_t *o = malloc(len);
    memcpy(o, hdr, 10);
    if (w->n)
        memcpy(o + 10, w->b, w->n);
    if (w->k)
        o[10 + w->n] = (uint8_t)w->acc;
    uint32_t crc = libdeflate_crc32(0, d, n), isz = (uint32_t)n;
    for (int i = 0; i < 4; i++) {
        o[len - 8 + i] = (uint8_t)(crc >> (8 * i));
        o[len - 4 + i] = (uint8_t)(isz >> (8 * i));
    }
    *out = o;
    return len;
}

/* A dynamic block header: precode 0..14 of 4 bits, 16 and 17 of 5 (a complete code), or
 * @p bad_precode: all of 0..15 of 3 bits (over-subscribed); then the @p nlit + @p ndist code
 * lengths @p lens written as they are (values < 15) except where @p rep16_at / @p rep17_at
 * ask for a repeat code there. */
static void dynamic_header(bitw *w, int final, int nlit, int ndist, const uint8_t *lens,
                           int bad_precode, int rep16_at, int rep17_at) {
    put(w, (unsigned) final, 1);
    put(w, 2, 2);
    put(w, (unsigned)(nlit - 257), 5);
    put(w, (unsigned)(ndist - 1), 5);
    put(w, 19 - 4, 4);
    static const uint8_t order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                      11, 4,  12, 3, 13, 2, 14, 1, 15};
    for (int i = 0; i < 19; i++) {
        int s = order[i];
        unsigned l = bad_precode ? (s < 16 ? 3 : 0) : s < 15 ? 4 : s == 16 || s == 17 ? 5 : 0;
        put(w, l, 3);
    }
    for (int i = 0; i < nlit + ndist; i++) {
        if (i == rep16_at) {
            put_code(w, 30, 5);
            put(w, 0, 2); /* repeat 3 times */
            continue;
        }
        if (i == rep17_at) {
            put_code(w, 31, 5);
            put(w, 7, 3); /* 10 zeros */
            continue;
        }
        put_code(w, lens[i], 4);
    }
}

static void crafted_streams(void) {
    char what[128];
    /* a match of 258 at distance 32768 and one of 3, after a stored block of 32768 bytes */
    {
        const size_t n0 = 32768, n = n0 + 258 + 3;
        uint8_t *d = malloc(n);
        make_data(0, d, n0);
        memcpy(d + n0, d, 258 + 3);
        bitw w = {0};
        stored(&w, 0, d, (unsigned)n0, (unsigned)~n0 & 0xffff);
        put(&w, 1, 1);
        put(&w, 1, 2);
        fixed_lit(&w, 285); /* length 258 */
        put_code(&w, 29, 5);
        put(&w, 32768 - 24577, 13);
        fixed_lit(&w, 257); /* length 3 */
        put_code(&w, 29, 5);
        put(&w, 32768 - 24577, 13);
        fixed_lit(&w, 256);
        uint8_t *g;
        size_t len = gzip_wrap(&w, d, n, &g);
        check_stream("distance 32768", WRAP_GZIP, g, len, n, 1);
        check_stream("distance 32768, output one byte short", WRAP_GZIP, g, len, n - 1, -1);
        free(g);
        free(w.b);
        free(d);
    }
    /* empty blocks of each type, then "abc" */
    {
        bitw w = {0};
        stored(&w, 0, NULL, 0, 0xffff);
        put(&w, 0, 1);
        put(&w, 1, 2);
        fixed_lit(&w, 256);
        const uint8_t lens[258 + 2] = {['a'] = 1, [256] = 2, [257] = 2, [258] = 1, [259] = 1};
        dynamic_header(&w, 0, 258, 2, lens, 0, -1, -1);
        put_code(&w, 2, 2); /* end of block */
        put(&w, 1, 1);
        put(&w, 1, 2);
        fixed_lit(&w, 'a');
        fixed_lit(&w, 'b');
        fixed_lit(&w, 'c');
        fixed_lit(&w, 256);
        uint8_t *g;
        size_t len = gzip_wrap(&w, (const uint8_t *)"abc", 3, &g);
        check_stream("empty stored, fixed and dynamic blocks", WRAP_GZIP, g, len, 3, 1);
        free(g);
        free(w.b);
    }
    /* dynamic blocks: 'a' (code 0), end (10), length 3 (11); distances 1 (0) and 2 (1) */
    for (int c = 0; c < 11; c++) {
        uint8_t lens[288 + 32] = {['a'] = 1, [256] = 2, [257] = 2, [258] = 1, [259] = 1};
        int nlit = 258, ndist = 2, bad_pre = 0, r16 = -1, r17 = -1, must = -1;
        const char *name[] = {"dynamic block",
                              "over-subscribed lengths",
                              "incomplete lengths",
                              "no end-of-block code",
                              "over-subscribed precode",
                              "a repeat before the first length",
                              "a repeat past the end",
                              "HLIT 287",
                              "one distance code",
                              "the unused half of a one-code code",
                              "a distance before the start"};
        if (c == 0 || c == 8)
            must = 1;
        if (c == 1)
            lens[256] = 1;
        if (c == 2)
            lens[257] = 0;
        if (c == 3) {
            lens[256] = 0;
            lens[257] = 1;
        }
        bad_pre = c == 4;
        r16 = c == 5 ? 0 : -1;
        r17 = c == 6 ? nlit + ndist - 3 : -1; /* 10 zeros where 3 lengths are left */
        if (c == 7) {
            memmove(lens + 288, lens + 258, 2);
            memset(lens + 258, 0, 30);
            nlit = 288;
        }
        if (c == 8 || c == 9) {
            ndist = 1; /* one code of one bit (0); '1' is no code */
            lens[258] = 1;
        }
        bitw w = {0};
        dynamic_header(&w, 1, nlit, ndist, lens, bad_pre, r16, r17);
        put_code(&w, 0, 1); /* 'a' */
        if (c != 10)
            put_code(&w, 0, 1);                     /* 'a' */
        put_code(&w, 3, 2);                         /* length 3 */
        put_code(&w, c == 9 || c == 10 ? 1 : 0, 1); /* distance 1, or 2 (before the start) */
        put_code(&w, 2, 2);                         /* end */
        uint8_t *g;
        size_t len = gzip_wrap(&w, (const uint8_t *)"aaaaa", 5, &g);
        snprintf(what, sizeof what, "crafted: %s", name[c]);
        check_stream(what, WRAP_GZIP, g, len, 5, must);
        free(g);
        free(w.b);
    }
    /* fixed blocks: block type 3, LEN/NLEN, symbols 286, 287, distance 30, 31, no final block */
    for (int c = 0; c < 7; c++) {
        bitw w = {0};
        if (c == 0) {
            put(&w, 1, 1);
            put(&w, 3, 2);
        } else if (c == 1) {
            stored(&w, 1, (const uint8_t *)"ab", 2, 0xfffe ^ 1);
        } else if (c == 6) {
            put(&w, 0, 1);
            put(&w, 1, 2);
            fixed_lit(&w, 'a');
            fixed_lit(&w, 256);
        } else {
            put(&w, 1, 1);
            put(&w, 1, 2);
            fixed_lit(&w, 'a');
            fixed_lit(&w, c == 2 ? 286 : c == 3 ? 287 : 257);
            if (c >= 4)
                put_code(&w, c == 4 ? 30 : 31, 5);
            fixed_lit(&w, 256);
        }
        const char *name[] = {"block type 3",      "LEN and NLEN",       "length symbol 286",
                              "length symbol 287", "distance symbol 30", "distance symbol 31",
                              "no final block"};
        uint8_t *g;
        size_t len = gzip_wrap(&w, (const uint8_t *)"aaaa", 4, &g);
        snprintf(what, sizeof what, "crafted: %s", name[c]);
        check_stream(what, WRAP_GZIP, g, len, 64, -1);
        free(g);
        free(w.b);
    }
}

/* ---- corrupt streams -------------------------------------------------------------------- */

static void corrupt_streams(void) {
    struct libdeflate_compressor *lc = libdeflate_alloc_compressor(6);
    char what[128];
    for (int kind = 0; kind < 6; kind++) {
        const size_t n = 3000 + (size_t)kind * 700;
        uint8_t *d = malloc(n);
        make_data(kind, d, n);
        uint8_t c[8192], m[8192];
        size_t len = libdeflate_gzip_compress(lc, d, n, c, sizeof c);
        for (size_t cut = 0; cut < len; cut++) { /* every truncation */
            snprintf(what, sizeof what, "data %d cut to %zu of %zu bytes", kind, cut, len);
            check_stream(what, WRAP_GZIP, c, cut, n, -1);
        }
        for (int k = 0; k < 8; k++) { /* CRC and ISIZE */
            memcpy(m, c, len);
            m[len - 8 + k] ^= 0x10;
            snprintf(what, sizeof what, "data %d, trailer byte %d wrong", kind, k);
            check_stream(what, WRAP_GZIP, m, len, n, -1);
        }
        memcpy(m, c, len);
        m[3] = 0x20; /* a reserved flag */
        check_stream("a reserved gzip flag", WRAP_GZIP, m, len, n, -1);
        size_t zl = libdeflate_zlib_compress(lc, d, n, c, sizeof c);
        c[zl - 1] ^= 1;
        check_stream("Adler-32 wrong", WRAP_ZLIB, c, zl, n, -1);
        /* random mutations of the raw stream: the decoders must agree on what they accept */
        size_t rl = libdeflate_deflate_compress(lc, d, n, c, sizeof c);
        for (int t = 0; t < 3000; t++) {
            memcpy(m, c, rl);
            int flips = 1 + (int)(rnd() % 3);
            for (int f = 0; f < flips; f++) {
                size_t at = (size_t)(rnd() % rl);
                if (rnd() % 2)
                    m[at] ^= (uint8_t)(1u << (rnd() % 8));
                else
                    m[at] = (uint8_t)rnd();
            }
            size_t ml = rnd() % 4 ? rl : (size_t)(rnd() % rl);
            snprintf(what, sizeof what, "data %d, mutant %d", kind, t);
            check_stream(what, WRAP_RAW, m, ml, n + (size_t)(rnd() % 64), 0);
            g_mutants++;
        }
        for (int t = 0; t < 300; t++) { /* random bytes as streams */
            size_t ml = 1 + (size_t)(rnd() % 200);
            for (size_t i = 0; i < ml; i++)
                m[i] = (uint8_t)rnd();
            check_stream("random bytes", WRAP_RAW, m, ml, 4096, 0);
            g_mutants++;
        }
        free(d);
    }
    libdeflate_free_compressor(lc);
}

/* ---- lanes ------------------------------------------------------------------------------- */

static void lanes(void) {
    /* the CRC-32 pieces of 1..32 lanes joined */
    for (int t = 0; t < 200; t++) {
        size_t n = t < 40 ? (size_t)t : (size_t)(rnd() % 100000);
        uint8_t *d = malloc(n + 1);
        make_data((int)(rnd() % 6), d, n);
        int nl = 1 + (int)(rnd() % 32);
        uint32_t piece[32];
        for (int l = 0; l < nl; l++)
            piece[l] = tide_infl_crc_piece(g_crc, d, n, l, nl);
        CHECK(tide_infl_crc_join(piece, n, nl) == libdeflate_crc32(0, d, n));
        free(d);
    }
    /* 32 lanes' lookup tables (each lane's share in turn) against one lane's */
    for (int t = 0; t < 200; t++) {
        uint8_t lens[288];
        int n = 30 + (int)(rnd() % 259);
        /* lengths of a complete code: split the longest-codes' space until n codes */
        int cnt[16] = {0};
        cnt[1] = 2;
        for (int have = 2; have < n;) {
            int l = 1 + (int)(rnd() % 14);
            if (cnt[l] == 0)
                continue;
            cnt[l]--;
            cnt[l + 1] += 2;
            have++;
        }
        for (int i = 0, l = 1; i < n; i++) {
            while (!cnt[l])
                l++;
            cnt[l]--;
            lens[i] = (uint8_t)l;
        }
        for (int i = n - 1; i > 0; i--) { /* shuffled among the symbols */
            int j = (int)(rnd() % (uint64_t)(i + 1));
            uint8_t x = lens[i];
            lens[i] = lens[j];
            lens[j] = x;
        }
        uint16_t sorted1[288], fast1[1 << TIDE_INFL_LBITS], sorted32[288],
            fast32[1 << TIDE_INFL_LBITS];
        tide_infl_huff h1 = {.sorted = sorted1, .fast = fast1, .bits = TIDE_INFL_LBITS};
        tide_infl_huff h32 = {.sorted = sorted32, .fast = fast32, .bits = TIDE_INFL_LBITS};
        CHECK(tide_infl_huff_prepare(&h1, lens, n) == 0);
        CHECK(tide_infl_huff_prepare(&h32, lens, n) == 0);
        tide_infl_huff_build(&h1, lens, 0, 1);
        for (int l = 0; l < 32; l++)
            tide_infl_huff_clear(&h32, l, 32);
        for (int l = 0; l < 32; l++)
            tide_infl_huff_fill(&h32, lens, l, 32);
        CHECK(!memcmp(fast1, fast32, sizeof fast1));
        /* and every symbol decodes through it (long codes through the canonical walk) */
        for (int sym = 0; sym < n; sym++) {
            unsigned code = 0;
            for (int j = 0; j < (int)h1.ncodes; j++)
                if (sorted1[j] == sym)
                    code = h1.first[lens[sym]] + (unsigned)(j - h1.offs[lens[sym]]);
            tide_infl_reader r = {NULL, NULL, tide_infl_reverse(code, lens[sym]), 24};
            CHECK(tide_infl_decode(&r, &h1) == sym && r.n == 24 - lens[sym]);
        }
    }
}

/* ---- GZIP tiles of real files --------------------------------------------------------------- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every gzip stream of the first compressed image of @p path against libdeflate; with
 * @p timing, both decoders timed over all the tiles. Returns the number of gzip tiles. */
static int file_tiles(const char *path, int timing) {
    tide_tile_image *ti = NULL;
    uint8_t *data = NULL;
    if (tide_fits_tile_load(path, &ti, &data) || !ti)
        return 0;
    const tide_tile_layout *t = &ti->lay;
    const size_t cap = (size_t)t->maxpix * 8;
    int ntiles = 0;
    double t_mine = 0, t_ld = 0, bytes = 0;
    uint8_t *a = malloc(cap), *b = malloc(cap);
    for (int64_t k = 0; k < t->ntiles; k++) {
        const uint8_t *row = data + k * t->naxis1;
        int64_t nelem, off;
        const tide_tile_col *col = &t->cmp;
        if (tide_tile_descriptor(t, col, row, k, &nelem, &off))
            continue;
        if (nelem == 0 && t->gz.col) {
            col = &t->gz;
            if (tide_tile_descriptor(t, col, row, k, &nelem, &off))
                continue;
        } else if (t->codec != CODEC_GZIP1 && t->codec != CODEC_GZIP2) {
            continue;
        }
        if (nelem == 0)
            continue;
        char what[700];
        snprintf(what, sizeof what, "%s tile %lld", path, (long long)k + 1);
        check_stream(what, WRAP_GZIP, data + t->theap + off, (size_t)nelem, cap, 1);
        ntiles++;
        if (timing) {
            size_t ga = 0, gb = 0;
            double t0 = now();
            tide_inflate_gzip(g_st, g_crc, data + t->theap + off, (size_t)nelem, a, cap, &ga, 0, 1);
            double t1 = now();
            libdeflate_gzip_decompress(g_ld, data + t->theap + off, (size_t)nelem, b, cap, &gb);
            t_mine += t1 - t0;
            t_ld += now() - t1;
            bytes += (double)gb;
        }
    }
    if (timing && bytes > 0)
        printf("inflate of %s (%d tiles, %.1f MB out), one thread: tide %.0f MB/s, libdeflate "
               "%.0f MB/s\n",
               path, ntiles, bytes / 1e6, bytes / 1e6 / t_mine, bytes / 1e6 / t_ld);
    free(a);
    free(b);
    tide_host_free(data);
    free(ti);
    return ntiles;
}

/* An image written with cfitsio, packed by fpack with @p opt into @p fz. */
static int fpack_file(const char *fz, const char *opt, int bitpix, int w, int h) {
    char src[256], spec[300], cmd[800];
    snprintf(src, sizeof src, "%s.src.fits", fz);
    snprintf(spec, sizeof spec, "!%s", src);
    fitsfile *f = NULL;
    int st = 0;
    long nax[2] = {w, h};
    fits_create_file(&f, spec, &st);
    fits_create_img(f, bitpix, 2, nax, &st);
    float *v = malloc(sizeof(float) * (size_t)w * (size_t)h);
    for (int64_t i = 0; i < (int64_t)w * h; i++) {
        v[i] = (float)(1000 + 300 * sin((double)(i % w) / 40.0) + (double)(rnd() % 61));
        if (bitpix < 0 && i % 997 == 0)
            v[i] = NAN;
        if (bitpix == 8)
            v[i] = (float)((int)v[i] % 256); /* whole: none rounds up to 256 */
    }
    fits_write_img(f, TFLOAT, 1, (LONGLONG)w * h, v, &st);
    fits_close_file(f, &st);
    free(v);
    snprintf(cmd, sizeof cmd, "fpack %s -O '%s' '%s' 2>/dev/null", opt, fz, src);
    int r = st ? st : system(cmd);
    unlink(src);
    return r;
}

static void real_files(void) {
    const char *names[] = {"m13_gzip.fits", "compressed_with_nan.fits", "m13_rice.fits",
                           "tess_diff_rice_dither1.fits.fz", "test_rice_dither2_seed42.fits.fz"};
    int ntiles = 0, present = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *p = tide_test_data("compressed");
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", p, names[i]);
        if (access(path, R_OK) == 0) {
            present += i == 0;
            ntiles += file_tiles(path, 0);
        }
    }
    if (present)
        CHECK(ntiles > 0); /* m13_gzip.fits at least */
    else
        fprintf(stderr, "no ../shared/data/compressed/m13_gzip.fits: the shared files skipped\n");
    printf("%d gzip tiles of ../shared/data/compressed\n", ntiles);
    if (system("command -v fpack >/dev/null") != 0) {
        fprintf(stderr, "fpack not installed (libcfitsio-bin): its files skipped\n");
        return;
    }
    const struct {
        const char *opt;
        int bitpix, w, h;
    } cases[] = {{"-g1", 16, 517, 389},      {"-g2", 16, 517, 389},
                 {"-g2", 32, 300, 211},      {"-g1 -q 4", -32, 333, 250},
                 {"-g2 -q 0", -32, 301, 77}, {"-g2 -t 17,23", 8, 201, 99},
                 {"-g2", 16, 2048, 2048}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char fz[256];
        snprintf(fz, sizeof fz, "/tmp/tide_inflate_%d_%zu.fits.fz", (int)getpid(), i);
        if (fpack_file(fz, cases[i].opt, cases[i].bitpix, cases[i].w, cases[i].h)) {
            fprintf(stderr, "fpack %s failed\n", cases[i].opt);
            CHECK(0);
            continue;
        }
        int n = file_tiles(fz, cases[i].w == 2048);
        if (n == 0)
            fprintf(stderr, "fpack %s BITPIX %d: no gzip tiles\n", cases[i].opt, cases[i].bitpix);
        CHECK(n > 0);
        unlink(fz);
    }
}

int main(void) {
    for (uint32_t i = 0; i < 256; i++)
        g_crc[i] = tide_infl_crc_entry(i);
    g_st = malloc(sizeof *g_st);
    g_ld = libdeflate_alloc_decompressor();
    if (!g_st || !g_ld)
        return 1;
    lanes();
    crafted_streams();
    encoder_streams();
    corrupt_streams();
    real_files();
    printf("%d streams checked (%d mutants); libdeflate accepted %d that tide refuses\n", g_streams,
           g_mutants, g_lenient);
    libdeflate_free_decompressor(g_ld);
    free(g_st);
    return TIDE_TEST_RESULT();
}
