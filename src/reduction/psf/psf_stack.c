/* psf_stack.c — the reference PSF: per pixel, the mean of the stars' normalised stamps after
 * iterative sigma clipping. The first centre and scale are the median and the MAD (robust to
 * a neighbour or a cosmic ray in one stamp), then mean and standard deviation of the
 * survivors until the surviving set stops changing. Pixels are independent: OpenMP over pixels,
 * each pixel's sums in star order, so the result does not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "psf_internal.h"
#include "tide/status.h"

/* The k-th smallest of a[0..n) (0-based; a is reordered so a[0..k) <= a[k]): quickselect
 * with a middle pivot and a branch-free Lomuto partition (each element swapped into place
 * unconditionally and the boundary advanced by the comparison's 0 or 1: Hoare's scans
 * mispredicted a branch on about every other element, three times the cost on the 40-120
 * values of a stack pixel). When the pivot is among the smallest (a run of equal values),
 * a second sweep gathers the values equal to it, so a constant pixel takes two sweeps, not
 * n. Values are compared, never combined, so the result is the sorted array's, bit for bit;
 * the stamps are finite, so the order is total. */
double psf_select_kth(double *a, int n, int k) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        const double piv = a[mid];
        a[mid] = a[hi];
        a[hi] = piv;
        int s = lo; /* a[lo..s) < piv <= a[s..i) */
        for (int i = lo; i < hi; i++) {
            const double x = a[i];
            a[i] = a[s];
            a[s] = x;
            s += x < piv;
        }
        a[hi] = a[s];
        a[s] = piv;
        int e = s + 1; /* a[s..e) == piv */
        if (s - lo < (hi - lo) / 8) {
            for (int i = s + 1; i <= hi; i++) { /* a[i] >= piv here: equal <=> not above */
                const double x = a[i];
                a[i] = a[e];
                a[e] = x;
                e += x <= piv;
            }
        }
        if (k >= s && k < e)
            return piv;
        if (k < s)
            hi = s - 1;
        else
            lo = e;
    }
    return a[k];
}

/* Median of a[0..n), n >= 1 (a is reordered): the middle value, or the mean of the two. */
static double median_inplace(double *a, int n) {
    const double hi = psf_select_kth(a, n, n / 2);
    if (n % 2)
        return hi;
    double lo = a[0]; /* after the selection a[0..n/2) holds the n/2 smallest */
    for (int i = 1; i < n / 2; i++)
        if (a[i] > lo)
            lo = a[i];
    return 0.5 * (lo + hi);
}

static double clipped_mean(const double *v, int m, double *tmp, unsigned char *keep, double ksig,
                           int iters) {
    if (m < 3) {
        double s = 0.0;
        for (int i = 0; i < m; i++)
            s += v[i];
        return m ? s / m : 0.0;
    }
    memcpy(tmp, v, sizeof(double) * (size_t)m);
    double centre = median_inplace(tmp, m);
    /* first scale: the MAD (a single outlier among few stamps inflates the standard
     * deviation past any k-sigma cut: for n values the largest z-score is (n-1)/sqrt(n)) */
    for (int i = 0; i < m; i++)
        tmp[i] = fabs(v[i] - centre);
    double sd = 1.4826 * median_inplace(tmp, m);
    double mean = 0.0;
    int nk = m;
    for (int i = 0; i < m; i++)
        mean += v[i];
    mean /= m;
    if (!(sd > 0.0)) { /* more than half identical: the plain standard deviation */
        for (int i = 0; i < m; i++)
            sd += (v[i] - mean) * (v[i] - mean);
        sd = sqrt(sd / m);
    }
    mean = centre; /* the answer if the first cut leaves fewer than 3 */
    for (int i = 0; i < m; i++)
        keep[i] = 1;
    for (int it = 0; it < iters; it++) {
        int changed = 0, nn = 0;
        for (int i = 0; i < m; i++) {
            const unsigned char k = fabs(v[i] - centre) <= ksig * sd;
            changed |= k != keep[i];
            keep[i] = k;
            nn += k;
        }
        if (nn < 3)
            break; /* clipped too far: keep the previous mean */
        nk = nn;
        double s = 0.0;
        for (int i = 0; i < m; i++)
            if (keep[i])
                s += v[i];
        mean = s / nk;
        double q = 0.0;
        for (int i = 0; i < m; i++)
            if (keep[i])
                q += (v[i] - mean) * (v[i] - mean);
        sd = sqrt(q / nk);
        centre = mean;
        if (!changed && it > 0)
            break;
    }
    return mean;
}

int psf_stack_clip(const float *stamps, int npix, const int *which, int m, double ksig, int iters,
                   int threads, float *out) {
    int fail = 0;
    double total = 0.0;
    double *acc = malloc(sizeof(double) * (size_t)npix);
    if (!acc)
        return tide_error(TIDE_E_NOMEM, "psf: reference stack");
#pragma omp parallel num_threads(threads > 0 ? threads : 1) reduction(| : fail)
    {
        double *v = malloc(sizeof(double) * 2 * (size_t)(m > 0 ? m : 1));
        unsigned char *keep = malloc((size_t)(m > 0 ? m : 1));
        if (!v || !keep)
            fail = 1;
#pragma omp for schedule(static)
        for (int p = 0; p < npix; p++) {
            if (!v || !keep)
                continue;
            for (int i = 0; i < m; i++)
                v[i] = stamps[(size_t)which[i] * npix + p];
            acc[p] = clipped_mean(v, m, v + m, keep, ksig, iters);
        }
        free(v);
        free(keep);
    }
    if (fail) {
        free(acc);
        return tide_error(TIDE_E_NOMEM, "psf: reference stack");
    }
    for (int p = 0; p < npix; p++)
        total += acc[p];
    for (int p = 0; p < npix; p++)
        out[p] = (float)(total != 0.0 ? acc[p] / total : acc[p]);
    free(acc);
    return 0;
}
