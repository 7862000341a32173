/* reproject.c — reprojection, once for both backends (DESIGN §3): parameters, the mapping
 * plan (the node grid built with wcslib and refined until its measured error is within
 * bounds, or the exact TAN/SIP evaluators), device copies, and the call of the resampling
 * kernel. The per-pixel math is in reproject_math.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reproject_kernels.h"
#include "tide/log.h"
#include "tide/memory.h"
#include "tide/reproject.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "core/ctx_internal.h"

/* Half step of the central differences that give the Jacobian, output pixels. */
#define RP_JAC_H 0.5
/* Relative Jacobian interpolation error the grid is refined to (flux to 1e-6). */
#define RP_JAC_TOL 1e-6
/* Check points whose input position lies this far outside the input frame still count. */
#define RP_CHECK_MARGIN 4.0
/* Finest grid step tried, output pixels. */
#define RP_MIN_STEP 4.0

struct tide_reproject_plan {
    tide_reproject_params p;
    int64_t in_w, in_h, out_w, out_h;
    tide_reproject_info info;
    tide_wcs_tansip ts[2]; /* [0] input, [1] output (exact mode) */
    double *grid;          /* host: 3 planes of gnx × gny */
    int64_t gnx, gny;
    double step;
    int on_device;
    int threads; /* the context's CPU threads, for the host-side mapping */
    double *d_grid;
    tide_wcs_tansip *d_ts;
};

void tide_reproject_params_default(tide_reproject_params *p) {
    memset(p, 0, sizeof *p);
    p->kernel = TIDE_RESAMPLE_LANCZOS3;
    p->conserve_flux = 1;
    p->mask_bits = 0xffff;
    p->map = TIDE_REPROJECT_MAP_AUTO;
    p->grid_tol = 1e-3;
    p->grid_step = 128.0;
}

int tide_resample_parse(const char *s, tide_resample_kind *out) {
    if (!s)
        return tide_error(TIDE_E_INVAL, "resampling kernel: NULL");
    if (!strcmp(s, "lanczos3") || !strcmp(s, "lanczos") || !strcmp(s, "lanczos-3"))
        *out = TIDE_RESAMPLE_LANCZOS3;
    else if (!strcmp(s, "bilinear") || !strcmp(s, "linear"))
        *out = TIDE_RESAMPLE_BILINEAR;
    else if (!strcmp(s, "nearest"))
        *out = TIDE_RESAMPLE_NEAREST;
    else
        return tide_error(TIDE_E_INVAL,
                          "unknown resampling kernel '%s' (lanczos3, bilinear, nearest)", s);
    return 0;
}

const char *tide_resample_name(tide_resample_kind k) {
    switch (k) {
    case TIDE_RESAMPLE_BILINEAR: return "bilinear";
    case TIDE_RESAMPLE_NEAREST: return "nearest";
    default: return "lanczos3";
    }
}

/* Input positions of n output positions: out pix -> sky -> in pix. In exact mode with the
 * TAN/SIP math the pixels use (so the Jacobian is that of the same mapping), else wcslib. */
static int map_points(const tide_reproject_plan *pl, const tide_wcs *in, const tide_wcs *out,
                      int64_t n, const double *x, const double *y, double *mx, double *my) {
    if (n <= 0)
        return 0;
    if (pl->info.exact) {
        const int nt = pl->threads > 0 ? pl->threads : 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (n > 4096)
        for (int64_t i = 0; i < n; i++) {
            double ra, dec;
            tide_tansip_pix2sky_one(&pl->ts[1], x[i], y[i], &ra, &dec);
            tide_tansip_sky2pix_one(&pl->ts[0], ra, dec, &mx[i], &my[i]);
        }
        return 0;
    }
    double *sky = malloc(sizeof(double) * 2 * (size_t)n);
    if (!sky)
        return tide_error(TIDE_E_NOMEM, "reproject: cannot allocate the mapping");
    int st = tide_wcs_pix2sky(out, n, x, y, sky, sky + n);
    if (!st)
        st = tide_wcs_sky2pix(in, n, sky, sky + n, mx, my);
    free(sky);
    return st;
}

/* Input position and J = |det d(in)/d(out)| at n output positions (central differences). */
static int map_with_jac(const tide_reproject_plan *pl, const tide_wcs *in, const tide_wcs *out,
                        int64_t n, const double *x, const double *y, double *mx, double *my,
                        double *jac) {
    if (n <= 0)
        return 0;
    const int64_t m = 5 * n;
    double *b = calloc(4 * (size_t)m, sizeof(double));
    if (!b)
        return tide_error(TIDE_E_NOMEM, "reproject: cannot allocate the mapping");
    double *px = b, *py = b + m, *qx = b + 2 * m, *qy = b + 3 * m;
    static const double dx[5] = {0, RP_JAC_H, -RP_JAC_H, 0, 0};
    static const double dy[5] = {0, 0, 0, RP_JAC_H, -RP_JAC_H};
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 5; k++) {
            px[5 * i + k] = x[i] + dx[k];
            py[5 * i + k] = y[i] + dy[k];
        }
    int st = map_points(pl, in, out, m, px, py, qx, qy);
    if (!st)
        for (int64_t i = 0; i < n; i++) {
            const double *X = qx + 5 * i, *Y = qy + 5 * i;
            const double a = (X[1] - X[2]) / (2 * RP_JAC_H), bb = (X[3] - X[4]) / (2 * RP_JAC_H);
            const double c = (Y[1] - Y[2]) / (2 * RP_JAC_H), d = (Y[3] - Y[4]) / (2 * RP_JAC_H);
            mx[i] = X[0];
            my[i] = Y[0];
            jac[i] = fabs(a * d - bb * c);
        }
    free(b);
    return st;
}

static int on_input(const tide_reproject_plan *pl, double mx, double my) {
    return mx >= -0.5 - RP_CHECK_MARGIN && mx <= (double)pl->in_w - 0.5 + RP_CHECK_MARGIN &&
           my >= -0.5 - RP_CHECK_MARGIN && my <= (double)pl->in_h - 0.5 + RP_CHECK_MARGIN;
}

/* Build the node grid of step s and measure its interpolation errors. */
static int grid_build(tide_reproject_plan *pl, const tide_wcs *in, const tide_wcs *out, double s) {
    const int64_t ncx = pl->out_w > 1 ? (int64_t)ceil((double)(pl->out_w - 1) / s) : 1;
    const int64_t ncy = pl->out_h > 1 ? (int64_t)ceil((double)(pl->out_h - 1) / s) : 1;
    const int64_t gnx = ncx + 3, gny = ncy + 3, nn = gnx * gny;
    free(pl->grid);
    pl->grid = malloc(sizeof(double) * 3 * (size_t)nn);
    const int64_t nc = 5 * ncx * ncy; /* check points per cell, see below */
    double *b = malloc(sizeof(double) * 5 * (size_t)(nn > nc ? nn : nc));
    if (!pl->grid || !b) {
        free(b);
        return tide_error(TIDE_E_NOMEM, "reproject: cannot allocate a %lld-node grid",
                          (long long)nn);
    }
    pl->gnx = gnx;
    pl->gny = gny;
    pl->step = s;
    double *x = b, *y = b + nn;
    for (int64_t j = 0; j < gny; j++)
        for (int64_t i = 0; i < gnx; i++) {
            x[j * gnx + i] = (double)(i - 1) * s;
            y[j * gnx + i] = (double)(j - 1) * s;
        }
    int st = map_with_jac(pl, in, out, nn, x, y, pl->grid, pl->grid + nn, pl->grid + 2 * nn);
    if (st) {
        free(b);
        return st;
    }
    tide_reproject_info *inf = &pl->info;
    inf->jac_min = INFINITY;
    inf->jac_max = -INFINITY;
    for (int64_t k = 0; k < nn; k++)
        if (on_input(pl, pl->grid[k], pl->grid[nn + k]) && isfinite(pl->grid[2 * nn + k])) {
            inf->jac_min = fmin(inf->jac_min, pl->grid[2 * nn + k]);
            inf->jac_max = fmax(inf->jac_max, pl->grid[2 * nn + k]);
        }
    /* check points */
    int64_t n = 0;
    unsigned char *tag = malloc((size_t)(nc > 0 ? nc : 1));
    if (!tag) {
        free(b);
        return tide_error(TIDE_E_NOMEM, "reproject: cannot allocate the grid check");
    }
    x = b;
    y = b + nc;
    for (int64_t j = 0; j < ncy; j++)
        for (int64_t i = 0; i < ncx; i++) {
            /* The centre, where the error of a quartic term peaks, and the four points at
             * t = (3 -+ sqrt 3) / 6 in both axes, where that of a cubic term peaks
             * (Catmull-Rom is exact at the centre for cubics: its error for x^3 is
             * t (2t - 1)(t - 1) h^3). */
            const double x0 = (double)i * s, y0 = (double)j * s;
            const double a = 0.21132486540518712 * s, c = 0.78867513459481288 * s;
            const double px[5] = {x0 + 0.5 * s, x0 + a, x0 + c, x0 + a, x0 + c};
            const double py[5] = {y0 + 0.5 * s, y0 + a, y0 + a, y0 + c, y0 + c};
            for (int k = 0; k < 5; k++) {
                if (px[k] > (double)pl->out_w - 0.5 || py[k] > (double)pl->out_h - 0.5)
                    continue;
                x[n] = px[k];
                y[n] = py[k];
                tag[n] = (unsigned char)k;
                n++;
            }
        }
    /* The mapping is checked at all five points of a cell; the Jacobian, which is far
     * smoother and costs four more evaluations a point, at the centre (tag 0) only. */
    double *mx = b + 2 * nc, *my = b + 3 * nc, *jc = b + 4 * nc;
    int64_t nj = 0;
    for (int64_t k = 0; k < n; k++)
        if (tag[k] == 0)
            nj++;
    double *cb = malloc(sizeof(double) * 5 * (size_t)(nj > 0 ? nj : 1));
    if (!cb)
        st = tide_error(TIDE_E_NOMEM, "reproject: cannot allocate the grid check");
    if (!st)
        st = pl->info.exact ? 0 : map_points(pl, in, out, n, x, y, mx, my);
    if (!st) {
        double *cx = cb, *cy = cb + nj, *cmx = cb + 2 * nj, *cmy = cb + 3 * nj, *cj = cb + 4 * nj;
        for (int64_t k = 0, q = 0; k < n; k++)
            if (tag[k] == 0)
                cx[q] = x[k], cy[q++] = y[k];
        st = map_with_jac(pl, in, out, nj, cx, cy, cmx, cmy, cj);
        for (int64_t k = 0, q = 0; !st && k < n; k++) {
            if (tag[k] == 0) {
                jc[k] = cj[q];
                if (pl->info.exact)
                    mx[k] = cmx[q], my[k] = cmy[q];
                q++;
            } else {
                jc[k] = NAN;
                if (pl->info.exact)
                    mx[k] = my[k] = NAN;
            }
        }
    }
    free(cb);
    if (!st) {
        double emap = 0.0, ejac = 0.0;
        int64_t used = 0;
        for (int64_t k = 0; k < n; k++) {
            if (pl->info.exact && tag[k] != 0)
                continue; /* exact: only the Jacobian */
            if (!on_input(pl, mx[k], my[k]))
                continue;
            double g[3];
            tide_rp_grid_eval(pl->grid, gnx, gny, s, x[k], y[k], g);
            if (!pl->info.exact) {
                const double e = hypot(g[0] - mx[k], g[1] - my[k]);
                /* NaN (a node off the projection's domain) counts as an unbounded error */
                emap = isfinite(e) ? fmax(emap, e) : INFINITY;
            }
            if (tag[k] == 0) {
                const double ej = fabs(g[2] - jc[k]) / jc[k];
                ejac = isfinite(ej) ? fmax(ejac, ej) : INFINITY;
            }
            used++;
        }
        inf->map_err_px = emap;
        inf->jac_err_rel = ejac;
        inf->n_checked = used;
        inf->grid_step = s;
        inf->grid_nx = gnx;
        inf->grid_ny = gny;
    }
    free(tag);
    free(b);
    return st;
}

static int check_params(const tide_reproject_params *p) {
    if (p->kernel < TIDE_RESAMPLE_LANCZOS3 || p->kernel > TIDE_RESAMPLE_NEAREST)
        return tide_error(TIDE_E_INVAL, "reproject: unknown kernel %d", (int)p->kernel);
    if (p->map < TIDE_REPROJECT_MAP_AUTO || p->map > TIDE_REPROJECT_MAP_EXACT)
        return tide_error(TIDE_E_INVAL, "reproject: unknown mapping mode %d", (int)p->map);
    if (!(p->grid_tol > 0) || !(p->grid_step >= RP_MIN_STEP) || !isfinite(p->grid_step))
        return tide_error(TIDE_E_INVAL, "reproject: grid_tol must be > 0 and grid_step >= %g",
                          RP_MIN_STEP);
    return 0;
}

int tide_reproject_plan_create(tide_ctx *ctx, const tide_wcs *in_wcs, int64_t in_w, int64_t in_h,
                               const tide_wcs *out_wcs, int64_t out_w, int64_t out_h,
                               const tide_reproject_params *p, tide_reproject_plan **plan) {
    if (!ctx || !in_wcs || !out_wcs || !plan)
        return tide_error(TIDE_E_INVAL, "tide_reproject_plan_create: NULL argument");
    *plan = NULL;
    if (in_w <= 0 || in_h <= 0 || out_w <= 0 || out_h <= 0)
        return tide_error(TIDE_E_INVAL, "reproject: bad sizes %lldx%lld -> %lldx%lld",
                          (long long)in_w, (long long)in_h, (long long)out_w, (long long)out_h);
    tide_reproject_plan *pl = calloc(1, sizeof *pl);
    if (!pl)
        return tide_error(TIDE_E_NOMEM, "reproject: cannot allocate a plan");
    if (p)
        pl->p = *p;
    else
        tide_reproject_params_default(&pl->p);
    int st = check_params(&pl->p);
    if (st)
        goto fail;
    pl->in_w = in_w;
    pl->in_h = in_h;
    pl->threads = ctx->threads;
    pl->out_w = out_w;
    pl->out_h = out_h;
    /* exact per-pixel mapping when both are TAN/TAN-SIP */
    if (pl->p.map != TIDE_REPROJECT_MAP_GRID) {
        st = tide_wcs_tansip_from_wcs(in_wcs, &pl->ts[0]);
        if (!st)
            st = tide_wcs_tansip_from_wcs(out_wcs, &pl->ts[1]);
        if (!st)
            pl->info.exact = 1;
        else if (pl->p.map == TIDE_REPROJECT_MAP_EXACT)
            goto fail;
        tide_error_clear();
        st = 0;
    }
    double s = pl->p.grid_step;
    const double longest = (double)(out_w > out_h ? out_w : out_h);
    while (s > RP_MIN_STEP && s > longest)
        s *= 0.5;
    for (;;) {
        st = grid_build(pl, in_wcs, out_wcs, s);
        if (st)
            goto fail;
        const int map_ok = pl->info.exact || pl->info.map_err_px <= pl->p.grid_tol;
        const int jac_ok = pl->info.jac_err_rel <= RP_JAC_TOL;
        if (map_ok && jac_ok) {
            pl->info.converged = 1;
            break;
        }
        if (s * 0.5 < RP_MIN_STEP) {
            /* the finest grid is used; info says it missed the bound */
            pl->info.converged = map_ok;
            break;
        }
        s *= 0.5;
    }
    if (pl->info.exact)
        pl->info.map_err_px = 0.0;
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        const size_t gb = sizeof(double) * 3 * (size_t)(pl->gnx * pl->gny);
        st = tide_device_alloc(ctx, gb, (void **)&pl->d_grid);
        if (!st)
            st = tide_device_alloc(ctx, sizeof pl->ts, (void **)&pl->d_ts);
        if (!st)
            st = tide_memcpy(ctx, pl->d_grid, 1, pl->grid, 0, gb);
        if (!st)
            st = tide_memcpy(ctx, pl->d_ts, 1, pl->ts, 0, sizeof pl->ts);
        if (st)
            goto fail;
        pl->on_device = 1;
    }
    *plan = pl;
    return 0;
fail:
    tide_reproject_plan_free(ctx, pl);
    return st;
}

void tide_reproject_plan_info(const tide_reproject_plan *plan, tide_reproject_info *info) {
    if (plan && info)
        *info = plan->info;
}

void tide_reproject_plan_free(tide_ctx *ctx, tide_reproject_plan *plan) {
    if (!plan)
        return;
    if (plan->d_grid)
        tide_device_free(ctx, plan->d_grid);
    if (plan->d_ts)
        tide_device_free(ctx, plan->d_ts);
    free(plan->grid);
    free(plan);
}

/* Fill the kernel arguments for images that live where the backend computes. */
static void make_args(const tide_reproject_plan *pl, int dev, const tide_image *in, tide_image *out,
                      tide_image *cov, tide_rp_args *a) {
    memset(a, 0, sizeof *a);
    a->pix = in->pix;
    a->mask = in->mask;
    a->var = in->var;
    a->in_w = in->width;
    a->in_h = in->height;
    a->in_stride = in->stride;
    a->opix = out->pix;
    a->omask = out->mask;
    a->ovar = out->var;
    a->ocov = cov ? cov->pix : NULL;
    a->out_w = out->width;
    a->out_h = out->height;
    a->out_stride = out->stride;
    a->cov_stride = cov ? cov->stride : 0;
    a->kernel = (int)pl->p.kernel;
    a->conserve = pl->p.conserve_flux != 0;
    a->mask_bits = pl->p.mask_bits;
    a->exact = pl->info.exact;
    a->tin = dev ? &pl->d_ts[0] : &pl->ts[0];
    a->tout = dev ? &pl->d_ts[1] : &pl->ts[1];
    a->grid = dev ? pl->d_grid : pl->grid;
    a->gnx = pl->gnx;
    a->gny = pl->gny;
    a->gstep = pl->step;
}

/* Allocate out (+ coverage) like the plan's output at @p where and resample into them. */
static int run_at(tide_ctx *ctx, const tide_reproject_plan *pl, const tide_image *in,
                  tide_location where, tide_image *out, tide_image *cov) {
    const int planes = TIDE_IMAGE_MASK | (in->var ? TIDE_IMAGE_VAR : 0);
    int st = tide_image_alloc(ctx, out, pl->out_w, pl->out_h, where, planes);
    if (!st && cov)
        st = tide_image_alloc(ctx, cov, pl->out_w, pl->out_h, where, 0);
    if (st) {
        tide_image_free(ctx, out);
        return st;
    }
    tide_rp_args a;
    make_args(pl, where == TIDE_DEVICE, in, out, cov, &a);
    st = TIDE_DISPATCH(ctx, tide_rp_resample, &a);
    if (st) {
        tide_image_free(ctx, out);
        if (cov)
            tide_image_free(ctx, cov);
    }
    return st;
}

int tide_reproject_execute(tide_ctx *ctx, const tide_reproject_plan *pl, const tide_image *in,
                           tide_image *out, tide_image *coverage) {
    if (!ctx || !pl || !in || !out || !in->pix)
        return tide_error(TIDE_E_INVAL, "tide_reproject_execute: NULL argument");
    memset(out, 0, sizeof *out);
    if (coverage)
        memset(coverage, 0, sizeof *coverage);
    if (in->width != pl->in_w || in->height != pl->in_h)
        return tide_error(TIDE_E_INVAL,
                          "reproject: input is %lldx%lld, the plan expects "
                          "%lldx%lld",
                          (long long)in->width, (long long)in->height, (long long)pl->in_w,
                          (long long)pl->in_h);
    tide_timer t;
    int st = tide_timer_start(ctx, &t, "reproject");
    if (st)
        return st;
    if (ctx->backend != TIDE_BACKEND_CUDA) {
        if (in->location != TIDE_HOST)
            st = tide_error(TIDE_E_INVAL, "reproject: a CPU context needs a host image");
        else
            st = run_at(ctx, pl, in, TIDE_HOST, out, coverage);
    } else if (!pl->on_device) {
        st = tide_error(TIDE_E_INVAL, "reproject: the plan was made on a CPU context");
    } else if (in->location == TIDE_DEVICE) {
        st = run_at(ctx, pl, in, TIDE_DEVICE, out, coverage);
    } else {
        /* host image on a CUDA context: upload, resample, copy back */
        tide_image din, dout, dcov;
        memset(&dcov, 0, sizeof dcov);
        st = tide_image_clone(ctx, &din, in, TIDE_DEVICE);
        if (!st) {
            st = run_at(ctx, pl, &din, TIDE_DEVICE, &dout, coverage ? &dcov : NULL);
            tide_image_free(ctx, &din);
            if (!st) {
                st = tide_image_clone(ctx, out, &dout, TIDE_HOST);
                if (!st && coverage)
                    st = tide_image_clone(ctx, coverage, &dcov, TIDE_HOST);
                if (st) {
                    tide_image_free(ctx, out);
                    if (coverage)
                        tide_image_free(ctx, coverage);
                }
                tide_image_free(ctx, &dout);
                if (coverage)
                    tide_image_free(ctx, &dcov);
            }
        }
    }
    double ms;
    const int st2 = tide_timer_stop(ctx, &t, &ms);
    return st ? st : st2;
}

int tide_reproject_ex(tide_ctx *ctx, const tide_image *in, const tide_wcs *in_wcs,
                      const tide_wcs *out_wcs, int64_t out_w, int64_t out_h,
                      const tide_reproject_params *p, tide_image *out, tide_image *coverage,
                      tide_reproject_info *info) {
    if (!in)
        return tide_error(TIDE_E_INVAL, "tide_reproject: NULL image");
    tide_reproject_plan *pl;
    int st = tide_reproject_plan_create(ctx, in_wcs, in->width, in->height, out_wcs, out_w, out_h,
                                        p, &pl);
    if (st)
        return st;
    if (info)
        *info = pl->info;
    st = tide_reproject_execute(ctx, pl, in, out, coverage);
    tide_reproject_plan_free(ctx, pl);
    return st;
}

int tide_reproject(tide_ctx *ctx, const tide_image *in, const tide_wcs *in_wcs,
                   const tide_wcs *out_wcs, int64_t out_w, int64_t out_h,
                   const tide_reproject_params *p, tide_image *out, tide_image *coverage) {
    return tide_reproject_ex(ctx, in, in_wcs, out_wcs, out_w, out_h, p, out, coverage, NULL);
}
