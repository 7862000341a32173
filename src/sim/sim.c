/* sim.c — the simulator's orchestration: parameters, the sky, and the order of one epoch
 * (sources → render → photons → cosmic rays → bleeding → readout → truth and header). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "sim_internal.h"
#include "tide/status.h"
#include "tide/timer.h"

#define SIM_PI 3.14159265358979323846

void tide_sim_params_default(tide_sim_params *p) {
    memset(p, 0, sizeof *p);
    p->seed = 1;
    p->width = 2048;
    p->height = 2048;
    p->nstars = 2000;
    p->ngalaxies = 100;
    p->mag_bright = 10.0;
    p->mag_faint = 21.0;
    p->lf_alpha = 0.3;
    p->zeropoint = 22.5;
    p->exptime = 60.0;
    p->gain = 1.2;
    p->rdnoise = 5.0;
    p->bias = 1000.0;
    p->fullwell = 50000.0;
    p->sky = 800.0;
    p->sky_grad = 0.05;
    p->sky_quad = -0.03;
    p->fwhm = 3.0;
    p->fwhm_var = 0.15;
    p->beta = 3.0;
    p->ellip = 0.05;
    p->ellip_var = 0.08;
    p->psf_theta = 30.0;
    p->ra = 150.0;
    p->dec = 2.2;
    p->rotation = 12.0;
    p->focal_mm = 530.0;
    p->pixsize_um = 3.76;
    p->sip_order = 3;
    p->sip_amp = 2.5;
    p->cr_rate = 20.0;
    p->nhot = 0;
    p->nbadcols = 2;
    p->color_term = 0.05;
    p->ref_maglim = 19.0;
    strcpy(p->filter, "r");
    strcpy(p->date_obs, "2024-03-15T03:12:45.000");
    p->noise = 1;
    p->defects = 1;
    p->with_mask = 0;
    p->e2_dra = 40.0;
    p->e2_ddec = -25.0;
    p->e2_rotation = 0.7;
    p->e2_fwhm_scale = 1.3;
    p->e2_transparency = 0.85;
    p->e2_dt_hours = 1.0;
    p->e2_nmoving = 1;
    p->e2_ntransient = 1;
    p->e2_nvariable = 1;
    p->moving_rate = 30.0;
}

#define BAD(cond, ...)                                                                             \
    do {                                                                                           \
        if (cond)                                                                                  \
            return tide_error(TIDE_E_INVAL, __VA_ARGS__);                                          \
    } while (0)

/* The checks of tide_sim_params_check; the pixel count only of a frame rendered whole. */
static int params_check(const tide_sim_params *p, int whole_frame) {
    BAD(!p, "sim: no parameters");
    BAD(p->width < 1 || p->height < 1 || p->width > 1000000 || p->height > 1000000 ||
            (whole_frame && p->width * p->height > ((int64_t)1 << 31)),
        "sim: frame size %lld x %lld is out of range (each 1..1000000, at most 2^31 pixels)",
        (long long)p->width, (long long)p->height);
    BAD(p->nstars < 0 || p->nstars > 50000000, "sim: nstars %lld is out of range (0..5e7)",
        (long long)p->nstars);
    BAD(p->ngalaxies < 0 || p->ngalaxies > 1000000, "sim: ngalaxies %lld is out of range",
        (long long)p->ngalaxies);
    BAD(!(p->mag_bright < p->mag_faint), "sim: mag_bright %g must be < mag_faint %g", p->mag_bright,
        p->mag_faint);
    BAD(!(p->exptime > 0), "sim: exptime %g must be > 0", p->exptime);
    BAD(!(p->gain > 0), "sim: gain %g must be > 0", p->gain);
    BAD(!(p->rdnoise >= 0), "sim: rdnoise %g must be >= 0", p->rdnoise);
    BAD(!(p->fullwell > 0), "sim: fullwell %g must be > 0", p->fullwell);
    BAD(!(p->sky >= 0), "sim: sky %g must be >= 0", p->sky);
    BAD(!(p->fwhm >= 0.5 && p->fwhm <= 100), "sim: fwhm %g is out of range (0.5..100 px)", p->fwhm);
    BAD(!(p->beta > 1.05 && p->beta < 50), "sim: beta %g is out of range (1.05..50)", p->beta);
    BAD(!(p->ellip >= 0 && p->ellip < 0.9), "sim: ellip %g is out of range [0, 0.9)", p->ellip);
    BAD(!(p->ellip_var >= 0 && p->ellip_var < 0.9), "sim: ellip_var %g is out of range",
        p->ellip_var);
    BAD(!(p->fwhm_var > -0.5 && p->fwhm_var < 2), "sim: fwhm_var %g is out of range", p->fwhm_var);
    BAD(!(p->dec > -89.5 && p->dec < 89.5), "sim: dec %g is out of range (-89.5..89.5)", p->dec);
    BAD(!(p->focal_mm > 0 && p->pixsize_um > 0), "sim: focal length and pixel size must be > 0");
    BAD(!(p->sip_order == 0 || p->sip_order == 2 || p->sip_order == 3),
        "sim: sip_order %d must be 0, 2 or 3", p->sip_order);
    BAD(!(fabs(p->sip_amp) <= 50), "sim: sip_amp %g is out of range (|amp| <= 50 px)", p->sip_amp);
    BAD(!(p->cr_rate >= 0), "sim: cr_rate %g must be >= 0", p->cr_rate);
    BAD(p->nhot < 0 || p->nbadcols < 0 || p->e2_nmoving < 0 || p->e2_ntransient < 0 ||
            p->e2_nvariable < 0 || p->e2_nsatellite < 0 || p->e2_nsatellite > 10000 ||
            p->e2_nmoving + p->e2_ntransient + p->e2_nvariable > 100000,
        "sim: negative or too many defects / epoch-2 objects");
    BAD(!(p->e2_fwhm_scale > 0.1 && p->e2_fwhm_scale < 10), "sim: e2_fwhm_scale %g out of range",
        p->e2_fwhm_scale);
    BAD(!(p->e2_transparency > 0 && p->e2_transparency <= 10),
        "sim: e2_transparency %g out of range", p->e2_transparency);
    return 0;
}

int tide_sim_params_check(const tide_sim_params *p) {
    return params_check(p, 1);
}

const char *tide_sim_type_name(int type) {
    static const char *names[] = {"star", "galaxy", "moving", "transient", "variable", "satellite"};
    return type >= 0 && type <= 5 ? names[type] : "unknown";
}

double sim_pixel_scale_deg(const tide_sim_params *p) {
    /* plate scale: 206264.8" per radian; pixel µm over focal length mm gives 1e-3 rad. */
    return 206.264806 * p->pixsize_um / p->focal_mm / 3600.0;
}

int sim_sky_reserve(tide_sim_sky *sky, int64_t extra) {
    static const int64_t unit = 1024;
    int64_t need = sky->nobj + extra, cap = (need + unit - 1) / unit * unit;
    sim_object *o = realloc(sky->obj, sizeof *o * (size_t)(cap > 0 ? cap : 1));
    if (!o)
        return tide_error(TIDE_E_NOMEM, "sim: out of memory for %lld objects", (long long)need);
    memset(o + sky->nobj, 0, sizeof *o * (size_t)extra);
    sky->obj = o;
    return 0;
}

int tide_sim_sky_make(tide_ctx *ctx, const tide_sim_params *p, tide_sim_sky **out) {
    (void)ctx;
    return sim_sky_make(p, 1, out);
}

int sim_sky_make(const tide_sim_params *p, int whole_frame, tide_sim_sky **out) {
    *out = NULL;
    int st = params_check(p, whole_frame);
    if (st)
        return st;
    tide_sim_sky *sky = calloc(1, sizeof *sky);
    if (!sky)
        return tide_error(TIDE_E_NOMEM, "sim: out of memory");
    sky->p = *p;
    sky->p.filter[sizeof sky->p.filter - 1] = 0;
    sky->p.date_obs[sizeof sky->p.date_obs - 1] = 0;
    /* Margin: enough sky around frame 1 to cover frame 2 (offset + rotation) and the PSF
     * wings of stars just outside. */
    const double scale_as = sim_pixel_scale_deg(p) * 3600.0;
    const double off = hypot(p->e2_dra, p->e2_ddec) / scale_as;
    const double halfdiag = 0.5 * hypot((double)p->width, (double)p->height);
    sky->margin = (int64_t)ceil(off + fabs(sin(p->e2_rotation * SIM_PI / 180.0)) * halfdiag + 32);
    if ((st = sim_epoch_setup(sky)) || (st = sim_stars_make(sky)) ||
        (st = sim_galaxies_make(sky)) || (st = sim_epoch_specials(sky)) ||
        (st = sim_defects_detector(sky))) {
        tide_sim_sky_free(sky);
        return st;
    }
    *out = sky;
    return 0;
}

void tide_sim_sky_free(tide_sim_sky *sky) {
    if (!sky)
        return;
    free(sky->obj);
    free(sky->hot_idx);
    free(sky->hot_rate);
    free(sky->bad_x);
    free(sky->bad_y0);
    free(sky->bad_level);
    free(sky);
}

int64_t tide_sim_sky_count(const tide_sim_sky *sky) {
    return sky ? sky->nobj : 0;
}

const tide_sim_params *tide_sim_sky_params(const tide_sim_sky *sky) {
    return sky ? &sky->p : NULL;
}

int tide_sim_pix2sky(const tide_sim_sky *sky, int epoch, int64_t n, const double *x,
                     const double *y, double *ra, double *dec) {
    if (!sky || (epoch != 1 && epoch != 2) || n < 0)
        return tide_error(TIDE_E_INVAL, "sim: pix2sky needs a sky and epoch 1 or 2");
    for (int64_t i = 0; i < n; i++)
        sim_wcs_pix2sky(&sky->geom[epoch - 1].wcs, x[i], y[i], &ra[i], &dec[i]);
    return 0;
}

int tide_sim_sky2pix(const tide_sim_sky *sky, int epoch, int64_t n, const double *ra,
                     const double *dec, double *x, double *y) {
    if (!sky || (epoch != 1 && epoch != 2) || n < 0)
        return tide_error(TIDE_E_INVAL, "sim: sky2pix needs a sky and epoch 1 or 2");
    for (int64_t i = 0; i < n; i++)
        if (sim_wcs_sky2pix(&sky->geom[epoch - 1].wcs, ra[i], dec[i], &x[i], &y[i]))
            x[i] = y[i] = NAN;
    return 0;
}

/* The angle, in this epoch's pixels, of a direction given in epoch-1 pixels at (x1, y1). */
static double angle_in_epoch(const tide_sim_sky *sky, int e, double x1, double y1, double th1) {
    if (e == 0)
        return th1;
    double ra0, de0, ra1, de1, xa, ya, xb, yb;
    sim_wcs_pix2sky(&sky->geom[0].wcs, x1, y1, &ra0, &de0);
    sim_wcs_pix2sky(&sky->geom[0].wcs, x1 + cos(th1), y1 + sin(th1), &ra1, &de1);
    sim_wcs_sky2pix(&sky->geom[e].wcs, ra0, de0, &xa, &ya);
    sim_wcs_sky2pix(&sky->geom[e].wcs, ra1, de1, &xb, &yb);
    return atan2(yb - ya, xb - xa);
}

/* Sources of an epoch: every present object within reach of the frame, with its PSF; where
 * the objects are comes from @p pos when given. */
static int make_sources(const tide_sim_sky *sky, int e, const sim_placed *pos, int nthreads,
                        sim_src **out, int64_t *nout) {
    const tide_sim_params *p = &sky->p;
    const sim_epoch_geom *g = &sky->geom[e];
    const double W = (double)p->width, H = (double)p->height, reach = 450.0;
    sim_src *src = calloc((size_t)(sky->nobj > 0 ? sky->nobj : 1), sizeof *src);
    if (!src)
        return tide_error(TIDE_E_NOMEM, "sim: out of memory for %lld sources",
                          (long long)sky->nobj);
    int64_t n = 0;
    for (int64_t i = 0; i < sky->nobj; i++) {
        const sim_object *o = &sky->obj[i];
        double x, y;
        if (!isfinite(o->mag[e]))
            continue;
        if (pos) {
            x = pos->x[i] - pos->x0, y = pos->y[i] - pos->y0;
            if (!isfinite(x) || !isfinite(y))
                continue;
        } else if (sim_wcs_sky2pix(&g->wcs, o->ra[e], o->dec[e], &x, &y)) {
            continue;
        }
        if (x < -reach || y < -reach || x > W + reach || y > H + reach)
            continue;
        sim_src *s = &src[n++];
        s->obj = i;
        s->x = x;
        s->y = y;
        s->flux = p->exptime * pow(10.0, -0.4 * (o->mag[e] - p->zeropoint)) * g->transparency;
    }
    int st = 0;
#pragma omp parallel for schedule(dynamic, 64) num_threads(nthreads) reduction(| : st)
    for (int64_t k = 0; k < n; k++) {
        sim_src *s = &src[k];
        const sim_object *o = &sky->obj[s->obj];
        double fwhm, ell, th;
        sim_psf_at(g, p->width, p->height, s->x, s->y, &fwhm, &ell, &th);
        sim_psf_setup(s, fwhm, ell, th, g->beta);
        if (o->type == TIDE_SIM_GALAXY) {
            double x1, y1;
            sim_wcs_sky2pix(&sky->geom[0].wcs, o->ra[0], o->dec[0], &x1, &y1);
            double thg = angle_in_epoch(sky, e, x1, y1, o->theta1 * SIM_PI / 180.0);
            st |= sim_galaxy_stamp(s, o, thg) ? 1 : 0;
            s->theta = thg;
        }
    }
    if (st) {
        for (int64_t k = 0; k < n; k++)
            free(src[k].stamp);
        free(src);
        return tide_error(TIDE_E_NOMEM, "sim: out of memory for galaxy stamps");
    }
    *out = src;
    *nout = n;
    return 0;
}

int tide_sim_epoch(tide_ctx *ctx, const tide_sim_sky *sky, int epoch, tide_sim_frame *out) {
    return sim_epoch_frame(ctx, sky, epoch, NULL, out);
}

int sim_epoch_frame(tide_ctx *ctx, const tide_sim_sky *sky, int epoch, const sim_placed *pos,
                    tide_sim_frame *out) {
    memset(out, 0, sizeof *out);
    if (!sky || (epoch != 1 && epoch != 2))
        return tide_error(TIDE_E_INVAL, "sim: epoch %d (must be 1 or 2)", epoch);
    const double t0 = tide_now();
    const tide_sim_params *p = &sky->p;
    const int e = epoch - 1;
    int nthreads = ctx && ctx->threads > 0 ? ctx->threads : 1;
#ifdef _OPENMP
    if (!(ctx && ctx->threads > 0))
        nthreads = omp_get_max_threads();
#endif
    sim_src *src = NULL;
    int64_t nsrc = 0;
    uint16_t *mask = NULL;
    uint8_t *rowsat = NULL;
    sim_trail *trails = NULL;
    int64_t ntrails = 0;
    int st = tide_image_alloc(ctx, &out->image, p->width, p->height, TIDE_HOST,
                              p->with_mask ? TIDE_IMAGE_MASK : 0);
    if (st)
        return st;
    const size_t npix = (size_t)p->width * (size_t)p->height;
    mask = p->with_mask ? out->image.mask : calloc(npix, sizeof *mask);
    rowsat = calloc((size_t)p->height, 1);
    if (epoch == 2 && p->e2_nsatellite > 0)
        trails = calloc((size_t)p->e2_nsatellite, sizeof *trails);
    if (!mask || !rowsat || (epoch == 2 && p->e2_nsatellite > 0 && !trails)) {
        st = tide_error(TIDE_E_NOMEM, "sim: out of memory for the mask");
        goto fail;
    }
    if ((st = make_sources(sky, e, pos, nthreads, &src, &nsrc)))
        goto fail;
    if ((st = sim_render(out->image.pix, p->width, p->height, src, nsrc, nthreads)))
        goto fail;
    ntrails = sim_trails_render(out->image.pix, sky, epoch, trails); /* light: before noise */
    const double t1 = tide_now();
    sim_noise_photons(out->image.pix, sky, epoch, &sky->geom[e], rowsat, nthreads);
    out->ncosmics = sim_defects_cosmics(out->image.pix, mask, rowsat, sky, epoch);
    sim_defects_bleed(out->image.pix, mask, p->width, p->height, p->fullwell, rowsat, nthreads);
    sim_defects_mask(mask, sky);
    sim_noise_readout(out->image.pix, mask, sky, epoch, nthreads);
    const double t2 = tide_now();
    if ((st = sim_catalog_truth(sky, epoch, src, nsrc, mask, &out->truth, &out->nsaturated)) ||
        (st = sim_trails_truth(sky, epoch, trails, ntrails, &out->truth)))
        goto fail;
    if ((st = sim_header_make(sky, epoch, out->ncosmics, &out->header)))
        goto fail;
    for (int64_t k = 0; k < nsrc; k++)
        free(src[k].stamp);
    free(src);
    if (!p->with_mask)
        free(mask);
    free(rowsat);
    free(trails);
    out->ms_render = (t1 - t0) * 1e3;
    out->ms_noise = (t2 - t1) * 1e3;
    out->ms_total = (tide_now() - t0) * 1e3;
    return 0;
fail:
    for (int64_t k = 0; k < nsrc; k++)
        free(src[k].stamp);
    free(src);
    if (!p->with_mask)
        free(mask);
    free(rowsat);
    free(trails);
    tide_sim_frame_free(ctx, out);
    return st;
}

void tide_sim_frame_free(tide_ctx *ctx, tide_sim_frame *f) {
    if (!f)
        return;
    tide_image_free(ctx, &f->image);
    tide_header_free(&f->header);
    tide_table_free(&f->truth);
    memset(f, 0, sizeof *f);
}

int tide_sim_run(tide_ctx *ctx, const tide_sim_params *p, tide_sim_frame *out, tide_table *refcat) {
    tide_sim_sky *sky = NULL;
    memset(out, 0, sizeof *out);
    int st = tide_sim_sky_make(ctx, p, &sky);
    if (!st)
        st = tide_sim_epoch(ctx, sky, 1, out);
    if (!st && refcat && (st = tide_sim_refcat(sky, refcat)))
        tide_sim_frame_free(ctx, out);
    tide_sim_sky_free(sky);
    return st;
}
