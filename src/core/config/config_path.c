/* config_path.c — where default.json is found, and building a configuration through all the
 * layers (built-ins, default.json, INSTRUMENT.json, --set overrides). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_internal.h"
#include "tide/status.h"

/* The source tree's config/ when the build did not say: this file is src/core/config/config_path.c,
 * and CMake compiles it by absolute path, so the tree root is three levels up from __FILE__. */
static int source_config_dir(char *out, size_t len) {
#ifdef TIDE_SOURCE_CONFIG_DIR
    snprintf(out, len, "%s", TIDE_SOURCE_CONFIG_DIR);
    return 1;
#else
    const char *f = __FILE__;
    const char *tail = "src/core/config/config_path.c";
    size_t lf = strlen(f), lt = strlen(tail);
    if (f[0] != '/' || lf < lt || strcmp(f + lf - lt, tail))
        return 0;
    snprintf(out, len, "%.*sconfig", (int)(lf - lt), f);
    return 1;
#endif
}

static int try_dir(const char *dir, char *out, size_t outlen) {
    if (!dir || !*dir)
        return 0;
    int n = snprintf(out, outlen, "%s/default.json", dir);
    return n > 0 && (size_t)n < outlen && access(out, R_OK) == 0;
}

int tide_config_find_default(char *out, size_t outlen) {
    if (!out || !outlen)
        return tide_error(TIDE_E_INVAL, "tide_config_find_default: no buffer");
    /* 1. the user's choice */
    if (try_dir(getenv("TIDE_CONFIG_DIR"), out, outlen))
        return TIDE_OK;
        /* 2. the installed copy (CMake installs config/ into share/tide/config) */
#ifdef TIDE_CONFIG_INSTALL_DIR
    if (try_dir(TIDE_CONFIG_INSTALL_DIR, out, outlen))
        return TIDE_OK;
#endif
    /* 3. the source tree, when running from a build directory */
    char dir[4096];
    if (source_config_dir(dir, sizeof dir) && try_dir(dir, out, outlen))
        return TIDE_OK;
    out[0] = '\0';
    return tide_error(TIDE_E_NOTFOUND, "no default.json in $TIDE_CONFIG_DIR, the install "
                                       "directory or the source tree");
}

int tide_config_load(tide_config **out, const tide_config_load_options *opt) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_config_load: NULL output");
    *out = NULL;
    tide_config_load_options none = {0};
    if (!opt)
        opt = &none;
    tide_config *cfg;
    int st = tide_config_create(&cfg);
    if (st)
        return st;

    char found[4096];
    const char *def = opt->default_path;
    if (!def && tide_config_find_default(found, sizeof found) == TIDE_OK)
        def = found;
    tide_error_clear(); /* not finding default.json is not an error */
    if (def && *def && (st = tide_config_merge_file(cfg, def, TIDE_CONFIG_DEFAULT)))
        goto fail;
    if (opt->instrument_path &&
        (st = tide_config_merge_file(cfg, opt->instrument_path, TIDE_CONFIG_INSTRUMENT)))
        goto fail;
    for (int i = 0; i < opt->noverrides; i++)
        if ((st = tide_config_set(cfg, opt->overrides[i])))
            goto fail;
    *out = cfg;
    return TIDE_OK;
fail:
    tide_config_free(cfg);
    return st;
}
