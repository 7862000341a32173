/* select_f64.c — selection on host arrays of doubles and floats (select_f64.h): one Hoare
 * selection, instantiated per element type. */
#include <stdlib.h>
#include <string.h>

#include "select_f64.h"

#define DEFINE_SELECT_KTH(name, T)                                                                 \
    T name(T *v, int64_t n, int64_t k) {                                                           \
        int64_t lo = 0, hi = n - 1;                                                                \
        while (hi > lo) {                                                                          \
            const int64_t mid = lo + (hi - lo) / 2;                                                \
            const T a = v[lo], b = v[mid], c = v[hi];                                              \
            const T pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b)); \
            int64_t i = lo, j = hi;                                                                \
            while (i <= j) {                                                                       \
                while (v[i] < pivot)                                                               \
                    i++;                                                                           \
                while (v[j] > pivot)                                                               \
                    j--;                                                                           \
                if (i <= j) {                                                                      \
                    const T t = v[i];                                                              \
                    v[i] = v[j], v[j] = t;                                                         \
                    i++, j--;                                                                      \
                }                                                                                  \
            }                                                                                      \
            if (k <= j)                                                                            \
                hi = j;                                                                            \
            else if (k >= i)                                                                       \
                lo = i;                                                                            \
            else                                                                                   \
                break; /* v[j+1..i) all equal the pivot */                                         \
        }                                                                                          \
        return v[k];                                                                               \
    }

DEFINE_SELECT_KTH(tide_select_kth_f64, double)
DEFINE_SELECT_KTH(tide_select_kth_f32, float)

/* Order a and b (a <= b after). */
#define CX(a, b)                                                                                   \
    do {                                                                                           \
        const float lo_ = (a) < (b) ? (a) : (b), hi_ = (a) < (b) ? (b) : (a);                      \
        (a) = lo_;                                                                                 \
        (b) = hi_;                                                                                 \
    } while (0)

/* Sort each triple (v0 v1 v2), (v3 v4 v5), (v6 v7 v8); the median of the nine is then the
 * median of the largest of the triples' minima, the median of their medians and the smallest
 * of their maxima (Paeth's network, Graphics Gems 1990: 19 exchanges). */
float tide_median9_f32(const float *v) {
    float p0 = v[0], p1 = v[1], p2 = v[2], p3 = v[3], p4 = v[4], p5 = v[5], p6 = v[6], p7 = v[7],
          p8 = v[8];
    CX(p1, p2);
    CX(p4, p5);
    CX(p7, p8);
    CX(p0, p1);
    CX(p3, p4);
    CX(p6, p7);
    CX(p1, p2);
    CX(p4, p5);
    CX(p7, p8);
    CX(p0, p3);
    CX(p5, p8);
    CX(p4, p7);
    CX(p3, p6);
    CX(p1, p4);
    CX(p2, p5);
    CX(p4, p7);
    CX(p4, p2);
    CX(p6, p4);
    CX(p4, p2);
    return p4;
}
#undef CX

double tide_median_f64(double *v, int64_t n) {
    const double hi = tide_select_kth_f64(v, n, n / 2);
    if (n % 2)
        return hi;
    /* after the selection v[0..n/2) holds the smaller half: its largest is the lower middle */
    double lo = v[0];
    for (int64_t i = 1; i < n / 2; i++)
        lo = v[i] > lo ? v[i] : lo;
    return 0.5 * (lo + hi);
}

/* Floyd & Rivest (1975, CACM 18, 165) bracketing, with the partition pass in parallel. */
double tide_median_f64_par(double *v, int64_t n, int threads) {
    enum { SAMPLE = 8192, MAXT = 64 };
    if (n < 16 * SAMPLE || threads < 2)
        return tide_median_f64(v, n);
    if (threads > MAXT)
        threads = MAXT;
    /* a deterministic spread sample (multiplicative hashing of the index) */
    double *smp = malloc(sizeof(double) * SAMPLE);
    if (!smp)
        return tide_median_f64(v, n);
    for (int64_t i = 0; i < SAMPLE; i++)
        smp[i] = v[(int64_t)(((uint64_t)i * 0x9E3779B97F4A7C15ull) % (uint64_t)n)];
    /* ranks k0 = lower middle, k1 = upper middle; bracket them by ~4 sigma of the sample's
     * rank error (sqrt(SAMPLE) / 2 per side) */
    const int64_t k1 = n / 2, k0 = n % 2 ? k1 : k1 - 1;
    const int64_t c = (int64_t)((double)k1 / (double)n * SAMPLE), d = 200;
    const int64_t slo = c - d < 0 ? 0 : c - d, shi = c + d >= SAMPLE ? SAMPLE - 1 : c + d;
    const double lo = tide_select_kth_f64(smp, SAMPLE, slo);
    const double hi = tide_select_kth_f64(smp, SAMPLE, shi);
    free(smp);
    int64_t below[MAXT], inside[MAXT];
    memset(below, 0, sizeof below);
    memset(inside, 0, sizeof inside);
    const int64_t chunk = (n + threads - 1) / threads;
    /* pass 1: counts per thread's chunk */
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int t = 0; t < threads; t++) {
        const int64_t a = t * chunk, b = a + chunk < n ? a + chunk : n;
        int64_t nb = 0, ni = 0;
        for (int64_t i = a; i < b; i++) {
            nb += v[i] < lo;
            ni += v[i] >= lo && v[i] <= hi;
        }
        below[t] = nb;
        inside[t] = ni;
    }
    int64_t nbelow = 0, ninside = 0, off[MAXT];
    for (int t = 0; t < threads; t++) {
        nbelow += below[t];
        off[t] = ninside;
        ninside += inside[t];
    }
    if (k0 < nbelow || k1 >= nbelow + ninside || ninside == 0)
        return tide_median_f64(v, n); /* the bracket missed (rare): plain selection */
    double *w = malloc(sizeof(double) * (size_t)ninside);
    if (!w)
        return tide_median_f64(v, n);
        /* pass 2: gather the bracket, each thread into its own slice */
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int t = 0; t < threads; t++) {
        const int64_t a = t * chunk, b = a + chunk < n ? a + chunk : n;
        int64_t o = off[t];
        for (int64_t i = a; i < b; i++)
            if (v[i] >= lo && v[i] <= hi)
                w[o++] = v[i];
    }
    const double m1 = tide_select_kth_f64(w, ninside, k1 - nbelow);
    double m0 = m1;
    if (k0 != k1) { /* the lower middle: the largest of w[0..k1-nbelow) after the selection */
        m0 = w[0];
        for (int64_t i = 1; i < k1 - nbelow; i++) /* k0 >= nbelow: not empty */
            m0 = w[i] > m0 ? w[i] : m0;
    }
    free(w);
    return k0 == k1 ? m1 : 0.5 * (m0 + m1);
}
