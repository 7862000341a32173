/* rb.h — real/bogus scores of difference candidates (issue 18): a fixed, versioned feature
 * vector per candidate computed from its difference stamp and fit row, and a gradient-boosted
 * tree model (XGBoost's C API) trained on labelled candidates, saved as one JSON file that
 * records its version, feature names, training set and held-out AUC.
 *
 * Features (version TIDE_RB_FEATURES_VERSION; tide_rb_feature_name gives the names). s is the
 * candidate's sign (FLUX >= 0: +1, else -1), z = s·diff/sqrt(var) the signed S/N of a pixel,
 * f the PSF FWHM of the difference, r the distance to the candidate's centre; "inner" means
 * r ≤ 1.5 f:
 *    0 SNR          the candidate's detection S/N
 *    1 KIND         TIDE_CAND_* (-1 negative, 1 positive, 2 dipole)
 *    2 DCHI2_RED    (PS_CHI2 − DIP_CHI2) / DIP_NPIX: how much better a dipole fits than a
 *                   point source
 *    3 PS_RCHI2     PS_CHI2 / DIP_NPIX: the point source's reduced χ² (a PSF-like change ~1)
 *    4 DIP_RCHI2    DIP_CHI2 / DIP_NPIX
 *    5 LOBE_SEP     distance between the fitted dipole lobes / f
 *    6 LOBE_RATIO   the smaller of the sums of |z| over inner pixels with z > 2 and z < −2,
 *                   over the larger: 0 single-signed, 1 a balanced dipole
 *    7 FIT_STATUS   TIDE_DIPOLE_* of the dipole fit (-1 not fitted)
 *    8 PS_STATUS    of the point-source fit
 *    9 PS_SNR       |PS_FLUX| / PS_FLUX_ERR
 *   10 FWHM_RATIO   FWHM from the second moments of the z > 2 inner pixels / f (hot pixels
 *                   and cosmic rays are sharper than the PSF, trails broader)
 *   11 ELLIP        1 − b/a of those moments (trails, bleeds)
 *   12 NEG_FRAC     fraction of inner pixels with z < −3 (the opposite sign)
 *   13 POS_FRAC     fraction of inner pixels with z > 3
 *   14 MASK_FRAC    fraction of stamp pixels with a mask bit
 *   15 SHARPNESS    largest inner z / the sum of the inner z > 2 (1: one pixel)
 *   16 PS_OFFSET    distance from the stamp centre to the point-source fit / f
 *   17 STAR_DIST    distance to the nearest catalog star / f, at most 100; NaN without a
 *                   catalog (the model routes missing values)
 *   18 BAD_FRAC     fraction of stamp pixels without a finite value or variance (edges)
 *   19 COL_ROW      z > 3 pixels in the central column / (those in the central row + 1)
 *                   (bleed trails and bad columns run along columns)
 *
 * The model. XGBoost is loaded at run time (dlopen of libxgboost.so.0, Debian's
 * libxgboost-dev; TIDE_XGBOOST_LIB in the environment names another file), so only the
 * programs that train or score need it; without it the calls fail with TIDE_E_UNSUPPORTED
 * naming the library. Training is deterministic: fixed seed, no
 * subsampling, the exact tree method on a fixed number of threads. */
#ifndef TIDE_RB_H
#define TIDE_RB_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/image.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the feature vector; a model refuses features of another version. */
#define TIDE_RB_FEATURES_VERSION 1
/** Length of the feature vector. */
#define TIDE_RB_NFEAT 20

/** Name of feature @p i (0 ≤ i < TIDE_RB_NFEAT), else NULL. */
TIDE_API const char *tide_rb_feature_name(int i);

/** One candidate's inputs: its stamp (side × side pixels, row-major, centred on the pixel
 *  nearest the candidate's centre; pixels off the image NaN), and its fit row. */
typedef struct tide_rb_candidate {
    int side;             /**< stamp side, odd */
    int64_t stride;       /**< elements between the stamp's rows in pix, var and mask (0:
                               side): a stamp may be read in place in its image */
    const float *pix;     /**< difference pixels */
    const float *var;     /**< their variance (NULL: unknown, the stamp's robust scatter²) */
    const uint16_t *mask; /**< mask bits (NULL: none) */
    double dx, dy;        /**< centre minus the stamp's central pixel, pixels */
    double fwhm;          /**< PSF FWHM of the difference, pixels */
    double snr, flux;     /**< SNR, FLUX */
    int kind;             /**< KIND */
    double dip_chi2, ps_chi2, npix; /**< DIP_CHI2, PS_CHI2, DIP_NPIX */
    double lobe_dx, lobe_dy;        /**< DIP_XPOS − DIP_XNEG, DIP_YPOS − DIP_YNEG */
    double ps_dx, ps_dy;            /**< PS_X, PS_Y minus the stamp's central pixel */
    double ps_flux, ps_flux_err;    /**< PS_FLUX, PS_FLUX_ERR */
    int fit_status, ps_status;      /**< FIT_STATUS, PS_STATUS (-1: not fitted) */
    double star_dist;               /**< to the nearest catalog star, pixels (NaN: none) */
} tide_rb_candidate;

/** The TIDE_RB_NFEAT features of one candidate into @p out (NaN where undefined). */
TIDE_API void tide_rb_features(const tide_rb_candidate *c, float *out);

/** Features of every row of a candidate table (tide diff's columns, diff.h: X_IMAGE, Y_IMAGE
 *  FITS 1-based, SNR, FLUX, KIND, and the fit columns DIP_*, PS_*, FIT_STATUS, PS_STATUS)
 *  on its difference image @p diff (host; var and mask planes used when present), with PSF
 *  FWHM @p fwhm. @p stars: @p nstars catalog positions (x, y interleaved, FITS 1-based, on the
 *  difference's grid), or NULL. @p out: nrows × TIDE_RB_NFEAT floats, row after row.
 *  Errors: TIDE_E_INVAL (a missing column, named), TIDE_E_NOMEM. */
TIDE_API int tide_rb_table_features(const tide_image *diff, const tide_table *cands, double fwhm,
                                    const double *stars, int64_t nstars, float *out);

/** A trained model (opaque). */
typedef struct tide_rb_model tide_rb_model;

/** Training parameters; tide_rb_train_params_default gives the values in brackets. */
typedef struct tide_rb_train_params {
    int rounds;       /**< boosting rounds [100] */
    int max_depth;    /**< tree depth [5] */
    double eta;       /**< learning rate [0.1] */
    double min_child; /**< min_child_weight [1] */
    int nthread;      /**< threads of training (fixed for determinism) [2] */
    uint64_t seed;    /**< XGBoost's seed [1] */
} tide_rb_train_params;

/** Fill @p p with the defaults in brackets. */
TIDE_API void tide_rb_train_params_default(tide_rb_train_params *p);

/** Train on @p n examples: @p x n × TIDE_RB_NFEAT features (NaN missing), @p y labels (1
 *  real, 0 bogus). @p p NULL: defaults. Errors: TIDE_E_INVAL (n < 2, one class only),
 *  TIDE_E_UNSUPPORTED (no libxgboost), TIDE_E_INTERNAL (XGBoost's message). */
TIDE_API int tide_rb_train(const float *x, const float *y, int64_t n, const tide_rb_train_params *p,
                           tide_rb_model **out);

/** Scores in [0, 1] (1: real) of @p n feature rows into @p score, on @p nthread threads (0:
 *  XGBoost's default). */
TIDE_API int tide_rb_predict(tide_rb_model *m, const float *x, int64_t n, int nthread,
                             float *score);

/** Record a text attribute in the model (saved with it): e.g. "training_set", "auc". */
TIDE_API int tide_rb_model_set(tide_rb_model *m, const char *key, const char *value);

/** An attribute of the model, or NULL. The string lives as long as the model or the next
 *  call. The model always holds "tide_rb_version" and "features" (comma-separated names). */
TIDE_API const char *tide_rb_model_get(tide_rb_model *m, const char *key);

/** Gain importance of each feature into @p gain (TIDE_RB_NFEAT values, 0 for unused). */
TIDE_API int tide_rb_model_importance(tide_rb_model *m, double *gain);

/** Save as one JSON file (staged: written whole or not at all). */
TIDE_API int tide_rb_model_save(tide_rb_model *m, const char *path);

/** Load a model file; TIDE_E_FORMAT when it is not a tide real/bogus model of this feature
 *  version (the detail names the file and what differs). */
TIDE_API int tide_rb_model_load(const char *path, tide_rb_model **out);

/** Release a model. NULL is a no-op. */
TIDE_API void tide_rb_model_free(tide_rb_model *m);

/** Area under the ROC curve of @p n scores against labels (1 real, 0 bogus), ties counted
 *  half; NaN without both classes. With @p fpr and @p tpr non-NULL (n + 1 entries each) the
 *  curve's points are stored, *npts of them. */
TIDE_API double tide_rb_auc(const float *score, const float *label, int64_t n, double *fpr,
                            double *tpr, int64_t *npts);

/** Draw the ROC curve (@p npts points) as a PNG plot, axes and diagonal included. */
TIDE_API int tide_rb_plot_roc(const char *path, const double *fpr, const double *tpr, int64_t npts);

/** Draw @p n non-negative values as a horizontal bar chart PNG (one bar per feature, in the
 *  order given, scaled to the largest). */
TIDE_API int tide_rb_plot_bars(const char *path, const double *values, int n);

/** Score every row of @p cands (as tide_rb_table_features) and add or overwrite its float
 *  column RB_SCORE. */
TIDE_API int tide_rb_score_table(tide_rb_model *m, const tide_image *diff, tide_table *cands,
                                 double fwhm, const double *stars, int64_t nstars);

#ifdef __cplusplus
}
#endif
#endif
