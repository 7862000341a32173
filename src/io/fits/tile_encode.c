/* tile_encode.c — the CPU encoder of tile-compressed images: the plan, and every tile coded
 * by tile_encode_core.h on a thread of its own (tile_encode.h). */
#include "tile_encode.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "tide/status.h"
#include "tile_decode.h"

int tide_tile_enc_plan_init(tide_tile_enc_plan *p, int kind, int64_t width, int64_t height,
                            int64_t stride, int64_t ztile1, int64_t ztile2, int dither0) {
    memset(p, 0, sizeof *p);
    if (ztile1 == 0 && ztile2 == 0) { /* fpack's default: one tile per row */
        ztile1 = width;
        ztile2 = 1;
    }
    if (width < 1 || height < 1 || stride < width || ztile1 < 1 || ztile2 < 1 ||
        kind < TIDE_ENC_U8 || kind > TIDE_ENC_F32 || dither0 < 1 || dither0 > TIDE_TILE_NRANDOM)
        return tide_error(TIDE_E_INVAL,
                          "tile encoder: bad image (%lld x %lld, stride %lld, tiles %lld x %lld, "
                          "kind %d, ZDITHER0 %d)",
                          (long long)width, (long long)height, (long long)stride, (long long)ztile1,
                          (long long)ztile2, kind, dither0);
    p->width = width;
    p->height = height;
    p->stride = stride;
    p->ztile1 = ztile1 < width ? ztile1 : width;
    p->ztile2 = ztile2 < height ? ztile2 : height;
    p->ntile1 = (width + p->ztile1 - 1) / p->ztile1;
    p->ntiles = p->ntile1 * ((height + p->ztile2 - 1) / p->ztile2);
    p->kind = kind;
    p->bytepix = kind == TIDE_ENC_U8 ? 1 : kind == TIDE_ENC_I16 || kind == TIDE_ENC_U16 ? 2 : 4;
    p->blocksize = TIDE_TILE_ENC_BLOCKSIZE;
    p->qlevel = TIDE_TILE_DEFAULT_Q;
    p->dither0 = dither0;
    p->tile_px = p->ztile1 * p->ztile2;
    p->cap = (tide_rice_encode_bound(p->tile_px, p->bytepix, p->blocksize) + 15) / 16 * 16;
    /* The noise estimate reads a tile narrower than 9 pixels as one row. */
    p->noise_nx = p->ztile1 < 9 ? p->tile_px : p->ztile1;
    p->noise_ny = p->ztile1 < 9 ? 1 : p->ztile2;
    return TIDE_OK;
}

int tide_tile_enc_seed(const float *pix, int64_t width) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the bits of the first row */
    for (int64_t i = 0; i < width; i++) {
        uint32_t b;
        memcpy(&b, pix + i, 4);
        h = (h ^ b) * 1099511628211ull;
    }
    return (int)(h % TIDE_TILE_NRANDOM) + 1;
}

int tide_tile_encoded_alloc(tide_tile_encoded *e, const tide_tile_enc_plan *p) {
    memset(e, 0, sizeof *e);
    e->plan = *p;
    e->slots = malloc((size_t)(p->ntiles * p->cap));
    e->out = calloc((size_t)p->ntiles, sizeof *e->out);
    if (!e->slots || !e->out) {
        tide_tile_encoded_free(e);
        return tide_error(TIDE_E_NOMEM, "tile encoder: no memory for %lld tiles of %lld bytes",
                          (long long)p->ntiles, (long long)p->cap);
    }
    return TIDE_OK;
}

void tide_tile_encoded_free(tide_tile_encoded *e) {
    free(e->slots);
    free(e->out);
    e->slots = NULL;
    e->out = NULL;
}

int tide_tile_encode_cpu(tide_tile_encoded *e, const void *img, int threads) {
    const tide_tile_enc_plan *p = &e->plan;
    const float *rand = tide_tile_random_table();
    const size_t scratch = (size_t)tide_tile_enc_scratch_bytes(p);
    if (threads <= 0)
        threads = omp_get_max_threads();
    if (threads > p->ntiles)
        threads = (int)p->ntiles;
    int nomem = 0;
#pragma omp parallel num_threads(threads)
    {
        uint8_t *work = aligned_alloc(16, (scratch + 15) / 16 * 16);
        if (!work) {
#pragma omp atomic write
            nomem = 1;
        }
#pragma omp for schedule(dynamic, 4)
        for (int64_t k = 0; k < p->ntiles; k++)
            if (work)
                tide_tile_encode_one(p, img, k, rand, work, e->slots + k * p->cap, &e->out[k]);
        free(work);
    }
    if (nomem)
        return tide_error(TIDE_E_NOMEM, "tile encoder: no memory for the tile scratch");
    return TIDE_OK;
}
