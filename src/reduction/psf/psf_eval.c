/* psf_eval.c — using a PSF model: evaluation at a position (centred, or on the pixel grid),
 * the polynomial terms, the header summary, the Gaussian model of the fallback, release. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "psf_internal.h"
#include "psf_math.h"
#include "tide/status.h"

int tide_psf_terms(int degree, double u, double v, double *terms) {
    int k = 0;
    for (int d = 0; d <= degree; d++) {
        /* degree d: u^d, u^(d-1) v, ..., v^d */
        for (int j = 0; j <= d; j++) {
            double t = 1.0;
            for (int a = 0; a < d - j; a++)
                t *= u;
            for (int b = 0; b < j; b++)
                t *= v;
            terms[k++] = t;
        }
    }
    return k;
}

void psf_eval_uv(const tide_psf_model *m, double u, double v, float *out) {
    const int npix = m->stamp * m->stamp;
    double t[(TIDE_PSF_MAX_DEGREE + 1) * (TIDE_PSF_MAX_DEGREE + 2) / 2];
    double c[1 + TIDE_PSF_MAX_K];
    tide_psf_terms(m->degree, u, v, t);
    for (int b = 0; b < m->nbasis; b++) {
        double s = 0.0;
        for (int q = 0; q < m->ncoef; q++)
            s += m->coef[b * m->ncoef + q] * t[q];
        c[b] = s;
    }
    /* basis by basis over contiguous pixels (vectorised); each pixel's sum still runs over
     * the bases in order from 0.0, so the values are the same as pixel by pixel */
    double acc[TIDE_PSF_MAX_STAMP * TIDE_PSF_MAX_STAMP];
    for (int p = 0; p < npix; p++)
        acc[p] = 0.0;
    for (int b = 0; b < m->nbasis; b++) {
        const float *B = m->basis + (size_t)b * npix;
        const double cb = c[b];
        for (int p = 0; p < npix; p++)
            acc[p] += cb * (double)B[p];
    }
    double sum = 0.0;
    for (int p = 0; p < npix; p++) {
        out[p] = (float)acc[p];
        sum += acc[p];
    }
    if (sum != 0.0) {
        const double inv = 1.0 / sum;
        for (int p = 0; p < npix; p++)
            out[p] = (float)((double)out[p] * inv);
    }
}

static int check_model(const tide_psf_model *m, const float *out, const char *fn) {
    if (!m || !out || !m->basis || !m->coef || m->stamp < 1 || m->stamp > TIDE_PSF_MAX_STAMP ||
        m->nbasis < 1 || m->nbasis > 1 + TIDE_PSF_MAX_K || m->degree < 0 ||
        m->degree > TIDE_PSF_MAX_DEGREE || m->ncoef != (m->degree + 1) * (m->degree + 2) / 2 ||
        m->width < 1 || m->height < 1)
        return tide_error(TIDE_E_INVAL, "%s: not a valid PSF model", fn);
    return 0;
}

static double scaled(double x, int64_t n) {
    if (n <= 1)
        return 0.0;
    const double u = (2.0 * x - (double)(n - 1)) / (double)(n - 1);
    return u < -1.0 ? -1.0 : (u > 1.0 ? 1.0 : u);
}

int tide_psf_eval(const tide_psf_model *m, double x, double y, float *stamp_out) {
    int st = check_model(m, stamp_out, "tide_psf_eval");
    if (st)
        return st;
    if (!isfinite(x) || !isfinite(y))
        return tide_error(TIDE_E_INVAL, "tide_psf_eval: position (%g, %g) is not finite", x, y);
    psf_eval_uv(m, scaled(x, m->width), scaled(y, m->height), stamp_out);
    return 0;
}

int tide_psf_eval_pixel(const tide_psf_model *m, double x, double y, float *stamp_out) {
    int st = tide_psf_eval(m, x, y, stamp_out);
    if (st)
        return st;
    const int side = m->stamp, npix = side * side;
    const double fx = x - floor(x + 0.5), fy = y - floor(y + 0.5); /* in [-0.5, 0.5) */
    float *c = malloc(sizeof(float) * (size_t)npix);
    if (!c)
        return tide_error(TIDE_E_NOMEM, "tide_psf_eval_pixel: %d pixels", npix);
    memcpy(c, stamp_out, sizeof(float) * (size_t)npix);
    /* out(i, j) = centred PSF at (i - fx, j - fy): Lanczos-3, samples off the stamp are 0 */
    const double X = -fx, Y = -fy;
    const double ix = floor(X), iy = floor(Y);
    double wx[2 * PSF_LANCZOS_A], wy[2 * PSF_LANCZOS_A];
    psf_lanczos_weights(X - ix, wx);
    psf_lanczos_weights(Y - iy, wy);
    double sum = 0.0;
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++) {
            double acc = 0.0;
            for (int b = 0; b < 2 * PSF_LANCZOS_A; b++) {
                const int py = j + (int)iy + b - (PSF_LANCZOS_A - 1);
                if (py < 0 || py >= side)
                    continue;
                double r = 0.0;
                for (int a = 0; a < 2 * PSF_LANCZOS_A; a++) {
                    const int px = i + (int)ix + a - (PSF_LANCZOS_A - 1);
                    if (px >= 0 && px < side)
                        r += wx[a] * (double)c[py * side + px];
                }
                acc += wy[b] * r;
            }
            stamp_out[j * side + i] = (float)acc;
            sum += acc;
        }
    free(c);
    if (sum != 0.0)
        for (int p = 0; p < npix; p++)
            stamp_out[p] = (float)((double)stamp_out[p] / sum);
    return 0;
}

int psf_gaussian_model(tide_psf_model *m, int side, double fwhm) {
    const int npix = side * side, h = side / 2;
    float *basis = malloc(sizeof(float) * (size_t)npix);
    double *coef = malloc(sizeof(double));
    double *g = malloc(sizeof(double) * (size_t)side);
    if (!basis || !coef || !g) {
        free(basis), free(coef), free(g);
        return tide_error(TIDE_E_NOMEM, "psf: Gaussian model");
    }
    /* pixel-integrated: the difference of the normal CDF across each pixel, per axis */
    const double sig = fwhm / (2.0 * sqrt(2.0 * log(2.0)));
    double s = 0.0;
    for (int i = 0; i < side; i++) {
        const double lo = (i - h - 0.5) / (sig * sqrt(2.0)), hi = (i - h + 0.5) / (sig * sqrt(2.0));
        g[i] = 0.5 * (erf(hi) - erf(lo));
        s += g[i];
    }
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++)
            basis[j * side + i] = (float)(g[i] * g[j] / (s * s));
    free(g);
    free(m->basis);
    free(m->coef);
    m->basis = basis;
    m->coef = coef;
    coef[0] = 1.0;
    m->stamp = side;
    m->nbasis = 1;
    m->degree = 0;
    m->ncoef = 1;
    m->fwhm = fwhm;
    m->beta = 0.0;
    m->ellipticity = 0.0;
    m->theta = 0.0;
    for (int c = 0; c < 4; c++) {
        m->fwhm_corner[c] = fwhm;
        m->ellip_corner[c] = 0.0;
    }
    m->gaussian_fallback = 1;
    m->resid_rms = 0.0;
    return 0;
}

int tide_psf_to_header(const tide_psf_model *m, tide_header *h) {
    if (!m || !h)
        return tide_error(TIDE_E_INVAL, "tide_psf_to_header: NULL argument");
    static const char *ck[4] = {"FWHMLL", "FWHMLR", "FWHMUL", "FWHMUR"};
    static const char *cc[4] = {"PSF FWHM at pixel (1,1) [pix]", "PSF FWHM at (NAXIS1,1) [pix]",
                                "PSF FWHM at (1,NAXIS2) [pix]",
                                "PSF FWHM at (NAXIS1,NAXIS2) [pix]"};
    int st = tide_header_set_str(h, "PSFMODEL", m->gaussian_fallback ? "GAUSSIAN" : "PCA",
                                 m->gaussian_fallback ? "PSF model failed: Gaussian fallback"
                                                      : "reference + eigen-PSFs, poly fields");
    if (!st && m->gaussian_fallback)
        st = tide_header_set_str(h, "PSFFBWHY", m->fallback_why[0] ? m->fallback_why : "NSTARS",
                                 "why: NSTARS too few, WINGS beta/fit, RESID");
    if (!st)
        st = tide_header_set_dbl(h, "FWHM", m->fwhm, "PSF FWHM at frame centre [pix]");
    for (int c = 0; c < 4 && !st; c++)
        st = tide_header_set_dbl(h, ck[c], m->fwhm_corner[c], cc[c]);
    if (!st)
        st = tide_header_set_dbl(h, "PSFBETA", m->beta, "Moffat beta at centre (0: Gaussian)");
    if (!st)
        st = tide_header_set_dbl(h, "PSFELLIP", m->ellipticity, "PSF ellipticity 1-b/a");
    if (!st)
        st = tide_header_set_dbl(h, "PSFTHETA", m->theta, "PSF major axis angle [deg]");
    if (!st)
        st = tide_header_set_int(h, "PSFNSTAR", m->nstars, "stars in the PSF model");
    if (!st)
        st = tide_header_set_int(h, "PSFNBAS", m->nbasis, "PSF basis: 1 + eigen-PSFs");
    if (!st)
        st = tide_header_set_int(h, "PSFDEG", m->degree, "PSF coefficient poly degree");
    if (!st)
        st = tide_header_set_int(h, "PSFSTAMP", m->stamp, "PSF stamp side [pix]");
    if (!st)
        st = tide_header_set_dbl(h, "PSFRESID", m->resid_rms, "median PSF residual RMS/peak");
    return st;
}

void tide_psf_free(tide_psf_model *m) {
    if (!m)
        return;
    free(m->basis);
    free(m->coef);
    free(m->star_x);
    free(m->star_y);
    memset(m, 0, sizeof *m);
}
