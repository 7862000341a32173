/* test_fft.c — good sizes, the plan cache, and in-place R2C/C2R against a naive float64 DFT. */
#include <stdint.h>

#include "tide/tide.h"
#include "tide_test.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static int is_good(int64_t n) {
    for (int p = 2; p <= 7; p++)
        while (n % p == 0)
            n /= p;
    return n == 1;
}

static void test_good_size(void) {
    CHECK(tide_fft_good_size(0) == 2);
    CHECK(tide_fft_good_size(1) == 2);
    CHECK(tide_fft_good_size(2) == 2);
    CHECK(tide_fft_good_size(11) == 12);
    CHECK(tide_fft_good_size(97) == 98);
    CHECK(tide_fft_good_size(4097 + 14) == 4116);
    CHECK(tide_fft_good_size(14200 + 14) == 14336);
    /* exhaustive: smallest good number >= n */
    for (int64_t n = 2; n < 3000; n++) {
        int64_t g = tide_fft_good_size(n);
        CHECK(g >= n && is_good(g));
        for (int64_t m = n; m < g; m++)
            CHECK(!is_good(m));
    }
}

/* Forward transform of a batch against the definition X[v][u] = sum x[y][x] e^{-2 pi i (...)} */
static void test_dft(tide_ctx *ctx, int64_t nx, int64_t ny, int batch) {
    int64_t pitch = tide_fft_row_pitch(nx), cw = tide_fft_complex_width(nx);
    int64_t per = ny * pitch;
    float *buf;
    CHECK_OK(tide_fft_buffer_alloc(ctx, per * batch, &buf));
    double *x = malloc(sizeof(double) * (size_t)(nx * ny * batch));
    uint32_t s = 12345;
    for (int64_t i = 0; i < nx * ny * batch; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (double)(s >> 8) / 16777216.0 - 0.5;
    }
    for (int b = 0; b < batch; b++)
        for (int64_t y = 0; y < ny; y++)
            for (int64_t i = 0; i < pitch; i++)
                buf[b * per + y * pitch + i] = i < nx ? (float)x[(b * ny + y) * nx + i] : 0.0f;
    tide_fft_plan *fwd, *inv, *again;
    CHECK_OK(tide_fft_plan_get(ctx, TIDE_FFT_R2C, nx, ny, batch, &fwd));
    CHECK_OK(tide_fft_plan_get(ctx, TIDE_FFT_C2R, nx, ny, batch, &inv));
    CHECK_OK(tide_fft_plan_get(ctx, TIDE_FFT_R2C, nx, ny, batch, &again));
    CHECK(again == fwd);
    CHECK_OK(tide_fft_execute(ctx, fwd, buf));
    double maxerr = 0.0;
    for (int b = 0; b < batch; b++)
        for (int64_t v = 0; v < ny; v++)
            for (int64_t u = 0; u < cw; u++) {
                double re = 0.0, im = 0.0;
                for (int64_t y = 0; y < ny; y++)
                    for (int64_t i = 0; i < nx; i++) {
                        double a = -2.0 * M_PI * ((double)(u * i) / nx + (double)(v * y) / ny);
                        re += x[(b * ny + y) * nx + i] * cos(a);
                        im += x[(b * ny + y) * nx + i] * sin(a);
                    }
                const float *z = buf + b * per + v * pitch + 2 * u;
                double e = fabs(z[0] - re) + fabs(z[1] - im);
                if (e > maxerr)
                    maxerr = e;
            }
    CHECK(maxerr < 1e-5 * (double)(nx * ny));
    CHECK_OK(tide_fft_execute(ctx, inv, buf));
    double rterr = 0.0;
    for (int b = 0; b < batch; b++)
        for (int64_t y = 0; y < ny; y++)
            for (int64_t i = 0; i < nx; i++) {
                double e = fabs(buf[b * per + y * pitch + i] / (double)(nx * ny) -
                                x[(b * ny + y) * nx + i]);
                if (e > rterr)
                    rterr = e;
            }
    CHECK(rterr < 1e-5);
    if (maxerr >= 1e-5 * (double)(nx * ny) || rterr >= 1e-5)
        fprintf(stderr, "dft %lld x %lld batch %d: err %g roundtrip %g\n", (long long)nx,
                (long long)ny, batch, maxerr, rterr);
    free(x);
    tide_fft_buffer_free(ctx, buf);
}

int main(void) {
    test_good_size();
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    o.threads = 2;
    tide_ctx *ctx;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return TIDE_TEST_RESULT();
    test_dft(ctx, 8, 6, 1);
    test_dft(ctx, 7, 5, 2);  /* odd sizes, batch */
    test_dft(ctx, 1, 3, 1);  /* a single column */
    test_dft(ctx, 13, 1, 3); /* a single row */
    CHECK(tide_fft_cache_size(ctx) == 8);
    CHECK_OK(tide_fft_set_effort(ctx, TIDE_FFT_MEASURE));
    test_dft(ctx, 10, 9, 1);
    CHECK(tide_fft_cache_size(ctx) == 10);
    tide_fft_cache_clear(ctx);
    CHECK(tide_fft_cache_size(ctx) == 0);
    tide_fft_plan *p;
    CHECK(tide_fft_plan_get(ctx, TIDE_FFT_R2C, 0, 4, 1, &p) == TIDE_E_INVAL);
    CHECK(tide_fft_set_effort(ctx, (tide_fft_effort)7) == TIDE_E_INVAL);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
