/* background_grid.c — host work on the mesh grid of a background estimate: filling bad
 * meshes, the median filter, the global values, Source Extractor's spline coefficients and
 * the optional smooth polynomial. The grid is tiny (a 151 MP frame has ~37,000 meshes of
 * 64²), so this runs on the host for both backends and is identical for both.
 *
 * Source: Source Extractor's back.c (filterback, makebackspline, subbackline; Bertin &
 * Arnouts 1996, §3.1), whose arithmetic is mirrored in float where it matters for agreement
 * with its check-images. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "compute/select_f64.h"
#include "background_kernels.h"
#include "tide/status.h"

/* Source Extractor's fqmedian (which sorts): the middle value, the mean of the middle two
 * for even n, by selection instead of a sort — the same value, O(n) instead of a qsort per
 * mesh (the 3x3 filter runs it twice on each of the ~37,000 meshes of a 151 MP frame, and
 * the global values on all of them: tens of ms with qsort). @p v is reordered. */
static float mesh_median(float *v, int64_t n) {
    const float hi = tide_select_kth_f32(v, n, n / 2);
    if (n < 2 || (n & 1))
        return hi;
    float lo = v[0]; /* the largest of the lower half v[0..n/2) */
    for (int64_t i = 1; i < n / 2; i++)
        lo = v[i] > lo ? v[i] : lo;
    return (float)(((double)lo + (double)hi) / 2.0);
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x > y ? 1 : (x < y ? -1 : 0);
}

/* A bad mesh takes the mean of the good meshes nearest to it (Euclidean distance on the
 * grid; all of those at the minimal distance, summed in raster order as Source Extractor
 * does). The search walks square rings outwards and stops once a ring cannot hold anything
 * closer, so it costs O(d²) per bad mesh instead of a scan of the whole grid. */
static int fill_bad(const tide_bkg_plan *p, const float *mesh, float *back, float *sig,
                    int64_t *nbad) {
    const int64_t nx = p->nx, ny = p->ny;
    int64_t cap = 16, *ties = malloc(sizeof(int64_t) * (size_t)cap);
    if (!ties)
        return tide_error(TIDE_E_NOMEM, "background: out of memory filling bad meshes");
    *nbad = 0;
    for (int64_t k = 0; k < p->nmesh; k++) {
        back[k] = mesh[2 * k];
        sig[k] = mesh[2 * k + 1];
    }
    for (int64_t py = 0; py < ny; py++)
        for (int64_t px = 0; px < nx; px++) {
            const int64_t k = py * nx + px;
            if (!isnan(mesh[2 * k]))
                continue;
            (*nbad)++;
            int64_t best = INT64_MAX, nt = 0;
            const int64_t rmax = nx > ny ? nx : ny;
            for (int64_t r = 1; r <= rmax && r * r <= best; r++)
                for (int64_t dy = -r; dy <= r; dy++) {
                    const int64_t y = py + dy;
                    if (y < 0 || y >= ny)
                        continue;
                    const int64_t step = (dy == -r || dy == r) ? 1 : 2 * r;
                    for (int64_t dx = -r; dx <= r; dx += step) {
                        const int64_t x = px + dx, j = y * nx + x;
                        if (x < 0 || x >= nx || isnan(mesh[2 * j]))
                            continue;
                        const int64_t d2 = dx * dx + dy * dy;
                        if (d2 < best) {
                            best = d2;
                            nt = 0;
                        }
                        if (d2 == best) {
                            if (nt == cap) {
                                int64_t *t = realloc(ties, sizeof(int64_t) * (size_t)(2 * cap));
                                if (!t) {
                                    free(ties);
                                    return tide_error(TIDE_E_NOMEM, "background: out of memory");
                                }
                                ties = t;
                                cap *= 2;
                            }
                            ties[nt++] = j;
                        }
                    }
                }
            if (nt == 0) { /* no good mesh anywhere: Source Extractor's fallback */
                back[k] = 0.0f;
                sig[k] = 1.0f;
                continue;
            }
            qsort(ties, (size_t)nt, sizeof(int64_t), cmp_i64);
            float val = 0.0f, sval = 0.0f;
            for (int64_t t = 0; t < nt; t++) {
                val += mesh[2 * ties[t]];
                sval += mesh[2 * ties[t] + 1];
            }
            back[k] = val / (float)nt;
            sig[k] = sval / (float)nt;
        }
    free(ties);
    return TIDE_OK;
}

int tide_bkg_grid_filter(const tide_bkg_plan *p, const tide_bkg_params *prm, const float *mesh,
                         float *back, float *sig, tide_bkg_summary *s) {
    const int64_t nx = p->nx, ny = p->ny, np = p->nmesh;
    int st = fill_bad(p, mesh, back, sig, &s->n_bad_mesh);
    if (st)
        return st;
    const int64_t npx = prm->filter_w / 2, npy = prm->filter_h / 2;
    const int64_t wn = (2 * npx + 1) * (2 * npy + 1);
    float *b2 = malloc(sizeof(float) * (size_t)(2 * np));
    if (!b2)
        return tide_error(TIDE_E_NOMEM, "background: out of memory for the mesh filter");
    float *s2 = b2 + np;
    int64_t nrep = 0;
    int fail = 0;
    /* Rows of meshes in parallel on large grids (each mesh reads the unfiltered grid and
     * writes its own cell), each thread with its own window buffers: the same values in any
     * order. A small grid (a 2048² frame has 1,024 meshes) stays on the calling thread: waking
     * a team costs more than its work. */
#pragma omp parallel if (np >= 8192) reduction(+ : nrep) reduction(| : fail)
    {
        float *bw = malloc(sizeof(float) * (size_t)(2 * wn)), *sw = bw ? bw + wn : NULL;
        if (!bw)
            fail = 1;
#pragma omp for schedule(static)
        for (int64_t py = 0; py < ny; py++) {
            if (!bw)
                continue;
            int64_t ry = npy;
            if (ry > py)
                ry = py;
            if (ry > ny - 1 - py)
                ry = ny - 1 - py;
            for (int64_t px = 0; px < nx; px++) {
                int64_t rx = npx;
                if (rx > px)
                    rx = px;
                if (rx > nx - 1 - px)
                    rx = nx - 1 - px;
                int64_t n = 0;
                for (int64_t y = py - ry; y <= py + ry; y++)
                    for (int64_t x = px - rx; x <= px + rx; x++) {
                        bw[n] = back[y * nx + x];
                        sw[n++] = sig[y * nx + x];
                    }
                const int64_t k = py * nx + px;
                /* the 3x3 window of the default filter by a sorting network (~3x faster) */
                const float med = n == 9 ? tide_median9_f32(bw) : mesh_median(bw, n);
                if (fabs((double)(med - back[k])) >= prm->filter_thresh) {
                    nrep += med != back[k];
                    b2[k] = med;
                    s2[k] = n == 9 ? tide_median9_f32(sw) : mesh_median(sw, n);
                } else {
                    b2[k] = back[k];
                    s2[k] = sig[k];
                }
            }
        }
        free(bw);
    }
    if (fail) {
        free(b2);
        return tide_error(TIDE_E_NOMEM, "background: out of memory for the mesh filter");
    }
    s->n_replaced = nrep;
    memcpy(back, b2, sizeof(float) * (size_t)np);
    memcpy(sig, s2, sizeof(float) * (size_t)np);
    s->global_back = mesh_median(b2, np);
    s->global_rms = mesh_median(s2, np);
    if (s->global_rms <= 0.0) { /* the median of the positive values */
        int64_t m = 0;
        for (int64_t i = 0; i < np; i++)
            if (s2[i] > 0.0f)
                s2[m++] = s2[i];
        s->global_rms = m > 0 ? mesh_median(s2, m) : 1.0;
    }
    free(b2);
    return TIDE_OK;
}

/* Source Extractor's spline recurrence (makebackspline, subbackline) along m lines at once:
 * value i of line l is v[i * st + l * ls]. Each line is the tridiagonal system of a natural
 * cubic spline on unit spacing, swept in float as Source Extractor does (including its
 * back-substitution, which divides the whole right-hand side by 6). The lines advance in
 * lockstep, so their independent recurrences overlap (one line alone is a chain of dependent
 * divisions). u: n * m floats of scratch. */
static void se_spline_lines(const float *v, int64_t n, int64_t st, int64_t m, int64_t ls, float *d,
                            float *u) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t l = 0; l < m; l++)
            d[i * st + l * ls] = 0.0f;
    if (n < 3)
        return;
    for (int64_t l = 0; l < m; l++)
        u[l] = 0.0f;
    for (int64_t i = 1; i < n - 1; i++)
        for (int64_t l = 0; l < m; l++) {
            const int64_t o = l * ls;
            float t = -1.0f / (d[(i - 1) * st + o] + 4.0f);
            d[i * st + o] = t;
            const float c = v[(i + 1) * st + o] + v[(i - 1) * st + o] - 2.0f * v[i * st + o];
            t *= u[(i - 1) * m + l] - 6.0f * c;
            u[i * m + l] = t;
        }
    for (int64_t i = n - 2; i >= 1; i--)
        for (int64_t l = 0; l < m; l++) {
            const int64_t o = l * ls;
            const float t = d[i * st + o] * d[(i + 1) * st + o] + u[i * m + l];
            d[i * st + o] = (float)((double)t / 6.0);
        }
}

int tide_bkg_grid_spline(const tide_bkg_plan *p, const float *v, float *coef) {
    const int64_t nx = p->nx, ny = p->ny, np = p->nmesh;
    float *V = coef + TIDE_BKG_V * np, *DV = coef + TIDE_BKG_DV * np;
    float *XV = coef + TIDE_BKG_XV * np, *XDV = coef + TIDE_BKG_XDV * np;
    memcpy(V, v, sizeof(float) * (size_t)np);
    memset(XV, 0, sizeof(float) * (size_t)np);
    memset(XDV, 0, sizeof(float) * (size_t)np);
    float *u = malloc(sizeof(float) * (size_t)np);
    if (!u)
        return tide_error(TIDE_E_NOMEM, "background: out of memory for the spline");
    /* Every line is independent of the others: on large grids (a 151 MP frame has 222 x 167
     * meshes) the threads take bands of lines, each with its band of the scratch; the same
     * floats whatever the split. */
    const int par = np >= 8192;
#pragma omp parallel if (par)
    {
        const int nt = par ? omp_get_num_threads() : 1, id = par ? omp_get_thread_num() : 0;
        /* the columns (along y), contiguous across lines */
        int64_t l0 = nx * id / nt, l1 = nx * (id + 1) / nt;
        se_spline_lines(V + l0, ny, nx, l1 - l0, 1, DV + l0, u + ny * l0);
        if (ny > 1 && nx > 1) {
#pragma omp barrier
            l0 = ny * id / nt;
            l1 = ny * (id + 1) / nt;
            se_spline_lines(V + l0 * nx, nx, 1, l1 - l0, nx, XV + l0 * nx, u + nx * l0);
            se_spline_lines(DV + l0 * nx, nx, 1, l1 - l0, nx, XDV + l0 * nx, u + nx * l0);
        }
    }
    free(u);
    return TIDE_OK;
}

/* ---- smooth mode: robust 2-D polynomial over the mesh grid ----------------------------- */

#define SM_MAXT 28 /* terms of a degree-6 polynomial */

/* Terms u^a v^b, a + b <= degree, without powers the grid cannot constrain. */
static int sm_terms(int degree, int64_t nx, int64_t ny, int *pa, int *pb) {
    int nt = 0;
    for (int d = 0; d <= degree; d++)
        for (int b = 0; b <= d; b++) {
            const int a = d - b;
            if (a > nx - 1 || b > ny - 1)
                continue;
            pa[nt] = a;
            pb[nt++] = b;
        }
    return nt;
}

static void sm_basis(double u, double v, int nt, const int *pa, const int *pb, double *f) {
    double up[7], vp[7];
    up[0] = vp[0] = 1.0;
    for (int i = 1; i < 7; i++) {
        up[i] = up[i - 1] * u;
        vp[i] = vp[i - 1] * v;
    }
    for (int t = 0; t < nt; t++)
        f[t] = up[pa[t]] * vp[pb[t]];
}

/* Cholesky solve of the nt × nt normal equations A c = r (A overwritten). 0 when singular. */
static int sm_solve(double *A, double *r, int nt) {
    for (int j = 0; j < nt; j++) {
        double d = A[j * nt + j];
        for (int k = 0; k < j; k++)
            d -= A[j * nt + k] * A[j * nt + k];
        if (!(d > 1e-12 * (A[j * nt + j] + 1e-300)))
            return 0;
        d = sqrt(d);
        A[j * nt + j] = d;
        for (int i = j + 1; i < nt; i++) {
            double s = A[i * nt + j];
            for (int k = 0; k < j; k++)
                s -= A[i * nt + k] * A[j * nt + k];
            A[i * nt + j] = s / d;
        }
    }
    for (int i = 0; i < nt; i++) {
        double s = r[i];
        for (int k = 0; k < i; k++)
            s -= A[i * nt + k] * r[k];
        r[i] = s / A[i * nt + i];
    }
    for (int i = nt - 1; i >= 0; i--) {
        double s = r[i];
        for (int k = i + 1; k < nt; k++)
            s -= A[k * nt + i] * r[k];
        r[i] = s / A[i * nt + i];
    }
    return 1;
}

int tide_bkg_grid_smooth(const tide_bkg_plan *p, int degree, const float *grid,
                         tide_bkg_poly *poly) {
    const int64_t nx = p->nx, ny = p->ny, np = p->nmesh;
    int *pa = poly->pa, *pb = poly->pb;
    int nt = sm_terms(degree, nx, ny, pa, pb);
    while (nt > np && degree > 0)
        nt = sm_terms(--degree, nx, ny, pa, pb);
    poly->nt = nt;
    poly->su = nx > 1 ? 2.0 / (double)(nx - 1) : 0.0;
    poly->ou = nx > 1 ? 1.0 : 0.0;
    poly->sv = ny > 1 ? 2.0 / (double)(ny - 1) : 0.0;
    poly->ov = ny > 1 ? 1.0 : 0.0;
    unsigned char *keep = malloc((size_t)np);
    double *fk = malloc(sizeof(double) * (size_t)(np * nt)); /* basis of every mesh */
    if (!keep || !fk) {
        free(keep);
        free(fk);
        return tide_error(TIDE_E_NOMEM, "background: out of memory for the smooth fit");
    }
    memset(keep, 1, (size_t)np);
    for (int64_t k = 0; k < np; k++)
        sm_basis((double)(k % nx) * poly->su - poly->ou, (double)(k / nx) * poly->sv - poly->ov, nt,
                 pa, pb, fk + k * nt);
    double *coef = poly->c;
    memset(coef, 0, sizeof poly->c);
    int fitted = 0;
    for (int iter = 0; iter < 5; iter++) {
        double A[SM_MAXT * SM_MAXT], r[SM_MAXT];
        memset(A, 0, sizeof A);
        memset(r, 0, sizeof r);
        int64_t n = 0;
        for (int64_t k = 0; k < np; k++) {
            if (!keep[k])
                continue;
            const double *f = fk + k * nt;
            for (int i = 0; i < nt; i++) {
                r[i] += f[i] * grid[k];
                for (int j = 0; j <= i; j++)
                    A[i * nt + j] += f[i] * f[j];
            }
            n++;
        }
        for (int i = 0; i < nt; i++)
            for (int j = i + 1; j < nt; j++)
                A[i * nt + j] = A[j * nt + i];
        if (n < nt || !sm_solve(A, r, nt))
            break;
        memcpy(coef, r, sizeof(double) * (size_t)nt);
        fitted = 1;
        /* 3σ rejection on the residuals (a rejected mesh may come back) */
        double ss = 0.0;
        for (int64_t k = 0; k < np; k++)
            if (keep[k]) {
                double m = 0.0;
                for (int t = 0; t < nt; t++)
                    m += coef[t] * fk[k * nt + t];
                ss += (grid[k] - m) * (grid[k] - m);
            }
        const double sigma = n > nt ? sqrt(ss / (double)(n - nt)) : 0.0;
        int64_t changed = 0, kept = 0;
        for (int64_t k = 0; k < np; k++) {
            double m = 0.0;
            for (int t = 0; t < nt; t++)
                m += coef[t] * fk[k * nt + t];
            const unsigned char kk = sigma > 0.0 ? fabs(grid[k] - m) <= 3.0 * sigma : 1;
            changed += kk != keep[k];
            kept += kk;
            keep[k] = kk;
        }
        if (!changed || kept < nt)
            break;
    }
    if (!fitted) { /* degenerate grid: its median as a constant */
        float *tmp = malloc(sizeof(float) * (size_t)np);
        if (!tmp) {
            free(keep);
            free(fk);
            return tide_error(TIDE_E_NOMEM, "background: out of memory for the smooth fit");
        }
        memcpy(tmp, grid, sizeof(float) * (size_t)np);
        poly->nt = 1;
        pa[0] = pb[0] = 0;
        coef[0] = mesh_median(tmp, np);
        free(tmp);
    }
    free(keep);
    free(fk);
    return TIDE_OK;
}
