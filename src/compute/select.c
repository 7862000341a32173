/* select.c — exact order statistics (median, percentiles) and sigma-clipped statistics,
 * once for both backends (DESIGN §3).
 *
 * Selection is a most-significant-digit radix select over the order-preserving 32-bit keys of
 * the floats (stats_math.h): a histogram of the top 11 bits of every selected pixel says which
 * bin holds rank r; a histogram of the next 11 bits among pixels with that prefix narrows it,
 * and the last 10 bits give the key itself. Three sweeps over the pixels, integer counts only,
 * so the answer is exact and identical on every backend. Several ranks share a sweep (up to
 * TIDE_RSEL_MAX_TARGETS distinct prefixes per sweep). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats_internal.h"
#include "stats_math.h"
#include "tide/stats.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

/* Find the bin of histogram @p h holding 0-based rank *rem; subtract the counts below it. */
static int find_bin(const uint64_t *h, int nbins, int64_t *rem, uint32_t *bin) {
    uint64_t cum = 0;
    for (int b = 0; b < nbins; b++) {
        if ((uint64_t)*rem < cum + h[b]) {
            *rem -= (int64_t)cum;
            *bin = (uint32_t)b;
            return TIDE_OK;
        }
        cum += h[b];
    }
    return tide_error(TIDE_E_INTERNAL, "reduce: rank %lld beyond the histogram total %llu",
                      (long long)*rem, (unsigned long long)cum);
}

int tide_reduce_select(tide_ctx *ctx, const tide_reduce_view *v, int64_t n, const int64_t *ranks,
                       int nranks, uint32_t *keys) {
    uint64_t hist[TIDE_RSEL_MAX_TARGETS * TIDE_RSEL_BINS];
    enum { MAXR = 64 };
    int64_t rem[MAXR];
    /* Process ranks in groups that fit the fixed-size bookkeeping. */
    for (int r0 = 0; r0 < nranks; r0 += MAXR) {
        const int nr = nranks - r0 < MAXR ? nranks - r0 : MAXR;
        for (int i = 0; i < nr; i++) {
            if (ranks[r0 + i] < 0 || ranks[r0 + i] >= n ||
                (i > 0 && ranks[r0 + i] < ranks[r0 + i - 1]))
                return tide_error(TIDE_E_INTERNAL, "reduce: bad rank %lld of %lld",
                                  (long long)ranks[r0 + i], (long long)n);
            rem[i] = ranks[r0 + i];
            keys[r0 + i] = 0;
        }
        for (int level = 0; level < TIDE_RSEL_LEVELS; level++) {
            const int nbins = tide_rsel_nbins(level);
            const int dbits = level == 2 ? 10 : 11;
            /* Ranks are ascending, so equal prefixes are adjacent: each distinct prefix is one
             * target. Sweep targets in batches. */
            int i = 0;
            while (i < nr) {
                uint32_t pre[TIDE_RSEL_MAX_TARGETS];
                int first[TIDE_RSEL_MAX_TARGETS + 1], nt = 0, j = i;
                while (j < nr && nt < TIDE_RSEL_MAX_TARGETS) {
                    pre[nt] = keys[r0 + j];
                    first[nt++] = j;
                    while (j < nr && keys[r0 + j] == pre[nt - 1])
                        j++;
                    if (level == 0)
                        j = nr; /* level 0 has one histogram for all ranks */
                }
                first[nt] = j;
                int st = TIDE_DISPATCH(ctx, tide_reduce_hist, v, level, pre, nt, hist);
                if (st)
                    return st;
                for (int t = 0; t < nt; t++)
                    for (int k = first[t]; k < first[t + 1]; k++) {
                        uint32_t b = 0;
                        st = find_bin(hist + (size_t)t * TIDE_RSEL_BINS, nbins, &rem[k], &b);
                        if (st)
                            return st;
                        keys[r0 + k] = (keys[r0 + k] << dbits) | b;
                    }
                i = j;
            }
        }
    }
    return TIDE_OK;
}

int tide_reduce_view_median(tide_ctx *ctx, const tide_reduce_view *v, int64_t n, double *med) {
    int64_t ranks[2] = {(n - 1) / 2, n / 2};
    uint32_t keys[2];
    const int nr = (n % 2) ? 1 : 2;
    int st = tide_reduce_select(ctx, v, n, ranks, nr, keys);
    if (st)
        return st;
    const double a = tide_reduce_unkey(keys[0]);
    /* numpy.median: mean of the two middle values for even n. */
    *med = nr == 1 ? a : ((a + (double)tide_reduce_unkey(keys[1])) / 2.0);
    return TIDE_OK;
}

/* ---- public ----------------------------------------------------------------------------- */

int tide_reduce_median(tide_ctx *ctx, const tide_image *im, uint16_t maskbits, double *median) {
    if (!median)
        return tide_error(TIDE_E_INVAL, "tide_reduce_median: NULL output");
    *median = NAN;
    tide_reduce_view v;
    int st = tide_reduce_view_make(ctx, im, maskbits, &v);
    tide_reduce_moments mom;
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_reduce_moments, &v, &mom);
    if (st)
        return st;
    if (mom.count == 0)
        return tide_error(TIDE_E_EMPTY, "reduce: no valid pixel for the median");
    return tide_reduce_view_median(ctx, &v, mom.count, median);
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int tide_reduce_percentiles(tide_ctx *ctx, const tide_image *im, uint16_t maskbits, const double *q,
                            int nq, double *out) {
    if (nq < 0 || (nq > 0 && (!q || !out)))
        return tide_error(TIDE_E_INVAL, "tide_reduce_percentiles: bad arguments");
    for (int i = 0; i < nq; i++) {
        out[i] = NAN;
        if (!(q[i] >= 0.0 && q[i] <= 100.0))
            return tide_error(TIDE_E_RANGE, "percentile %g is outside [0, 100]", q[i]);
    }
    tide_reduce_view v;
    int st = tide_reduce_view_make(ctx, im, maskbits, &v);
    tide_reduce_moments mom;
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_reduce_moments, &v, &mom);
    if (st)
        return st;
    const int64_t n = mom.count;
    if (n == 0)
        return tide_error(TIDE_E_EMPTY, "reduce: no valid pixel for percentiles");
    if (nq == 0)
        return TIDE_OK;
    /* numpy 'linear' (Hyndman & Fan 1996, definition 7): virtual index h = (n-1)·q/100. */
    int64_t *ranks = (int64_t *)malloc((size_t)nq * 2 * sizeof(int64_t));
    uint32_t *keys = (uint32_t *)malloc((size_t)nq * 2 * sizeof(uint32_t));
    if (!ranks || !keys) {
        free(ranks);
        free(keys);
        return tide_error(TIDE_E_NOMEM, "percentiles: out of memory");
    }
    int nr = 0;
    for (int i = 0; i < nq; i++) {
        const double h = (double)(n - 1) * (q[i] / 100.0);
        int64_t j = (int64_t)floor(h);
        if (j > n - 1)
            j = n - 1;
        ranks[nr++] = j;
        ranks[nr++] = j + 1 < n ? j + 1 : n - 1;
    }
    qsort(ranks, (size_t)nr, sizeof *ranks, cmp_i64);
    int nu = 0;
    for (int i = 0; i < nr; i++)
        if (nu == 0 || ranks[i] != ranks[nu - 1])
            ranks[nu++] = ranks[i];
    st = tide_reduce_select(ctx, &v, n, ranks, nu, keys);
    for (int i = 0; !st && i < nq; i++) {
        const double h = (double)(n - 1) * (q[i] / 100.0);
        int64_t j = (int64_t)floor(h);
        if (j > n - 1)
            j = n - 1;
        const double g = h - (double)j;
        const int64_t j1 = j + 1 < n ? j + 1 : n - 1;
        const int64_t *pa = (const int64_t *)bsearch(&j, ranks, (size_t)nu, sizeof *ranks, cmp_i64);
        const int64_t *pb =
            (const int64_t *)bsearch(&j1, ranks, (size_t)nu, sizeof *ranks, cmp_i64);
        const double a = tide_reduce_unkey(keys[pa - ranks]);
        const double b = tide_reduce_unkey(keys[pb - ranks]);
        /* numpy's _lerp: a + (b-a)·g, or b - (b-a)·(1-g) for g >= 0.5 (monotone near 1). */
        const double d = b - a;
        out[i] = g >= 0.5 ? b - d * (1.0 - g) : a + d * g;
    }
    free(ranks);
    free(keys);
    return st;
}

int tide_reduce_sigma_clip(tide_ctx *ctx, const tide_image *im, uint16_t maskbits,
                           const tide_sigclip_params *p, tide_sigclip_result *out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_reduce_sigma_clip: NULL output");
    const tide_sigclip_params prm = p ? *p : tide_sigclip_defaults();
    out->mean = out->median = out->std = NAN;
    out->n_kept = 0;
    out->iterations = 0;
    out->lo = -INFINITY;
    out->hi = INFINITY;
    if (!(prm.sigma > 0.0))
        return tide_error(TIDE_E_RANGE, "sigma clipping: sigma must be > 0 (got %g)", prm.sigma);
    tide_reduce_view cur;
    int st = tide_reduce_view_make(ctx, im, maskbits, &cur);
    if (st)
        return st;
    tide_reduce_moments mom;
    double mean, std, med;
    st = tide_reduce_view_stats(ctx, &cur, &mom, &mean, &std);
    if (st)
        return st;
    if (mom.count == 0)
        return tide_error(TIDE_E_EMPTY, "sigma clipping: no valid pixel");
    /* astropy's SigmaClip with axis=None (_sigmaclip_noaxis): the kept set shrinks to the
     * pixels inside median ± sigma·std of the previous set, until nothing changes or maxiters
     * filters were applied; the kept set is the intersection of all bounds so far. */
    for (;;) {
        st = tide_reduce_view_median(ctx, &cur, mom.count, &med);
        if (st)
            return st;
        if (prm.maxiters > 0 && out->iterations >= prm.maxiters)
            break;
        tide_reduce_view nxt = cur;
        const double lo = med - std * prm.sigma, hi = med + std * prm.sigma;
        nxt.lo = lo > cur.lo ? lo : cur.lo;
        nxt.hi = hi < cur.hi ? hi : cur.hi;
        tide_reduce_moments nmom;
        st = TIDE_DISPATCH(ctx, tide_reduce_moments, &nxt, &nmom);
        if (st)
            return st;
        out->iterations++;
        out->lo = lo;
        out->hi = hi;
        if (nmom.count == mom.count)
            break; /* nothing clipped: cur's statistics are final */
        if (nmom.count == 0)
            return TIDE_OK; /* clipped away everything: NaN results, as numpy gives */
        cur = nxt;
        mom = nmom;
        /* Same two-pass definition as tide_reduce_view_stats, reusing the first pass. */
        mean = mom.sum / (double)mom.count;
        double m2 = 0.0;
        st = TIDE_DISPATCH(ctx, tide_reduce_m2, &cur, mean, &m2);
        if (st)
            return st;
        std = sqrt(m2 / (double)mom.count);
    }
    out->mean = mean;
    out->median = med;
    out->std = std;
    out->n_kept = mom.count;
    return TIDE_OK;
}
