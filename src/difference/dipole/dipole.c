/* dipole.c — batched dipole fits and stamp cutting, the algorithm once for both backends
 * (DESIGN §3): argument checks, transfers for a CUDA context, dispatch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "dipole_kernels.h"
#include "tide/dipole.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

void tide_dipole_params_default(tide_dipole_params *p) {
    memset(p, 0, sizeof *p);
    p->model = TIDE_DIPOLE_GAUSS;
    p->max_iter = 100;
    p->tol = 1e-10;
    p->lambda0 = 1e-3;
    p->sigma_guess = 1.5;
    p->mask_bits = 0xFFFFu;
    p->fit_ps = 1;
}

static int check_args(const char *who, tide_ctx *ctx, int64_t n, int stamp, const float *pix,
                      const float *var, const tide_dipole_params *p, const tide_dipole_fit *out) {
    if (!ctx)
        return tide_error(TIDE_E_INVAL, "%s: NULL context", who);
    if (n < 0)
        return tide_error(TIDE_E_INVAL, "%s: negative stamp count", who);
    if (stamp < 3 || stamp > 4096)
        return tide_error(TIDE_E_INVAL, "%s: stamp side %d outside [3, 4096]", who, stamp);
    if (n > 0 && (!pix || !var || !out))
        return tide_error(TIDE_E_INVAL, "%s: NULL pixels, variance or output", who);
    if (p->model != TIDE_DIPOLE_GAUSS && p->model != TIDE_DIPOLE_PSF)
        return tide_error(TIDE_E_INVAL, "%s: unknown model %d", who, (int)p->model);
    if (p->max_iter < 1 || !(p->tol >= 0.0) || !(p->lambda0 > 0.0) || !(p->sigma_guess > 0.0))
        return tide_error(TIDE_E_INVAL, "%s: max_iter, tol, lambda0 or sigma_guess out of range",
                          who);
    if (p->model == TIDE_DIPOLE_PSF &&
        (!p->psf || p->psf_side < 3 || !(p->psf_side & 1) || p->psf_side > 4095))
        return tide_error(TIDE_E_INVAL, "%s: the PSF model needs an odd psf_side >= 3 and a psf",
                          who);
    return 0;
}

static void fill_job(tide_dipole_job *jb, int64_t n, int stamp, const tide_dipole_params *p) {
    memset(jb, 0, sizeof *jb);
    jb->n = n;
    jb->side = stamp;
    jb->p = *p;
    if (p->model != TIDE_DIPOLE_PSF) {
        jb->p.psf = NULL;
        jb->p.psf_side = 0;
        jb->p.psf_per_stamp = 0;
    }
}

int tide_dipole_fit_device(tide_ctx *ctx, int64_t n, int stamp, const float *pix, const float *var,
                           const uint16_t *mask, const double *x0, const double *y0,
                           const tide_dipole_params *pin, tide_dipole_fit *out) {
    const char *who = "tide_dipole_fit_device";
    tide_dipole_params p;
    if (pin)
        p = *pin;
    else
        tide_dipole_params_default(&p);
    int st = check_args(who, ctx, n, stamp, pix, var, &p, out);
    if (st)
        return st;
    if (ctx->backend != TIDE_BACKEND_CUDA)
        return tide_error(TIDE_E_NODEVICE, "%s: needs a CUDA context", who);
    if (n == 0)
        return 0;
#ifdef TIDE_HAVE_CUDA
    tide_dipole_job jb;
    fill_job(&jb, n, stamp, &p);
    jb.pix = pix;
    jb.var = var;
    jb.mask = mask;
    jb.x0 = x0;
    jb.y0 = y0;
    jb.out = out;
    return tide_dipole_batch_cuda(ctx, &jb);
#else
    (void)mask, (void)x0, (void)y0;
    return tide_error(TIDE_E_NODEVICE, "%s: built without CUDA", who);
#endif
}

/* Stamps per device batch: bounds device memory to ~1.2 GB for 21² stamps. */
#define DIP_CHUNK (1 << 18)

int tide_dipole_fit_stamps(tide_ctx *ctx, int64_t n, int stamp, const float *pix, const float *var,
                           const uint16_t *mask, const double *x0, const double *y0,
                           const tide_dipole_params *pin, tide_dipole_fit *out) {
    const char *who = "tide_dipole_fit_stamps";
    tide_dipole_params p;
    if (pin)
        p = *pin;
    else
        tide_dipole_params_default(&p);
    int st = check_args(who, ctx, n, stamp, pix, var, &p, out);
    if (st || n == 0)
        return st;
    tide_dipole_job jb;
    fill_job(&jb, n, stamp, &p);
    if (ctx->backend != TIDE_BACKEND_CUDA) {
        jb.pix = pix;
        jb.var = var;
        jb.mask = mask;
        jb.x0 = x0;
        jb.y0 = y0;
        jb.out = out;
        return tide_dipole_batch_cpu(ctx, &jb);
    }
    /* CUDA: copy chunks of stamps in, fit, copy the fits out. */
    const int64_t np = (int64_t)stamp * stamp;
    const int64_t chunk = n < DIP_CHUNK ? n : DIP_CHUNK;
    const int64_t psf_np = p.model == TIDE_DIPOLE_PSF ? (int64_t)p.psf_side * p.psf_side : 0;
    const int64_t psf_n = p.psf_per_stamp ? chunk : 1;
    void *dpix = NULL, *dvar = NULL, *dmask = NULL, *dx = NULL, *dy = NULL, *dout = NULL,
         *dpsf = NULL;
    st = tide_device_alloc(ctx, sizeof(float) * chunk * np, &dpix);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(float) * chunk * np, &dvar);
    if (!st && mask)
        st = tide_device_alloc(ctx, sizeof(uint16_t) * chunk * np, &dmask);
    if (!st && x0)
        st = tide_device_alloc(ctx, sizeof(double) * chunk, &dx);
    if (!st && y0)
        st = tide_device_alloc(ctx, sizeof(double) * chunk, &dy);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(tide_dipole_fit) * chunk, &dout);
    if (!st && psf_np)
        st = tide_device_alloc(ctx, sizeof(float) * psf_n * psf_np, &dpsf);
    if (!st && psf_np && !p.psf_per_stamp)
        st = tide_memcpy(ctx, dpsf, 1, p.psf, 0, sizeof(float) * psf_np);
    for (int64_t s0 = 0; !st && s0 < n; s0 += chunk) {
        const int64_t m = n - s0 < chunk ? n - s0 : chunk;
        st = tide_memcpy(ctx, dpix, 1, pix + s0 * np, 0, sizeof(float) * m * np);
        if (!st)
            st = tide_memcpy(ctx, dvar, 1, var + s0 * np, 0, sizeof(float) * m * np);
        if (!st && mask)
            st = tide_memcpy(ctx, dmask, 1, mask + s0 * np, 0, sizeof(uint16_t) * m * np);
        if (!st && x0)
            st = tide_memcpy(ctx, dx, 1, x0 + s0, 0, sizeof(double) * m);
        if (!st && y0)
            st = tide_memcpy(ctx, dy, 1, y0 + s0, 0, sizeof(double) * m);
        if (!st && psf_np && p.psf_per_stamp)
            st = tide_memcpy(ctx, dpsf, 1, p.psf + s0 * psf_np, 0, sizeof(float) * m * psf_np);
        if (st)
            break;
        jb.n = m;
        jb.pix = dpix;
        jb.var = dvar;
        jb.mask = dmask;
        jb.x0 = dx;
        jb.y0 = dy;
        jb.out = dout;
        jb.p.psf = dpsf;
#ifdef TIDE_HAVE_CUDA
        st = tide_dipole_batch_cuda(ctx, &jb);
#else
        st = tide_error(TIDE_E_NODEVICE, "%s: built without CUDA", who);
#endif
        if (!st)
            st = tide_memcpy(ctx, out + s0, 0, dout, 1, sizeof(tide_dipole_fit) * m);
    }
    tide_device_free(ctx, dpsf);
    tide_device_free(ctx, dout);
    tide_device_free(ctx, dy);
    tide_device_free(ctx, dx);
    tide_device_free(ctx, dmask);
    tide_device_free(ctx, dvar);
    tide_device_free(ctx, dpix);
    return st;
}

int tide_diff_cut_stamps(tide_ctx *ctx, const tide_image *im, int64_t n, const double *x,
                         const double *y, int stamp, float *pix, float *var, uint16_t *mask,
                         double *cx, double *cy) {
    const char *who = "tide_diff_cut_stamps";
    if (!ctx || !im || n < 0)
        return tide_error(TIDE_E_INVAL, "%s: bad arguments", who);
    if (stamp < 1 || !(stamp & 1) || stamp > 4095)
        return tide_error(TIDE_E_INVAL, "%s: stamp side %d is not odd in [1, 4095]", who, stamp);
    if (n == 0)
        return 0;
    if (!x || !y || !pix || !var || !im->pix)
        return tide_error(TIDE_E_INVAL, "%s: NULL positions, image or outputs", who);
    const tide_location want = ctx->backend == TIDE_BACKEND_CUDA ? TIDE_DEVICE : TIDE_HOST;
    if (im->location != want)
        return tide_error(TIDE_E_INVAL, "%s: the image must live where the context computes", who);
    tide_stamp_job jb;
    memset(&jb, 0, sizeof jb);
    jb.pix = im->pix;
    jb.var = im->var;
    jb.mask = im->mask;
    jb.width = im->width;
    jb.height = im->height;
    jb.stride = im->stride;
    jb.n = n;
    jb.x = x;
    jb.y = y;
    jb.side = stamp;
    jb.opix = pix;
    jb.ovar = var;
    jb.omask = mask;
    jb.cx = cx;
    jb.cy = cy;
    return TIDE_DISPATCH(ctx, tide_stamp_cut, &jb);
}
