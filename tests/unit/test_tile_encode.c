/* test_tile_encode.c — tide's RICE_1 tile encoder (tile_encode.h) against cfitsio's:
 *  - rice_encode.h round-trips through tide's bounded decoder for BYTEPIX 1, 2, 4, several
 *    block sizes and value patterns, within tide_rice_encode_bound;
 *  - images of BITPIX 8, 16 (signed and unsigned), 32 and -32 (noise, NaNs, constant and
 *    all-NaN rows, zeros, odd sizes; row tiles, 2-D tiles, tiles narrower than 9 pixels) are
 *    coded by tide and packed by fpack (-q<seed> 4 for floats, the same ZDITHER0): every tile
 *    stream is byte for byte fpack's, ZSCALE / ZZERO equal, the same tiles stored losslessly
 *    with the same bytes once inflated (the gzip streams differ: libdeflate, not zlib);
 *  - tide's files are read back by funpack, tide's decoder and astropy to the same pixels
 *    (tile_encode_astropy.py): integers bit for bit with the input, floats bit for bit with
 *    funpack of fpack's file;
 *  - tide_fits_write_image_as(TIDE_FITS_RICE) of an image with MASK and VAR reads back with
 *    tide_fits_read_image, the mask exactly.
 * Skips (77) the fpack/funpack parts when libcfitsio-bin is missing. */
#define _DEFAULT_SOURCE /* realpath */
#include <fitsio.h>
#include <libdeflate.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fits/rice_decode.h"
#include "io/fits/rice_encode.h"
#include "io/fits/tile_encode.h"
#include "tide/fits.h"
#include "tide/status.h"
#include "common/tile_test_image.h"
#include "tide_test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    return (uint32_t)(trng_splitmix64(&rng_state) >> 32);
}
static double gauss(void) {
    return tile_test_gauss(&rng_state);
}

static void rice_roundtrips(void) {
    const int64_t sizes[] = {1, 2, 31, 32, 33, 100, 4097};
    const int blocks[] = {32, 16, 7};
    for (int bp = 1; bp <= 4; bp *= 2)
        for (int pat = 0; pat < 5; pat++)
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
                for (size_t bi = 0; bi < sizeof blocks / sizeof *blocks; bi++) {
                    const int64_t n = sizes[si];
                    uint32_t *a = malloc(sizeof *a * (size_t)n), *b = malloc(4 * (size_t)n);
                    const int64_t cap = tide_rice_encode_bound(n, bp, blocks[bi]);
                    uint8_t *s = malloc((size_t)cap);
                    const uint32_t mask = bp == 4 ? 0xffffffffu : (1u << (8 * bp)) - 1;
                    for (int64_t i = 0; i < n; i++) {
                        uint32_t v = 0;
                        switch (pat) {
                        case 0: v = 12345; break;                                   /* constant */
                        case 1: v = 1000 + (uint32_t)(int32_t)(gauss() * 5); break; /* noise */
                        case 2: v = rnd() ^ (rnd() << 21); break;                   /* full range */
                        case 3: v = (i / 40) % 2 ? 7 : 90000; break;                /* steps */
                        case 4: v = i % 2 ? 0 : 0xffffffffu; break;                 /* extremes */
                        }
                        a[i] = v & mask;
                    }
                    const int64_t len = tide_rice_encode(a, n, bp, blocks[bi], s);
                    size_t used = 0;
                    CHECK(len <= cap);
                    CHECK(tide_rice_decode_used(s, (size_t)len, bp, blocks[bi], n, b, &used) == 0);
                    CHECK(used == (size_t)len);
                    int same = 1;
                    for (int64_t i = 0; i < n; i++) {
                        const uint32_t got = bp == 1   ? ((uint8_t *)b)[i]
                                             : bp == 2 ? ((uint16_t *)b)[i]
                                                       : b[i];
                        same &= got == a[i];
                    }
                    if (!same)
                        fprintf(stderr,
                                "round trip differs: bytepix %d pattern %d n %lld "
                                "block %d\n",
                                bp, pat, (long long)n, blocks[bi]);
                    CHECK(same);
                    free(a);
                    free(b);
                    free(s);
                }
}

static const int bitpix_of[] = {BYTE_IMG, SHORT_IMG, USHORT_IMG, LONG_IMG, FLOAT_IMG};
static const int type_of[] = {TBYTE, TSHORT, TUSHORT, TINT, TFLOAT};

/* An uncompressed FITS file of the image (cfitsio), fpack's input. */
static void write_plain(const char *path, int kind, const void *img, int64_t w, int64_t h) {
    fitsfile *f;
    int st = 0;
    long naxes[2] = {(long)w, (long)h};
    unlink(path);
    fits_create_diskfile(&f, path, &st);
    fits_create_img(f, bitpix_of[kind], 2, naxes, &st);
    fits_write_img(f, type_of[kind], 1, (LONGLONG)(w * h), (void *)img, &st);
    fits_close_file(f, &st);
    CHECK(st == 0);
}

/* tide's compressed file of the image: an empty primary and the coded HDU. */
static void write_tide(const char *path, const tide_tile_encoded *e, const void *img) {
    fitsfile *f;
    int st = 0;
    unlink(path);
    fits_create_diskfile(&f, path, &st);
    fits_create_img(f, BYTE_IMG, 0, NULL, &st);
    CHECK(st == 0);
    CHECK_OK(tide_tile_write_hdu(f, e, img, NULL, NULL, NULL, 1, path));
    fits_close_file(f, &st);
    CHECK(st == 0);
}

/* The pixels of HDU @p hdu of @p path as floats (cfitsio, NaN for nulls). */
static float *read_floats(const char *path, int hdu, int64_t n) {
    fitsfile *f;
    int st = 0, any = 0, type;
    float nan = NAN, *v = malloc(sizeof *v * (size_t)n);
    fits_open_diskfile(&f, path, READONLY, &st);
    fits_movabs_hdu(f, hdu + 1, &type, &st);
    fits_read_img(f, TFLOAT, 1, (LONGLONG)n, &nan, v, &any, &st);
    fits_close_file(f, &st);
    CHECK(st == 0);
    return v;
}

static int same_bits(const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, 4) && !(isnan(a[i]) && isnan(b[i]))) {
            fprintf(stderr, "pixel %lld: %.9g vs %.9g\n", (long long)i, a[i], b[i]);
            return 0;
        }
    return 1;
}

/* The inflated GZIP_COMPRESSED_DATA of row @p row (column @p col) of the open table @p f. */
static uint8_t *lossless_tile(fitsfile *f, int col, int64_t row, size_t *n) {
    LONGLONG len = 0, off = 0;
    int st = 0;
    fits_read_descriptll(f, col, row, &len, &off, &st);
    uint8_t *z = malloc((size_t)len + 1), *raw = NULL;
    fits_read_col(f, TBYTE, col, row, 1, len, NULL, z, NULL, &st);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    size_t cap = 1 << 20;
    raw = malloc(cap);
    *n = 0;
    if (st || libdeflate_gzip_decompress(d, z, (size_t)len, raw, cap, n) != LIBDEFLATE_SUCCESS)
        *n = 0;
    libdeflate_free_decompressor(d);
    free(z);
    return raw;
}

/* Compare tide's coded tiles with those of fpack's file @p fz, tile by tile; lossless tiles
 * by their inflated bytes, in tide's file @p mine. */
static void compare_tiles(const tide_tile_encoded *e, const char *fz, const char *mine,
                          const char *what) {
    fitsfile *f;
    int st = 0, type;
    fits_open_diskfile(&f, fz, READONLY, &st);
    fits_movabs_hdu(f, 2, &type, &st);
    CHECK(st == 0);
    int ncol = 0, gzcol = 0;
    fits_get_num_cols(f, &ncol, &st);
    if (fits_get_colnum(f, CASEINSEN, "GZIP_COMPRESSED_DATA", &gzcol, &st)) {
        st = 0;
        gzcol = 0;
        fits_clear_errmsg();
    }
    int64_t same = 0, lossless = 0;
    const tide_tile_enc_plan *p = &e->plan;
    for (int64_t k = 0; k < p->ntiles; k++) {
        LONGLONG len = 0, off = 0;
        fits_read_descriptll(f, 1, k + 1, &len, &off, &st);
        const tide_tile_enc_out *o = &e->out[k];
        if (len == 0) { /* fpack stored the tile losslessly */
            CHECK(gzcol > 0);
            if (o->status != TIDE_TILE_ENC_LOSSLESS)
                fprintf(stderr, "%s: tile %lld: fpack lossless, tide quantized\n", what,
                        (long long)k + 1);
            CHECK(o->status == TIDE_TILE_ENC_LOSSLESS);
            fitsfile *m;
            int mst = 0, mt;
            fits_open_diskfile(&m, mine, READONLY, &mst);
            fits_movabs_hdu(m, 2, &mt, &mst);
            size_t na = 0, nb = 0;
            uint8_t *a = lossless_tile(f, gzcol, k + 1, &na), *b = lossless_tile(m, 4, k + 1, &nb);
            fits_close_file(m, &mst);
            CHECK(na > 0 && na == nb && !memcmp(a, b, na));
            free(a);
            free(b);
            lossless++;
            continue;
        }
        uint8_t *ref = malloc((size_t)len);
        fits_read_col(f, TBYTE, 1, k + 1, 1, len, NULL, ref, NULL, &st);
        CHECK(st == 0);
        int ok = o->status == TIDE_TILE_ENC_RICE && o->nbytes == (int64_t)len &&
                 !memcmp(ref, e->slots + k * p->cap, (size_t)len);
        if (p->kind == TIDE_ENC_F32) {
            double zs = 0, zz = 0;
            fits_read_col(f, TDOUBLE, 2, k + 1, 1, 1, NULL, &zs, NULL, &st);
            fits_read_col(f, TDOUBLE, 3, k + 1, 1, 1, NULL, &zz, NULL, &st);
            if (zs != o->scale || zz != o->zero)
                fprintf(stderr, "%s: tile %lld: ZSCALE %.17g / %.17g, ZZERO %.17g / %.17g\n", what,
                        (long long)k + 1, o->scale, zs, o->zero, zz);
            ok &= zs == o->scale && zz == o->zero;
        }
        if (!ok)
            fprintf(stderr, "%s: tile %lld differs from fpack's (%lld / %lld bytes)\n", what,
                    (long long)k + 1, (long long)o->nbytes, (long long)len);
        same += ok;
        free(ref);
    }
    fits_close_file(f, &st);
    fprintf(stderr, "%s: %lld of %lld tiles byte for byte fpack's, %lld lossless as fpack's\n",
            what, (long long)same, (long long)p->ntiles, (long long)lossless);
    CHECK(same + lossless == p->ntiles);
}

/* One image through tide and fpack, read back by funpack, tide and astropy. */
static void against_fpack_image(int kind, void *img, int64_t w, int64_t h, int64_t t1, int64_t t2,
                                int seed) {
    char what[128], plain[64], fz[64], mine[64], un_ref[64], un_mine[64], cmd[1024];
    snprintf(what, sizeof what, "kind %d %lldx%lld tiles %lldx%lld", kind, (long long)w,
             (long long)h, (long long)t1, (long long)t2);
    static int ncase;
    ncase++;
    snprintf(plain, sizeof plain, "enc_%02d_plain.fits", ncase);
    snprintf(fz, sizeof fz, "enc_%02d_ref.fits.fz", ncase);
    snprintf(mine, sizeof mine, "enc_%02d_tide.fits", ncase);
    snprintf(un_ref, sizeof un_ref, "enc_%02d_ref_un.fits", ncase);
    snprintf(un_mine, sizeof un_mine, "enc_%02d_tide_un.fits", ncase);
    write_plain(plain, kind, img, w, h);
    char tiles[64] = "";
    if (t1)
        snprintf(tiles, sizeof tiles, "-t %lld,%lld", (long long)t1, (long long)t2);
    char q[32] = "";
    if (kind == TIDE_ENC_F32)
        snprintf(q, sizeof q, "-q%d 4", seed);
    unlink(fz);
    snprintf(cmd, sizeof cmd, "fpack -C %s %s -O %s %s", q, tiles, fz, plain);
    CHECK(system(cmd) == 0);

    tide_tile_enc_plan p;
    tide_tile_encoded e;
    CHECK_OK(tide_tile_enc_plan_init(&p, kind, w, h, w, t1, t2, seed));
    CHECK_OK(tide_tile_encoded_alloc(&e, &p));
    CHECK_OK(tide_tile_encode_cpu(&e, img, 2));
    write_tide(mine, &e, img);
    compare_tiles(&e, fz, mine, what);

    /* funpack of both files; tide's decoder and astropy on tide's file */
    unlink(un_ref);
    unlink(un_mine);
    snprintf(cmd, sizeof cmd, "funpack -C -O %s %s && funpack -C -O %s %s", un_ref, fz, un_mine,
             mine);
    CHECK(system(cmd) == 0);
    const int64_t n = w * h;
    float *ref = read_floats(un_ref, 0, n), *got = read_floats(un_mine, 0, n);
    CHECK(same_bits(ref, got, n));
    if (kind != TIDE_ENC_F32) { /* lossless: the input itself */
        float *in = read_floats(plain, 0, n);
        CHECK(same_bits(in, got, n));
        free(in);
    }
    /* tide's decoder: the same pixels from both files (and the input for integers). Not
     * compared with funpack for floats: funpack 4.2 misplaces the pixels of quantized tiles
     * spanning rows that hold a null (fits.h), and tide's decoder does not. */
    tide_image im, im_ref;
    CHECK_OK(tide_fits_read_image(NULL, mine, &im, NULL));
    CHECK_OK(tide_fits_read_image(NULL, fz, &im_ref, NULL));
    CHECK(im.width == w && im.height == h && im.stride == w);
    CHECK(same_bits(im_ref.pix, im.pix, n));
    if (kind != TIDE_ENC_F32)
        CHECK(same_bits(got, im.pix, n));
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &im_ref);
    const char *py = getenv("TIDE_PYTHON"), *srcdir = getenv("TIDE_SOURCE_DIR");
    if (srcdir) {
        snprintf(cmd, sizeof cmd, "%s '%s/tests/unit/tile_encode_astropy.py' %s %s",
                 py ? py : "/usr/bin/python3", srcdir, mine, fz);
        CHECK(system(cmd) == 0);
    }
    tide_tile_encoded_free(&e);
    free(ref);
    free(got);
    free(img);
}

/* A generated image through against_fpack_image. */
static void against_fpack(int kind, int64_t w, int64_t h, int64_t t1, int64_t t2, int seed) {
    against_fpack_image(kind, tile_test_image(kind, w, h, &rng_state, 0), w, h, t1, t2, seed);
}

/* A real frame: the TESS difference image of ../shared/data (funpacked first). */
static void real_frame(void) {
    const char *root = getenv("TIDE_SHARED_DATA");
    char src[4096], cmd[8400];
    snprintf(src, sizeof src, "%s/compressed/tess_diff_rice_dither1.fits.fz", root ? root : ".");
    if (!root || access(src, R_OK)) {
        fprintf(stderr, "%s: not present (skipped)\n", src);
        return;
    }
    unlink("tess_plain.fits");
    snprintf(cmd, sizeof cmd, "funpack -C -O tess_plain.fits '%s'", src);
    CHECK(system(cmd) == 0);
    tide_image im;
    CHECK_OK(tide_fits_read_image(NULL, "tess_plain.fits", &im, NULL));
    if (!im.pix)
        return;
    float *pix = malloc(sizeof *pix * (size_t)(im.width * im.height));
    for (int64_t y = 0; y < im.height; y++)
        memcpy(pix + y * im.width, im.pix + y * im.stride, sizeof *pix * (size_t)im.width);
    against_fpack_image(TIDE_ENC_F32, pix, im.width, im.height, 0, 0, 4242);
    tide_image_free(NULL, &im);
}

/* tide_fits_write_image_as(TIDE_FITS_RICE): pixels, MASK and VAR back through tide. */
static void image_with_planes(void) {
    tide_image im;
    const int64_t w = 301, h = 77;
    CHECK(tide_image_alloc(NULL, &im, w, h, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR) == 0);
    float *src = tile_test_image(TIDE_ENC_F32, w, h, &rng_state, 0);
    for (int64_t i = 0; i < w * h; i++) {
        im.pix[i] = src[i];
        im.var[i] = 64.f + (float)(i % 7);
        im.mask[i] =
            isfinite(src[i]) ? (uint16_t)(rnd() % 3 == 0 ? rnd() & 0x3fe : 0) : TIDE_MASK_NODATA;
    }
    tide_header hdr;
    tide_header_init(&hdr);
    tide_header_set_str(&hdr, "OBJECT", "rice test", NULL);
    CHECK_OK(tide_fits_write_image_as("planes.fits", &im, &hdr, TIDE_FITS_RICE));
    tide_image back;
    tide_header bh;
    CHECK_OK(tide_fits_read_image(NULL, "planes.fits", &back, &bh));
    CHECK(back.mask && back.var);
    CHECK(!memcmp(back.mask, im.mask, sizeof *im.mask * (size_t)(w * h)));
    char obj[80] = "";
    CHECK_OK(tide_header_get_str(&bh, "OBJECT", obj, sizeof obj));
    CHECK(!strcmp(obj, "rice test"));
    /* the variance is quantized: within half a quantum of ~noise / 4; a constant row of 7
     * values repeating is smooth, so equal to a few ulps is not expected: bound it loosely */
    double worst = 0;
    for (int64_t i = 0; i < w * h; i++)
        worst = fmax(worst, fabs(back.var[i] - im.var[i]));
    fprintf(stderr, "planes: variance within %.3g\n", worst);
    CHECK(worst < 4.0);
    /* and funpack gives tide_fits_write_image's layout, which tide reads with the same planes */
    unlink("planes_un.fits");
    if (system("funpack -C -O planes_un.fits planes.fits") == 0) {
        tide_image un;
        CHECK_OK(tide_fits_read_image(NULL, "planes_un.fits", &un, NULL));
        CHECK(un.mask && un.var);
        CHECK(!memcmp(un.mask, im.mask, sizeof *im.mask * (size_t)(w * h)));
        CHECK(same_bits(un.pix, back.pix, w * h));
        CHECK(same_bits(un.var, back.var, w * h));
        tide_image_free(NULL, &un);
    }
    tide_header_free(&bh);
    tide_header_free(&hdr);
    tide_image_free(NULL, &back);
    tide_image_free(NULL, &im);
    free(src);
}

/* Work in a directory of our own: the test writes a dozen files by relative name, and a run
 * from the source tree must not leave them there. */
static char workdir[64] = "/tmp/tide_test_tile_encode_XXXXXX";

int main(void) {
    const char *root = getenv("TIDE_SHARED_DATA");
    char abs_root[4096];
    if (root && realpath(root, abs_root))
        setenv("TIDE_SHARED_DATA", abs_root, 1);
    if (!mkdtemp(workdir) || chdir(workdir) != 0) {
        perror(workdir);
        return 1;
    }
    rice_roundtrips();
    if (system("command -v fpack >/dev/null && command -v funpack >/dev/null") != 0) {
        fprintf(stderr, "fpack/funpack not installed (libcfitsio-bin): skipped\n");
        rmdir(workdir);
        return 77;
    }
    for (int kind = TIDE_ENC_U8; kind <= TIDE_ENC_F32; kind++)
        against_fpack(kind, 157, 203, 0, 0, 7);
    against_fpack(TIDE_ENC_F32, 157, 203, 23, 17, 1234); /* 2-D tiles, ragged edges */
    against_fpack(TIDE_ENC_F32, 7, 60, 7, 5, 9999);      /* narrower than 9: one noise row */
    against_fpack(TIDE_ENC_I16, 50, 41, 13, 6, 1);
    against_fpack(TIDE_ENC_F32, 1, 30, 0, 0, 3); /* one-pixel tiles: all lossless */
    real_frame();
    image_with_planes();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
    if (system(cmd) != 0)
        fprintf(stderr, "%s: not removed\n", workdir);
    return TIDE_TEST_RESULT();
}
