/* sim_psf.c — the PSF over the field and each point source's shape, radius and normalisation.
 *
 * The FWHM grows towards the corners (a quadratic term, like field curvature) with a small
 * linear tilt (like a tilted focal plane); the ellipticity adds a radial pattern that grows as
 * r² (like astigmatism/coma) to a constant term, combined as spin-2 vectors so the angle turns
 * smoothly. Coordinates are normalised so the frame corners sit at radius 1. */
#include <math.h>

#include "sim_internal.h"
#include "sim_psf_math.h"

#define SIM_PI 3.14159265358979323846

void sim_psf_at(const sim_epoch_geom *g, int64_t width, int64_t height, double x, double y,
                double *fwhm, double *ellip, double *theta) {
    sim_field_coords(g, &width, &height, &x, &y);
    double cx = 0.5 * (double)(width - 1), cy = 0.5 * (double)(height - 1);
    double rn = 0.5 * sqrt((double)width * width + (double)height * height);
    double xn = (x - cx) / rn, yn = (y - cy) / rn, r2 = xn * xn + yn * yn;
    *fwhm = g->fwhm * (1.0 + g->fwhm_var * (0.7 * r2 + 0.3 * (g->fwhm_gx * xn + g->fwhm_gy * yn)));
    double t0 = 2.0 * g->theta_deg * SIM_PI / 180.0, phi = 2.0 * atan2(yn, xn);
    double e1 = g->ellip * cos(t0) + g->ellip_var * r2 * cos(phi);
    double e2 = g->ellip * sin(t0) + g->ellip_var * r2 * sin(phi);
    double e = sqrt(e1 * e1 + e2 * e2);
    *ellip = e > 0.8 ? 0.8 : e;
    *theta = e > 0 ? 0.5 * atan2(e2, e1) : 0.0;
}

void sim_psf_setup(sim_src *s, double fwhm, double ellip, double theta, double beta) {
    const double alpha = sim_moffat_alpha(fwhm, beta);
    const double a = alpha / sqrt(1.0 - ellip), b = alpha * sqrt(1.0 - ellip);
    const double c = cos(theta), sn = sin(theta);
    s->fwhm = fwhm;
    s->ellip = ellip;
    s->theta = theta;
    s->beta = (float)beta;
    s->cxx = (float)(c * c / (a * a) + sn * sn / (b * b));
    s->cyy = (float)(sn * sn / (a * a) + c * c / (b * b));
    s->cxy = (float)(c * sn * (1.0 / (a * a) - 1.0 / (b * b)));
    /* Radius: keep >= 99.5 % of the light (the Moffat's enclosed fraction inside isophote q
     * is 1 - (1+q)^(1-beta)), and go out until a pixel would get < 0.2 e-. */
    double q_flux = pow(0.005, 1.0 / (1.0 - beta)) - 1.0;
    double peak_e = s->flux * (beta - 1.0) / (SIM_PI * a * b);
    double q_int = peak_e > 0.2 ? pow(peak_e / 0.2, 1.0 / beta) - 1.0 : 0.0;
    double r = a * sqrt(q_flux > q_int ? q_flux : q_int);
    if (r < 2.0)
        r = 2.0;
    if (r > 400.0)
        r = 400.0;
    s->radius = (float)r;
    s->rsub = (float)(fwhm > 1.5 ? fwhm : 1.5);
    int n = (int)ceil(15.0 / fwhm);
    s->nsub = n < 3 ? 3 : (n > 11 ? 11 : n);

    /* Normalise over exactly the pixels the renderer will draw (the whole footprint, also
     * off the frame), so the drawn pixels sum to the flux. */
    const double rs2 = (double)s->rsub * s->rsub;
    const int64_t j0 = (int64_t)ceil(s->y - s->radius), j1 = (int64_t)floor(s->y + s->radius);
    double sum = 0.0, vmax = 0.0;
    for (int64_t j = j0; j <= j1; j++) {
        int64_t i0, i1;
        if (!sim_src_span(s, j, &i0, &i1))
            continue;
        double dy = (double)j - s->y;
        for (int64_t i = i0; i <= i1; i++) {
            double dx = (double)i - s->x;
            int sub = dx * dx + dy * dy <= rs2;
            float v = sim_moffat_pixel((float)dx, (float)dy, s->cxx, s->cxy, s->cyy, s->beta,
                                       s->nsub, sub);
            sum += v;
            if (v > vmax)
                vmax = v;
        }
    }
    s->amp = sum > 0 ? (float)(s->flux / sum) : 0.0f;
    s->peak = s->amp * vmax;
}
