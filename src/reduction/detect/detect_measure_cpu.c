/* detect_measure_cpu.c — CPU twins of deblending (detect_deblend_math.h, one OpenMP task per
 * parent) and of the per-source measurements (detect_measure_math.h: the 32 lanes walked one
 * after the other, merged in the GPU's tree order). */
#include <stdlib.h>
#include <string.h>

#include "detect_deblend_math.h"
#include "detect_kernels.h"
#include "detect_measure_math.h"
#include "tide/status.h"

int tide_det_deblend_cpu(tide_ctx *ctx, tide_det_work *w, double thresh, int nthresh,
                         double mincont, int64_t minarea, int limit) {
    (void)ctx;
    const int64_t np = w->nparent, N = w->npix;
    w->scr_off = malloc(sizeof(int64_t) * (size_t)(np + 1));
    w->par_nchild = malloc(sizeof(int32_t) * (size_t)(np + 1));
    w->par_flags = calloc((size_t)(np + 1), sizeof(int32_t));
    w->child_off = malloc(sizeof(int64_t) * (size_t)(np + 1));
    w->pix_local = malloc(sizeof(int32_t) * (size_t)(w->npixon + 1));
    if (!w->scr_off || !w->par_nchild || !w->par_flags || !w->child_off || !w->pix_local)
        return tide_error(TIDE_E_NOMEM, "tide_detect: deblending arrays");
    w->scr_off[0] = 0;
    for (int64_t k = 0; k < np; k++)
        w->scr_off[k + 1] =
            w->scr_off[k] + tide_det_deblend_scratch_bytes(w->par_area[k], minarea, limit);
    w->scratch = malloc((size_t)w->scr_off[np] + 8);
    if (!w->scratch)
        return tide_error(TIDE_E_NOMEM, "tide_detect: deblending scratch (%lld bytes)",
                          (long long)w->scr_off[np]);
#pragma omp parallel for schedule(dynamic, 8)
    for (int64_t k = 0; k < np; k++) {
        int64_t o = w->par_off[k];
        w->par_nchild[k] =
            tide_det_deblend_one(w->par_area[k], w->pix_idx + o, w->pix_val + o, w->width, thresh,
                                 (double)w->par_peak[k], nthresh, mincont, minarea, limit,
                                 w->scratch + w->scr_off[k], w->pix_local + o, &w->par_flags[k]);
    }
    w->child_off[0] = 0;
    for (int64_t k = 0; k < np; k++)
        w->child_off[k + 1] = w->child_off[k] + w->par_nchild[k];
    const int64_t ns = w->nsrc = w->child_off[np];
    w->seg = malloc(sizeof(int32_t) * (size_t)N);
    w->src_bbox = malloc(sizeof(int32_t) * 4 * (size_t)ns);
    w->src_parent = malloc(sizeof(int64_t) * (size_t)ns);
    if (!w->seg || !w->src_bbox || !w->src_parent)
        return tide_error(TIDE_E_NOMEM, "tide_detect: segmentation of %lld sources", (long long)ns);
    memset(w->seg, 0xFF, sizeof(int32_t) * (size_t)N);
#pragma omp parallel for schedule(dynamic, 8)
    for (int64_t k = 0; k < np; k++) {
        const int64_t c0 = w->child_off[k];
        for (int64_t c = c0; c < w->child_off[k + 1]; c++) {
            int32_t *bb = w->src_bbox + 4 * c;
            bb[0] = bb[1] = INT32_MAX;
            bb[2] = bb[3] = -1;
            w->src_parent[c] = k;
        }
        for (int64_t i = w->par_off[k]; i < w->par_off[k + 1]; i++) {
            int64_t c = c0 + w->pix_local[i];
            int32_t p = w->pix_idx[i];
            int32_t x = (int32_t)(p % w->width), y = (int32_t)(p / w->width);
            int32_t *bb = w->src_bbox + 4 * c;
            w->seg[p] = (int32_t)c;
            if (x < bb[0])
                bb[0] = x;
            if (y < bb[1])
                bb[1] = y;
            if (x > bb[2])
                bb[2] = x;
            if (y > bb[3])
                bb[3] = y;
        }
    }
    return 0;
}

/* Lanes walked in order, merged in the tree order of the GPU's warp shuffles. */
static void measure_one(const tide_det_view *v, const tide_det_mparams *mp, int64_t i, int64_t nsrc,
                        const int32_t *bb, int32_t pflags, double *f, int64_t *iv, int32_t *flags) {
    tide_det_iso_acc a[TIDE_DET_LANES];
    for (int l = 0; l < TIDE_DET_LANES; l++) {
        tide_det_iso_init(&a[l]);
        tide_det_iso_lane(v, mp, (int32_t)i, bb, l, &a[l]);
    }
    for (int off = TIDE_DET_LANES / 2; off > 0; off /= 2)
        for (int l = 0; l < off; l++)
            tide_det_iso_merge(&a[l], &a[l + off]);
    int32_t fl = pflags;
    tide_det_iso_res r;
    tide_det_iso_finish(&a[0], mp, bb, i, nsrc, f, iv, &fl, &r);

    const double sigw = tide_det_win_sigma(r.fwhm_psf);
    tide_det_win_acc b[TIDE_DET_LANES];
    double xc = r.x, yc = r.y;
    int ok = mp->niter > 0 ? 1 : 0;
    for (int it = 0; it < mp->niter; it++) {
        for (int l = 0; l < TIDE_DET_LANES; l++) {
            tide_det_win_init(&b[l]);
            tide_det_win_lane(v, mp, (int32_t)i, xc, yc, sigw, r.fwhm_psf, 0, l, &b[l]);
        }
        for (int off = TIDE_DET_LANES / 2; off > 0; off /= 2)
            for (int l = 0; l < off; l++)
                tide_det_win_merge(&b[l], &b[l + off]);
        int s = tide_det_win_step(&b[0], mp->eps, &xc, &yc);
        if (s < 0)
            ok = 0;
        if (s != 0)
            break;
    }
    if (ok && !tide_det_win_inside(bb, xc, yc))
        ok = 0;
    if (!ok) {
        xc = r.x;
        yc = r.y;
    }
    for (int l = 0; l < TIDE_DET_LANES; l++) {
        tide_det_win_init(&b[l]);
        tide_det_win_lane(v, mp, (int32_t)i, xc, yc, sigw, r.fwhm_psf, 1, l, &b[l]);
    }
    for (int off = TIDE_DET_LANES / 2; off > 0; off /= 2)
        for (int l = 0; l < off; l++)
            tide_det_win_merge(&b[l], &b[l + off]);
    tide_det_win_finish(&b[0], &r, sigw, ok, xc, yc, i, nsrc, f, &fl);
    flags[i] = fl;
}

int tide_det_measure_cpu(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                         const tide_image *snr, const tide_det_mparams *mp, tide_det_work *w) {
    (void)ctx;
    const int64_t ns = w->nsrc;
    w->f64 = malloc(sizeof(double) * (size_t)(TIDE_DET_NF64 * ns));
    w->i64 = malloc(sizeof(int64_t) * (size_t)(3 * ns));
    w->flags = malloc(sizeof(int32_t) * (size_t)ns);
    if (!w->f64 || !w->i64 || !w->flags)
        return tide_error(TIDE_E_NOMEM, "tide_detect: measurements of %lld sources", (long long)ns);
    tide_det_view v;
    v.sub = sub->pix;
    v.mask = sub->mask;
    v.rms = rms->pix;
    v.snr = snr->pix;
    v.seg = w->seg;
    v.sub_stride = sub->stride;
    v.rms_stride = rms->stride;
    v.snr_stride = snr->stride;
    v.width = w->width;
    v.height = w->height;
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t i = 0; i < ns; i++) {
        int32_t pf = w->par_flags[w->src_parent[i]];
        if (w->par_nchild[w->src_parent[i]] < 2)
            pf &= ~TIDE_DETECT_FLAG_DEBLENDED;
        measure_one(&v, mp, i, ns, w->src_bbox + 4 * i, pf, w->f64, w->i64, w->flags);
    }
    return 0;
}

void tide_det_work_free_cpu(tide_ctx *ctx, tide_det_work *w) {
    (void)ctx;
    void *ptrs[] = {w->label,      w->par_area,  w->par_bbox,  w->par_peak, w->par_off,
                    w->pix_idx,    w->pix_val,   w->scr_off,   w->scratch,  w->pix_local,
                    w->par_nchild, w->par_flags, w->child_off, w->seg,      w->src_bbox,
                    w->src_parent, w->f64,       w->i64,       w->flags};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        free(ptrs[i]);
    memset(w, 0, sizeof *w);
}
