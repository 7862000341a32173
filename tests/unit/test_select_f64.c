/* test_select_f64.c — host selection (select_f64.h): the parallel bracketing median gives
 * exactly the value of the serial selection, on shapes that stress the bracket. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "compute/select_f64.h"
#include "tide_test.h"

static uint64_t rng = 88172645463325252ull;
static double urand(void) {
    return trng_unit(trng_xorshift64(&rng));
}

static double gauss(void) {
    const double u = urand() + 1e-300, v = urand();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy.median by sorting a copy */
static double median_sorted(const double *v, int64_t n) {
    double *c = malloc(sizeof(double) * (size_t)n);
    memcpy(c, v, sizeof(double) * (size_t)n);
    qsort(c, (size_t)n, sizeof *c, cmp);
    const double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

int main(void) {
    /* median of 9 by the network against selection: random values, many ties, +-0, Inf */
    for (int t = 0; t < 200000; t++) {
        float v[9], w[9];
        for (int k = 0; k < 9; k++) {
            const double u = urand();
            v[k] = t % 3 == 0 ? (float)floor(4 * u) : t % 3 == 1 ? (float)gauss() : 0.0f;
            if (t % 7 == 0 && k == t % 9)
                v[k] = t % 2 ? INFINITY : -0.0f;
        }
        memcpy(w, v, sizeof v);
        const float a = tide_median9_f32(v), b = tide_select_kth_f32(w, 9, 4);
        if (a != b)
            printf("median9 %g vs select %g\n", a, b);
        CHECK(a == b);
    }
    const int64_t sizes[] = {1000, 131071, 131072, 200001, 342000};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int shape = 0; shape < 6; shape++)
            for (int threads = 1; threads <= 8; threads *= 2) {
                const int64_t n = sizes[si];
                double *v = malloc(sizeof(double) * (size_t)n);
                for (int64_t i = 0; i < n; i++) {
                    switch (shape) {
                    case 0: v[i] = gauss(); break;                                 /* smooth */
                    case 1: v[i] = urand() < 0.1 ? 1e6 * urand() : gauss(); break; /* outliers */
                    case 2: v[i] = floor(5.0 * urand()); break;                    /* heavy ties */
                    case 3: v[i] = (double)i; break;                               /* sorted */
                    case 4: v[i] = (double)(n - i); break;                         /* reversed */
                    default: v[i] = 2.5; break;                                    /* constant */
                    }
                }
                const double want = median_sorted(v, n);
                double *cp = malloc(sizeof(double) * (size_t)n);
                memcpy(cp, v, sizeof(double) * (size_t)n);
                const double serial = tide_median_f64(cp, n);
                const double par = tide_median_f64_par(v, n, threads);
                CHECK(serial == want);
                CHECK(par == want);
                if (par != want)
                    fprintf(stderr, "n %lld shape %d threads %d: %.17g vs %.17g\n", (long long)n,
                            shape, threads, par, want);
                free(cp);
                free(v);
            }
    return TIDE_TEST_RESULT();
}
