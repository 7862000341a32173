/* psf_moffat_model.c — the pixel-integrated elliptical Moffat of psf_moffat.c and its
 * gradient, pixel by pixel, and the per-row sums of the Levenberg–Marquardt normal equations.
 *
 * Model: f(x, y) = A (1 + q)^-beta, q = cxx dx^2 + 2 cxy dx dy + cyy dy^2, integrated over each
 * pixel by nsub × nsub sub-samples (the stamp holds pixel-integrated values). */
#include <math.h>
#include <stddef.h>

#include "psf_internal.h"

/* Residual and gradient of pixel (i, j) into o[PSF_MOFFAT_NPIX] (jac: with the gradient).
 * Pixels within rsub of the stamp centre are integrated with nsub × nsub sub-samples;
 * further out, where the profile is nearly linear across a pixel, the centre value stands
 * for the mean. Per sub-sample one log and one exp:
 * u = (1 + q)^-(beta+1), the profile is u (1 + q), and every derivative is a sum over the
 * sub-samples of u times a monomial in dx, dy (or of the profile times log(1 + q) for beta),
 * the parameters factored out of the sums:
 *   df/dx0 = 2 A beta (cxx Sx + cxy Sy),  df/dcxx = -A beta Sxx, ...  with S. = sum u (.). */
void psf_moffat_pixel(const float *st, int side, int i, int j, int nsub, double rsub,
                      const double *p, int jac, double *o) {
    const int h = side / 2;
    const double A = p[0], cxx = p[3], cxy = p[4], cyy = p[5], b1 = -(p[6] + 1.0);
    const int ns = (double)((i - h) * (i - h) + (j - h) * (j - h)) <= rsub * rsub ? nsub : 1;
    const double step = 1.0 / ns, off = -0.5 + 0.5 * step, norm = step * step;
    double s0 = 0.0, sl = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0, syy = 0.0;
    for (int b = 0; b < ns; b++) {
        const double dy = (double)j + off + step * b - p[2];
        const double ey = cyy * dy * dy, hy = 2.0 * cxy * dy;
        for (int a = 0; a < ns; a++) {
            const double dx = (double)i + off + step * a - p[1];
            const double x1 = 1.0 + (cxx * dx * dx + hy * dx + ey);
            const double lq = log(x1), u = exp(b1 * lq), base = u * x1;
            s0 += base;
            if (!jac)
                continue;
            sl += lq * base;
            const double ux = u * dx, uy = u * dy;
            sx += ux;
            sy += uy;
            sxx += ux * dx;
            sxy += ux * dy;
            syy += uy * dy;
        }
    }
    o[0] = (double)st[j * side + i] - A * s0 * norm;
    if (!jac)
        return;
    const double k = A * p[6] * norm; /* -df/dq = A beta u */
    double *g = o + 1;
    g[0] = s0 * norm;
    g[1] = 2.0 * k * (cxx * sx + cxy * sy);
    g[2] = 2.0 * k * (cxy * sx + cyy * sy);
    g[3] = -k * sxx;
    g[4] = -2.0 * k * sxy;
    g[5] = -k * syy;
    g[6] = -A * sl * norm;
}

/* Row j's sums into o[PSF_MOFFAT_NROW] from its pixels' residuals and gradients
 * (pix: side × PSF_MOFFAT_NPIX), added in pixel order; beta's entries only when np = 7. */
void psf_moffat_row(const double *pix, int side, int np, int jac, double *o) {
    for (int k = 0; k < PSF_MOFFAT_NROW; k++)
        o[k] = 0.0;
    double *jtr = o + 1, *jtj = o + 1 + PSF_MOFFAT_NP;
    for (int i = 0; i < side; i++) {
        const double *px = pix + (size_t)i * PSF_MOFFAT_NPIX, r = px[0], *g = px + 1;
        o[0] += r * r;
        if (!jac)
            continue;
        for (int a = 0; a < np; a++)
            jtr[a] += g[a] * r;
        for (int a = 0, t = 0; a < PSF_MOFFAT_NP; a++)
            for (int c = 0; c <= a; c++, t++)
                if (a < np)
                    jtj[t] += g[a] * g[c];
    }
}
