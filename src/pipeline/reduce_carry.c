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

#include "pipeline/reduce_internal.h"
#include "tide/detect.h"
#include "tide/status.h"

typedef struct yx {
    double y, x;
} yx;

static int cmp_y(const void *a, const void *b) {
    const double p = ((const yx *)a)->y, q = ((const yx *)b)->y;
    return (p > q) - (p < q);
}

/* Is there a point of @p s (n, sorted by y) within r of (x, y)? */
static int near_any(const yx *s, int64_t n, double x, double y, double r) {
    int64_t lo = 0, hi = n;
    while (lo < hi) { /* first with s.y >= y - r */
        const int64_t mid = lo + (hi - lo) / 2;
        if (s[mid].y < y - r) lo = mid + 1;
        else hi = mid;
    }
    for (int64_t k = lo; k < n && s[k].y <= y + r; k++) {
        const double dx = s[k].x - x, dy = s[k].y - y;
        if (dx * dx + dy * dy <= r * r) return 1;
    }
    return 0;
}

int tide_pipe_carry_first(const tide_table *first, tide_table *det, double fwhm,
                          int64_t *ncarried) {
    *ncarried = 0;
    const int64_t n1 = first->nrows, n2 = det->nrows;
    if (n1 == 0) return 0;
    if (first->ncols != det->ncols)
        return tide_error(TIDE_E_INTERNAL, "reduce: the two detection tables differ (%d and %d "
                          "columns)", first->ncols, det->ncols);
    for (int c = 0; c < first->ncols; c++)
        if (strcmp(first->cols[c].name, det->cols[c].name) ||
            first->cols[c].type != det->cols[c].type ||
            first->cols[c].repeat != det->cols[c].repeat)
            return tide_error(TIDE_E_INTERNAL, "reduce: the two detection tables differ at "
                              "column %d (%s, %s)", c, first->cols[c].name, det->cols[c].name);
    const double *x1 = tide_table_f64(first, "X"), *y1 = tide_table_f64(first, "Y");
    const double *x2 = tide_table_f64(det, "X"), *y2 = tide_table_f64(det, "Y");
    if (!x1 || !y1 || (n2 > 0 && (!x2 || !y2)))
        return tide_error(TIDE_E_INTERNAL, "reduce: a detection table lacks X/Y");
    const double r = isfinite(fwhm) && fwhm > 1.0 ? fwhm : 1.0;
    yx *s = malloc(sizeof(yx) * (size_t)(n2 > 0 ? n2 : 1));
    int64_t *lost = malloc(sizeof(int64_t) * (size_t)n1);
    if (!s || !lost) {
        free(s), free(lost);
        return tide_error(TIDE_E_NOMEM, "reduce: %lld first-pass sources", (long long)n1);
    }
    for (int64_t k = 0; k < n2; k++) {
        s[k].x = x2[k];
        s[k].y = y2[k];
    }
    qsort(s, (size_t)n2, sizeof *s, cmp_y);
    int64_t nl = 0;
    for (int64_t i = 0; i < n1; i++)
        if (!near_any(s, n2, x1[i], y1[i], r)) lost[nl++] = i;
    free(s);
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
        for (int64_t k = n2; fl && k < n2 + nl; k++) fl[k] |= TIDE_DETECT_FLAG_FIRST_PASS;
        for (int64_t k = n2; pa && k < n2 + nl; k++) pa[k] = -1;
    }
    free(lost);
    if (!st) *ncarried = nl;
    return st;
}
