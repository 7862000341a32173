/* cli_config.c — --config, --default and --set of the commands that resolve instrument values
 * (cli_config.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_config.h"
#include "tide/fits.h"

const char *tide_cli_config_help =
    "  --config FILE            instrument configuration (JSON) [none]\n"
    "  --default FILE|none      default.json to use [searched, as tide config]\n"
    "  --set SECTION.KEY=VAL    override a configuration key; repeatable; a KEY without a\n"
    "                           section means processing.KEY (tide config --keys lists them)\n";

/* "section.key=value" of a --set value; a bare key is a processing key. NULL: no memory. */
static char *assignment(const char *v) {
    const char *eq = strchr(v, '='), *dot = strchr(v, '.');
    if (dot && dot < eq)
        return strdup(v);
    const size_t n = strlen(v) + 16;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "processing.%s", v);
    return s;
}

int tide_cli_config_option(tide_cli_config *c, const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    if (strcmp(a, "--config") && strcmp(a, "--default") && strcmp(a, "--set"))
        return 0;
    if (*i + 1 >= argc) {
        tide_cli_usage_error(cmd, "option %s needs a value", a);
        return -1;
    }
    const char *v = argv[++*i];
    if (!strcmp(a, "--config")) {
        c->instrument = v;
    } else if (!strcmp(a, "--default")) {
        c->def = strcmp(v, "none") ? v : "";
    } else {
        if (!strchr(v, '=')) {
            tide_cli_usage_error(cmd, "--set needs SECTION.KEY=VALUE (got '%s')", v);
            return -1;
        }
        char **s = realloc(c->sets, sizeof *s * (size_t)(c->nsets + 1));
        char *one = s ? assignment(v) : NULL;
        if (s)
            c->sets = s;
        if (!one) {
            tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
            return -1;
        }
        c->sets[c->nsets++] = one;
    }
    return 1;
}

int tide_cli_compress_option(const char *cmd, const char *name, char **sets, int *nsets) {
    tide_fits_compress how;
    if (tide_fits_compress_parse(name, &how)) {
        tide_cli_usage_error(cmd, "--compress takes none or rice (got '%s')", name);
        return -1;
    }
    const size_t n = strlen(name) + 32;
    char *s = malloc(n);
    if (!s) {
        tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
        return -1;
    }
    snprintf(s, n, "output.compress=%s", name);
    sets[(*nsets)++] = s;
    return 0;
}

int tide_cli_config_load(const tide_cli_config *c, tide_config **out) {
    tide_config_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.default_path = c->def;
    lo.instrument_path = c->instrument;
    lo.overrides = (const char *const *)c->sets;
    lo.noverrides = c->nsets;
    return tide_config_load(out, &lo);
}

void tide_cli_config_free(tide_cli_config *c) {
    for (int k = 0; k < c->nsets; k++)
        free(c->sets[k]);
    free(c->sets);
    memset(c, 0, sizeof *c);
}
