/* solve_index.c — the set of astrometry.net index files a tide_solver holds: loading a
 * directory once, the ctx cache, and where the directory comes from. */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <astrometry/errors.h>
#include <astrometry/index.h>
#include <astrometry/log.h>
#include <astrometry/starkd.h>

#include "solve_internal.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

static void drop_log(void *baton, enum log_level level, const char *file, int line,
                     const char *func, const char *format, va_list va) {
    (void)baton, (void)level, (void)file, (void)line, (void)func, (void)format, (void)va;
}

void tide_solve_quiet_astrometry(void) {
    /* astrometry.net logs to stdout through a process-wide logger, and some of its messages
     * (matchobj_print) are sent at whatever the current level is, so the level alone does
     * not silence it: its output goes to a function that drops it and to no FILE. The
     * library never prints; tide reports its own errors. */
    log_init(LOG_NONE);
    log_to(NULL);
    log_use_function(drop_log, NULL);
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_index_name(const char *name) {
    size_t n = strlen(name);
    return n > 11 && strncmp(name, "index-", 6) == 0 && strcmp(name + n - 5, ".fits") == 0;
}

/* The sorted names of the index files of @p dir (malloc'd array of malloc'd strings). */
static int list_index_files(const char *dir, char ***names, int *count) {
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return tide_error(TIDE_E_NOTFOUND, "%s: cannot open the index directory", dir);
    int cap = 0, n = 0, st = 0;
    char **v = NULL;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!is_index_name(de->d_name))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                st = tide_error(TIDE_E_NOMEM, "%s: listing index files", dir);
                break;
            }
            v = nv;
        }
        v[n] = strdup(de->d_name);
        if (!v[n]) {
            st = tide_error(TIDE_E_NOMEM, "%s: listing index files", dir);
            break;
        }
        n++;
    }
    closedir(d);
    if (st) {
        for (int i = 0; i < n; i++)
            free(v[i]);
        free(v);
        return st;
    }
    if (n > 1) /* an empty directory leaves v NULL, which qsort must not be given */
        qsort(v, (size_t)n, sizeof *v, name_cmp);
    *names = v;
    *count = n;
    return 0;
}

int tide_solver_open(const char *index_dir, tide_solver **out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_solver_open: no output");
    *out = NULL;
    if (!index_dir || !*index_dir)
        return tide_error(TIDE_E_INVAL, "tide_solver_open: no index directory given");
    if (strlen(index_dir) >= sizeof(((tide_solver *)0)->dir))
        return tide_error(TIDE_E_RANGE, "%.80s...: index directory name too long", index_dir);
    tide_solve_quiet_astrometry();
    char **names = NULL;
    int n = 0;
    int st = list_index_files(index_dir, &names, &n);
    if (st)
        return st;
    if (n == 0) {
        free(names);
        return tide_error(TIDE_E_NOTFOUND,
                          "%s: no astrometry.net index files (index-*.fits) in the directory",
                          index_dir);
    }
    tide_solver *s = calloc(1, sizeof *s);
    if (!s || !(s->idx = calloc((size_t)n, sizeof *s->idx))) {
        free(s);
        st = tide_error(TIDE_E_NOMEM, "%s: loading index files", index_dir);
        goto done;
    }
    snprintf(s->dir, sizeof s->dir, "%s", index_dir);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", index_dir, names[i]);
        errors_start_logging_to_string();
        index_t *ind = index_load(path, 0, NULL);
        char *why = errors_stop_logging_to_string("; ");
        if (!ind) {
            st = tide_error(TIDE_E_FORMAT, "%s: not a valid astrometry.net index file%s%s", path,
                            why && *why ? ": " : "", why ? why : "");
            free(why);
            tide_solver_free(s);
            s = NULL;
            goto done;
        }
        free(why);
        s->idx[s->nidx].index = ind;
        snprintf(s->idx[s->nidx].name, sizeof s->idx[s->nidx].name, "%s", names[i]);
        s->nidx++;
    }
    *out = s;
done:
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return st;
}

void tide_solver_free(tide_solver *s) {
    if (!s)
        return;
    for (int i = 0; i < s->nidx; i++)
        index_free(s->idx[i].index);
    free(s->idx);
    free(s);
}

const char *tide_solver_dir(const tide_solver *s) {
    return s ? s->dir : "";
}

int tide_solver_nindex(const tide_solver *s) {
    return s ? s->nidx : 0;
}

int tide_solver_index_info(const tide_solver *s, int i, double *quad_lo_arcsec,
                           double *quad_hi_arcsec, char *name, size_t name_len) {
    if (!s || i < 0 || i >= s->nidx)
        return tide_error(TIDE_E_RANGE, "index %d out of range", i);
    if (quad_lo_arcsec)
        *quad_lo_arcsec = s->idx[i].index->index_scale_lower;
    if (quad_hi_arcsec)
        *quad_hi_arcsec = s->idx[i].index->index_scale_upper;
    if (name && name_len)
        snprintf(name, name_len, "%s", s->idx[i].name);
    return 0;
}

static void solver_ext_destroy(tide_ctx *ctx, void *data) {
    (void)ctx;
    tide_solver_free((tide_solver *)data);
}

int tide_solver_get(tide_ctx *ctx, const char *index_dir, tide_solver **out) {
    if (!ctx || !out)
        return tide_error(TIDE_E_INVAL, "tide_solver_get: no context or output");
    *out = NULL;
    tide_solver *cur = (tide_solver *)ctx->ext[TIDE_EXT_SOLVER].data;
    if (cur && index_dir && strcmp(cur->dir, index_dir) == 0) {
        *out = cur;
        return 0;
    }
    tide_solver *s = NULL;
    int st = tide_solver_open(index_dir, &s);
    if (st)
        return st; /* the cached solver, if any, stays */
    tide_solver_free(cur);
    ctx->ext[TIDE_EXT_SOLVER].data = s;
    ctx->ext[TIDE_EXT_SOLVER].destroy = solver_ext_destroy;
    *out = s;
    return 0;
}

int tide_solve_index_dir(const char *explicit_dir, const char *config_dir, char *out, size_t n) {
    const char *env = getenv("TIDE_INDEX_DIR");
    const char *d = (explicit_dir && *explicit_dir) ? explicit_dir
                    : (config_dir && *config_dir)   ? config_dir
                    : (env && *env)                 ? env
                                                    : "/usr/share/astrometry";
    if (!out || n == 0 || strlen(d) >= n)
        return tide_error(TIDE_E_RANGE, "index directory name too long: %.80s", d);
    snprintf(out, n, "%s", d);
    return 0;
}

int tide_solver_index_stars(const tide_solver *s, const char *name, double ra, double dec,
                            double radius_deg, double **ra_out, double **dec_out, int64_t *n) {
    if (!s || !ra_out || !dec_out || !n)
        return tide_error(TIDE_E_INVAL, "index stars: no solver or output");
    *ra_out = *dec_out = NULL;
    *n = 0;
    if (!(radius_deg > 0) || !isfinite(ra) || !(dec >= -90 && dec <= 90))
        return tide_error(TIDE_E_INVAL, "index stars: bad cone (%g, %g) radius %g", ra, dec,
                          radius_deg);
    /* The stars of the named index (the one that solved): one index's stars are a uniform
     * sample of the sky at its scale, and other scales would repeat the same stars. */
    int64_t total = 0;
    double *rv = NULL, *dv = NULL;
    for (int i = 0; i < s->nidx; i++) {
        if (name && *name && strcmp(s->idx[i].name, name) != 0)
            continue;
        startree_t *sk = s->idx[i].index->starkd;
        if (!sk)
            continue;
        double *radec = NULL;
        int k = 0;
        startree_search_for_radec(sk, ra, dec, radius_deg, NULL, &radec, NULL, &k);
        if (k > 0) {
            double *nr = realloc(rv, (size_t)(total + k) * sizeof *nr);
            double *nd = nr ? realloc(dv, (size_t)(total + k) * sizeof *nd) : NULL;
            if (nr)
                rv = nr;
            if (nd)
                dv = nd;
            if (!nr || !nd) {
                free(radec);
                free(rv);
                free(dv);
                return tide_error(TIDE_E_NOMEM, "%s: %d index stars", s->idx[i].name, k);
            }
            for (int j = 0; j < k; j++) {
                rv[total + j] = radec[2 * j];
                dv[total + j] = radec[2 * j + 1];
            }
            total += k;
        }
        free(radec);
    }
    if (total == 0) {
        free(rv);
        free(dv);
        return tide_error(TIDE_E_EMPTY, "%s: no index star within %.3g deg of (%.5f, %.5f)", s->dir,
                          radius_deg, ra, dec);
    }
    *ra_out = rv;
    *dec_out = dv;
    *n = total;
    return 0;
}
