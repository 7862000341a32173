/* warp_sum.h — the deterministic warp and block sums of the CUDA kernels (device code only:
 * include from .cu files). No atomics: each sum adds in one fixed order, so a kernel gives the
 * same bits on every run, and a CPU twin can reproduce the order where it must match.
 *
 * Two orders exist, and a kernel's results depend on which one it uses, so both are kept:
 *  - the shuffle tree (tide_warp_sum, tide_warp_allsum, tide_block_sums_by_warp): within a
 *    warp, lane l adds lane l + off for off = 16, 8, 4, 2, 1; a block then adds its warps'
 *    totals in warp order, starting from 0.0;
 *  - the shared-memory pairwise tree (tide_block_tree_sum): thread t adds thread t + s for
 *    s = NT/2, ..., 1 over all NT threads of the block.
 * All additions are lone IEEE additions (nothing to contract into an FMA). */
#ifndef TIDE_GPU_WARP_SUM_H
#define TIDE_GPU_WARP_SUM_H
#ifndef __CUDACC__
#error "core/gpu/warp_sum.h is device code: include it from .cu files only"
#endif

/* The warp's sum of v by the shuffle tree; the total is in lane 0 (the other lanes hold
 * partial sums). Every lane of the warp must call it. */
__device__ static inline double tide_warp_sum(double v) {
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

/* tide_warp_sum, the total broadcast to every lane. */
__device__ static inline double tide_warp_allsum(double v) {
    return __shfl_sync(0xffffffffu, tide_warp_sum(v), 0);
}

/* Sum each of v[0..k) over a block of NW full warps, the totals back in v[] of every thread:
 * each warp's shuffle tree, then the NW warp totals in warp order. red is shared memory of at
 * least k rows. Every thread of the block must call it (it synchronises the block). */
template <int NW>
__device__ static void tide_block_sums_by_warp(double *v, int k, double (*red)[NW]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int q = 0; q < k; q++) {
        const double x = tide_warp_sum(v[q]);
        if (lane == 0)
            red[q][warp] = x;
    }
    __syncthreads();
    for (int q = 0; q < k; q++) {
        double x = 0.0;
        for (int w = 0; w < NW; w++)
            x += red[q][w];
        v[q] = x;
    }
    __syncthreads();
}

/* Sum of v over a block of NT threads (a power of two) by the pairwise tree in shared memory
 * sh[0..NT); every thread gets the total. Every thread of the block must call it. */
template <int NT> __device__ static double tide_block_tree_sum(double v, double *sh) {
    const int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = NT / 2; s > 0; s >>= 1) {
        if (t < s)
            sh[t] = __dadd_rn(sh[t], sh[t + s]);
        __syncthreads();
    }
    const double r = sh[0];
    __syncthreads();
    return r;
}

#endif
