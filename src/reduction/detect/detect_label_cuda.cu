/* detect_label_cuda.cu — CUDA twin of the segmentation (detect_label_cpu.c).
 *
 * Connected components by union-find label equivalence (Playne & Hawick 2018, IEEE TPDS 29,
 * 1217): every on-pixel starts as its own root and is joined to its W, NW, N and NE on-
 * neighbours with atomicMin links that always point to the smaller index, so whatever order
 * the threads run in, every component ends rooted at its first pixel in raster order — the
 * CPU's labels exactly. Roots are then numbered by a prefix sum (raster order), components
 * measured with integer atomics (area, bbox, peak S/N as the bits of a positive float), small
 * ones dropped by a second prefix sum, and each parent's pixels gathered in raster order
 * (detect_gather_cuda.cu). */
#include "core/gpu/cuda_check.h"
#include "detect_cuda_util.h"
#include "detect_filter_math.h"
#include "detect_kernels.h"
#include "tide/memory.h"
#include "tide/status.h"

static __device__ int32_t d_find(const int32_t *L, int32_t i) {
    const volatile int32_t *vl = L;
    int32_t p = vl[i];
    while (p != i) {
        i = p;
        p = vl[i];
    }
    return i;
}

static __device__ void d_union(int32_t *L, int32_t a, int32_t b) {
    for (;;) {
        a = d_find(L, a);
        b = d_find(L, b);
        if (a == b)
            return;
        if (a > b) {
            int32_t t = a;
            a = b;
            b = t;
        }
        int32_t old = atomicMin(&L[b], a);
        if (old == b)
            return;
        b = old;
    }
}

static __global__ void k_init(const float *snr, int64_t sstride, float th, int32_t *L, int64_t W,
                              int64_t N) {
    int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N)
        return;
    L[p] = tide_det_on(snr[(p / W) * sstride + p % W], th) ? (int32_t)p : -1;
}

static __global__ void k_merge(int32_t *L, int64_t W, int64_t N) {
    int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N || L[p] < 0)
        return;
    int64_t x = p % W, y = p / W;
    int32_t i = (int32_t)p;
    if (x > 0 && L[p - 1] >= 0)
        d_union(L, i, i - 1);
    if (y > 0) {
        int64_t q = p - W;
        if (x > 0 && L[q - 1] >= 0)
            d_union(L, i, (int32_t)(q - 1));
        if (L[q] >= 0)
            d_union(L, i, (int32_t)q);
        if (x < W - 1 && L[q + 1] >= 0)
            d_union(L, i, (int32_t)(q + 1));
    }
}

static __global__ void k_compress(int32_t *L, int32_t *flag, int64_t N) {
    int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N)
        return;
    int32_t r = L[p] >= 0 ? d_find(L, (int32_t)p) : -1;
    L[p] = r;
    flag[p] = r == p;
}

static __global__ void k_comp_stats(const int32_t *L, const int32_t *cid, const float *snr,
                                    int64_t sstride, int64_t W, int64_t N, unsigned long long *area,
                                    int32_t *bb, int32_t *peak) {
    int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N || L[p] < 0)
        return;
    int32_t c = cid[L[p]];
    int32_t x = (int32_t)(p % W), y = (int32_t)(p / W);
    atomicAdd(&area[c], 1ull);
    atomicMin(&bb[4 * c], x);
    atomicMin(&bb[4 * c + 1], y);
    atomicMax(&bb[4 * c + 2], x);
    atomicMax(&bb[4 * c + 3], y);
    /* on-pixels have S/N >= thresh > 0: positive floats order like their bit patterns */
    atomicMax(&peak[c], __float_as_int(snr[(int64_t)y * sstride + x]));
}

static __global__ void k_comp_init(unsigned long long *area, int32_t *bb, int32_t *peak,
                                   int64_t nc) {
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nc)
        return;
    area[c] = 0;
    bb[4 * c] = bb[4 * c + 1] = INT32_MAX;
    bb[4 * c + 2] = bb[4 * c + 3] = -1;
    peak[c] = 0;
}

static __global__ void k_keep(const unsigned long long *area, int64_t minarea, int32_t *keep,
                              int64_t nc) {
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < nc)
        keep[c] = area[c] >= (unsigned long long)minarea;
}

/* The kept components as parents; *has_big = 1 when a parent's box is too large for one
 * warp to gather (every writer writes 1). */
static __global__ void k_compact(const unsigned long long *area, const int32_t *bb,
                                 const int32_t *peak, const int32_t *pid, int64_t minarea,
                                 int64_t nc, int64_t *par_area, int32_t *par_bb, float *par_peak,
                                 int64_t *has_big) {
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nc || area[c] < (unsigned long long)minarea)
        return;
    int32_t k = pid[c];
    par_area[k] = (int64_t)area[c];
    for (int j = 0; j < 4; j++)
        par_bb[4 * k + j] = bb[4 * c + j];
    par_peak[k] = __int_as_float(peak[c]);
    if (tide_det_box_pixels(bb + 4 * c) > TIDE_DET_GATHER_WARP_MAX)
        *has_big = 1;
}

/* par_off[np] = the pixel total, also into info[0] for the readback. */
static __global__ void k_close_offsets(const int64_t *par_area, int64_t *par_off, int64_t np,
                                       int64_t *info) {
    const int64_t total = np > 0 ? par_off[np - 1] + par_area[np - 1] : 0;
    par_off[np] = total;
    info[0] = total;
}

static __global__ void k_relabel(int32_t *L, const int32_t *cid, const int32_t *pid,
                                 const unsigned long long *area, int64_t minarea, int64_t N) {
    int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N || L[p] < 0)
        return;
    int32_t c = cid[L[p]];
    L[p] = area[c] >= (unsigned long long)minarea ? pid[c] : -1;
}

static int label_body(tide_ctx *ctx, const tide_image *snr, double thresh, int64_t minarea,
                      tide_det_work *w, int32_t *cid, unsigned long long **area, int32_t **bb,
                      int32_t **peak, int32_t **pid) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    const int64_t W = w->width, N = w->npix;
    const unsigned nbk = tide_det_blocks(N, 256);
    k_init<<<nbk, 256, 0, s>>>(snr->pix, snr->stride, (float)thresh, w->label, W, N);
    k_merge<<<nbk, 256, 0, s>>>(w->label, W, N);
    k_compress<<<nbk, 256, 0, s>>>(w->label, cid, N);
    TIDE_CUDA_LAUNCHED();
    int64_t nc = 0;
    int st = tide_det_scan_i32(ctx, cid, cid, N, &nc);
    if (st)
        return st;
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(unsigned long long) * (size_t)nc, (void **)area);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * 4 * (size_t)nc, (void **)bb);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)nc, (void **)peak);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)nc, (void **)pid);
    if (st)
        return st;
    const unsigned nbc = tide_det_blocks(nc, 256);
    if (nc > 0) {
        k_comp_init<<<nbc, 256, 0, s>>>(*area, *bb, *peak, nc);
        k_comp_stats<<<nbk, 256, 0, s>>>(w->label, cid, snr->pix, snr->stride, W, N, *area, *bb,
                                         *peak);
        k_keep<<<nbc, 256, 0, s>>>(*area, minarea, *pid, nc);
        TIDE_CUDA_LAUNCHED();
    }
    int64_t np = 0;
    st = tide_det_scan_i32(ctx, *pid, *pid, nc, &np);
    if (st)
        return st;
    w->nparent = np;
    st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)(np + 1), (void **)&w->par_area);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * 4 * (size_t)(np + 1), (void **)&w->par_bbox);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(float) * (size_t)(np + 1), (void **)&w->par_peak);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int64_t) * (size_t)(np + 2), (void **)&w->par_off);
    /* info: the parents' pixel total and whether any box is too large for one warp, read
     * back together */
    int64_t *info = NULL, h[2] = {0, 0};
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int64_t) * 2, (void **)&info);
    if (st)
        return st;
    const cudaError_t ce = cudaMemsetAsync(info, 0, sizeof(int64_t) * 2, s);
    if (ce != cudaSuccess) {
        tide_device_free(ctx, info);
        return tide_error(TIDE_E_CUDA, "tide_detect: clearing: %s", cudaGetErrorString(ce));
    }
    if (nc > 0) {
        k_compact<<<nbc, 256, 0, s>>>(*area, *bb, *peak, *pid, minarea, nc, w->par_area,
                                      w->par_bbox, w->par_peak, info + 1);
        k_relabel<<<nbk, 256, 0, s>>>(w->label, cid, *pid, *area, minarea, N);
    }
    st = tide_det_scan_i64(ctx, w->par_area, w->par_off, np, NULL);
    if (!st) {
        k_close_offsets<<<1, 1, 0, s>>>(w->par_area, w->par_off, np, info);
        cudaError_t e = cudaGetLastError();
        st = e == cudaSuccess ? tide_memcpy(ctx, h, 0, info, 1, sizeof h)
                              : tide_error(TIDE_E_CUDA, "tide_detect: relabel kernel: %s",
                                           cudaGetErrorString(e));
    }
    tide_device_free(ctx, info);
    const int64_t npixon = h[0];
    w->npixon = npixon;
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)(npixon + 1), (void **)&w->pix_idx);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(float) * (size_t)(npixon + 1), (void **)&w->pix_val);
    if (!st) /* cid is free now: the gather's scratch */
        st = tide_det_gather_cuda(ctx, snr, w, h[1] != 0, cid);
    return st; /* stream-ordered: the deblending reads the gathered pixels after it */
}

extern "C" int tide_det_label_cuda(tide_ctx *ctx, const tide_image *snr, double thresh,
                                   int64_t minarea, tide_det_work *w) {
    int32_t *cid = NULL, *bb = NULL, *peak = NULL, *pid = NULL;
    unsigned long long *area = NULL;
    int st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)w->npix, (void **)&w->label);
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * (size_t)w->npix, (void **)&cid);
    if (!st)
        st = label_body(ctx, snr, thresh, minarea, w, cid, &area, &bb, &peak, &pid);
    tide_device_free(ctx, cid);
    tide_device_free(ctx, area);
    tide_device_free(ctx, bb);
    tide_device_free(ctx, peak);
    tide_device_free(ctx, pid);
    return st;
}
