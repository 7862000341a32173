/* detect_scan_cuda.cu — exclusive prefix sums for detection's numbering steps (component,
 * parent, pixel-list, scratch and child offsets): tiles of 1024 values scanned in shared
 * memory, tile totals scanned recursively, then added back. Integer arithmetic, so the
 * result is exact and deterministic. */
#include "core/gpu/cuda_check.h"
#include "detect_cuda_util.h"
#include "tide/memory.h"
#include "tide/status.h"

#define SCAN_THREADS 256
#define SCAN_ITEMS 4
#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)

int tide_det_dalloc(tide_ctx *ctx, size_t bytes, void **p) {
    return tide_device_alloc(ctx, bytes ? bytes : 8, p);
}

#define TIDE_DET_DEFINE_SCAN(T, NAME)                                                              \
    static __global__ void NAME##_tile(const T *in, T *out, T *sums, int64_t n) {                  \
        __shared__ T sh[SCAN_THREADS];                                                             \
        const int t = threadIdx.x;                                                                 \
        const int64_t base = (int64_t)blockIdx.x * SCAN_TILE + (int64_t)t * SCAN_ITEMS;            \
        T v[SCAN_ITEMS], tot = 0;                                                                  \
        for (int i = 0; i < SCAN_ITEMS; i++) {                                                     \
            v[i] = base + i < n ? in[base + i] : (T)0;                                             \
            tot += v[i];                                                                           \
        }                                                                                          \
        sh[t] = tot;                                                                               \
        __syncthreads();                                                                           \
        for (int off = 1; off < SCAN_THREADS; off <<= 1) {                                         \
            T a = t >= off ? sh[t - off] : (T)0;                                                   \
            __syncthreads();                                                                       \
            sh[t] += a;                                                                            \
            __syncthreads();                                                                       \
        }                                                                                          \
        T run = sh[t] - tot;                                                                       \
        for (int i = 0; i < SCAN_ITEMS; i++) {                                                     \
            if (base + i < n)                                                                      \
                out[base + i] = run;                                                               \
            run += v[i];                                                                           \
        }                                                                                          \
        if (t == SCAN_THREADS - 1)                                                                 \
            sums[blockIdx.x] = sh[t];                                                              \
    }                                                                                              \
    static __global__ void NAME##_add(T *out, const T *offs, int64_t n) {                          \
        int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;                                \
        if (i < n)                                                                                 \
            out[i] += offs[i / SCAN_TILE];                                                         \
    }                                                                                              \
    int NAME(tide_ctx *ctx, const T *in, T *out, int64_t n, int64_t *total) {                      \
        cudaStream_t s = (cudaStream_t)ctx->stream;                                                \
        if (n <= 0) {                                                                              \
            if (total)                                                                             \
                *total = 0;                                                                        \
            return 0;                                                                              \
        }                                                                                          \
        const int64_t nb = (n + SCAN_TILE - 1) / SCAN_TILE;                                        \
        T *sums = NULL;                                                                            \
        int st = tide_det_dalloc(ctx, sizeof(T) * (size_t)nb, (void **)&sums);                     \
        if (st)                                                                                    \
            return st;                                                                             \
        NAME##_tile<<<(unsigned)nb, SCAN_THREADS, 0, s>>>(in, out, sums, n);                       \
        cudaError_t e = cudaGetLastError();                                                        \
        if (e != cudaSuccess)                                                                      \
            st = tide_error(TIDE_E_CUDA, "detection scan: %s", cudaGetErrorString(e));             \
        if (!st && nb > 1) {                                                                       \
            st = NAME(ctx, sums, sums, nb, total);                                                 \
            if (!st)                                                                               \
                NAME##_add<<<tide_det_blocks(n, 256), 256, 0, s>>>(out, sums, n);                  \
        } else if (!st && total) {                                                                 \
            T h = 0;                                                                               \
            st = tide_memcpy(ctx, &h, 0, sums, 1, sizeof(T));                                      \
            *total = (int64_t)h;                                                                   \
        }                                                                                          \
        tide_device_free(ctx, sums);                                                               \
        return st;                                                                                 \
    }

TIDE_DET_DEFINE_SCAN(int32_t, tide_det_scan_i32)
TIDE_DET_DEFINE_SCAN(int64_t, tide_det_scan_i64)
