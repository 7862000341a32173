/* wcsfit_poly.c — the numerical pieces of the TAN-SIP fit (wcsfit_internal.h): 2-D
 * polynomials, their weighted least squares (normal equations, Jacobi scaling, Cholesky, in
 * double), the model's pixel → sky, the inverse AP/BP fitted on a grid, and the WCS built as
 * standard FITS SIP header cards. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/status.h"
#include "wcsfit_internal.h"

#define NCOEF(o) WCSFIT_NCOEF(o)
#define CIDX(p, q) WCSFIT_CIDX(p, q)
#define INV_MAX_ORDER WCSFIT_INV_MAX

/* The monomials u^p v^q (p + q <= o) in CIDX order. */
void tide_wcsfit_monomials(int o, double u, double v, double *m) {
    double up[INV_MAX_ORDER + 1], vp[INV_MAX_ORDER + 1];
    up[0] = vp[0] = 1.0;
    for (int k = 1; k <= o; k++) {
        up[k] = up[k - 1] * u;
        vp[k] = vp[k - 1] * v;
    }
    for (int d = 0, k = 0; d <= o; d++)
        for (int q = 0; q <= d; q++)
            m[k++] = up[d - q] * vp[q];
}

double tide_wcsfit_poly(int o, const double *c, double u, double v) {
    double m[NCOEF(INV_MAX_ORDER)];
    tide_wcsfit_monomials(o, u, v, m);
    double s = 0.0;
    for (int k = 0; k < NCOEF(o); k++)
        s += c[k] * m[k];
    return s;
}

/* Solve the SPD system n·x = r (n×n, row-major, only the upper triangle read) for nrhs
 * right-hand sides (r is n×nrhs, overwritten by x), with Jacobi scaling. Returns -1 when a
 * scaled pivot falls below 1e-11: the design is (numerically) rank deficient. */
static int chol_solve(int n, double *a, double *r, int nrhs) {
    double d[NCOEF(INV_MAX_ORDER)];
    for (int i = 0; i < n; i++) {
        if (!(a[i * n + i] > 0))
            return -1;
        d[i] = 1.0 / sqrt(a[i * n + i]);
    }
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++)
            a[i * n + j] *= d[i] * d[j];
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nrhs; k++)
            r[i * nrhs + k] *= d[i];
    /* a = Lᵀ L in the upper triangle */
    for (int j = 0; j < n; j++) {
        double s = a[j * n + j];
        for (int k = 0; k < j; k++)
            s -= a[k * n + j] * a[k * n + j];
        if (!(s > 1e-11))
            return -1;
        double l = sqrt(s);
        a[j * n + j] = l;
        for (int i = j + 1; i < n; i++) {
            double t = a[j * n + i];
            for (int k = 0; k < j; k++)
                t -= a[k * n + j] * a[k * n + i];
            a[j * n + i] = t / l;
        }
    }
    for (int k = 0; k < nrhs; k++) {
        for (int i = 0; i < n; i++) { /* Lᵀ z = r */
            double s = r[i * nrhs + k];
            for (int j = 0; j < i; j++)
                s -= a[j * n + i] * r[j * nrhs + k];
            r[i * nrhs + k] = s / a[i * n + i];
        }
        for (int i = n - 1; i >= 0; i--) { /* L x = z */
            double s = r[i * nrhs + k];
            for (int j = i + 1; j < n; j++)
                s -= a[i * n + j] * r[j * nrhs + k];
            r[i * nrhs + k] = s / a[i * n + i];
        }
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nrhs; k++)
            r[i * nrhs + k] *= d[i];
    return 0;
}

/* Accumulate the normal equations of points [i0, i1) into a (nc×nc upper) and r (nc×2). */
static void normal_accumulate(int64_t i0, int64_t i1, const double *u, const double *v,
                              const double *w, const double *tx, const double *ty, int o, double *a,
                              double *r) {
    int nc = NCOEF(o);
    double m[NCOEF(INV_MAX_ORDER)];
    for (int64_t i = i0; i < i1; i++) {
        double wi = w ? w[i] : 1.0;
        tide_wcsfit_monomials(o, u[i], v[i], m);
        for (int j = 0; j < nc; j++) {
            double wm = wi * m[j];
            double *row = a + (size_t)j * nc;
            for (int k = j; k < nc; k++)
                row[k] += wm * m[k];
            r[2 * j] += wm * tx[i];
            r[2 * j + 1] += wm * ty[i];
        }
    }
}

/* Points per block of the parallel accumulation: blocks are fixed by n alone and summed in
 * order, so the result does not depend on the number of threads. */
#define FIT_BLOCK 8192

int tide_wcsfit_polyfit2(int64_t n, const double *u, const double *v, const double *w,
                         const double *tx, const double *ty, int o, double *cx, double *cy) {
    int nc = NCOEF(o);
    double a[NCOEF(INV_MAX_ORDER) * NCOEF(INV_MAX_ORDER)];
    double r[NCOEF(INV_MAX_ORDER) * 2];
    memset(a, 0, sizeof(double) * nc * nc);
    memset(r, 0, sizeof(double) * nc * 2);
    int64_t nb = (n + FIT_BLOCK - 1) / FIT_BLOCK;
    if (nb <= 1) {
        normal_accumulate(0, n, u, v, w, tx, ty, o, a, r);
    } else {
        size_t per = (size_t)nc * nc + 2 * (size_t)nc;
        double *blk = calloc((size_t)nb * per, sizeof(double));
        if (!blk)
            return -2;
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t b = 0; b < nb; b++) {
            int64_t i1 = (b + 1) * FIT_BLOCK < n ? (b + 1) * FIT_BLOCK : n;
            double *ab = blk + (size_t)b * per;
            normal_accumulate(b * FIT_BLOCK, i1, u, v, w, tx, ty, o, ab, ab + (size_t)nc * nc);
        }
        for (int64_t b = 0; b < nb; b++) {
            const double *ab = blk + (size_t)b * per;
            for (size_t k = 0; k < (size_t)nc * nc; k++)
                a[k] += ab[k];
            for (int k = 0; k < 2 * nc; k++)
                r[k] += ab[(size_t)nc * nc + k];
        }
        free(blk);
    }
    if (chol_solve(nc, a, r, 2))
        return -1;
    for (int j = 0; j < nc; j++) {
        cx[j] = r[2 * j];
        cy[j] = r[2 * j + 1];
    }
    return 0;
}

typedef tide_wcs_tansip model;

void tide_wcsfit_model_std(const model *m, double u, double v, double *xi, double *eta) {
    double U = u, V = v;
    if (m->order[0] > 0 && m->order[0] == m->order[1]) { /* one set of monomials for both */
        double mono[NCOEF(INV_MAX_ORDER)];
        int o = m->order[0];
        tide_wcsfit_monomials(o, u, v, mono);
        for (int k = CIDX(2, 0); k < NCOEF(o); k++) {
            U += m->sip[0][k] * mono[k];
            V += m->sip[1][k] * mono[k];
        }
    } else if (m->order[0] > 0) {
        U += tide_wcsfit_poly(m->order[0], m->sip[0], u, v);
        V += tide_wcsfit_poly(m->order[1], m->sip[1], u, v);
    }
    *xi = m->cd[0][0] * U + m->cd[0][1] * V;
    *eta = m->cd[1][0] * U + m->cd[1][1] * V;
}

void tide_wcsfit_model_pix2sky(const model *m, int64_t n, const double *x, const double *y,
                               double *ra, double *dec) {
    wcsfit_basis b;
    wcsfit_basis_make(m->crval[0], m->crval[1], &b);
    double c0 = m->crpix[0] - 1.0, c1 = m->crpix[1] - 1.0;
#pragma omp parallel for schedule(static) if (n > 20000)
    for (int64_t i = 0; i < n; i++) {
        double xi, eta, p[3];
        if (!(isfinite(x[i]) && isfinite(y[i]))) {
            ra[i] = dec[i] = NAN;
            continue;
        }
        tide_wcsfit_model_std(m, x[i] - c0, y[i] - c1, &xi, &eta);
        wcsfit_deproject(&b, xi, eta, p);
        wcsfit_radec(p, &ra[i], &dec[i]);
    }
}

/* Fit AP, BP (all terms of degree <= io, constant and linear included) on a grid over the
 * frame, 5 % beyond its edges: U = u + A(u, v) → u − U. Returns the largest error on a
 * second, offset grid. */
static double fit_inverse(model *m, const double c[2], int64_t width, int64_t height, int io,
                          double s) {
    enum { G = 48 };
    static const int npts = G * G;
    double U[G * G], V[G * G], du[G * G], dv[G * G];
    double mw = 0.05 * width, mh = 0.05 * height;
    for (int j = 0, k = 0; j < G; j++)
        for (int i = 0; i < G; i++, k++) {
            double u = -0.5 - mw + i * (width + 2 * mw) / (G - 1) - c[0];
            double v = -0.5 - mh + j * (height + 2 * mh) / (G - 1) - c[1];
            double A = tide_wcsfit_poly(m->order[0], m->sip[0], u, v);
            double B = tide_wcsfit_poly(m->order[1], m->sip[1], u, v);
            U[k] = (u + A) / s;
            V[k] = (v + B) / s;
            du[k] = -A;
            dv[k] = -B;
        }
    double cx[NCOEF(INV_MAX_ORDER)], cy[NCOEF(INV_MAX_ORDER)];
    if (tide_wcsfit_polyfit2(npts, U, V, NULL, du, dv, io, cx, cy))
        return INFINITY;
    memset(m->sip[2], 0, sizeof m->sip[2]);
    memset(m->sip[3], 0, sizeof m->sip[3]);
    for (int d = 0, k = 0; d <= io; d++) {
        double f = pow(s, -d);
        for (int q = 0; q <= d; q++, k++) {
            m->sip[2][k] = cx[k] * f;
            m->sip[3][k] = cy[k] * f;
        }
    }
    m->order[2] = m->order[3] = io;
    double emax = 0.0;
    for (int j = 0; j < G - 1; j++)
        for (int i = 0; i < G - 1; i++) {
            double u = -0.5 - mw + (i + 0.5) * (width + 2 * mw) / (G - 1) - c[0];
            double v = -0.5 - mh + (j + 0.5) * (height + 2 * mh) / (G - 1) - c[1];
            double Uu = u + tide_wcsfit_poly(m->order[0], m->sip[0], u, v);
            double Vv = v + tide_wcsfit_poly(m->order[1], m->sip[1], u, v);
            double ub = Uu + tide_wcsfit_poly(io, m->sip[2], Uu, Vv);
            double vb = Vv + tide_wcsfit_poly(io, m->sip[3], Uu, Vv);
            double e = hypot(ub - u, vb - v);
            if (e > emax)
                emax = e;
        }
    return emax;
}

/* Header cards of the model → tide_wcs. */
static int model_to_wcs(const model *m, const char *radesys, tide_wcs **out) {
    tide_header h;
    tide_header_init(&h);
    int sip = m->order[0] > 0, st = 0;
    st |= tide_header_set_int(&h, "WCSAXES", 2, NULL);
    st |= tide_header_set_str(&h, "CTYPE1", sip ? "RA---TAN-SIP" : "RA---TAN", NULL);
    st |= tide_header_set_str(&h, "CTYPE2", sip ? "DEC--TAN-SIP" : "DEC--TAN", NULL);
    st |= tide_header_set_str(&h, "CUNIT1", "deg", NULL);
    st |= tide_header_set_str(&h, "CUNIT2", "deg", NULL);
    st |= tide_header_set_dbl(&h, "CRPIX1", m->crpix[0], "reference pixel (1-based)");
    st |= tide_header_set_dbl(&h, "CRPIX2", m->crpix[1], NULL);
    st |= tide_header_set_dbl(&h, "CRVAL1", m->crval[0], NULL);
    st |= tide_header_set_dbl(&h, "CRVAL2", m->crval[1], NULL);
    st |= tide_header_set_dbl(&h, "CD1_1", m->cd[0][0], NULL);
    st |= tide_header_set_dbl(&h, "CD1_2", m->cd[0][1], NULL);
    st |= tide_header_set_dbl(&h, "CD2_1", m->cd[1][0], NULL);
    st |= tide_header_set_dbl(&h, "CD2_2", m->cd[1][1], NULL);
    st |= tide_header_set_str(&h, "RADESYS", radesys && radesys[0] ? radesys : "ICRS", NULL);
    if (sip) {
        static const char *names[4] = {"A", "B", "AP", "BP"};
        for (int t = 0; t < 4; t++) {
            char key[16];
            int o = m->order[t];
            snprintf(key, sizeof key, "%s_ORDER", names[t]);
            st |= tide_header_set_int(&h, key, o, NULL);
            for (int d = t < 2 ? 2 : 0; d <= o; d++)
                for (int q = 0; q <= d; q++) {
                    double c = m->sip[t][CIDX(d - q, q)];
                    if (c == 0.0)
                        continue;
                    snprintf(key, sizeof key, "%s_%d_%d", names[t], d - q, q);
                    st |= tide_header_set_dbl(&h, key, c, NULL);
                }
        }
    }
    if (st) {
        tide_header_free(&h);
        return tide_error(TIDE_E_NOMEM, "wcsfit: building the header");
    }
    st = tide_wcs_from_header(&h, "wcsfit", out);
    tide_header_free(&h);
    return st;
}

int tide_wcsfit_finish(model *m, int64_t width, int64_t height, const tide_wcsfit_params *p,
                       tide_wcs **out, tide_wcsfit_info *info) {
    int io = 0;
    double inverr = 0.0;
    double c[2] = {m->crpix[0] - 1.0, m->crpix[1] - 1.0};
    double s = 0.5 * (double)(width > height ? width : height);
    if (m->order[0] > 0) {
        double tol = p->inv_tol_px > 0 ? p->inv_tol_px : 1e-4;
        /* increasing order until the grid error is below tol; the last (highest) otherwise */
        for (io = m->order[0] + 1; io <= INV_MAX_ORDER; io++) {
            inverr = fit_inverse(m, c, width, height, io, s);
            if (inverr < tol || io == INV_MAX_ORDER)
                break;
        }
    } else {
        m->order[2] = m->order[3] = 0;
    }
    if (info) {
        info->inv_order = io;
        info->inv_maxerr_px = inverr;
    }
    return model_to_wcs(m, p->radesys, out);
}
