/* sim_epoch.c — the two epochs: pointing, seeing, sky and time of each, and the objects that
 * make epoch 2 interesting for difference imaging (a moving object, new transients, variable
 * stars).
 *
 * Epoch 2 is the same sky and detector (same optics, so the same SIP terms, same hot pixels
 * and bad columns) seen dt hours later with the telescope pointed (e2_dra, e2_ddec) arcsec away
 * and rotated by e2_rotation, through other seeing (FWHM × e2_fwhm_scale, another PSF angle),
 * another sky level and gradient, and transparency e2_transparency. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_internal.h"
#include "tide/status.h"

#define SIM_PI 3.14159265358979323846

/* Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const int64_t doe = z - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* "YYYY-MM-DDThh:mm:ss[.sss]" → MJD (UTC days). */
static int iso_to_mjd(const char *s, double *mjd) {
    int y, mo, d, h = 0, mi = 0;
    double sec = 0;
    int n = sscanf(s, "%d-%d-%dT%d:%d:%lf", &y, &mo, &d, &h, &mi, &sec);
    if (n < 3 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        sec < 0 || sec >= 61)
        return -1;
    *mjd = (double)(days_from_civil(y, mo, d) + 40587) + (h + (mi + sec / 60.0) / 60.0) / 24.0;
    return 0;
}

static void mjd_to_iso(double mjd, char *out, size_t n) {
    double day = floor(mjd);
    int64_t ms = (int64_t)llround((mjd - day) * 86400000.0);
    int64_t z = (int64_t)day - 40587 + ms / 86400000;
    int64_t y;
    int m, d;
    civil_from_days(z, &y, &m, &d);
    /* Unsigned, range-limited fields (years 0..9999) so the output fits 24 characters. */
    const unsigned um = (unsigned)(ms % 86400000), uy = (unsigned)(y < 0 ? 0 : y % 10000);
    snprintf(out, n, "%04u-%02u-%02uT%02u:%02u:%02u.%03u", uy, (unsigned)m % 13u, (unsigned)d % 32u,
             um / 3600000u % 24u, um / 60000u % 60u, um / 1000u % 60u, um % 1000u);
}

int sim_epoch_setup(tide_sim_sky *sky) {
    const tide_sim_params *p = &sky->p;
    double a[SIM_SIP_MAX][SIM_SIP_MAX], b[SIM_SIP_MAX][SIM_SIP_MAX];
    sim_wcs_draw_sip(p->seed, p->sip_order, p->sip_amp, p->width, p->height, a, b);
    const double scale = sim_pixel_scale_deg(p);
    double mjd1;
    if (iso_to_mjd(p->date_obs, &mjd1))
        return tide_error(TIDE_E_INVAL, "sim: date_obs '%s' is not YYYY-MM-DDThh:mm:ss",
                          p->date_obs);
    for (int e = 0; e < 2; e++) {
        sim_epoch_geom *g = &sky->geom[e];
        sim_rng r = sim_rng_make(p->seed, SIM_STREAM_EPOCH, (uint64_t)e);
        double ra = p->ra, dec = p->dec, rot = p->rotation;
        if (e == 1) {
            dec = p->dec + p->e2_ddec / 3600.0;
            ra = p->ra + p->e2_dra / 3600.0 / cos(p->dec * SIM_PI / 180.0);
            rot += p->e2_rotation;
        }
        sim_wcs_init(&g->wcs, p->width, p->height, ra, dec, rot, scale, p->sip_order, a, b);
        int st = sim_wcs_fit_inverse(&g->wcs, p->width, p->height);
        if (st)
            return st;
        g->fwhm = p->fwhm * (e ? p->e2_fwhm_scale : 1.0);
        g->fwhm_var = p->fwhm_var;
        g->beta = p->beta;
        g->ellip = p->ellip;
        g->ellip_var = p->ellip_var;
        g->theta_deg = p->psf_theta + (e ? sim_rng_range(&r, -40.0, 40.0) : 0.0);
        double ang = sim_rng_range(&r, 0, 2 * SIM_PI);
        g->fwhm_gx = cos(ang);
        g->fwhm_gy = sin(ang);
        ang = sim_rng_range(&r, 0, 2 * SIM_PI);
        g->sky = p->sky * (e ? sim_rng_range(&r, 0.8, 1.3) : 1.0);
        g->sky_gx = p->sky_grad * cos(ang);
        g->sky_gy = p->sky_grad * sin(ang);
        g->sky_quad = p->sky_quad;
        g->transparency = e ? p->e2_transparency : 1.0;
        g->mjd = mjd1 + (e ? p->e2_dt_hours / 24.0 : 0.0);
        mjd_to_iso(g->mjd, g->date_obs, sizeof g->date_obs);
    }
    return 0;
}

/* A point uniformly inside the central fraction f of the epoch-1 frame. */
static void central_point(const tide_sim_params *p, sim_rng *r, double f, double *x, double *y) {
    *x = (0.5 - 0.5 * f) * (p->width - 1) + f * (p->width - 1) * sim_rng_uniform(r);
    *y = (0.5 - 0.5 * f) * (p->height - 1) + f * (p->height - 1) * sim_rng_uniform(r);
}

int sim_epoch_specials(tide_sim_sky *sky) {
    const tide_sim_params *p = &sky->p;
    const int64_t n = p->e2_nmoving + p->e2_ntransient + p->e2_nvariable;
    int st = sim_sky_reserve(sky, n);
    if (st)
        return st;
    const sim_wcs *w1 = &sky->geom[0].wcs;
    const double scale_as = sim_pixel_scale_deg(p) * 3600.0;
    /* Galaxies that can host transients: those inside the central 80 % of the frame. */
    int64_t g0 = -1, ng = 0;
    for (int64_t i = 0; i < sky->nobj; i++)
        if (sky->obj[i].type == TIDE_SIM_GALAXY) {
            if (g0 < 0)
                g0 = i;
            ng++;
        }
    for (int64_t k = 0; k < n; k++) {
        sim_rng r = sim_rng_make(p->seed, SIM_STREAM_SPECIAL, (uint64_t)k);
        sim_object *o = &sky->obj[sky->nobj];
        memset(o, 0, sizeof *o);
        o->id = sky->nobj + 1;
        double x, y;
        central_point(p, &r, 0.7, &x, &y);
        if (k < p->e2_nmoving) {
            /* A main-belt-like object: moves rate·dt between the epochs. */
            o->type = TIDE_SIM_MOVING;
            o->mag[0] = o->mag[1] = sim_rng_range(&r, 15.5, 17.5);
            double ang = sim_rng_range(&r, 0, 2 * SIM_PI);
            double d = p->moving_rate * p->e2_dt_hours / scale_as;
            sim_wcs_pix2sky(w1, x, y, &o->ra[0], &o->dec[0]);
            sim_wcs_pix2sky(w1, x + d * cos(ang), y + d * sin(ang), &o->ra[1], &o->dec[1]);
        } else if (k < p->e2_nmoving + p->e2_ntransient) {
            /* A supernova-like transient: new in epoch 2, on a galaxy when there is one. */
            o->type = TIDE_SIM_TRANSIENT;
            o->mag[0] = NAN;
            o->mag[1] = sim_rng_range(&r, 16.0, 18.0);
            if (ng > 0) {
                int64_t pick = (int64_t)(sim_rng_uniform(&r) * (double)ng), seen = 0;
                for (int64_t i = g0; i < sky->nobj; i++)
                    if (sky->obj[i].type == TIDE_SIM_GALAXY && seen++ == pick) {
                        double hx, hy, ang = sim_rng_range(&r, 0, 2 * SIM_PI);
                        sim_wcs_sky2pix(w1, sky->obj[i].ra[0], sky->obj[i].dec[0], &hx, &hy);
                        double off = sim_rng_range(&r, 0.3, 1.0) * sky->obj[i].re_pix;
                        x = hx + off * cos(ang);
                        y = hy + off * sin(ang);
                        break;
                    }
            }
            sim_wcs_pix2sky(w1, x, y, &o->ra[0], &o->dec[0]);
            o->ra[1] = o->ra[0];
            o->dec[1] = o->dec[0];
        } else {
            /* A variable star: brighter or fainter by 0.3–1.2 mag in epoch 2. */
            o->type = TIDE_SIM_VARIABLE;
            o->mag[0] = sim_rng_range(&r, 15.0, 17.5);
            double dm = sim_rng_range(&r, 0.3, 1.2);
            o->mag[1] = o->mag[0] + (sim_rng_uniform(&r) < 0.5 ? -dm : dm);
            o->color = 0.8 + 0.35 * sim_rng_gauss(&r);
            sim_wcs_pix2sky(w1, x, y, &o->ra[0], &o->dec[0]);
            o->ra[1] = o->ra[0];
            o->dec[1] = o->dec[0];
        }
        sky->nobj++;
    }
    return 0;
}
