/* xray_traces.c — from the on/off cubes to traces: the trace grid over the ROI, row blocks read
 * as hyperslabs (with the neighbouring-row halo), column sums per tile, the per-frame monitor
 * normalisation and the on/off ratio; and the zero delay found in the mean trace. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tide/status.h"
#include "xray/xray_internal.h"
#include "xray/xray_math.h"

void tide_xray_trace_defaults(tide_xray_trace_params *p) {
    memset(p, 0, sizeof *p);
    p->tile_x = 16;
    p->tile_y = 1;
    p->integrate = 3;
    p->savgol_window = 5;
    p->savgol_order = 3;
    p->zero_index = -1;
    p->zero_delay = NAN;
    p->drop_leading = 1;
    p->drop_trailing = 1;
    p->block_rows = 64;
}

int xray_grid(const tide_xray_info *in, const tide_xray_trace_params *tp, const char *path,
              xray_trace_grid *g) {
    memset(g, 0, sizeof *g);
    int64_t r[4] = {tp->roi[0], tp->roi[1], tp->roi[2], tp->roi[3]};
    if (r[2] <= 0) {
        r[0] = r[1] = 0;
        r[2] = in->nx;
        r[3] = in->ny;
    }
    if (r[0] < 0 || r[1] < 0 || r[3] <= 0 || r[0] + r[2] > in->nx || r[1] + r[3] > in->ny)
        return tide_error(TIDE_E_RANGE,
                          "%s: ROI %lld,%lld,%lld,%lld is outside the %lld x %lld "
                          "cube",
                          path, (long long)r[0], (long long)r[1], (long long)r[2], (long long)r[3],
                          (long long)in->nx, (long long)in->ny);
    if (tp->tile_x < 1 || tp->tile_y < 1 || tp->integrate < 0)
        return tide_error(TIDE_E_INVAL, "xray: tile %d x %d, integrate %d", tp->tile_x, tp->tile_y,
                          tp->integrate);
    g->tx = r[2] / tp->tile_x;
    g->ty = r[3] / tp->tile_y;
    if (g->tx < 1 || g->ty < 1)
        return tide_error(TIDE_E_RANGE, "%s: ROI %lld x %lld holds no whole %d x %d tile", path,
                          (long long)r[2], (long long)r[3], tp->tile_x, tp->tile_y);
    memcpy(g->roi, r, sizeof r);
    g->nframes = (int)in->nframes;
    return 0;
}

/* The detector rows [r0, r1) that trace rows [ty0, ty1) sum, their halo included. */
static void block_rows(const xray_trace_grid *g, const tide_xray_trace_params *tp, int64_t ny,
                       int64_t ty0, int64_t ty1, int64_t *r0, int64_t *r1) {
    *r0 = g->roi[1] + ty0 * tp->tile_y - tp->integrate;
    *r1 = g->roi[1] + ty1 * tp->tile_y + tp->integrate;
    if (*r0 < 0)
        *r0 = 0;
    if (*r1 > ny)
        *r1 = ny;
}

int xray_rows_buf_alloc(const xray_file *on, const tide_xray_trace_params *tp,
                        const xray_trace_grid *g, int64_t rows, xray_rows_buf *b) {
    memset(b, 0, sizeof *b);
    int64_t r0, r1, nr = 0;
    for (int64_t y0 = 0; y0 < g->ty; y0 += rows) { /* the largest block */
        block_rows(g, tp, on->info.ny, y0, y0 + rows < g->ty ? y0 + rows : g->ty, &r0, &r1);
        nr = r1 - r0 > nr ? r1 - r0 : nr;
    }
    const int64_t F = g->nframes, w = g->tx * tp->tile_x;
    b->bon = malloc((size_t)(F * nr * w) * sizeof *b->bon);
    b->boff = malloc((size_t)(F * nr * w) * sizeof *b->boff);
    b->son = malloc((size_t)(F * nr * g->tx) * 2 * sizeof *b->son);
    if (!b->bon || !b->boff || !b->son) {
        xray_rows_buf_free(b);
        return tide_error(TIDE_E_NOMEM, "xray: row block of %lld x %lld x %lld", (long long)F,
                          (long long)nr, (long long)w);
    }
    return 0;
}

void xray_rows_buf_free(xray_rows_buf *b) {
    free(b->bon);
    free(b->boff);
    free(b->son);
    memset(b, 0, sizeof *b);
}

int xray_traces_rows(xray_file *on, xray_file *off, const tide_xray_trace_params *tp,
                     const xray_trace_grid *g, int64_t ty0, int64_t ty1, xray_rows_buf *b,
                     double *out, uint8_t *reason) {
    const int64_t F = g->nframes, ny = on->info.ny, TX = tp->tile_x, TY = tp->tile_y;
    const int64_t R = tp->integrate, ntx = g->tx;
    int64_t r0, r1;
    block_rows(g, tp, ny, ty0, ty1, &r0, &r1);
    const int64_t nr = r1 - r0, x0 = g->roi[0], w = ntx * TX;
    float *bon = b->bon, *boff = b->boff;
    double *son = b->son;
    int st;
    if ((st = xray_read_block(on, r0, r1, x0, x0 + w, bon)) ||
        (st = xray_read_block(off, r0, r1, x0, x0 + w, boff)))
        return st;
    double *soff = son + F * nr * ntx;
    /* column sums per tile, per frame and row; NaN pixels count as 0 (cuPhoton's NaN→0) */
#pragma omp parallel for schedule(static)
    for (int64_t fr = 0; fr < F * nr; fr++)
        for (int64_t ix = 0; ix < ntx; ix++) {
            double a = 0.0, b = 0.0;
            for (int64_t x = ix * TX; x < (ix + 1) * TX; x++) {
                const float u = bon[fr * w + x], v = boff[fr * w + x];
                a += isfinite(u) ? u : 0.0f;
                b += isfinite(v) ? v : 0.0f;
            }
            son[fr * ntx + ix] = a;
            soff[fr * ntx + ix] = b;
        }
    const double *mon = on->info.mon, *moff = off->info.mon;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < (ty1 - ty0) * ntx; t++) {
        const int64_t iy = ty0 + t / ntx, ix = t % ntx;
        int64_t a0 = g->roi[1] + iy * TY - R, a1 = g->roi[1] + (iy + 1) * TY + R;
        if (a0 < 0)
            a0 = 0;
        if (a1 > ny)
            a1 = ny;
        double *s = out + t * F;
        int bad = 0;
        for (int64_t f = 0; f < F; f++) {
            double a = 0.0, b = 0.0;
            for (int64_t y = a0; y < a1; y++) {
                a += son[(f * nr + (y - r0)) * ntx + ix];
                b += soff[(f * nr + (y - r0)) * ntx + ix];
            }
            if (!(mon[f] > 0) || !(moff[f] > 0) || !(b > 0)) {
                bad = 1;
                break;
            }
            s[f] = (a / mon[f]) / (b / moff[f]) - 1.0;
        }
        reason[t] = bad ? TIDE_XRAY_R_NOLIGHT : TIDE_XRAY_R_NONE;
        if (bad) {
            for (int64_t f = 0; f < F; f++)
                s[f] = 0.0;
            continue;
        }
    }
    return 0;
}

int xray_zero_from_trace(const double *s, int n) {
    int best = 0;
    double bv = -1.0;
    for (int i = 3; i + 3 <= n; i++) {
        const double before = (s[i - 3] + s[i - 2] + s[i - 1]) / 3.0;
        const double after = (s[i] + s[i + 1] + s[i + 2]) / 3.0;
        const double d = fabs(after - before);
        if (d > bv) {
            bv = d;
            best = i;
        }
    }
    return best;
}
