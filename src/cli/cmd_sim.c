/* cmd_sim.c — `tide sim`: simulate a realistic frame (and optionally a second epoch) with its
 * truth catalog and a reference catalog. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim_write.h"

typedef enum { OPT_DBL, OPT_I64, OPT_U64, OPT_INT, OPT_STR, OPT_OFF } opt_kind;

typedef struct {
    const char *name, *arg;
    opt_kind kind;
    size_t off; /* offset into tide_sim_params */
    size_t len; /* for strings */
    const char *help;
} sim_opt;

#define P(f) offsetof(tide_sim_params, f)
static const sim_opt sim_opts[] = {
    {"--seed", "N", OPT_U64, P(seed), 0, "random seed"},
    {"--width", "N", OPT_I64, P(width), 0, "frame width, pixels"},
    {"--height", "N", OPT_I64, P(height), 0, "frame height, pixels"},
    {"--nstars", "N", OPT_I64, P(nstars), 0, "stars inside the frame"},
    {"--ngal", "N", OPT_I64, P(ngalaxies), 0, "Sersic galaxies inside the frame"},
    {"--mag-bright", "MAG", OPT_DBL, P(mag_bright), 0, "brightest star"},
    {"--mag-faint", "MAG", OPT_DBL, P(mag_faint), 0, "faintest star"},
    {"--lf-alpha", "A", OPT_DBL, P(lf_alpha), 0, "luminosity function dN/dm ~ 10^(A m)"},
    {"--zp", "MAG", OPT_DBL, P(zeropoint), 0, "zero point: magnitude giving 1 e-/s"},
    {"--exptime", "S", OPT_DBL, P(exptime), 0, "exposure time, s"},
    {"--gain", "G", OPT_DBL, P(gain), 0, "gain, e-/ADU"},
    {"--rdnoise", "E", OPT_DBL, P(rdnoise), 0, "read noise, e-"},
    {"--bias", "ADU", OPT_DBL, P(bias), 0, "bias level, ADU"},
    {"--fullwell", "E", OPT_DBL, P(fullwell), 0, "full well, e- (SATURATE = bias+fullwell/gain)"},
    {"--sky", "ADU", OPT_DBL, P(sky), 0, "sky at the centre, ADU/pixel"},
    {"--sky-grad", "F", OPT_DBL, P(sky_grad), 0, "linear sky gradient, fraction centre->edge"},
    {"--sky-quad", "F", OPT_DBL, P(sky_quad), 0, "quadratic sky term, fraction at corners"},
    {"--fwhm", "PX", OPT_DBL, P(fwhm), 0, "PSF FWHM at the centre, pixels"},
    {"--fwhm-var", "F", OPT_DBL, P(fwhm_var), 0, "fractional FWHM increase at the corners"},
    {"--beta", "B", OPT_DBL, P(beta), 0, "Moffat beta"},
    {"--ellip", "E", OPT_DBL, P(ellip), 0, "PSF ellipticity at the centre"},
    {"--ellip-var", "E", OPT_DBL, P(ellip_var), 0, "added radial ellipticity at the corners"},
    {"--psf-theta", "DEG", OPT_DBL, P(psf_theta), 0, "PSF angle at the centre, deg from +x"},
    {"--ra", "DEG", OPT_DBL, P(ra), 0, "pointing RA"},
    {"--dec", "DEG", OPT_DBL, P(dec), 0, "pointing Dec"},
    {"--rotation", "DEG", OPT_DBL, P(rotation), 0, "position angle of the frame"},
    {"--focal", "MM", OPT_DBL, P(focal_mm), 0, "focal length, mm"},
    {"--pixsize", "UM", OPT_DBL, P(pixsize_um), 0, "pixel size, microns"},
    {"--sip-order", "N", OPT_INT, P(sip_order), 0, "SIP distortion order: 0, 2 or 3"},
    {"--sip-amp", "PX", OPT_DBL, P(sip_amp), 0, "distortion at the corners, pixels"},
    {"--cr-rate", "R", OPT_DBL, P(cr_rate), 0, "cosmic rays per cm^2 per minute"},
    {"--nhot", "N", OPT_I64, P(nhot), 0, "hot pixels (0 = one per 40000 pixels)"},
    {"--nbadcols", "N", OPT_I64, P(nbadcols), 0, "bad columns"},
    {"--color-term", "C", OPT_DBL, P(color_term), 0, "MAG_frame = REF_MAG + C * COLOR"},
    {"--ref-maglim", "MAG", OPT_DBL, P(ref_maglim), 0, "faintest reference-catalog star"},
    {"--filter", "NAME", OPT_STR, P(filter), sizeof(((tide_sim_params *)0)->filter), "FILTER"},
    {"--date-obs", "ISO", OPT_STR, P(date_obs), sizeof(((tide_sim_params *)0)->date_obs),
     "DATE-OBS of epoch 1 (UTC)"},
    {"--no-noise", NULL, OPT_OFF, P(noise), 0, "expected values: no Poisson/read noise"},
    {"--no-defects", NULL, OPT_OFF, P(defects), 0, "no cosmic rays, hot pixels, bad columns"},
    {"--e2-dra", "AS", OPT_DBL, P(e2_dra), 0, "epoch 2: pointing offset RA*cos(Dec), arcsec"},
    {"--e2-ddec", "AS", OPT_DBL, P(e2_ddec), 0, "epoch 2: pointing offset Dec, arcsec"},
    {"--e2-rotation", "DEG", OPT_DBL, P(e2_rotation), 0, "epoch 2: added rotation"},
    {"--e2-fwhm-scale", "F", OPT_DBL, P(e2_fwhm_scale), 0, "epoch 2: seeing ratio"},
    {"--e2-transparency", "F", OPT_DBL, P(e2_transparency), 0, "epoch 2: transparency"},
    {"--e2-dt", "H", OPT_DBL, P(e2_dt_hours), 0, "epoch 2: hours after epoch 1"},
    {"--nmoving", "N", OPT_I64, P(e2_nmoving), 0, "moving objects"},
    {"--ntransient", "N", OPT_I64, P(e2_ntransient), 0, "transients new in epoch 2"},
    {"--nvariable", "N", OPT_I64, P(e2_nvariable), 0, "variable stars"},
    {"--nsatellite", "N", OPT_I64, P(e2_nsatellite), 0, "satellite trails across epoch 2"},
    {"--moving-rate", "AS/H", OPT_DBL, P(moving_rate), 0, "moving-object speed, arcsec/hour"},
};
#undef P
static const int n_sim_opts = (int)(sizeof sim_opts / sizeof sim_opts[0]);

static void print_help(void) {
    tide_sim_params d;
    tide_sim_params_default(&d);
    printf("usage: tide sim [-o FRAME.fits] [--truth T.fits] [--refcat R.fits]\n"
           "                [--epoch2 FRAME2.fits [--truth2 T2.fits]] [OPTIONS]\n\n"
           "Simulate a realistic frame with known truth, deterministic for a seed: stars from a\n"
           "power-law luminosity function, a Moffat PSF varying over the field, Sersic galaxies,\n"
           "sky gradient, bias, gain, Poisson and read noise, saturation with bleed trails,\n"
           "cosmic rays, hot pixels, bad columns, and a TAN-SIP WCS. The frame is float32 ADU.\n"
           "Truth FLUX is in ADU above sky and bias (FLUX_E in electrons); X_TRUE/Y_TRUE are\n"
           "FITS 1-based. The reference catalog's MAG relates to the frame's filter through\n"
           "MAG_frame = MAG + color_term * COLOR. Runs on the CPU (OpenMP); the result does not\n"
           "depend on the number of threads.\n\noutputs:\n"
           "  -o, --output FILE       the frame [sim.fits]\n"
           "  --truth FILE            truth catalog of the frame (FITS table) [none]\n"
           "  --refcat FILE           reference catalog of the same sky (FITS table) [none]\n"
           "  --epoch2 FILE           also make a second epoch: offset, rotated, other seeing\n"
           "                          and transparency, a moving object, transients, variables\n"
           "  --truth2 FILE           truth catalog of the second epoch [none]\n"
           "  --mask                  add the truth defect mask as a MASK extension [off]\n"
           "  --ccds N                a mosaic exposure of N CCDs (1..%d) of --width x\n"
           "                          --height each: an empty primary with the exposure's\n"
           "                          keywords, then one image extension per CCD (EXTNAME\n"
           "                          CCD01..., CCDNUM, DETSEC, DATASEC, its own WCS) on a\n"
           "                          grid of the focal plane, stars from one sky; --nstars\n"
           "                          and --ngal are per CCD; --truth has one table per CCD\n"
           "                          [off: one frame]\n"
           "  --ccd-gap PX            gap between neighbouring CCDs, pixels [100]\n\n"
           "simulation options [defaults]:\n",
           TIDE_SIM_MAX_CCDS);
    for (int i = 0; i < n_sim_opts; i++) {
        const sim_opt *o = &sim_opts[i];
        const char *f = (const char *)&d + o->off;
        char def[64] = "";
        switch (o->kind) {
        case OPT_DBL: snprintf(def, sizeof def, "%g", *(const double *)f); break;
        case OPT_I64: snprintf(def, sizeof def, "%lld", (long long)*(const int64_t *)f); break;
        case OPT_U64:
            snprintf(def, sizeof def, "%llu", (unsigned long long)*(const uint64_t *)f);
            break;
        case OPT_INT: snprintf(def, sizeof def, "%d", *(const int *)f); break;
        case OPT_STR: snprintf(def, sizeof def, "%s", f); break;
        case OPT_OFF: snprintf(def, sizeof def, "off"); break;
        }
        char left[48];
        snprintf(left, sizeof left, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        printf("  %-23s %s [%s]\n", left, o->help, def);
    }
    printf("\n%s", tide_cli_common_help);
}

/* Parse one simulation option's value into the parameters. */
static int set_opt(const sim_opt *o, tide_sim_params *p, const char *v) {
    char *f = (char *)p + o->off, *end = NULL;
    errno = 0;
    switch (o->kind) {
    case OPT_DBL: {
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x))
            return -1;
        *(double *)f = x;
        return 0;
    }
    case OPT_I64:
    case OPT_INT: {
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || errno || x < 0 || (o->kind == OPT_INT && x > 1000))
            return -1;
        if (o->kind == OPT_INT)
            *(int *)f = (int)x;
        else
            *(int64_t *)f = x;
        return 0;
    }
    case OPT_U64: {
        if (v[0] == '-')
            return -1;
        unsigned long long x = strtoull(v, &end, 0);
        if (end == v || *end || errno)
            return -1;
        *(uint64_t *)f = x;
        return 0;
    }
    case OPT_STR:
        if (strlen(v) >= o->len)
            return -1;
        strcpy(f, v);
        return 0;
    case OPT_OFF: return 0;
    }
    return -1;
}

static int write_frame(const char *path, const tide_sim_frame *f) {
    return tide_fits_write_image(path, &f->image, &f->header);
}

static int write_table(const char *path, const tide_table *t, const tide_sim_frame *f,
                       const char *extname) {
    tide_header h;
    tide_header_init(&h);
    int st = tide_cli_sim_table_header(f ? &f->header : NULL, &h);
    if (!st)
        st = tide_fits_write_table(path, t, &h, extname);
    tide_header_free(&h);
    return st;
}

/* What --json reports about one written frame. */
typedef struct {
    const char *path;
    long long rows, saturated, cosmics;
    double render, noise, total, write;
} frame_summary;

static void summarize(frame_summary *m, const char *path, const tide_sim_frame *f, double w) {
    m->path = path;
    m->rows = (long long)f->truth.nrows;
    m->saturated = (long long)f->nsaturated;
    m->cosmics = (long long)f->ncosmics;
    m->render = f->ms_render / 1e3;
    m->noise = f->ms_noise / 1e3;
    m->total = f->ms_total / 1e3;
    m->write = w;
}

static void json_frame(const char *key, const frame_summary *m) {
    printf("  \"%s\": {\"path\": ", key);
    tide_cli_json_string(stdout, m->path);
    printf(", \"truth_rows\": %lld, \"saturated\": %lld, \"cosmics\": %lld, "
           "\"seconds\": {\"render\": %.3f, \"noise\": %.3f, \"epoch\": %.3f, "
           "\"write\": %.3f}},\n",
           m->rows, m->saturated, m->cosmics, m->render, m->noise, m->total, m->write);
}

/* `tide sim --ccds N`: the exposure (and a second epoch) written CCD by CCD. */
static int sim_mosaic(const tide_cli_common *com0, const tide_sim_params *p, int nccd, int64_t gap,
                      const char *out, const char *truth, const char *refcat, const char *out2,
                      const char *truth2) {
    const char *cmd = "sim";
    tide_cli_common com = *com0;
    com.ctx_opt.backend = TIDE_BACKEND_CPU; /* the simulator runs on the CPU */
    tide_ctx *ctx = tide_cli_make_ctx(&com, cmd);
    if (!ctx)
        return 1;
    tide_sim_mosaic *m = NULL;
    tide_table ref;
    tide_table_init(&ref);
    tide_cli_sim_mosaic_summary s1, s2;
    memset(&s1, 0, sizeof s1);
    memset(&s2, 0, sizeof s2);
    const double t0 = tide_now();
    int st = tide_sim_mosaic_make(ctx, p, nccd, gap, &m);
    if (!st)
        st = tide_cli_sim_mosaic_write(ctx, m, 1, out, truth, &s1);
    if (!st && refcat && !(st = tide_sim_refcat(tide_sim_mosaic_sky(m), &ref)))
        st = write_table(refcat, &ref, NULL, "REFCAT");
    if (!st && out2)
        st = tide_cli_sim_mosaic_write(ctx, m, 2, out2, truth2, &s2);
    int rc = 0;
    if (st) {
        rc = tide_cli_fail(cmd, st);
    } else if (com.json) {
        printf("{\n  \"command\": \"sim\",\n  \"seed\": %llu,\n  \"ccds\": %d,\n"
               "  \"width\": %lld,\n  \"height\": %lld,\n  \"gap\": %lld,\n"
               "  \"sky_objects\": %lld,\n  \"truth_rows\": %lld,\n  \"refcat_rows\": %lld,\n"
               "  \"seconds_total\": %.3f\n}\n",
               (unsigned long long)p->seed, nccd, (long long)p->width, (long long)p->height,
               (long long)gap, (long long)tide_sim_sky_count(tide_sim_mosaic_sky(m)), s1.rows,
               (long long)ref.nrows, tide_now() - t0);
    } else {
        printf("tide sim: %s: %d CCDs of %lld x %lld, %lld objects on them (%lld saturated), "
               "%lld cosmic rays, %.2f s\n",
               out, nccd, (long long)p->width, (long long)p->height, s1.rows, s1.saturated,
               s1.cosmics, s1.seconds);
        if (out2)
            printf("tide sim: %s: epoch 2, %lld objects on the CCDs, %.2f s\n", out2, s2.rows,
                   s2.seconds);
        printf("tide sim: total %.2f s on %d thread(s)\n", tide_now() - t0, ctx->threads);
    }
    tide_table_free(&ref);
    tide_sim_mosaic_free(m);
    tide_ctx_destroy(ctx);
    return rc;
}

int tide_cmd_sim(int argc, char **argv) {
    const char *cmd = "sim";
    tide_cli_common com;
    tide_cli_common_init(&com);
    tide_sim_params p;
    tide_sim_params_default(&p);
    const char *out = "sim.fits", *truth = NULL, *refcat = NULL, *out2 = NULL, *truth2 = NULL;
    int nccd = 0;
    int64_t gap = 100;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help();
            return 0;
        }
        int r = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        if (!strcmp(a, "--mask")) {
            p.with_mask = 1;
            continue;
        }
        if (!strcmp(a, "--ccds") || !strcmp(a, "--ccd-gap")) {
            double v;
            const int ccds = !strcmp(a, "--ccds");
            if (i + 1 >= argc)
                return tide_cli_usage_error(cmd, "option %s needs a value", a);
            if (tide_cli_parse_range(cmd, a, argv[++i], ccds ? 1 : 0,
                                     ccds ? TIDE_SIM_MAX_CCDS : 100000, &v))
                return 2;
            if (v != floor(v))
                return tide_cli_usage_error(cmd, "%s needs a whole number (got '%s')", a, argv[i]);
            if (ccds)
                nccd = (int)v;
            else
                gap = (int64_t)v;
            continue;
        }
        const char **dst = !strcmp(a, "-o") || !strcmp(a, "--output") ? &out
                           : !strcmp(a, "--truth")                    ? &truth
                           : !strcmp(a, "--refcat")                   ? &refcat
                           : !strcmp(a, "--epoch2")                   ? &out2
                           : !strcmp(a, "--truth2")                   ? &truth2
                                                                      : NULL;
        if (dst) {
            if (i + 1 >= argc)
                return tide_cli_usage_error(cmd, "option %s needs a file name", a);
            *dst = argv[++i];
            continue;
        }
        const sim_opt *o = NULL;
        for (int k = 0; k < n_sim_opts && !o; k++)
            if (!strcmp(a, sim_opts[k].name))
                o = &sim_opts[k];
        if (!o)
            return tide_cli_usage_error(cmd, "unknown option '%s'", a);
        if (o->kind == OPT_OFF) {
            *(int *)((char *)&p + o->off) = 0;
            continue;
        }
        if (i + 1 >= argc)
            return tide_cli_usage_error(cmd, "option %s needs a value", a);
        if (set_opt(o, &p, argv[++i]))
            return tide_cli_usage_error(cmd, "bad value '%s' for %s", argv[i], a);
    }
    if (truth2 && !out2)
        return tide_cli_usage_error(cmd, "--truth2 needs --epoch2");
    const char *const outs[] = {out, truth, refcat, out2, truth2};
    if (tide_cli_check_outputs(cmd, NULL, 0, outs, 5))
        return 1;
    int st = tide_sim_params_check(&p);
    if (st)
        return tide_cli_usage_error(cmd, "%s", tide_error_detail());
    if (nccd > 0 && p.with_mask)
        return tide_cli_usage_error(cmd, "--mask is for one frame: a mosaic's CCDs have no "
                                         "MASK planes");
    if (nccd > 0)
        return sim_mosaic(&com, &p, nccd, gap, out, truth, refcat, out2, truth2);
    /* The simulator runs on the CPU; the context gives it threads and logging. */
    com.ctx_opt.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = tide_cli_make_ctx(&com, cmd);
    if (!ctx)
        return 1;
    const double t0 = tide_now();
    tide_sim_sky *sky = NULL;
    tide_sim_frame f1, f2;
    tide_table ref;
    memset(&f1, 0, sizeof f1);
    memset(&f2, 0, sizeof f2);
    tide_table_init(&ref);
    frame_summary m1, m2;
    memset(&m1, 0, sizeof m1);
    memset(&m2, 0, sizeof m2);
    st = tide_sim_sky_make(ctx, &p, &sky);
    const double tsky = tide_now() - t0;
    if (!st)
        st = tide_sim_epoch(ctx, sky, 1, &f1);
    if (!st) {
        double tw = tide_now();
        st = write_frame(out, &f1);
        if (!st && truth)
            st = write_table(truth, &f1.truth, &f1, "TRUTH");
        summarize(&m1, out, &f1, tide_now() - tw);
    }
    if (!st && refcat && !(st = tide_sim_refcat(sky, &ref)))
        st = write_table(refcat, &ref, NULL, "REFCAT");
    if (!st && out2) {
        tide_sim_frame_free(ctx, &f1); /* keep the peak memory at one frame */
        st = tide_sim_epoch(ctx, sky, 2, &f2);
        if (!st) {
            double tw = tide_now();
            st = write_frame(out2, &f2);
            if (!st && truth2)
                st = write_table(truth2, &f2.truth, &f2, "TRUTH");
            summarize(&m2, out2, &f2, tide_now() - tw);
        }
    }
    const double total = tide_now() - t0;
    int rc = 0;
    if (st) {
        rc = tide_cli_fail(cmd, st);
    } else if (com.json) {
        printf("{\n  \"command\": \"sim\",\n  \"seed\": %llu,\n  \"threads\": %d,\n"
               "  \"width\": %lld,\n  \"height\": %lld,\n  \"sky_objects\": %lld,\n"
               "  \"stars_in_frame\": %lld,\n  \"galaxies\": %lld,\n  \"refcat_rows\": %lld,\n"
               "  \"seconds_sky\": %.3f,\n",
               (unsigned long long)p.seed, ctx->threads, (long long)p.width, (long long)p.height,
               (long long)tide_sim_sky_count(sky), (long long)p.nstars, (long long)p.ngalaxies,
               (long long)ref.nrows, tsky);
        json_frame("frame", &m1);
        if (out2)
            json_frame("epoch2", &m2);
        printf("  \"seconds_total\": %.3f\n}\n", total);
    } else {
        printf("tide sim: %s: %lld x %lld, %lld objects in the frame (%lld saturated), "
               "%lld cosmic rays, %.2f s\n",
               out, (long long)p.width, (long long)p.height, m1.rows, m1.saturated, m1.cosmics,
               m1.total);
        if (out2)
            printf("tide sim: %s: epoch 2, %lld objects in the frame, %.2f s\n", out2, m2.rows,
                   m2.total);
        printf("tide sim: total %.2f s on %d thread(s)\n", total, ctx->threads);
    }
    tide_sim_frame_free(ctx, &f1);
    tide_sim_frame_free(ctx, &f2);
    tide_table_free(&ref);
    tide_sim_sky_free(sky);
    tide_ctx_destroy(ctx);
    return rc;
}
