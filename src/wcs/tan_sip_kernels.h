/* tan_sip_kernels.h — the batched TAN/SIP kernels, CPU and CUDA twins (DESIGN §3).
 * Arrays are host memory for the _cpu twins and device memory for the _cuda twins. */
#ifndef TIDE_TAN_SIP_KERNELS_H
#define TIDE_TAN_SIP_KERNELS_H
#include <stdint.h>
#include "tide/ctx.h"
#include "tide/wcs.h"

#ifdef __cplusplus
extern "C" {
#endif

int tide_tansip_pix2sky_cpu(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n, const double *x,
                            const double *y, double *ra, double *dec);
int tide_tansip_sky2pix_cpu(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n, const double *ra,
                            const double *dec, double *x, double *y);
#ifdef TIDE_HAVE_CUDA
int tide_tansip_pix2sky_cuda(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n, const double *x,
                             const double *y, double *ra, double *dec);
int tide_tansip_sky2pix_cuda(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n, const double *ra,
                             const double *dec, double *x, double *y);
#endif

#ifdef __cplusplus
}
#endif
#endif
