/* diff_internal.h — the pieces of the difference pipeline (diff.h) shared by its files:
 * one frame's preparation, overlap check, candidate fits and pictures. */
#ifndef TIDE_DIFF_INTERNAL_H
#define TIDE_DIFF_INTERNAL_H
#include <stdint.h>

#include "tide/config.h"
#include "tide/cosmetics.h"
#include "tide/diff.h"
#include "tide/fits.h"
#include "tide/store.h"
#include "tide/wcs.h"

/** One input frame on its own grid, ready for reprojection or subtraction. */
typedef struct tide_diffp_frame {
    const char *name;      /**< for messages */
    tide_wcs *wcs;         /**< its celestial WCS */
    tide_image work;       /**< background-subtracted pixels, mask, variance (where the context
                                computes) */
    double fwhm;           /**< FWHM in its own pixels */
    double fwhm_out;       /**< FWHM in output-grid pixels */
    double scale;          /**< pixel scale at its centre, arcsec */
    double gain, saturate; /**< used values (gain <= 0: none; NaN: no saturation level) */
    double sky, sky_rms;   /**< global background and RMS */
    int64_t nfwhm;         /**< sources behind the FWHM (0: the guess was used) */
    int64_t ncosmic;       /**< pixels the cosmetics stage flagged as cosmic rays */
    int64_t nstar;         /**< clean sources of S/N >= 20 (PSF candidates) */
    double *star_x, *star_y, *star_f; /**< their positions (0-based, this frame's own grid
                                          until moved to the output grid) and fluxes */
    int sub_sky_known; /**< 1: sub_sky, sub_var are tide_subtract_sky_noise of work with
                            mask bits sub_sky_bits */
    double sub_sky, sub_var;
    uint16_t sub_sky_bits;
} tide_diffp_frame;

/** A template prepared once (diff.h, tide_diff_template_prepare): its frame on its own
 *  grid, which is the output grid of every run against it, and what the runs' outputs take
 *  from it. */
struct tide_diff_template {
    tide_diffp_frame f; /**< prepared frame (f.name points to name) */
    tide_header header; /**< the template's header: the outputs' cards */
    int64_t width, height;
    int fwhm_given; /**< 1: its FWHM was given, not measured */
    char name[256];
};

/** Prepare @p im (diff.h stages 2-3) into @p f with its WCS: @p wcs, already built from
 *  @p hdr (taken over: f owns it from the start, whatever the outcome), or NULL to build it
 *  here. @p gain, @p sat: parameters (<= 0 / NaN: the header's through the built-in
 *  instrument configuration); @p fwhm_given > 0 skips the measurement. @p cos non-NULL: the
 *  cosmetics stage first (gain, read noise, saturation as resolved). @p sky non-NULL: also the
 * subtraction's sky noise of the prepared frame with sky->mask_bits (f->sub_sky_known), for a frame
 * that will not be resampled before the subtraction: it is then measured here, beside the other
 * frame's work, instead of on the subtraction's path. */
int tide_diffp_prepare_frame(tide_ctx *ctx, const tide_image *im, const tide_header *hdr,
                             tide_wcs *wcs, const char *name, double gain, double sat,
                             double fwhm_given, double fwhm_guess, const tide_bkg_params *bkg,
                             const tide_cosmetics_params *cos, const tide_subtract_params *sky,
                             tide_diffp_frame *f);

/** One input frame of tide_diffp_prepare_pair and its parameters (as
 *  tide_diffp_prepare_frame's; wcs is taken over). */
typedef struct tide_diffp_input {
    const tide_image *im;
    const tide_header *hdr;
    tide_wcs *wcs;
    const char *name;
    double gain, sat, fwhm_given;
    const tide_subtract_params *sky; /**< as tide_diffp_prepare_frame's @p sky, or NULL */
    const tide_config *cfg; /**< instrument configuration of the frame's gain, read noise and
                                 saturation (instrument.h); NULL: the built-in one */
} tide_diffp_input;

/** tide_diffp_prepare_frame of @p in: the frame's gain, read noise and saturation come from
 *  in->gain / in->sat when set (> 0 / finite), else through the instrument layer with
 *  in->cfg, as tide reduce resolves them (an unknown gain is 0: no Poisson term). */
int tide_diffp_prepare_input(tide_ctx *ctx, const tide_diffp_input *in, double fwhm_guess,
                             const tide_bkg_params *bkg, const tide_cosmetics_params *cos,
                             tide_diffp_frame *f);

/** tide_diffp_prepare_frame of one frame, timed as stage "diff.prepare" and finished on the
 *  GPU before it returns. */
int tide_diffp_prepare_single(tide_ctx *ctx, const tide_diffp_input *in, double fwhm_guess,
                              const tide_bkg_params *bkg, const tide_cosmetics_params *cos,
                              tide_diffp_frame *out);

/** tide_diffp_prepare_frame of both frames, each timed as stage "diff.prepare". On a CUDA
 *  context the second frame is prepared on the context's helper (ctx.h) in a second thread,
 *  beside the first: the frames are independent, and each leaves the GPU idle while its
 *  host work runs. Its device memory is then handed to @p ctx and its timers merged, so the
 *  result is as if both ran on @p ctx. *helper_peak gets the helper's peak device bytes (0
 *  when it was not used). */
int tide_diffp_prepare_pair(tide_ctx *ctx, const tide_diffp_input in[2], double fwhm_guess,
                            const tide_bkg_params *bkg, const tide_cosmetics_params *cos,
                            tide_diffp_frame *out[2], size_t *helper_peak);

/** Release a frame. */
void tide_diffp_frame_free(tide_ctx *ctx, tide_diffp_frame *f);

/** 0 when the footprint of a @p w1 × @p h1 frame with WCS @p a overlaps the @p w2 × @p h2
 *  grid of @p b; TIDE_E_RANGE naming both otherwise. */
int tide_diffp_check_overlap(const tide_wcs *a, int64_t w1, int64_t h1, const char *na,
                             const tide_wcs *b, int64_t w2, int64_t h2, const char *nb);

/** Stage 7: cut stamps of the first n = min(rows, p->max_fit) candidates of @p cands from
 *  @p diff, fit them (TIDE_DIPOLE_PSF without a PSF: a Gaussian of @p fwhm, pixels), and
 *  build @p out (the candidate columns of diff.h) from @p cands and the fits; keep the
 *  first p->keep_stamps stamps and models in @p r. */
int tide_diffp_fit(tide_ctx *ctx, const tide_image *diff, const tide_table *cands,
                   const tide_wcs *wcs, const tide_diff_params *p, double fwhm, const float *psf,
                   int psf_side, tide_diff_result *r);

/** The factor by which the variance of @p diff must be scaled so that sums over disjoint
 *  boxes of side ~1.5 @p fwhm (odd, >= 3) of unmasked finite pixels, divided by the square
 *  root of their summed variance, have a robust variance (1.4826 MAD)^2 of 1. 1 when fewer
 *  than 50 boxes qualify (or on any error); clamped to [0.25, 16]. @p diff lives where @p ctx
 *  computes (the box sums and their medians run there); @p ctx NULL: a host image on the
 *  calling thread's CPU. */
double tide_diffp_noise_scale(tide_ctx *ctx, const tide_image *diff, double fwhm);

/** Multiply the variance plane of @p im by @p f where the context computes (@p ctx NULL: a
 *  host image on the calling thread). */
int tide_diffp_scale_var(tide_ctx *ctx, tide_image *im, float f);

/** Drop the rows of @p cands (columns X, Y) with any of @p bits in the 3 × 3 pixels of the
 *  host image @p diff's mask at their centre; *nrej receives how many. */
int tide_diffp_screen(const tide_image *diff, uint16_t bits, tide_table *cands, int64_t *nrej);

/** A PSF stamp for the dipole fits from the unconvolved frame @p f on the output grid (its
 *  stars already there): the reference PSF of tide_psf_build (psf.h) normalised to unit sum,
 *  or, when the model falls back to a Gaussian or cannot be built, NULL (the caller then
 *  uses a Gaussian of the FWHM). *side receives the stamp side. */
float *tide_diffp_psf_stamp(tide_ctx *ctx, const tide_diffp_frame *f, double fwhm, int *side);

/** The dipole model of fit @p f on a stamp of side @p stamp whose central pixel is at image
 *  position (cx, cy): dipole.h's TIDE_DIPOLE_GAUSS, or with @p psf (psf_side², unit sum) the
 *  PSF dipole, the PSF shifted by bilinear interpolation (a picture, not the fit's Keys
 *  cubic); then the point source instead when its χ² is not worse. */
void tide_diffp_model_stamp(const tide_dipole_fit *f, const float *psf, int psf_side, int stamp,
                            double cx, double cy, float *out);

/** A run's outputs written into a private directory beside their target, not yet in place. */
typedef struct tide_diffp_staged {
    char dir[4096]; /**< the target directory */
    char tmp[4400]; /**< the private directory holding the files ("" once placed or removed) */
    int exists;     /**< 1: the target exists (a previous run's outputs, to be replaced) */
} tide_diffp_staged;

/** tide_diff_write's first half: every file complete in a private directory (checked and
 *  written as tide_diff_write does; @p ntop < 0: no candidate picture); on failure nothing
 *  is left. */
int tide_diffp_write_stage(const char *dir, const tide_diff_result *r, int64_t ntop,
                           tide_fits_compress how, tide_diffp_staged *sg);

/** The second half: the staged directory renamed into place (a previous run's moved aside,
 *  then removed on the remover's thread: tide_diffp_remove_wait). On failure the target is
 *  as it was and the staged files are removed. */
int tide_diffp_write_place(tide_diffp_staged *sg);

/** Wait until the removal of the last replaced run is done (a no-op when none is going on).
 *  The next tide_diffp_write_stage waits too, and so does the process's exit. */
void tide_diffp_remove_wait(void);

/** Remove the staged files (after a failure between the halves). */
void tide_diffp_write_abort(tide_diffp_staged *sg);

/** The store key (tide_store_file_checksum) of the file of @p spec (FILE or FILE[ext]) into
 *  @p hex (65+ bytes). */
int tide_diffp_file_checksum(const char *spec, char *hex);

/** The store's rows of a run (diff_store.c): the diffs row from the result and both frames'
 *  headers (@p sci_hdr, @p tmpl_hdr; MJD-OBS, FILTER), checksums of the two files, the
 *  candidates, cutouts of side @p cutout_px (science, template, difference) and the fit
 *  residual of each candidate whose stamp was kept, and the association with objects within
 *  @p radius_arcsec, in one transaction of @p store. @p tmpl_sum: the template's checksum
 *  when known ("" or NULL: computed). *diff_id gets the diffs.id. */
int tide_diffp_store_put(tide_store *store, const char *sci, const char *tmpl, const char *tmpl_sum,
                         const char *outdir, const tide_header *sci_hdr,
                         const tide_header *tmpl_hdr, const tide_diff_result *r, int cutout_px,
                         double radius_arcsec, int64_t *diff_id);

#endif
