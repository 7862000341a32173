/* png_encode.c — 8-bit greyscale PNG encoding with the zlib stream compressed in parallel
 * (png_encode.h).
 *
 * Why not libpng's writer: it deflates the whole picture in one stream on one thread, ~450 ms
 * for a 4096² frame even at zlib's fastest level, which made writing `tide diff`'s pictures
 * take longer than the whole GPU run. Here the filtered scanlines are cut into pieces that
 * threads deflate independently (raw deflate, each non-final piece ended by a sync flush so
 * it stops on a byte boundary), and the pieces are concatenated into one zlib stream with the
 * combined Adler-32 (zlib's adler32_combine): the method of pigz (Adler, 2007). A decoder sees
 * an ordinary stream; a piece does not see its predecessor's window, which costs a fraction
 * of a percent in size on pieces of a megabyte.
 *
 * Frame-sized pictures are deflated with zlib's run-length strategy (Z_RLE: matches at
 * distance 1 only, Huffman codes per block) rather than its fastest general level: they are
 * for eyes, and on tide's filtered sky and difference rows (noise, for the most part, where
 * long matches are rare) it is 2.4 times as fast as level 1 and the files come out ~1%
 * smaller (a 4096² difference: 57 -> 136 MB/s a core, ratio 0.824 -> 0.816). Small pictures
 * (the magnified kernel and stamps, whose rows repeat) keep level 1, which finds the
 * repeats: Z_RLE made candidates.png 4 times larger, and the time there is negligible.
 *
 * The file: the PNG signature, IHDR (greyscale, 8 bits, no interlace), a tEXt "Software"
 * chunk, one IDAT per piece and IEND, each chunk with its CRC-32 (PNG specification, ISO/IEC
 * 15948:2004, §5 and §11), a piece's CRC computed by the thread that deflated it. Rows use the
 * Sub filter (§9.2), as the libpng writer was set to. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "png_encode.h"
#include "tide/status.h"

#define PIECE_MIN ((size_t)1 << 20) /* bytes of filtered rows per piece, at least */
#define MAX_PIECES 64
#define RLE_MIN ((size_t)4 << 20) /* bytes of filtered rows from which Z_RLE is used */

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* The CRC-32 of a chunk: of its type and data. */
static uLong chunk_crc(const char type[4], const unsigned char *data, size_t n) {
    const uLong c = crc32(0L, (const Bytef *)type, 4);
    return n ? crc32_z(c, data, n) : c;
}

/* One chunk whose CRC @p c is known: length, type, data, CRC. */
static int put_chunk_crc(FILE *f, const char type[4], const unsigned char *data, size_t n,
                         uLong c) {
    unsigned char hdr[8], crc[4];
    put32(hdr, (uint32_t)n);
    memcpy(hdr + 4, type, 4);
    put32(crc, (uint32_t)c);
    return fwrite(hdr, 1, 8, f) != 8 || (n && fwrite(data, 1, n, f) != n) ||
           fwrite(crc, 1, 4, f) != 4;
}

/* One chunk: length, type, data, CRC-32 of type and data. */
static int put_chunk(FILE *f, const char type[4], const unsigned char *data, size_t n) {
    return put_chunk_crc(f, type, data, n, chunk_crc(type, data, n));
}

/* Deflate @p n bytes at @p in as raw deflate into a buffer of its own; @p last ends the
 * stream, otherwise a sync flush ends the piece on a byte boundary. */
static int deflate_piece(const unsigned char *in, size_t n, int last, int strategy,
                         unsigned char **out, size_t *nout) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, -15, 8, strategy) != Z_OK)
        return -1;
    const size_t cap = deflateBound(&z, (uLong)n) + 16;
    *out = malloc(cap);
    if (!*out) {
        deflateEnd(&z);
        return -1;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = *out;
    z.avail_out = (uInt)cap;
    const int r = deflate(&z, last ? Z_FINISH : Z_SYNC_FLUSH);
    const int ok = last ? r == Z_STREAM_END : (r == Z_OK && z.avail_in == 0);
    *nout = cap - z.avail_out;
    deflateEnd(&z);
    return ok ? 0 : -1;
}

int tide_png_encode_grey(FILE *f, const char *path, const unsigned char *rows, int64_t w, int64_t h,
                         int threads) {
    const size_t line = (size_t)w + 1, total = line * (size_t)h;
    if (total > 0x7FFFFFFFu)
        return tide_error(TIDE_E_INVAL, "%s: a %lldx%lld PNG is too large for this writer", path,
                          (long long)w, (long long)h);
    unsigned char *filt = malloc(total);
    if (!filt)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory for the PNG rows", path);
        /* Sub filter: each byte minus its left neighbour (modulo 256), the first kept */
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) schedule(static) if (h >= 256)
    for (int64_t y = 0; y < h; y++) {
        const unsigned char *src = rows + (size_t)y * (size_t)w;
        unsigned char *dst = filt + (size_t)y * line;
        dst[0] = 1;
        dst[1] = src[0];
        for (int64_t x = 1; x < w; x++)
            dst[x + 1] = (unsigned char)(src[x] - src[x - 1]);
    }
    /* pieces of whole rows */
    const int strategy = total >= RLE_MIN ? Z_RLE : Z_DEFAULT_STRATEGY;
    int np = (int)(total / PIECE_MIN);
    np = np < 1 ? 1 : (np > MAX_PIECES ? MAX_PIECES : np);
    const int64_t rows_per = (h + np - 1) / np;
    np = (int)((h + rows_per - 1) / rows_per);
    unsigned char *out[MAX_PIECES] = {NULL};
    size_t nout[MAX_PIECES] = {0};
    uLong adl[MAX_PIECES], crc[MAX_PIECES];
    int bad = 0;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) schedule(dynamic, 1)               \
    reduction(|                                                                                    \
              : bad)
    for (int i = 0; i < np; i++) {
        const int64_t y0 = (int64_t)i * rows_per, y1 = y0 + rows_per < h ? y0 + rows_per : h;
        const unsigned char *in = filt + (size_t)y0 * line;
        const size_t n = (size_t)(y1 - y0) * line;
        adl[i] = adler32(adler32(0L, Z_NULL, 0), in, (uInt)n);
        const int e = deflate_piece(in, n, i == np - 1, strategy, &out[i], &nout[i]) != 0;
        if (!e)
            crc[i] = chunk_crc("IDAT", out[i], nout[i]);
        bad |= e;
    }
    int st =
        bad ? tide_error(TIDE_E_NOMEM, "%s: zlib could not compress the picture", path) : TIDE_OK;
    uLong adler = adler32(0L, Z_NULL, 0);
    for (int i = 0; i < np && !st; i++) {
        const int64_t y0 = (int64_t)i * rows_per, y1 = y0 + rows_per < h ? y0 + rows_per : h;
        adler = adler32_combine(adler, adl[i], (z_off_t)((size_t)(y1 - y0) * line));
    }
    if (!st) {
        static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
        unsigned char ihdr[13];
        put32(ihdr, (uint32_t)w);
        put32(ihdr + 4, (uint32_t)h);
        ihdr[8] = 8;  /* bit depth */
        ihdr[9] = 0;  /* greyscale */
        ihdr[10] = 0; /* deflate */
        ihdr[11] = 0; /* adaptive filtering (the method; each row says its filter) */
        ihdr[12] = 0; /* no interlace */
        static const unsigned char text[] = "Software\0tide";
        /* zlib header: deflate, 32 KiB window, fastest level, check bits (RFC 1950) */
        static const unsigned char zhead[2] = {0x78, 0x01};
        unsigned char ztail[4];
        put32(ztail, (uint32_t)adler);
        int e = fwrite(sig, 1, 8, f) != 8 || put_chunk(f, "IHDR", ihdr, 13) ||
                put_chunk(f, "tEXt", text, sizeof text - 1) || put_chunk(f, "IDAT", zhead, 2);
        for (int i = 0; i < np && !e; i++)
            e = put_chunk_crc(f, "IDAT", out[i], nout[i], crc[i]);
        e = e || put_chunk(f, "IDAT", ztail, 4) || put_chunk(f, "IEND", NULL, 0);
        if (e)
            st = tide_error(TIDE_E_IO, "%s: write failed: %s", path, strerror(errno));
    }
    for (int i = 0; i < np; i++)
        free(out[i]);
    free(filt);
    return st;
}
