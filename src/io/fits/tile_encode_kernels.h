/* tile_encode_kernels.h — the CUDA kernel of the tile encoder (tile_encode_cuda.cu) and what
 * the host side (tile_encode_gpu.c) hands it. The CPU twin is tide_tile_encode_cpu
 * (tile_encode.c); both run tile_encode_core.h. Pointers named d_* are device memory. Not
 * public. */
#ifndef TIDE_TILE_ENCODE_KERNELS_H
#define TIDE_TILE_ENCODE_KERNELS_H
#include <stdint.h>

#include "tide/ctx.h"
#include "tile_encode_core.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef TIDE_HAVE_CUDA
/** Code tiles @p k0 .. @p k0 + @p count - 1 of the image @p d_img (plan @p p), one tile per
 *  thread, each with its own @p scratch bytes of @p d_work (tile k0 + i at i * scratch), its
 *  stream into its slot of @p d_slots (tile k at k * p->cap) and its result into @p d_out[k];
 *  @p d_rand is the dither sequence. Queued on the context's stream. */
int tide_tile_encode_launch(tide_ctx *ctx, const tide_tile_enc_plan *p, const void *d_img,
                            int64_t k0, int64_t count, const float *d_rand, uint8_t *d_work,
                            int64_t scratch, uint8_t *d_slots, tide_tile_enc_out *d_out);
#endif

#ifdef __cplusplus
}
#endif
#endif
