/* detect_measure_cuda.cu — CUDA twins of deblending (one thread per parent runs
 * detect_deblend_math.h, the CPU's very code) and of the per-source measurements (one warp per
 * source; lanes and the merge tree as in detect_measure_math.h, so the order of every sum is
 * the CPU's). */
#include "core/cuda_check.h"
#include "phot/detect_cuda_util.h"
#include "phot/detect_deblend_math.h"
#include "phot/detect_kernels.h"
#include "phot/detect_measure_math.h"
#include "tide/memory.h"
#include "tide/status.h"

#define LAUNCH_OK(what)                                                                        \
    do {                                                                                       \
        cudaError_t e_ = cudaGetLastError();                                                   \
        if (e_ != cudaSuccess)                                                                 \
            return tide_error(TIDE_E_CUDA, "tide_detect: %s kernel: %s", what,                 \
                              cudaGetErrorString(e_));                                         \
    } while (0)

static __global__ void k_scratch_bytes(const int64_t *area, int64_t np, int64_t minarea,
                                       int limit, int64_t *bytes) {
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < np) bytes[k] = tide_det_deblend_scratch_bytes(area[k], minarea, limit);
}

static __global__ void k_deblend(tide_det_work w, double thresh, int nthresh, double mincont,
                                 int64_t minarea, int limit) {
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= w.nparent) return;
    int64_t o = w.par_off[k];
    int32_t fl = 0;
    w.par_nchild[k] = tide_det_deblend_one(w.par_area[k], w.pix_idx + o, w.pix_val + o, w.width,
                                           thresh, (double)w.par_peak[k], nthresh, mincont,
                                           minarea, limit, w.scratch + w.scr_off[k],
                                           w.pix_local + o, &fl);
    w.par_flags[k] = fl;
    w.child_off[k] = w.par_nchild[k]; /* widened for the scan */
}

static __global__ void k_src_init(tide_det_work w) {
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= w.nparent) return;
    for (int64_t c = w.child_off[k]; c < w.child_off[k + 1]; c++) {
        int32_t *bb = w.src_bbox + 4 * c;
        bb[0] = bb[1] = INT32_MAX;
        bb[2] = bb[3] = -1;
        w.src_parent[c] = k;
    }
}

static __global__ void k_scatter(tide_det_work w) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= w.npixon) return;
    /* parent of list element i: last k with par_off[k] <= i */
    int64_t lo = 0, hi = w.nparent;
    while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (w.par_off[mid] <= i) lo = mid;
        else hi = mid;
    }
    int64_t c = w.child_off[lo] + w.pix_local[i];
    int32_t p = w.pix_idx[i];
    int32_t x = (int32_t)(p % w.width), y = (int32_t)(p / w.width);
    w.seg[p] = (int32_t)c;
    atomicMin(&w.src_bbox[4 * c], x);
    atomicMin(&w.src_bbox[4 * c + 1], y);
    atomicMax(&w.src_bbox[4 * c + 2], x);
    atomicMax(&w.src_bbox[4 * c + 3], y);
}

extern "C" int tide_det_deblend_cuda(tide_ctx *ctx, tide_det_work *w, double thresh,
                                     int nthresh, double mincont, int64_t minarea, int limit) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    const int64_t np = w->nparent;
    int st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)(np + 1), (void **)&w->scr_off);
    if (!st) st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)(np + 1), (void **)&w->par_nchild);
    if (!st) st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)(np + 1), (void **)&w->par_flags);
    if (!st) st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)(np + 1), (void **)&w->child_off);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)(w->npixon + 1), (void **)&w->pix_local);
    if (st) return st;
    const unsigned nbp = tide_det_blocks(np, 128);
    k_scratch_bytes<<<nbp, 128, 0, s>>>(w->par_area, np, minarea, limit, w->scr_off);
    LAUNCH_OK("deblend scratch");
    int64_t total = 0;
    st = tide_det_scan_i64(ctx, w->scr_off, w->scr_off, np, &total);
    if (!st) st = tide_memcpy(ctx, w->scr_off + np, 1, &total, 0, sizeof(int64_t));
    if (!st) st = tide_det_dalloc(ctx, (size_t)total + 8, (void **)&w->scratch);
    if (st) return st;
    k_deblend<<<nbp, 128, 0, s>>>(*w, thresh, nthresh, mincont, minarea, limit);
    LAUNCH_OK("deblend");
    int64_t ns = 0;
    st = tide_det_scan_i64(ctx, w->child_off, w->child_off, np, &ns);
    if (!st) st = tide_memcpy(ctx, w->child_off + np, 1, &ns, 0, sizeof(int64_t));
    if (st) return st;
    w->nsrc = ns;
    st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)w->npix, (void **)&w->seg);
    if (!st) st = tide_det_dalloc(ctx, sizeof(int32_t) * 4 * (size_t)ns, (void **)&w->src_bbox);
    if (!st) st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)ns, (void **)&w->src_parent);
    if (st) return st;
    TIDE_CUDA_TRY(cudaMemsetAsync(w->seg, 0xFF, sizeof(int32_t) * (size_t)w->npix, s));
    k_src_init<<<nbp, 128, 0, s>>>(*w);
    k_scatter<<<tide_det_blocks(w->npixon, 256), 256, 0, s>>>(*w);
    LAUNCH_OK("segmentation");
    /* the scratch is large and no longer needed */
    tide_device_free(ctx, w->scratch);
    w->scratch = NULL;
    return tide_sync(ctx);
}

/* ---- measurements: one warp per source ------------------------------------------------- */

static __device__ void shfl_iso(const tide_det_iso_acc *a, tide_det_iso_acc *b, int off) {
    const unsigned m = 0xffffffffu;
    b->n = __shfl_down_sync(m, a->n, off);
    b->s = __shfl_down_sync(m, a->s, off);
    b->sx = __shfl_down_sync(m, a->sx, off);
    b->sy = __shfl_down_sync(m, a->sy, off);
    b->sxx = __shfl_down_sync(m, a->sxx, off);
    b->syy = __shfl_down_sync(m, a->syy, off);
    b->sxy = __shfl_down_sync(m, a->sxy, off);
    b->ux = __shfl_down_sync(m, a->ux, off);
    b->uy = __shfl_down_sync(m, a->uy, off);
    b->var = __shfl_down_sync(m, a->var, off);
    b->peak = __shfl_down_sync(m, a->peak, off);
    b->snrmax = __shfl_down_sync(m, a->snrmax, off);
    b->peakidx = __shfl_down_sync(m, (long long)a->peakidx, off);
    b->snridx = __shfl_down_sync(m, (long long)a->snridx, off);
    b->maskor = __shfl_down_sync(m, a->maskor, off);
    b->satur = __shfl_down_sync(m, a->satur, off);
}

static __device__ void shfl_win(const tide_det_win_acc *a, tide_det_win_acc *b, int off) {
    const unsigned m = 0xffffffffu;
    b->sw = __shfl_down_sync(m, a->sw, off);
    b->swx = __shfl_down_sync(m, a->swx, off);
    b->swy = __shfl_down_sync(m, a->swy, off);
    b->swxx = __shfl_down_sync(m, a->swxx, off);
    b->swyy = __shfl_down_sync(m, a->swyy, off);
    b->swxy = __shfl_down_sync(m, a->swxy, off);
    b->ex = __shfl_down_sync(m, a->ex, off);
    b->ey = __shfl_down_sync(m, a->ey, off);
    b->incomplete = __shfl_down_sync(m, a->incomplete, off);
    b->neighbour = __shfl_down_sync(m, a->neighbour, off);
}

static __device__ void win_pass(const tide_det_view *v, const tide_det_mparams *mp, int32_t id,
                                double xc, double yc, double sigw, double fwhm, int full,
                                int lane, tide_det_win_acc *a) {
    tide_det_win_init(a);
    tide_det_win_lane(v, mp, id, xc, yc, sigw, fwhm, full, lane, a);
    for (int off = TIDE_DET_LANES / 2; off > 0; off /= 2) {
        tide_det_win_acc b;
        shfl_win(a, &b, off);
        if (lane < off) tide_det_win_merge(a, &b);
    }
}

static __global__ void k_measure(tide_det_view v, tide_det_mparams mp, tide_det_work w) {
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (i >= w.nsrc) return; /* whole warps leave together */
    const int64_t ns = w.nsrc;
    const int32_t *bb = w.src_bbox + 4 * i;
    tide_det_iso_acc a;
    tide_det_iso_init(&a);
    tide_det_iso_lane(&v, &mp, (int32_t)i, bb, lane, &a);
    for (int off = TIDE_DET_LANES / 2; off > 0; off /= 2) {
        tide_det_iso_acc b;
        shfl_iso(&a, &b, off);
        if (lane < off) tide_det_iso_merge(&a, &b);
    }
    int32_t fl = 0;
    tide_det_iso_res r = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (lane == 0) {
        int64_t k = w.src_parent[i];
        fl = w.par_flags[k];
        if (w.par_nchild[k] < 2) fl &= ~TIDE_DETECT_FLAG_DEBLENDED;
        tide_det_iso_finish(&a, &mp, bb, i, ns, w.f64, w.i64, &fl, &r);
    }
    const unsigned m = 0xffffffffu;
    r.x = __shfl_sync(m, r.x, 0);
    r.y = __shfl_sync(m, r.y, 0);
    r.x2 = __shfl_sync(m, r.x2, 0);
    r.y2 = __shfl_sync(m, r.y2, 0);
    r.xy = __shfl_sync(m, r.xy, 0);
    r.fwhm_psf = __shfl_sync(m, r.fwhm_psf, 0);
    const double sigw = tide_det_win_sigma(r.fwhm_psf);
    double xc = r.x, yc = r.y;
    int ok = mp.niter > 0 ? 1 : 0;
    tide_det_win_acc b;
    for (int it = 0; it < mp.niter; it++) {
        win_pass(&v, &mp, (int32_t)i, xc, yc, sigw, r.fwhm_psf, 0, lane, &b);
        int s = 0;
        if (lane == 0) s = tide_det_win_step(&b, mp.eps, &xc, &yc);
        s = __shfl_sync(m, s, 0);
        xc = __shfl_sync(m, xc, 0);
        yc = __shfl_sync(m, yc, 0);
        if (s < 0) ok = 0;
        if (s != 0) break;
    }
    if (ok && !tide_det_win_inside(bb, xc, yc)) ok = 0;
    if (!ok) {
        xc = r.x;
        yc = r.y;
    }
    win_pass(&v, &mp, (int32_t)i, xc, yc, sigw, r.fwhm_psf, 1, lane, &b);
    if (lane == 0) {
        tide_det_win_finish(&b, &r, sigw, ok, xc, yc, i, ns, w.f64, &fl);
        w.flags[i] = fl;
    }
}

extern "C" int tide_det_measure_cuda(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                                     const tide_image *snr, const tide_det_mparams *mp,
                                     tide_det_work *w) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    const int64_t ns = w->nsrc;
    int st = tide_det_dalloc(ctx, sizeof(double) * TIDE_DET_NF64 * (size_t)ns, (void **)&w->f64);
    if (!st) st = tide_det_dalloc(ctx, sizeof(int64_t) * 3 * (size_t)ns, (void **)&w->i64);
    if (!st) st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)ns, (void **)&w->flags);
    if (st) return st;
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
    k_measure<<<tide_det_blocks(ns * 32, 128), 128, 0, s>>>(v, *mp, *w);
    LAUNCH_OK("measurement");
    return tide_sync(ctx);
}

extern "C" void tide_det_work_free_cuda(tide_ctx *ctx, tide_det_work *w) {
    void *ptrs[] = {w->label, w->par_area, w->par_bbox, w->par_peak, w->par_off, w->pix_idx,
                    w->pix_val, w->scr_off, w->scratch, w->pix_local, w->par_nchild,
                    w->par_flags, w->child_off, w->seg, w->src_bbox, w->src_parent, w->f64,
                    w->i64, w->flags};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) tide_device_free(ctx, ptrs[i]);
    memset(w, 0, sizeof *w);
}
