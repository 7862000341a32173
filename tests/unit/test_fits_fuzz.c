/* test_fits_fuzz.c — robustness: headers with random bytes changed, and files cut at random
 * lengths, must never crash the reader; each read either succeeds or fails with a detail that
 * names the file. Deterministic (fixed seed); run it under ASan for memory errors. */
#define _GNU_SOURCE
#include <fitsio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/test_rng.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
    return trng_splitmix64(&rng_state);
}

/* A small multi-extension file: empty primary, a float image, an int16 scaled image with
 * BLANK, a RICE-compressed image and a binary table. */
static size_t make_seed(const char *path, unsigned char **bytes) {
    fitsfile *f = NULL;
    int st = 0;
    unlink(path);
    fits_create_diskfile(&f, path, &st);
    fits_create_img(f, 8, 0, NULL, &st);
    long nx[2] = {23, 17};
    float v[23 * 17];
    for (int i = 0; i < 23 * 17; i++)
        v[i] = (float)i * 0.25f;
    fits_create_img(f, FLOAT_IMG, 2, nx, &st);
    fits_write_img(f, TFLOAT, 1, 23 * 17, v, &st);
    fits_create_img(f, SHORT_IMG, 2, nx, &st);
    double bs = 2.0, bz = 5.0;
    long blank = -1;
    fits_write_key(f, TDOUBLE, "BSCALE", &bs, NULL, &st);
    fits_write_key(f, TDOUBLE, "BZERO", &bz, NULL, &st);
    fits_write_key(f, TLONG, "BLANK", &blank, NULL, &st);
    fits_write_img(f, TFLOAT, 1, 23 * 17, v, &st);
    fits_set_compression_type(f, RICE_1, &st);
    fits_create_img(f, FLOAT_IMG, 2, nx, &st);
    fits_write_img(f, TFLOAT, 1, 23 * 17, v, &st);
    fits_set_compression_type(f, 0, &st);
    char *tt[] = {"A", "B"}, *tf[] = {"3D", "8A"};
    fits_create_tbl(f, BINARY_TBL, 4, 2, tt, tf, NULL, "CAT", &st);
    fits_close_file(f, &st);
    if (st) {
        fprintf(stderr, "seed file: cfitsio %d\n", st);
        exit(1);
    }
    FILE *fp = fopen(path, "rb");
    fseek(fp, 0, SEEK_END);
    size_t n = (size_t)ftell(fp);
    rewind(fp);
    *bytes = malloc(n);
    if (fread(*bytes, 1, n, fp) != n)
        exit(1);
    fclose(fp);
    return n;
}

static void write_bytes(const char *path, const unsigned char *b, size_t n) {
    FILE *fp = fopen(path, "wb");
    fwrite(b, 1, n, fp);
    fclose(fp);
}

/* Every entry point on @p path: no crash; a failure names the file. */
static int exercise(const char *path) {
    int failures = 0;
    const char *specs_fmt[] = {"%s", "%s[1]", "%s[2]", "%s[3]", "%s[2][3:9,2:5]"};
    for (int s = 0; s < 5; s++) {
        char spec[600];
        snprintf(spec, sizeof spec, specs_fmt[s], path);
        tide_image im;
        tide_header h;
        int st = tide_fits_read_image(NULL, spec, &im, &h);
        if (st == 0) {
            tide_image_free(NULL, &im);
            tide_header_free(&h);
        } else if (st > 0 || !strstr(tide_error_detail(), path)) {
            fprintf(stderr, "read_image(%s) = %d without naming the file: %s\n", spec, st,
                    tide_error_detail());
            failures++;
        }
    }
    tide_fits_hdu *list = NULL;
    int n = 0;
    int st = tide_fits_inventory(path, &list, &n);
    if (st == 0)
        free(list);
    else if (!strstr(tide_error_detail(), path)) {
        fprintf(stderr, "inventory = %d without naming the file: %s\n", st, tide_error_detail());
        failures++;
    }
    tide_table t;
    st = tide_fits_read_table(path, &t, NULL);
    if (st == 0)
        tide_table_free(&t);
    else if (!strstr(tide_error_detail(), path)) {
        fprintf(stderr, "read_table = %d without naming the file: %s\n", st, tide_error_detail());
        failures++;
    }
    return failures;
}

int main(void) {
    char dir[] = "/tmp/tide_fits_fuzz_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char seed_path[300], path[300];
    snprintf(seed_path, sizeof seed_path, "%s/seed.fits", dir);
    snprintf(path, sizeof path, "%s/mutant.fits", dir);
    unsigned char *seed = NULL;
    size_t n = make_seed(seed_path, &seed);
    CHECK(exercise(seed_path) == 0);
    unsigned char *b = malloc(n);
    /* Header cards hold the structure: change bytes in the first 80 columns of cards, with a
     * bias to digits, '=', quotes and blanks (the characters a value is made of). */
    const char alphabet[] = "0123456789 -+=.'ETFXAD/";
    int bad = 0, ok = 0;
    for (int iter = 0; iter < 400; iter++) {
        memcpy(b, seed, n);
        int edits = 1 + (int)(next() % 4);
        for (int e = 0; e < edits; e++) {
            size_t block = (next() % (n / 2880)) * 2880;
            size_t pos = block + next() % 800; /* the first ten cards of some block */
            b[pos] = (unsigned char)alphabet[next() % (sizeof alphabet - 1)];
        }
        write_bytes(path, b, n);
        bad += exercise(path);
    }
    /* cut at random lengths, and at every block boundary */
    for (int iter = 0; iter < 100; iter++) {
        size_t cut = next() % n;
        write_bytes(path, seed, cut);
        bad += exercise(path);
    }
    for (size_t cut = 0; cut < n; cut += 2880) {
        write_bytes(path, seed, cut);
        bad += exercise(path);
        ok++;
    }
    CHECK(bad == 0);
    CHECK(ok > 3);
    free(b);
    free(seed);
    unlink(path);
    unlink(seed_path);
    rmdir(dir);
    return TIDE_TEST_RESULT();
}
