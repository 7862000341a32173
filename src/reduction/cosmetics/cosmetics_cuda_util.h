/* cosmetics_cuda_util.h — launch helpers shared by the CUDA cosmetics files
 * (cosmetics_cuda.cu, cosmetics_lines_cuda.cu). */
#ifndef TIDE_COSMETICS_CUDA_UTIL_H
#define TIDE_COSMETICS_CUDA_UTIL_H
#include <cuda_runtime.h>
#include <stdint.h>

#define BLOCK 256

static inline unsigned grid_for(int64_t n) {
    int64_t g = (n + BLOCK - 1) / BLOCK;
    if (g < 1)
        g = 1;
    return (unsigned)(g > 65535 * 32 ? 65535 * 32 : g);
}

#define STREAM(ctx) ((cudaStream_t)(ctx)->stream)

#endif
