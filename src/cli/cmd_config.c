/* cmd_config.c — `tide config`: show the resolved configuration (built-ins, default.json,
 * INSTRUMENT.json, --set overrides) as JSON with where each key was set, and, given a frame,
 * the instrument values resolved from its header with where each came from. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tide/fits.h"

static const char *help =
    "usage: tide config [OPTIONS] [FRAME]\n"
    "\n"
    "Print the resolved configuration as JSON: built-in defaults, then default.json, then the\n"
    "instrument file, then --set overrides, each overriding the one before. Each section has an\n"
    "\"_origin\" member saying where every key was set (FILE:LINE:COLUMN, built-in or override).\n"
    "With FRAME, also the instrument values (gain, read noise, exposure, pointing...) resolved\n"
    "from the frame's header, each with its source: header (keyword found), camera (camera\n"
    "default), override (--set camera.X wins over the header), derived, or missing.\n"
    "\n"
    "options:\n"
    "  --config FILE          instrument configuration (JSON) [none]\n"
    "  --set SECTION.KEY=VAL  override one key; repeatable; VAL null clears it\n"
    "  --default FILE|none    default.json to use [searched: $TIDE_CONFIG_DIR, the install's\n"
    "                         share/tide/config, the source tree's config/]\n"
    "  --plain                print only the configuration, without origins: a valid\n"
    "                         configuration file to start an instrument file from\n"
    "  --keys                 list every key: type, default, unit, meaning (JSON with --json)\n"
    "  --json                 accepted for uniformity; the output is always JSON\n"
    "  --help                 this text\n"
    "\n"
    "A FRAME is FILE, FILE[N] or FILE[EXTNAME]; without a selector the first image HDU.\n"
    "Errors in a configuration name FILE:LINE:COLUMN; the exit code is then 1.\n";

static void print_keys(int json) {
    int n;
    const tide_config_key *k = tide_config_schema(&n);
    if (json)
        printf("[");
    for (int i = 0; i < n; i++) {
        char dotted[64];
        snprintf(dotted, sizeof dotted, "%s.%s", k[i].section, k[i].name);
        if (json) {
            printf("%s\n  {\"key\": ", i ? "," : "");
            tide_cli_json_string(stdout, dotted);
            printf(", \"type\": ");
            tide_cli_json_string(stdout, tide_config_type_name(k[i].type));
            printf(", \"default\": ");
            if (k[i].fallback)
                tide_cli_json_string(stdout, k[i].fallback);
            else
                printf("null");
            printf(", \"unit\": ");
            tide_cli_json_string(stdout, k[i].unit);
            printf(", \"doc\": ");
            tide_cli_json_string(stdout, k[i].doc);
            printf("}");
        } else {
            printf("%-32s %-16s [%s]%s%s  %s\n", dotted, tide_config_type_name(k[i].type),
                   k[i].fallback ? k[i].fallback : "unset", k[i].unit[0] ? " " : "", k[i].unit,
                   k[i].doc);
        }
    }
    if (json)
        printf("\n]\n");
}

int tide_cmd_config(int argc, char **argv) {
    const char *cmd = "config";
    const char *instrument = NULL, *def = NULL, *frame = NULL;
    int plain = 0, keys = 0, json = 0;
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    int nsets = 0;
    if (!sets)
        return tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int needs = !strcmp(a, "--config") || !strcmp(a, "--set") || !strcmp(a, "--default");
        if (needs && i + 1 >= argc) {
            free(sets);
            return tide_cli_usage_error(cmd, "option %s needs a value", a);
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            free(sets);
            return 0;
        } else if (!strcmp(a, "--config")) {
            if (instrument) {
                free(sets);
                return tide_cli_usage_error(cmd, "--config given twice");
            }
            instrument = argv[++i];
        } else if (!strcmp(a, "--set")) {
            sets[nsets++] = argv[++i];
        } else if (!strcmp(a, "--default")) {
            def = argv[++i];
            if (!strcmp(def, "none"))
                def = "";
        } else if (!strcmp(a, "--plain")) {
            plain = 1;
        } else if (!strcmp(a, "--keys")) {
            keys = 1;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (a[0] == '-' && a[1]) {
            free(sets);
            return tide_cli_usage_error(cmd, "unknown option '%s'", a);
        } else if (!frame) {
            frame = a;
        } else {
            free(sets);
            return tide_cli_usage_error(cmd, "more than one FRAME ('%s', '%s')", frame, a);
        }
    }
    if (keys) {
        print_keys(json);
        free(sets);
        return 0;
    }

    tide_config_load_options opt = {0};
    char found[4096] = "";
    if (!def && tide_config_find_default(found, sizeof found) == TIDE_OK)
        def = found;
    tide_error_clear();
    opt.default_path = def ? def : "";
    opt.instrument_path = instrument;
    opt.overrides = sets;
    opt.noverrides = nsets;
    tide_config *cfg = NULL;
    int st = tide_config_load(&cfg, &opt);
    if (st) {
        free(sets);
        return tide_cli_fail(cmd, st);
    }

    /* Resolve the frame before printing anything, so a failure prints nothing on stdout. */
    tide_instrument inst;
    tide_header hdr;
    tide_header_init(&hdr);
    int hdu = -1;
    int64_t w = 0, h = 0;
    if (frame) {
        st = tide_fits_read_image_header(frame, &hdr, &hdu, &w, &h);
        if (!st)
            st = tide_instrument_resolve(cfg, &hdr, frame, &inst);
        if (st) {
            tide_header_free(&hdr);
            tide_config_free(cfg);
            free(sets);
            return tide_cli_fail(cmd, st);
        }
    }

    if (plain) {
        st = tide_config_write_json(cfg, stdout, 0, 0);
        fputc('\n', stdout);
    } else {
        printf("{\n  \"layers\": {\n    \"default\": ");
        if (def && *def)
            tide_cli_json_string(stdout, def);
        else
            printf("null");
        printf(",\n    \"instrument\": ");
        if (instrument)
            tide_cli_json_string(stdout, instrument);
        else
            printf("null");
        printf(",\n    \"overrides\": [");
        for (int i = 0; i < nsets; i++) {
            if (i)
                printf(", ");
            tide_cli_json_string(stdout, sets[i]);
        }
        printf("]\n  },\n  \"config\": ");
        st = tide_config_write_json(cfg, stdout, 2, TIDE_CONFIG_JSON_ORIGINS);
        if (frame && !st) {
            printf(",\n  \"frame\": {\n    \"spec\": ");
            tide_cli_json_string(stdout, frame);
            printf(",\n    \"hdu\": %d,\n    \"width\": %lld,\n    \"height\": %lld,\n"
                   "    \"instrument\": ",
                   hdu, (long long)w, (long long)h);
            st = tide_instrument_write_json(&inst, stdout, 4);
            printf("\n  }");
        }
        printf("\n}\n");
    }
    if (!st && fflush(stdout))
        st = tide_error(TIDE_E_IO, "cannot write to stdout");
    tide_header_free(&hdr);
    tide_config_free(cfg);
    free(sets);
    return st ? tide_cli_fail(cmd, st) : 0;
}
