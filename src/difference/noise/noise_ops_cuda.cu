/* noise_ops_cuda.cu — CUDA twins of the difference pipeline's kernels (noise_ops.h):
 * grid-stride loops over the formulas of noise_ops_math.h. */
#include <cuda_runtime.h>
#include <math.h>

#include <cub/device/device_radix_sort.cuh>

#include "core/gpu/cuda_check.h"
#include "noise_ops.h"
#include "tide/memory.h"
#include "tide/status.h"

__global__ void diffp_prepare_kernel(int64_t w, int64_t h, int64_t stride, float *pix,
                                     uint16_t *mask, float *var, const float *bkg, const float *rms,
                                     float gain, float saturate) {
    const int64_t n = w * h;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t y = k / w, x = k - y * w, i = y * stride + x;
        tide_diffp_prepare_one(pix + i, bkg[k], rms[k], mask + i, var + i, gain, saturate);
    }
}

extern "C" int tide_diffp_prepare_cuda(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride,
                                       float *pix, uint16_t *mask, float *var, const float *bkg,
                                       const float *rms, float gain, float saturate) {
    if (w <= 0 || h <= 0)
        return 0;
    const int block = 256;
    int64_t g = (w * h + block - 1) / block;
    if (g > 65535 * 16)
        g = 65535 * 16;
    diffp_prepare_kernel<<<(unsigned)g, block, 0, (cudaStream_t)ctx->stream>>>(
        w, h, stride, pix, mask, var, bkg, rms, gain, saturate);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

__global__ void diffp_scale_kernel(int64_t w, int64_t h, int64_t stride, float *a, float f) {
    const int64_t n = w * h;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t y = k / w, x = k - y * w;
        a[y * stride + x] *= f;
    }
}

extern "C" int tide_diffp_scale_cuda(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride, float *a,
                                     float f) {
    if (w <= 0 || h <= 0)
        return 0;
    const int block = 256;
    int64_t g = (w * h + block - 1) / block;
    if (g > 65535 * 16)
        g = 65535 * 16;
    diffp_scale_kernel<<<(unsigned)g, block, 0, (cudaStream_t)ctx->stream>>>(w, h, stride, a, f);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

/* One thread per box; a warp's boxes are neighbours along x, so its rows are read together. */
__global__ void diffp_boxz_kernel(int64_t nx, int64_t ny, int64_t stride, const float *pix,
                                  const uint16_t *mask, const float *var, int b, double *z) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nx * ny)
        return;
    const int64_t by = k / nx, bx = k - by * nx;
    z[k] = tide_diffp_box_z(pix, mask, var, stride, b, bx, by);
}

extern "C" int tide_diffp_boxz_cuda(tide_ctx *ctx, int64_t w, int64_t h, int64_t stride,
                                    const float *pix, const uint16_t *mask, const float *var, int b,
                                    double *z) {
    const int64_t n = (w / b) * (h / b);
    if (n <= 0)
        return 0;
    diffp_boxz_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)ctx->stream>>>(
        w / b, h / b, stride, pix, mask, var, b, z);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

/* ---- the median and MAD of the box values, on the device ------------------------------ */

/* keys[i] = z[i], NaN -> +Inf (sorted last), and the count of NaN. */
__global__ void diffp_nan_last_kernel(int64_t n, const double *z, double *keys,
                                      unsigned long long *nnan) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int isn = 0;
    if (i < n) {
        const double v = z[i];
        isn = isnan(v);
        keys[i] = isn ? INFINITY : v;
    }
    const unsigned bal = __ballot_sync(0xffffffffu, isn);
    if ((threadIdx.x & 31) == 0 && bal)
        atomicAdd(nnan, (unsigned long long)__popc(bal));
}

/* numpy.median of the first m values of the sorted array (the same order statistics and the
 * same mean of the two middles as tide_median_f64 on the host). */
__device__ static double diffp_sorted_median(const double *v, int64_t m) {
    return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

/* out[0] = median of the valid values (n minus the NaN), out[2] = their count. */
__global__ void diffp_median_kernel(int64_t n, const double *sorted, const unsigned long long *nnan,
                                    double *out, int slot) {
    const int64_t m = n - (int64_t)*nnan;
    out[slot] = m > 0 ? diffp_sorted_median(sorted, m) : NAN;
    out[2] = (double)m;
}

/* keys[i] = |sorted[i] - median| over the valid values, +Inf after them. */
__global__ void diffp_absdev_kernel(int64_t n, const double *sorted, const unsigned long long *nnan,
                                    const double *med, double *keys) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    keys[i] = i < n - (int64_t)*nnan ? fabs(sorted[i] - *med) : INFINITY;
}

extern "C" int tide_diffp_median_mad_cuda(tide_ctx *ctx, const double *z, int64_t n,
                                          int64_t *nvalid, double *med, double *mad) {
    *nvalid = 0;
    *med = *mad = NAN;
    if (n <= 0)
        return 0;
    if (n > 0x7fffffff)
        return tide_error(TIDE_E_RANGE, "diff: %lld box values are too many to sort", (long long)n);
    cudaStream_t s = (cudaStream_t)ctx->stream;
    size_t tmp = 0;
    TIDE_CUDA_TRY(cub::DeviceRadixSort::SortKeys(nullptr, tmp, (const double *)nullptr,
                                                 (double *)nullptr, (int)n, 0, 64, s));
    /* two key arrays, the sort's scratch, three results and the NaN count */
    const size_t keys = sizeof(double) * (size_t)n, small = 4 * sizeof(double);
    const size_t off_tmp = 2 * keys, off_small = off_tmp + ((tmp + 255) / 256) * 256;
    unsigned char *d = NULL;
    int st = tide_device_alloc(ctx, off_small + small, (void **)&d);
    if (st)
        return st;
    double *ka = (double *)d, *kb = (double *)(d + keys), *res = (double *)(d + off_small);
    unsigned long long *nnan = (unsigned long long *)(res + 3);
    void *scratch = d + off_tmp;
    const unsigned grid = (unsigned)((n + 255) / 256);
    cudaError_t ce = cudaMemsetAsync(nnan, 0, sizeof *nnan, s);
    if (ce == cudaSuccess) {
        diffp_nan_last_kernel<<<grid, 256, 0, s>>>(n, z, ka, nnan);
        ce = cub::DeviceRadixSort::SortKeys(scratch, tmp, ka, kb, (int)n, 0, 64, s);
    }
    if (ce == cudaSuccess) {
        diffp_median_kernel<<<1, 1, 0, s>>>(n, kb, nnan, res, 0);
        diffp_absdev_kernel<<<grid, 256, 0, s>>>(n, kb, nnan, res, ka);
        ce = cub::DeviceRadixSort::SortKeys(scratch, tmp, ka, kb, (int)n, 0, 64, s);
    }
    if (ce == cudaSuccess) {
        diffp_median_kernel<<<1, 1, 0, s>>>(n, kb, nnan, res, 1);
        ce = cudaGetLastError();
    }
    if (ce != cudaSuccess)
        st = tide_error(TIDE_E_CUDA, "diff: median of the box values: %s", cudaGetErrorString(ce));
    double h[3] = {NAN, NAN, 0.0};
    if (!st)
        st = tide_memcpy(ctx, h, 0, res, 1, sizeof h);
    tide_device_free(ctx, d);
    if (!st) {
        *med = h[0];
        *mad = h[1];
        *nvalid = (int64_t)h[2];
    }
    return st;
}
