/* aperture_cpu.c — CPU twins of the aperture kernels: one aperture (source, radius) per
 * OpenMP iteration of the sums, one source per iteration of the annulus,
 * plain loops, the per-pixel math from aperture_math.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "aperture_kernels.h"
#include "aperture_math.h"
#include "aperture_pixel.h"
#include "tide/photometry.h"
#include "tide/status.h"

/* Aperture o = s * nr + k: source s at its k-th radius. */
static void ap_one(const tide_ap_job *job, int64_t o) {
    const tide_ap_planes *im = &job->im;
    const int64_t s = o / job->nr;
    const int k = (int)(o - s * job->nr);
    const double cx = job->x[s], cy = job->y[s];
    const double bkg = job->bkg ? job->bkg[s] : 0.0, bkg_err = job->bkg_err ? job->bkg_err[s] : 0.0;
    {
        const double r = job->per_source ? job->radii[s * job->nr + k] : job->radii[k];
        tide_ap_acc a = tide_ap_acc_zero();
        if (isfinite(cx) && isfinite(cy) && r > 0.0) {
            int64_t x0, x1, y0, y1;
            tide_ap_range(cx, r, &x0, &x1);
            tide_ap_range(cy, r, &y0, &y1);
            for (int64_t j = y0; j <= y1; j++)
                for (int64_t i = x0; i <= x1; i++) {
                    const double w = tide_ap_pixel_overlap(i, j, cx, cy, r);
                    if (w > 0.0)
                        tide_ap_add(&a, im, i, j, w, cx, cy, job->mask_correct);
                }
        }
        int32_t fl;
        tide_ap_finalize(a.sf, a.sv, a.aval, a.amask, a.amiss, a.aout, bkg, bkg_err,
                         job->mask_correct, job->gain_eff, &job->flux[o], &job->fluxerr[o], &fl);
        if (!(isfinite(cx) && isfinite(cy) && r > 0.0))
            fl |= TIDE_PHOT_FIT_FAILED;
        if (job->area)
            job->area[o] = a.aval + a.amiss; /* in the frame */
        if (job->masked_area)
            job->masked_area[o] = a.amask;
        if (job->aflags)
            job->aflags[o] |= fl; /* zeroed or pre-set by the caller */
    }
}

int tide_ap_sum_cpu(tide_ctx *ctx, const tide_ap_job *job) {
    (void)ctx;
    /* one iteration per (source, radius), as the CUDA twin's warps: a growth curve of a few
     * hundred stars × ~80 radii spreads over every thread */
    const int64_t no = job->nr > 0 ? job->n * job->nr : 0;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t o = 0; o < no; o++)
        ap_one(job, o);
    return 0;
}

static int cmp_float(const void *a, const void *b) {
    const float fa = *(const float *)a, fb = *(const float *)b;
    return (fa > fb) - (fa < fb);
}

/* Σ v[lo..hi) and Σ (v - m)² in the fixed lane order of TIDE_AP_LANES (aperture_math.h), so
 * the CUDA block's reduction gives the same bits. */
static double lane_sum(const float *v, int lo, int hi, int squares, double m) {
    double lane[TIDE_AP_LANES];
    for (int l = 0; l < TIDE_AP_LANES; l++) {
        double acc = 0.0;
        for (int i = lo + l; i < hi; i += TIDE_AP_LANES) {
            const double d = squares ? (double)v[i] - m : (double)v[i];
            acc += squares ? d * d : d;
        }
        lane[l] = acc;
    }
    for (int s = TIDE_AP_LANES / 2; s > 0; s >>= 1)
        for (int l = 0; l < s; l++)
            lane[l] += lane[l + s];
    return lane[0];
}

/* Astropy's sigma clipping on a sorted array: the kept set stays a contiguous range. */
static void clip_sorted(const float *v, int nv, double sigma, int maxiters, double *med,
                        double *std, int *nkept) {
    int lo = 0, hi = nv;
    for (int it = 0; maxiters <= 0 || it < maxiters; it++) {
        const double m = tide_ap_sorted_median(v, lo, hi);
        const double mean = lane_sum(v, lo, hi, 0, 0.0) / (hi - lo);
        const double sd = sqrt(lane_sum(v, lo, hi, 1, mean) / (hi - lo));
        const int nlo = tide_ap_lower_bound(v, lo, hi, m - sigma * sd);
        const int nhi = tide_ap_upper_bound(v, nlo, hi, m + sigma * sd);
        if (nhi - nlo == hi - lo || nhi <= nlo)
            break;
        lo = nlo;
        hi = nhi;
    }
    *med = tide_ap_sorted_median(v, lo, hi);
    const double mean = lane_sum(v, lo, hi, 0, 0.0) / (hi - lo);
    *std = sqrt(lane_sum(v, lo, hi, 1, mean) / (hi - lo));
    *nkept = hi - lo;
}

int tide_ap_annulus_cpu(tide_ctx *ctx, const tide_ann_job *job) {
    (void)ctx;
    int st = 0;
#pragma omp parallel
    {
        float *buf = malloc(sizeof(float) * TIDE_PHOT_ANNULUS_MAX);
        if (!buf) {
#pragma omp atomic write
            st = TIDE_E_NOMEM;
        }
#pragma omp for schedule(dynamic, 64)
        for (int64_t s = 0; s < job->n; s++) {
            if (!buf)
                continue;
            const tide_ap_planes *im = &job->im;
            const double cx = job->x[s], cy = job->y[s];
            int nv = 0;
            if (isfinite(cx) && isfinite(cy)) {
                int64_t x0, x1, y0, y1;
                x0 = (int64_t)ceil(cx - job->rout);
                x1 = (int64_t)floor(cx + job->rout);
                y0 = (int64_t)ceil(cy - job->rout);
                y1 = (int64_t)floor(cy + job->rout);
                if (x0 < 0)
                    x0 = 0;
                if (y0 < 0)
                    y0 = 0;
                if (x1 >= im->width)
                    x1 = im->width - 1;
                if (y1 >= im->height)
                    y1 = im->height - 1;
                const double ri2 = job->rin * job->rin, ro2 = job->rout * job->rout;
                for (int64_t j = y0; j <= y1; j++)
                    for (int64_t i = x0; i <= x1; i++) {
                        const double dx = i - cx, dy = j - cy, d2 = dx * dx + dy * dy;
                        double d, v;
                        if (d2 < ri2 || d2 >= ro2 || !tide_ap_read(im, i, j, &d, &v))
                            continue;
                        if (nv < TIDE_PHOT_ANNULUS_MAX)
                            buf[nv++] = (float)d;
                    }
            }
            if (nv < job->minpix || nv < 2) {
                job->bkg[s] = 0.0;
                job->bkg_err[s] = 0.0;
                job->flags[s] |= TIDE_PHOT_BKG_FAILED;
                continue;
            }
            qsort(buf, (size_t)nv, sizeof(float), cmp_float);
            double med, sd;
            int nk;
            clip_sorted(buf, nv, job->sigma, job->maxiters, &med, &sd, &nk);
            job->bkg[s] = med;
            /* error of a median: sqrt(π/2) × that of the mean (Gaussian values) */
            job->bkg_err[s] = nk > 0 ? 1.2533141373155003 * sd / sqrt((double)nk) : 0.0;
        }
        free(buf);
    }
    return st;
}
