/* detect_snr_cpu.c — CPU twin of the per-pixel S/N combination (detect_filter_math.h). */
#include <stddef.h>

#include "phot/detect_filter_math.h"
#include "phot/detect_kernels.h"
#include "tide/status.h"

int tide_det_snr_cpu(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                     const tide_image *R, const tide_det_filter *f, tide_image *snr) {
    const int64_t W = sub->width, H = sub->height;
    const int nb = f->nbasis;
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < H; y++) {
        float r[TIDE_DET_MAX_BASIS];
        for (int64_t x = 0; x < W; x++) {
            for (int b = 0; b < nb; b++) r[b] = R[b].pix[y * R[b].stride + x];
            uint16_t m = sub->mask ? sub->mask[y * sub->stride + x] : 0;
            snr->pix[y * snr->stride + x] =
                tide_det_snr_pixel(f, x, y, r, sub->pix[y * sub->stride + x],
                                   rms->pix[y * rms->stride + x], m);
        }
    }
    return 0;
}
