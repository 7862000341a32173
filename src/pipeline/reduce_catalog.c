/* reduce_catalog.c — the pipeline's catalog table: Source Extractor's column names, units and
 * conventions (FITS 1-based pixel coordinates, THETA in degrees counter-clockwise from +x),
 * then tide's own columns. The one place where the stages' 0-based coordinates become the
 * user's 1-based ones (coords.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_internal.h"
#include "tide/coords.h"
#include "tide/status.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_LN10
#define M_LN10 2.30258509299404568402
#endif

int tide_pipe_phot_alloc(tide_pipe_phot *ph, int64_t n, int naper, const double *radii) {
    memset(ph, 0, sizeof *ph);
    ph->n = n;
    ph->naper = naper;
    ph->radii = radii;
    const size_t m = (size_t)(n > 0 ? n : 1), ma = m * (size_t)(naper > 0 ? naper : 1);
    double **d1[] = {
        &ph->x,        &ph->y,           &ph->kron_radius, &ph->flux_auto, &ph->fluxerr_auto,
        &ph->flux_psf, &ph->fluxerr_psf, &ph->chi2_psf,    &ph->flux_opt,  &ph->fluxerr_opt,
        &ph->rad_opt};
    int32_t **i1[] = {&ph->aper_flags, &ph->kron_flags, &ph->psf_flags, &ph->opt_flags};
    int bad = 0;
    for (size_t k = 0; k < sizeof d1 / sizeof *d1; k++) {
        *d1[k] = malloc(m * sizeof(double));
        bad |= !*d1[k];
        for (size_t i = 0; *d1[k] && i < m; i++)
            (*d1[k])[i] = NAN;
    }
    for (size_t k = 0; k < sizeof i1 / sizeof *i1; k++) {
        *i1[k] = calloc(m, sizeof(int32_t));
        bad |= !*i1[k];
    }
    ph->flux_aper = malloc(ma * sizeof(double));
    ph->fluxerr_aper = malloc(ma * sizeof(double));
    ph->background = malloc(m * sizeof(float));
    bad |= !ph->flux_aper || !ph->fluxerr_aper || !ph->background;
    if (bad) {
        tide_pipe_phot_free(ph);
        return tide_error(TIDE_E_NOMEM, "reduce: photometry arrays for %lld sources", (long long)n);
    }
    for (size_t i = 0; i < ma; i++)
        ph->flux_aper[i] = ph->fluxerr_aper[i] = NAN;
    for (size_t i = 0; i < m; i++)
        ph->background[i] = NAN;
    return 0;
}

void tide_pipe_phot_free(tide_pipe_phot *ph) {
    void *all[] = {ph->x,          ph->y,           ph->flux_aper,   ph->fluxerr_aper,
                   ph->aper_flags, ph->kron_radius, ph->flux_auto,   ph->fluxerr_auto,
                   ph->kron_flags, ph->flux_psf,    ph->fluxerr_psf, ph->chi2_psf,
                   ph->psf_flags,  ph->flux_opt,    ph->fluxerr_opt, ph->rad_opt,
                   ph->opt_flags,  ph->background,  ph->ra,          ph->dec};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        free(all[k]);
    memset(ph, 0, sizeof *ph);
}

void tide_pipe_error_ellipse(double x2, double y2, double xy, double *a, double *b, double *theta) {
    /* Source Extractor's ERRAWIN/ERRBWIN/ERRTHETAWIN (its manual, "Position errors"): the
     * eigenvalues of the covariance matrix and the angle of the major axis. */
    const double h = 0.5 * (x2 + y2), d = sqrt(0.25 * (x2 - y2) * (x2 - y2) + xy * xy);
    const double l1 = h + d, l2 = h - d;
    *a = sqrt(l1 > 0 ? l1 : 0);
    *b = sqrt(l2 > 0 ? l2 : 0);
    double t = 0.5 * atan2(2.0 * xy, x2 - y2) * (180.0 / M_PI);
    if (t <= -90.0)
        t += 180.0;
    *theta = t;
}

/* Add a column and return its data (NULL on failure; the status is in *st). */
static void *col(tide_table *t, const char *name, tide_col_type type, int64_t repeat,
                 const char *unit, const char *comment, int *st) {
    if (*st)
        return NULL;
    int idx = -1;
    *st = tide_table_add_column(t, name, type, repeat, unit, comment, &idx);
    return *st ? NULL : t->cols[idx].data;
}

static double f1(const double *v, int64_t i) {
    return v ? v[i] : NAN;
}

int tide_pipe_catalog_build(const tide_table *det, const tide_pipe_phot *ph, tide_table *out) {
    const int64_t n = det->nrows;
    const int na = ph->naper > 0 ? ph->naper : 1;
    int st = 0;
    tide_table_init(out);
    /* Rows first, so every column is allocated at its final size. */
    st = tide_table_resize(out, n);
    if (st)
        return st;
    const double *X = tide_table_f64(det, "X"), *Y = tide_table_f64(det, "Y");
    const double *XW = tide_table_f64(det, "XWIN"), *YW = tide_table_f64(det, "YWIN");
    const double *EX = tide_table_f64(det, "ERRX_WIN"), *EY = tide_table_f64(det, "ERRY_WIN");
    const double *X2 = tide_table_f64(det, "X2"), *Y2 = tide_table_f64(det, "Y2");
    const double *XY = tide_table_f64(det, "XY"), *A = tide_table_f64(det, "A");
    const double *B = tide_table_f64(det, "B"), *TH = tide_table_f64(det, "THETA");
    const double *FW = tide_table_f64(det, "FWHM"), *PK = tide_table_f64(det, "PEAK");
    const double *SN = tide_table_f64(det, "SNR"), *FI = tide_table_f64(det, "FLUX_ISO");
    const double *FIE = tide_table_f64(det, "FLUXERR_ISO");
    const int64_t *IA = tide_table_i64(det, "ISOAREA"), *XP = tide_table_i64(det, "XPEAK");
    const int64_t *YP = tide_table_i64(det, "YPEAK"), *PA = tide_table_i64(det, "PARENT");
    const int32_t *FL = tide_table_i32(det, "FLAGS");
    if (n > 0 && (!X || !Y || !XW || !YW || !FL))
        return tide_error(TIDE_E_INTERNAL, "reduce: the detection table lacks its columns");

    int32_t *number = col(out, "NUMBER", TIDE_COL_I32, 1, "", "running object number", &st);
    double *ximg = col(out, "X_IMAGE", TIDE_COL_F64, 1, "pixel", "barycentre x (1-based)", &st);
    double *yimg = col(out, "Y_IMAGE", TIDE_COL_F64, 1, "pixel", "barycentre y (1-based)", &st);
    double *xwin =
        col(out, "XWIN_IMAGE", TIDE_COL_F64, 1, "pixel", "windowed position x (1-based)", &st);
    double *ywin =
        col(out, "YWIN_IMAGE", TIDE_COL_F64, 1, "pixel", "windowed position y (1-based)", &st);
    double *ex2 =
        col(out, "ERRX2WIN_IMAGE", TIDE_COL_F64, 1, "pixel**2", "variance of XWIN_IMAGE", &st);
    double *ey2 =
        col(out, "ERRY2WIN_IMAGE", TIDE_COL_F64, 1, "pixel**2", "variance of YWIN_IMAGE", &st);
    float *eaw = col(out, "ERRAWIN_IMAGE", TIDE_COL_F32, 1, "pixel",
                     "windowed position error ellipse, major axis", &st);
    float *ebw = col(out, "ERRBWIN_IMAGE", TIDE_COL_F32, 1, "pixel",
                     "windowed position error ellipse, minor axis", &st);
    float *etw = col(out, "ERRTHETAWIN_IMAGE", TIDE_COL_F32, 1, "deg",
                     "error ellipse angle, CCW from +x", &st);
    int32_t *xpk = col(out, "XPEAK_IMAGE", TIDE_COL_I32, 1, "pixel", "x of the S/N peak", &st);
    int32_t *ypk = col(out, "YPEAK_IMAGE", TIDE_COL_I32, 1, "pixel", "y of the S/N peak", &st);
    double *x2 = col(out, "X2_IMAGE", TIDE_COL_F64, 1, "pixel**2", "variance along x", &st);
    double *y2 = col(out, "Y2_IMAGE", TIDE_COL_F64, 1, "pixel**2", "variance along y", &st);
    double *xy = col(out, "XY_IMAGE", TIDE_COL_F64, 1, "pixel**2", "covariance x y", &st);
    float *a = col(out, "A_IMAGE", TIDE_COL_F32, 1, "pixel", "RMS along the major axis", &st);
    float *b = col(out, "B_IMAGE", TIDE_COL_F32, 1, "pixel", "RMS along the minor axis", &st);
    float *th =
        col(out, "THETA_IMAGE", TIDE_COL_F32, 1, "deg", "major-axis angle, CCW from +x", &st);
    float *elo = col(out, "ELONGATION", TIDE_COL_F32, 1, "", "A_IMAGE / B_IMAGE", &st);
    float *ell = col(out, "ELLIPTICITY", TIDE_COL_F32, 1, "", "1 - B_IMAGE / A_IMAGE", &st);
    float *fwhm = col(out, "FWHM_IMAGE", TIDE_COL_F32, 1, "pixel", "FWHM of the source", &st);
    int32_t *isoa =
        col(out, "ISOAREA_IMAGE", TIDE_COL_I32, 1, "pixel**2", "isophotal (footprint) area", &st);
    float *fiso = col(out, "FLUX_ISO", TIDE_COL_F32, 1, "count", "isophotal flux", &st);
    float *fisoe = col(out, "FLUXERR_ISO", TIDE_COL_F32, 1, "count", "error of FLUX_ISO", &st);
    float *fmax =
        col(out, "FLUX_MAX", TIDE_COL_F32, 1, "count", "peak value above background", &st);
    double *fap = col(out, "FLUX_APER", TIDE_COL_F64, na, "count",
                      "flux in circular apertures (radii APERnn)", &st);
    double *fape = col(out, "FLUXERR_APER", TIDE_COL_F64, na, "count", "error of FLUX_APER", &st);
    double *fau =
        col(out, "FLUX_AUTO", TIDE_COL_F64, 1, "count", "flux in a Kron elliptical aperture", &st);
    double *faue = col(out, "FLUXERR_AUTO", TIDE_COL_F64, 1, "count", "error of FLUX_AUTO", &st);
    float *kr = col(out, "KRON_RADIUS", TIDE_COL_F32, 1, "", "Kron radius in units of A or B", &st);
    float *mau = col(out, "MAG_AUTO", TIDE_COL_F32, 1, "mag",
                     "-2.5 log10(FLUX_AUTO); 99 if FLUX_AUTO <= 0", &st);
    float *maue = col(out, "MAGERR_AUTO", TIDE_COL_F32, 1, "mag", "error of MAG_AUTO", &st);
    double *fpsf =
        col(out, "FLUX_PSF", TIDE_COL_F64, 1, "count", "PSF-fit flux at fixed position", &st);
    double *fpsfe = col(out, "FLUXERR_PSF", TIDE_COL_F64, 1, "count", "error of FLUX_PSF", &st);
    float *bkg =
        col(out, "BACKGROUND", TIDE_COL_F32, 1, "count", "background at the centroid", &st);
    int16_t *flags =
        col(out, "FLAGS", TIDE_COL_I16, 1, "", "Source Extractor extraction flags", &st);
    double *ra = NULL, *dec = NULL;
    if (ph->ra && ph->dec) {
        ra = col(out, "ALPHA_J2000", TIDE_COL_F64, 1, "deg", "right ascension (frame WCS)", &st);
        dec = col(out, "DELTA_J2000", TIDE_COL_F64, 1, "deg", "declination (frame WCS)", &st);
    }
    double *fopt = col(out, "FLUX_OPT", TIDE_COL_F64, 1, "count",
                       "aperture flux at RAD_OPT, aperture-corrected to total", &st);
    double *fopte = col(out, "FLUXERR_OPT", TIDE_COL_F64, 1, "count", "error of FLUX_OPT", &st);
    float *ropt = col(out, "RAD_OPT", TIDE_COL_F32, 1, "pixel", "S/N-optimal aperture radius", &st);
    float *snr = col(out, "SNR", TIDE_COL_F32, 1, "", "matched-filter detection S/N", &st);
    float *chi2 = col(out, "CHI2_PSF", TIDE_COL_F32, 1, "", "reduced chi2 of the PSF fit", &st);
    int32_t *parent = col(out, "PARENT", TIDE_COL_I32, 1, "",
                          "footprint the source was deblended from (1-based)", &st);
    int32_t *ftide =
        col(out, "FLAGS_TIDE", TIDE_COL_I32, 1, "", "all detection and photometry flags", &st);
    if (st || n == 0)
        return st;

        /* Rows are independent and each is written once: split them over threads on large
         * catalogs (~150 ns a row, 42k rows on a 151 MP frame), same values in any split. */
#pragma omp parallel for schedule(static) if (n > 8192)
    for (int64_t i = 0; i < n; i++) {
        number[i] = (int32_t)(i + 1);
        ximg[i] = tide_pix_to_fits(X[i]);
        yimg[i] = tide_pix_to_fits(Y[i]);
        xwin[i] = tide_pix_to_fits(XW[i]);
        ywin[i] = tide_pix_to_fits(YW[i]);
        const double vx = f1(EX, i) * f1(EX, i), vy = f1(EY, i) * f1(EY, i);
        ex2[i] = vx;
        ey2[i] = vy;
        double ea, eb, et;
        /* The detection stage gives no x-y error covariance: the ellipse is axis-aligned. */
        tide_pipe_error_ellipse(vx, vy, 0.0, &ea, &eb, &et);
        eaw[i] = (float)ea;
        ebw[i] = (float)eb;
        etw[i] = (float)et;
        xpk[i] = XP ? (int32_t)(XP[i] + 1) : 0;
        ypk[i] = YP ? (int32_t)(YP[i] + 1) : 0;
        x2[i] = f1(X2, i);
        y2[i] = f1(Y2, i);
        xy[i] = f1(XY, i);
        a[i] = (float)f1(A, i);
        b[i] = (float)f1(B, i);
        th[i] = (float)f1(TH, i);
        elo[i] = (float)(f1(A, i) / f1(B, i));
        ell[i] = (float)(1.0 - f1(B, i) / f1(A, i));
        fwhm[i] = (float)f1(FW, i);
        isoa[i] = IA ? (int32_t)(IA[i] > INT32_MAX ? INT32_MAX : IA[i]) : 0;
        fiso[i] = (float)f1(FI, i);
        fisoe[i] = (float)f1(FIE, i);
        fmax[i] = (float)f1(PK, i);
        for (int k = 0; k < na; k++) {
            fap[i * na + k] = ph->flux_aper ? ph->flux_aper[i * na + k] : NAN;
            fape[i * na + k] = ph->fluxerr_aper ? ph->fluxerr_aper[i * na + k] : NAN;
        }
        const double F = f1(ph->flux_auto, i), FE = f1(ph->fluxerr_auto, i);
        fau[i] = F;
        faue[i] = FE;
        kr[i] = (float)f1(ph->kron_radius, i);
        /* Source Extractor writes 99 for the magnitude of a non-positive flux. */
        mau[i] = F > 0 ? (float)(-2.5 * log10(F)) : 99.0f;
        maue[i] = F > 0 ? (float)(2.5 / M_LN10 * FE / F) : 99.0f;
        fpsf[i] = f1(ph->flux_psf, i);
        fpsfe[i] = f1(ph->fluxerr_psf, i);
        bkg[i] = ph->background ? ph->background[i] : NAN;
        int32_t all = FL[i];
        all |= ph->aper_flags ? ph->aper_flags[i] : 0;
        all |= ph->kron_flags ? ph->kron_flags[i] : 0;
        all |= ph->psf_flags ? ph->psf_flags[i] : 0;
        all |= ph->opt_flags ? ph->opt_flags[i] : 0;
        /* FLAGS keeps Source Extractor's byte: detection owns bits 1..128; the photometry adds
         * 16 ("aperture data incomplete") when an aperture leaves the frame. */
        flags[i] = (int16_t)((FL[i] & 0xFF) | (all & TIDE_PHOT_TRUNCATED));
        if (ra) {
            ra[i] = ph->ra[i];
            dec[i] = ph->dec[i];
        }
        fopt[i] = f1(ph->flux_opt, i);
        fopte[i] = f1(ph->fluxerr_opt, i);
        ropt[i] = (float)f1(ph->rad_opt, i);
        snr[i] = (float)f1(SN, i);
        chi2[i] = (float)f1(ph->chi2_psf, i);
        parent[i] = PA ? (int32_t)(PA[i] + 1) : 0;
        ftide[i] = all;
    }
    return 0;
}
