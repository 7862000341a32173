/* cli_common.c — options shared by every computing command, errors and exit codes. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tide/fits.h"
#include "tide/outfile.h"

const char *tide_cli_common_help =
    "common options:\n"
    "  --backend auto|cpu|cuda  where to compute [auto: the GPU when one is usable]\n"
    "  --device N               CUDA device ordinal [0]\n"
    "  --threads N              CPU threads, 0 = all cores [0]\n"
    "  --device-memory-cap N    refuse device allocations beyond N bytes (suffix K, M, G):\n"
    "                           a smaller GPU, or a test of running out [none]\n"
    "  --json                   print results as JSON on stdout\n"
    "  --log-level LEVEL        error, warn, info or debug [warn]\n"
    "  --log-json               log as JSON lines on stderr\n"
    "  --cfitsio-names          accept cfitsio's extended file names for inputs (URLs,\n"
    "                           stdin, mem://, filters, binning); local files only without\n"
    "  --help                   this text\n";

void tide_cli_common_init(tide_cli_common *c) {
    memset(c, 0, sizeof *c);
    c->ctx_opt.backend = TIDE_BACKEND_AUTO;
    c->ctx_opt.log.stream = stderr;
    c->ctx_opt.log.level = TIDE_LOG_WARN;
}

/* Parse a non-negative integer option value. */
static int parse_count(const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v > 1 << 20)
        return -1;
    *out = (int)v;
    return 0;
}

int tide_cli_common_option(tide_cli_common *c, const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    int takes_value = !strcmp(a, "--backend") || !strcmp(a, "--device") ||
                      !strcmp(a, "--threads") || !strcmp(a, "--log-level") ||
                      !strcmp(a, "--device-memory-cap");
    if (!strcmp(a, "--json")) {
        c->json = 1;
        return 1;
    }
    if (!strcmp(a, "--cfitsio-names")) {
        tide_fits_set_extended_names(1);
        return 1;
    }
    if (!strcmp(a, "--log-json")) {
        c->ctx_opt.log.json = 1;
        return 1;
    }
    if (!takes_value)
        return 0;
    if (*i + 1 >= argc) {
        tide_cli_usage_error(cmd, "option %s needs a value", a);
        return -1;
    }
    const char *v = argv[++*i];
    int bad = 0;
    if (!strcmp(a, "--backend"))
        bad = tide_backend_parse(v, &c->ctx_opt.backend) != 0;
    else if (!strcmp(a, "--device"))
        bad = parse_count(v, &c->ctx_opt.device) != 0;
    else if (!strcmp(a, "--threads"))
        bad = parse_count(v, &c->ctx_opt.threads) != 0;
    else if (!strcmp(a, "--log-level"))
        bad = tide_log_level_parse(v, &c->ctx_opt.log.level) != 0;
    else if (!strcmp(a, "--device-memory-cap")) {
        char *end;
        double b = strtod(v, &end);
        /* bytes, or with a suffix K, M, G (powers of 1024) */
        double mul = *end == 'K'   ? 1024.0
                     : *end == 'M' ? 1048576.0
                     : *end == 'G' ? 1073741824.0
                                   : 1;
        if (mul > 1)
            end++;
        bad = end == v || *end || !(b >= 1) || b * mul > 1e18;
        if (!bad)
            c->ctx_opt.device_mem_cap = (size_t)(b * mul);
    }
    if (bad) {
        tide_cli_usage_error(cmd, "bad value '%s' for %s", v, a);
        return -1;
    }
    return 1;
}

tide_ctx *tide_cli_make_ctx(const tide_cli_common *c, const char *cmd) {
    tide_ctx *ctx = NULL;
    int st = tide_ctx_create(&ctx, &c->ctx_opt);
    if (st) {
        tide_cli_fail(cmd, st);
        return NULL;
    }
    return ctx;
}

int tide_cli_fail(const char *cmd, int status) {
    const char *d = tide_error_detail();
    if (d && d[0])
        fprintf(stderr, "tide %s: error: %s: %s\n", cmd, tide_strerror(status), d);
    else
        fprintf(stderr, "tide %s: error: %s\n", cmd, tide_strerror(status));
    return 1;
}

int tide_cli_usage_error(const char *cmd, const char *fmt, ...) {
    char raw[1024], msg[1100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    tide_redact_uri(raw, msg, sizeof msg); /* an argument may be a URI with a password */
    fprintf(stderr, "tide %s: %s\n(tide %s --help lists the options)\n", cmd, msg, cmd);
    return 2;
}

void tide_cli_json_string(FILE *f, const char *s) {
    /* every JSON string the CLI writes: a store or reference-catalog URI loses its password
     * (redaction grows a text by at most 3 bytes per 1-byte password: 2x + 8 is room enough) */
    char local[1024], *heap = NULL;
    const size_t cap = s ? 2 * strlen(s) + 8 : 0;
    if (s && cap > sizeof local && !(heap = malloc(cap)))
        s = "(not shown: out of memory)";
    else if (s)
        s = tide_redact_uri(s, heap ? heap : local, heap ? cap : sizeof local);
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
    free(heap);
}

int tide_cli_parse_number(const char *s, double *out) {
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int tide_cli_parse_range(const char *cmd, const char *opt, const char *v, double lo, double hi,
                         double *out) {
    double x;
    if (tide_cli_parse_number(v, &x) || x < lo || x > hi)
        return tide_cli_usage_error(cmd, "%s needs a number in [%g, %g] (got '%s')", opt, lo, hi,
                                    v);
    *out = x;
    return 0;
}

int tide_cli_value_option(const char *cmd, const tide_cli_valopt *opts, int n, int argc,
                          char **argv, int *i) {
    const char *a = argv[*i];
    for (int k = 0; k < n; k++) {
        if (strcmp(a, opts[k].name))
            continue;
        if (*i + 1 >= argc) {
            tide_cli_usage_error(cmd, "option %s needs a value", a);
            return -1;
        }
        const char *v = argv[++*i];
        if (opts[k].str) {
            *opts[k].str = v;
        } else if (tide_cli_parse_number(v, opts[k].num) || *opts[k].num < 0) {
            tide_cli_usage_error(cmd, "bad value '%s' for %s", v, a);
            return -1;
        }
        return 1;
    }
    return 0;
}

int tide_cli_check_outputs(const char *cmd, const char *const *inputs, int nin,
                           const char *const *outputs, int nout) {
    const int st = tide_outputs_check(inputs, nin, outputs, nout);
    return st ? tide_cli_fail(cmd, st) : 0;
}
