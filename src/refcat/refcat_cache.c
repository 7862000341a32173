/* refcat_cache.c — reference-catalog cones cached per field as FITS tables. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tide/fits.h"
#include "tide/refcat.h"
#include "tide/status.h"

int tide_refcat_cache_dir(const char *configured, char *out, int outlen) {
    const char *d = configured && *configured ? configured : getenv("TIDE_REFCAT_CACHE");
    if (!d || !*d)
        return tide_error(TIDE_E_NOTFOUND, "no reference-catalog cache (TIDE_REFCAT_CACHE unset)");
    if ((int)strlen(d) >= outlen)
        return tide_error(TIDE_E_RANGE, "reference-catalog cache path too long: %s", d);
    snprintf(out, (size_t)outlen, "%s", d);
    return 0;
}

/* FNV-1a, 64 bits (Fowler, Noll, Vo): a stable name for any source string. */
static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

int tide_refcat_cache_name(const char *source, double ra, double dec, double radius_deg, char *out,
                           int outlen) {
    if (!source || !isfinite(ra) || !isfinite(dec) || !(radius_deg > 0))
        return tide_error(TIDE_E_INVAL, "refcat cache: bad source or cone");
    double r = fmod(ra, 360.0);
    if (r < 0)
        r += 360.0;
    /* Round the centre to 0.001 deg and the radius up to the next 0.001 deg; "-0.000" and
     * "360.000" are folded so one cone has one name. */
    long lra = lround(r * 1000.0) % 360000, ldec = lround(dec * 1000.0);
    long lrad = (long)ceil(radius_deg * 1000.0 - 1e-6);
    int n =
        snprintf(out, (size_t)outlen, "refcat_%016llx_%ld.%03ld_%c%ld.%03ld_%ld.%03ld.fits",
                 (unsigned long long)fnv1a(source), lra / 1000, lra % 1000, ldec < 0 ? 'm' : 'p',
                 labs(ldec) / 1000, labs(ldec) % 1000, lrad / 1000, lrad % 1000);
    if (n < 0 || n >= outlen)
        return tide_error(TIDE_E_RANGE, "refcat cache: name buffer too small");
    return 0;
}

static int cache_path(const char *dir, const char *source, double ra, double dec, double radius_deg,
                      char *out, size_t outlen) {
    char name[128];
    int st = tide_refcat_cache_name(source, ra, dec, radius_deg, name, (int)sizeof name);
    if (st)
        return st;
    int n = snprintf(out, outlen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= outlen)
        return tide_error(TIDE_E_RANGE, "refcat cache: path too long in %s", dir);
    return 0;
}

int tide_refcat_cache_get(const char *dir, const char *source, double ra, double dec,
                          double radius_deg, tide_table *out) {
    tide_table_init(out);
    char path[4096];
    int st = cache_path(dir, source, ra, dec, radius_deg, path, sizeof path);
    if (st)
        return st;
    struct stat sb;
    if (stat(path, &sb))
        return tide_error(TIDE_E_NOTFOUND, "%s: not in the cache", path);
    if (tide_refcat_read(path, NULL, out))
        return tide_error(TIDE_E_NOTFOUND, "%s: unreadable cache entry (ignored)", path);
    return 0;
}

int tide_refcat_cache_put(const char *dir, const char *source, double ra, double dec,
                          double radius_deg, const tide_table *t) {
    char path[4096];
    int st = cache_path(dir, source, ra, dec, radius_deg, path, sizeof path);
    if (st)
        return st;
    if (mkdir(dir, 0777) && errno != EEXIST)
        return tide_error(TIDE_E_IO, "%s: cannot create the reference-catalog cache: %s", dir,
                          strerror(errno));
    tide_header h;
    tide_header_init(&h);
    st = tide_header_set_str(&h, "REFSRC", source, "reference catalog source");
    st |= tide_header_set_dbl(&h, "REFRA", ra, "cone centre RA, deg");
    st |= tide_header_set_dbl(&h, "REFDEC", dec, "cone centre Dec, deg");
    st |= tide_header_set_dbl(&h, "REFRAD", radius_deg, "cone radius asked, deg");
    if (st)
        st = tide_error(TIDE_E_NOMEM, "refcat cache: no memory");
    else
        st = tide_fits_write_table(path, t, &h, "REFCAT");
    tide_header_free(&h);
    return st;
}

int tide_refcat_fetch(const char *path, const char *cmd_template, const tide_refcat_columns *cols,
                      double ra, double dec, double radius_deg, const char *cache_dir,
                      tide_table *out) {
    tide_table_init(out);
    if ((path == NULL) == (cmd_template == NULL))
        return tide_error(TIDE_E_INVAL, "refcat: give a file or a command, exactly one");
    const char *source = path ? path : cmd_template;
    if (cache_dir && !tide_refcat_cache_get(cache_dir, source, ra, dec, radius_deg, out))
        return 0;
    int st = path ? tide_refcat_load(path, cols, ra, dec, radius_deg, out)
                  : tide_refcat_from_command(cmd_template, ra, dec, radius_deg, cols, 0, out);
    if (!st && cache_dir)
        st = tide_refcat_cache_put(cache_dir, source, ra, dec, radius_deg, out);
    if (st)
        tide_table_free(out);
    return st;
}
