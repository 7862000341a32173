/* sim_wcs.c — the simulator's truth WCS: gnomonic (TAN) projection, CD matrix with rotation,
 * SIP distortion (Shupe et al. 2005, ADASS XIV 491) and its fitted inverse AP/BP.
 *
 * The mapping is written out here rather than taken from wcslib so the truth does not depend
 * on the library under test; the peer test checks it against astropy/wcslib. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_internal.h"
#include "tide/status.h"

#define D2R (3.14159265358979323846 / 180.0)

/* Σ c[p][q] u^p v^q over 0 <= p+q <= order. */
static double poly(const double c[SIM_SIP_MAX][SIM_SIP_MAX], int order, double u, double v) {
    double s = 0.0, up = 1.0;
    for (int p = 0; p <= order; p++) {
        double vq = 1.0;
        for (int q = 0; q + p <= order; q++) {
            s += c[p][q] * up * vq;
            vq *= v;
        }
        up *= u;
    }
    return s;
}

/* ∂/∂u and ∂/∂v of poly. */
static void poly_grad(const double c[SIM_SIP_MAX][SIM_SIP_MAX], int order, double u, double v,
                      double *du, double *dv) {
    double gu = 0.0, gv = 0.0;
    for (int p = 0; p <= order; p++)
        for (int q = 0; q + p <= order; q++) {
            if (c[p][q] == 0.0)
                continue;
            if (p > 0)
                gu += c[p][q] * p * pow(u, p - 1) * pow(v, q);
            if (q > 0)
                gv += c[p][q] * q * pow(u, p) * pow(v, q - 1);
        }
    *du = gu;
    *dv = gv;
}

void sim_wcs_init(sim_wcs *w, int64_t width, int64_t height, double ra, double dec, double rot_deg,
                  double scale_deg, int order, const double a[SIM_SIP_MAX][SIM_SIP_MAX],
                  const double b[SIM_SIP_MAX][SIM_SIP_MAX]) {
    memset(w, 0, sizeof *w);
    w->crpix1 = 0.5 * (double)(width + 1);
    w->crpix2 = 0.5 * (double)(height + 1);
    w->crval1 = fmod(fmod(ra, 360.0) + 360.0, 360.0);
    w->crval2 = dec;
    w->scale_deg = scale_deg;
    /* East to the left (RA decreases with x), north up, then rotated by the position angle. */
    double c = cos(rot_deg * D2R), s = sin(rot_deg * D2R);
    w->cd[0][0] = -scale_deg * c;
    w->cd[0][1] = scale_deg * s;
    w->cd[1][0] = scale_deg * s;
    w->cd[1][1] = scale_deg * c;
    double det = w->cd[0][0] * w->cd[1][1] - w->cd[0][1] * w->cd[1][0];
    w->cdi[0][0] = w->cd[1][1] / det;
    w->cdi[0][1] = -w->cd[0][1] / det;
    w->cdi[1][0] = -w->cd[1][0] / det;
    w->cdi[1][1] = w->cd[0][0] / det;
    w->order = order;
    if (order > 0) {
        memcpy(w->a, a, sizeof w->a);
        memcpy(w->b, b, sizeof w->b);
    }
}

void sim_wcs_draw_sip(uint64_t seed, int order, double amp, int64_t width, int64_t height,
                      double a[SIM_SIP_MAX][SIM_SIP_MAX], double b[SIM_SIP_MAX][SIM_SIP_MAX]) {
    memset(a, 0, sizeof(double) * SIM_SIP_MAX * SIM_SIP_MAX);
    memset(b, 0, sizeof(double) * SIM_SIP_MAX * SIM_SIP_MAX);
    if (order < 2)
        return;
    sim_rng r = sim_rng_make(seed, SIM_STREAM_WCS, 0);
    double rc = 0.5 * sqrt((double)width * width + (double)height * height); /* half-diagonal */
    /* Quadratic terms (tilt, decentring): random, a fifth of the budget at order 3. */
    double a2 = (order == 2 ? 1.0 : 0.2) * amp / (rc * rc);
    a[2][0] = a2 * sim_rng_range(&r, -1, 1);
    a[1][1] = a2 * sim_rng_range(&r, -1, 1);
    a[0][2] = a2 * sim_rng_range(&r, -1, 1);
    b[2][0] = a2 * sim_rng_range(&r, -1, 1);
    b[1][1] = a2 * sim_rng_range(&r, -1, 1);
    b[0][2] = a2 * sim_rng_range(&r, -1, 1);
    if (order >= 3) {
        /* Radial (barrel) distortion k·r²·(u, v), |k|·rc³ = 0.8·amp, plus a little of the
         * other cubic terms. */
        double k = -0.8 * amp / (rc * rc * rc), k3 = 0.1 * amp / (rc * rc * rc);
        a[3][0] = k + k3 * sim_rng_range(&r, -1, 1);
        a[1][2] = k + k3 * sim_rng_range(&r, -1, 1);
        a[2][1] = k3 * sim_rng_range(&r, -1, 1);
        a[0][3] = k3 * sim_rng_range(&r, -1, 1);
        b[2][1] = k + k3 * sim_rng_range(&r, -1, 1);
        b[0][3] = k + k3 * sim_rng_range(&r, -1, 1);
        b[3][0] = k3 * sim_rng_range(&r, -1, 1);
        b[1][2] = k3 * sim_rng_range(&r, -1, 1);
    }
}

/* Intermediate world coordinates (degrees) → sky, TAN with LONPOLE 180 (Calabretta &
 * Greisen 2002, eqs. 54 and 2). */
static void tan_deproject(const sim_wcs *w, double xi_deg, double eta_deg, double *ra,
                          double *dec) {
    double xi = xi_deg * D2R, eta = eta_deg * D2R;
    double d0 = w->crval2 * D2R;
    double den = cos(d0) - eta * sin(d0);
    double a = atan2(xi, den) / D2R + w->crval1;
    *dec = atan2(sin(d0) + eta * cos(d0), sqrt(xi * xi + den * den)) / D2R;
    a = fmod(a, 360.0);
    if (a < 0)
        a += 360.0;
    *ra = a;
}

static int tan_project(const sim_wcs *w, double ra, double dec, double *xi_deg, double *eta_deg) {
    double d0 = w->crval2 * D2R, d = dec * D2R, da = (ra - w->crval1) * D2R;
    double den = sin(d) * sin(d0) + cos(d) * cos(d0) * cos(da);
    if (den <= 1e-12)
        return -1;
    *xi_deg = cos(d) * sin(da) / den / D2R;
    *eta_deg = (sin(d) * cos(d0) - cos(d) * sin(d0) * cos(da)) / den / D2R;
    return 0;
}

void sim_wcs_pix2sky(const sim_wcs *w, double x, double y, double *ra, double *dec) {
    double u = x + 1.0 - w->crpix1, v = y + 1.0 - w->crpix2;
    double U = u, V = v;
    if (w->order > 0) {
        U += poly(w->a, w->order, u, v);
        V += poly(w->b, w->order, u, v);
    }
    double xi = w->cd[0][0] * U + w->cd[0][1] * V;
    double eta = w->cd[1][0] * U + w->cd[1][1] * V;
    tan_deproject(w, xi, eta, ra, dec);
}

int sim_wcs_sky2pix(const sim_wcs *w, double ra, double dec, double *x, double *y) {
    double xi, eta;
    if (tan_project(w, ra, dec, &xi, &eta))
        return -1;
    double U = w->cdi[0][0] * xi + w->cdi[0][1] * eta;
    double V = w->cdi[1][0] * xi + w->cdi[1][1] * eta;
    double u = U, v = V;
    /* Newton on (u + f(u,v), v + g(u,v)) = (U, V); distortions are small, so it converges
     * in a few steps. */
    for (int it = 0; it < 50 && w->order > 0; it++) {
        double fu, fv, gu, gv;
        double ru = u + poly(w->a, w->order, u, v) - U;
        double rv = v + poly(w->b, w->order, u, v) - V;
        poly_grad(w->a, w->order, u, v, &fu, &fv);
        poly_grad(w->b, w->order, u, v, &gu, &gv);
        double j00 = 1 + fu, j01 = fv, j10 = gu, j11 = 1 + gv;
        double det = j00 * j11 - j01 * j10;
        double du = (ru * j11 - rv * j01) / det, dv = (rv * j00 - ru * j10) / det;
        u -= du;
        v -= dv;
        if (fabs(du) + fabs(dv) < 1e-12)
            break;
    }
    *x = u + w->crpix1 - 1.0;
    *y = v + w->crpix2 - 1.0;
    return 0;
}

/* Solve the n×n symmetric system m·x = r by Gaussian elimination with partial pivoting. */
static int solve(int n, double *m, double *r) {
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(m[i * n + c]) > fabs(m[piv * n + c]))
                piv = i;
        if (fabs(m[piv * n + c]) < 1e-300)
            return -1;
        if (piv != c) {
            for (int j = 0; j < n; j++) {
                double t = m[c * n + j];
                m[c * n + j] = m[piv * n + j];
                m[piv * n + j] = t;
            }
            double t = r[c];
            r[c] = r[piv];
            r[piv] = t;
        }
        for (int i = c + 1; i < n; i++) {
            double f = m[i * n + c] / m[c * n + c];
            for (int j = c; j < n; j++)
                m[i * n + j] -= f * m[c * n + j];
            r[i] -= f * r[c];
        }
    }
    for (int c = n - 1; c >= 0; c--) {
        double s = r[c];
        for (int j = c + 1; j < n; j++)
            s -= m[c * n + j] * r[j];
        r[c] = s / m[c * n + c];
    }
    return 0;
}

int sim_wcs_fit_inverse(sim_wcs *w, int64_t width, int64_t height) {
    w->ap_order = 0;
    w->inv_rms = 0;
    if (w->order == 0)
        return 0;
    const int ord = w->order + 1 < SIM_SIP_MAX - 1 ? w->order + 1 : SIM_SIP_MAX - 1;
    int np[32], nq[32], nt = 0;
    for (int p = 0; p <= ord; p++)
        for (int q = 0; q + p <= ord; q++) {
            np[nt] = p;
            nq[nt] = q;
            nt++;
        }
    /* Fit in scaled coordinates (U/s, V/s) for conditioning, on a grid a little wider than
     * the frame. */
    const double s = 0.5 * sqrt((double)width * width + (double)height * height);
    double m[32 * 32] = {0}, ru[32] = {0}, rv[32] = {0}, t[32];
    const int ng = 41;
    for (int iy = 0; iy < ng; iy++)
        for (int ix = 0; ix < ng; ix++) {
            double x = -0.5 - 0.02 * width + (1.04 * width) * ix / (ng - 1);
            double y = -0.5 - 0.02 * height + (1.04 * height) * iy / (ng - 1);
            double u = x + 1 - w->crpix1, v = y + 1 - w->crpix2;
            double U = u + poly(w->a, w->order, u, v), V = v + poly(w->b, w->order, u, v);
            for (int k = 0; k < nt; k++)
                t[k] = pow(U / s, np[k]) * pow(V / s, nq[k]);
            for (int i = 0; i < nt; i++) {
                for (int j = 0; j < nt; j++)
                    m[i * nt + j] += t[i] * t[j];
                ru[i] += t[i] * (u - U);
                rv[i] += t[i] * (v - V);
            }
        }
    double m2[32 * 32];
    memcpy(m2, m, sizeof m2);
    if (solve(nt, m, ru) || solve(nt, m2, rv))
        return tide_error(TIDE_E_INTERNAL, "sim: the inverse SIP fit is singular");
    memset(w->ap, 0, sizeof w->ap);
    memset(w->bp, 0, sizeof w->bp);
    for (int k = 0; k < nt; k++) {
        double sc = pow(s, np[k] + nq[k]);
        w->ap[np[k]][nq[k]] = ru[k] / sc;
        w->bp[np[k]][nq[k]] = rv[k] / sc;
    }
    w->ap_order = ord;
    /* Residual of the inverse over the frame. */
    double ss = 0;
    int n = 0;
    for (int iy = 0; iy < 21; iy++)
        for (int ix = 0; ix < 21; ix++) {
            double x = (width - 1.0) * ix / 20, y = (height - 1.0) * iy / 20;
            double u = x + 1 - w->crpix1, v = y + 1 - w->crpix2;
            double U = u + poly(w->a, w->order, u, v), V = v + poly(w->b, w->order, u, v);
            double du = U + poly(w->ap, ord, U, V) - u, dv = V + poly(w->bp, ord, U, V) - v;
            ss += du * du + dv * dv;
            n++;
        }
    w->inv_rms = sqrt(ss / n);
    return 0;
}

static int put_poly(tide_header *h, const char *pfx, const double c[SIM_SIP_MAX][SIM_SIP_MAX],
                    int order, int minpow) {
    char key[40];
    int st = 0;
    snprintf(key, sizeof key, "%s_ORDER", pfx);
    st = tide_header_set_int(h, key, order, "polynomial order, SIP convention");
    for (int p = 0; p <= order && !st; p++)
        for (int q = 0; q + p <= order && !st; q++) {
            if (p + q < minpow || c[p][q] == 0.0)
                continue;
            snprintf(key, sizeof key, "%s_%u_%u", pfx, (unsigned)p % 10u, (unsigned)q % 10u);
            st = tide_header_set_dbl(h, key, c[p][q], NULL);
        }
    return st;
}

int sim_wcs_to_header(const sim_wcs *w, tide_header *h) {
    int sip = w->order > 0, st = 0;
    st |= tide_header_set_int(h, "WCSAXES", 2, "number of WCS axes");
    st |=
        tide_header_set_str(h, "CTYPE1", sip ? "RA---TAN-SIP" : "RA---TAN", "gnomonic projection");
    st |=
        tide_header_set_str(h, "CTYPE2", sip ? "DEC--TAN-SIP" : "DEC--TAN", "gnomonic projection");
    st |= tide_header_set_str(h, "CUNIT1", "deg", NULL);
    st |= tide_header_set_str(h, "CUNIT2", "deg", NULL);
    st |= tide_header_set_dbl(h, "CRPIX1", w->crpix1, "reference pixel (1-based)");
    st |= tide_header_set_dbl(h, "CRPIX2", w->crpix2, "reference pixel (1-based)");
    st |= tide_header_set_dbl(h, "CRVAL1", w->crval1, "RA at the reference pixel, deg");
    st |= tide_header_set_dbl(h, "CRVAL2", w->crval2, "Dec at the reference pixel, deg");
    st |= tide_header_set_dbl(h, "CD1_1", w->cd[0][0], "deg/pixel");
    st |= tide_header_set_dbl(h, "CD1_2", w->cd[0][1], "deg/pixel");
    st |= tide_header_set_dbl(h, "CD2_1", w->cd[1][0], "deg/pixel");
    st |= tide_header_set_dbl(h, "CD2_2", w->cd[1][1], "deg/pixel");
    st |= tide_header_set_str(h, "RADESYS", "ICRS", NULL);
    st |= tide_header_set_dbl(h, "EQUINOX", 2000.0, NULL);
    if (st)
        return st;
    if (sip) {
        if ((st = put_poly(h, "A", w->a, w->order, 2)) ||
            (st = put_poly(h, "B", w->b, w->order, 2)))
            return st;
        if (w->ap_order > 0) {
            if ((st = put_poly(h, "AP", w->ap, w->ap_order, 0)) ||
                (st = put_poly(h, "BP", w->bp, w->ap_order, 0)))
                return st;
            st = tide_header_set_dbl(h, "SIPINVRS", w->inv_rms,
                                     "rms of the AP/BP inverse over the frame, px");
        }
    }
    return st;
}
