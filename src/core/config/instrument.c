/* instrument.c — resolve a frame's instrument values (gain, read noise, exposure, pointing...)
 * from its header through the configuration's keyword map and camera defaults, keeping where
 * each value came from. Precedence and conventions are documented in tide/instrument.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "tide/instrument.h"
#include "tide/status.h"

typedef enum { Q_NUM, Q_INT, Q_STR, Q_RA, Q_DEC } q_kind;

/* One resolvable quantity: its keywords.* key (= name), its camera.* key (NULL = none), where
 * it lands in tide_instrument, and the range a header value must have when there is no camera
 * key to take it from. */
typedef struct quantity {
    tide_inst_id id;
    const char *name;
    q_kind kind;
    const char *camera;
    size_t off;
    double lo, hi;
} quantity;

#define OFF(f) offsetof(tide_instrument, f)
static const quantity quantities[] = {
    {TIDE_INST_EXPTIME, "exptime", Q_NUM, "exptime", OFF(exptime), 0, 0},
    {TIDE_INST_GAIN, "gain", Q_NUM, "gain", OFF(gain), 0, 0},
    {TIDE_INST_RDNOISE, "rdnoise", Q_NUM, "rdnoise", OFF(rdnoise), 0, 0},
    {TIDE_INST_SATURATE, "saturate", Q_NUM, "saturate", OFF(saturate), 0, 0},
    {TIDE_INST_PIXSIZE, "pixsize", Q_NUM, "pixsize_um", OFF(pixsize_um), 0, 0},
    {TIDE_INST_FOCALLEN, "focallen", Q_NUM, "focallen_mm", OFF(focallen_mm), 0, 0},
    {TIDE_INST_PIXSCALE, "pixscale", Q_NUM, NULL, OFF(pixscale_arcsec), 0, 0}, /* derived */
    {TIDE_INST_FILTER, "filter", Q_STR, "filter", OFF(filter), 0, 0},
    {TIDE_INST_RA, "ra", Q_RA, NULL, OFF(ra_deg), 0.0, 360.0},
    {TIDE_INST_DEC, "dec", Q_DEC, NULL, OFF(dec_deg), -90.0, 90.0},
    {TIDE_INST_NCOMBINE, "ncombine", Q_INT, "ncombine", OFF(ncombine), 0, 0},
    {TIDE_INST_XBINNING, "xbinning", Q_INT, "xbinning", OFF(xbinning), 0, 0},
    {TIDE_INST_YBINNING, "ybinning", Q_INT, "ybinning", OFF(ybinning), 0, 0},
    {TIDE_INST_DATEOBS, "dateobs", Q_STR, NULL, OFF(dateobs), 0, 0},
    {TIDE_INST_MJDOBS, "mjdobs", Q_NUM, NULL, OFF(mjdobs), -INFINITY, INFINITY},
    {TIDE_INST_AIRMASS, "airmass", Q_NUM, "airmass", OFF(airmass), 0, 0},
    {TIDE_INST_OBJECT, "object", Q_STR, NULL, OFF(object), 0, 0},
};
#define NQ ((int)(sizeof quantities / sizeof quantities[0]))

/* 180 * 3600 / pi: arcseconds per radian. */
#define ARCSEC_PER_RAD 206264.80624709636

const char *tide_instrument_quantity_name(tide_inst_id id) {
    for (int i = 0; i < NQ; i++)
        if (quantities[i].id == id)
            return quantities[i].name;
    return "?";
}

const char *tide_instrument_source_name(tide_inst_source s) {
    switch (s) {
    case TIDE_INST_MISSING: return "missing";
    case TIDE_INST_HEADER: return "header";
    case TIDE_INST_CAMERA: return "camera";
    case TIDE_INST_OVERRIDE: return "override";
    case TIDE_INST_DERIVED: return "derived";
    }
    return "?";
}

static int parse_number(const char *s, double *out) {
    char buf[96];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *p = buf; *p; p++) /* FITS allows a Fortran D exponent */
        if (*p == 'D' || *p == 'd')
            *p = 'E';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (end == buf || *end || errno == ERANGE || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

/* The value of "[+-]A[:B[:C]]" in A's unit and the number of parts. Separators are ':' or
 * blanks, or the unit letters of "10h30m05s" / "-5d30m12s" / 5°30'12" written in ASCII. */
static int sexagesimal_parts(const char *s, double *out, int *nparts) {
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    const int neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    double part[3] = {0, 0, 0};
    int n = 0;
    while (*p && n < 3) {
        char *end;
        errno = 0;
        if (!isdigit((unsigned char)*p) && *p != '.')
            break;
        const double v = strtod(p, &end);
        if (end == p || errno == ERANGE || !(v >= 0))
            break;
        part[n++] = v;
        p = end;
        if (strchr(": hdms'\"", *p) && *p) {
            while (*p && strchr(": hdms'\"", *p))
                p++;
        } else {
            break;
        }
    }
    while (isspace((unsigned char)*p))
        p++;
    /* minutes and seconds must be below 60 and only the last part may have a fraction */
    int ok = n >= 1 && !*p;
    for (int i = 1; ok && i < n; i++)
        ok = part[i] < 60.0;
    for (int i = 0; ok && i + 1 < n; i++)
        ok = part[i] == floor(part[i]);
    if (!ok)
        return tide_error(TIDE_E_FORMAT, "'%s' is not an angle", s);
    const double v = part[0] + part[1] / 60.0 + part[2] / 3600.0;
    *out = neg ? -v : v;
    *nparts = n;
    return TIDE_OK;
}

int tide_parse_sexagesimal(const char *s, double *out) {
    if (!s || !out)
        return tide_error(TIDE_E_INVAL, "tide_parse_sexagesimal: NULL argument");
    int n;
    return sexagesimal_parts(s, out, &n);
}

int tide_parse_angle(const char *s, int hours, double *deg) {
    if (!s || !deg)
        return tide_error(TIDE_E_INVAL, "tide_parse_angle: NULL argument");
    double v;
    int n;
    const int st = sexagesimal_parts(s, &v, &n);
    if (st)
        return st;
    /* a plain number is degrees whatever the quantity; sexagesimal RA is in hours */
    *deg = n > 1 && hours ? 15.0 * v : v;
    return TIDE_OK;
}

/* Range of a camera key from the schema (lo, hi, lo_open). */
static void camera_range(const char *name, double *lo, double *hi, int *lo_open) {
    int n;
    const tide_config_key *k = tide_config_schema(&n);
    *lo = -INFINITY, *hi = INFINITY, *lo_open = 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].section, "camera") && !strcmp(k[i].name, name)) {
            *lo = k[i].lo, *hi = k[i].hi, *lo_open = k[i].lo_open;
            return;
        }
}

/* Read the header value of quantity @p q into @p inst. Returns 1 if found, 0 if the keyword is
 * absent or has no value (FITS: undefined), or a negative status for an unusable value. */
static int from_header(const quantity *q, const tide_header *hdr, const char *kw,
                       const char *source, tide_instrument *inst) {
    char text[96];
    int st = tide_header_get_str(hdr, kw, text, (int)sizeof text);
    if (st) {
        tide_error_clear();
        return 0;
    }
    char *base = (char *)inst;
    double v;
    const char *want = NULL;
    switch (q->kind) {
    case Q_STR: snprintf(base + q->off, 72, "%s", text); return 1;
    case Q_NUM:
        if (!parse_number(text, &v))
            want = "a number";
        break;
    case Q_INT:
        if (!parse_number(text, &v) || v != floor(v) || fabs(v) > 9e15)
            want = "an integer";
        break;
    case Q_RA:
    case Q_DEC:
        /* a plain number is degrees; a sexagesimal RA is in hours */
        if (parse_number(text, &v))
            break;
        if (tide_parse_sexagesimal(text, &v)) {
            tide_error_clear();
            want = "a number or a sexagesimal angle";
        } else if (q->kind == Q_RA) {
            v *= 15.0;
        }
        break;
    }
    if (want)
        return tide_error(TIDE_E_FORMAT,
                          "%s: header keyword %s = '%s' is not %s (keywords.%s: "
                          "set it to null to use the camera value)",
                          source, kw, text, want, q->name);
    double lo = q->lo, hi = q->hi;
    int lo_open = 0;
    if (q->camera)
        camera_range(q->camera, &lo, &hi, &lo_open);
    int below = lo_open ? !(v > lo) : !(v >= lo);
    if (below || !(v <= hi)) {
        char range[64];
        if (isinf(hi))
            snprintf(range, sizeof range, "%s %g", lo_open ? ">" : ">=", lo);
        else
            snprintf(range, sizeof range, "%s %g and <= %g", lo_open ? ">" : ">=", lo, hi);
        return tide_error(TIDE_E_RANGE,
                          "%s: header keyword %s = '%s' is out of range for %s "
                          "(must be %s; keywords.%s: set it to null to use the camera value)",
                          source, kw, text, q->name, range, q->name);
    }
    if (q->kind == Q_INT)
        *(int64_t *)(void *)(base + q->off) = (int64_t)v;
    else
        *(double *)(void *)(base + q->off) = v;
    return 1;
}

/* Take the camera value of quantity @p q; 1 if set. */
static int from_camera(const quantity *q, const tide_config *cfg, tide_instrument *inst) {
    char key[64];
    snprintf(key, sizeof key, "camera.%s", q->camera);
    if (!tide_config_is_set(cfg, key))
        return 0;
    char *base = (char *)inst;
    int st = TIDE_OK;
    if (q->kind == Q_STR) {
        const char *s = NULL;
        st = tide_config_get_str(cfg, key, &s);
        if (!st)
            snprintf(base + q->off, 72, "%s", s);
    } else if (q->kind == Q_INT) {
        st = tide_config_get_int(cfg, key, (int64_t *)(void *)(base + q->off));
    } else {
        st = tide_config_get_dbl(cfg, key, (double *)(void *)(base + q->off));
    }
    return st ? st : 1;
}

/* The ceiling of an 8- or 16-bit integer image's values (instrument.h), or NaN: a scaled
 * (BSCALE != 1) or wider type has no ceiling a detector reaches. */
static double integer_ceiling(const tide_header *hdr) {
    int64_t bitpix = 0;
    double bscale = 1.0, bzero = 0.0;
    if (tide_header_find(hdr, "BITPIX") < 0 || tide_header_get_int(hdr, "BITPIX", &bitpix))
        return NAN;
    if (tide_header_find(hdr, "BSCALE") >= 0 && tide_header_get_dbl(hdr, "BSCALE", &bscale))
        return NAN;
    if (tide_header_find(hdr, "BZERO") >= 0 && tide_header_get_dbl(hdr, "BZERO", &bzero))
        return NAN;
    if (bscale != 1.0 || (bitpix != 8 && bitpix != 16))
        return NAN;
    return (bitpix == 8 ? 255.0 : 32767.0) + bzero;
}

int tide_instrument_resolve(const tide_config *cfg, const tide_header *hdr, const char *source,
                            tide_instrument *out) {
    if (!cfg || !out)
        return tide_error(TIDE_E_INVAL, "tide_instrument_resolve: NULL argument");
    if (!source)
        source = "frame";
    tide_instrument inst;
    memset(&inst, 0, sizeof inst);
    inst.exptime = inst.gain = inst.rdnoise = inst.saturate = inst.pixsize_um = NAN;
    inst.focallen_mm = inst.pixscale_arcsec = inst.ra_deg = inst.dec_deg = NAN;
    inst.mjdobs = inst.airmass = NAN;
    const char *name = NULL;
    if (tide_config_get_str(cfg, "instrument.name", &name) == TIDE_OK)
        snprintf(inst.name, sizeof inst.name, "%s", name);
    tide_error_clear();

    for (int i = 0; i < NQ; i++) {
        const quantity *q = &quantities[i];
        if (q->id == TIDE_INST_PIXSCALE)
            continue;
        char key[64];
        const char *kw = NULL;
        snprintf(key, sizeof key, "keywords.%s", q->name);
        if (tide_config_is_set(cfg, key) && tide_config_get_str(cfg, key, &kw) == TIDE_OK)
            snprintf(inst.keyword[q->id], sizeof inst.keyword[q->id], "%s", kw);

        tide_config_origin o = {TIDE_CONFIG_BUILTIN, NULL, 0, 0};
        if (q->camera) {
            snprintf(key, sizeof key, "camera.%s", q->camera);
            tide_config_origin_of(cfg, key, &o);
        }
        int st = 0;
        if (q->camera && o.layer == TIDE_CONFIG_OVERRIDE && (st = from_camera(q, cfg, &inst)) > 0)
            inst.source[q->id] = TIDE_INST_OVERRIDE;
        else if (st == 0 && hdr && inst.keyword[q->id][0] &&
                 (st = from_header(q, hdr, inst.keyword[q->id], source, &inst)) > 0)
            inst.source[q->id] = TIDE_INST_HEADER;
        else if (st == 0 && q->camera && (st = from_camera(q, cfg, &inst)) > 0)
            inst.source[q->id] = TIDE_INST_CAMERA;
        if (st < 0)
            return st;
    }
    if (!inst.source[TIDE_INST_SATURATE] && hdr) {
        inst.saturate = integer_ceiling(hdr);
        if (isfinite(inst.saturate))
            inst.source[TIDE_INST_SATURATE] = TIDE_INST_DERIVED;
        tide_error_clear(); /* a malformed BITPIX/BSCALE/BZERO is the reader's to report */
    }
    /* The camera's pixel size is unbinned; the frame's pixel is binned (instrument.h). */
    if (inst.source[TIDE_INST_PIXSIZE] == TIDE_INST_CAMERA ||
        inst.source[TIDE_INST_PIXSIZE] == TIDE_INST_OVERRIDE)
        inst.pixsize_um *= (double)(inst.xbinning > 0 ? inst.xbinning : 1);
    if (inst.source[TIDE_INST_PIXSIZE] && inst.source[TIDE_INST_FOCALLEN]) {
        /* small-angle plate scale: theta = pixel / focal length (both in mm) */
        inst.pixscale_arcsec = ARCSEC_PER_RAD * (inst.pixsize_um * 1e-3) / inst.focallen_mm;
        inst.source[TIDE_INST_PIXSCALE] = TIDE_INST_DERIVED;
    }
    *out = inst;
    return TIDE_OK;
}

int tide_instrument_write_json(const tide_instrument *inst, FILE *f, int indent) {
    if (!inst || !f)
        return tide_error(TIDE_E_INVAL, "tide_instrument_write_json: NULL argument");
    const char *base = (const char *)inst;
    fputc('{', f);
    for (int i = 0; i < NQ; i++) {
        const quantity *q = &quantities[i];
        fprintf(f, "%s\n%*s\"%s\": {\"value\": ", i ? "," : "", indent + 2, "", q->name);
        if (!inst->source[q->id])
            fputs("null", f);
        else if (q->kind == Q_STR)
            tide_cfg_json_string(f, base + q->off);
        else if (q->kind == Q_INT)
            fprintf(f, "%lld", (long long)*(const int64_t *)(const void *)(base + q->off));
        else
            tide_cfg_json_number(f, *(const double *)(const void *)(base + q->off), 1);
        fprintf(f, ", \"source\": \"%s\", \"keyword\": ",
                tide_instrument_source_name(inst->source[q->id]));
        if (inst->keyword[q->id][0])
            tide_cfg_json_string(f, inst->keyword[q->id]);
        else
            fputs("null", f);
        fputc('}', f);
    }
    fprintf(f, "\n%*s}", indent, "");
    return ferror(f) ? tide_error(TIDE_E_IO, "instrument: write failed") : TIDE_OK;
}
