/* tile_test_image.h — the images the tile encoder's tests code (test_tile_encode.c against
 * fpack, test_gpu_tile_encode.c GPU against CPU): noise on a slope in the type of an encoder
 * kind (tile_encode_core.h); floats also carry every case the quantizer treats apart, in rows
 * that repeat every 50: NaNs, a constant row (not quantized), an all-NaN row, zeros, an
 * infinity, values near FLT_MAX (the noise sums overflow to inf - inf = NaN) and tiny ones;
 * with @p scatter, NaNs, infinities and zeros at random places too. */
#ifndef TIDE_TILE_TEST_IMAGE_H
#define TIDE_TILE_TEST_IMAGE_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/test_rng.h"
#include "io/fits/tile_encode_core.h"

/* A standard normal deviate (sum of 12 uniforms). */
static inline double tile_test_gauss(uint64_t *rng) {
    double s = 0;
    for (int i = 0; i < 12; i++)
        s += trng_unit(trng_splitmix64(rng));
    return s - 6.0;
}

/* A @p w x @p h image of @p kind (malloc'd, 4 bytes a pixel at most). */
static inline void *tile_test_image(int kind, int64_t w, int64_t h, uint64_t *rng, int scatter) {
    void *img = malloc((size_t)(w * h) * 4);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const double g = tile_test_gauss(rng), v = 1000 + 3 * x + 0.5 * y + 8 * g;
            const size_t i = (size_t)(y * w + x);
            if (kind == TIDE_ENC_U8) {
                ((uint8_t *)img)[i] = (uint8_t)((int)v % 256);
            } else if (kind == TIDE_ENC_I16) {
                ((int16_t *)img)[i] = (int16_t)(v * 10 - 20000);
            } else if (kind == TIDE_ENC_U16) {
                ((uint16_t *)img)[i] = (uint16_t)(v * 30);
            } else if (kind == TIDE_ENC_I32) {
                ((int32_t *)img)[i] = (int32_t)(v * 1e5) - 50000000;
            } else {
                float f = (float)v;
                const int64_t r = y % 50;
                const uint64_t u = scatter ? trng_splitmix64(rng) % 1000 : 1000;
                if ((r == 3 && x % 17 == 4) || r == 6 || u < 5)
                    f = NAN;
                else if ((r == 8 && x == 2) || u < 6)
                    f = u % 2 ? -INFINITY : INFINITY;
                else if (r == 7 || u < 9)
                    f = 0.f;
                else if (r == 5)
                    f = 42.5f;
                else if (r == 9)
                    f = 3.0e38f + 1e36f * (float)g;
                else if (r == 10)
                    f = (float)(v * 1e-30);
                ((float *)img)[i] = f;
            }
        }
    return img;
}

#endif
