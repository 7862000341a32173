/* tile_decode_gpu.c — tide_tile_decode_cuda: the host side of the GPU tile decoder. The
 * table's descriptors are read and checked here (tide_tile_descriptor, as the CPU twin does),
 * each tile's conversion is worked out once (tide_tile_conv_for), the data unit goes to the
 * device, the kernels of tile_decode_cuda.cu decode one tile per thread and convert one pixel
 * per thread, and the image comes back (tide_tile_decode_cuda) or stays on the device, its
 * mask made in the same pass (tide_tile_rice_to_device, for a reader that wants it there). Any
 * wrong tile is handed to the CPU twin, which names the first one exactly as a CPU read would. */
#include <stdlib.h>
#include <string.h>

#include "tide/memory.h"
#include "tide/status.h"
#include "tile_decode.h"
#include "tile_decode_kernels.h"

#ifdef TIDE_HAVE_CUDA
int tide_tile_rice_on_device(const tide_tile_image *ti) {
    return ti->lay.codec == CODEC_RICE && !ti->lossless && ti->lay.ntiles <= INT32_MAX;
}

int tide_tile_rice_to_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                             float *d_out, uint16_t *d_mask) {
    const tide_tile_layout *t = &ti->lay;
    if (!tide_tile_rice_on_device(ti))
        return 1;
    const int64_t width = t->znaxis[0], height = t->ndim > 1 ? t->znaxis[1] : 1;
    const int64_t n0 = t->ntile[0];
    tide_tile_job *jobs = malloc(sizeof *jobs * (size_t)t->ntiles);
    tide_tile_conv *conv = malloc(sizeof *conv * (size_t)t->ntiles);
    int st =
        jobs && conv ? 0 : tide_error(TIDE_E_NOMEM, "%s[HDU %d]: out of memory", t->path, t->hdu);
    int64_t total = 0;
    for (int64_t k = 0; !st && k < t->ntiles; k++) {
        const uint8_t *row = data + k * t->naxis1;
        int64_t nelem, off, tw, th, npix;
        if (tide_tile_descriptor(t, &t->cmp, row, k, &nelem, &off) || nelem == 0) {
            st = 2; /* a bad descriptor or a fallback tile: the CPU twin */
            break;
        }
        tide_tile_shape(t, k, &tw, &th, &npix);
        jobs[k] = (tide_tile_job){t->theap + off,
                                  nelem,
                                  total,
                                  npix,
                                  (k % n0) * t->ztile[0],
                                  t->ndim > 1 ? ((k / n0) % t->ntile[1]) * t->ztile[1] : 0,
                                  tw};
        total += npix;
        tide_tile_conv_for(ti, k, row, t->rice_bytepix, &conv[k]);
    }
    void *d_unit = NULL, *d_jobs = NULL, *d_conv = NULL, *d_rand = NULL, *d_scr = NULL,
         *d_err = NULL;
    int32_t *err = NULL;
    if (!st) {
        err = malloc(sizeof *err * (size_t)t->ntiles);
        st = err ? 0 : tide_error(TIDE_E_NOMEM, "%s[HDU %d]: out of memory", t->path, t->hdu);
    }
    if (!st)
        st = tide_device_alloc(ctx, (size_t)t->data_end, &d_unit);
    if (!st)
        st = tide_device_alloc(ctx, sizeof *jobs * (size_t)t->ntiles, &d_jobs);
    if (!st)
        st = tide_device_alloc(ctx, sizeof *conv * (size_t)t->ntiles, &d_conv);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(float) * TIDE_TILE_NRANDOM, &d_rand);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(int32_t) * (size_t)total, &d_scr);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(int32_t) * (size_t)t->ntiles, &d_err);
    if (!st)
        st = tide_memcpy(ctx, d_unit, 1, data, 0, (size_t)t->data_end);
    if (!st)
        st = tide_memcpy(ctx, d_jobs, 1, jobs, 0, sizeof *jobs * (size_t)t->ntiles);
    if (!st)
        st = tide_memcpy(ctx, d_conv, 1, conv, 0, sizeof *conv * (size_t)t->ntiles);
    if (!st)
        st = tide_memcpy(ctx, d_rand, 1, tide_tile_random_table(), 0,
                         sizeof(float) * TIDE_TILE_NRANDOM);
    if (!st)
        st = tide_tile_rice_cuda(ctx, d_unit, d_jobs, t->ntiles, t->rice_bytepix, t->rice_block,
                                 d_scr, d_err);
    if (!st)
        st = tide_memcpy(ctx, err, 0, d_err, 1, sizeof *err * (size_t)t->ntiles);
    for (int64_t k = 0; !st && k < t->ntiles; k++)
        if (err[k])
            st = 2;
    if (!st)
        st = tide_tile_convert_cuda(ctx, d_scr, d_jobs, d_conv, d_rand, width, height, t->ztile[0],
                                    t->ndim > 1 ? t->ztile[1] : 1, n0, d_out, d_mask);
    void *dev[] = {d_unit, d_jobs, d_conv, d_rand, d_scr, d_err};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        tide_device_free(ctx, dev[i]);
    free(err);
    free(jobs);
    free(conv);
    return st;
}

int tide_tile_decode_cuda(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                          float *out) {
    const tide_tile_layout *t = &ti->lay;
    if (t->codec == CODEC_GZIP1 || t->codec == CODEC_GZIP2) {
        /* GZIP on the device only when asked (TIDE_GPU_TILE_DECODE=1) until
         * test_gpu_tile_inflate has passed on a GPU; RICE_1 is on by default */
        const char *on = getenv("TIDE_GPU_TILE_DECODE");
        return on && !strcmp(on, "1") ? tide_tile_inflate_cuda(ctx, ti, data, out) : 1;
    }
    if (!tide_tile_rice_on_device(ti))
        return 1;
    const size_t bytes = sizeof(float) * (size_t)(t->znaxis[0] * (t->ndim > 1 ? t->znaxis[1] : 1));
    void *d_out = NULL;
    int st = tide_device_alloc(ctx, bytes, &d_out);
    if (!st)
        st = tide_tile_rice_to_device(ctx, ti, data, d_out, NULL);
    if (!st)
        st = tide_memcpy(ctx, out, 0, d_out, 1, bytes);
    tide_device_free(ctx, d_out);
    if (st == 2) /* the CPU twin names the first wrong tile (or decodes a fallback tile) */
        st = tide_tile_decode_cpu(ti, data, out, ctx->threads);
    return st;
}
#endif
