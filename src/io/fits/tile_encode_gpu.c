/* tile_encode_gpu.c — tide_tile_encode_cuda: the host side of the GPU tile encoder. The image
 * goes to the device, tile_encode_cuda.cu codes one tile per thread in batches whose scratch
 * stays under a bound, and the slots and results come back, ready for tide_tile_write_hdu as
 * the CPU twin's are. */
#include <stdlib.h>

#include "tide/memory.h"
#include "tide/status.h"
#include "tile_decode.h"
#include "tile_encode.h"
#include "tile_encode_kernels.h"

#ifdef TIDE_HAVE_CUDA
/* Device scratch per batch of tiles (the tiles' pixels, integers and noise lists). */
enum { SCRATCH_BUDGET = 512 << 20 };

int tide_tile_encode_cuda(tide_ctx *ctx, tide_tile_encoded *e, const void *img) {
    const tide_tile_enc_plan *p = &e->plan;
    const size_t elem = p->kind == TIDE_ENC_U8 ? 1 : p->bytepix == 2 ? 2 : 4;
    const size_t img_bytes = elem * (size_t)(p->stride * (p->height - 1) + p->width);
    const int64_t scratch = (tide_tile_enc_scratch_bytes(p) + 15) / 16 * 16;
    int64_t batch = SCRATCH_BUDGET / scratch;
    if (batch < 1)
        batch = 1;
    if (batch > p->ntiles)
        batch = p->ntiles;
    void *d_img = NULL, *d_rand = NULL, *d_work = NULL, *d_slots = NULL, *d_out = NULL;
    int st = tide_device_alloc(ctx, img_bytes, &d_img);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(float) * TIDE_TILE_NRANDOM, &d_rand);
    if (!st)
        st = tide_device_alloc(ctx, (size_t)(batch * scratch), &d_work);
    if (!st)
        st = tide_device_alloc(ctx, (size_t)(p->ntiles * p->cap), &d_slots);
    if (!st)
        st = tide_device_alloc(ctx, sizeof *e->out * (size_t)p->ntiles, &d_out);
    if (!st)
        st = tide_memcpy(ctx, d_img, 1, img, 0, img_bytes);
    if (!st)
        st = tide_memcpy(ctx, d_rand, 1, tide_tile_random_table(), 0,
                         sizeof(float) * TIDE_TILE_NRANDOM);
    for (int64_t k0 = 0; !st && k0 < p->ntiles; k0 += batch)
        st = tide_tile_encode_launch(ctx, p, d_img, k0,
                                     p->ntiles - k0 < batch ? p->ntiles - k0 : batch, d_rand,
                                     d_work, scratch, d_slots, d_out);
    if (!st)
        st = tide_memcpy(ctx, e->out, 0, d_out, 1, sizeof *e->out * (size_t)p->ntiles);
    if (!st)
        st = tide_memcpy(ctx, e->slots, 0, d_slots, 1, (size_t)(p->ntiles * p->cap));
    void *dev[] = {d_img, d_rand, d_work, d_slots, d_out};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        tide_device_free(ctx, dev[i]);
    return st;
}
#endif
