/* sim_catalog.c — the truth catalog of an epoch and the reference catalog of the sky. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_internal.h"
#include "tide/coords.h"
#include "tide/status.h"

#define SIM_PI 3.14159265358979323846

typedef struct {
    const char *name;
    tide_col_type type;
    int64_t repeat;
    const char *unit, *disp, *comment;
} col_def;

static int add_cols(tide_table *t, const col_def *d, int n) {
    for (int i = 0; i < n; i++) {
        int idx, st = tide_table_add_column(t, d[i].name, d[i].type, d[i].repeat, d[i].unit,
                                            d[i].comment, &idx);
        if (st)
            return st;
        if (d[i].disp)
            snprintf(t->cols[idx].disp, sizeof t->cols[idx].disp, "%s", d[i].disp);
    }
    return 0;
}

static const col_def truth_cols[] = {
    {"ID", TIDE_COL_I64, 1, "", "I8", "object id, the same in both epochs"},
    {"X_TRUE", TIDE_COL_F64, 1, "pixel", "F11.5", "true x centre (FITS 1-based)"},
    {"Y_TRUE", TIDE_COL_F64, 1, "pixel", "F11.5", "true y centre (FITS 1-based)"},
    {"RA", TIDE_COL_F64, 1, "deg", "F13.8", "right ascension (ICRS)"},
    {"DEC", TIDE_COL_F64, 1, "deg", "F13.8", "declination (ICRS)"},
    {"MAG", TIDE_COL_F64, 1, "mag", "F8.4", "magnitude in the frame's filter this epoch"},
    {"FLUX", TIDE_COL_F64, 1, "adu", "G14.7", "total counts above sky and bias, ADU"},
    {"FLUX_E", TIDE_COL_F64, 1, "electron", "G14.7", "total counts, electrons"},
    {"FWHM", TIDE_COL_F32, 1, "pixel", "F7.3", "local PSF FWHM"},
    {"ELLIP", TIDE_COL_F32, 1, "", "F6.4", "1 - b/a (PSF, or galaxy axis ratio)"},
    {"THETA", TIDE_COL_F32, 1, "deg", "F7.2", "major axis angle from +x towards +y"},
    {"SERSIC_N", TIDE_COL_F32, 1, "", "F5.2", "Sersic index (0: point source)"},
    {"RE", TIDE_COL_F32, 1, "pixel", "F6.2", "effective radius, major axis (0: point)"},
    {"TYPE", TIDE_COL_STR, 10, "", NULL, "star, galaxy, moving, transient, variable"},
    {"TYPE_ID", TIDE_COL_I16, 1, "", "I2", "0 star 1 galaxy 2 moving 3 transient 4 variable"},
    {"SATURATED", TIDE_COL_I16, 1, "", "I1", "1: a pixel within 1.5 px is at SATURATE"},
    {"PEAK", TIDE_COL_F32, 1, "adu", "G12.5", "expected brightest pixel above sky"},
};

int sim_catalog_truth(const tide_sim_sky *sky, int epoch, const sim_src *src, int64_t nsrc,
                      const uint16_t *mask, tide_table *t, int64_t *nsat) {
    const tide_sim_params *p = &sky->p;
    const int64_t W = p->width, H = p->height;
    const int e = epoch - 1;
    tide_table_init(t);
    int st = add_cols(t, truth_cols, (int)(sizeof truth_cols / sizeof truth_cols[0]));
    int64_t n = 0;
    for (int64_t k = 0; k < nsrc; k++)
        n += src[k].x >= -0.5 && src[k].x < W - 0.5 && src[k].y >= -0.5 && src[k].y < H - 0.5;
    if (!st)
        st = tide_table_resize(t, n);
    if (st) {
        tide_table_free(t);
        return st;
    }
    int64_t *id = tide_table_i64(t, "ID");
    double *xt = tide_table_f64(t, "X_TRUE"), *yt = tide_table_f64(t, "Y_TRUE");
    double *ra = tide_table_f64(t, "RA"), *dec = tide_table_f64(t, "DEC");
    double *mag = tide_table_f64(t, "MAG"), *flux = tide_table_f64(t, "FLUX");
    double *fluxe = tide_table_f64(t, "FLUX_E");
    float *fwhm = tide_table_f32(t, "FWHM"), *ell = tide_table_f32(t, "ELLIP");
    float *th = tide_table_f32(t, "THETA"), *sn = tide_table_f32(t, "SERSIC_N");
    float *re = tide_table_f32(t, "RE"), *peak = tide_table_f32(t, "PEAK");
    char *type = tide_table_column(t, "TYPE")->data;
    int16_t *tid = tide_table_column(t, "TYPE_ID")->data;
    int16_t *sat = tide_table_column(t, "SATURATED")->data;
    int64_t row = 0, ns = 0;
    for (int64_t k = 0; k < nsrc; k++) {
        const sim_src *s = &src[k];
        if (!(s->x >= -0.5 && s->x < W - 0.5 && s->y >= -0.5 && s->y < H - 0.5))
            continue;
        const sim_object *o = &sky->obj[s->obj];
        id[row] = o->id;
        xt[row] = tide_pix_to_fits(s->x);
        yt[row] = tide_pix_to_fits(s->y);
        ra[row] = o->ra[e];
        dec[row] = o->dec[e];
        mag[row] = o->mag[e];
        fluxe[row] = s->flux;
        flux[row] = s->flux / p->gain;
        fwhm[row] = (float)s->fwhm;
        double theta = s->theta; /* for a galaxy, its own angle (set in sim.c) */
        if (o->type == TIDE_SIM_GALAXY) {
            ell[row] = (float)(1.0 - o->q);
            sn[row] = (float)o->sersic_n;
            re[row] = (float)o->re_pix;
        } else {
            ell[row] = (float)s->ellip;
        }
        double tdeg = fmod(theta * 180.0 / SIM_PI, 180.0);
        if (tdeg > 90.0)
            tdeg -= 180.0;
        if (tdeg <= -90.0)
            tdeg += 180.0;
        th[row] = (float)tdeg;
        snprintf(type + row * 10, 10, "%s", tide_sim_type_name(o->type));
        tid[row] = (int16_t)o->type;
        peak[row] = (float)(s->peak / p->gain);
        int flag = 0;
        for (int64_t j = (int64_t)floor(s->y - 1.5); j <= (int64_t)ceil(s->y + 1.5) && !flag; j++)
            for (int64_t i = (int64_t)floor(s->x - 1.5); i <= (int64_t)ceil(s->x + 1.5); i++) {
                if (i < 0 || j < 0 || i >= W || j >= H)
                    continue;
                double dx = i - s->x, dy = j - s->y;
                if (dx * dx + dy * dy <= 2.25 && (mask[j * W + i] & TIDE_MASK_SATURATED))
                    flag = 1;
            }
        sat[row] = (int16_t)flag;
        ns += flag;
        row++;
    }
    *nsat = ns;
    return 0;
}

static const col_def ref_cols[] = {
    {"ID", TIDE_COL_I64, 1, "", "I8", "truth object id"},
    {"RA", TIDE_COL_F64, 1, "deg", "F13.8", "right ascension (ICRS)"},
    {"DEC", TIDE_COL_F64, 1, "deg", "F13.8", "declination (ICRS)"},
    {"MAG", TIDE_COL_F64, 1, "mag", "F8.4", "reference-band magnitude (with its error)"},
    {"MAGERR", TIDE_COL_F64, 1, "mag", "F7.4", "1-sigma error of MAG"},
    {"COLOR", TIDE_COL_F64, 1, "mag", "F7.4", "colour; MAG_frame = MAG + c * COLOR"},
};

int tide_sim_refcat(const tide_sim_sky *sky, tide_table *t) {
    if (!sky || !t)
        return tide_error(TIDE_E_INVAL, "sim: tide_sim_refcat needs a sky and a table");
    const tide_sim_params *p = &sky->p;
    tide_table_init(t);
    int st = add_cols(t, ref_cols, (int)(sizeof ref_cols / sizeof ref_cols[0]));
    int64_t n = 0;
    for (int64_t i = 0; i < sky->nobj; i++)
        n += sky->obj[i].type == TIDE_SIM_STAR && sky->obj[i].mag[0] <= p->ref_maglim;
    if (!st)
        st = tide_table_resize(t, n);
    if (st) {
        tide_table_free(t);
        return st;
    }
    int64_t *id = tide_table_i64(t, "ID");
    double *ra = tide_table_f64(t, "RA"), *dec = tide_table_f64(t, "DEC");
    double *mag = tide_table_f64(t, "MAG"), *err = tide_table_f64(t, "MAGERR");
    double *col = tide_table_f64(t, "COLOR");
    int64_t row = 0;
    for (int64_t i = 0; i < sky->nobj; i++) {
        const sim_object *o = &sky->obj[i];
        if (!(o->type == TIDE_SIM_STAR && o->mag[0] <= p->ref_maglim))
            continue;
        sim_rng r = sim_rng_make(p->seed, SIM_STREAM_REFCAT, (uint64_t)o->id);
        double sig = 0.003 + 0.02 * pow(10.0, 0.4 * (o->mag[0] - p->ref_maglim));
        id[row] = o->id;
        ra[row] = o->ra[0];
        dec[row] = o->dec[0];
        col[row] = o->color;
        mag[row] = o->mag[0] - p->color_term * o->color + sig * sim_rng_gauss(&r);
        err[row] = sig;
        row++;
    }
    return 0;
}
