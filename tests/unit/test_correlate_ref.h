/* test_correlate_ref.h — random frames and kernels, and the naive float64 direct correlation
 * that FFT correlation is checked against (unit and GPU tests). */
#ifndef TEST_CORRELATE_REF_H
#define TEST_CORRELATE_REF_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/test_rng.h"
#include "tide/tide.h"

static double corr_uniform(uint64_t *s) {
    return trng_unit(trng_splitmix64(s));
}

/* Fill a host image: sky 100 + noise + a few bright points; NaN at rate @p nan, mask bit
 * TIDE_MASK_BAD at rate @p masked (when the image has a mask). */
static void corr_fill(tide_image *im, uint64_t seed, double nan, double masked) {
    uint64_t s = seed;
    for (int64_t y = 0; y < im->height; y++)
        for (int64_t x = 0; x < im->width; x++) {
            double v = 100.0 + 10.0 * (corr_uniform(&s) - 0.5);
            if (corr_uniform(&s) < 0.01)
                v += 5000.0 * corr_uniform(&s);
            if (corr_uniform(&s) < nan)
                v = NAN;
            im->pix[y * im->stride + x] = (float)v;
            if (im->mask)
                im->mask[y * im->stride + x] = corr_uniform(&s) < masked ? TIDE_MASK_BAD : 0;
        }
}

static void corr_kernel(float *k, int64_t kw, int64_t kh, uint64_t seed) {
    uint64_t s = seed;
    for (int64_t i = 0; i < kw * kh; i++)
        k[i] = (float)(corr_uniform(&s) - 0.3);
}

static int64_t corr_reflect_ref(int64_t i, int64_t n) {
    while (i < 0 || i >= n) /* mirror with the edge repeated, as many times as needed */
        i = i < 0 ? -1 - i : 2 * n - 1 - i;
    return i;
}

/* Direct correlation (or convolution) in float64; NaN and masked pixels count as 0. */
static void corr_direct(const tide_image *in, const float *k, int64_t kw, int64_t kh, int reflect,
                        int convolve, uint16_t bits, double *out) {
    int64_t rx = kw / 2, ry = kh / 2, w = in->width, h = in->height;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            double acc = 0.0;
            for (int64_t j = -ry; j <= ry; j++)
                for (int64_t i = -rx; i <= rx; i++) {
                    int64_t xx = x + i, yy = y + j;
                    if (xx < 0 || xx >= w || yy < 0 || yy >= h) {
                        if (!reflect)
                            continue;
                        xx = corr_reflect_ref(xx, w);
                        yy = corr_reflect_ref(yy, h);
                    }
                    double v = in->pix[yy * in->stride + xx];
                    if (!isfinite(v) || (in->mask && (in->mask[yy * in->stride + xx] & bits)))
                        continue;
                    double kv =
                        convolve ? k[(ry - j) * kw + (rx - i)] : k[(j + ry) * kw + (i + rx)];
                    acc += kv * v;
                }
            out[y * w + x] = acc;
        }
}

/* The scale results are compared at: max |finite pixel| * sum |kernel|. */
static double corr_scale(const tide_image *in, const float *k, int64_t kw, int64_t kh) {
    double m = 0.0, s = 0.0;
    for (int64_t y = 0; y < in->height; y++)
        for (int64_t x = 0; x < in->width; x++) {
            double v = fabs(in->pix[y * in->stride + x]);
            if (isfinite(v) && v > m)
                m = v;
        }
    for (int64_t i = 0; i < kw * kh; i++)
        s += fabs(k[i]);
    return m * s > 0 ? m * s : 1.0;
}

#endif
