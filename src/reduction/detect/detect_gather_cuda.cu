/* detect_gather_cuda.cu — each parent's pixels gathered in raster order, the segmentation's
 * last step (detect_label_cuda.cu): pix_idx / pix_val from par_off[k] on hold parent k's
 * on-pixels in raster order, which the deblending reads.
 *
 * A warp per parent walks the parent's bounding box, ballot compaction keeping raster order.
 * A parent whose box is larger than GATHER_WARP_MAX pixels (a saturated star's bleed trail,
 * a large galaxy, an unmasked defect) would leave one warp walking it alone: 1.3 ms for one
 * such parent of a 2048² frame. Those are left to a second pass over the frame, taken only
 * when the first found one: their pixels are compacted in raster order (a prefix sum),
 * sorted by parent with CUB's radix sort, which is stable (raster order kept within each
 * parent), and written from their parent's offset. Both passes give the same lists. Whether
 * any parent is that large comes back with the labelling's pixel count, in one readback. */
#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/device/device_radix_sort.cuh>

#include "core/box_walk.h"
#include "detect_cuda_util.h"
#include "detect_kernels.h"
#include "tide/memory.h"
#include "tide/status.h"

/* One warp per parent with a box of at most TIDE_DET_GATHER_WARP_MAX pixels: the box in
 * raster order (column and row by additions, core/box_walk.h), on-pixels of this parent
 * appended in order. */
static __global__ void k_gather(const int32_t *L, const float *snr, int64_t sstride, int64_t W,
                                const int32_t *par_bb, const int64_t *par_off, int64_t np,
                                int32_t *pix_idx, float *pix_val) {
    int64_t k = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (k >= np)
        return;
    const int32_t *bb = par_bb + 4 * k;
    const int64_t bw = (int64_t)bb[2] - bb[0] + 1, nb = tide_det_box_pixels(bb);
    if (nb > TIDE_DET_GATHER_WARP_MAX)
        return; /* the pass over the frame's */
    int64_t cur = par_off[k], col, row;
    tide_box_walk_start(lane, bw, &col, &row);
    for (int64_t base = 0; base < nb; base += 32, tide_box_walk_step(32, bw, &col, &row)) {
        const int64_t x = bb[0] + col, y = bb[1] + row;
        const int on = base + lane < nb && L[y * W + x] == (int32_t)k;
        unsigned m = __ballot_sync(0xffffffffu, on);
        if (on) {
            int64_t o = cur + __popc(m & ((1u << lane) - 1u));
            pix_idx[o] = (int32_t)(y * W + x);
            pix_val[o] = snr[y * sstride + x];
        }
        cur += __popc(m);
    }
}

/* flag[p] = 1 for the on-pixels of the parents with a large box. */
static __global__ void k_big_flag(const int32_t *L, const int32_t *par_bb, int64_t N,
                                  int32_t *flag) {
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N)
        return;
    const int32_t k = L[p];
    flag[p] = k >= 0 && tide_det_box_pixels(par_bb + 4 * k) > TIDE_DET_GATHER_WARP_MAX;
}

/* Those pixels in raster order (pos: the prefix sum of the flags): parent, pixel. */
static __global__ void k_big_scatter(const int32_t *L, const int32_t *par_bb, const int32_t *pos,
                                     int64_t N, int32_t *keys, int32_t *vals) {
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N)
        return;
    const int32_t k = L[p];
    if (k < 0 || tide_det_box_pixels(par_bb + 4 * k) <= TIDE_DET_GATHER_WARP_MAX)
        return;
    keys[pos[p]] = k;
    vals[pos[p]] = (int32_t)p;
}

/* Sorted by parent: element i goes to its parent's offset plus its rank among the parent's
 * elements (i minus the first index of its key, by binary search). */
static __global__ void k_big_write(const int32_t *keys, const int32_t *vals, int64_t n,
                                   const int64_t *par_off, const float *snr, int64_t sstride,
                                   int64_t W, int32_t *pix_idx, float *pix_val) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const int32_t k = keys[i];
    int64_t lo = 0, hi = i;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (keys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    const int64_t o = par_off[k] + (i - lo);
    const int32_t p = vals[i];
    pix_idx[o] = p;
    pix_val[o] = snr[((int64_t)p / W) * sstride + (int64_t)p % W];
}

/* The second pass: the parents with a large box. @p pos: N int32 of scratch. */
static int gather_big(tide_ctx *ctx, const tide_image *snr, tide_det_work *w, int32_t *pos) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    const int64_t N = w->npix;
    const unsigned nbk = tide_det_blocks(N, 256);
    k_big_flag<<<nbk, 256, 0, s>>>(w->label, w->par_bbox, N, pos);
    int64_t n = 0;
    int st = tide_det_scan_i32(ctx, pos, pos, N, &n);
    int32_t *kv = NULL; /* keys, values, sorted keys, sorted values: n each */
    if (!st)
        st = tide_det_dalloc(ctx, sizeof(int32_t) * 4 * (size_t)n, (void **)&kv);
    if (st)
        return st;
    int32_t *keys = kv, *vals = kv + n, *skeys = kv + 2 * n, *svals = kv + 3 * n;
    k_big_scatter<<<nbk, 256, 0, s>>>(w->label, w->par_bbox, pos, N, keys, vals);
    int end_bit = 1;
    while (end_bit < 31 && ((int64_t)1 << end_bit) < w->nparent)
        end_bit++;
    size_t tb = 0;
    void *tmp = NULL;
    cudaError_t e =
        cub::DeviceRadixSort::SortPairs(NULL, tb, keys, skeys, vals, svals, (int)n, 0, end_bit, s);
    if (e == cudaSuccess)
        st = tide_det_dalloc(ctx, tb, &tmp);
    if (e == cudaSuccess && !st)
        e = cub::DeviceRadixSort::SortPairs(tmp, tb, keys, skeys, vals, svals, (int)n, 0, end_bit,
                                            s);
    if (e == cudaSuccess && !st && n > 0)
        k_big_write<<<tide_det_blocks(n, 256), 256, 0, s>>>(
            skeys, svals, n, w->par_off, snr->pix, snr->stride, w->width, w->pix_idx, w->pix_val);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e != cudaSuccess && !st)
        st = tide_error(TIDE_E_CUDA, "tide_detect: gathering large parents: %s",
                        cudaGetErrorString(e));
    tide_device_free(ctx, tmp); /* stream-ordered: after the kernels that use them */
    tide_device_free(ctx, kv);
    return st;
}

int tide_det_gather_cuda(tide_ctx *ctx, const tide_image *snr, tide_det_work *w, int has_big,
                         int32_t *scratch) {
    const int64_t np = w->nparent;
    if (np <= 0)
        return 0;
    k_gather<<<tide_det_blocks(np * 32, 128), 128, 0, (cudaStream_t)ctx->stream>>>(
        w->label, snr->pix, snr->stride, w->width, w->par_bbox, w->par_off, np, w->pix_idx,
        w->pix_val);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "tide_detect: gather kernel: %s", cudaGetErrorString(e));
    return has_big ? gather_big(ctx, snr, w, scratch) : 0;
}
