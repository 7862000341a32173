/* cmd_info.c — `tide info FILE`: what a FITS file holds. Every HDU (type, EXTNAME, BITPIX,
 * shape, compression), the image tide would read (the first HDU holding one, or the one the
 * spec names), its WCS summary and the header values an observer looks for first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tide/fits.h"
#include "tide/wcs.h"

static const char *help =
    "usage: tide info FILE [--json]\n"
    "\n"
    "Describe a FITS file: every HDU (number, type, EXTNAME, BITPIX, shape, tile compression),\n"
    "the image tide reads from it (the first HDU that holds an image, or the one FILE[N] /\n"
    "FILE[EXTNAME] names, optionally with a section [x1:x2,y1:y2]), its WCS (centre, pixel\n"
    "scale, rotation, field of view, distortion) and the values of OBJECT, FILTER, EXPTIME,\n"
    "GAIN, RDNOISE, SATURATE, DATE-OBS, TELESCOP and INSTRUME when present (looked up in the\n"
    "image's HDU, then in the primary header).\n"
    "A file without any image is described too; naming a table or an empty HDU as the image,\n"
    "or a missing, non-FITS or truncated file, is an error (exit 1).\n"
    "\n"
    "options:\n"
    "  --json                   print one JSON document on stdout\n"
    "  --help                   this text\n";

static const char *const key_names[] = {"OBJECT",   "FILTER",   "EXPTIME",  "GAIN",    "RDNOISE",
                                        "SATURATE", "DATE-OBS", "TELESCOP", "INSTRUME"};
enum { NKEYS = (int)(sizeof key_names / sizeof key_names[0]) };

/* What info found, gathered before anything is printed so that a failure prints nothing. */
typedef struct info {
    const char *spec;
    tide_fits_hdu *hdus;
    int nhdu;
    int image_hdu; /* -1: no image in the file */
    int64_t width, height;
    tide_wcs_summary wcs;
    int has_wcs;
    char wcs_note[512]; /* why there is no WCS summary when the header has one we cannot use */
    char key_val[NKEYS][80];
    int key_is_num[NKEYS];
    double key_num[NKEYS];
    int key_found[NKEYS];
} info;

static const char *bitpix_type(int bitpix, double bscale, double bzero) {
    if (bitpix == 16 && bscale == 1.0 && bzero == 32768.0)
        return "uint16";
    if (bitpix == 32 && bscale == 1.0 && bzero == 2147483648.0)
        return "uint32";
    if (bitpix == 8 && bscale == 1.0 && bzero == -128.0)
        return "int8";
    if (bscale != 1.0 || bzero != 0.0)
        return "scaled integer";
    switch (bitpix) {
    case 8: return "uint8";
    case 16: return "int16";
    case 32: return "int32";
    case 64: return "int64";
    case -32: return "float32";
    case -64: return "float64";
    }
    return "?";
}

static void shape_text(const tide_fits_hdu *d, char *out, size_t n) {
    if (d->kind == TIDE_HDU_BINTABLE || d->kind == TIDE_HDU_ASCIITABLE) {
        snprintf(out, n, "%lld rows x %d cols", (long long)d->nrows, d->ncols);
        return;
    }
    if (d->naxis == 0) {
        snprintf(out, n, "-");
        return;
    }
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < d->naxis && i < 9 && len < n; i++)
        len +=
            (size_t)snprintf(out + len, n - len, "%s%lld", i ? " x " : "", (long long)d->naxes[i]);
}

static void sexagesimal(double deg, int hours, char *out, size_t n) {
    double v = hours ? deg / 15.0 : fabs(deg);
    int a = (int)v;
    int b = (int)((v - a) * 60.0);
    double c = ((v - a) * 60.0 - b) * 60.0;
    if (c >= 59.995) { /* keep 60.00 from printing */
        c = 0;
        if (++b == 60) {
            b = 0;
            a++;
        }
    }
    if (hours)
        snprintf(out, n, "%02d:%02d:%05.2f", a, b, c);
    else
        snprintf(out, n, "%c%02d:%02d:%04.1f", deg < 0 ? '-' : '+', a, b, c);
}

/* Header values: from the image's HDU, then (INHERIT-style) from the primary header. */
static void gather_keys(info *in, const tide_header *img) {
    tide_header prim;
    int have_prim = in->image_hdu > 0 && !tide_fits_read_hdu_header(in->spec, 0, &prim);
    for (int k = 0; k < NKEYS; k++) {
        const tide_header *h = img;
        if (!h || tide_header_find(h, key_names[k]) < 0)
            h = have_prim ? &prim : NULL;
        if (!h || tide_header_get_str(h, key_names[k], in->key_val[k], sizeof in->key_val[k]))
            continue;
        in->key_found[k] = 1;
        in->key_is_num[k] = !tide_header_get_dbl(h, key_names[k], &in->key_num[k]);
    }
    if (have_prim)
        tide_header_free(&prim);
    tide_error_clear();
}

static void gather_wcs(info *in, const tide_header *hdr) {
    char source[600];
    snprintf(source, sizeof source, "%s[HDU %d]", in->spec, in->image_hdu);
    tide_wcs *w = NULL;
    int st = tide_wcs_from_header(hdr, source, &w);
    if (!st)
        st = tide_wcs_summarize(w, in->width, in->height, &in->wcs);
    if (!st)
        in->has_wcs = 1;
    else if (st != TIDE_E_NOTFOUND)
        snprintf(in->wcs_note, sizeof in->wcs_note, "%s: %s", tide_strerror(st),
                 tide_error_detail());
    tide_wcs_free(w);
    tide_error_clear();
}

static int gather(info *in) {
    int st = tide_fits_inventory(in->spec, &in->hdus, &in->nhdu);
    if (st)
        return st;
    tide_header hdr;
    st = tide_fits_read_image_header(in->spec, &hdr, &in->image_hdu, &in->width, &in->height);
    if (st == TIDE_E_NOTFOUND && !strchr(in->spec, '[')) {
        in->image_hdu = -1; /* a file of tables: describe it all the same */
        tide_error_clear();
        gather_keys(in, NULL);
        return TIDE_OK;
    }
    if (st)
        return st;
    gather_wcs(in, &hdr);
    gather_keys(in, &hdr);
    tide_header_free(&hdr);
    return TIDE_OK;
}

static const tide_fits_hdu *image_entry(const info *in) {
    for (int i = 0; i < in->nhdu; i++)
        if (in->hdus[i].index == in->image_hdu)
            return &in->hdus[i];
    return NULL;
}

static void print_text(const info *in) {
    printf("%s: %d HDU%s\n", in->spec, in->nhdu, in->nhdu == 1 ? "" : "s");
    printf("  %3s  %-16s  %-18s  %6s  %-20s  %s\n", "HDU", "type", "EXTNAME", "BITPIX", "shape",
           "compression");
    for (int i = 0; i < in->nhdu; i++) {
        const tide_fits_hdu *d = &in->hdus[i];
        char shape[128], comp[160] = "";
        shape_text(d, shape, sizeof shape);
        if (d->kind == TIDE_HDU_COMPRESSED) {
            size_t len = (size_t)snprintf(comp, sizeof comp, "%s, tile", d->compression);
            for (int a = 0; a < d->naxis && a < 9 && len < sizeof comp; a++)
                len += (size_t)snprintf(comp + len, sizeof comp - len, "%s%lld", a ? " x " : " ",
                                        (long long)d->tile[a]);
            if (d->quantize[0] && len < sizeof comp)
                snprintf(comp + len, sizeof comp - len, ", %s", d->quantize);
        }
        printf("  %3d  %-16s  %-18s  %6d  %-20s  %s\n", d->index, tide_hdu_kind_name(d->kind),
               d->extname[0] ? d->extname : "-", d->bitpix, shape, comp[0] ? comp : "-");
    }
    const tide_fits_hdu *im = image_entry(in);
    if (in->image_hdu < 0) {
        printf("image     none (no HDU holds an image)\n");
    } else {
        printf("image     HDU %d: %lld x %lld pixels", in->image_hdu, (long long)in->width,
               (long long)in->height);
        if (im) {
            printf(", BITPIX %d (%s", im->bitpix, bitpix_type(im->bitpix, im->bscale, im->bzero));
            if (im->bscale != 1.0 || im->bzero != 0.0)
                printf(", BSCALE %.12g BZERO %.12g", im->bscale, im->bzero);
            printf(")%s", im->has_blank ? ", BLANK set" : "");
        }
        printf("\n");
    }
    if (in->has_wcs) {
        const tide_wcs_summary *w = &in->wcs;
        char ra[32], dec[32];
        sexagesimal(w->ra_center, 1, ra, sizeof ra);
        sexagesimal(w->dec_center, 0, dec, sizeof dec);
        printf("WCS       %s %s", w->ctype1, w->ctype2);
        if (w->radesys[0])
            printf(", %s", w->radesys);
        if (isfinite(w->equinox))
            printf(" equinox %.1f", w->equinox);
        printf("%s%s\n", w->has_sip ? ", SIP distortion" : "",
               w->has_tpv ? ", TPV distortion" : "");
        printf("          centre %.6f %+.6f deg (%s %s)\n", w->ra_center, w->dec_center, ra, dec);
        printf("          scale %.4f arcsec/pixel, rotation %.3f deg E of N, field %.3f x %.3f "
               "arcmin\n",
               w->scale_arcsec, w->rotation_deg, w->fov_x_deg * 60.0, w->fov_y_deg * 60.0);
    } else if (in->image_hdu >= 0) {
        printf("WCS       %s\n", in->wcs_note[0] ? in->wcs_note : "none");
    }
    int shown = 0;
    for (int k = 0; k < NKEYS; k++) {
        if (!in->key_found[k])
            continue;
        printf("%-9s %-8s = %s\n", shown++ ? "" : "keys", key_names[k], in->key_val[k]);
    }
}

static void json_num(double v) {
    if (isfinite(v))
        printf("%.15g", v);
    else
        printf("null");
}

static void print_json(const info *in) {
    printf("{\n  \"file\": ");
    tide_cli_json_string(stdout, in->spec);
    printf(",\n  \"hdus\": [");
    for (int i = 0; i < in->nhdu; i++) {
        const tide_fits_hdu *d = &in->hdus[i];
        printf("%s\n    {\"index\": %d, \"type\": ", i ? "," : "", d->index);
        tide_cli_json_string(stdout, tide_hdu_kind_name(d->kind));
        printf(", \"extname\": ");
        tide_cli_json_string(stdout, d->extname);
        printf(", \"bitpix\": %d, \"shape\": [", d->bitpix);
        for (int a = 0; a < d->naxis && a < 9; a++)
            printf("%s%lld", a ? ", " : "", (long long)d->naxes[a]);
        printf("]");
        if (d->kind == TIDE_HDU_BINTABLE || d->kind == TIDE_HDU_ASCIITABLE)
            printf(", \"rows\": %lld, \"columns\": %d", (long long)d->nrows, d->ncols);
        else
            printf(", \"bscale\": %.15g, \"bzero\": %.15g, \"blank\": %s", d->bscale, d->bzero,
                   d->has_blank ? "true" : "false");
        if (d->kind == TIDE_HDU_COMPRESSED) {
            printf(", \"compression\": ");
            tide_cli_json_string(stdout, d->compression);
            printf(", \"tile\": [");
            for (int a = 0; a < d->naxis && a < 9; a++)
                printf("%s%lld", a ? ", " : "", (long long)d->tile[a]);
            printf("], \"quantize\": ");
            if (d->quantize[0])
                tide_cli_json_string(stdout, d->quantize);
            else
                printf("null");
        } else {
            printf(", \"compression\": null");
        }
        printf("}");
    }
    printf("\n  ],\n  \"image\": ");
    if (in->image_hdu < 0)
        printf("null");
    else
        printf("{\"hdu\": %d, \"width\": %lld, \"height\": %lld}", in->image_hdu,
               (long long)in->width, (long long)in->height);
    printf(",\n  \"wcs\": ");
    if (in->has_wcs) {
        const tide_wcs_summary *w = &in->wcs;
        printf("{\"ctype1\": ");
        tide_cli_json_string(stdout, w->ctype1);
        printf(", \"ctype2\": ");
        tide_cli_json_string(stdout, w->ctype2);
        printf(", \"radesys\": ");
        tide_cli_json_string(stdout, w->radesys);
        printf(", \"equinox\": ");
        json_num(w->equinox);
        printf(",\n          \"ra_center\": ");
        json_num(w->ra_center);
        printf(", \"dec_center\": ");
        json_num(w->dec_center);
        printf(", \"scale_arcsec\": ");
        json_num(w->scale_arcsec);
        printf(", \"rotation_deg\": ");
        json_num(w->rotation_deg);
        printf(",\n          \"fov_x_deg\": ");
        json_num(w->fov_x_deg);
        printf(", \"fov_y_deg\": ");
        json_num(w->fov_y_deg);
        printf(", \"sip\": %s, \"tpv\": %s}", w->has_sip ? "true" : "false",
               w->has_tpv ? "true" : "false");
    } else {
        printf("null");
    }
    if (in->wcs_note[0]) {
        printf(",\n  \"wcs_error\": ");
        tide_cli_json_string(stdout, in->wcs_note);
    }
    printf(",\n  \"keys\": {");
    int shown = 0;
    for (int k = 0; k < NKEYS; k++) {
        if (!in->key_found[k])
            continue;
        printf("%s\n    ", shown++ ? "," : "");
        tide_cli_json_string(stdout, key_names[k]);
        printf(": ");
        if (in->key_is_num[k])
            json_num(in->key_num[k]);
        else
            tide_cli_json_string(stdout, in->key_val[k]);
    }
    printf("%s}\n}\n", shown ? "\n  " : "");
}

int tide_cmd_info(int argc, char **argv) {
    const char *cmd = "info";
    tide_cli_common com;
    tide_cli_common_init(&com);
    const char *spec = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s", help);
            return 0;
        }
        const int c = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c > 0)
            continue;
        if (a[0] == '-' && a[1])
            return tide_cli_usage_error(cmd, "unknown option %s", a);
        if (spec)
            return tide_cli_usage_error(cmd, "one FILE at a time (got '%s' and '%s')", spec, a);
        spec = a;
    }
    if (!spec)
        return tide_cli_usage_error(cmd, "no FILE given");
    info in;
    memset(&in, 0, sizeof in);
    in.spec = spec;
    int st = gather(&in);
    if (st) {
        free(in.hdus);
        return tide_cli_fail(cmd, st);
    }
    if (com.json)
        print_json(&in);
    else
        print_text(&in);
    free(in.hdus);
    fflush(stdout);
    return ferror(stdout) ? 1 : 0;
}
