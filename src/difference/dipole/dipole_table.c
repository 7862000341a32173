/* dipole_table.c — dipole fits as catalog columns, and the candidate-fitting path of the
 * difference pipeline: cut stamps and fit them where the context computes, one upload of the
 * image and one download of the fits (dipole.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tide/dipole.h"
#include "tide/memory.h"
#include "tide/psf.h"
#include "tide/status.h"

enum {
    C_XP,
    C_YP,
    C_XN,
    C_YN,
    C_FL,
    C_XPE,
    C_YPE,
    C_XNE,
    C_YNE,
    C_FLE,
    C_S1,
    C_S2,
    C_TH,
    C_DCHI,
    C_PX,
    C_PY,
    C_PF,
    C_PXE,
    C_PYE,
    C_PFE,
    C_PCHI,
    C_DELTA,
    C_NF64
};
static const char *const f64_names[C_NF64] = {
    "DIP_XPOS",     "DIP_YPOS",     "DIP_XNEG",     "DIP_YNEG",     "DIP_FLUX",   "DIP_XPOS_ERR",
    "DIP_YPOS_ERR", "DIP_XNEG_ERR", "DIP_YNEG_ERR", "DIP_FLUX_ERR", "DIP_SIGMA1", "DIP_SIGMA2",
    "DIP_THETA",    "DIP_CHI2",     "PS_X",         "PS_Y",         "PS_FLUX",    "PS_X_ERR",
    "PS_Y_ERR",     "PS_FLUX_ERR",  "PS_CHI2",      "DELTA_CHI2"};
static const char *const f64_units[C_NF64] = {
    "pixel", "pixel", "pixel", "pixel", "",      "pixel", "pixel", "pixel", "pixel", "", "pixel",
    "pixel", "deg",   "",      "pixel", "pixel", "",      "pixel", "pixel", "",      "", ""};
static const char *const i32_names[4] = {"NPIX", "NITER", "FIT_STATUS", "PS_STATUS"};
static const char *const i32_comments[4] = {"pixels used by the fits", "dipole fit iterations",
                                            "0 ok 1 maxiter 2 sing 3 bad 4 unres 5 1sign 6 nosig",
                                            "point-source fit status"};

int tide_dipole_fits_to_table(const tide_dipole_fit *fit, int64_t n, int gauss, tide_table *t) {
    if (!t || n < 0 || (n > 0 && !fit))
        return tide_error(TIDE_E_INVAL, "tide_dipole_fits_to_table: bad arguments");
    if (t->nrows != 0 && t->nrows != n)
        return tide_error(TIDE_E_INVAL, "tide_dipole_fits_to_table: table has %lld rows, not %lld",
                          (long long)t->nrows, (long long)n);
    int st = 0;
    for (int k = 0; !st && k < C_NF64; k++)
        if (!tide_table_column(t, f64_names[k]))
            st = tide_table_add_column(t, f64_names[k], TIDE_COL_F64, 1, f64_units[k], NULL, NULL);
    for (int k = 0; !st && k < 4; k++)
        if (!tide_table_column(t, i32_names[k]))
            st = tide_table_add_column(t, i32_names[k], TIDE_COL_I32, 1, "", i32_comments[k], NULL);
    if (!st)
        st = tide_table_resize(t, n);
    if (st)
        return st;
    double *c[C_NF64];
    int32_t *ic[4];
    for (int k = 0; k < C_NF64; k++)
        if (!(c[k] = tide_table_f64(t, f64_names[k])))
            return tide_error(TIDE_E_INVAL, "tide_dipole_fits_to_table: column %s is not double",
                              f64_names[k]);
    for (int k = 0; k < 4; k++)
        if (!(ic[k] = tide_table_i32(t, i32_names[k])))
            return tide_error(TIDE_E_INVAL, "tide_dipole_fits_to_table: column %s is not int32",
                              i32_names[k]);
    for (int64_t i = 0; i < n; i++) {
        const tide_dipole_fit *f = &fit[i];
        const double v[C_NF64] = {f->xpos + 1,
                                  f->ypos + 1,
                                  f->xneg + 1,
                                  f->yneg + 1,
                                  f->flux,
                                  f->xpos_err,
                                  f->ypos_err,
                                  f->xneg_err,
                                  f->yneg_err,
                                  f->flux_err,
                                  gauss ? f->sigma1 : NAN,
                                  gauss ? f->sigma2 : NAN,
                                  gauss ? f->theta * 57.29577951308232 : NAN,
                                  f->chi2_dip,
                                  f->ps_x + 1,
                                  f->ps_y + 1,
                                  f->ps_flux,
                                  f->ps_x_err,
                                  f->ps_y_err,
                                  f->ps_flux_err,
                                  f->chi2_ps,
                                  f->chi2_ps - f->chi2_dip};
        for (int k = 0; k < C_NF64; k++)
            c[k][i] = v[k];
        ic[0][i] = (int32_t)f->npix;
        ic[1][i] = f->niter;
        ic[2][i] = f->status;
        ic[3][i] = f->ps_status;
    }
    return 0;
}

int tide_diff_fit_candidates(tide_ctx *ctx, const tide_image *diff, int stamp,
                             const tide_psf_model *psf, const tide_dipole_params *pin,
                             tide_table *cands) {
    const char *who = "tide_diff_fit_candidates";
    if (!ctx || !diff || !cands)
        return tide_error(TIDE_E_INVAL, "%s: NULL argument", who);
    const double *X = tide_table_f64(cands, "X"), *Y = tide_table_f64(cands, "Y");
    const int64_t n = cands->nrows;
    if (n > 0 && (!X || !Y))
        return tide_error(TIDE_E_INVAL, "%s: the candidate table needs double columns X, Y", who);
    tide_dipole_params p;
    if (pin)
        p = *pin;
    else
        tide_dipole_params_default(&p);
    const int gauss = p.model == TIDE_DIPOLE_GAUSS;
    tide_dipole_fit *fit = n > 0 ? malloc(sizeof *fit * (size_t)n) : NULL;
    if (n > 0 && !fit)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", who);
    const int64_t np = (int64_t)stamp * stamp;
    int st = 0;
    float *lpsf = NULL; /* local PSF stamps of the model, one per candidate */
    if (n > 0 && p.model == TIDE_DIPOLE_PSF && psf) {
        const int64_t ps2 = (int64_t)psf->stamp * psf->stamp;
        if (!(lpsf = malloc(sizeof(float) * (size_t)(n * ps2))))
            st = tide_error(TIDE_E_NOMEM, "%s: out of memory", who);
        for (int64_t i = 0; !st && i < n; i++)
            st = tide_psf_eval(psf, X[i], Y[i], lpsf + i * ps2);
        p.psf = lpsf;
        p.psf_side = psf->stamp;
        p.psf_per_stamp = 1;
    }
    if (st || n == 0) {
        /* nothing to fit: the columns only */
    } else if (ctx->backend != TIDE_BACKEND_CUDA) {
        float *pix = malloc(sizeof(float) * (size_t)(n * np));
        float *var = malloc(sizeof(float) * (size_t)(n * np));
        uint16_t *mask = malloc(sizeof(uint16_t) * (size_t)(n * np));
        double *cx = malloc(sizeof(double) * (size_t)n), *cy = malloc(sizeof(double) * (size_t)n);
        if (!pix || !var || !mask || !cx || !cy)
            st = tide_error(TIDE_E_NOMEM, "%s: out of memory", who);
        if (!st)
            st = tide_diff_cut_stamps(ctx, diff, n, X, Y, stamp, pix, var, mask, cx, cy);
        if (!st)
            st = tide_dipole_fit_stamps(ctx, n, stamp, pix, var, mask, cx, cy, &p, fit);
        free(pix), free(var), free(mask), free(cx), free(cy);
    } else {
        tide_image up = {0};
        const tide_image *im = diff;
        if (diff->location == TIDE_HOST) {
            st = tide_image_clone(ctx, &up, diff, TIDE_DEVICE);
            im = &up;
        }
        void *d[8] = {0};
        const size_t sz[8] = {sizeof(double) * n,        sizeof(double) * n,
                              sizeof(float) * n * np,    sizeof(float) * n * np,
                              sizeof(uint16_t) * n * np, sizeof(double) * n,
                              sizeof(double) * n,        sizeof(tide_dipole_fit) * n};
        for (int k = 0; !st && k < 8; k++)
            st = tide_device_alloc(ctx, sz[k], &d[k]);
        const int64_t psf_np = p.model == TIDE_DIPOLE_PSF ? (int64_t)p.psf_side * p.psf_side : 0;
        const int64_t psf_bytes = sizeof(float) * psf_np * (p.psf_per_stamp ? n : 1);
        void *dpsf = NULL;
        if (!st && psf_np > 0 && p.psf) {
            st = tide_device_alloc(ctx, (size_t)psf_bytes, &dpsf);
            if (!st)
                st = tide_memcpy(ctx, dpsf, 1, p.psf, 0, (size_t)psf_bytes);
            p.psf = dpsf;
        }
        if (!st)
            st = tide_memcpy(ctx, d[0], 1, X, 0, sz[0]);
        if (!st)
            st = tide_memcpy(ctx, d[1], 1, Y, 0, sz[1]);
        if (!st)
            st = tide_diff_cut_stamps(ctx, im, n, d[0], d[1], stamp, d[2], d[3], d[4], d[5], d[6]);
        if (!st)
            st = tide_dipole_fit_device(ctx, n, stamp, d[2], d[3], d[4], d[5], d[6], &p, d[7]);
        if (!st)
            st = tide_memcpy(ctx, fit, 0, d[7], 1, sz[7]);
        tide_device_free(ctx, dpsf);
        for (int k = 7; k >= 0; k--)
            tide_device_free(ctx, d[k]);
        tide_image_free(ctx, &up);
    }
    if (!st)
        st = tide_dipole_fits_to_table(fit, n, gauss, cands);
    free(lpsf);
    free(fit);
    return st;
}
