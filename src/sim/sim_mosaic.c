/* sim_mosaic.c — a multi-CCD exposure (sim.h, tide_sim_mosaic): CCDs on a grid with gaps in
 * one focal plane, one sky drawn over the whole plane, and each CCD rendered alone.
 *
 * The focal plane is one frame of the simulator's (one TAN-SIP WCS, one PSF and sky pattern
 * over the plane) that is never rendered whole: a CCD is that frame's window at its origin
 * (x0, y0), so its WCS is the plane's with CRPIX moved by the origin (SIP's u, v are offsets
 * from CRPIX, so the mapping is the same sky for the same pixel), and its PSF and sky are the
 * plane's at its position. The objects' plane positions are computed once per epoch; each
 * CCD takes those within reach. What belongs to a detector (hot pixels, bad columns, cosmic
 * rays, noise, satellite trails) is drawn per CCD from a seed of its own, so no two CCDs
 * share a noise pattern. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "tide/status.h"

struct tide_sim_mosaic {
    tide_sim_params ccd;   /* one CCD's parameters, as given */
    tide_sim_sky *sky;     /* the focal plane's sky */
    int nccd;              /* CCDs */
    tide_sim_ccd *ccds;    /* their places */
    int64_t gap;           /* pixels between neighbouring CCDs */
    double *px[2], *py[2]; /* every object's 0-based plane position per epoch (NaN: none) */
};

/* A CCD's own seed: its detector, cosmic rays and noise are its own. */
static uint64_t ccd_seed(uint64_t seed, int k) {
    return sim_mix64(seed ^ sim_mix64(0x6d6f73616963ULL + (uint64_t)k));
}

int tide_sim_mosaic_layout(const tide_sim_params *p, int nccd, int64_t gap, tide_sim_ccd *ccds,
                           int64_t *plane_w, int64_t *plane_h) {
    if (!p || nccd < 1 || nccd > TIDE_SIM_MAX_CCDS || gap < 0 || gap > 100000)
        return tide_error(TIDE_E_INVAL,
                          "sim: %d CCDs with a gap of %lld px (1..%d CCDs, gap "
                          "0..100000 px)",
                          nccd, (long long)gap, TIDE_SIM_MAX_CCDS);
    /* Columns so that the plane is about as wide as it is high. */
    const double aspect = (double)p->height / (double)p->width;
    int ncols = (int)ceil(sqrt((double)nccd * aspect));
    if (ncols > nccd)
        ncols = nccd;
    const int nrows = (nccd + ncols - 1) / ncols;
    const int64_t sx = p->width + gap, sy = p->height + gap;
    *plane_w = (int64_t)ncols * sx - gap;
    *plane_h = (int64_t)nrows * sy - gap;
    for (int k = 0; k < nccd; k++) {
        const int row = k / ncols, col = k % ncols;
        const int in_row = row == nrows - 1 ? nccd - row * ncols : ncols;
        tide_sim_ccd *c = &ccds[k];
        memset(c, 0, sizeof *c);
        c->ccdnum = k + 1;
        snprintf(c->extname, sizeof c->extname, nccd > 99 ? "CCD%03d" : "CCD%02d", k + 1);
        /* a short last row is centred, as the outer rows of a round focal plane are */
        c->x0 = (int64_t)col * sx + (int64_t)(ncols - in_row) * sx / 2;
        c->y0 = (int64_t)row * sy;
    }
    return 0;
}

/* The plane positions of every object in both epochs, once for all CCDs. */
static int place_objects(tide_sim_mosaic *m) {
    const tide_sim_sky *sky = m->sky;
    const size_t n = (size_t)(sky->nobj > 0 ? sky->nobj : 1);
    for (int e = 0; e < 2; e++) {
        m->px[e] = malloc(n * sizeof(double));
        m->py[e] = malloc(n * sizeof(double));
        if (!m->px[e] || !m->py[e])
            return tide_error(TIDE_E_NOMEM, "sim: out of memory for %lld positions",
                              (long long)sky->nobj);
        double *x = m->px[e], *y = m->py[e];
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < sky->nobj; i++) {
            const sim_object *o = &sky->obj[i];
            if (!isfinite(o->mag[e]) ||
                sim_wcs_sky2pix(&sky->geom[e].wcs, o->ra[e], o->dec[e], &x[i], &y[i]))
                x[i] = y[i] = NAN;
        }
    }
    return 0;
}

int tide_sim_mosaic_make(tide_ctx *ctx, const tide_sim_params *p, int nccd, int64_t gap,
                         tide_sim_mosaic **out) {
    (void)ctx;
    if (!out)
        return tide_error(TIDE_E_INVAL, "sim: no mosaic to make");
    *out = NULL;
    int st = tide_sim_params_check(p);
    if (st)
        return st;
    tide_sim_mosaic *m = calloc(1, sizeof *m);
    if (!m || !(m->ccds = calloc((size_t)(nccd > 0 ? nccd : 1), sizeof *m->ccds))) {
        free(m);
        return tide_error(TIDE_E_NOMEM, "sim: out of memory for %d CCDs", nccd);
    }
    m->ccd = *p;
    m->nccd = nccd;
    m->gap = gap;
    tide_sim_params plane = *p;
    st = tide_sim_mosaic_layout(p, nccd, gap, m->ccds, &plane.width, &plane.height);
    /* nstars and ngalaxies are per CCD: the plane gets the same density over its area. */
    const double area = (double)plane.width * (double)plane.height;
    const double ccd_area = (double)p->width * (double)p->height;
    plane.nstars = (int64_t)llround((double)p->nstars * area / ccd_area);
    plane.ngalaxies = (int64_t)llround((double)p->ngalaxies * area / ccd_area);
    plane.nhot = 0, plane.nbadcols = 0; /* the detectors' own, per CCD */
    if (!st)
        st = sim_sky_make(&plane, 0, &m->sky);
    if (!st)
        st = place_objects(m);
    if (st) {
        tide_sim_mosaic_free(m);
        return st;
    }
    *out = m;
    return 0;
}

void tide_sim_mosaic_free(tide_sim_mosaic *m) {
    if (!m)
        return;
    tide_sim_sky_free(m->sky);
    for (int e = 0; e < 2; e++)
        free(m->px[e]), free(m->py[e]);
    free(m->ccds);
    free(m);
}

int tide_sim_mosaic_count(const tide_sim_mosaic *m) {
    return m ? m->nccd : 0;
}

const tide_sim_ccd *tide_sim_mosaic_ccd(const tide_sim_mosaic *m, int k) {
    return m && k >= 0 && k < m->nccd ? &m->ccds[k] : NULL;
}

const tide_sim_sky *tide_sim_mosaic_sky(const tide_sim_mosaic *m) {
    return m ? m->sky : NULL;
}

/* Keys of the plane's frame header that describe one CCD, not the exposure: they stay out of
 * the primary header. */
static int ccd_only_key(const char *card) {
    static const char *const prefixes[] = {
        "WCSAXES", "CTYPE",    "CUNIT", "CRPIX",   "CRVAL",    "CD1_",   "CD2_",     "RADESYS",
        "EQUINOX", "A_",       "B_",    "AP_",     "BP_",      "SIPINV", "GAIN",     "EGAIN",
        "RDNOISE", "SATURATE", "BUNIT", "SIMNHOT", "SIMNBADC", "SIMNCR", "SIMNSTAR", "SIMNGAL"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(card, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

int tide_sim_mosaic_primary(const tide_sim_mosaic *m, int epoch, tide_header *h) {
    tide_header_init(h);
    if (!m || (epoch != 1 && epoch != 2))
        return tide_error(TIDE_E_INVAL, "sim: a mosaic's primary header needs epoch 1 or 2");
    tide_header plane;
    int st = sim_header_make(m->sky, epoch, 0, &plane);
    for (int i = 0; !st && i < plane.ncards; i++)
        if (!ccd_only_key(plane.cards[i]))
            st = tide_header_append_card(h, plane.cards[i]);
    tide_header_free(&plane);
    char detsize[64];
    snprintf(detsize, sizeof detsize, "[1:%lld,1:%lld]", (long long)m->sky->p.width,
             (long long)m->sky->p.height);
    if (!st)
        st = tide_header_set_int(h, "NEXTEND", m->nccd, "image extensions, one per CCD");
    if (!st)
        st = tide_header_set_int(h, "NCCDS", m->nccd, "CCDs in the exposure");
    if (!st)
        st = tide_header_set_str(h, "DETSIZE", detsize, "focal plane, pixels");
    if (!st)
        st = tide_header_set_int(h, "SIMGAP", m->gap, "tide sim: gap between CCDs, px");
    if (!st)
        st = tide_header_set_int(h, "SIMNSTAR", m->ccd.nstars, "tide sim: stars per CCD");
    if (!st)
        st = tide_header_set_int(h, "SIMNGAL", m->ccd.ngalaxies, "tide sim: galaxies per CCD");
    if (st) {
        tide_header_free(h);
        return tide_error(st, "sim: cannot build the mosaic's primary header");
    }
    return 0;
}

/* The keywords DECam writes in each CCD's header: its name and number, and where its pixels
 * sit in the focal plane (DETSEC, 1-based, gaps counted) and in the HDU (DATASEC: the whole
 * array, the simulator writes no overscan). */
static int ccd_cards(const tide_sim_mosaic *m, const tide_sim_ccd *c, tide_header *h) {
    char detsec[64], datasec[64], detsize[64];
    const int64_t w = m->ccd.width, ht = m->ccd.height;
    snprintf(detsec, sizeof detsec, "[%lld:%lld,%lld:%lld]", (long long)c->x0 + 1,
             (long long)(c->x0 + w), (long long)c->y0 + 1, (long long)(c->y0 + ht));
    snprintf(datasec, sizeof datasec, "[1:%lld,1:%lld]", (long long)w, (long long)ht);
    snprintf(detsize, sizeof detsize, "[1:%lld,1:%lld]", (long long)m->sky->p.width,
             (long long)m->sky->p.height);
    int st = tide_header_set_str(h, "EXTNAME", c->extname, "extension name");
    if (!st)
        st = tide_header_set_str(h, "DETPOS", c->extname, "position in the focal plane");
    if (!st)
        st = tide_header_set_int(h, "CCDNUM", c->ccdnum, "CCD number");
    if (!st)
        st = tide_header_set_str(h, "DETSIZE", detsize, "focal plane, pixels");
    if (!st)
        st = tide_header_set_str(h, "DETSEC", detsec, "this CCD in the focal plane");
    if (!st)
        st = tide_header_set_str(h, "DATASEC", datasec, "data section of the array");
    if (!st)
        st = tide_header_set_str(h, "TRIMSEC", datasec, "trimmed section of the array");
    /* the exposure's seed, not the CCD's own (that one is derived from it) */
    if (!st)
        st = tide_header_set_int(h, "SIMSEED", (int64_t)m->ccd.seed, "tide sim: random seed");
    return st ? tide_error(st, "sim: cannot write the keywords of %s", c->extname) : 0;
}

int tide_sim_mosaic_epoch(tide_ctx *ctx, const tide_sim_mosaic *m, int epoch, int k,
                          tide_sim_frame *out) {
    memset(out, 0, sizeof *out);
    if (!m || k < 0 || k >= m->nccd || (epoch != 1 && epoch != 2))
        return tide_error(TIDE_E_INVAL, "sim: CCD %d of %d, epoch %d", k, m ? m->nccd : 0, epoch);
    const tide_sim_ccd *c = &m->ccds[k];
    /* The CCD's view of the plane's sky: the same objects, its own window and detector. */
    tide_sim_sky v = *m->sky;
    v.p = m->ccd;
    v.p.seed = ccd_seed(m->ccd.seed, k);
    v.hot_idx = NULL, v.hot_rate = NULL, v.bad_x = NULL, v.bad_y0 = NULL, v.bad_level = NULL;
    for (int e = 0; e < 2; e++) {
        sim_epoch_geom *g = &v.geom[e];
        g->wcs.crpix1 -= (double)c->x0;
        g->wcs.crpix2 -= (double)c->y0;
        g->field_x0 = (double)c->x0, g->field_y0 = (double)c->y0;
        g->field_w = m->sky->p.width, g->field_h = m->sky->p.height;
    }
    const sim_placed pos = {m->px[epoch - 1], m->py[epoch - 1], (double)c->x0, (double)c->y0};
    int st = sim_defects_detector(&v);
    if (!st)
        st = sim_epoch_frame(ctx, &v, epoch, &pos, out);
    if (!st && (st = ccd_cards(m, c, &out->header)))
        tide_sim_frame_free(ctx, out);
    free(v.hot_idx), free(v.hot_rate), free(v.bad_x), free(v.bad_y0), free(v.bad_level);
    return st;
}
