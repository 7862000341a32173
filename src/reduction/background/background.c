/* background.c — the background estimate and the noise model, once for both backends
 * (DESIGN §3). The method and its sources are described in include/tide/background.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "background_kernels.h"
#include "tide/background.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "core/ctx_internal.h"

void tide_bkg_params_default(tide_bkg_params *p) {
    memset(p, 0, sizeof *p);
    p->mesh_w = p->mesh_h = 64;
    p->filter_w = p->filter_h = 3;
    p->filter_thresh = 0.0;
    p->mask_bits = 0xFFFFu;
    p->min_good_frac = 0.5;
    p->smooth_degree = 0;
}

static int check_image(const tide_ctx *ctx, const tide_image *im, const char *what) {
    if (!im || !im->pix || im->width <= 0 || im->height <= 0 || im->stride < im->width)
        return tide_error(TIDE_E_INVAL, "%s: missing or empty image", what);
    if (ctx->backend != TIDE_BACKEND_CUDA && im->location != TIDE_HOST)
        return tide_error(TIDE_E_INVAL, "%s: a device image on a CPU context", what);
    return TIDE_OK;
}

static int check_params(const tide_bkg_params *p) {
    if (p->mesh_w < 1 || p->mesh_h < 1)
        return tide_error(TIDE_E_INVAL, "background: mesh size %lldx%lld must be >= 1",
                          (long long)p->mesh_w, (long long)p->mesh_h);
    if (p->mesh_w > INT32_MAX / p->mesh_h)
        return tide_error(TIDE_E_INVAL, "background: mesh %lldx%lld has more than 2^31 pixels",
                          (long long)p->mesh_w, (long long)p->mesh_h);
    if (p->filter_w < 1 || p->filter_h < 1 || p->filter_w > 255 || p->filter_h > 255)
        return tide_error(TIDE_E_INVAL, "background: filter size %dx%d must be in 1..255",
                          p->filter_w, p->filter_h);
    if (!(p->filter_thresh >= 0.0))
        return tide_error(TIDE_E_INVAL, "background: filter threshold %g must be >= 0",
                          p->filter_thresh);
    if (!(p->min_good_frac >= 0.0 && p->min_good_frac <= 1.0))
        return tide_error(TIDE_E_INVAL, "background: min_good_frac %g must be in [0, 1]",
                          p->min_good_frac);
    if (p->smooth_degree < 0 || p->smooth_degree > 6)
        return tide_error(TIDE_E_INVAL, "background: smooth degree %d must be in 0..6",
                          p->smooth_degree);
    return TIDE_OK;
}

static void plan_make(tide_bkg_plan *pl, const tide_image *im, int64_t bw, int64_t bh,
                      const tide_bkg_params *p) {
    pl->w = im->width;
    pl->h = im->height;
    pl->bw = bw;
    pl->bh = bh;
    pl->nx = (im->width - 1) / bw + 1;
    pl->ny = (im->height - 1) / bh + 1;
    pl->nmesh = pl->nx * pl->ny;
    pl->min_good_frac = p->min_good_frac;
    pl->mask_bits = p->mask_bits;
}

/* Mesh statistics, falling back to one mesh over the whole frame when no mesh is good. */
static int measure(tide_ctx *ctx, const tide_image *im, const tide_bkg_params *p, tide_bkg_plan *pl,
                   float **mesh) {
    plan_make(pl, im, p->mesh_w, p->mesh_h, p);
    *mesh = malloc(sizeof(float) * (size_t)(2 * pl->nmesh));
    if (!*mesh)
        return tide_error(TIDE_E_NOMEM, "background: out of memory for %lld meshes",
                          (long long)pl->nmesh);
    int st = TIDE_DISPATCH(ctx, tide_bkg_mesh_stats, pl, im, *mesh);
    if (st)
        return st;
    for (int64_t k = 0; k < pl->nmesh; k++)
        if (!isnan((*mesh)[2 * k]))
            return TIDE_OK;
    tide_log(&ctx->log, TIDE_LOG_WARN, "background",
             "no %lldx%lld mesh has %.0f%% valid pixels: using the whole frame as one mesh",
             (long long)p->mesh_w, (long long)p->mesh_h, 100.0 * p->min_good_frac);
    tide_bkg_params one = *p;
    one.min_good_frac = 0.0;
    plan_make(pl, im, im->width, im->height, &one);
    st = TIDE_DISPATCH(ctx, tide_bkg_mesh_stats, pl, im, *mesh);
    if (st)
        return st;
    if (isnan((*mesh)[0]))
        return tide_error(TIDE_E_EMPTY,
                          "background: no valid pixel in the %lldx%lld frame (all NaN, Inf "
                          "or masked by bits 0x%04x)",
                          (long long)im->width, (long long)im->height, (unsigned)p->mask_bits);
    return TIDE_OK;
}

/* A map of im's size where it lives; every pixel is written by the interpolation. */
static int alloc_like(tide_ctx *ctx, tide_image *out, const tide_image *im) {
    return tide_image_alloc(ctx, out, im->width, im->height, im->location, TIDE_IMAGE_UNINIT);
}

/* The estimate on an image that lives where the context computes. */
static int estimate(tide_ctx *ctx, const tide_image *im, const tide_bkg_params *p, tide_image *bkg,
                    tide_image *rms, tide_bkg_summary *s) {
    tide_bkg_plan pl;
    float *mesh = NULL, *work = NULL;
    double t0 = tide_now();
    int st = measure(ctx, im, p, &pl, &mesh);
    tide_timer_add(ctx, "background.mesh", 1e3 * (tide_now() - t0));
    t0 = tide_now();
    if (st)
        goto done;
    const int64_t np = pl.nmesh;
    work = malloc(sizeof(float) * (size_t)(np * (2 + TIDE_BKG_NPLANES)));
    if (!work) {
        st = tide_error(TIDE_E_NOMEM, "background: out of memory for the mesh grid");
        goto done;
    }
    float *back = work, *sig = work + np, *coef = work + 2 * np;
    s->nx_mesh = pl.nx;
    s->ny_mesh = pl.ny;
    tide_bkg_poly poly[2];
    st = tide_bkg_grid_filter(&pl, p, mesh, back, sig, s);
    if (!st && p->smooth_degree > 0) {
        st = tide_bkg_grid_smooth(&pl, p->smooth_degree, back, &poly[0]);
        if (!st)
            st = tide_bkg_grid_smooth(&pl, p->smooth_degree, sig, &poly[1]);
    } else if (!st) {
        st = tide_bkg_grid_spline(&pl, back, coef);
        if (!st)
            st = tide_bkg_grid_spline(&pl, sig, coef + 4 * np);
    }
    tide_timer_add(ctx, "background.grid", 1e3 * (tide_now() - t0));
    t0 = tide_now();
    if (!st && bkg)
        st = alloc_like(ctx, bkg, im);
    if (!st && rms)
        st = alloc_like(ctx, rms, im);
    if (!st && (bkg || rms)) {
        if (p->smooth_degree > 0)
            st = TIDE_DISPATCH(ctx, tide_bkg_poly, &pl, poly, bkg, rms);
        else
            st = TIDE_DISPATCH(ctx, tide_bkg_interp, &pl, coef, bkg, rms);
    }
    tide_timer_add(ctx, "background.maps", 1e3 * (tide_now() - t0));
    if (!st)
        tide_log(&ctx->log, TIDE_LOG_DEBUG, "background",
                 "%lldx%lld meshes of %lldx%lld: global %.6g, rms %.6g, %lld bad, %lld filtered",
                 (long long)pl.nx, (long long)pl.ny, (long long)pl.bw, (long long)pl.bh,
                 s->global_back, s->global_rms, (long long)s->n_bad_mesh, (long long)s->n_replaced);
done:
    free(mesh);
    free(work);
    return st;
}

int tide_background_estimate(tide_ctx *ctx, const tide_image *im, const tide_bkg_params *p,
                             tide_image *bkg, tide_image *rms, tide_bkg_summary *s) {
    if (!ctx)
        return tide_error(TIDE_E_INVAL, "background: NULL context");
    tide_bkg_params def;
    if (!p) {
        tide_bkg_params_default(&def);
        p = &def;
    }
    int st = check_image(ctx, im, "background");
    if (!st)
        st = check_params(p);
    if (st)
        return st;
    if (bkg)
        memset(bkg, 0, sizeof *bkg);
    if (rms)
        memset(rms, 0, sizeof *rms);
    tide_bkg_summary sum;
    memset(&sum, 0, sizeof sum);
    tide_timer tm;
    tide_timer_start(ctx, &tm, "background");
    if (ctx->backend == TIDE_BACKEND_CUDA && im->location == TIDE_HOST) {
        /* Host frame on a CUDA context: compute on a device copy, hand back host maps. */
        tide_image din = {0}, db = {0}, dr = {0};
        st = tide_image_clone(ctx, &din, im, TIDE_DEVICE);
        if (!st)
            st = estimate(ctx, &din, p, bkg ? &db : NULL, rms ? &dr : NULL, &sum);
        if (!st && bkg)
            st = tide_image_clone(ctx, bkg, &db, TIDE_HOST);
        if (!st && rms)
            st = tide_image_clone(ctx, rms, &dr, TIDE_HOST);
        tide_image_free(ctx, &din);
        tide_image_free(ctx, &db);
        tide_image_free(ctx, &dr);
    } else {
        st = estimate(ctx, im, p, bkg, rms, &sum);
    }
    tide_timer_stop(ctx, &tm, NULL);
    if (st) {
        if (bkg)
            tide_image_free(ctx, bkg);
        if (rms)
            tide_image_free(ctx, rms);
        return st;
    }
    if (s)
        *s = sum;
    return TIDE_OK;
}

int tide_noise_model(tide_ctx *ctx, const tide_image *bkg, double gain, double rdnoise,
                     int ncombine, tide_image *var) {
    if (!ctx || !var)
        return tide_error(TIDE_E_INVAL, "noise model: NULL context or output");
    int st = check_image(ctx, bkg, "noise model");
    if (st)
        return st;
    if (!(gain > 0.0) || !isfinite(gain))
        return tide_error(TIDE_E_INVAL, "noise model: gain %g e-/ADU must be > 0", gain);
    if (!(rdnoise >= 0.0) || !isfinite(rdnoise))
        return tide_error(TIDE_E_INVAL, "noise model: read noise %g e- must be >= 0", rdnoise);
    if (ncombine < 1)
        return tide_error(TIDE_E_INVAL, "noise model: ncombine %d must be >= 1", ncombine);
    const double inv_gain = 1.0 / gain, rn = rdnoise / gain, inv_n = 1.0 / (double)ncombine;
    memset(var, 0, sizeof *var);
    if (ctx->backend == TIDE_BACKEND_CUDA && bkg->location == TIDE_HOST) {
        tide_image db = {0}, dv = {0};
        st = tide_image_clone(ctx, &db, bkg, TIDE_DEVICE);
        if (!st)
            st = alloc_like(ctx, &dv, &db);
        if (!st)
            st = TIDE_DISPATCH(ctx, tide_noise_model, &db, inv_gain, rn * rn, inv_n, &dv);
        if (!st)
            st = tide_image_clone(ctx, var, &dv, TIDE_HOST);
        tide_image_free(ctx, &db);
        tide_image_free(ctx, &dv);
        return st;
    }
    st = alloc_like(ctx, var, bkg);
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_noise_model, bkg, inv_gain, rn * rn, inv_n, var);
    if (st)
        tide_image_free(ctx, var);
    return st;
}
