/* refcat.h — reference catalogs for astrometry and photometric calibration.
 *
 * Every source of reference stars gives the same table (the layout the PostgreSQL Q3C cone
 * query of store.h returns too): five TIDE_COL_F64 columns
 *
 *     RA, DEC   ICRS position, degrees
 *     MAG       magnitude in the catalog's band
 *     MAGERR    its error, mag (NaN when the catalog has none)
 *     COLOR     a colour index, mag (NaN when the catalog has none)
 *
 * Sources:
 *   - a local file (`--refcat FILE`): a FITS table (first table HDU, or FILE[EXT]) or a CSV
 *     file (RFC 4180: a header row of column names, comma-separated fields, double quotes
 *     around fields holding commas or quotes). The kind is taken from the content: a file
 *     starting with "SIMPLE  =" (or gzip-compressed, .gz) is FITS, anything else CSV.
 *     Column names are matched without regard to case; tide_refcat_columns renames them.
 *     Numeric columns of any type are read as doubles. RA and DEC may also be sexagesimal
 *     text (a CSV field or a FITS string column): RA in hours "hh:mm:ss.s" or "hh mm ss.s",
 *     DEC in degrees "±dd:mm:ss.s"; plain numbers are degrees for both. In a CSV file an
 *     empty field or "nan" is NaN; MAG, MAGERR and COLOR may be NaN, RA and DEC may not.
 *   - a user command (tide_refcat_from_command) that writes such a file.
 *   - the per-field cache (tide_refcat_cache_*), which stores what the others returned.
 *
 * Cones. A field asks for the stars within `radius` of its centre plus a margin
 * (tide_refcat_margin_deg: 10 % of the radius plus 1 arcmin, for pointing errors of an
 * unsolved frame); distances are great-circle distances. Zero stars in the cone is
 * TIDE_E_EMPTY, naming the source and the cone. */
#ifndef TIDE_REFCAT_H
#define TIDE_REFCAT_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Names of the catalog's columns; an empty string means the default name (RA, DEC, MAG,
 *  MAGERR, COLOR). A missing MAGERR or COLOR column is not an error when its name is the
 *  default (the column is NaN); a missing column that was named explicitly is. */
typedef struct tide_refcat_columns {
    char ra[72];
    char dec[72];
    char mag[72];
    char magerr[72];
    char color[72];
} tide_refcat_columns;

/** The margin added to a field's radius: 0.1 · radius + 1/60 degree. */
TIDE_API double tide_refcat_margin_deg(double radius_deg);

/** Read a whole reference catalog file (FITS table or CSV, see above) into @p out (five F64
 *  columns; overwritten, free with tide_table_free). @p cols may be NULL (default names).
 *  Errors: TIDE_E_IO (missing or unreadable file, naming it), TIDE_E_NOTFOUND (a column is
 *  missing: the detail names the column and the file), TIDE_E_FORMAT (a CSV field that is
 *  not a number or an angle, a row with the wrong number of fields, an unterminated quote:
 *  the detail is "FILE:LINE: what"; a FITS column of text that is not an angle),
 *  TIDE_E_NOMEM. On failure @p out is empty. */
TIDE_API int tide_refcat_read(const char *path, const tide_refcat_columns *cols, tide_table *out);

/** Keep only the rows of @p t (the five-column layout) whose position lies within
 *  @p radius_deg of (@p ra, @p dec) (degrees, great circle); row order is kept. @p name names
 *  the source in messages. TIDE_E_EMPTY when no row is left ("NAME: no reference star within
 *  R deg of (RA, DEC)"); TIDE_E_INVAL for a radius <= 0 or > 180 or a non-finite centre. */
TIDE_API int tide_refcat_cone(tide_table *t, double ra, double dec, double radius_deg,
                              const char *name);

/** tide_refcat_read + tide_refcat_cone with radius @p radius_deg + tide_refcat_margin_deg:
 *  the stars of a local file around a field. */
TIDE_API int tide_refcat_load(const char *path, const tide_refcat_columns *cols, double ra,
                              double dec, double radius_deg, tide_table *out);

/** Run a user command that writes a reference catalog, and read it.
 *
 *  @p cmd_template is split into words at blanks before anything is substituted (single and
 *  double quotes group words, as in a shell, but nothing else of a shell is interpreted: no
 *  variables, globbing, pipes or redirections). Then, inside each word, {ra}, {dec} and
 *  {radius} become the cone (degrees, "%.9f", radius including the margin) and {out} a
 *  fresh temporary file name. The program (the first word, searched in PATH) is started
 *  with posix_spawnp, without a shell: the values substituted are numbers and a path tide
 *  made, so nothing in them can be read as a command (no injection through the field).
 *  The command writes a FITS or CSV catalog to {out} when the template names {out}, else to
 *  its standard output (which goes to a temporary file). Its standard input is /dev/null (and its
 *  standard output too when it writes {out}); its standard error is inherited. The catalog is then
 * read with @p cols and cut to the cone like a local file.
 *
 *  @param timeout_s  wall-clock limit; the command is killed (SIGKILL) past it; <= 0 = 60 s
 *  Errors: TIDE_E_INVAL (empty template, unbalanced quote, unknown {placeholder}),
 *  TIDE_E_IO (the program cannot be started, exits non-zero or by a signal: the detail
 *  names the program and the status), TIDE_E_TIMEOUT, and those of tide_refcat_read and
 *  tide_refcat_cone. Temporary files are removed in every case. */
TIDE_API int tide_refcat_from_command(const char *cmd_template, double ra, double dec,
                                      double radius_deg, const tide_refcat_columns *cols,
                                      double timeout_s, tide_table *out);

/** Split @p cmd_template into words and substitute the placeholders, as
 *  tide_refcat_from_command does (exposed for tests and for `tide` to show the command).
 *  @p outfile replaces {out} (may be NULL when the template has none). *argv receives a
 *  NULL-terminated malloc'd array of malloc'd words (free with tide_refcat_argv_free), *argc
 *  the number of words; *names_out is set to 1 when the template names {out}. */
TIDE_API int tide_refcat_command_argv(const char *cmd_template, double ra, double dec,
                                      double radius_deg, const char *outfile, char ***argv,
                                      int *argc, int *names_out);

/** Free an argv of tide_refcat_command_argv. NULL is a no-op. */
TIDE_API void tide_refcat_argv_free(char **argv);

/* ---- per-field cache ------------------------------------------------------------------ */

/** The cache directory: @p configured when non-NULL and non-empty, else the environment
 *  variable TIDE_REFCAT_CACHE. TIDE_E_NOTFOUND when neither is set (the caller then runs
 *  without a cache). */
TIDE_API int tide_refcat_cache_dir(const char *configured, char *out, int outlen);

/** The file name (without directory) of a cone: "refcat_HASH_RA_DEC_RAD.fits", where HASH
 *  is the 64-bit FNV-1a hash of @p source (a file path, a command template, a database
 *  table: whatever names the source) in hex, RA and DEC are the centre rounded to 0.001
 *  degree and RAD the radius rounded up to 0.001 degree. */
TIDE_API int tide_refcat_cache_name(const char *source, double ra, double dec, double radius_deg,
                                    char *out, int outlen);

/** Look a cone up in cache directory @p dir: 0 and the table in @p out on a hit;
 *  TIDE_E_NOTFOUND on a miss (also when the file is unreadable: a damaged entry is treated
 *  as absent, and refetched). */
TIDE_API int tide_refcat_cache_get(const char *dir, const char *source, double ra, double dec,
                                   double radius_deg, tide_table *out);

/** Store a cone's table in @p dir (created if missing, one level), atomically (written under
 *  a temporary name and renamed, so a concurrent reader sees the whole file or none).
 *  TIDE_E_IO naming the directory or file on failure. */
TIDE_API int tide_refcat_cache_put(const char *dir, const char *source, double ra, double dec,
                                   double radius_deg, const tide_table *t);

/** The stars around a field from a file (@p path) or a command (@p cmd_template; exactly one
 *  of the two is non-NULL), through the cache in @p cache_dir (NULL = no cache): a hit
 *  returns the cached cone; a miss fetches (tide_refcat_load or tide_refcat_from_command),
 *  stores the result and returns it. The cache key's source is the path or the template. */
TIDE_API int tide_refcat_fetch(const char *path, const char *cmd_template,
                               const tide_refcat_columns *cols, double ra, double dec,
                               double radius_deg, const char *cache_dir, tide_table *out);

/* ---- helpers --------------------------------------------------------------------------- */

/** Make the empty five-column table (RA, DEC, MAG, MAGERR, COLOR) with @p nrows rows (NaN). */
TIDE_API int tide_refcat_table_init(tide_table *t, int64_t nrows);

#ifdef __cplusplus
}
#endif
#endif
