/* test_png.c — PNG pictures (png.h): valid files of the right size (magnification, mosaic
 * layout), FITS row 1 drawn at the bottom, NaN black, the stretch limits (zscale on Gaussian
 * noise brackets the median within a few sigma, min/max, symmetric), and failures that leave
 * nothing behind. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <png.h>

#include "tide/png.h"
#include "tide/status.h"
#include "tide_test.h"

/* Read a grey PNG back with libpng: its size and (optionally) its pixels. */
static int read_png(const char *path, int *w, int *h, unsigned char **px) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(p);
    if (setjmp(png_jmpbuf(p))) {
        png_destroy_read_struct(&p, &info, NULL);
        fclose(f);
        return -1;
    }
    png_init_io(p, f);
    png_read_info(p, info);
    *w = (int)png_get_image_width(p, info);
    *h = (int)png_get_image_height(p, info);
    const int ok =
        png_get_color_type(p, info) == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(p, info) == 8;
    if (px) {
        *px = malloc((size_t)*w * (size_t)*h);
        for (int y = 0; y < *h; y++)
            png_read_row(p, *px + (size_t)y * *w, NULL);
    }
    png_destroy_read_struct(&p, &info, NULL);
    fclose(f);
    return ok ? 0 : -1;
}

int main(void) {
    char dir[] = "/tmp/tide_test_png.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    const int W = 37, H = 23;
    float *im = malloc(sizeof(float) * W * H);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            im[y * W + x] = (float)(x + 100 * y);
    im[0] = NAN; /* pixel (0, 0): bottom-left of the picture, black */

    tide_png_stretch s;
    tide_png_stretch_default(&s);
    s.limits = TIDE_LIMITS_MINMAX;
    s.scale = 3;
    snprintf(path, sizeof path, "%s/a.png", dir);
    CHECK_OK(tide_png_write_image(path, im, W, H, W, &s));
    int w = 0, h = 0;
    unsigned char *px = NULL;
    CHECK(read_png(path, &w, &h, &px) == 0);
    CHECK(w == 3 * W && h == 3 * H);
    if (px && w == 3 * W && h == 3 * H) {
        CHECK(px[(size_t)(h - 1) * w] == 0); /* NaN at FITS (1,1), bottom-left */
        CHECK(px[(size_t)w - 1] == 255);     /* the largest value: top-right */
        CHECK(px[(size_t)(h - 1) * w + 3] < px[(size_t)(h - 1) * w + 60]); /* grows with x */
        CHECK(px[(size_t)(h - 4) * w + 3] < px[3]); /* and with y (upwards) */
    }
    free(px);
    /* in memory: the same bytes as the file (the review page's stamps) */
    {
        unsigned char *mem = NULL;
        size_t n = 0;
        CHECK_OK(tide_png_encode_image(im, W, H, W, &s, &mem, &n));
        FILE *f = fopen(path, "rb");
        unsigned char *file = malloc(n + 1);
        const size_t got = f && file ? fread(file, 1, n + 1, f) : 0;
        if (f)
            fclose(f);
        CHECK(n > 8 && got == n && mem && !memcmp(file, mem, n));
        free(file);
        free(mem);
        CHECK(tide_png_encode_image(im, 0, H, W, &s, &mem, &n) == TIDE_E_INVAL && !mem);
    }
    /* the stamps' stretch (tide diff's candidates.png and the review page) */
    tide_png_stretch ss;
    tide_png_stamp_stretch(&ss);
    CHECK(ss.kind == TIDE_STRETCH_ASINH && ss.limits == TIDE_LIMITS_SYMMETRIC_PCT);
    CHECK(ss.hi_pct == 99.0 && ss.softening == 0.1 && ss.scale == 1);

    /* limits */
    double lo, hi;
    tide_png_limits(im, W, H, W, &s, &lo, &hi);
    CHECK_CLOSE(lo, 1.0, 1e-9); /* NaN skipped */
    CHECK_CLOSE(hi, (double)(W - 1 + 100 * (H - 1)), 1e-9);
    const int n = 200 * 200;
    float *noise = malloc(sizeof(float) * n);
    uint64_t st = 88172645463325252ull;
    for (int i = 0; i < n; i += 2) {
        double u[2];
        for (int k = 0; k < 2; k++) {
            st ^= st << 13, st ^= st >> 7, st ^= st << 17;
            u[k] = ((double)(st >> 11) + 0.5) / 9007199254740992.0;
        }
        noise[i] = (float)(10.0 + 2.0 * sqrt(-2 * log(u[0])) * cos(6.283185307 * u[1]));
        noise[i + 1] = (float)(10.0 + 2.0 * sqrt(-2 * log(u[0])) * sin(6.283185307 * u[1]));
    }
    tide_png_stretch z;
    tide_png_stretch_default(&z);
    tide_png_limits(noise, 200, 200, 200, &z, &lo, &hi);
    printf("zscale of N(10, 2): [%.3f, %.3f]\n", lo, hi);
    CHECK(lo < 10 && hi > 10 && lo > 10 - 12 && hi < 10 + 12 && hi - lo > 2);
    z.limits = TIDE_LIMITS_SYMMETRIC_PCT;
    z.hi_pct = 100;
    tide_png_limits(noise, 200, 200, 200, &z, &lo, &hi);
    CHECK(lo == -hi && hi > 10);

    /* a mosaic of 4 rows of 3 tiles, one empty */
    const float *tiles[12];
    for (int i = 0; i < 12; i++)
        tiles[i] = noise + i * 121;
    tiles[5] = NULL;
    tide_png_stretch m;
    tide_png_stretch_default(&m);
    m.scale = 4;
    snprintf(path, sizeof path, "%s/m.png", dir);
    CHECK_OK(tide_png_write_mosaic(path, 4, 3, 11, tiles, &m));
    CHECK(read_png(path, &w, &h, NULL) == 0);
    CHECK(w == 3 * 44 + 4 * 2 && h == 4 * 44 + 5 * 2);

    /* a frame large enough for many compressed pieces (png_encode.c: ~1 MB of rows each):
     * every pixel back through libpng, against the linear stretch computed here */
    {
        const int BW = 1999, BH = 1501;
        float *big = malloc(sizeof(float) * BW * BH);
        uint64_t r = 12345;
        for (int i = 0; i < BW * BH; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            big[i] = (float)(r % 1000); /* noise: compresses poorly, like a difference */
        }
        tide_png_stretch b;
        tide_png_stretch_default(&b);
        b.lo = 0.0;
        b.hi = 999.0;
        snprintf(path, sizeof path, "%s/b.png", dir);
        CHECK_OK(tide_png_write_image(path, big, BW, BH, BW, &b));
        unsigned char *bp = NULL;
        CHECK(read_png(path, &w, &h, &bp) == 0);
        CHECK(w == BW && h == BH);
        int64_t bad = 0;
        for (int y = 0; bp && y < BH; y++)
            for (int x = 0; x < BW; x++) {
                const double t = (double)big[(size_t)(BH - 1 - y) * BW + x] / 999.0;
                bad += bp[(size_t)y * BW + x] != (unsigned char)floor(t * 255.0 + 0.5);
            }
        CHECK(bad == 0);
        free(bp);
        free(big);
    }

    /* failures: no directory, bad sizes; nothing left behind */
    snprintf(path, sizeof path, "%s/missing/x.png", dir);
    CHECK(tide_png_write_image(path, im, W, H, W, &s) == TIDE_E_IO);
    CHECK(strstr(tide_error_detail(), "x.png") != NULL);
    CHECK(tide_png_write_image(path, im, 0, H, W, &s) == TIDE_E_INVAL);
    CHECK(tide_png_write_mosaic(path, 0, 3, 11, tiles, &m) == TIDE_E_INVAL);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 3", dir);
    CHECK(system(cmd) == 0); /* a.png, m.png, b.png and no temporary file */
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    free(im);
    free(noise);
    return TIDE_TEST_RESULT();
}
