/* stats.c — deterministic reductions over valid pixels, once for both backends
 * (DESIGN §3): validation, the scratch cached in the context, and the two-pass mean/std. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats_internal.h"
#include "stats_math.h"
#include "tide/memory.h"
#include "tide/stats.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

/* ---- scratch ---------------------------------------------------------------------------- */

static void scratch_destroy(tide_ctx *ctx, void *data) {
    tide_reduce_scratch *s = (tide_reduce_scratch *)data;
    if (!s)
        return;
    tide_device_free(ctx, s->d_part);
    tide_device_free(ctx, s->d_small);
    tide_device_free(ctx, s->d_pix);
    tide_device_free(ctx, s->d_mask);
    free(s->h_part);
    free(s);
}

tide_reduce_scratch *tide_reduce_scratch_get(tide_ctx *ctx) {
    if (!ctx->ext[TIDE_EXT_REDUCE].data) {
        tide_reduce_scratch *s = (tide_reduce_scratch *)calloc(1, sizeof *s);
        if (!s)
            return NULL;
        ctx->ext[TIDE_EXT_REDUCE].data = s;
        ctx->ext[TIDE_EXT_REDUCE].destroy = scratch_destroy;
    }
    return (tide_reduce_scratch *)ctx->ext[TIDE_EXT_REDUCE].data;
}

int tide_reduce_scratch_ensure(tide_ctx *ctx, void **buf, size_t *cap, size_t need, int on_device) {
    if (*buf && *cap >= need)
        return TIDE_OK;
    if (need == 0)
        need = 64;
    /* Grow by 1/8 beyond the need so slowly growing shapes do not reallocate every call. */
    size_t want = need + need / 8;
    if (on_device) {
        tide_device_free(ctx, *buf);
        *buf = NULL;
        *cap = 0;
        int st = tide_device_alloc(ctx, want, buf);
        if (st)
            return tide_error_prefix(st, "reduce scratch (%zu bytes): ", want);
    } else {
        free(*buf);
        *cap = 0;
        *buf = malloc(want);
        if (!*buf)
            return tide_error(TIDE_E_NOMEM, "reduce scratch: cannot allocate %zu bytes", want);
    }
    *cap = want;
    return TIDE_OK;
}

int tide_reduce_reserve(tide_ctx *ctx, int64_t width, int64_t height, int host_images) {
    if (!ctx || width < 0 || height < 0)
        return tide_error(TIDE_E_INVAL, "tide_reduce_reserve: bad arguments");
    tide_reduce_scratch *s = tide_reduce_scratch_get(ctx);
    if (!s)
        return tide_error(TIDE_E_NOMEM, "reduce: no memory for scratch");
    const int64_t nch = tide_reduce_nchunks(width * height);
    const size_t part = (size_t)(nch > 0 ? nch : 1) * sizeof(tide_reduce_moments);
    if (ctx->backend != TIDE_BACKEND_CUDA)
        return tide_reduce_scratch_ensure(ctx, &s->h_part, &s->h_part_bytes, part, 0);
    int st = tide_reduce_scratch_ensure(ctx, &s->d_part, &s->d_part_bytes, part, 1);
    if (!st)
        st = tide_reduce_scratch_ensure(
            ctx, &s->d_small, &s->d_small_bytes,
            TIDE_RSEL_MAX_TARGETS * TIDE_RSEL_BINS * sizeof(uint64_t) + 256, 1);
    if (!st && host_images) {
        const size_t npix = (size_t)(width * height);
        st = tide_reduce_scratch_ensure(ctx, &s->d_pix, &s->d_pix_bytes, npix * sizeof(float), 1);
        if (!st)
            st = tide_reduce_scratch_ensure(ctx, &s->d_mask, &s->d_mask_bytes,
                                            npix * sizeof(uint16_t), 1);
    }
    return st;
}

/* ---- views ------------------------------------------------------------------------------ */

int tide_reduce_view_make(tide_ctx *ctx, const tide_image *im, uint16_t maskbits,
                          tide_reduce_view *v) {
    if (!ctx || !im || !v)
        return tide_error(TIDE_E_INVAL, "reduce: NULL argument");
    if (im->width < 0 || im->height < 0 || im->stride < im->width ||
        (!im->pix && im->width * im->height > 0))
        return tide_error(TIDE_E_INVAL, "reduce: bad image (%lld x %lld, stride %lld)",
                          (long long)im->width, (long long)im->height, (long long)im->stride);
    memset(v, 0, sizeof *v);
    v->pix = im->pix;
    v->mask = maskbits ? im->mask : NULL;
    v->width = im->width;
    v->height = im->height;
    v->stride = im->stride;
    v->maskbits = maskbits;
    v->lo = -INFINITY;
    v->hi = INFINITY;
    const int64_t n = im->width * im->height;
    if (ctx->backend != TIDE_BACKEND_CUDA) {
        if (im->location != TIDE_HOST)
            return tide_error(TIDE_E_INVAL, "reduce: a CPU context needs a host image");
        return TIDE_OK;
    }
    if (im->location == TIDE_DEVICE || n == 0)
        return TIDE_OK;
    /* Host image on a CUDA context: upload once into the cached buffers. */
    tide_reduce_scratch *s = tide_reduce_scratch_get(ctx);
    if (!s)
        return tide_error(TIDE_E_NOMEM, "reduce: no memory for scratch");
    const size_t elems = (size_t)((im->height - 1) * im->stride + im->width);
    int st = tide_reduce_scratch_ensure(ctx, &s->d_pix, &s->d_pix_bytes, elems * sizeof(float), 1);
    if (st)
        return st;
    st = tide_memcpy(ctx, s->d_pix, 1, im->pix, 0, elems * sizeof(float));
    if (st)
        return st;
    v->pix = (const float *)s->d_pix;
    if (v->mask) {
        st = tide_reduce_scratch_ensure(ctx, &s->d_mask, &s->d_mask_bytes, elems * sizeof(uint16_t),
                                        1);
        if (!st)
            st = tide_memcpy(ctx, s->d_mask, 1, im->mask, 0, elems * sizeof(uint16_t));
        if (st)
            return st;
        v->mask = (const uint16_t *)s->d_mask;
    }
    return TIDE_OK;
}

/* ---- mean and std ----------------------------------------------------------------------- */

int tide_reduce_view_stats(tide_ctx *ctx, const tide_reduce_view *v, tide_reduce_moments *mom,
                           double *mean, double *std) {
    int st = TIDE_DISPATCH(ctx, tide_reduce_moments, v, mom);
    if (st)
        return st;
    if (mom->count == 0) {
        *mean = *std = NAN;
        return TIDE_OK;
    }
    /* Two passes (mean, then squared deviations about it): no cancellation for data far from
     * zero, unlike sum-of-squares (Chan, Golub & LeVeque 1983, "Algorithms for computing the
     * sample variance"). The divisions and sqrt run here, on the host, for both backends. */
    *mean = mom->sum / (double)mom->count;
    double m2 = 0.0;
    st = TIDE_DISPATCH(ctx, tide_reduce_m2, v, *mean, &m2);
    if (st)
        return st;
    *std = sqrt(m2 / (double)mom->count);
    return TIDE_OK;
}

int tide_reduce_stats(tide_ctx *ctx, const tide_image *im, uint16_t maskbits, tide_stats *out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_reduce_stats: NULL output");
    out->n_total = 0;
    out->n_valid = 0;
    out->sum = out->mean = out->std = out->min = out->max = NAN;
    tide_reduce_view v;
    int st = tide_reduce_view_make(ctx, im, maskbits, &v);
    if (st)
        return st;
    out->n_total = im->width * im->height;
    tide_reduce_moments mom;
    st = tide_reduce_view_stats(ctx, &v, &mom, &out->mean, &out->std);
    if (st)
        return st;
    out->n_valid = mom.count;
    if (mom.count == 0)
        return tide_error(TIDE_E_EMPTY, "reduce: no valid pixel among %lld",
                          (long long)out->n_total);
    out->sum = mom.sum;
    out->min = tide_reduce_unkey(mom.kmin);
    out->max = tide_reduce_unkey(mom.kmax);
    return TIDE_OK;
}
