/* wcsfit.c — weighted linear least-squares fit of a TAN-SIP WCS to pixel ↔ sky pairs
 * (wcsfit.h explains the model). ξ and η are each fitted as a full polynomial of the scaled
 * offsets (u/s, v/s), s = half the larger frame side, so the monomials stay of order one and
 * the normal equations well conditioned (wcsfit_poly.c). The constant terms say where CRVAL
 * should be; CRVAL moves there and the fit repeats until they vanish. Projections work on
 * unit vectors (no trigonometry per pair after the first conversion). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/status.h"
#include "wcsfit_internal.h"

#define NCOEF(o) WCSFIT_NCOEF(o)
#define CIDX(p, q) WCSFIT_CIDX(p, q)
#define D2R WCSFIT_D2R

typedef tide_wcs_tansip model;

void tide_wcsfit_defaults(tide_wcsfit_params *p) {
    memset(p, 0, sizeof *p);
    p->sip_order = 3;
    p->crpix[0] = p->crpix[1] = NAN;
    p->crval[0] = p->crval[1] = NAN;
    p->auto_order = 1;
    p->min_per_coef = 5;
    p->inv_tol_px = 1e-4;
}

/* The usable pairs of a fit. */
typedef struct fitdata {
    int64_t n;
    double *us, *vs; /* pixel offsets from CRPIX, scaled by 1/s */
    double *rv;      /* reference unit vectors, 3 per pair */
    double *w;
    double *xi, *eta; /* standard coordinates about the current CRVAL, deg */
    double s;         /* scale of u, v (pixels) */
} fitdata;

/* Fit the forward model at forward order `order` (0 = TAN) starting from CRVAL crval0.
 * 0, or -1 when singular / the CRVAL iteration does not settle, -3 out of memory. */
static int fit_forward(fitdata *fd, int order, const double crval0[2], double tol, model *m,
                       int *niter) {
    int o = order > 0 ? order : 1;
    double cx[NCOEF(TIDE_WCSFIT_MAX_ORDER)], cy[NCOEF(TIDE_WCSFIT_MAX_ORDER)];
    double a0 = crval0[0], d0 = crval0[1];
    double s = fd->s;
    int it, ok = 0;
    for (it = 0; it < 12; it++) {
        wcsfit_basis b;
        wcsfit_basis_make(a0, d0, &b);
        int far = 0;
#pragma omp parallel for schedule(static) reduction(| : far) if (fd->n > 20000)
        for (int64_t i = 0; i < fd->n; i++)
            far |= wcsfit_project(&b, fd->rv + 3 * i, &fd->xi[i], &fd->eta[i]) != 0;
        if (far)
            return -1; /* a pair 90° away from CRVAL: nothing sensible to fit */
        int pr = tide_wcsfit_polyfit2(fd->n, fd->us, fd->vs, fd->w, fd->xi, fd->eta, o, cx, cy);
        if (pr)
            return pr == -2 ? -3 : -1;
        /* the constant term in pixels: how far the sky position of CRPIX is from CRVAL */
        double det = cx[1] * cy[2] - cx[2] * cy[1];
        if (!(fabs(det) > 0))
            return -1;
        double c0u = (cy[2] * cx[0] - cx[2] * cy[0]) / det * s;
        double c0v = (-cy[1] * cx[0] + cx[1] * cy[0]) / det * s;
        if (!(fabs(cx[0]) + fabs(cy[0]) < 45.0))
            return -1;
        double p[3];
        wcsfit_deproject(&b, cx[0], cy[0], p);
        wcsfit_radec(p, &a0, &d0);
        if (fabs(c0u) + fabs(c0v) < tol) {
            ok = 1;
            it++;
            break;
        }
    }
    *niter = it;
    if (!ok)
        return -1;
    /* back to pixel units: coefficient of (u/s)^p (v/s)^q → of u^p v^q */
    memset(m, 0, sizeof *m);
    m->crval[0] = a0;
    m->crval[1] = d0;
    m->sin_d0 = sin(d0 * D2R);
    m->cos_d0 = cos(d0 * D2R);
    double P[NCOEF(TIDE_WCSFIT_MAX_ORDER)], Q[NCOEF(TIDE_WCSFIT_MAX_ORDER)];
    for (int d = 0, k = 0; d <= o; d++) {
        double f = pow(s, -d);
        for (int q = 0; q <= d; q++, k++) {
            P[k] = cx[k] * f;
            Q[k] = cy[k] * f;
        }
    }
    m->cd[0][0] = P[CIDX(1, 0)];
    m->cd[0][1] = P[CIDX(0, 1)];
    m->cd[1][0] = Q[CIDX(1, 0)];
    m->cd[1][1] = Q[CIDX(0, 1)];
    double det = m->cd[0][0] * m->cd[1][1] - m->cd[0][1] * m->cd[1][0];
    if (!(fabs(det) > 0))
        return -1;
    m->cdinv[0][0] = m->cd[1][1] / det;
    m->cdinv[0][1] = -m->cd[0][1] / det;
    m->cdinv[1][0] = -m->cd[1][0] / det;
    m->cdinv[1][1] = m->cd[0][0] / det;
    if (order >= 2) {
        m->order[0] = m->order[1] = order;
        for (int k = CIDX(2, 0); k < NCOEF(order); k++) {
            m->sip[0][k] = m->cdinv[0][0] * P[k] + m->cdinv[0][1] * Q[k];
            m->sip[1][k] = m->cdinv[1][0] * P[k] + m->cdinv[1][1] * Q[k];
        }
    }
    return 0;
}

/* Largest |(A, B)| and smallest Jacobian determinant of (u + A, v + B) over the frame
 * (0-based crpix c). */
static void sip_extent(const model *m, const double c[2], int64_t width, int64_t height,
                       double *maxd, double *mindet) {
    const int G = 25;
    double mx = 0.0, md = INFINITY, e = 1e-3;
    for (int j = 0; j < G; j++)
        for (int i = 0; i < G; i++) {
            double u = -0.5 + i * (double)width / (G - 1) - c[0];
            double v = -0.5 + j * (double)height / (G - 1) - c[1];
            double A = tide_wcsfit_poly(m->order[0], m->sip[0], u, v);
            double B = tide_wcsfit_poly(m->order[1], m->sip[1], u, v);
            double Au = (tide_wcsfit_poly(m->order[0], m->sip[0], u + e, v) - A) / e;
            double Av = (tide_wcsfit_poly(m->order[0], m->sip[0], u, v + e) - A) / e;
            double Bu = (tide_wcsfit_poly(m->order[1], m->sip[1], u + e, v) - B) / e;
            double Bv = (tide_wcsfit_poly(m->order[1], m->sip[1], u, v + e) - B) / e;
            double d = (1 + Au) * (1 + Bv) - Av * Bu;
            mx = fmax(mx, hypot(A, B));
            md = fmin(md, d);
        }
    *maxd = mx;
    *mindet = md;
}

static int usable(double x, double y, const double *r, double w) {
    return isfinite(x) && isfinite(y) && isfinite(r[0]) && isfinite(r[1]) && isfinite(r[2]) &&
           w > 0 && isfinite(w);
}

int tide_wcsfit_core(const double *x, const double *y, const double *r, const double *weight,
                     int64_t n, int64_t width, int64_t height, const tide_wcsfit_params *pin,
                     double crval_tol_px, model *m, tide_wcsfit_info *info, double *dx,
                     double *dy) {
    tide_wcsfit_params p = *pin;
    if (p.sip_order != 0 && (p.sip_order < 2 || p.sip_order > TIDE_WCSFIT_MAX_ORDER))
        return tide_error(TIDE_E_INVAL, "wcsfit: sip_order %d is not 0 or 2..%d", p.sip_order,
                          TIDE_WCSFIT_MAX_ORDER);
    if (p.min_per_coef < 1)
        p.min_per_coef = 1;
    double c[2]; /* 0-based CRPIX */
    c[0] = isfinite(p.crpix[0]) ? p.crpix[0] : 0.5 * (double)(width - 1);
    c[1] = isfinite(p.crpix[1]) ? p.crpix[1] : 0.5 * (double)(height - 1);

    fitdata fd;
    memset(&fd, 0, sizeof fd);
    fd.s = 0.5 * (double)(width > height ? width : height);
    size_t nn = (size_t)(n > 0 ? n : 1);
    double *buf = malloc(sizeof(double) * 8 * nn);
    if (!buf)
        return tide_error(TIDE_E_NOMEM, "wcsfit: %lld pairs", (long long)n);
    fd.us = buf;
    fd.vs = buf + nn;
    fd.w = buf + 2 * nn;
    fd.xi = buf + 3 * nn;
    fd.eta = buf + 4 * nn;
    fd.rv = buf + 5 * nn;
    double sum[3] = {0, 0, 0};
    int cells[16] = {0}; /* coverage: which cells of a 4×4 grid over the frame hold pairs */
    for (int64_t i = 0; i < n; i++) {
        double wi = weight ? weight[i] : 1.0;
        const double *ri = r + 3 * i;
        if (!usable(x[i], y[i], ri, wi))
            continue;
        int64_t k = fd.n++;
        fd.us[k] = (x[i] - c[0]) / fd.s;
        fd.vs[k] = (y[i] - c[1]) / fd.s;
        fd.w[k] = wi;
        for (int j = 0; j < 3; j++) {
            fd.rv[3 * k + j] = ri[j];
            sum[j] += ri[j];
        }
        int gx = (int)floor(4.0 * (x[i] + 0.5) / (double)width);
        int gy = (int)floor(4.0 * (y[i] + 0.5) / (double)height);
        if (gx >= 0 && gx < 4 && gy >= 0 && gy < 4)
            cells[gy * 4 + gx] = 1;
    }
    int st = 0;
    if (fd.n < 3) {
        st = tide_error(TIDE_E_NOSOLVE, "wcsfit: %lld usable pairs, 3 at least", (long long)fd.n);
        goto done;
    }
    double crval[2];
    if (isfinite(p.crval[0]) && isfinite(p.crval[1])) {
        crval[0] = p.crval[0];
        crval[1] = p.crval[1];
    } else {
        wcsfit_radec(sum, &crval[0], &crval[1]);
    }

    /* the order: lowered while the stars are too few, or cover too little of the frame (a
     * polynomial of order k extrapolated over empty corners runs away, so it asks for pairs
     * in at least min(16, ncoef(k)) of the 16 cells) */
    int ncells = 0;
    for (int k = 0; k < 16; k++)
        ncells += cells[k];
    int order = p.sip_order, lowered = 0;
    while (order > 0 && (fd.n < (int64_t)p.min_per_coef * NCOEF(order) ||
                         ncells < (NCOEF(order) < 16 ? NCOEF(order) : 16))) {
        if (!p.auto_order) {
            st = tide_error(TIDE_E_NOSOLVE,
                            "wcsfit: %lld pairs in %d of 16 cells of the frame "
                            "are too few for SIP order %d (%d per coefficient)",
                            (long long)fd.n, ncells, order, p.min_per_coef);
            goto done;
        }
        order = order == 2 ? 0 : order - 1;
        lowered = 1;
    }
    int niter = 0;
    double sipmax = 0.0;
    for (;;) {
        int rr = fit_forward(&fd, order, crval, crval_tol_px > 0 ? crval_tol_px : 1e-7, m, &niter);
        if (rr == -3) {
            st =
                tide_error(TIDE_E_NOMEM, "wcsfit: normal equations of %lld pairs", (long long)fd.n);
            goto done;
        }
        double mindet = 1.0;
        if (!rr && order > 0) {
            /* the Jacobian of (u + A, v + B) must keep its sign well over the frame */
            sip_extent(m, c, width, height, &sipmax, &mindet);
            if (!(mindet > 0.2))
                rr = -2;
        }
        if (!rr)
            break;
        if (order == 0 || !p.auto_order) {
            st = tide_error(TIDE_E_NOSOLVE,
                            order == 0
                                ? "wcsfit: the %lld pairs are collinear or degenerate"
                                : "wcsfit: the SIP fit of %lld pairs is singular or folds over",
                            (long long)fd.n);
            goto done;
        }
        order = order == 2 ? 0 : order - 1;
        lowered = 1;
    }
    m->crpix[0] = c[0] + 1.0;
    m->crpix[1] = c[1] + 1.0;

    /* residuals of every pair with finite values (also of weight 0, so callers can readmit
     * them), in parallel into per-pair arrays reusing the scratch; the sums in order */
    double *r2 = fd.us, *ra2 = fd.vs, *de2 = fd.xi;
    wcsfit_basis b;
    wcsfit_basis_make(m->crval[0], m->crval[1], &b);
#pragma omp parallel for schedule(static) if (n > 20000)
    for (int64_t i = 0; i < n; i++) {
        double wi = weight ? weight[i] : 1.0;
        const double *ri = r + 3 * i;
        int used = usable(x[i], y[i], ri, wi);
        double xi_m = 0, eta_m = 0, xi_r = 0, eta_r = 0;
        int ok = usable(x[i], y[i], ri, 1.0);
        if (ok) {
            tide_wcsfit_model_std(m, x[i] - c[0], y[i] - c[1], &xi_m, &eta_m);
            ok = !wcsfit_project(&b, ri, &xi_r, &eta_r);
        }
        if (!ok) {
            if (dx)
                dx[i] = NAN;
            if (dy)
                dy[i] = NAN;
            r2[i] = NAN;
            continue;
        }
        double ex = xi_m - xi_r, ey = eta_m - eta_r;
        double rx = -(m->cdinv[0][0] * ex + m->cdinv[0][1] * ey);
        double ry = -(m->cdinv[1][0] * ex + m->cdinv[1][1] * ey);
        if (dx)
            dx[i] = rx;
        if (dy)
            dy[i] = ry;
        if (!used) {
            r2[i] = NAN;
            continue;
        }
        r2[i] = rx * rx + ry * ry;
        /* the offset on the sky along the reference star's local east and north */
        double pm[3];
        wcsfit_deproject(&b, xi_m, eta_m, pm);
        double cd = sqrt(ri[0] * ri[0] + ri[1] * ri[1]);
        double e[3] = {0.0, 1.0, 0.0}, nn3[3] = {-1.0, 0.0, 0.0}; /* at a pole: RA 0 */
        if (cd > 1e-15) {
            e[0] = -ri[1] / cd, e[1] = ri[0] / cd;
            nn3[0] = -ri[2] * ri[0] / cd, nn3[1] = -ri[2] * ri[1] / cd, nn3[2] = cd;
        }
        double d[3] = {pm[0] - ri[0], pm[1] - ri[1], pm[2] - ri[2]};
        double dra = (d[0] * e[0] + d[1] * e[1]) / D2R * 3600.0;
        double ddec = (d[0] * nn3[0] + d[1] * nn3[1] + d[2] * nn3[2]) / D2R * 3600.0;
        ra2[i] = dra * dra;
        de2[i] = ddec * ddec;
    }
    double s2 = 0, ws2 = 0, wsum = 0, sra = 0, sdec = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(r2[i]))
            continue;
        double wi = weight ? weight[i] : 1.0;
        s2 += r2[i];
        ws2 += wi * r2[i];
        wsum += wi;
        sra += ra2[i];
        sdec += de2[i];
    }
    if (info) {
        memset(info, 0, sizeof *info);
        info->n = fd.n;
        info->sip_order_used = order;
        info->order_lowered = lowered;
        info->crval_iter = niter;
        info->rms_px = sqrt(s2 / fd.n);
        info->wrms_px = sqrt(ws2 / wsum);
        info->rms_ra_arcsec = sqrt(sra / fd.n);
        info->rms_dec_arcsec = sqrt(sdec / fd.n);
        info->scale_arcsec =
            sqrt(fabs(m->cd[0][0] * m->cd[1][1] - m->cd[0][1] * m->cd[1][0])) * 3600.0;
        info->sip_max_px = sipmax;
    }
done:
    free(buf);
    return st;
}

int tide_wcsfit_tansip(const double *x, const double *y, const double *ra, const double *dec,
                       const double *weight, int64_t n, int64_t width, int64_t height,
                       const tide_wcsfit_params *pin, tide_wcs **out, tide_wcsfit_info *info,
                       double *dx, double *dy) {
    if (out)
        *out = NULL;
    tide_wcsfit_params p;
    if (pin)
        p = *pin;
    else
        tide_wcsfit_defaults(&p);
    if (!out || n < 0 || (n > 0 && (!x || !y || !ra || !dec)) || width <= 0 || height <= 0)
        return tide_error(TIDE_E_INVAL, "wcsfit: bad arguments (n %lld, frame %lldx%lld)",
                          (long long)n, (long long)width, (long long)height);
    if (p.sip_order != 0 && (p.sip_order < 2 || p.sip_order > TIDE_WCSFIT_MAX_ORDER))
        return tide_error(TIDE_E_INVAL, "wcsfit: sip_order %d is not 0 or 2..%d", p.sip_order,
                          TIDE_WCSFIT_MAX_ORDER);
    double *r = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    if (!r)
        return tide_error(TIDE_E_NOMEM, "wcsfit: %lld pairs", (long long)n);
#pragma omp parallel for schedule(static) if (n > 20000)
    for (int64_t i = 0; i < n; i++) {
        if (isfinite(ra[i]) && isfinite(dec[i]) && fabs(dec[i]) <= 90.0)
            wcsfit_unit(ra[i], dec[i], r + 3 * i);
        else
            r[3 * i] = r[3 * i + 1] = r[3 * i + 2] = NAN;
    }
    model m;
    tide_wcsfit_info inf;
    int st = tide_wcsfit_core(x, y, r, weight, n, width, height, &p, 1e-7, &m, &inf, dx, dy);
    if (!st)
        st = tide_wcsfit_finish(&m, width, height, &p, out, &inf);
    if (!st && info)
        *info = inf;
    free(r);
    return st;
}
