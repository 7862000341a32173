/* crossmatch.c — the crossmatch once for both backends (DESIGN §3): argument checks, the
 * radius as a squared chord, the choice of backend, the scratch cached in the context, and
 * the host-side great-circle distance. */
#include <math.h>
#include <stdlib.h>

#include "crossmatch_kernels.h"
#include "crossmatch_math.h"
#include "tide/crossmatch.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

/* ---- scratch ---------------------------------------------------------------------------- */

static void scratch_destroy(tide_ctx *ctx, void *data) {
    tide_xm_scratch *s = (tide_xm_scratch *)data;
    if (!s)
        return;
    tide_xm_tree_free(&s->tree1);
    tide_xm_tree_free(&s->tree2);
    free(s->order);
    free(s->order_tmp);
    free(s->radix);
#ifdef TIDE_HAVE_CUDA
    if (s->dev)
        tide_xm_cuda_scratch_free(ctx, s->dev);
#endif
    free(s);
}

tide_xm_scratch *tide_xm_scratch_get(tide_ctx *ctx) {
    if (!ctx->ext[TIDE_EXT_XMATCH].data) {
        tide_xm_scratch *s = (tide_xm_scratch *)calloc(1, sizeof *s);
        if (!s)
            return NULL;
        ctx->ext[TIDE_EXT_XMATCH].data = s;
        ctx->ext[TIDE_EXT_XMATCH].destroy = scratch_destroy;
    }
    return (tide_xm_scratch *)ctx->ext[TIDE_EXT_XMATCH].data;
}

/* ---- checks ----------------------------------------------------------------------------- */

/* Validate the arguments and fill @p job; *empty = 1 when list 1 is empty (nothing to do). */
static int make_job(const char *fn, tide_ctx *ctx, const double *ra1, const double *dec1,
                    int64_t n1, const double *ra2, const double *dec2, int64_t n2,
                    const tide_xmatch_params *p, int64_t *match, double *sep_arcsec,
                    int64_t *nmatched, tide_xm_job *job) {
    const tide_xmatch_params def = tide_xmatch_defaults();
    if (!p)
        p = &def;
    if (!ctx)
        return tide_error(TIDE_E_INVAL, "%s: NULL context", fn);
    if (n1 < 0 || n2 < 0)
        return tide_error(TIDE_E_INVAL, "%s: negative list size (%lld, %lld)", fn, (long long)n1,
                          (long long)n2);
    if (n1 > 0 && (!ra1 || !dec1 || !match))
        return tide_error(TIDE_E_INVAL, "%s: NULL list-1 or match array with n1 = %lld", fn,
                          (long long)n1);
    if (n2 > 0 && (!ra2 || !dec2))
        return tide_error(TIDE_E_INVAL, "%s: NULL list-2 array with n2 = %lld", fn, (long long)n2);
    if (!(p->radius_arcsec > 0.0 && p->radius_arcsec <= TIDE_XM_MAX_RADIUS_ARCSEC))
        return tide_error(TIDE_E_INVAL, "%s: radius %g arcsec is not in (0, %g]", fn,
                          p->radius_arcsec, TIDE_XM_MAX_RADIUS_ARCSEC);
    /* chord = 2 sin(r / 2); computed once here so that both backends compare against the
     * same bits. */
    const double s = sin(0.5 * p->radius_arcsec / TIDE_XM_RAD2AS);
    job->ra1 = ra1;
    job->dec1 = dec1;
    job->n1 = n1;
    job->ra2 = ra2;
    job->dec2 = dec2;
    job->n2 = n2;
    job->r2 = 4.0 * s * s;
    job->mutual = p->mutual != 0;
    job->match = match;
    job->sep = sep_arcsec;
    job->nmatched = nmatched;
    if (nmatched)
        *nmatched = 0;
    return TIDE_OK;
}

/* ---- entry points ----------------------------------------------------------------------- */

int tide_crossmatch(tide_ctx *ctx, const double *ra1, const double *dec1, int64_t n1,
                    const double *ra2, const double *dec2, int64_t n2, const tide_xmatch_params *p,
                    int64_t *match, double *sep_arcsec, int64_t *nmatched) {
    tide_xm_job job;
    int st = make_job("tide_crossmatch", ctx, ra1, dec1, n1, ra2, dec2, n2, p, match, sep_arcsec,
                      nmatched, &job);
    if (st || n1 == 0)
        return st;
    return TIDE_DISPATCH(ctx, tide_xm_match, &job);
}

int tide_crossmatch_host(tide_ctx *ctx, const double *ra1, const double *dec1, int64_t n1,
                         const double *ra2, const double *dec2, int64_t n2,
                         const tide_xmatch_params *p, int64_t *match, double *sep_arcsec,
                         int64_t *nmatched) {
    tide_xm_job job;
    int st = make_job("tide_crossmatch_host", ctx, ra1, dec1, n1, ra2, dec2, n2, p, match,
                      sep_arcsec, nmatched, &job);
    if (st || n1 == 0)
        return st;
#ifdef TIDE_HAVE_CUDA
    if (ctx->backend == TIDE_BACKEND_CUDA && (double)n1 * (double)n2 >= TIDE_XMATCH_GPU_MIN_WORK)
        return tide_xm_match_host_cuda(ctx, &job);
#endif
    return tide_xm_match_cpu(ctx, &job);
}

/* Haversine (Sinnott 1984, Sky & Telescope 68, 159): hav(theta) = h = sin^2(dd/2) +
 * cos d1 cos d2 sin^2(da/2), theta = 2 atan2(sqrt(h), sqrt(1 - h)). 1 - h is computed as
 * cos^2(dd/2) cos^2(da/2) + sin^2((d1+d2)/2) sin^2(da/2), a sum of non-negative terms, so
 * near-antipodal pairs keep their precision as well as close pairs do. Accurate to ~1e-11
 * arcsec at every separation. */
double tide_sky_separation_arcsec(double ra1, double dec1, double ra2, double dec2) {
    const double d1 = dec1 * TIDE_XM_D2R, d2 = dec2 * TIDE_XM_D2R;
    const double da = (ra2 - ra1) * TIDE_XM_D2R;
    const double dd = (dec2 - dec1) * TIDE_XM_D2R; /* difference first: full precision */
    const double sdd = sin(0.5 * dd), cdd = cos(0.5 * dd);
    const double sda = sin(0.5 * da), cda = cos(0.5 * da);
    const double ssum = sin(0.5 * (d1 + d2));
    const double h = sdd * sdd + cos(d1) * cos(d2) * sda * sda;
    const double hc = cdd * cdd * cda * cda + ssum * ssum * sda * sda;
    return 2.0 * atan2(sqrt(h), sqrt(hc)) * TIDE_XM_RAD2AS;
}
