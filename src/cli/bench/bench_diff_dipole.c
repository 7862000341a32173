/* bench_diff_dipole.c — part d of `tide bench --diff` (bench_diff.c): batched dipole and
 * point-source fits of 10^5 simulated 21x21 stamps (difference/dipole/dipole_sim.h),
 * device-resident on CUDA, stamps per second. */
#include <stdlib.h>
#include <string.h>

#include "bench_diff_int.h"
#include "difference/dipole/dipole_sim.h"
#include "tide/tide.h"

typedef struct dip_arg {
    int64_t n;
    int side, device;
    const float *pix, *var;
    tide_dipole_params p;
    tide_dipole_fit *out;
} dip_arg;

static int do_dipole(tide_ctx *ctx, void *p) {
    dip_arg *a = p;
    if (a->device)
        return tide_dipole_fit_device(ctx, a->n, a->side, a->pix, a->var, NULL, NULL, NULL, &a->p,
                                      a->out);
    return tide_dipole_fit_stamps(ctx, a->n, a->side, a->pix, a->var, NULL, NULL, NULL, &a->p,
                                  a->out);
}

int tide_bd_dipoles(tide_ctx *ctx, const bd_opts *o, bd_result *r) {
    const int side = 21, ps = 25;
    const int64_t n = o->stamps, np = (int64_t)side * side;
    const size_t pbytes = sizeof(float) * (size_t)(n * np);
    float *pix = malloc(pbytes), *var = malloc(pbytes);
    float hpsf[25 * 25];
    tide_dipole_fit *fits = malloc(sizeof *fits * (size_t)n);
    if (!pix || !var || !fits) {
        free(pix);
        free(var);
        free(fits);
        return tide_error(TIDE_E_NOMEM, "bench: dipole stamps");
    }
    /* Gaussian dipoles of lobe S/N 20-60, separations 3-5 widths: test_gpu_dipole's set. */
    for (int64_t s = 0; s < n; s++) {
        dsim_truth tr;
        dsim_stamp(11, s, TIDE_DIPOLE_GAUSS, 1, side, 20.0, 60.0, 3.0, 5.0, NULL, 0, 1.6,
                   pix + s * np, var + s * np, &tr);
    }
    dsim_psf(hpsf, ps, 1.6);
    const int dev = ctx->backend == TIDE_BACKEND_CUDA;
    void *dpix = NULL, *dvar = NULL, *dout = NULL, *dpsf = NULL;
    int st = 0;
    if (dev) {
        st = tide_device_alloc(ctx, pbytes, &dpix);
        if (!st)
            st = tide_device_alloc(ctx, pbytes, &dvar);
        if (!st)
            st = tide_device_alloc(ctx, sizeof *fits * (size_t)n, &dout);
        if (!st)
            st = tide_device_alloc(ctx, sizeof hpsf, &dpsf);
        if (!st)
            st = tide_memcpy(ctx, dpix, 1, pix, 0, pbytes);
        if (!st)
            st = tide_memcpy(ctx, dvar, 1, var, 0, pbytes);
        if (!st)
            st = tide_memcpy(ctx, dpsf, 1, hpsf, 0, sizeof hpsf);
    }
    dip_arg a = {n, side, dev, dev ? dpix : pix, dev ? dvar : var, {0}, dev ? dout : fits};
    for (int k = 0; k < BD_NDIP && !st; k++) {
        tide_dipole_params_default(&a.p);
        if (k == 1)
            a.p.fit_ps = 0;
        if (k == 2) {
            a.p.model = TIDE_DIPOLE_PSF;
            a.p.psf = dev ? dpsf : hpsf;
            a.p.psf_side = ps;
        }
        st = tide_bd_time_median(ctx, o, do_dipole, &a, &r->dip[k].ms);
        r->dip[k].n = n;
        r->dip[k].per_s = r->dip[k].ms > 0 ? (double)n / (r->dip[k].ms * 1e-3) : 0.0;
        r->dip[k].device = dev;
    }
    if (dev) {
        tide_device_free(ctx, dpix);
        tide_device_free(ctx, dvar);
        tide_device_free(ctx, dout);
        tide_device_free(ctx, dpsf);
    }
    free(pix);
    free(var);
    free(fits);
    return st ? tide_error_prefix(st, "dipole fits: ") : 0;
}
