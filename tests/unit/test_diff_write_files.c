/* test_diff_write_files.c — tide_diff_write's outputs, read back by other means than tide's:
 * the PNGs decoded by a small independent decoder (chunks and CRCs checked, the IDATs
 * inflated as one zlib stream by zlib, every PNG filter undone) and every pixel compared with
 * the stretch written out again here (png.c's grey()), for a frame large enough that the
 * writer deflates it in many pieces with its run-length strategy and looks the levels up in
 * buckets; and difference.fits byte for byte the file cfitsio's own pixel writer makes of
 * the same image (rows written one by one through fits_write_pixll, as for a strided image),
 * MASK and VAR planes included, and so is the image written alone on three threads (the
 * plane writer's conversion beside its writes); and a replaced run leaves nothing behind. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "tide/diff.h"
#include "tide/fits.h"
#include "tide/png.h"
#include "tide/status.h"
#include "tide_test.h"

static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = len > 0 ? malloc((size_t)len) : NULL;
    *n = b && fread(b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    if (!*n) {
        free(b);
        return NULL;
    }
    return b;
}

/* The size of files @p a and @p b when they hold the same bytes, else -1. */
static int64_t same_bytes(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    unsigned char *fa = read_all(a, &na), *fb = read_all(b, &nb);
    const int same = fa && fb && na == nb && !memcmp(fa, fb, na);
    printf("%s: %zu bytes, %s %zu\n", b, nb, same ? "the same as" : "NOT the same as", na);
    free(fa);
    free(fb);
    return same ? (int64_t)na : -1;
}

static int paeth(int a, int b, int c) {
    const int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
}

/* An 8-bit greyscale, non-interlaced PNG into *px (w × h, row 0 at the top): -1 when it is
 * not one, or any chunk's CRC, the zlib stream or a filter type is wrong. */
static int decode_png(const char *path, int *w, int *h, unsigned char **px) {
    size_t n = 0;
    unsigned char *b = read_all(path, &n);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    int ok = b && n > 8 && !memcmp(b, sig, 8);
    unsigned char *z = ok ? malloc(n) : NULL; /* the IDATs' data, concatenated */
    size_t nz = 0, p = 8;
    int got_end = 0;
    *w = *h = 0;
    while (ok && p + 12 <= n && !got_end) {
        const uint32_t len = get32(b + p);
        if (p + 12 + (size_t)len > n) {
            ok = 0;
            break;
        }
        const unsigned char *type = b + p + 4, *data = b + p + 8;
        ok = (uint32_t)crc32(crc32(0, type, 4), data, len) == get32(data + len);
        if (!memcmp(type, "IHDR", 4))
            ok = ok && len == 13 && data[8] == 8 && data[9] == 0 && data[12] == 0,
            *w = (int)get32(data), *h = (int)get32(data + 4);
        else if (!memcmp(type, "IDAT", 4))
            memcpy(z + nz, data, len), nz += len;
        else if (!memcmp(type, "IEND", 4))
            got_end = 1;
        p += 12 + (size_t)len;
    }
    ok = ok && got_end && *w > 0 && *h > 0;
    const size_t line = (size_t)*w + 1;
    uLongf nraw = ok ? (uLongf)(line * (size_t)*h) : 0;
    unsigned char *raw = ok ? malloc(nraw + 1) : NULL;
    if (ok) { /* one zlib stream, inflated to exactly the filtered rows */
        uLongf got = nraw + 1;
        ok = raw && uncompress(raw, &got, z, (uLong)nz) == Z_OK && got == nraw;
    }
    *px = ok ? malloc((size_t)*w * (size_t)*h) : NULL;
    for (int y = 0; ok && y < *h; y++) {
        const unsigned char *f = raw + (size_t)y * line;
        unsigned char *o = *px + (size_t)y * (size_t)*w;
        const unsigned char *up = y ? o - *w : NULL;
        for (int x = 0; x < *w && ok; x++) {
            const int a = x ? o[x - 1] : 0, u = up ? up[x] : 0, c = x && up ? up[x - 1] : 0;
            const int pred = f[0] == 0   ? 0
                             : f[0] == 1 ? a
                             : f[0] == 2 ? u
                             : f[0] == 3 ? (a + u) / 2
                                         : paeth(a, u, c);
            ok = f[0] <= 4;
            o[x] = (unsigned char)(f[1 + x] + pred);
        }
    }
    if (!ok) {
        free(*px);
        *px = NULL;
    }
    free(raw);
    free(z);
    free(b);
    return ok ? 0 : -1;
}

/* png.c's grey(), written out again. */
static unsigned char grey(float x, const tide_png_stretch *s, double lo, double hi) {
    if (!isfinite(x))
        return 0;
    double t;
    if (s->kind == TIDE_STRETCH_ASINH) {
        const double soft = fmax(s->softening, 1e-6) * (hi - lo);
        if (lo == -hi)
            t = 0.5 + 0.5 * asinh((double)x / soft) / asinh(hi / soft);
        else
            t = asinh(((double)x - lo) / soft) / asinh((hi - lo) / soft);
    } else {
        t = ((double)x - lo) / (hi - lo);
    }
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    return (unsigned char)floor(t * 255.0 + 0.5);
}

/* The pixels of @p path, decoded, that differ from @p pix (w × h, FITS row 1 at the bottom)
 * under stretch @p s with its limits as the writer takes them; -1 when it cannot be read. */
static int64_t frame_png_misses(const char *path, const float *pix, int w, int h,
                                const tide_png_stretch *s) {
    int pw = 0, ph = 0;
    unsigned char *px = NULL;
    if (decode_png(path, &pw, &ph, &px) || pw != w || ph != h) {
        free(px);
        return -1;
    }
    double lo, hi;
    tide_png_limits(pix, w, h, w, s, &lo, &hi);
    int64_t bad = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            bad += px[(size_t)y * w + x] != grey(pix[(size_t)(h - 1 - y) * w + x], s, lo, hi);
    free(px);
    return bad;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double unit(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static double gauss(void) {
    return sqrt(-2 * log(unit())) * cos(6.283185307179586 * unit());
}

int main(void) {
    char dir[] = "/tmp/tide_test_diff_write.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    /* 4.3 MB of rows a picture: many deflate pieces, the run-length strategy, the buckets */
    const int W = 2101, H = 2050, K = 9, S = 21, NST = 3;
    const size_t np = (size_t)W * H;
    tide_diff_result r;
    memset(&r, 0, sizeof r);
    tide_header_init(&r.header);
    r.diff.width = r.matched.width = W;
    r.diff.height = r.matched.height = H;
    r.diff.stride = r.matched.stride = W;
    r.diff.location = r.matched.location = TIDE_HOST;
    r.diff.pix = malloc(np * sizeof(float));
    r.diff.var = malloc(np * sizeof(float));
    r.diff.mask = malloc(np * sizeof(uint16_t));
    r.matched.pix = malloc(np * sizeof(float));
    for (size_t i = 0; i < np; i++) {
        const double sky = 1000 + 0.01 * (double)(i % W);
        r.matched.pix[i] = (float)(sky + 30 * gauss() + (unit() < 0.001 ? 5e4 * unit() : 0));
        r.diff.pix[i] = (float)(12 * gauss() + (unit() < 0.0005 ? 3e3 * (unit() - 0.5) : 0));
        r.diff.var[i] = (float)(144 + unit());
        r.diff.mask[i] = (uint16_t)(unit() < 0.01 ? 1u << (int)(unit() * 16) : 0);
    }
    for (int y = 100; y < 140; y++) /* a blank band (NaN: black) */
        for (int x = 0; x < W; x++)
            r.diff.pix[(size_t)y * W + x] = r.matched.pix[(size_t)y * W + x] = NAN;
    CHECK_OK(tide_header_set_str(&r.header, "DIFFSCI", "sci.fits", "science frame"));
    CHECK_OK(tide_header_set_dbl(&r.header, "KSUM", 0.98, "kernel sum"));
    r.kernel_w = K;
    r.kernel = malloc(sizeof(float) * K * K);
    for (int i = 0; i < K * K; i++)
        r.kernel[i] = (float)exp(-0.1 * ((i % K - 4) * (i % K - 4) + (i / K - 4) * (i / K - 4)));
    tide_table_init(&r.cands);
    CHECK_OK(tide_table_add_column(&r.cands, "SNR", TIDE_COL_F64, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_resize(&r.cands, NST));
    for (int i = 0; i < NST; i++)
        tide_table_f64(&r.cands, "SNR")[i] = 10.0 - i;
    r.stamp = S;
    r.nstamps = NST;
    r.stamps = malloc(sizeof(float) * NST * S * S);
    r.models = malloc(sizeof(float) * NST * S * S);
    for (int i = 0; i < NST * S * S; i++) {
        const int u = i % S - S / 2, v = (i / S) % S - S / 2;
        r.models[i] = (float)(400 * exp(-(u * u + v * v) / 8.0) * (i / (S * S) + 1));
        r.stamps[i] = (float)(r.models[i] + 10 * gauss());
    }

    char out[300], p[400];
    snprintf(out, sizeof out, "%s/run", dir);
    CHECK_OK(tide_diff_write(out, &r, 0));

    /* the pictures, every pixel */
    tide_png_stretch s;
    tide_png_stretch_default(&s);
    s.kind = TIDE_STRETCH_ASINH;
    s.limits = TIDE_LIMITS_PERCENTILE;
    s.lo_pct = 1.0;
    s.hi_pct = 99.9;
    s.softening = 0.02;
    snprintf(p, sizeof p, "%s/matched.png", out);
    int64_t bad = frame_png_misses(p, r.matched.pix, W, H, &s);
    printf("matched.png: %lld pixels differ\n", (long long)bad);
    CHECK(bad == 0);
    tide_png_stretch_default(&s);
    s.limits = TIDE_LIMITS_SYMMETRIC;
    snprintf(p, sizeof p, "%s/difference.png", out);
    bad = frame_png_misses(p, r.diff.pix, W, H, &s);
    printf("difference.png: %lld pixels differ\n", (long long)bad);
    CHECK(bad == 0);
    { /* kernel.png: min/max, magnified to 256 / K */
        int kw = 0, kh = 0;
        unsigned char *px = NULL;
        snprintf(p, sizeof p, "%s/kernel.png", out);
        CHECK(decode_png(p, &kw, &kh, &px) == 0);
        const int sc = 256 / K;
        CHECK(kw == K * sc && kh == K * sc);
        tide_png_stretch_default(&s);
        s.limits = TIDE_LIMITS_MINMAX;
        double lo, hi;
        tide_png_limits(r.kernel, K, K, K, &s, &lo, &hi);
        bad = 0;
        for (int y = 0; px && y < kh; y++)
            for (int x = 0; x < kw; x++)
                bad += px[(size_t)y * kw + x] !=
                       grey(r.kernel[(K - 1 - y / sc) * K + x / sc], &s, lo, hi);
        CHECK(px && bad == 0);
        free(px);
    }
    { /* candidates.png: a row per candidate of stamp, model, residual (6 x, 2-pixel gaps,
       * mid-grey between), each row on its stamp's symmetric limits */
        int cw = 0, ch = 0;
        unsigned char *px = NULL;
        snprintf(p, sizeof p, "%s/candidates.png", out);
        CHECK(decode_png(p, &cw, &ch, &px) == 0);
        const int side = 6 * S, gap = 2;
        CHECK(cw == 3 * side + 4 * gap && ch == NST * side + (NST + 1) * gap);
        tide_png_stamp_stretch(&s);
        bad = 0;
        float *res = malloc(sizeof(float) * S * S);
        for (int i = 0; px && cw == 3 * side + 4 * gap && i < NST; i++) {
            const float *a = r.stamps + (size_t)i * S * S, *m = r.models + (size_t)i * S * S;
            for (int k = 0; k < S * S; k++)
                res[k] = a[k] - m[k];
            const float *t[3] = {a, m, res};
            double lo, hi;
            tide_png_limits(a, S, S, S, &s, &lo, &hi);
            for (int j = 0; j < 3; j++)
                for (int Y = 0; Y < side; Y++)
                    for (int X = 0; X < side; X++) {
                        const int py = gap + i * (side + gap) + Y, pxx = gap + j * (side + gap) + X;
                        bad += px[(size_t)py * cw + pxx] !=
                               grey(t[j][(S - 1 - Y / 6) * S + X / 6], &s, lo, hi);
                    }
            bad += px[(size_t)(i * (side + gap)) * cw + 5] != 128; /* a gap */
        }
        free(res);
        printf("candidates.png: %lld pixels differ\n", (long long)bad);
        CHECK(px && bad == 0);
        free(px);
    }

    /* difference.fits: the bytes of cfitsio's row-by-row writer for the same image */
    tide_image strided = r.diff;
    const int SW = W + 3;
    strided.stride = SW;
    strided.pix = malloc((size_t)SW * H * sizeof(float));
    strided.var = malloc((size_t)SW * H * sizeof(float));
    strided.mask = malloc((size_t)SW * H * sizeof(uint16_t));
    for (int y = 0; y < H; y++) {
        memcpy(strided.pix + (size_t)y * SW, r.diff.pix + (size_t)y * W, W * sizeof(float));
        memcpy(strided.var + (size_t)y * SW, r.diff.var + (size_t)y * W, W * sizeof(float));
        memcpy(strided.mask + (size_t)y * SW, r.diff.mask + (size_t)y * W, W * sizeof(uint16_t));
    }
    char ref[400], p3[400];
    snprintf(ref, sizeof ref, "%s/reference.fits", dir);
    CHECK_OK(tide_fits_write_image(ref, &strided, &r.header));
    snprintf(p, sizeof p, "%s/difference.fits", out);
    CHECK(same_bytes(ref, p) > (int64_t)np * 10);
    /* and the image written alone on three threads (tide_diff_write gives its FITS one
     * thread on a small machine): block by block, each converted while the one before is
     * being written */
    const int had = omp_get_max_threads();
    omp_set_num_threads(3);
    snprintf(p3, sizeof p3, "%s/threads3.fits", dir);
    CHECK_OK(tide_fits_write_image(p3, &r.diff, &r.header));
    omp_set_num_threads(had);
    CHECK(same_bytes(ref, p3) > 0);
    unlink(p3);
    free(strided.pix);
    free(strided.var);
    free(strided.mask);

    /* the run's directory holds the seven files and nothing else */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 7", out);
    CHECK(system(cmd) == 0);

    /* the run replaced: the same files; the previous run, removed after the call, is gone
     * once the next write begins (it waits for the removal) */
    CHECK_OK(tide_diff_write(out, &r, 0));
    CHECK(same_bytes(ref, p) > 0);
    char out2[320];
    snprintf(out2, sizeof out2, "%s/run2", dir);
    CHECK_OK(tide_diff_write(out2, &r, 0));
    snprintf(cmd, sizeof cmd,
             "test \"$(ls -A '%s')\" = \"$(printf 'reference.fits\\nrun\\nrun2')\"", dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    free(r.diff.pix); /* the planes are the test's (owns 0): tide_diff_result_free leaves them */
    free(r.diff.var);
    free(r.diff.mask);
    free(r.matched.pix);
    tide_diff_result_free(&r);
    return TIDE_TEST_RESULT();
}
