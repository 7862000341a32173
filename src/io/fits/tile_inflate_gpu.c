/* tile_inflate_gpu.c — tide_tile_inflate_cuda: the host side of the GPU decoder of GZIP_1 and
 * GZIP_2 images. The table's descriptors are read and checked here (tide_tile_descriptor, as
 * the CPU twin does), each tile's room and conversions are worked out once, the data unit
 * goes to the device in one buffer (the tiles' members at their heap offsets), one launch
 * inflates and converts every tile straight into the image (tile_inflate_cuda.cu), and the
 * image comes back. Tiles the device does not take (UNCOMPRESSED_DATA, a wrong descriptor)
 * or refuses (any failed check) send the image to the CPU twin, which names the first wrong
 * tile exactly as a CPU read would. */
#include <stdlib.h>
#include <string.h>

#include "tide/memory.h"
#include "tide/status.h"
#include "tile_decode.h"
#include "tile_inflate_kernels.h"

#ifdef TIDE_HAVE_CUDA
/* Tile @p k's job, or 2 when the device cannot take it (the CPU twin decodes the image). */
static int gzip_job(const tide_tile_image *ti, const uint8_t *data, int64_t k, int64_t *raw_total,
                    tide_tile_gzip_job *j, tide_tile_conv conv[3]) {
    const tide_tile_layout *t = &ti->lay;
    const uint8_t *row = data + k * t->naxis1;
    int64_t nelem, off, tw, th, npix;
    if (tide_tile_descriptor(t, &t->cmp, row, k, &nelem, &off))
        return 2;
    int fallback = nelem == 0;
    if (fallback) { /* cfitsio reads UNCOMPRESSED_DATA first, then GZIP_COMPRESSED_DATA */
        if (t->unc.col || !t->gz.col || t->zbitpix > 0 ||
            tide_tile_descriptor(t, &t->gz, row, k, &nelem, &off) || nelem == 0)
            return 2;
    }
    tide_tile_shape(t, k, &tw, &th, &npix);
    /* the pixel sizes tide_tile_decode_cpu accepts from the inflated length */
    const int32_t sizes = fallback ? -t->zbitpix / 8 : t->zbitpix > 0 ? 1 | 2 | 4 : 4 | 8;
    const int64_t most = sizes & 8 ? 8 : sizes & 4 ? 4 : sizes & 2 ? 2 : 1;
    const int64_t n0 = t->ntile[0];
    *j = (tide_tile_gzip_job){t->theap + off,
                              nelem,
                              *raw_total,
                              npix * most,
                              npix,
                              (k % n0) * t->ztile[0],
                              t->ndim > 1 ? ((k / n0) % t->ntile[1]) * t->ztile[1] : 0,
                              tw,
                              sizes,
                              fallback};
    *raw_total += npix * most;
    for (int b = 0; b < 3; b++)
        tide_tile_conv_for(ti, k, row, 1 << b, &conv[b]);
    return 0;
}

int tide_tile_inflate_to_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                                float *d_out, uint16_t *d_mask) {
    const tide_tile_layout *t = &ti->lay;
    if ((t->codec != CODEC_GZIP1 && t->codec != CODEC_GZIP2) || t->ntiles > INT32_MAX)
        return 1;
    const int64_t width = t->znaxis[0];
    const size_t nt = (size_t)t->ntiles;
    tide_tile_gzip_job *jobs = malloc(sizeof *jobs * nt);
    tide_tile_conv *conv = malloc(sizeof *conv * 3 * nt);
    int32_t *err = malloc(sizeof *err * nt);
    int st = jobs && conv && err
                 ? 0
                 : tide_error(TIDE_E_NOMEM, "%s[HDU %d]: out of memory", t->path, t->hdu);
    int64_t raw_total = 0;
    for (int64_t k = 0; !st && k < t->ntiles; k++)
        st = gzip_job(ti, data, k, &raw_total, &jobs[k], &conv[3 * k]);
    const int dither = t->zbitpix < 0 && ti->dither;
    enum { UNIT, JOBS, CONV, RAND, RAW, ERR, NBUF };
    const size_t bytes[NBUF] = {
        (size_t)t->data_end,   sizeof *jobs * nt,
        sizeof *conv * 3 * nt, dither ? sizeof(float) * TIDE_TILE_NRANDOM : 0,
        (size_t)raw_total,     sizeof *err * nt};
    const void *up[NBUF] = {data, jobs, conv, dither ? tide_tile_random_table() : NULL};
    void *dev[NBUF] = {0};
    for (int b = 0; !st && b < NBUF; b++)
        if (bytes[b]) {
            st = tide_device_alloc(ctx, bytes[b], &dev[b]);
            if (!st && up[b])
                st = tide_memcpy(ctx, dev[b], 1, up[b], 0, bytes[b]);
        }
    if (!st) {
        const tide_tile_gzip_image img = {width, t->codec == CODEC_GZIP2, t->zbitpix < 0,
                                          ti->lossless};
        st = tide_tile_gzip_cuda(ctx, dev[UNIT], dev[JOBS], t->ntiles, img, dev[CONV], dev[RAND],
                                 dev[RAW], d_out, d_mask, dev[ERR]);
    }
    if (!st)
        st = tide_memcpy(ctx, err, 0, dev[ERR], 1, bytes[ERR]);
    for (int64_t k = 0; !st && k < t->ntiles; k++)
        if (err[k])
            st = 2;
    for (int b = 0; b < NBUF; b++)
        tide_device_free(ctx, dev[b]);
    free(jobs);
    free(conv);
    free(err);
    return st;
}

int tide_tile_inflate_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                             float *out) {
    return tide_tile_decode_through_device(ctx, ti, data, out, tide_tile_inflate_to_device);
}

int tide_tile_inflate_cuda(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                           float *out) {
    int st = tide_tile_inflate_device(ctx, ti, data, out);
    if (st == 2) /* the CPU twin names the first wrong tile (or decodes the tiles kept back) */
        st = tide_tile_decode_cpu(ti, data, out, ctx->threads);
    return st;
}
#endif
