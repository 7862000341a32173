/* cmd_rb_score.c — `tide rb score CANDIDATES.fits --model MODEL`: the RB_SCORE column of a
 * tide diff candidates file, from its difference image (rb.h), written whole or not at all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rb_sources.h"

static const char *help_score =
    "usage: tide rb score CANDIDATES.fits --model MODEL.json [-o OUT.fits] [OPTIONS]\n"
    "\n"
    "Score every candidate of a tide diff candidates file: add (or replace) its RB_SCORE\n"
    "column (0 bogus .. 1 real), written to OUT (default: CANDIDATES itself, replaced whole).\n"
    "\n"
    "options:\n"
    "  --difference FILE    the difference image [difference.fits beside CANDIDATES]\n"
    "  --stars FILE         a catalog (X_IMAGE, Y_IMAGE on the difference's grid) for the\n"
    "                       distance to the nearest star [none]\n"
    "  --print-above X      list the candidates scoring above X [none]\n";

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* X_IMAGE, Y_IMAGE of a catalog file, interleaved. */
static int read_stars(const char *path, double **xy, int64_t *n) {
    tide_table t;
    tide_table_init(&t);
    int st = tide_fits_read_table(path, &t, NULL);
    const tide_column *cx = st ? NULL : tide_table_column(&t, "X_IMAGE");
    const tide_column *cy = st ? NULL : tide_table_column(&t, "Y_IMAGE");
    if (!st && (!cx || !cy || cx->type != cy->type ||
                (cx->type != TIDE_COL_F64 && cx->type != TIDE_COL_F32)))
        st = tide_error(TIDE_E_FORMAT, "%s: needs float columns X_IMAGE and Y_IMAGE", path);
    if (!st && !(*xy = malloc((size_t)(t.nrows + 1) * 2 * sizeof **xy)))
        st = tide_error(TIDE_E_NOMEM, "out of memory");
    for (int64_t i = 0; !st && i < t.nrows; i++) {
        const int d = cx->type == TIDE_COL_F64;
        (*xy)[2 * i] = d ? ((double *)cx->data)[i] : ((float *)cx->data)[i];
        (*xy)[2 * i + 1] = d ? ((double *)cy->data)[i] : ((float *)cy->data)[i];
    }
    *n = st ? 0 : t.nrows;
    tide_table_free(&t);
    return st;
}

int tide_cmd_rb_score(int argc, char **argv) {
    const char *cmd = "rb score";
    tide_cli_common com;
    tide_cli_common_init(&com);
    const char *in = NULL, *model = NULL, *out = NULL, *diff = NULL, *starf = NULL;
    double above = NAN;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help_score, tide_cli_common_help);
            return 0;
        }
        const int c = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c > 0)
            continue;
        if (a[0] != '-') {
            if (in)
                return tide_cli_usage_error(cmd, "one CANDIDATES file (got '%s' too)", a);
            in = a;
            continue;
        }
        if (i + 1 >= argc)
            return tide_cli_usage_error(cmd, "%s: unknown option or missing value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
            out = v;
        else if (!strcmp(a, "--difference"))
            diff = v;
        else if (!strcmp(a, "--stars"))
            starf = v;
        else if (!strcmp(a, "--print-above")) {
            const int rc = tide_cli_parse_range(cmd, a, v, 0, 1, &above);
            if (rc)
                return rc;
        } else
            return tide_cli_usage_error(cmd, "unknown option %s", a);
    }
    if (!in || !model)
        return tide_cli_usage_error(cmd, "needs CANDIDATES.fits and --model MODEL.json");
    if (!out)
        out = in;
    char dpath[4200];
    if (!diff) {
        const char *sl = strrchr(in, '/');
        snprintf(dpath, sizeof dpath, "%.*sdifference.fits", sl ? (int)(sl - in + 1) : 0, in);
        diff = dpath;
    }
    /* the output may replace the candidates file, never the model or the images */
    const char *ins[3] = {model, diff, starf};
    const int rc = tide_cli_check_outputs(cmd, ins, starf ? 3 : 2, &out, 1);
    if (rc)
        return rc;
    tide_ctx *ctx = tide_cli_make_ctx(&com, cmd);
    if (!ctx)
        return 1;
    tide_rb_model *m = NULL;
    tide_table t;
    tide_table_init(&t);
    tide_header th, dh;
    tide_header_init(&th);
    tide_header_init(&dh);
    tide_image im;
    memset(&im, 0, sizeof im);
    double *stars = NULL;
    int64_t nstars = 0;
    int st = tide_rb_model_load(model, &m);
    if (!st)
        st = tide_fits_read_table(in, &t, &th);
    if (!st)
        st = tide_fits_read_image(ctx, diff, &im, &dh);
    if (!st && starf)
        st = read_stars(starf, &stars, &nstars);
    const double t0 = now_ms();
    if (!st)
        st = tide_rb_score_table(m, &im, &t, rb_header_fwhm(&dh), stars, nstars);
    const double ms = now_ms() - t0;
    if (!st)
        st = tide_header_set_str(&th, "RBMODEL", model, "real/bogus model of RB_SCORE");
    if (!st)
        st = tide_fits_write_table(out, &t, &th, "CANDIDATES");
    if (!st) {
        const float *s = tide_table_f32(&t, "RB_SCORE");
        int64_t nhi = 0;
        for (int64_t i = 0; i < t.nrows; i++)
            nhi += s[i] >= 0.5f;
        if (com.json)
            printf("{\"candidates\": %lld, \"real\": %lld, \"ms_score\": %.3f}\n",
                   (long long)t.nrows, (long long)nhi, ms);
        else
            printf("%s: %lld candidates scored in %.2f ms, %lld with RB_SCORE >= 0.5 -> %s\n", in,
                   (long long)t.nrows, ms, (long long)nhi, out);
        if (isfinite(above) && !com.json) {
            const tide_column *cx = tide_table_column(&t, "X_IMAGE"),
                              *cy = tide_table_column(&t, "Y_IMAGE");
            const tide_column *cs = tide_table_column(&t, "SNR");
            for (int64_t i = 0; i < t.nrows; i++)
                if (s[i] > above && cx && cy && cs && cx->type == TIDE_COL_F64 &&
                    cs->type == TIDE_COL_F64)
                    printf("  row %lld  x %.1f y %.1f  SNR %.1f  RB_SCORE %.3f\n", (long long)i + 1,
                           ((double *)cx->data)[i], ((double *)cy->data)[i],
                           ((double *)cs->data)[i], s[i]);
        }
    }
    free(stars);
    tide_image_free(ctx, &im);
    tide_header_free(&th);
    tide_header_free(&dh);
    tide_table_free(&t);
    tide_rb_model_free(m);
    tide_ctx_destroy(ctx);
    return st ? tide_cli_fail(cmd, st) : 0;
}
