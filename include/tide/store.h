/* store.h — catalog stores: SQLite (embedded default) and PostgreSQL with Q3C (facility).
 *
 * A store holds two tables with the same content on both back ends (cone results are the
 * same tables; the SQL layouts differ, see below):
 *
 *   images   one row per processed frame: id, file, checksum (tide_store_file_checksum of the
 *            FITS file, the key: re-processing a frame replaces its row), processing date,
 *            tide version, header values, WCS summary, zero point, limiting magnitudes,
 *            quality figures and the full catalog header as text (see tide_store_frame for the
 *            column names).
 *   sources  one row per detected source: IMAGE_ID (images.id), SEQ (1-based row of the frame's
 *            catalog), then every numeric column of the catalog under its catalog name
 *            (ALPHA_J2000, DELTA_J2000, X_IMAGE, MAG_AUTO, FLAGS...). An array column of repeat
 *            r > 1 becomes r columns NAME_1 .. NAME_r (FLUX_APER_1, FLUX_APER_2...). Values
 *            keep the catalog's type, so they read back exactly (NaN and infinities too);
 *            cone results give integer columns as I64 and floating ones as F64. String
 *            columns are not stored. A column that appears for the first time is added (older
 *            rows read NaN there, or 0 for an integer column).
 *
 * SQL layouts. PostgreSQL: sources has one SQL column per value, typed as in the catalog
 * (float64 double precision, float32 real, int64 bigint, int32 integer, int16 and uint8
 * smallint; a later frame with a wider type under the same name widens the column with ALTER
 * TABLE ... TYPE, a rewrite). SQLite: sources holds CELL, IMAGE_ID, SEQ, ALPHA_J2000 and
 * DELTA_J2000 (NaN stored as NULL) as columns, the rowid SRC_ID (IMAGE_ID * 2^32 + the row's
 * rank in CELL order, from 1), and every other value packed in one BLOB column DATA (the
 * catalog's types, little-endian, in stored-column order; ~10x fewer values for SQLite to bind
 * and encode per row): table source_layouts gives each frame's packing as text, one "TYPE
 * NAME" line per value (TYPE f8 f4 i8 i4 i2 u1), and source_columns every name seen with its
 * kind. tide_store_cone and tide_store_all_sources unpack; plain SQL sees the BLOB. A SQLite
 * store of the earlier one-column-per-value layout is refused (TIDE_E_UNSUPPORTED).
 *
 * Sky index: SQLite stores CELL, the HEALPix NESTED index of the position at nside 2048
 * (order 11, cells of 1.72 arcmin; Górski et al. 2005, ApJ 622, 759), inserts a frame's rows
 * sorted by CELL and keeps, per frame and cell, the span of the frame's rows there (table
 * source_cells; no per-source index to update); a cone search computes a conservative cover of
 * the disc by cell ranges on the client, reads the matching spans and filters the candidates by
 * exact great-circle distance. PostgreSQL indexes q3c_ang2ipix(ALPHA_J2000, DELTA_J2000)
 * (Koposov & Bartunov 2006) and uses q3c_radial_query the same way (plus a BRIN index on
 * IMAGE_ID, for replacing a frame). CLUSTER sources USING sources_q3c (tide_store_exec) after
 * bulk loads makes large cones faster. The final test is tide_store_separation() on both
 * stores, so both return the same rows as a brute-force scan.
 *
 * Writes are one transaction per frame: the old rows of the same checksum are deleted, the image
 * row and all sources are inserted (SQLite: one prepared statement; PostgreSQL: binary COPY of
 * the rows in sky-cell order, so the q3c index takes its new keys leaf after leaf and a frame's
 * rows of one patch of sky share heap pages), and the transaction commits; any error rolls back,
 * so a store never holds half a frame. SQLite copies the WAL into the database file
 * (checkpoints) on a thread of the store handle after each frame instead of inside every few
 * commits; durability is that of the journal settings (tide_store_options), unchanged.
 *
 * A store handle is used by one thread at a time (SQLite runs without its per-call mutex).
 *
 * Connection settings come from the URI, the environment (PGHOST, PGPORT, PGDATABASE, PGUSER,
 * PGPASSWORD, PGSERVICE...) or libpq's service and password files, never from code. */
#ifndef TIDE_STORE_H
#define TIDE_STORE_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/header.h"
#include "tide/refcat.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tide_store tide_store;

/** Back ends. */
typedef enum { TIDE_STORE_SQLITE = 0, TIDE_STORE_PG = 1 } tide_store_kind;

/** Options for tide_store_open(). */
typedef struct tide_store_options {
    int connect_attempts;   /**< PostgreSQL: connection attempts before giving up [3] */
    int retry_delay_ms;     /**< wait after the first failed attempt, in ms [200] */
    double retry_backoff;   /**< each further wait is this many times longer [2.5] */
    int connect_timeout_s;  /**< libpq connect_timeout per attempt, 0 = libpq's [3]; a value
                                 in the URI wins */
    int sqlite_busy_ms;     /**< SQLite: wait this long for another writer's lock [5000] */
    int sqlite_synchronous; /**< SQLite: 1 = PRAGMA synchronous=NORMAL (durable in WAL except
                                 for the last transactions on power loss), 2 = FULL [1] */
    int read_only;          /**< 1: open an existing store for queries only, changing nothing
                                 (tide_store_open says how) [0] */
} tide_store_options;

/** Fill @p o with the defaults above. */
TIDE_API void tide_store_options_init(tide_store_options *o);

/** One frame's images row. Unknown numbers are NaN (or -1 for counts), unknown strings "".
 *  Column names in the images table are the field names. */
typedef struct tide_store_frame {
    int64_t id;             /**< images.id; set by put_frame and image(), ignored on input */
    char file[1024];        /**< the FITS file as given (path) */
    char checksum[72];      /**< lower-case hex key of the file (tide_store_file_checksum);
                                 the key: required by put_frame */
    char processed[32];     /**< processing date, ISO 8601 UTC ["" = now, filled by put] */
    char tide_version[32];  /**< tide version ["" = this build's, filled by put] */
    char date_obs[32];      /**< DATE-OBS */
    double mjd;             /**< MJD-OBS (or MJD) */
    double exptime;         /**< EXPTIME, s */
    char filter[32];        /**< FILTER */
    double airmass;         /**< AIRMASS */
    int64_t naxis1, naxis2; /**< frame size in pixels (-1 = unknown) */
    double ra_center;       /**< field centre, deg (ICRS) */
    double dec_center;      /**< field centre, deg */
    double scale_arcsec;    /**< pixel scale, arcsec/pixel */
    double rotation_deg;    /**< position angle of the +y axis, deg E of N */
    double fov_w_deg;       /**< field width, deg */
    double fov_h_deg;       /**< field height, deg */
    double zp;              /**< photometric zero point, mag */
    double ezp;             /**< its standard error, mag */
    int64_t zp_nstar;       /**< stars used for the zero point (-1 = unknown) */
    double maglim5;         /**< 5-sigma limiting magnitude */
    double maglim3;         /**< 3-sigma limiting magnitude */
    int64_t nsources;       /**< sources in the catalog [-1: put_frame uses the table's rows] */
    double fwhm;            /**< median FWHM, pixel */
    double sky;             /**< sky level, count */
    char *header;           /**< full catalog header as text (80-character cards, may be NULL).
                                 put_frame only reads it; tide_store_image() allocates it:
                                 release with tide_store_frame_free(). */
} tide_store_frame;

/** Set every field to "unknown" (NaN, -1, "", NULL). */
TIDE_API void tide_store_frame_init(tide_store_frame *f);

/** Free the header text tide_store_image() or tide_store_frame_from_header() allocated (the
 *  struct itself is the caller's); the pointer is reset to NULL. */
TIDE_API void tide_store_frame_free(tide_store_frame *f);

/** Fill the fields a FITS/catalog header has (absent keys leave the field as it is): DATE-OBS,
 *  MJD-OBS (or MJD), EXPTIME, FILTER, AIRMASS, IMAGEW/IMAGEH (else NAXIS1/NAXIS2), PROCDATE,
 *  ZP, EZP, CATNSTAR, MAGLIM5, MAGLIM3, NDETECT, FWHM (or SEEING/PSFFWHM), SKYLEVEL, TIDEVERS,
 *  CENTRA/CENTDEC/PIXSCALE/ROTANGLE/FOVX/FOVY, then the WCS summary (tide_wcs_summarize) when
 *  the header holds a celestial WCS and the frame size is known, and @p f->header (every
 *  card, malloc'd; a previous one is freed; release with tide_store_frame_free()). */
TIDE_API int tide_store_frame_from_header(tide_store_frame *f, const tide_header *h);

/** Pieces of the checksum's tree (8 MiB). */
#define TIDE_STORE_CHECKSUM_CHUNK ((int64_t)8 << 20)

/** The store key of a file, as 64 lower-case hex digits + NUL in @p out_hex (at least 65
 *  bytes): for a file of at most TIDE_STORE_CHECKSUM_CHUNK bytes, its SHA-256 (FIPS 180-4; what
 *  sha256sum prints); for a larger one, the SHA-256 of the concatenated 32-byte SHA-256 digests
 *  of its consecutive TIDE_STORE_CHECKSUM_CHUNK-byte pieces (the last one shorter), i.e. in
 *  Python sha256(b"".join(sha256(p).digest() for p in pieces)).hexdigest(). The pieces are
 *  hashed in parallel (all cores, OpenMP: OMP_NUM_THREADS caps them) by libcrypto, which uses
 *  the x86 SHA extensions when the processor has them. TIDE_E_IO when the file cannot be read
 *  (or is not a regular file). */
TIDE_API int tide_store_file_checksum(const char *path, char *out_hex);

/** Plain SHA-256 (FIPS 180-4) of a memory buffer, as hex digits (as above); the empty string
 *  when libcrypto cannot allocate its state. */
TIDE_API void tide_store_sha256_hex(const void *data, int64_t n, char *out_hex);

/** Open (and create when needed) a store.
 *  @p uri "sqlite:PATH", or a PATH ending in .db, .sqlite or .sqlite3: SQLite, the file and its
 *         tables are created when missing (WAL journal);
 *         "postgresql://..." or "postgres://..." (a libpq URI), or "pg:" followed by a libpq
 *         conninfo string ("pg:" alone: everything from the PG* environment variables and
 *         ~/.pg_service.conf): PostgreSQL; tables, indexes and the q3c extension are created
 *         when missing (the role needs the rights for that on first use).
 *  @p opt NULL = defaults. Connecting to PostgreSQL is tried opt->connect_attempts times with
 *  growing waits; then TIDE_E_DB whose detail names the target (host, port, database, user;
 *  never the password) and libpq's message.
 *  With opt->read_only the store must exist and nothing is created or changed: SQLite opens
 *  the file read-only (no journal-mode switch, no schema; a read-only file, directory or mount
 *  is read as immutable when SQLite cannot keep its WAL index there; beside a WAL store in a
 *  writable directory SQLite leaves its -wal and -shm files, as any reader does, the store file
 *  itself unchanged) and PostgreSQL runs the
 *  session with default_transaction_read_only. A database that is not a tide store (an SQLite
 *  file or database without tide's tables) is refused with TIDE_E_FORMAT before anything is
 *  read from its tables, a store of another sky-cell scheme with TIDE_E_UNSUPPORTED; writes
 *  through a read-only handle fail with TIDE_E_INVAL. */
TIDE_API int tide_store_open(const char *uri, const tide_store_options *opt, tide_store **out);

/** 1 when @p uri names a PostgreSQL store or table ("postgresql://", "postgres://" or
 *  "pg:"), 0 otherwise (an SQLite store, or a file). The one place that tells them apart. */
TIDE_API int tide_store_uri_is_pg(const char *uri);

/** Close and free (NULL is fine). */
TIDE_API void tide_store_close(tide_store *s);

/** The back end of an open store. */
TIDE_API tide_store_kind tide_store_get_kind(const tide_store *s);

/** Store one frame: its images row and its catalog, in one transaction. @p sources must have
 *  F64 columns ALPHA_J2000 and DELTA_J2000 (deg; rows with a non-finite position are stored
 *  with CELL -1 in SQLite and are never found by cone searches). A frame with the same checksum
 *  already stored is replaced: its image row and all its sources are deleted in the same
 *  transaction. On error nothing is changed. The new images.id goes to *id_out when non-NULL. */
TIDE_API int tide_store_put_frame(tide_store *s, const tide_store_frame *frame,
                                  const tide_table *sources, int64_t *id_out);

/** Delete the frame with checksum @p checksum (its image row and all its sources) in one
 *  transaction. TIDE_E_NOTFOUND when there is none. */
TIDE_API int tide_store_delete_frame(tide_store *s, const char *checksum);

/** Cone search: every stored source within @p radius_deg (great circle, tide_store_separation)
 *  of (@p ra, @p dec) (deg). @p out (initialised or freed by the caller; it is reset) gets
 *  columns IMAGE_ID (I64), FILE (STR), SEQ (I64) and every stored source column (integer
 *  columns I64, real ones F64), rows ordered by IMAGE_ID then SEQ. @p limit > 0 stops after that
 *  many rows in that order [0 = all]. */
TIDE_API int tide_store_cone(tide_store *s, double ra, double dec, double radius_deg, int64_t limit,
                             tide_table *out);

/** Every stored source (all columns, as tide_store_cone); for tests and exports. */
TIDE_API int tide_store_all_sources(tide_store *s, tide_table *out);

/** The images row whose checksum or file equals @p file_or_checksum (when it names a readable
 *  file, its checksum is tried first; of several rows with that file, the newest). TIDE_E_NOTFOUND
 *  when there is none. @p out is overwritten (a header it held is not freed); release its new
 *  header with tide_store_frame_free(). */
TIDE_API int tide_store_image(tide_store *s, const char *file_or_checksum, tide_store_frame *out);

/** Number of rows in images and in sources (either pointer may be NULL). */
TIDE_API int tide_store_count(tide_store *s, int64_t *nimages, int64_t *nsources);

/** Run SQL statements that return no rows (maintenance such as "VACUUM" or "CLUSTER
 *  sources", or a test's trigger), outside any frame transaction. The SQL is the caller's:
 *  never build it from untrusted input. */
TIDE_API int tide_store_exec(tide_store *s, const char *sql);

/** Great-circle separation in degrees (Vincenty's atan2 form, accurate at all angles); the
 *  distance every cone search tests. */
TIDE_API double tide_store_separation(double ra1, double dec1, double ra2, double dec2);

/** Reference stars from a PostgreSQL table with a Q3C index on (ra, dec): every row within
 *  @p radius_deg of (@p ra, @p dec) (q3c_radial_query, then tide_store_separation), into @p out
 *  (overwritten as by tide_refcat_table_init: pass an empty or freed table) with F64 columns
 *  RA, DEC, MAG, MAGERR, COLOR, ordered by MAG. @p uri as for tide_store_open (a PostgreSQL
 *  one); @p table may be schema-qualified ("gaia.dr3"; each part matched as written, quoted).
 *  @p cols names the table's columns as tide_refcat_columns says (NULL or "" = RA, DEC, MAG,
 *  MAGERR, COLOR, matched without regard to case; a missing MAGERR / COLOR is NaN unless
 *  named explicitly). TIDE_E_NOTFOUND for a missing required column, TIDE_E_DB for an
 *  unreachable server or a failing query (a missing table). */
TIDE_API int tide_store_refcat_cone(const char *uri, const char *table,
                                    const tide_refcat_columns *cols, double ra, double dec,
                                    double radius_deg, tide_table *out);

#ifdef __cplusplus
}
#endif
#endif
