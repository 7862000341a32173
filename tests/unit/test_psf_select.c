/* test_psf_select.c — psf_select_kth, the order statistic under the reference stack's
 * medians (psf_stack.c), against a full sort: for every k of random arrays (continuous
 * values, values with many ties, sorted, reversed, constant, two values, one outlier) the
 * value must be the sorted array's k-th bit for bit, the array a permutation of the input
 * with a[0..k) <= a[k], and a crafted constant array must not take quadratic time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "reduction/psf/psf_internal.h"
#include "tide/timer.h"
#include "tide_test.h"

static uint64_t rng_state = 777;
static double urand(void) {
    return trng_unit(trng_xorshift64s(&rng_state));
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { MAXN = 300 };

/* Every k of v[0..n) against the sorted copy. */
static void check_all_k(const double *v, int n) {
    double sorted[MAXN], a[MAXN], b[MAXN];
    memcpy(sorted, v, sizeof(double) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof(double), cmp_double);
    for (int k = 0; k < n; k++) {
        memcpy(a, v, sizeof(double) * (size_t)n);
        const double got = psf_select_kth(a, n, k);
        CHECK(memcmp(&got, &sorted[k], sizeof got) == 0);
        CHECK(memcmp(&a[k], &sorted[k], sizeof got) == 0);
        int below = 1;
        for (int i = 0; i < k; i++)
            below &= a[i] <= a[k];
        CHECK(below);
        memcpy(b, a, sizeof(double) * (size_t)n); /* still the same multiset */
        qsort(b, (size_t)n, sizeof(double), cmp_double);
        CHECK(memcmp(b, sorted, sizeof(double) * (size_t)n) == 0);
    }
}

static void test_shapes(void) {
    double v[MAXN];
    const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 16, 44, 45, 115, 128, 299};
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int n = sizes[s];
        for (int shape = 0; shape < 8; shape++) {
            for (int i = 0; i < n; i++) {
                switch (shape) {
                case 0: v[i] = urand() - 0.5; break;                      /* continuous */
                case 1: v[i] = (double)(int)(urand() * 4.0); break;       /* many ties */
                case 2: v[i] = i; break;                                  /* sorted */
                case 3: v[i] = n - i; break;                              /* reversed */
                case 4: v[i] = 0.125; break;                              /* constant */
                case 5: v[i] = i % 2 ? 1.0 : -1.0; break;                 /* two values */
                case 6: v[i] = i == n / 3 ? 1e30 : 1e-3 * urand(); break; /* an outlier */
                default: v[i] = i < n / 2 ? 0.0 : urand(); break;         /* half zeros */
                }
            }
            check_all_k(v, n);
        }
    }
}

/* A constant array of 100000 values: with the equal-value sweep, a few sweeps; a plain
 * Lomuto partition would take n^2 / 2 = 5e9 steps (seconds). */
static void test_constant_is_linear(void) {
    const int n = 100000;
    double *a = malloc(sizeof(double) * (size_t)n);
    CHECK(a != NULL);
    if (!a)
        return;
    for (int i = 0; i < n; i++)
        a[i] = 3.0;
    const double t0 = tide_now();
    const double got = psf_select_kth(a, n, n / 2);
    const double dt = tide_now() - t0;
    CHECK(got == 3.0);
    CHECK(dt < 0.1);
    free(a);
}

int main(void) {
    test_shapes();
    test_constant_is_linear();
    return TIDE_TEST_RESULT();
}
