/* detect_label_cpu.c — CPU twin of the segmentation: 8-connected components of the pixels
 * with S/N >= thresh by union-find in raster order (a component's root is its first pixel, as
 * on the GPU), parents numbered by first pixel, parents smaller than minarea dropped, then
 * per-parent area, bbox, peak and pixel lists in raster order. */
#include <stdlib.h>
#include <string.h>

#include "detect_deblend_math.h"
#include "detect_filter_math.h"
#include "detect_kernels.h"
#include "tide/status.h"

int tide_det_label_cpu(tide_ctx *ctx, const tide_image *snr, double thresh, int64_t minarea,
                       tide_det_work *w) {
    (void)ctx;
    const int64_t W = w->width, H = w->height, N = w->npix;
    const float th = (float)thresh;
    int32_t *L = malloc(sizeof(int32_t) * (size_t)N);
    if (!L)
        return tide_error(TIDE_E_NOMEM, "tide_detect: label map (%lld pixels)", (long long)N);
    w->label = L;
    /* pass 1: union with the W, NW, N, NE neighbours */
    for (int64_t y = 0; y < H; y++) {
        const float *row = snr->pix + y * snr->stride;
        for (int64_t x = 0; x < W; x++) {
            int32_t p = (int32_t)(y * W + x);
            if (!tide_det_on(row[x], th)) {
                L[p] = -1;
                continue;
            }
            L[p] = p;
            if (x > 0 && L[p - 1] >= 0)
                tide_det_uf_union(L, p, p - 1);
            if (y > 0) {
                int32_t q = p - (int32_t)W;
                if (x > 0 && L[q - 1] >= 0)
                    tide_det_uf_union(L, p, q - 1);
                if (L[q] >= 0)
                    tide_det_uf_union(L, p, q);
                if (x < W - 1 && L[q + 1] >= 0)
                    tide_det_uf_union(L, p, q + 1);
            }
        }
    }
    /* pass 2: point every pixel at its root (roots precede their pixels) */
    for (int64_t p = 0; p < N; p++)
        if (L[p] >= 0)
            L[p] = L[L[p]];
    /* pass 3: number the components by root, and count them */
    int64_t ncomp = 0;
    for (int64_t p = 0; p < N; p++)
        if (L[p] == p)
            ncomp++;
    int64_t *area = calloc((size_t)(ncomp + 1), sizeof(int64_t));
    int32_t *map = malloc(sizeof(int32_t) * (size_t)(ncomp + 1));
    if (!area || !map) {
        free(area);
        free(map);
        return tide_error(TIDE_E_NOMEM, "tide_detect: %lld components", (long long)ncomp);
    }
    int64_t c = 0;
    for (int64_t p = 0; p < N; p++) {
        if (L[p] < 0)
            continue;
        if (L[p] == p)
            L[p] = (int32_t)c++;
        else
            L[p] = L[L[p]];
        area[L[p]]++;
    }
    int64_t np = 0;
    for (int64_t k = 0; k < ncomp; k++)
        map[k] = area[k] >= minarea ? (int32_t)np++ : -1;
    w->nparent = np;
    w->par_area = calloc((size_t)(np + 1), sizeof(int64_t));
    w->par_bbox = malloc(sizeof(int32_t) * 4 * (size_t)(np + 1));
    w->par_peak = malloc(sizeof(float) * (size_t)(np + 1));
    w->par_off = calloc((size_t)(np + 2), sizeof(int64_t));
    int st = 0;
    if (!w->par_area || !w->par_bbox || !w->par_peak || !w->par_off)
        st = tide_error(TIDE_E_NOMEM, "tide_detect: %lld parents", (long long)np);
    if (!st) {
        for (int64_t k = 0; k < np; k++) {
            w->par_bbox[4 * k] = w->par_bbox[4 * k + 1] = INT32_MAX;
            w->par_bbox[4 * k + 2] = w->par_bbox[4 * k + 3] = -1;
            w->par_peak[k] = -INFINITY;
        }
        for (int64_t k = 0; k < ncomp; k++)
            if (map[k] >= 0)
                w->par_area[map[k]] = area[k];
        for (int64_t k = 0; k < np; k++)
            w->par_off[k + 1] = w->par_off[k] + w->par_area[k];
        w->npixon = w->par_off[np];
        w->pix_idx = malloc(sizeof(int32_t) * (size_t)(w->npixon + 1));
        w->pix_val = malloc(sizeof(float) * (size_t)(w->npixon + 1));
        if (!w->pix_idx || !w->pix_val)
            st = tide_error(TIDE_E_NOMEM, "tide_detect: pixel lists");
    }
    if (!st) {
        int64_t *cur = area; /* reuse as the per-parent cursor */
        for (int64_t k = 0; k < np; k++)
            cur[k] = w->par_off[k];
        for (int64_t p = 0; p < N; p++) {
            if (L[p] < 0)
                continue;
            int32_t k = map[L[p]];
            L[p] = k;
            if (k < 0)
                continue;
            int64_t x = p % W, y = p / W;
            float v = snr->pix[y * snr->stride + x];
            int32_t *bb = w->par_bbox + 4 * k;
            if (x < bb[0])
                bb[0] = (int32_t)x;
            if (y < bb[1])
                bb[1] = (int32_t)y;
            if (x > bb[2])
                bb[2] = (int32_t)x;
            if (y > bb[3])
                bb[3] = (int32_t)y;
            if (v > w->par_peak[k])
                w->par_peak[k] = v;
            w->pix_idx[cur[k]] = (int32_t)p;
            w->pix_val[cur[k]] = v;
            cur[k]++;
        }
    }
    free(area);
    free(map);
    return st;
}
