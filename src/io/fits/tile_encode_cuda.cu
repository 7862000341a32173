/* tile_encode_cuda.cu — the CUDA twin of tide's RICE_1 tile encoder: one thread codes one
 * tile with tile_encode_core.h, the very code the CPU twin runs (a tile's Rice blocks are
 * sequential, each block's code depends on the block's sum, and an image has thousands of
 * tiles), so the streams, ZSCALE and ZZERO are the CPU's bit for bit. The float arithmetic of
 * the quantizer goes through unfused.h, so nvcc contracts nothing. */
#include <cuda_runtime.h>

#include "core/gpu/cuda_check.h"
#include "tile_encode_kernels.h"

__global__ void tile_encode_kernel(const tide_tile_enc_plan p, const void *img, int64_t k0,
                                   int64_t count, const float *rand, uint8_t *work, int64_t scratch,
                                   uint8_t *slots, tide_tile_enc_out *out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count)
        return;
    const int64_t k = k0 + i;
    tide_tile_encode_one(&p, img, k, rand, work + i * scratch, slots + k * p.cap, &out[k]);
}

extern "C" int tide_tile_encode_launch(tide_ctx *ctx, const tide_tile_enc_plan *p,
                                       const void *d_img, int64_t k0, int64_t count,
                                       const float *d_rand, uint8_t *d_work, int64_t scratch,
                                       uint8_t *d_slots, tide_tile_enc_out *d_out) {
    if (count <= 0)
        return 0;
    const int block = 32; /* one tile a thread: one warp a block spreads tiles over the SMs */
    const unsigned grid = (unsigned)((count + block - 1) / block);
    tile_encode_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(
        *p, d_img, k0, count, d_rand, d_work, scratch, d_slots, d_out);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
