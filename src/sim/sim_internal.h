/* sim_internal.h — what the simulator's files share: the sky's objects, one epoch's geometry,
 * the rendering list, and the entry points of each file. Not public API. */
#ifndef TIDE_SIM_INTERNAL_H
#define TIDE_SIM_INTERNAL_H
#include <math.h>
#include <stdint.h>

#include "core/rng.h"
#include "tide/sim.h"

/* ---- WCS (sim_wcs.c) ----------------------------------------------------------------- */

#define SIM_SIP_MAX 6 /* coefficient arrays hold orders up to 5 */

/** TAN + CD + SIP, with the header's conventions: u = x1 - CRPIX1 for 1-based x1. */
typedef struct sim_wcs {
    double crpix1, crpix2; /* 1-based */
    double crval1, crval2; /* degrees */
    double cd[2][2];       /* degrees per pixel */
    double cdi[2][2];      /* inverse of cd */
    int order;             /* SIP A/B order, 0 = none */
    double a[SIM_SIP_MAX][SIM_SIP_MAX], b[SIM_SIP_MAX][SIM_SIP_MAX];
    int ap_order; /* fitted inverse order, 0 = none */
    double ap[SIM_SIP_MAX][SIM_SIP_MAX], bp[SIM_SIP_MAX][SIM_SIP_MAX];
    double inv_rms;   /* rms residual of the AP/BP fit, pixels */
    double scale_deg; /* pixel scale, degrees */
} sim_wcs;

/** Build the WCS of a pointing: centre (ra, dec), position angle rot_deg, pixel scale
 *  scale_deg, SIP coefficients @p a, @p b (order @p order), CRPIX at the frame centre. */
void sim_wcs_init(sim_wcs *w, int64_t width, int64_t height, double ra, double dec, double rot_deg,
                  double scale_deg, int order, const double a[SIM_SIP_MAX][SIM_SIP_MAX],
                  const double b[SIM_SIP_MAX][SIM_SIP_MAX]);
/** Draw SIP coefficients of order 2 or 3 whose distortion at the corners is ~amp pixels. */
void sim_wcs_draw_sip(uint64_t seed, int order, double amp, int64_t width, int64_t height,
                      double a[SIM_SIP_MAX][SIM_SIP_MAX], double b[SIM_SIP_MAX][SIM_SIP_MAX]);
/** Fit AP/BP (inverse SIP) over the frame; sets ap_order and inv_rms. */
int sim_wcs_fit_inverse(sim_wcs *w, int64_t width, int64_t height);
/** 0-based pixel → sky (degrees). */
void sim_wcs_pix2sky(const sim_wcs *w, double x, double y, double *ra, double *dec);
/** sky → 0-based pixel (Newton on the forward SIP). Returns -1 if the point is behind the
 *  tangent plane. */
int sim_wcs_sky2pix(const sim_wcs *w, double ra, double dec, double *x, double *y);
/** Write the WCS cards (CTYPE RA---TAN-SIP, CRPIX, CRVAL, CD, A_, B_, AP_, BP_). */
int sim_wcs_to_header(const sim_wcs *w, tide_header *h);

/* ---- the sky (sim.c, sim_stars.c, sim_galaxies.c, sim_epoch.c) ------------------------- */

/** One object on the sky. */
typedef struct sim_object {
    int64_t id;
    int type;                /* tide_sim_type */
    double ra[2], dec[2];    /* position at epoch 1 and 2, degrees */
    double mag[2];           /* magnitude at epoch 1 and 2 in the frame's filter; NAN = absent */
    double color;            /* reference colour (stars) */
    double sersic_n, re_pix; /* galaxies: Sérsic index, effective radius (pixels) */
    double q, theta1;        /* galaxies: axis ratio, major-axis angle in epoch-1 pixels, deg */
} sim_object;

/** Epoch geometry and conditions. */
typedef struct sim_epoch_geom {
    sim_wcs wcs;
    double fwhm, fwhm_var, ellip, ellip_var, theta_deg, beta; /* PSF field */
    double fwhm_gx, fwhm_gy;              /* unit direction of the linear FWHM gradient */
    double sky, sky_gx, sky_gy, sky_quad; /* sky ADU at centre; gradient vector; quadratic */
    double transparency;
    double mjd;
    char date_obs[32];
    /* The field the PSF and the sky vary over, when the frame is one CCD of a focal plane
     * (sim_mosaic.c): the frame's 0-based origin in it and its size; field_w = 0: the frame
     * is the field. */
    double field_x0, field_y0;
    int64_t field_w, field_h;
} sim_epoch_geom;

/** Map frame coordinates (x, y) and the frame size (w, h) to the field's, so a CCD of a
 *  mosaic sees the focal plane's PSF and sky pattern rather than one centred on itself. */
static inline void sim_field_coords(const sim_epoch_geom *g, int64_t *w, int64_t *h, double *x,
                                    double *y) {
    if (g->field_w <= 0)
        return;
    *x += g->field_x0, *y += g->field_y0;
    *w = g->field_w, *h = g->field_h;
}

struct tide_sim_sky {
    tide_sim_params p;
    sim_object *obj;
    int64_t nobj, nstars_total;
    int64_t margin; /* pixels of sky drawn around the epoch-1 frame */
    sim_epoch_geom geom[2];
    /* detector defects, the same in every epoch */
    int64_t nhot;
    int64_t *hot_idx; /* pixel indices (y*width + x) */
    double *hot_rate; /* dark current, e-/s */
    int64_t nbad;
    int64_t *bad_x, *bad_y0; /* column, first bad row (the column is bad from y0 up) */
    double *bad_level;       /* e- added (a hot column) or -1 (a dead column) */
};

/** A magnitude from dN/dm ∝ 10^(alpha m) on [mb, mf] for a uniform deviate u. */
double sim_lf_draw(double u, double alpha, double mb, double mf);
/** Draw the stars (positions in epoch-1 pixels, then RA/Dec), appending to sky->obj. */
int sim_stars_make(tide_sim_sky *sky);
/** Draw the galaxies. */
int sim_galaxies_make(tide_sim_sky *sky);
/** Epoch geometry of both epochs, and the moving objects, transients and variables. */
int sim_epoch_setup(tide_sim_sky *sky);
int sim_epoch_specials(tide_sim_sky *sky);
/** Detector defects (hot pixels, bad columns). */
int sim_defects_detector(tide_sim_sky *sky);
/** Grow sky->obj to hold @p extra more objects. */
int sim_sky_reserve(tide_sim_sky *sky, int64_t extra);
/** tide_sim_sky_make, with the frame's pixel count unchecked when @p whole_frame is 0: a
 *  focal plane's sky is drawn over its whole extent but rendered CCD by CCD. */
int sim_sky_make(const tide_sim_params *p, int whole_frame, tide_sim_sky **out);

/** Where the objects of a sky fall in the frame being rendered, computed once for every CCD
 *  of a focal plane: each object's 0-based position in the field (NaN: not on the tangent
 *  plane, or absent), and the frame's origin in the field. */
typedef struct sim_placed {
    const double *x, *y;
    double x0, y0;
} sim_placed;
/** tide_sim_epoch with the objects' positions given by @p pos (NULL: computed from the
 *  epoch's WCS, as tide_sim_epoch does). */
int sim_epoch_frame(tide_ctx *ctx, const tide_sim_sky *sky, int epoch, const sim_placed *pos,
                    tide_sim_frame *out);

/* ---- PSF (sim_psf.c) ----------------------------------------------------------------- */

/** The PSF's FWHM (pixels), ellipticity and angle (radians) at 0-based pixel (x, y). */
void sim_psf_at(const sim_epoch_geom *g, int64_t width, int64_t height, double x, double y,
                double *fwhm, double *ellip, double *theta);

/* ---- rendering (sim_render.c) -------------------------------------------------------- */

/** One thing to draw in an epoch: a Moffat point source or a galaxy stamp. */
typedef struct sim_src {
    int64_t obj;         /* index into sky->obj */
    double x, y;         /* 0-based centre */
    double flux;         /* electrons */
    float cxx, cxy, cyy; /* Moffat quadratic form: q = cxx dx² + 2 cxy dx dy + cyy dy² */
    float beta;
    float amp;                 /* flux / (sum of the unnormalised pixel values) */
    float radius;              /* pixels whose centre is within this distance are drawn */
    float rsub;                /* pixels within this distance are sub-sampled */
    int nsub;                  /* sub-samples per axis */
    double peak;               /* expected brightest pixel, electrons */
    double fwhm, ellip, theta; /* PSF here (theta radians) */
    /* a galaxy: a pre-convolved stamp instead of the Moffat */
    float *stamp;
    int64_t sx0, sy0, sw, sh; /* stamp origin (0-based pixel) and size */
} sim_src;

/** The pixels of row @p j that source @p s draws: [*i0, *i1] (its footprint is the disc of
 *  radius s->radius); 0 if the row misses it. The normaliser and the renderer both use this,
 *  so they visit exactly the same pixels. */
static inline int sim_src_span(const sim_src *s, int64_t j, int64_t *i0, int64_t *i1) {
    double dy = (double)j - s->y, h2 = (double)s->radius * s->radius - dy * dy;
    if (h2 < 0)
        return 0;
    double hw = sqrt(h2);
    *i0 = (int64_t)ceil(s->x - hw);
    *i1 = (int64_t)floor(s->x + hw);
    return 1;
}

/** Set up a Moffat source's shape from the local PSF, its radius and normalisation. */
void sim_psf_setup(sim_src *s, double fwhm, double ellip, double theta, double beta);
/** Render a galaxy's stamp (Sérsic convolved with the local PSF), normalised to s->flux. */
int sim_galaxy_stamp(sim_src *s, const sim_object *o, double theta_pix);
/** Draw every source into @p e (electrons, width×height, zeroed by the caller), band by band
 *  with nthreads threads; deterministic for any thread count. */
int sim_render(float *e, int64_t width, int64_t height, const sim_src *src, int64_t nsrc,
               int nthreads);

/* ---- background, noise, defects ------------------------------------------------------- */

/** Sky level (ADU) at 0-based pixel (x, y). */
double sim_sky_at(const sim_epoch_geom *g, int64_t width, int64_t height, double x, double y);
/** Expected electrons → detected electrons: adds the sky and the hot pixels' dark charge,
 *  then Poisson (when noise is on). rowsat[y] = 1 where a row holds a pixel above full well. */
int sim_noise_photons(float *e, const tide_sim_sky *sky, int epoch, const sim_epoch_geom *g,
                      uint8_t *rowsat, int nthreads);
/** Cosmic rays (sharp tracks of a few pixels) added to the electron image; returns the count. */
int64_t sim_defects_cosmics(float *e, uint16_t *mask, uint8_t *rowsat, const tide_sim_sky *sky,
                            int epoch);
/** Bleed trails: charge above full well spills up and down the column. */
void sim_defects_bleed(float *e, uint16_t *mask, int64_t width, int64_t height, double fullwell,
                       const uint8_t *rowsat, int nthreads);
/** Electrons → ADU: read noise, bias, bad columns, quantisation, saturation; writes the mask. */
void sim_noise_readout(float *pix, uint16_t *mask, const tide_sim_sky *sky, int epoch,
                       int nthreads);
/** One satellite trail (sim_trails.c): a point on it (0-based pixels), its angle (radians
 *  from +x), its length (drawn; after rendering, the length inside the frame) and its
 *  brightness, electrons per pixel of length. */
typedef struct sim_trail {
    double x, y, theta, len, sb;
} sim_trail;
/** Add epoch @p epoch's satellite trails (epoch 2 only, e2_nsatellite of them) to the electron
 *  image, describing them in @p trails (room for e2_nsatellite); returns how many. */
int64_t sim_trails_render(float *e, const tide_sim_sky *sky, int epoch, sim_trail *trails);
/** Append the truth rows of @p n trails (TYPE "satellite") to the truth table @p t. */
int sim_trails_truth(const tide_sim_sky *sky, int epoch, const sim_trail *trails, int64_t n,
                     tide_table *t);
/** Mark the detector's hot pixels and bad columns in the mask. */
void sim_defects_mask(uint16_t *mask, const tide_sim_sky *sky);

/* ---- outputs (sim_catalog.c, sim_header.c) --------------------------------------------- */

int sim_catalog_truth(const tide_sim_sky *sky, int epoch, const sim_src *src, int64_t nsrc,
                      const uint16_t *mask, tide_table *t, int64_t *nsat);
int sim_header_make(const tide_sim_sky *sky, int epoch, int64_t ncosmics, tide_header *h);

/** Saturation level in ADU. */
double sim_saturate_adu(const tide_sim_params *p);
/** Pixel scale, degrees. */
double sim_pixel_scale_deg(const tide_sim_params *p);

#endif
