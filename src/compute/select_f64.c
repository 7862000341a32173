/* select_f64.c — selection on host arrays of doubles and floats (select_f64.h): one Hoare
 * selection, instantiated per element type. */
#include "compute/select_f64.h"

#define DEFINE_SELECT_KTH(name, T)                                                            \
    T name(T *v, int64_t n, int64_t k) {                                                      \
        int64_t lo = 0, hi = n - 1;                                                           \
        while (hi > lo) {                                                                     \
            const int64_t mid = lo + (hi - lo) / 2;                                           \
            const T a = v[lo], b = v[mid], c = v[hi];                                         \
            const T pivot =                                                                   \
                a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));        \
            int64_t i = lo, j = hi;                                                           \
            while (i <= j) {                                                                  \
                while (v[i] < pivot)                                                          \
                    i++;                                                                      \
                while (v[j] > pivot)                                                          \
                    j--;                                                                      \
                if (i <= j) {                                                                 \
                    const T t = v[i];                                                         \
                    v[i] = v[j], v[j] = t;                                                    \
                    i++, j--;                                                                 \
                }                                                                             \
            }                                                                                 \
            if (k <= j)                                                                       \
                hi = j;                                                                       \
            else if (k >= i)                                                                  \
                lo = i;                                                                       \
            else                                                                              \
                break; /* v[j+1..i) all equal the pivot */                                    \
        }                                                                                     \
        return v[k];                                                                          \
    }

DEFINE_SELECT_KTH(tide_select_kth_f64, double)
DEFINE_SELECT_KTH(tide_select_kth_f32, float)

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
