/* reduce_carry.c — keeping the first pass's sources that the second pass lost.
 *
 * The second detection runs with the PSF model as its matched filter. Where that model is
 * wider or narrower than the first pass's Gaussian, footprints merge or fragment differently,
 * and a star the first pass found can end up inside another source's footprint, or below
 * the threshold of a poorer kernel. A real source must not vanish that way: every first-pass
 * source with no second-pass source within one PSF FWHM (at least 1 px) of its position is
 * appended to the second pass's table as it was measured in the first pass, with
 * TIDE_DETECT_FLAG_FIRST_PASS and PARENT -1 (it belongs to no second-pass footprint), so
 * that photometry measures it like every other row. Within one FWHM, a second-pass source
 * is taken to be the same object (a blend of two first-pass sources closer than 2 FWHM
 * lies within one FWHM of both). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_internal.h"
#include "tide/detect.h"
#include "tide/status.h"

/* The second pass's positions in rows of height r (counting sort by row): the points of row
 * b are pt[start[b] .. start[b + 1]). Any point within r of (x, y) lies in row
 * floor(y / r) - 1, + 0 or + 1, so a lookup reads three rows: linear time in all, where a
 * sort by y cost a few milliseconds at 40,000 sources. */
typedef struct rows {
    double *px, *py; /* positions, grouped by row */
    int64_t *start;  /* nrows + 1 offsets */
    int64_t nrows;
    double r, y0;
} rows;

static int64_t row_of(const rows *g, double y) {
    const double b = floor((y - g->y0) / g->r);
    return !(b >= 0) ? 0 : b >= (double)g->nrows ? g->nrows - 1 : (int64_t)b;
}

static int rows_build(rows *g, const double *x, const double *y, int64_t n, double r) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t k = 0; k < n; k++) {
        lo = y[k] < lo ? y[k] : lo;
        hi = y[k] > hi ? y[k] : hi;
    }
    g->r = r;
    g->y0 = n > 0 ? lo : 0.0;
    g->nrows = n > 0 ? (int64_t)floor((hi - lo) / r) + 1 : 1;
    g->px = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    g->py = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    g->start = calloc((size_t)g->nrows + 1, sizeof(int64_t));
    if (!g->px || !g->py || !g->start)
        return TIDE_E_NOMEM;
    for (int64_t k = 0; k < n; k++)
        g->start[row_of(g, y[k]) + 1]++;
    for (int64_t b = 0; b < g->nrows; b++)
        g->start[b + 1] += g->start[b];
    int64_t *fill = malloc(sizeof(int64_t) * (size_t)g->nrows);
    if (!fill)
        return TIDE_E_NOMEM;
    memcpy(fill, g->start, sizeof(int64_t) * (size_t)g->nrows);
    for (int64_t k = 0; k < n; k++) {
        const int64_t at = fill[row_of(g, y[k])]++;
        g->px[at] = x[k];
        g->py[at] = y[k];
    }
    free(fill);
    return 0;
}

static void rows_free(rows *g) {
    free(g->px), free(g->py), free(g->start);
}

/* Is there a point of @p g within g->r of (x, y)? */
static int near_any(const rows *g, double x, double y) {
    const double r = g->r;
    if (!isfinite(x) || !isfinite(y))
        return 0;
    const double fb = floor((y - g->y0) / r);
    if (fb < -1.0 || fb > (double)g->nrows)
        return 0;
    const int64_t b = (int64_t)fb;
    for (int64_t q = b - 1; q <= b + 1; q++) {
        if (q < 0 || q >= g->nrows)
            continue;
        for (int64_t k = g->start[q]; k < g->start[q + 1]; k++) {
            const double dx = g->px[k] - x, dy = g->py[k] - y;
            if (dx * dx + dy * dy <= r * r)
                return 1;
        }
    }
    return 0;
}

int tide_pipe_carry_first(const tide_table *first, tide_table *det, double fwhm,
                          int64_t *ncarried) {
    *ncarried = 0;
    const int64_t n1 = first->nrows, n2 = det->nrows;
    if (n1 == 0)
        return 0;
    if (first->ncols != det->ncols)
        return tide_error(TIDE_E_INTERNAL,
                          "reduce: the two detection tables differ (%d and %d "
                          "columns)",
                          first->ncols, det->ncols);
    for (int c = 0; c < first->ncols; c++)
        if (strcmp(first->cols[c].name, det->cols[c].name) ||
            first->cols[c].type != det->cols[c].type ||
            first->cols[c].repeat != det->cols[c].repeat)
            return tide_error(TIDE_E_INTERNAL,
                              "reduce: the two detection tables differ at "
                              "column %d (%s, %s)",
                              c, first->cols[c].name, det->cols[c].name);
    const double *x1 = tide_table_f64(first, "X"), *y1 = tide_table_f64(first, "Y");
    const double *x2 = tide_table_f64(det, "X"), *y2 = tide_table_f64(det, "Y");
    if (!x1 || !y1 || (n2 > 0 && (!x2 || !y2)))
        return tide_error(TIDE_E_INTERNAL, "reduce: a detection table lacks X/Y");
    const double r = isfinite(fwhm) && fwhm > 1.0 ? fwhm : 1.0;
    rows g = {0};
    int64_t *lost = malloc(sizeof(int64_t) * (size_t)n1);
    if (!lost || rows_build(&g, x2, y2, n2, r)) {
        rows_free(&g), free(lost);
        return tide_error(TIDE_E_NOMEM, "reduce: %lld first-pass sources", (long long)n1);
    }
    int64_t nl = 0;
    for (int64_t i = 0; i < n1; i++)
        if (!near_any(&g, x1[i], y1[i]))
            lost[nl++] = i;
    rows_free(&g);
    int st = nl > 0 ? tide_table_resize(det, n2 + nl) : 0;
    for (int c = 0; !st && c < det->ncols; c++) {
        const size_t es = (size_t)(tide_col_type_size(det->cols[c].type) * det->cols[c].repeat);
        const char *src = first->cols[c].data;
        char *dst = det->cols[c].data;
        for (int64_t k = 0; k < nl; k++)
            memcpy(dst + (size_t)(n2 + k) * es, src + (size_t)lost[k] * es, es);
    }
    if (!st && nl > 0) {
        int32_t *fl = tide_table_i32(det, "FLAGS");
        int64_t *pa = tide_table_i64(det, "PARENT");
        for (int64_t k = n2; fl && k < n2 + nl; k++)
            fl[k] |= TIDE_DETECT_FLAG_FIRST_PASS;
        for (int64_t k = n2; pa && k < n2 + nl; k++)
            pa[k] = -1;
    }
    free(lost);
    if (!st)
        *ncarried = nl;
    return st;
}
