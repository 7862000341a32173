/* solve_uniformize.c — the order in which the solver sees a frame's sources.
 *
 * The solver builds quads from the first sources of its list, so a list in plain brightness
 * order spends its depth on whatever region holds the brightest objects: a nebula's knots, a
 * cluster's core, a saturated star's ghosts. solve-field (augment-xylist --uniformize 10)
 * therefore interleaves the field's cells. tide offers the same order (tide_solve_params.
 * uniformize, tide solve --uniformize) with solve-field's cells: NX = rint(W / sqrt(W H / n)),
 * NY = rint(n / NX) over the sources' bounding box. It is off by default: on the gauntlet's
 * apod1 (a bright nebula in one corner) it did not make tide's own list solve, and it made
 * the blind solve of apod4 six times slower (solve.h). */
#include <math.h>
#include <stdlib.h>

#include "solve_internal.h"
#include "tide/status.h"

int tide_solve_uniformize(int64_t *order, int64_t m, const double *x, const double *y, int ncell) {
    if (ncell < 2 || m < 2)
        return 0;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int64_t k = 0; k < m; k++) {
        double u = x[order[k]], v = y[order[k]];
        x0 = u < x0 ? u : x0;
        x1 = u > x1 ? u : x1;
        y0 = v < y0 ? v : y0;
        y1 = v > y1 ? v : y1;
    }
    double w = x1 - x0, h = y1 - y0;
    if (!(w > 0) || !(h > 0))
        return 0;
    /* rint: half to even, as Python's round in solve-field's uniformize.py (10 / 4 -> 2) */
    int nx = (int)fmax(1.0, rint(w / sqrt(w * h / ncell)));
    int ny = (int)fmax(1.0, rint((double)ncell / nx));
    int64_t ncells = (int64_t)nx * ny;
    /* rank[k]: how many brighter sources share source k's cell; then a counting sort by rank,
     * stable, so that within a round the brighter source comes first */
    int64_t *seen = calloc((size_t)ncells, sizeof *seen);
    int64_t *rank = malloc((size_t)m * sizeof *rank);
    int64_t *start = calloc((size_t)m + 1, sizeof *start);
    int64_t *out = malloc((size_t)m * sizeof *out);
    if (!seen || !rank || !start || !out) {
        free(seen), free(rank), free(start), free(out);
        return tide_error(TIDE_E_NOMEM, "solve: ordering %lld sources", (long long)m);
    }
    for (int64_t k = 0; k < m; k++) {
        int ix = (int)floor((x[order[k]] - x0) / w * nx);
        int iy = (int)floor((y[order[k]] - y0) / h * ny);
        ix = ix < 0 ? 0 : ix >= nx ? nx - 1 : ix;
        iy = iy < 0 ? 0 : iy >= ny ? ny - 1 : iy;
        rank[k] = seen[(int64_t)iy * nx + ix]++;
        start[rank[k] + 1]++;
    }
    for (int64_t r = 0; r < m; r++)
        start[r + 1] += start[r];
    for (int64_t k = 0; k < m; k++)
        out[start[rank[k]]++] = order[k];
    for (int64_t k = 0; k < m; k++)
        order[k] = out[k];
    free(seen), free(rank), free(start), free(out);
    return 0;
}
