/* psf_internal.h — what the PSF stage's files share. Not public API.
 *
 *   psf.c         tide_psf_build: parameters, candidates → kernels → model, fallback
 *   psf_select.c  host-side screening of the candidate list and choice of the PSF stars
 *   psf_cpu.c, psf_cuda.cu, psf_kernels.h, psf_math.h   the batched per-star kernels
 *   psf_stack.c   sigma-clipped reference stack
 *   psf_pca.c     eigen-PSFs and the polynomial coefficient fields, outlier rejection
 *   psf_linalg.c  symmetric eigensolver, Cholesky
 *   psf_lanczos.c leading principal components by Lanczos iteration
 *   psf_moffat.c  Levenberg–Marquardt Moffat fits, several side by side
 *   psf_moffat_model.c  the Moffat model and its gradient per pixel
 *   psf_eval.c    evaluation, header summary, Gaussian model, free */
#ifndef TIDE_PSF_INTERNAL_H
#define TIDE_PSF_INTERNAL_H
#include <stdint.h>

#include "tide/psf.h"

/** The PSF stars after extraction (host). */
typedef struct psf_stars {
    int n;         /**< stars */
    int side;      /**< stamp side */
    double *x, *y; /**< recentred positions, 0-based */
    double *u, *v; /**< positions scaled to [-1, 1] */
    double *snr;   /**< aperture S/N */
    double *noise; /**< per-pixel noise of the normalised stamp (noise / stamp sum) */
    float *stamps; /**< n * side * side, each summing to 1 */
} psf_stars;

/** Resolved parameters (defaults filled, derived sizes). */
typedef struct psf_plan {
    tide_psf_params p;
    int side, half;
    double isolation;
    int threads;          /**< CPU threads for the host loops (ctx->threads) */
    struct tide_ctx *ctx; /**< for the sub-stage timers (psf.model.*); may be NULL */
} psf_plan;

/* psf_select.c */
/** Screen the candidate list on the host: EDGE by position, flux range, CROWDED (another
 *  candidate within the isolation radius brighter than flux / iso_flux_ratio). Writes the
 *  surviving indices, brightest first (input order when flux is NULL), at most @p cap of
 *  them, into idx; returns their count. Counts rejections into m->nreject. */
int64_t psf_select_candidates(const psf_plan *pl, int64_t width, int64_t height, int64_t n,
                              const double *x, const double *y, const double *flux, int64_t cap,
                              int64_t *idx, tide_psf_model *m);
/** Choose the PSF stars among measured candidates: flags 0 and S/N in range, highest S/N
 *  first (ties: lower index), at most max_stars; returns the count written to pick. */
int psf_choose_stars(const psf_plan *pl, int64_t n, const double *meas, const int32_t *flags,
                     int *pick, tide_psf_model *m);

/* psf_stack.c */
/** The k-th smallest (0-based) of a[0..n), 0 <= k < n, the values finite; a is reordered,
 *  with a[0..k) <= a[k] on return. */
double psf_select_kth(double *a, int n, int k);
/** Per-pixel iteratively sigma-clipped mean of the stamps listed in @p which (m of them),
 *  normalised to sum 1, into @p out (npix floats). */
int psf_stack_clip(const float *stamps, int npix, const int *which, int m, double ksig, int iters,
                   int threads, float *out);

/* psf_pca.c */
/** Fit the model (reference, eigen-PSFs, coefficient polynomials) to the stars, dropping
 *  outliers once; fills m->basis, m->coef, nbasis, degree, ncoef, nstars, nref, resid_rms,
 *  star_x/star_y. */
int psf_model_fit(const psf_plan *pl, psf_stars *s, int64_t width, int64_t height,
                  tide_psf_model *m);

/* psf_linalg.c */
/** Eigen-decomposition of the symmetric n×n @p a (row-major, destroyed): eigenvalues in
 *  descending order, eigenvector i in column i of @p evecs (n×n row-major). */
int psf_eigen_sym(int n, double *a, double *evals, double *evecs);
/** Implicit QL iterations (Wilkinson shifts) on the symmetric tridiagonal with diagonal @p d
 *  and sub-diagonal @p e (e[n-1] unused, both destroyed; the eigenvalues, unsorted, end in
 *  d), each plane rotation applied to the columns of @p z (rows × n: the whole eigenvector
 *  matrix, or only its last row for Ritz residuals). Returns -1 when an eigenvalue takes more
 *  than 64 iterations, else 0. */
int psf_tridiagonal_ql(int n, int rows, double *d, double *e, double *z);
/** Solve a x = b for symmetric positive definite a (n×n, destroyed); x replaces b.
 *  Returns -1 when a is not positive definite. */
int psf_cholesky_solve(int n, double *a, double *b);

/* psf_lanczos.c */
/** The k leading eigenpairs of D^T D (D: n stars × p pixels, row-major; equivalently the
 *  principal components of the rows, uncentred): eigenvalues in descending order into
 *  evals, unit pixel-space eigenvectors into evecs (k × p); zero where the rank runs out.
 *  Lanczos with full reorthogonalisation from a fixed start vector: deterministic.
 *  k <= TIDE_PSF_MAX_K (else TIDE_E_INVAL). */
int psf_pca_top(int n, int p, const double *D, int k, int threads, double *evals, double *evecs);

/* psf_moffat.c */
/** An elliptical Moffat fitted to a stamp. */
typedef struct psf_moffat {
    double amp, x0, y0;   /**< amplitude, centre (stamp pixels) */
    double cxx, cxy, cyy; /**< q = cxx dx² + 2 cxy dx dy + cyy dy² */
    double beta;
    double fwhm, ellip, theta_deg;
    double rms; /**< RMS residual / peak */
    int ok;
} psf_moffat;
/** Fit pixel-integrated elliptical Moffats to @p n side×side stamps side by side: for each,
 *  the same fit as psf_moffat_fit (bit for bit, @p start[i] or NULL for each), but every
 *  round of model evaluations of all the fits still running is one parallel region, so a
 *  team of many threads has the work of several fits at once. */
int psf_moffat_fit_many(int n, const float *const *stamps, int side, double fwhm_guess,
                        double beta_fixed, const psf_moffat *const *start, int threads,
                        psf_moffat *out);
/** Fit a pixel-integrated elliptical Moffat to a side×side stamp (Levenberg–Marquardt);
 *  beta_fixed > 1 holds beta at that value, else beta is free. @p start: a fit of a
 *  similar stamp whose centre and axes start the iteration (amplitude from the stamp's
 *  peak, beta from beta_fixed or 3), or NULL: a round profile of fwhm_guess at the stamp
 *  centre. @p threads > 1: each evaluation of the model is computed by a team of that many
 *  (the result is the same for any count). out->ok = 0 when the fit failed or @p side exceeds
 *  TIDE_PSF_MAX_STAMP. */
int psf_moffat_fit(const float *stamp, int side, double fwhm_guess, double beta_fixed,
                   const psf_moffat *start, int threads, psf_moffat *out);

/* psf_moffat_model.c */
#define PSF_MOFFAT_NP 7 /**< parameters: A, x0, y0, cxx, cxy, cyy, beta */
/** Values per pixel: the residual and the model's gradient (one 64-byte line). */
#define PSF_MOFFAT_NPIX (1 + PSF_MOFFAT_NP)
/** Values per row: chi2, J^T r and the lower triangle of J^T J. */
#define PSF_MOFFAT_NROW (1 + PSF_MOFFAT_NP + PSF_MOFFAT_NP * (PSF_MOFFAT_NP + 1) / 2)
/** Residual stamp - model of pixel (i, j) of the side×side @p st and (jac) the model's
 *  gradient in the parameters @p p into o[PSF_MOFFAT_NPIX]: nsub × nsub sub-samples within
 *  rsub of the stamp centre, the pixel centre beyond. */
void psf_moffat_pixel(const float *st, int side, int i, int j, int nsub, double rsub,
                      const double *p, int jac, double *o);
/** A row's sums into o[PSF_MOFFAT_NROW] from its pixels' values (pix: side ×
 *  PSF_MOFFAT_NPIX), added in pixel order; np = 7, or 6 with beta held. */
void psf_moffat_row(const double *pix, int side, int np, int jac, double *o);

/* psf_eval.c */
/** Make @p m the circular Gaussian model of @p fwhm on a side×side stamp. */
int psf_gaussian_model(tide_psf_model *m, int side, double fwhm);
/** Evaluate the model at scaled position (u, v) (no clamping), normalised to sum 1;
 *  m->stamp <= TIDE_PSF_MAX_STAMP. */
void psf_eval_uv(const tide_psf_model *m, double u, double v, float *out);

#endif
