/* test_fits_tiles.c — the tile-compressed image check (io/fits/fits_tiles.h) and tide's RICE
 * decoder (io/fits/rice_decode.h):
 *  - the decoder against cfitsio's own fits_rcomp* / fits_rdecomp* on random data, several
 *    block sizes and tile lengths, bit for bit;
 *  - corrupted streams (cut, random, all zeros, all 0xFF) placed against a PROT_NONE page, so
 *    that a read past the stream faults even without ASan: each must fail or stay inside;
 *  - whole files written by cfitsio and patched as the reproducers of issue 22 are (ZNAXISn
 *    products that wrap to 0 and to 1, a huge ZTILE, rows that are not the tile count, a
 *    descriptor past the heap, corrupted RICE/GZIP/HCOMPRESS/PLIO streams), and valid files
 *    for every ZBITPIX and codec cfitsio writes, which must pass;
 *  - the reproducer files of ../shared/reliability where they are present. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <fitsio.h>
#include <fitsio2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fits/fits_tiles.h"
#include "io/fits/rice_decode.h"
#include "tide/tide.h"
#include "tide_test.h"

/* LeakSanitizer: cfitsio 4.2.0 leaks a tile buffer in imcomp_compress_tile when it refuses a
 * codec for an image type (e.g. PLIO_1 of a float image, status 413), which the valid-file
 * sweep below asks for on purpose. That is cfitsio's writer, not what is tested here. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:imcomp_compress_tile\n";
}

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- the decoder against cfitsio --------------------------------------------------------- */

/* A pixel of a test signal: smooth + noise of a chosen width, with runs of a constant (the
 * low-entropy blocks) and wild jumps (the verbatim blocks). */
static int64_t signal(int kind, int64_t i, int bytepix) {
    int64_t range = bytepix == 1 ? 256 : bytepix == 2 ? 65536 : (int64_t)1 << 32;
    switch (kind) {
    case 0: return (int64_t)(rnd() % (uint64_t)range);                     /* white */
    case 1: return 1000 + (int64_t)(rnd() % 7);                            /* small noise */
    case 2: return (i / 50) % 2 ? 77 : (int64_t)(rnd() % 5);               /* runs */
    case 3: return (i % 13 == 0) ? (int64_t)(rnd() % (uint64_t)range) : i; /* jumps */
    default: return (int64_t)(rnd() % 300) * (i % 3);                      /* mixed */
    }
}

/* Compress npix pixels with cfitsio, decode with cfitsio and with tide: the same pixels, the
 * same as the input, and every compressed byte consumed. */
static void rice_roundtrip(int bytepix, int blocksize, int npix, int kind) {
    size_t cap = (size_t)npix * 8 + 1024; /* cfitsio's coder does not check its buffer end */
    unsigned char *c = malloc(cap);
    void *src = malloc((size_t)npix * 4), *ref = malloc((size_t)npix * 4);
    void *out = malloc((size_t)npix * 4);
    for (int i = 0; i < npix; i++) {
        int64_t v = signal(kind, i, bytepix);
        if (bytepix == 1)
            ((signed char *)src)[i] = (signed char)v;
        else if (bytepix == 2)
            ((short *)src)[i] = (short)v;
        else
            ((int *)src)[i] = (int)(uint32_t)v;
    }
    int n = bytepix == 1   ? fits_rcomp_byte(src, npix, c, (int)cap, blocksize)
            : bytepix == 2 ? fits_rcomp_short(src, npix, c, (int)cap, blocksize)
                           : fits_rcomp(src, npix, c, (int)cap, blocksize);
    CHECK(n > 0);
    if (n > 0) {
        int rst = bytepix == 1   ? fits_rdecomp_byte(c, n, ref, npix, blocksize)
                  : bytepix == 2 ? fits_rdecomp_short(c, n, ref, npix, blocksize)
                                 : fits_rdecomp(c, n, ref, npix, blocksize);
        CHECK(rst == 0);
        size_t used = 0;
        int st = tide_rice_decode_used(c, (size_t)n, bytepix, blocksize, npix, out, &used);
        if (st)
            fprintf(stderr, "bytepix %d block %d npix %d kind %d: %s\n", bytepix, blocksize, npix,
                    kind, tide_error_detail());
        CHECK(st == 0);
        CHECK(used == (size_t)n);
        CHECK(!memcmp(out, ref, (size_t)npix * (size_t)bytepix));
        CHECK(!memcmp(out, src, (size_t)npix * (size_t)bytepix));
    }
    free(c);
    free(src);
    free(ref);
    free(out);
}

static void test_rice_roundtrip(void) {
    const int bytepix[] = {1, 2, 4}, blocks[] = {1, 3, 8, 16, 32, 64, 100};
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < 7; k++) {
            int bs = blocks[k];
            const int lens[] = {1, 2, bs - 1 > 0 ? bs - 1 : 1, bs, bs + 1, 2 * bs + 1, 997, 4096};
            for (int l = 0; l < 8; l++)
                for (int kind = 0; kind < 5; kind++)
                    rice_roundtrip(bytepix[b], bs, lens[l], kind);
        }
}

/* ---- corrupted streams against a guard page ---------------------------------------------- */

static unsigned char *guard_base;
static size_t guard_len;

/* A copy of @p n bytes whose last byte is the last before a PROT_NONE page. */
static const uint8_t *guarded(const uint8_t *b, size_t n) {
    long pg = sysconf(_SC_PAGESIZE);
    size_t room = (n + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
    if (guard_base)
        munmap(guard_base, guard_len);
    guard_len = room + (size_t)pg;
    guard_base = mmap(NULL, guard_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guard_base == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    mprotect(guard_base + room, (size_t)pg, PROT_NONE);
    uint8_t *p = guard_base + room - n;
    if (n)
        memcpy(p, b, n);
    return p;
}

static void test_rice_corrupt(void) {
    const int bytepix[] = {1, 2, 4};
    enum { NPIX = 600 };
    static unsigned char junk[8192];
    static uint32_t out[NPIX];
    for (int b = 0; b < 3; b++) {
        int bp = bytepix[b];
        /* A valid stream, then every cut of it: each must fail (the decoder reads the same
         * bytes in the same order, so it needs one it no longer has). */
        unsigned char c[NPIX * 8 + 1024];
        static int src[NPIX];
        for (int i = 0; i < NPIX; i++)
            src[i] = (int)signal(i % 200 < 100 ? 1 : 3, i, bp);
        short s16[NPIX];
        signed char s8[NPIX];
        for (int i = 0; i < NPIX; i++) {
            s16[i] = (short)src[i];
            s8[i] = (signed char)src[i];
        }
        int n = bp == 1   ? fits_rcomp_byte(s8, NPIX, c, sizeof c, 32)
                : bp == 2 ? fits_rcomp_short(s16, NPIX, c, sizeof c, 32)
                          : fits_rcomp(src, NPIX, c, sizeof c, 32);
        CHECK(n > 0);
        CHECK(tide_rice_decode(guarded(c, (size_t)n), (size_t)n, bp, 32, NPIX, out) == 0);
        int cut_ok = 1;
        for (int len = 0; len < n; len++)
            if (tide_rice_decode(guarded(c, (size_t)len), (size_t)len, bp, 32, NPIX, out) !=
                TIDE_E_FORMAT)
                cut_ok = 0;
        CHECK(cut_ok);
        /* All zeros and all 0xFF, too short for the pixels they would code: errors. Zeros
         * code empty blocks (fsbits bits a block), 0xFF verbatim blocks (or, for 4-byte
         * pixels, a code above FSMAX + 1). */
        int fsbits = bp == 1 ? 3 : bp == 2 ? 4 : 5;
        size_t zero_need = (size_t)bp + ((size_t)(NPIX / 32 + 1) * (size_t)fsbits) / 8;
        for (size_t len = 0; len < zero_need; len++) {
            memset(junk, 0, len);
            CHECK(tide_rice_decode(guarded(junk, len), len, bp, 32, NPIX, out) == TIDE_E_FORMAT);
        }
        for (size_t len = 0; len < (size_t)NPIX * (size_t)bp; len += 7) {
            memset(junk, 0xFF, len);
            CHECK(tide_rice_decode(guarded(junk, len), len, bp, 32, NPIX, out) == TIDE_E_FORMAT);
        }
        /* Random bytes of random lengths: an error, or a decode that stayed inside (the
         * guard page would fault otherwise). */
        int fails = 0;
        for (int trial = 0; trial < 3000; trial++) {
            size_t len = (size_t)(rnd() % 2000);
            for (size_t i = 0; i < len; i++)
                junk[i] = (unsigned char)rnd();
            size_t used = 0;
            int st = tide_rice_decode_used(guarded(junk, len), len, bp, 1 + (int)(rnd() % 64),
                                           1 + (int64_t)(rnd() % NPIX), out, &used);
            CHECK(st == 0 || st == TIDE_E_FORMAT);
            CHECK(used <= len);
            fails += st != 0;
        }
        CHECK(fails > 0);
    }
    /* A 4-byte stream with fs = 24 and a unary run of 256 zeros: a difference of 2^32 and
     * more, which no 32-bit pixel has; one fewer zero is valid. */
    for (int zeros = 255; zeros <= 256; zeros++) {
        static unsigned char bits[64];
        memset(bits, 0, sizeof bits);
        int pos = 32; /* after the first pixel (0) */
        const char *code = "11001";
        for (int i = 0; i < 5; i++, pos++)
            if (code[i] == '1')
                bits[pos / 8] |= (unsigned char)(0x80 >> (pos % 8));
        pos += zeros;
        bits[pos / 8] |= (unsigned char)(0x80 >> (pos % 8));
        pos += 1 + 24;
        size_t len = (size_t)(pos + 7) / 8;
        int st = tide_rice_decode(guarded(bits, len), len, 4, 32, 1, out);
        if (zeros == 255)
            CHECK(st == 0);
        else
            CHECK(st == TIDE_E_FORMAT && strstr(tide_error_detail(), "wider than 32 bits"));
    }
    /* Bad parameters. */
    CHECK(tide_rice_decode(junk, 10, 3, 32, 5, out) == TIDE_E_INVAL);
    CHECK(tide_rice_decode(junk, 10, 4, 0, 5, out) == TIDE_E_INVAL);
    CHECK(tide_rice_decode(junk, 10, 4, 32, 0, out) == TIDE_E_INVAL);
}

/* ---- whole files ------------------------------------------------------------------------- */

static char dir[64];

/* Write a ZBITPIX @p bitpix image of nx x ny pixels compressed with @p codec in tiles of
 * tx x ty; 0 when cfitsio wrote it, else its status (a combination it refuses). */
static int make_image(const char *path, int codec, int bitpix, long nx, long ny, long tx, long ty,
                      int smooth_tile) {
    fitsfile *f = NULL;
    int st = 0;
    unlink(path);
    fits_create_diskfile(&f, path, &st);
    long nax[2] = {nx, ny}, tile[2] = {tx, ty};
    fits_set_compression_type(f, codec, &st);
    fits_set_tile_dim(f, 2, tile, &st);
    fits_create_img(f, bitpix, 2, nax, &st);
    double *v = malloc(sizeof(double) * (size_t)(nx * ny));
    for (long i = 0; i < nx * ny; i++) {
        long x = i % nx, y = i / nx;
        double base = 100 + 10 * ((x / 7 + y / 5) % 9) + (double)(rnd() % 17);
        if (bitpix < 0)
            base += (double)(rnd() % 1000) / 1000.0;
        /* Tiny noise under one huge value: too many levels for 32-bit integers, so cfitsio
         * stores the tile losslessly (GZIP_COMPRESSED_DATA) instead of quantizing it. */
        if (smooth_tile && y < ty && x < tx)
            base = (x == 3 && y == 3) ? 1e8 : (double)(rnd() % 1000) * 1e-6;
        v[i] = base;
    }
    /* In the image's own type: cfitsio compresses from that (it refuses conversions). */
    int type = bitpix == 8     ? TBYTE
               : bitpix == 16  ? TSHORT
               : bitpix == 32  ? TINT
               : bitpix == 64  ? TLONGLONG
               : bitpix == -32 ? TFLOAT
                               : TDOUBLE;
    size_t es = bitpix == 8 ? 1 : bitpix == 16 ? 2 : bitpix == 32 || bitpix == -32 ? 4 : 8;
    unsigned char *buf = malloc(es * (size_t)(nx * ny));
    for (long i = 0; i < nx * ny; i++) {
        if (type == TBYTE)
            buf[i] = (unsigned char)v[i];
        else if (type == TSHORT)
            ((short *)buf)[i] = (short)v[i];
        else if (type == TINT)
            ((int *)buf)[i] = (int)v[i];
        else if (type == TLONGLONG)
            ((long long *)buf)[i] = (long long)v[i];
        else if (type == TFLOAT)
            ((float *)buf)[i] = (float)v[i];
        else
            ((double *)buf)[i] = v[i];
    }
    fits_write_img(f, type, 1, nx * ny, buf, &st);
    free(buf);
    int cst = 0;
    fits_close_file(f, &cst);
    free(v);
    if (!st)
        st = cst;
    fits_clear_errmsg();
    return st;
}

typedef struct {
    tide_header h;
    int64_t data_start, size;
    int64_t naxis1;
} hdu_at;

/* The raw header and data start of HDU @p want, walking the file's blocks (no cfitsio). */
static int load_hdu(const char *path, int want, hdu_at *a) {
    memset(a, 0, sizeof *a);
    tide_header_init(&a->h);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    fseek(fp, 0, SEEK_END);
    a->size = ftell(fp);
    int64_t pos = 0;
    for (int hdu = 0;; hdu++) {
        char *cards = NULL;
        int n = 0, end = 0;
        while (!end) {
            char blk[2880];
            if (fseek(fp, (long)pos, SEEK_SET) || fread(blk, 1, 2880, fp) != 2880) {
                free(cards);
                fclose(fp);
                return -1;
            }
            pos += 2880;
            cards = realloc(cards, (size_t)(n + 36) * 80 + 1);
            memcpy(cards + (size_t)n * 80, blk, 2880);
            for (int c = 0; c < 36 && !end; c++)
                end = !memcmp(blk + c * 80, "END     ", 8);
            n += 36;
        }
        cards[(size_t)n * 80] = 0;
        tide_header h;
        tide_header_init(&h);
        tide_header_parse(&h, cards, n);
        free(cards);
        if (hdu == want) {
            a->h = h;
            a->data_start = pos;
            if (tide_header_get_int(&h, "NAXIS1", &a->naxis1))
                a->naxis1 = 0;
            fclose(fp);
            return 0;
        }
        int64_t bitpix = 8, naxis = 0, pcount = 0, gcount = 1, prod = 1;
        tide_header_get_int(&h, "BITPIX", &bitpix);
        tide_header_get_int(&h, "NAXIS", &naxis);
        tide_header_get_int(&h, "PCOUNT", &pcount);
        tide_header_get_int(&h, "GCOUNT", &gcount);
        for (int i = 1; i <= naxis; i++) {
            char key[16];
            int64_t v = 0;
            snprintf(key, sizeof key, "NAXIS%d", i);
            tide_header_get_int(&h, key, &v);
            prod *= v;
        }
        int64_t bytes = naxis ? (bitpix < 0 ? -bitpix : bitpix) / 8 * gcount * (prod + pcount) : 0;
        pos += (bytes + 2879) / 2880 * 2880;
        tide_header_free(&h);
    }
}

/* tide_fits_check_tiles on HDU 1 of @p path; the detail is left in tide_error_detail(). */
static int check_file(const char *path) {
    hdu_at a;
    if (load_hdu(path, 1, &a)) {
        fprintf(stderr, "%s: cannot walk the file\n", path);
        return 99;
    }
    int fd = open(path, O_RDONLY);
    int st = tide_fits_check_tiles(fd, path, 1, &a.h, a.data_start, a.size);
    close(fd);
    tide_header_free(&a.h);
    return st;
}

/* Rewrite the card of @p key in HDU 1's header as KEY = VALUE. */
static void patch_key(const char *path, const char *key, const char *value) {
    hdu_at a;
    CHECK(load_hdu(path, 1, &a) == 0);
    tide_header_free(&a.h);
    int fd = open(path, O_RDWR);
    char pad[9];
    snprintf(pad, sizeof pad, "%-8s", key);
    int done = 0;
    for (int64_t off = 2880; off < a.data_start && !done; off += 80) {
        char card[81];
        if (pread(fd, card, 80, off) != 80)
            break;
        if (!memcmp(card, pad, 8) && card[8] == '=') {
            char nc[81];
            snprintf(nc, sizeof nc, "%-8s= %20s / patched by the test%-40s", key, value, "");
            CHECK(pwrite(fd, nc, 80, off) == 80);
            done = 1;
        }
    }
    close(fd);
    if (!done)
        fprintf(stderr, "patch_key: %s not found in %s\n", key, path);
    CHECK(done);
}

/* Overwrite @p n bytes at byte @p off of the data unit of HDU 1. */
static void patch_data(const char *path, int64_t off, const void *bytes, size_t n) {
    hdu_at a;
    CHECK(load_hdu(path, 1, &a) == 0);
    tide_header_free(&a.h);
    int fd = open(path, O_RDWR);
    CHECK(pwrite(fd, bytes, n, a.data_start + off) == (ssize_t)n);
    close(fd);
}

static void read_data(const char *path, int64_t off, void *bytes, size_t n) {
    hdu_at a;
    CHECK(load_hdu(path, 1, &a) == 0);
    tide_header_free(&a.h);
    int fd = open(path, O_RDONLY);
    CHECK(pread(fd, bytes, n, a.data_start + off) == (ssize_t)n);
    close(fd);
}

static int64_t table_bytes(const char *path) {
    hdu_at a;
    CHECK(load_hdu(path, 1, &a) == 0);
    int64_t n2 = 0;
    tide_header_get_int(&a.h, "NAXIS2", &n2);
    tide_header_free(&a.h);
    return a.naxis1 * n2;
}

static int64_t naxis1_of(const char *path) {
    hdu_at a;
    CHECK(load_hdu(path, 1, &a) == 0);
    tide_header_free(&a.h);
    return a.naxis1;
}

static void be32put(uint8_t *b, uint32_t v) {
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}

static uint32_t be32get(const uint8_t *b) {
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

/* The descriptor of COMPRESSED_DATA (column 1, a 1P one in cfitsio's files) of row @p row. */
static void get_desc(const char *path, int64_t row, uint32_t *nelem, uint32_t *off) {
    uint8_t d[8];
    read_data(path, row * naxis1_of(path), d, 8);
    *nelem = be32get(d);
    *off = be32get(d + 4);
}

/* Expect @p st to be TIDE_E_FORMAT with a detail naming the file and containing @p what. */
#define EXPECT_FORMAT(st, path, what)                                                              \
    do {                                                                                           \
        int st_ = (st);                                                                            \
        const char *d_ = tide_error_detail();                                                      \
        if (st_ != TIDE_E_FORMAT || !strstr(d_, path) || !strstr(d_, what)) {                      \
            fprintf(stderr, "%s:%d: expected a format error with '%s', got %d: %s\n", __FILE__,    \
                    __LINE__, what, st_, d_);                                                      \
            tide_test_failures++;                                                                  \
        }                                                                                          \
    } while (0)

/* A RICE file with a wrong stream at @p what: the scan's table check passes it (tide's decoder
 * checks RICE streams as it decodes them), the whole read fails in the decoder naming the
 * tile, and a section, which cfitsio decodes as it opens the file, fails in the scan's full
 * check with the same detail. */
static void deferred_streams(const char *path, const char *what) {
    hdu_at a;
    CHECK(load_hdu(path, 1, &a) == 0);
    int fd = open(path, O_RDONLY);
    CHECK_OK(tide_fits_check_tile_table(fd, path, 1, &a.h, a.data_start, a.size));
    close(fd);
    tide_header_free(&a.h);
    tide_image im;
    EXPECT_FORMAT(tide_fits_read_image(NULL, path, &im, NULL), path, what);
    char spec[200];
    snprintf(spec, sizeof spec, "%s[1][1:20,1:20]", path);
    EXPECT_FORMAT(tide_fits_read_image(NULL, spec, &im, NULL), path, what);
}

static void test_valid_files(void) {
    const int codecs[] = {RICE_1, GZIP_1, GZIP_2, HCOMPRESS_1, PLIO_1};
    const char *names[] = {"RICE_1", "GZIP_1", "GZIP_2", "HCOMPRESS_1", "PLIO_1"};
    const int bitpix[] = {8, 16, 32, 64, -32, -64};
    char path[128];
    snprintf(path, sizeof path, "%s/valid.fits", dir);
    int written = 0;
    for (int c = 0; c < 5; c++)
        for (int b = 0; b < 6; b++)
            for (int shape = 0; shape < 3; shape++) {
                /* Row tiles; square tiles cut at both edges; a tile larger than the image. */
                long tx = shape == 0 ? 90 : shape == 1 ? 32 : 200;
                long ty = shape == 0 ? 1 : shape == 1 ? 16 : 80;
                int cst = make_image(path, codecs[c], bitpix[b], 90, 45, tx, ty,
                                     shape == 1 && bitpix[b] < 0);
                if (cst) {
                    printf("cfitsio does not write %s with ZBITPIX %d (status %d)\n", names[c],
                           bitpix[b], cst);
                    continue;
                }
                written++;
                int st = check_file(path);
                if (st)
                    fprintf(stderr, "%s ZBITPIX %d tiles %ldx%ld: %s\n", names[c], bitpix[b], tx,
                            ty, tide_error_detail());
                CHECK(st == 0);
                /* and cfitsio reads it back */
                fitsfile *f = NULL;
                int fst = 0, any = 0;
                static double back[90 * 45];
                fits_open_file(&f, path, READONLY, &fst);
                int type;
                fits_movabs_hdu(f, 2, &type, &fst);
                fits_read_img(f, TDOUBLE, 1, 90 * 45, NULL, back, &any, &fst);
                fits_close_file(f, &fst);
                CHECK(fst == 0);
                fits_clear_errmsg();
            }
    CHECK(written >= 20);
}

static void test_float_lossless_tile(void) {
    /* A float image whose first tile cfitsio cannot quantize: it goes to
     * GZIP_COMPRESSED_DATA. The check must follow it there, and catch it cut. */
    char path[128];
    snprintf(path, sizeof path, "%s/lossless.fits", dir);
    CHECK(make_image(path, RICE_1, -32, 64, 32, 32, 16, 1) == 0);
    CHECK(check_file(path) == 0);
    hdu_at a;
    CHECK(load_hdu(path, 1, &a) == 0);
    char tt[80] = "";
    int has_gz = 0;
    for (int n = 1; n <= 6; n++) {
        char key[16];
        snprintf(key, sizeof key, "TTYPE%d", n);
        if (!tide_header_get_str(&a.h, key, tt, sizeof tt) && !strcmp(tt, "GZIP_COMPRESSED_DATA"))
            has_gz = n;
    }
    tide_header_free(&a.h);
    if (!has_gz) {
        printf("cfitsio quantized every tile: no GZIP_COMPRESSED_DATA case\n");
        return;
    }
    uint32_t nelem, off;
    get_desc(path, 0, &nelem, &off);
    CHECK(nelem == 0); /* tile 1 went to the gzip column */
    /* GZIP_COMPRESSED_DATA's descriptor of row 0 (8 bytes per P descriptor, column has_gz). */
    uint8_t d[8];
    read_data(path, 8 * (has_gz - 1), d, 8);
    uint32_t gn = be32get(d);
    CHECK(gn > 20);
    be32put(d, gn / 2); /* cut the stream */
    patch_data(path, 8 * (has_gz - 1), d, 8);
    EXPECT_FORMAT(check_file(path), path, "tile 1: GZIP_COMPRESSED_DATA: gzip");
}

static void test_patched_files(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/bad.fits", dir);
#define FRESH(codec, bp, tx, ty) CHECK(make_image(path, codec, bp, 100, 50, tx, ty, 0) == 0)

    /* ZNAXISn products that wrap: to 0 (2^32 x 2^32, cmp_wrap0) and to 1 (7 x ...,
     * cmp_wrap1: 7 x 7905747460161236407 = 3 x 2^64 + 1). */
    FRESH(RICE_1, 16, 100, 50);
    patch_key(path, "ZNAXIS1", "4294967296");
    patch_key(path, "ZNAXIS2", "4294967296");
    patch_key(path, "ZTILE1", "4294967296");
    patch_key(path, "ZTILE2", "4294967296");
    EXPECT_FORMAT(check_file(path), path, "overflows 64 bits");
    FRESH(RICE_1, 16, 100, 50);
    patch_key(path, "ZNAXIS1", "7");
    patch_key(path, "ZNAXIS2", "7905747460161236407");
    patch_key(path, "ZTILE1", "7");
    patch_key(path, "ZTILE2", "7905747460161236407");
    EXPECT_FORMAT(check_file(path), path, "overflows 64 bits");
    /* The same, tiles of one row: the tile count is right (1 x ...) only modulo 2^64. */
    FRESH(RICE_1, 16, 100, 1);
    patch_key(path, "ZNAXIS2", "9223372036854775807");
    EXPECT_FORMAT(check_file(path), path, "");

    /* A huge tile over a small image (cfitsio sizes its buffers from it). */
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "ZTILE1", "1099511627776");
    EXPECT_FORMAT(check_file(path), path, "larger than");
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "ZTILE2", "0");
    EXPECT_FORMAT(check_file(path), path, "ZTILE2 = 0");
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "ZNAXIS1", "-5");
    EXPECT_FORMAT(check_file(path), path, "ZNAXIS1 = -5");
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "ZBITPIX", "12");
    EXPECT_FORMAT(check_file(path), path, "ZBITPIX = 12");
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "ZNAXIS", "0");
    EXPECT_FORMAT(check_file(path), path, "ZNAXIS = 0");
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "ZCMPTYPE", "'LZMA_1  '");
    EXPECT_FORMAT(check_file(path), path, "unknown ZCMPTYPE");

    /* Rows that are not the tile count: the table's NAXIS2, or the image's tiles. */
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "NAXIS2", "4");
    EXPECT_FORMAT(check_file(path), path, "4 rows (NAXIS2) but the image 5 tiles");
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "ZTILE2", "5");
    EXPECT_FORMAT(check_file(path), path, "5 rows (NAXIS2) but the image 10 tiles");
    /* A row width that is not its columns'. */
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "TFORM1", "'1QB(999)'");
    EXPECT_FORMAT(check_file(path), path, "rows of 16 bytes");
    /* A heap that runs past the file. */
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "PCOUNT", "1000000");
    EXPECT_FORMAT(check_file(path), path, "truncated");

    /* A descriptor past the heap, and one whose offset + length wraps. */
    FRESH(RICE_1, 16, 100, 10);
    uint32_t nelem, off;
    get_desc(path, 2, &nelem, &off);
    uint8_t d[8];
    be32put(d, nelem);
    be32put(d + 4, off + 100000);
    patch_data(path, 2 * naxis1_of(path), d, 8);
    EXPECT_FORMAT(check_file(path), path, "tile 3: column 1's descriptor");
    FRESH(RICE_1, 16, 100, 10);
    be32put(d, 0x7fffffff);
    be32put(d + 4, 0x7fffffff);
    patch_data(path, 0, d, 8);
    EXPECT_FORMAT(check_file(path), path, "points outside the heap");
    FRESH(RICE_1, 16, 100, 10);
    be32put(d, 0x80000000u); /* negative as the int32 FITS defines */
    be32put(d + 4, 0);
    patch_data(path, 0, d, 8);
    EXPECT_FORMAT(check_file(path), path, "points outside the heap");

    /* RICE streams: cut (the descriptor says fewer bytes), overwritten with 0xFF (verbatim
     * 16-bit blocks need more bytes than a compressed tile has), and an empty stream. */
    FRESH(RICE_1, 16, 100, 10);
    get_desc(path, 1, &nelem, &off);
    be32put(d, nelem / 3);
    be32put(d + 4, off);
    patch_data(path, 1 * naxis1_of(path), d, 8);
    EXPECT_FORMAT(check_file(path), path, "tile 2: RICE stream");
    deferred_streams(path, "tile 2: RICE stream");
    FRESH(RICE_1, 16, 100, 10);
    get_desc(path, 3, &nelem, &off);
    {
        uint8_t *ff = malloc(nelem);
        memset(ff, 0xFF, nelem);
        patch_data(path, table_bytes(path) + off, ff, nelem);
        free(ff);
    }
    EXPECT_FORMAT(check_file(path), path, "tile 4: RICE stream");
    FRESH(RICE_1, 16, 100, 10);
    get_desc(path, 0, &nelem, &off);
    be32put(d, 0);
    be32put(d + 4, off);
    patch_data(path, 0, d, 8);
    EXPECT_FORMAT(check_file(path), path, "tile 1 has no data");
    /* A 32-bit RICE stream whose first block code is 31 (above FSMAX + 1 = 26). */
    FRESH(RICE_1, 32, 100, 10);
    get_desc(path, 0, &nelem, &off);
    {
        uint8_t b5 = 0xFF;
        patch_data(path, table_bytes(path) + off + 4, &b5, 1);
    }
    EXPECT_FORMAT(check_file(path), path, "tile 1: RICE block code 31");
    /* The block size and bytes per pixel as cfitsio reads them. */
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "ZVAL1", "0");
    EXPECT_FORMAT(check_file(path), path, "block size");
    FRESH(RICE_1, 16, 100, 10);
    patch_key(path, "ZVAL2", "4"); /* a 2-byte stream read as a 4-byte one */
    EXPECT_FORMAT(check_file(path), path, "RICE");

    /* GZIP: a byte changed (CRC or data error), the image's type changed (size). */
    FRESH(GZIP_1, 16, 100, 10);
    get_desc(path, 2, &nelem, &off);
    {
        uint8_t b;
        read_data(path, table_bytes(path) + off + nelem / 2, &b, 1);
        b ^= 0x5A;
        patch_data(path, table_bytes(path) + off + nelem / 2, &b, 1);
    }
    EXPECT_FORMAT(check_file(path), path, "tile 3: gzip stream");
    FRESH(GZIP_2, 16, 100, 10);
    patch_key(path, "ZBITPIX", "32");
    EXPECT_FORMAT(check_file(path), path, "tile 1: gzip stream inflates to 2000 bytes");
    FRESH(GZIP_1, 16, 100, 10);
    get_desc(path, 4, &nelem, &off);
    be32put(d, nelem - 9);
    be32put(d + 4, off);
    patch_data(path, 4 * naxis1_of(path), d, 8);
    EXPECT_FORMAT(check_file(path), path, "tile 5: gzip stream");

    /* HCOMPRESS: the stream's own sizes (what cfitsio's decoder writes) and its magic. */
    FRESH(HCOMPRESS_1, 16, 50, 10);
    get_desc(path, 1, &nelem, &off);
    {
        uint8_t sz[4];
        be32put(sz, 20);
        patch_data(path, table_bytes(path) + off + 2, sz, 4);
    }
    EXPECT_FORMAT(check_file(path), path, "tile 2: HCOMPRESS stream is of 50 x 20");
    FRESH(HCOMPRESS_1, 16, 50, 10);
    get_desc(path, 0, &nelem, &off);
    {
        uint8_t m = 0;
        patch_data(path, table_bytes(path) + off, &m, 1);
    }
    EXPECT_FORMAT(check_file(path), path, "0xDD 0x99");

    /* PLIO: a line list longer than its stored shorts. */
    FRESH(PLIO_1, 16, 100, 10);
    get_desc(path, 0, &nelem, &off);
    {
        uint8_t w[2] = {0x7f, 0x00}; /* word 4: the length's low 15 bits */
        patch_data(path, table_bytes(path) + off + 6, w, 2);
    }
    EXPECT_FORMAT(check_file(path), path, "tile 1: PLIO line list says");
    FRESH(PLIO_1, 16, 100, 10);
    be32put(d, 2);
    get_desc(path, 0, &nelem, &off);
    be32put(d + 4, off);
    patch_data(path, 0, d, 8);
    EXPECT_FORMAT(check_file(path), path, "at least 3");

    /* Two wrong tiles: the first is named, on any number of threads. */
    CHECK(make_image(path, RICE_1, 16, 100, 50, 100, 1, 0) == 0);
    const int64_t rows[] = {39, 7};
    for (int i = 0; i < 2; i++) {
        get_desc(path, rows[i], &nelem, &off);
        be32put(d, nelem / 2);
        be32put(d + 4, off);
        patch_data(path, rows[i] * naxis1_of(path), d, 8);
    }
    {
        hdu_at a;
        CHECK(load_hdu(path, 1, &a) == 0);
        int fd = open(path, O_RDONLY);
        char first[1024] = "";
        for (int threads = 1; threads <= 8; threads++) {
            int st =
                tide_fits_check_tiles_threads(fd, path, 1, &a.h, a.data_start, a.size, threads);
            CHECK(st == TIDE_E_FORMAT);
            CHECK(strstr(tide_error_detail(), "tile 8: RICE stream") != NULL);
            if (threads == 1)
                snprintf(first, sizeof first, "%s", tide_error_detail());
            else
                CHECK(!strcmp(first, tide_error_detail()));
        }
        close(fd);
        tide_header_free(&a.h);
    }
#undef FRESH
}

/* HCOMPRESS: valid streams of odd and even tile sizes pass; each cut by a byte, or with its
 * bit-plane format code broken, fails (the walk reads what cfitsio's decoder reads, which
 * takes no length and would read on past the stream). */
static void test_hcompress(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/hc.fits", dir);
    const long shapes[][4] = {
        {37, 23, 37, 23}, {64, 48, 16, 16}, {100, 50, 50, 10}, {33, 17, 33, 17}, {90, 45, 32, 16}};
    const int bitpix[] = {16, 32, -32};
    for (int s = 0; s < 5; s++)
        for (int b = 0; b < 3; b++) {
            const long *sh = shapes[s];
            int cst = make_image(path, HCOMPRESS_1, bitpix[b], sh[0], sh[1], sh[2], sh[3], 0);
            if (cst) {
                printf("cfitsio does not write HCOMPRESS_1 %ldx%ld in %ldx%ld tiles (%d)\n", sh[0],
                       sh[1], sh[2], sh[3], cst);
                continue;
            }
            int st = check_file(path);
            if (st)
                fprintf(stderr, "HCOMPRESS %ldx%ld/%ldx%ld ZBITPIX %d: %s\n", sh[0], sh[1], sh[2],
                        sh[3], bitpix[b], tide_error_detail());
            CHECK(st == 0);
            uint32_t nelem, off;
            uint8_t d[8];
            get_desc(path, 0, &nelem, &off);
            be32put(d, nelem - 1);
            be32put(d + 4, off);
            patch_data(path, 0, d, 8);
            EXPECT_FORMAT(check_file(path), path, "tile 1: HCOMPRESS stream of");
            be32put(d, nelem);
            patch_data(path, 0, d, 8);
            CHECK(check_file(path) == 0);
            uint8_t code;
            read_data(path, table_bytes(path) + off + 25, &code, 1);
            code = (uint8_t)((code & 0x0f) | 0x50); /* first bit plane's format code: 5 */
            patch_data(path, table_bytes(path) + off + 25, &code, 1);
            EXPECT_FORMAT(check_file(path), path, "format code 5");
        }
    /* More bit planes than the pixels have bits. */
    CHECK(make_image(path, HCOMPRESS_1, 16, 64, 48, 16, 16, 0) == 0);
    uint32_t nelem, off;
    get_desc(path, 0, &nelem, &off);
    uint8_t planes = 200;
    patch_data(path, table_bytes(path) + off + 22, &planes, 1);
    EXPECT_FORMAT(check_file(path), path, "200 bit planes");
}

/* The reproducers of issue 22, where ../shared/reliability is present. */
static void test_reproducers(void) {
    char root[4096] = "";
    const char *env = getenv("TIDE_RELIABILITY_DIR");
    const char *data = getenv("TIDE_SHARED_DATA");
    struct stat sb;
    if (env)
        snprintf(root, sizeof root, "%s", env);
    else if (data) {
        snprintf(root, sizeof root, "%s/../reliability", data);
        if (stat(root, &sb))
            snprintf(root, sizeof root, "/work/shared/reliability");
    } else
        snprintf(root, sizeof root, "/work/shared/reliability");
    if (stat(root, &sb)) {
        printf("no %s: reproducer files skipped\n", root);
        return;
    }
    const char *bad[] = {"cmp_wrap0.fits", "cmp_wrap1.fits", "cfitsio_rdecomp_oob_read.fits"};
    for (int i = 0; i < 3; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", root, bad[i]);
        int st = check_file(p);
        printf("%s: %s\n", bad[i], st ? tide_error_detail() : "passes");
        EXPECT_FORMAT(st, bad[i], "");
    }
    char p[4200];
    snprintf(p, sizeof p, "%s/cfitsio_hdecompress_leak.fits", root);
    int st = check_file(p);
    printf("cfitsio_hdecompress_leak.fits: %s\n", st ? tide_error_detail() : "passes the check");
    EXPECT_FORMAT(st, "cfitsio_hdecompress_leak.fits", "format code");
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tide_fits_tiles_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_rice_roundtrip();
    test_rice_corrupt();
    test_valid_files();
    test_float_lossless_tile();
    test_patched_files();
    test_hcompress();
    test_reproducers();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return TIDE_TEST_RESULT();
}
