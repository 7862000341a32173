/* reduce_centre.c — where the photometry centres each source.
 *
 * tide's windowed centroid (XWIN, YWIN; detect.h) weights the pixels with a Gaussian of the
 * local PSF's width. On a source peaked like the PSF that is the best centre there is: it
 * weights the pixels as the PSF does, so it is far less noisy than the isophotal barycentre,
 * and a neighbour's light inside the footprint barely moves it. Apertures, Kron, PSF and
 * optimal photometry and the sky positions are centred on it.
 *
 * On a source that is not peaked like the PSF, the same window finds no core to lock onto.
 * The light across it is nearly flat (its second moment inside the window tends to sigma_w^2,
 * where a PSF-like star gives sigma_w^2 / 2), each step of the iteration follows whatever
 * slight gradient the plateau has, and the centre ends where the walk stopped after
 * winpos_niter steps. On prim/hbo.fits, a 65 px plateau, XWIN still moves 0.1 px a step
 * after 16 steps, 2.4 px from the barycentre. That point is not a property of the source,
 * and an aperture there measures an arbitrary part of it (9 % more than SE's, there). The
 * isophotal barycentre is a property of the source: the light-weighted centre of the whole
 * footprint, defined for any shape, and what Source Extractor centres FLUX_APER on.
 *
 * So a source is centred on its barycentre when both hold:
 *   - it is resolved: its FWHM (detect's FWHM column, the windowed second moment M
 *     deconvolved by the window) exceeds CENTRE_RESOLVED times the local PSF's, i.e.
 *     M > 0.8 sigma_w^2 for CENTRE_RESOLVED = 2, or M >= 0.9 sigma_w^2 could not be
 *     deconvolved at all and the column holds the footprint's far larger size;
 *   - its windowed centroid lies more than CENTRE_WANDER sigma_w from the barycentre: on a
 *     resolved source that is symmetric about its middle the two agree, and moving gains
 *     nothing; half the window's sigma is several times the barycentre's own noise on the
 *     clean sources photometry is compared on, so what is left is the walk, not noise.
 * A star keeps its windowed centre however far its barycentre is pulled (a faint star's
 * noise, a neighbour's wing, a deblended child's footprint), since its FWHM is the PSF's.
 * A source without a finite windowed centroid takes the barycentre, as before. */
#include <math.h>

#include "reduce_internal.h"
#include "tide/status.h"

/* FWHM / FWHM_psf beyond which the window sees no PSF-like core (M > 0.8 sigma_w^2). */
#define CENTRE_RESOLVED 2.0
/* |windowed centroid - barycentre| / sigma_w beyond which the windowed centroid wandered. */
#define CENTRE_WANDER 0.5
/* sqrt(8 ln 2): FWHM / sigma of a Gaussian; sigma_w = FWHM_psf / this (detect.h). */
#define CENTRE_FWHM_SIGMA 2.3548200450309493

int tide_pipe_centre_on_barycentre(double dx, double dy, double fwhm, double fwhm_psf) {
    if (!(fwhm_psf > 0.0) || !(fwhm > CENTRE_RESOLVED * fwhm_psf))
        return 0;
    const double sigw = fwhm_psf / CENTRE_FWHM_SIGMA;
    return dx * dx + dy * dy > CENTRE_WANDER * CENTRE_WANDER * sigw * sigw;
}

/* The PSF FWHM at (x, y) as detection took it for the window: bilinear between the model's
 * corners, its summary where a corner is missing (detect.c, detect_measure_math.h). */
static double psf_fwhm_at(const tide_psf_model *psf, int64_t width, int64_t height, double x,
                          double y) {
    double c[4];
    for (int k = 0; k < 4; k++)
        c[k] = psf->fwhm_corner[k] > 0.0 ? psf->fwhm_corner[k] : psf->fwhm;
    double u = width > 1 ? x / (double)(width - 1) : 0.5;
    double w = height > 1 ? y / (double)(height - 1) : 0.5;
    u = u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
    w = w < 0.0 ? 0.0 : (w > 1.0 ? 1.0 : w);
    return (1 - u) * (1 - w) * c[0] + u * (1 - w) * c[1] + (1 - u) * w * c[2] + u * w * c[3];
}

int tide_pipe_centres(const tide_table *det, const tide_psf_model *psf, int64_t width,
                      int64_t height, double *x, double *y, int64_t *nbary) {
    const int64_t n = det->nrows;
    if (nbary)
        *nbary = 0;
    if (n == 0)
        return 0;
    const double *xw = tide_table_f64(det, "XWIN"), *yw = tide_table_f64(det, "YWIN");
    const double *xb = tide_table_f64(det, "X"), *yb = tide_table_f64(det, "Y");
    const double *fw = tide_table_f64(det, "FWHM");
    if (!xw || !yw || !xb || !yb || !fw)
        return tide_error(TIDE_E_INTERNAL, "reduce: the detection table lacks X/Y/XWIN/YWIN/FWHM");
    int64_t nb = 0;
    for (int64_t i = 0; i < n; i++) {
        int win = isfinite(xw[i]) && isfinite(yw[i]);
        if (win && psf &&
            tide_pipe_centre_on_barycentre(xw[i] - xb[i], yw[i] - yb[i], fw[i],
                                           psf_fwhm_at(psf, width, height, xb[i], yb[i]))) {
            win = 0;
            nb++;
        }
        x[i] = win ? xw[i] : xb[i];
        y[i] = win ? yw[i] : yb[i];
    }
    if (nbary)
        *nbary = nb;
    return 0;
}
