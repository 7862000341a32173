/* calibrate_params.c — the calibration's parameters: defaults, and the configuration's site,
 * astrometry, refcat, photcal and processing keys (config_schema.c documents each). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/calibrate.h"
#include "tide/status.h"

void tide_calib_params_default(tide_calib_params *p) {
    memset(p, 0, sizeof *p);
    p->astrometry = 1;
    p->solve_timeout_s = 10.0;
    p->nbright = 500;
    p->scale_tolerance = 0.1;
    p->hint_radius_deg = 2.0;
    p->blind = 1;
    p->pixsize_um = NAN;
    p->focal_mm = NAN;
    p->sip_order = 3;
    p->match_radius_arcsec = 2.0;
    p->photcal = tide_photcal_defaults();
    p->site_lon_deg = NAN;
    p->site_lat_deg = NAN;
    p->site_height_m = 0.0;
}

int tide_calib_has_refcat(const tide_calib_params *p) {
    return p->refcat[0] || p->refcat_command[0];
}

/* Copy a string key when it is set; TIDE_E_CONFIG when it does not fit. */
static int get_str(const tide_config *cfg, const char *key, char *dst, size_t n) {
    const char *v = NULL;
    if (!tide_config_is_set(cfg, key) || tide_config_get_str(cfg, key, &v) || !v)
        return 0;
    if (strlen(v) >= n)
        return tide_error(TIDE_E_CONFIG, "%s: value longer than %zu characters", key, n - 1);
    snprintf(dst, n, "%s", v);
    return 0;
}

static void get_dbl(const tide_config *cfg, const char *key, double *dst) {
    double v;
    if (tide_config_is_set(cfg, key) && !tide_config_get_dbl(cfg, key, &v))
        *dst = v;
}

int tide_calib_params_from_config(tide_calib_params *p, const tide_config *cfg,
                                  const tide_instrument *inst) {
    int st = 0, b;
    int64_t k;
    if (!tide_config_get_bool(cfg, "astrometry.enabled", &b))
        p->astrometry = b;
    if (!tide_config_get_bool(cfg, "astrometry.blind", &b))
        p->blind = b;
    if (!tide_config_get_int(cfg, "astrometry.nbright", &k))
        p->nbright = k;
    if (!tide_config_get_int(cfg, "astrometry.sip_order", &k))
        p->sip_order = (int)k;
    get_dbl(cfg, "astrometry.timeout_s", &p->solve_timeout_s);
    get_dbl(cfg, "astrometry.scale_tolerance", &p->scale_tolerance);
    get_dbl(cfg, "astrometry.hint_radius_deg", &p->hint_radius_deg);
    get_dbl(cfg, "processing.match_radius_arcsec", &p->match_radius_arcsec);
    get_dbl(cfg, "site.longitude_deg", &p->site_lon_deg);
    get_dbl(cfg, "site.latitude_deg", &p->site_lat_deg);
    get_dbl(cfg, "site.height_m", &p->site_height_m);
    /* The environment wins over the configuration for the solve's time limit, so an operator
     * can tighten it for one run without editing an instrument file. */
    const char *env = getenv("TIDE_SOLVE_TIMEOUT");
    if (env && *env) {
        char *end;
        const double v = strtod(env, &end);
        if (end == env || *end || !(v > 0) || !isfinite(v))
            return tide_error(TIDE_E_CONFIG,
                              "TIDE_SOLVE_TIMEOUT='%s' is not a positive number "
                              "of seconds",
                              env);
        p->solve_timeout_s = v;
    }
    if (!st)
        st = get_str(cfg, "astrometry.index_dir", p->index_dir, sizeof p->index_dir);
    if (!st)
        st = get_str(cfg, "refcat.path", p->refcat, sizeof p->refcat);
    if (!st)
        st = get_str(cfg, "refcat.table", p->refcat_table, sizeof p->refcat_table);
    if (!st)
        st = get_str(cfg, "refcat.command", p->refcat_command, sizeof p->refcat_command);
    if (!st)
        st = get_str(cfg, "refcat.band", p->band, sizeof p->band);
    if (!st)
        st = get_str(cfg, "refcat.cache_dir", p->cache_dir, sizeof p->cache_dir);
    if (!st)
        st = get_str(cfg, "refcat.ra_column", p->cols.ra, sizeof p->cols.ra);
    if (!st)
        st = get_str(cfg, "refcat.dec_column", p->cols.dec, sizeof p->cols.dec);
    if (!st)
        st = get_str(cfg, "refcat.mag_column", p->cols.mag, sizeof p->cols.mag);
    if (!st)
        st = get_str(cfg, "refcat.magerr_column", p->cols.magerr, sizeof p->cols.magerr);
    if (!st)
        st = get_str(cfg, "refcat.color_column", p->cols.color, sizeof p->cols.color);
    if (st)
        return st;
    /* photcal */
    tide_photcal_params *pc = &p->photcal;
    get_dbl(cfg, "photcal.snr_min", &pc->snr_min);
    get_dbl(cfg, "photcal.snr_max", &pc->snr_max);
    get_dbl(cfg, "photcal.color_min", &pc->color_min);
    get_dbl(cfg, "photcal.color_max", &pc->color_max);
    get_dbl(cfg, "photcal.edge_pixels", &pc->edge_margin);
    get_dbl(cfg, "photcal.clip_sigma", &pc->clip_sigma);
    get_dbl(cfg, "photcal.color_term", &pc->color_term);
    if (!tide_config_get_bool(cfg, "photcal.fit_color", &b) && b)
        pc->color_mode = TIDE_PHOTCAL_COLOR_FIT;
    if (inst) {
        if (isfinite(inst->pixsize_um) && inst->pixsize_um > 0)
            p->pixsize_um = inst->pixsize_um;
        if (isfinite(inst->focallen_mm) && inst->focallen_mm > 0)
            p->focal_mm = inst->focallen_mm;
    }
    return 0;
}
