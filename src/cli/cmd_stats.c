/* cmd_stats.c — `tide stats FILE`: pixel statistics of one image, identical on CPU and GPU.
 *
 * Every number comes from the deterministic reductions of stats.h, so the CPU and CUDA
 * backends print the same digits. Values print with %.9g (enough to round-trip a float). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tide/fits.h"

static const char *help =
    "usage: tide stats FILE [options]\n"
    "\n"
    "Pixel statistics of an image: min, max, mean, median, std (population, ddof 0), and\n"
    "sigma-clipped mean, median and std (astropy.stats.sigma_clipped_stats with cenfunc\n"
    "median, stdfunc std), over valid pixels: finite and not BLANK. Also counts the pixels\n"
    "without data: NaN/Inf (float images) or BLANK (integer images).\n"
    "FILE is FILE, FILE[N], FILE[EXTNAME], optionally with a section [x1:x2,y1:y2].\n"
    "\n"
    "options:\n"
    "  --sigma K                clip at median ± K·std [3]\n"
    "  --maxiters N             at most N clipping iterations, 0 = until convergence [5]\n";

/* A number for JSON: NaN/Inf become null. */
static void json_num(FILE *f, const char *key, double v, int comma) {
    if (isfinite(v))
        fprintf(f, "  \"%s\": %.9g%s\n", key, v, comma ? "," : "");
    else
        fprintf(f, "  \"%s\": null%s\n", key, comma ? "," : "");
}

static int parse_double(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end)
        return -1;
    *out = v;
    return 0;
}

int tide_cmd_stats(int argc, char **argv) {
    const char *cmd = "stats";
    tide_cli_common com;
    tide_cli_common_init(&com);
    tide_sigclip_params clip = tide_sigclip_defaults();
    const char *spec = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help, tide_cli_common_help);
            return 0;
        }
        const int c = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c > 0)
            continue;
        if (!strcmp(a, "--sigma") || !strcmp(a, "--maxiters")) {
            if (i + 1 >= argc)
                return tide_cli_usage_error(cmd, "option %s needs a value", a);
            const char *v = argv[++i];
            double d;
            if (parse_double(v, &d))
                return tide_cli_usage_error(cmd, "bad value '%s' for %s", v, a);
            if (!strcmp(a, "--sigma")) {
                if (!(d > 0.0) || !isfinite(d))
                    return tide_cli_usage_error(cmd, "--sigma must be > 0 (got %s)", v);
                clip.sigma = d;
            } else {
                if (d < 0 || d > 1e6 || d != floor(d))
                    return tide_cli_usage_error(cmd, "--maxiters must be an integer >= 0 (got %s)",
                                                v);
                clip.maxiters = (int)d;
            }
            continue;
        }
        if (a[0] == '-' && a[1])
            return tide_cli_usage_error(cmd, "unknown option %s", a);
        if (spec)
            return tide_cli_usage_error(cmd, "one FILE only (got '%s' and '%s')", spec, a);
        spec = a;
    }
    if (!spec)
        return tide_cli_usage_error(cmd, "missing FILE");

    tide_ctx *ctx = tide_cli_make_ctx(&com, cmd);
    if (!ctx)
        return 1;
    tide_image im;
    tide_header hdr;
    memset(&im, 0, sizeof im);
    tide_header_init(&hdr);
    int rc = 1;
    int st = tide_fits_read_image(ctx, spec, &im, &hdr);
    if (st) {
        rc = tide_cli_fail(cmd, st);
        goto done;
    }
    /* The reader turns BLANK, NaN and Inf alike into NaN + NODATA. Integer data cannot hold
     * NaN or Inf, and float data must not use BLANK (FITS 4.0 §5.2.2), so the HDU's BITPIX
     * (the uncompressed one for tile-compressed images) says which kind they were. */
    int64_t bitpix = 0;
    if (tide_header_get_int(&hdr, "BITPIX", &bitpix))
        bitpix = -32;

    tide_stats s;
    st = tide_reduce_stats(ctx, &im, TIDE_REDUCE_ALL_BITS, &s);
    if (st == TIDE_E_EMPTY) {
        rc = tide_cli_fail(cmd, tide_error(TIDE_E_EMPTY,
                                           "%s: no valid pixel (all %lld pixels are NaN, Inf "
                                           "or BLANK)",
                                           spec, (long long)s.n_total));
        goto done;
    }
    double median = NAN;
    tide_sigclip_result sc;
    if (!st)
        st = tide_reduce_median(ctx, &im, TIDE_REDUCE_ALL_BITS, &median);
    if (!st)
        st = tide_reduce_sigma_clip(ctx, &im, TIDE_REDUCE_ALL_BITS, &clip, &sc);
    if (st) {
        rc = tide_cli_fail(cmd, tide_error_prefix(st, "%s: ", spec));
        goto done;
    }
    const int64_t nodata = s.n_total - s.n_valid;
    const int64_t nblank = bitpix > 0 ? nodata : 0, nnan = bitpix > 0 ? 0 : nodata;
    if (com.json) {
        printf("{\n  \"file\": ");
        tide_cli_json_string(stdout, spec);
        printf(",\n  \"width\": %lld,\n  \"height\": %lld,\n  \"bitpix\": %lld,\n",
               (long long)im.width, (long long)im.height, (long long)bitpix);
        printf("  \"n_total\": %lld,\n  \"n_valid\": %lld,\n  \"n_nodata\": %lld,\n"
               "  \"n_nan\": %lld,\n  \"n_blank\": %lld,\n",
               (long long)s.n_total, (long long)s.n_valid, (long long)nodata, (long long)nnan,
               (long long)nblank);
        json_num(stdout, "min", s.min, 1);
        json_num(stdout, "max", s.max, 1);
        json_num(stdout, "sum", s.sum, 1);
        json_num(stdout, "mean", s.mean, 1);
        json_num(stdout, "median", median, 1);
        json_num(stdout, "std", s.std, 1);
        printf("  \"clip_sigma\": %.9g,\n  \"clip_maxiters\": %d,\n", clip.sigma, clip.maxiters);
        json_num(stdout, "clip_mean", sc.mean, 1);
        json_num(stdout, "clip_median", sc.median, 1);
        json_num(stdout, "clip_std", sc.std, 1);
        printf("  \"clip_n_kept\": %lld,\n  \"clip_iterations\": %d\n}\n", (long long)sc.n_kept,
               sc.iterations);
    } else {
        printf("file          %s\n", spec);
        printf("size          %lld x %lld (BITPIX %lld)\n", (long long)im.width,
               (long long)im.height, (long long)bitpix);
        printf("pixels        %lld total, %lld valid, %lld without data (%lld NaN/Inf, "
               "%lld BLANK)\n",
               (long long)s.n_total, (long long)s.n_valid, (long long)nodata, (long long)nnan,
               (long long)nblank);
        printf("min           %.9g\nmax           %.9g\nmean          %.9g\n", s.min, s.max,
               s.mean);
        printf("median        %.9g\nstd           %.9g\n", median, s.std);
        printf("clipped       sigma %.9g, maxiters %d: %lld kept after %d iteration%s\n",
               clip.sigma, clip.maxiters, (long long)sc.n_kept, sc.iterations,
               sc.iterations == 1 ? "" : "s");
        printf("clip mean     %.9g\nclip median   %.9g\nclip std      %.9g\n", sc.mean, sc.median,
               sc.std);
    }
    rc = 0;
done:
    tide_image_free(ctx, &im);
    tide_header_free(&hdr);
    tide_ctx_destroy(ctx);
    return rc;
}
