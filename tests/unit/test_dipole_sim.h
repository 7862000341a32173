/* test_dipole_sim.h — random simulated dipoles and point sources with known truth for the
 * dipole-fit tests: the stamp maker of src/difference/dipole/dipole_sim.h (shared with tide bench
 * --diff) plus the statistics the tests use. */
#ifndef TEST_DIPOLE_SIM_H
#define TEST_DIPOLE_SIM_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "difference/dipole/dipole_sim.h"
#include "tide/tide.h"

static int dsim_cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median and RMS of the finite values of v[0..n-1] (sorted in place); *nf their number. */
static inline void dsim_stats(double *v, int64_t n, double *median, double *rms, int64_t *nf) {
    int64_t m = 0;
    double s2 = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(v[i])) {
            v[m++] = v[i];
            s2 += v[i] * v[i];
        }
    qsort(v, (size_t)m, sizeof *v, dsim_cmp);
    *median = m ? (m & 1 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2])) : NAN;
    *rms = m ? sqrt(s2 / m) : NAN;
    *nf = m;
}

#endif
