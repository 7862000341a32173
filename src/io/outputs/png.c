/* png.c — greyscale PNG pictures of float images (png.h): stretch, then the parallel
 * encoder of png_encode.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "png_encode.h"
#include "png_grey.h"
#include "tide/outfile.h"
#include "tide/png.h"
#include "tide/status.h"

void tide_png_stretch_default(tide_png_stretch *s) {
    memset(s, 0, sizeof *s);
    s->kind = TIDE_STRETCH_LINEAR;
    s->limits = TIDE_LIMITS_ZSCALE;
    s->lo = s->hi = NAN;
    s->contrast = 0.25;
    s->lo_pct = 0.5;
    s->hi_pct = 99.5;
    s->softening = 0.05;
    s->scale = 1;
}

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Up to @p maxn finite pixels on a regular sampling lattice, sorted. */
static int64_t sample(const float *pix, int64_t w, int64_t h, int64_t stride, int64_t maxn,
                      float *out) {
    const int64_t npix = w * h;
    int64_t step = npix / maxn;
    if (step < 1)
        step = 1;
    int64_t n = 0;
    for (int64_t k = 0; k < npix && n < maxn; k += step) {
        const float v = pix[(k / w) * stride + k % w];
        if (isfinite(v))
            out[n++] = v;
    }
    if (n < maxn / 4 && step > 1) { /* mostly NaN on the lattice: take every finite pixel */
        n = 0;
        for (int64_t k = 0; k < npix && n < maxn; k++) {
            const float v = pix[(k / w) * stride + k % w];
            if (isfinite(v))
                out[n++] = v;
        }
    }
    qsort(out, (size_t)n, sizeof *out, cmp_float);
    return n;
}

/* IRAF zscale on a sorted sample (see png.h). */
static void zscale(const float *v, int64_t n, double contrast, double *lo, double *hi) {
    const double vmin = v[0], vmax = v[n - 1];
    const int64_t c = n / 2;
    const double med = (n % 2) ? v[c] : 0.5 * (v[c - 1] + (double)v[c]);
    unsigned char *bad = calloc((size_t)n, 1);
    double slope = 0, icpt = med;
    int64_t ngood = n;
    for (int it = 0; bad && it < 5 && ngood >= 5; it++) {
        double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0;
        for (int64_t i = 0; i < n; i++) {
            if (bad[i])
                continue;
            const double x = (double)(i - c);
            s0 += 1;
            s1 += x;
            s2 += x * x;
            t0 += v[i];
            t1 += x * v[i];
        }
        const double det = s0 * s2 - s1 * s1;
        if (!(det > 0))
            break;
        slope = (s0 * t1 - s1 * t0) / det;
        icpt = (s2 * t0 - s1 * t1) / det;
        double r2 = 0;
        for (int64_t i = 0; i < n; i++)
            if (!bad[i]) {
                const double r = v[i] - (icpt + slope * (double)(i - c));
                r2 += r * r;
            }
        const double sig = sqrt(r2 / s0);
        int64_t nrej = 0;
        for (int64_t i = 0; i < n; i++) {
            const double r = v[i] - (icpt + slope * (double)(i - c));
            if (!bad[i] && fabs(r) > 2.5 * sig) {
                bad[i] = 1;
                nrej++;
            }
        }
        ngood -= nrej;
        if (!nrej)
            break;
    }
    free(bad);
    if (ngood < n / 2 || !(contrast > 0)) {
        *lo = vmin;
        *hi = vmax;
        return;
    }
    slope /= contrast;
    *lo = fmax(vmin, med - slope * (double)c);
    *hi = fmin(vmax, med + slope * (double)(n - 1 - c));
}

void tide_png_limits(const float *pix, int64_t w, int64_t h, int64_t stride,
                     const tide_png_stretch *s, double *lo, double *hi) {
    tide_png_stretch d;
    if (!s) {
        tide_png_stretch_default(&d);
        s = &d;
    }
    *lo = 0;
    *hi = 1;
    const int64_t maxn =
        (s->limits == TIDE_LIMITS_MINMAX || s->limits == TIDE_LIMITS_SYMMETRIC_PCT) ? w * h : 1000;
    float *buf =
        (w > 0 && h > 0) ? malloc((size_t)(maxn < w * h ? maxn : w * h) * sizeof *buf) : NULL;
    if (!buf)
        return;
    const int64_t n = sample(pix, w, h, stride, maxn < w * h ? maxn : w * h, buf);
    if (n > 0) {
        switch (s->limits) {
        case TIDE_LIMITS_MINMAX:
            *lo = buf[0];
            *hi = buf[n - 1];
            break;
        case TIDE_LIMITS_PERCENTILE: {
            const double a = fmin(fmax(s->lo_pct, 0), 100), b = fmin(fmax(s->hi_pct, 0), 100);
            *lo = buf[(int64_t)floor(a / 100.0 * (double)(n - 1) + 0.5)];
            *hi = buf[(int64_t)floor(b / 100.0 * (double)(n - 1) + 0.5)];
            break;
        }
        case TIDE_LIMITS_SYMMETRIC_PCT: {
            for (int64_t i = 0; i < n; i++)
                buf[i] = fabsf(buf[i]);
            qsort(buf, (size_t)n, sizeof *buf, cmp_float);
            const double b = fmin(fmax(s->hi_pct, 0), 100);
            const double m = buf[(int64_t)floor(b / 100.0 * (double)(n - 1) + 0.5)];
            *lo = -m;
            *hi = m;
            break;
        }
        case TIDE_LIMITS_SYMMETRIC: {
            double a, b;
            zscale(buf, n, s->contrast, &a, &b);
            const double m = fmax(fabs(a), fabs(b));
            *lo = -m;
            *hi = m;
            break;
        }
        default: zscale(buf, n, s->contrast, lo, hi); break;
        }
    }
    free(buf);
    if (!(*hi > *lo)) {
        const double c = isfinite(*lo) ? *lo : 0;
        *lo = c - 0.5;
        *hi = c + 0.5;
    }
}

/* Grey level of one value. */
static unsigned char grey(float x, const tide_png_stretch *s, double lo, double hi) {
    if (!isfinite(x))
        return 0;
    double t;
    if (s->kind == TIDE_STRETCH_ASINH) {
        const double soft = fmax(s->softening, 1e-6) * (hi - lo);
        if (lo == -hi) /* symmetric limits: asinh about zero, zero mid-grey */
            t = 0.5 + 0.5 * asinh((double)x / soft) / asinh(hi / soft);
        else
            t = asinh(((double)x - lo) / soft) / asinh((hi - lo) / soft);
    } else {
        t = ((double)x - lo) / (hi - lo);
    }
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    return (unsigned char)floor(t * 255.0 + 0.5);
}

/* grey() as a tide_grey_fn (png_grey.h), for the finite pixels of a large picture. */
typedef struct {
    const tide_png_stretch *s;
    double lo, hi;
} grey_arg;

static unsigned char grey_of(float x, const void *arg) {
    const grey_arg *a = arg;
    return grey(x, a->s, a->lo, a->hi);
}

void tide_png_stamp_stretch(tide_png_stretch *s) {
    tide_png_stretch_default(s);
    s->kind = TIDE_STRETCH_ASINH;
    s->softening = 0.1;
    s->limits = TIDE_LIMITS_SYMMETRIC_PCT;
    s->hi_pct = 99.0;
}

/* Where write_rows puts the picture: a file (path) or memory (mem, memn). */
typedef struct {
    const char *path;
    unsigned char **mem;
    size_t *memn;
} png_sink;

/* Write 8-bit grey rows (row 0 at the top) into memory through a memory stream. */
static int write_rows_mem(const unsigned char *rows, int64_t w, int64_t h, unsigned char **out,
                          size_t *n) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return tide_error(TIDE_E_IO, "(png in memory): cannot open a memory stream");
    int st = tide_png_encode_grey(f, "(png in memory)", rows, w, h, 1);
    if (fclose(f) != 0 && st == TIDE_OK)
        st = tide_error(TIDE_E_IO, "(png in memory): write failed");
    if (st) {
        free(buf);
        return st;
    }
    *out = (unsigned char *)buf;
    *n = len;
    return TIDE_OK;
}

/* Write 8-bit grey rows (row 0 is drawn at the top) to @p path atomically. */
static int write_rows(const char *path, const unsigned char *rows, int64_t w, int64_t h) {
    if (!path || !*path)
        return tide_error(TIDE_E_INVAL, "no PNG file name given");
    if (w <= 0 || h <= 0 || w > 1000000 || h > 1000000)
        return tide_error(TIDE_E_INVAL, "%s: bad PNG size %lldx%lld", path, (long long)w,
                          (long long)h);
    tide_outfile of;
    int st = tide_outfile_begin(&of, path);
    FILE *f = NULL;
    if (!st)
        st = tide_outfile_fopen(&of, &f);
    if (st) {
        tide_outfile_abort(&of);
        return st;
    }
    /* the encoder's threads: the calling thread's OpenMP share (all cores unless the caller
     * writes several pictures side by side, as tide diff does) */
    const int nt = omp_get_max_threads() < 16 ? omp_get_max_threads() : 16;
    st = tide_png_encode_grey(f, path, rows, w, h, nt);
    if (fflush(f) != 0 && st == TIDE_OK)
        st = tide_error(TIDE_E_IO, "%s: write failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && st == TIDE_OK)
        st = tide_error(TIDE_E_IO, "%s: write failed: %s", path, strerror(errno));
    if (st == TIDE_OK)
        return tide_outfile_commit(&of);
    tide_outfile_abort(&of);
    return st;
}

/* A w × h image as grey rows into @p sink (a file or memory). */
static int draw_image(png_sink sink, const float *pix, int64_t w, int64_t h, int64_t stride,
                      const tide_png_stretch *s) {
    const char *path = sink.path ? sink.path : "(png in memory)";
    tide_png_stretch d;
    if (!s) {
        tide_png_stretch_default(&d);
        s = &d;
    }
    if (!pix || w <= 0 || h <= 0 || stride < w)
        return tide_error(TIDE_E_INVAL, "%s: no pixels to draw", path);
    const int sc = s->scale < 1 ? 1 : (s->scale > 64 ? 64 : s->scale);
    double lo = s->lo, hi = s->hi;
    if (!isfinite(lo) || !isfinite(hi) || !(hi > lo))
        tide_png_limits(pix, w, h, stride, s, &lo, &hi);
    const int64_t W = w * sc, H = h * sc;
    unsigned char *rows = malloc((size_t)(W * H));
    if (!rows)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory for a %lldx%lld picture", path,
                          (long long)W, (long long)H);
    /* The stretch (an asinh per pixel) was most of the work on a large frame: there, each
     * pixel's level is looked up in buckets of the map's 255 thresholds instead (png_grey.h,
     * the same bytes), rows in parallel. */
    const grey_arg ga = {s, lo, hi};
    tide_grey_table gt;
    tide_grey_index *gx = NULL;
    if (w * h >= (int64_t)1 << 18 && (gx = malloc(sizeof *gx))) {
        tide_grey_table_init(&gt, grey_of, &ga);
        tide_grey_index_init(gx, &gt);
    }
#pragma omp parallel for schedule(static) if (H >= 256)
    for (int64_t Y = 0; Y < H; Y++) {
        const float *src = pix + (h - 1 - Y / sc) * stride; /* FITS row 1 at the bottom */
        unsigned char *dst = rows + Y * W;
        if (gx && sc == 1)
            for (int64_t X = 0; X < W; X++)
                dst[X] = tide_grey_index_level(gx, src[X]);
        else
            for (int64_t X = 0; X < W; X++) {
                const float x = src[sc == 1 ? X : X / sc];
                dst[X] = gx ? tide_grey_index_level(gx, x) : grey(x, s, lo, hi);
            }
    }
    free(gx);
    const int st = sink.path ? write_rows(sink.path, rows, W, H)
                             : write_rows_mem(rows, W, H, sink.mem, sink.memn);
    free(rows);
    return st;
}

int tide_png_write_image(const char *path, const float *pix, int64_t w, int64_t h, int64_t stride,
                         const tide_png_stretch *s) {
    if (!path || !*path)
        return tide_error(TIDE_E_INVAL, "no PNG file name given");
    return draw_image((png_sink){path, NULL, NULL}, pix, w, h, stride, s);
}

int tide_png_encode_image(const float *pix, int64_t w, int64_t h, int64_t stride,
                          const tide_png_stretch *s, unsigned char **out, size_t *n) {
    if (!out || !n)
        return tide_error(TIDE_E_INVAL, "(png in memory): nowhere to put it");
    *out = NULL;
    *n = 0;
    if (w > 1000000 || h > 1000000)
        return tide_error(TIDE_E_INVAL, "(png in memory): bad PNG size %lldx%lld", (long long)w,
                          (long long)h);
    return draw_image((png_sink){NULL, out, n}, pix, w, h, stride, s);
}

int tide_png_write_mosaic(const char *path, int64_t n, int ncol, int stamp,
                          const float *const *tiles, const tide_png_stretch *s) {
    tide_png_stretch d;
    if (!s) {
        tide_png_stretch_default(&d);
        s = &d;
    }
    if (n < 1 || n > 4096 || ncol < 1 || ncol > 64 || stamp < 1 || stamp > 4096 || !tiles)
        return tide_error(TIDE_E_INVAL, "%s: bad mosaic layout (%lld rows, %d columns, stamp %d)",
                          path ? path : "(png)", (long long)n, ncol, stamp);
    const int sc = s->scale < 1 ? 1 : (s->scale > 64 ? 64 : s->scale);
    const int gap = 2, side = stamp * sc;
    const int64_t W = (int64_t)ncol * side + (int64_t)(ncol + 1) * gap;
    const int64_t H = n * side + (n + 1) * gap;
    unsigned char *rows = malloc((size_t)(W * H));
    if (!rows)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory for the mosaic", path);
    memset(rows, 128, (size_t)(W * H));
    for (int64_t i = 0; i < n; i++) {
        double lo = s->lo, hi = s->hi;
        if (!isfinite(lo) || !isfinite(hi) || !(hi > lo)) {
            const float *ref = tiles[i * ncol];
            if (ref)
                tide_png_limits(ref, stamp, stamp, stamp, s, &lo, &hi);
            else
                lo = 0, hi = 1;
        }
        for (int j = 0; j < ncol; j++) {
            const float *t = tiles[i * ncol + j];
            const int64_t x0 = gap + (int64_t)j * (side + gap), y0 = gap + i * (side + gap);
            /* each stamp pixel's level once, then magnified (an asinh per output pixel was
             * sc² times the work) */
            for (int v = 0; v < stamp; v++) {
                unsigned char *line = rows + (y0 + (int64_t)(stamp - 1 - v) * sc) * W + x0;
                for (int u = 0; u < stamp; u++)
                    memset(line + (int64_t)u * sc,
                           t ? grey(t[(int64_t)v * stamp + u], s, lo, hi) : 0, (size_t)sc);
                for (int r = 1; r < sc; r++)
                    memcpy(line + (int64_t)r * W, line, (size_t)side);
            }
        }
    }
    const int st = write_rows(path, rows, W, H);
    free(rows);
    return st;
}
