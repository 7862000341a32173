/* detect_measure_cuda.cu — CUDA twins of deblending (one thread per parent runs
 * detect_deblend_math.h, the CPU's very code) and of the per-source measurements (one warp per
 * source; lanes and the merge tree as in detect_measure_math.h, so the order of every sum is
 * the CPU's). */
#include <stdlib.h>
#include <string.h>

#include "core/gpu/cuda_check.h"
#include "detect_cuda_util.h"
#include "detect_deblend_math.h"
#include "detect_kernels.h"
#include "detect_measure_math.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"

static __global__ void k_scratch_bytes(const int64_t *area, int64_t np, int64_t minarea, int limit,
                                       int64_t host_area, int64_t *bytes) {
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < np)
        bytes[k] = area[k] >= host_area ? 0 /* deblended on the host */
                                        : tide_det_deblend_scratch_bytes(area[k], minarea, limit);
}

/* Deblending is serial and branchy per parent, so the lanes of a warp that hold different
 * parents mostly wait on each other. Each warp takes `per_warp` parents (lanes 0..per_warp-1,
 * one parent each): 1 when there are few parents (a 2048² frame's ~1,000 parents then run on
 * every multiprocessor instead of on 10 of them), up to 32 for very many (deblend_per_warp).
 * The result does not depend on it. */
static __global__ void k_deblend(tide_det_work w, double thresh, int nthresh, double mincont,
                                 int64_t minarea, int limit, int64_t host_area, int per_warp) {
    const int lane = threadIdx.x & 31;
    if (lane >= per_warp)
        return;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int64_t k = warp * per_warp + lane;
    if (k >= w.nparent)
        return;
    if (w.par_area[k] >= host_area)
        return; /* the host does it */
    int64_t o = w.par_off[k];
    int32_t fl = 0;
    w.par_nchild[k] = tide_det_deblend_one(w.par_area[k], w.pix_idx + o, w.pix_val + o, w.width,
                                           thresh, (double)w.par_peak[k], nthresh, mincont, minarea,
                                           limit, w.scratch + w.scr_off[k], w.pix_local + o, &fl);
    w.par_flags[k] = fl;
    w.child_off[k] = w.par_nchild[k]; /* widened for the scan */
}

/* Parents per warp for k_deblend: the fewest (a power of two) that still leaves ~16 warps per
 * multiprocessor. */
static int deblend_per_warp(int64_t np) {
    int dev = 0, nsm = 132;
    if (cudaGetDevice(&dev) == cudaSuccess)
        cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev);
    const int64_t warps = (int64_t)nsm * 16;
    int p = 1;
    while (p < 32 && np > warps * p)
        p *= 2;
    return p;
}

/* Pack (gather = 1) or unpack the pixel segments of the host-deblended parents: block b copies
 * parent big[b]'s segment between the frame's lists and the packed buffers. */
static __global__ void k_big_pack(tide_det_work w, const int64_t *big, const int64_t *poff,
                                  int32_t *pidx, float *pval, int32_t *plocal, int gather) {
    const int64_t b = blockIdx.x, k = big[b];
    const int64_t o = w.par_off[k], n = w.par_area[k], d = poff[b];
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        if (gather) {
            pidx[d + i] = w.pix_idx[o + i];
            pval[d + i] = w.pix_val[o + i];
        } else {
            w.pix_local[o + i] = plocal[d + i];
        }
    }
}

static __global__ void k_big_results(tide_det_work w, const int64_t *big, int64_t nbig,
                                     const int32_t *nchild, const int32_t *flags) {
    const int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbig)
        return;
    const int64_t k = big[b];
    w.par_nchild[k] = nchild[b];
    w.par_flags[k] = flags[b];
    w.child_off[k] = nchild[b];
}

/* Host and device buffers of the large parents. */
typedef struct big_parents {
    int64_t n, npix;
    int64_t host_area;               /* parents of at least this many pixels are the host's */
    int64_t *h_big, *h_area, *h_off; /* parent index, area, packed offset (n + 1) */
    float *h_peak;
    int32_t *h_idx, *h_local, *h_nchild, *h_flags;
    float *h_val;
    int64_t *d_big, *d_off;
    int32_t *d_idx, *d_local, *d_nchild, *d_flags;
    float *d_val;
} big_parents;

static void big_free(tide_ctx *ctx, big_parents *b) {
    free(b->h_big), free(b->h_area), free(b->h_off), free(b->h_peak);
    free(b->h_idx), free(b->h_local), free(b->h_nchild), free(b->h_flags), free(b->h_val);
    void *d[] = {b->d_big, b->d_off, b->d_idx, b->d_local, b->d_nchild, b->d_flags, b->d_val};
    for (size_t i = 0; i < sizeof d / sizeof *d; i++)
        if (d[i])
            tide_device_free(ctx, d[i]);
    memset(b, 0, sizeof *b);
}

/* Find the large parents and bring their pixels to the host (one gather, one copy each way). */
static int big_fetch(tide_ctx *ctx, const tide_det_work *w, big_parents *b) {
    const int64_t np = w->nparent;
    memset(b, 0, sizeof *b);
    int64_t *area = (int64_t *)malloc(sizeof(int64_t) * (size_t)(np + 1));
    float *peak = (float *)malloc(sizeof(float) * (size_t)(np + 1));
    if (!area || !peak) {
        free(area), free(peak);
        return tide_error(TIDE_E_NOMEM, "tide_detect: parent areas");
    }
    int st = tide_memcpy(ctx, area, 0, w->par_area, 1, sizeof(int64_t) * (size_t)np);
    if (!st)
        st = tide_memcpy(ctx, peak, 0, w->par_peak, 1, sizeof(float) * (size_t)np);
    if (!st)
        b->host_area = tide_det_deblend_host_area(area, np);
    int64_t n = 0;
    for (int64_t k = 0; !st && k < np; k++)
        n += area[k] >= b->host_area;
    if (st || n == 0) {
        free(area), free(peak);
        return st;
    }
    b->n = n;
    b->h_big = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
    b->h_area = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
    b->h_off = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    b->h_peak = (float *)malloc(sizeof(float) * (size_t)n);
    b->h_nchild = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    b->h_flags = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    if (!b->h_big || !b->h_area || !b->h_off || !b->h_peak || !b->h_nchild || !b->h_flags)
        st = tide_error(TIDE_E_NOMEM, "tide_detect: %lld large parents", (long long)n);
    int64_t j = 0, tot = 0;
    for (int64_t k = 0; !st && k < np; k++)
        if (area[k] >= b->host_area) {
            b->h_big[j] = k, b->h_area[j] = area[k], b->h_peak[j] = peak[k];
            b->h_off[j++] = tot;
            tot += area[k];
        }
    free(area), free(peak);
    if (st)
        return st;
    b->h_off[n] = tot;
    b->npix = tot;
    b->h_idx = (int32_t *)malloc(sizeof(int32_t) * (size_t)tot);
    b->h_val = (float *)malloc(sizeof(float) * (size_t)tot);
    b->h_local = (int32_t *)malloc(sizeof(int32_t) * (size_t)tot);
    if (!b->h_idx || !b->h_val || !b->h_local)
        return tide_error(TIDE_E_NOMEM, "tide_detect: %lld pixels of large parents",
                          (long long)tot);
    st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)n, (void **)&b->d_big);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)(n + 1), (void **)&b->d_off);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)tot, (void **)&b->d_idx);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(float) * (size_t)tot, (void **)&b->d_val);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)tot, (void **)&b->d_local);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&b->d_nchild);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&b->d_flags);
    if (!st)
        st = tide_memcpy(ctx, b->d_big, 1, b->h_big, 0, sizeof(int64_t) * (size_t)n);
    if (!st)
        st = tide_memcpy(ctx, b->d_off, 1, b->h_off, 0, sizeof(int64_t) * (size_t)(n + 1));
    if (st)
        return st;
    k_big_pack<<<(unsigned)n, 256, 0, (cudaStream_t)ctx->stream>>>(*w, b->d_big, b->d_off, b->d_idx,
                                                                   b->d_val, NULL, 1);
    TIDE_CUDA_LAUNCHED();
    st = tide_memcpy(ctx, b->h_idx, 0, b->d_idx, 1, sizeof(int32_t) * (size_t)tot);
    if (!st)
        st = tide_memcpy(ctx, b->h_val, 0, b->d_val, 1, sizeof(float) * (size_t)tot);
    return st;
}

/* Send the host's results back into the frame's arrays (stream-ordered after k_deblend). */
static int big_store(tide_ctx *ctx, const tide_det_work *w, big_parents *b) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    const int64_t n = b->n;
    TIDE_CUDA_TRY(cudaMemcpyAsync(b->d_local, b->h_local, sizeof(int32_t) * (size_t)b->npix,
                                  cudaMemcpyHostToDevice, s));
    TIDE_CUDA_TRY(cudaMemcpyAsync(b->d_nchild, b->h_nchild, sizeof(int32_t) * (size_t)n,
                                  cudaMemcpyHostToDevice, s));
    TIDE_CUDA_TRY(cudaMemcpyAsync(b->d_flags, b->h_flags, sizeof(int32_t) * (size_t)n,
                                  cudaMemcpyHostToDevice, s));
    k_big_pack<<<(unsigned)n, 256, 0, s>>>(*w, b->d_big, b->d_off, NULL, NULL, b->d_local, 0);
    k_big_results<<<tide_det_blocks(n, 128), 128, 0, s>>>(*w, b->d_big, n, b->d_nchild, b->d_flags);
    TIDE_CUDA_LAUNCHED();
    /* The host buffers are pageable: the copies above have been staged by the time
     * cudaMemcpyAsync returns, but wait anyway before they are freed. */
    return tide_sync(ctx);
}

static __global__ void k_src_init(tide_det_work w) {
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= w.nparent)
        return;
    for (int64_t c = w.child_off[k]; c < w.child_off[k + 1]; c++) {
        int32_t *bb = w.src_bbox + 4 * c;
        bb[0] = bb[1] = INT32_MAX;
        bb[2] = bb[3] = -1;
        w.src_parent[c] = k;
    }
}

static __global__ void k_scatter(tide_det_work w) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= w.npixon)
        return;
    /* parent of list element i: last k with par_off[k] <= i */
    int64_t lo = 0, hi = w.nparent;
    while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (w.par_off[mid] <= i)
            lo = mid;
        else
            hi = mid;
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

extern "C" int tide_det_deblend_cuda(tide_ctx *ctx, tide_det_work *w, double thresh, int nthresh,
                                     double mincont, int64_t minarea, int limit) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    const int64_t np = w->nparent;
    int st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)(np + 1), (void **)&w->scr_off);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)(np + 1), (void **)&w->par_nchild);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)(np + 1), (void **)&w->par_flags);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)(np + 1), (void **)&w->child_off);
    if (!st)
        st =
            tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)(w->npixon + 1), (void **)&w->pix_local);
    if (st)
        return st;
    const unsigned nbp = tide_det_blocks(np, 128);
    /* Which parents the host takes (and their pixels), before the GPU's scratch is sized. */
    big_parents big;
    st = big_fetch(ctx, w, &big);
    if (st) {
        big_free(ctx, &big);
        return st;
    }
    k_scratch_bytes<<<nbp, 128, 0, s>>>(w->par_area, np, minarea, limit, big.host_area, w->scr_off);
    int64_t total = 0;
    st = tide_det_scan_i64(ctx, w->scr_off, w->scr_off, np, &total);
    if (!st)
        st = tide_memcpy(ctx, w->scr_off + np, 1, &total, 0, sizeof(int64_t));
    if (!st)
        st = tide_det_dalloc(ctx, (size_t)total + 8, (void **)&w->scratch);
    if (st) {
        big_free(ctx, &big);
        return st;
    }
    const int per_warp = deblend_per_warp(np);
    const int64_t nwarps = (np + per_warp - 1) / per_warp;
    /* The two sides' own times, for the benchmarks (the stage timer sees only the longer):
     * device time of k_deblend from events, host wall time of the large parents. */
    cudaEvent_t ev[2] = {NULL, NULL};
    if (cudaEventCreate(&ev[0]) != cudaSuccess || cudaEventCreate(&ev[1]) != cudaSuccess ||
        cudaEventRecord(ev[0], s) != cudaSuccess)
        cudaGetLastError(); /* timing is optional */
    k_deblend<<<tide_det_blocks(nwarps, 4), 128, 0, s>>>(*w, thresh, nthresh, mincont, minarea,
                                                         limit, big.host_area, per_warp);
    cudaError_t launched = cudaGetLastError();
    if (ev[1])
        cudaEventRecord(ev[1], s);
    if (launched != cudaSuccess) {
        for (int i = 0; i < 2; i++)
            if (ev[i])
                cudaEventDestroy(ev[i]);
        big_free(ctx, &big);
        return tide_error(TIDE_E_CUDA, "tide_detect: deblend kernel: %s",
                          cudaGetErrorString(launched));
    }
    /* The large parents, on the host while the GPU does the others. */
    if (big.n > 0) {
        const double t0 = tide_now();
        st = tide_det_deblend_host_batch(ctx, big.n, big.h_area, big.h_off, big.h_idx, big.h_val,
                                         big.h_peak, w->width, thresh, nthresh, mincont, minarea,
                                         limit, big.h_local, big.h_nchild, big.h_flags);
        if (!st)
            st = tide_timer_add(ctx, "detect.deblend_host", 1e3 * (tide_now() - t0));
        if (!st)
            st = big_store(ctx, w, &big);
    }
    float gpu_ms = 0.0f;
    if (ev[1] && cudaEventSynchronize(ev[1]) == cudaSuccess &&
        cudaEventElapsedTime(&gpu_ms, ev[0], ev[1]) == cudaSuccess && !st)
        st = tide_timer_add(ctx, "detect.deblend_gpu", gpu_ms);
    cudaGetLastError();
    for (int i = 0; i < 2; i++)
        if (ev[i])
            cudaEventDestroy(ev[i]);
    big_free(ctx, &big);
    if (st)
        return st;
    int64_t ns = 0;
    st = tide_det_scan_i64(ctx, w->child_off, w->child_off, np, &ns);
    if (!st)
        st = tide_memcpy(ctx, w->child_off + np, 1, &ns, 0, sizeof(int64_t));
    if (st)
        return st;
    w->nsrc = ns;
    st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)w->npix, (void **)&w->seg);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * 4 * (size_t)ns, (void **)&w->src_bbox);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)ns, (void **)&w->src_parent);
    if (st)
        return st;
    TIDE_CUDA_TRY(cudaMemsetAsync(w->seg, 0xFF, sizeof(int32_t) * (size_t)w->npix, s));
    k_src_init<<<nbp, 128, 0, s>>>(*w);
    k_scatter<<<tide_det_blocks(w->npixon, 256), 256, 0, s>>>(*w);
    TIDE_CUDA_LAUNCHED();
    /* the scratch is large and no longer needed (freed in stream order, after the scatter) */
    tide_device_free(ctx, w->scratch);
    w->scratch = NULL;
    return TIDE_OK;
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
                                double xc, double yc, double sigw, double fwhm, int full, int lane,
                                tide_det_win_acc *a) {
    tide_det_win_init(a);
    tide_det_win_lane(v, mp, id, xc, yc, sigw, fwhm, full, lane, a);
    for (int off = TIDE_DET_LANES / 2; off > 0; off /= 2) {
        tide_det_win_acc b;
        shfl_win(a, &b, off);
        if (lane < off)
            tide_det_win_merge(a, &b);
    }
}

static __global__ void k_measure(tide_det_view v, tide_det_mparams mp, tide_det_work w) {
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (i >= w.nsrc)
        return; /* whole warps leave together */
    const int64_t ns = w.nsrc;
    const int32_t *bb = w.src_bbox + 4 * i;
    tide_det_iso_acc a;
    tide_det_iso_init(&a);
    tide_det_iso_lane(&v, &mp, (int32_t)i, bb, lane, &a);
    for (int off = TIDE_DET_LANES / 2; off > 0; off /= 2) {
        tide_det_iso_acc b;
        shfl_iso(&a, &b, off);
        if (lane < off)
            tide_det_iso_merge(&a, &b);
    }
    int32_t fl = 0;
    tide_det_iso_res r = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (lane == 0) {
        int64_t k = w.src_parent[i];
        fl = w.par_flags[k];
        if (w.par_nchild[k] < 2)
            fl &= ~TIDE_DETECT_FLAG_DEBLENDED;
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
        if (lane == 0)
            s = tide_det_win_step(&b, mp.eps, &xc, &yc);
        s = __shfl_sync(m, s, 0);
        xc = __shfl_sync(m, xc, 0);
        yc = __shfl_sync(m, yc, 0);
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
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int64_t) * 3 * (size_t)ns, (void **)&w->i64);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)ns, (void **)&w->flags);
    if (st)
        return st;
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
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK; /* stream-ordered: the table's copies to the host wait for it */
}

extern "C" void tide_det_work_free_cuda(tide_ctx *ctx, tide_det_work *w) {
    void *ptrs[] = {w->label,      w->par_area,  w->par_bbox,  w->par_peak, w->par_off,
                    w->pix_idx,    w->pix_val,   w->scr_off,   w->scratch,  w->pix_local,
                    w->par_nchild, w->par_flags, w->child_off, w->seg,      w->src_bbox,
                    w->src_parent, w->f64,       w->i64,       w->flags};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        tide_device_free(ctx, ptrs[i]);
    memset(w, 0, sizeof *w);
}
