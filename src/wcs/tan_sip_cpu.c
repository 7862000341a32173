/* tan_sip_cpu.c — CPU twins of the TAN/SIP kernels: one OpenMP loop over points. Each point
 * is independent, so the result does not depend on the thread count. */
#include "tan_sip_kernels.h"
#include "tan_sip_math.h"

/* Below this many points a parallel region costs more than it saves. */
enum { TANSIP_OMP_MIN = 4096 };

static int nthreads(const tide_ctx *ctx) {
    return ctx && ctx->threads > 0 ? ctx->threads : 1;
}

int tide_tansip_pix2sky_cpu(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n, const double *x,
                            const double *y, double *ra, double *dec) {
    const tide_wcs_tansip tt = *t;
#pragma omp parallel for schedule(static) num_threads(nthreads(ctx)) if (n >= TANSIP_OMP_MIN)
    for (int64_t i = 0; i < n; i++)
        tide_tansip_pix2sky_one(&tt, x[i], y[i], &ra[i], &dec[i]);
    return 0;
}

int tide_tansip_sky2pix_cpu(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n, const double *ra,
                            const double *dec, double *x, double *y) {
    const tide_wcs_tansip tt = *t;
#pragma omp parallel for schedule(static) num_threads(nthreads(ctx)) if (n >= TANSIP_OMP_MIN)
    for (int64_t i = 0; i < n; i++)
        tide_tansip_sky2pix_one(&tt, ra[i], dec[i], &x[i], &y[i]);
    return 0;
}
