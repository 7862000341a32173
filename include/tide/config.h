/* config.h — the instrument configuration: keyword map, camera defaults, processing parameters.
 *
 * A configuration is a set of typed keys in four sections, known from a built-in schema:
 *
 *   instrument  name and description of the instrument
 *   keywords    internal name -> the instrument's FITS keyword ("gain": "GAINA"); null = the
 *               instrument has no such keyword, the camera default is always used
 *   camera      defaults used when a keyword is missing from a frame (gain, rdnoise, ...)
 *   processing  parameters of the pipeline stages (detect_thresh, back_size, aper_radii, ...)
 *
 * `tide config --keys` (or tide_config_schema()) lists every key with its type, default, unit
 * and meaning. Values come in layers, each overriding the one before, and every key remembers
 * which layer set it (its origin):
 *
 *   built-in defaults -> default.json -> INSTRUMENT.json -> command-line overrides (--set)
 *
 * A file is one JSON object of sections, each an object of keys:
 *
 *   { "instrument": {"name": "DECam"},
 *     "keywords":   {"gain": "GAINA", "pixsize": null},
 *     "camera":     {"pixsize_um": 15.0},
 *     "processing": {"aper_radii": [4, 6, 10]} }
 *
 * A file need not name every key; what it leaves out keeps its earlier value. JSON null clears a
 * value (the key becomes unset). Keys whose name begins with '_' are comments and ignored, at
 * any level. An unknown section or key, a value of the wrong type or out of range, a duplicate
 * key and malformed JSON are all TIDE_E_CONFIG, with a detail "FILE:LINE:COLUMN: what" (1-based
 * line and column, columns counted in characters like jansson's). A file with an error changes
 * nothing: it is validated whole before it is applied.
 *
 * Positions of semantic errors: jansson reports positions of syntax errors but keeps none for
 * the values it parsed, so after a successful parse tide scans the source text once more with
 * a small tokenizer (strings, brackets, commas, colons; the text is known to be valid JSON) and
 * records where each key of the first two levels and its value start. Errors then point at the
 * offending key (unknown key) or value (wrong type, out of range).
 *
 * Configurations are plain values: no globals, nothing cached between objects; pass them
 * explicitly. A configuration is not thread-safe for writing; reading from many threads is. */
#ifndef TIDE_CONFIG_H
#define TIDE_CONFIG_H
#include "tide/export.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Value types of keys. */
typedef enum {
    TIDE_CFG_NUMBER = 0,  /**< a JSON number (integers accepted), stored as double */
    TIDE_CFG_INTEGER = 1, /**< a JSON integer, stored as int64_t */
    TIDE_CFG_STRING = 2,  /**< a JSON string */
    TIDE_CFG_BOOL = 3,    /**< true or false */
    TIDE_CFG_ARRAY = 4,   /**< a non-empty JSON array of numbers (at most 64), stored as doubles */
    TIDE_CFG_KEYWORD = 5  /**< a JSON string that is a FITS keyword: 1-8 of A-Z 0-9 - _
                               (lower case is accepted and upper-cased) */
} tide_config_type;

/** The layers, in the order they are applied. */
typedef enum {
    TIDE_CONFIG_BUILTIN = 0,    /**< compiled-in defaults (the schema) */
    TIDE_CONFIG_DEFAULT = 1,    /**< default.json (site defaults) */
    TIDE_CONFIG_INSTRUMENT = 2, /**< INSTRUMENT.json given with --config */
    TIDE_CONFIG_OVERRIDE = 3    /**< command-line --set section.key=value */
} tide_config_layer;

/** One key of the built-in schema. */
typedef struct tide_config_key {
    const char *section; /**< "camera" */
    const char *name;    /**< "gain" */
    tide_config_type type;
    const char *fallback; /**< built-in default as --set text ("1.0", "3,5,8"); NULL = unset */
    double lo, hi;        /**< valid range of numbers, integers and array elements (inclusive
                               unless lo_open); -INFINITY / INFINITY = unbounded */
    int lo_open;          /**< 1: the value must be strictly greater than lo */
    const char *unit;     /**< "e-/ADU", "pixel", "" */
    const char *doc;      /**< one line: what the key means */
} tide_config_key;

/** Where a key's current value came from. */
typedef struct tide_config_origin {
    tide_config_layer layer;
    const char *file; /**< the file that set it (DEFAULT, INSTRUMENT layers), else NULL; owned by
                           the configuration */
    int line, column; /**< position of the value in that file (1-based), 0 when not from a file */
} tide_config_origin;

/** A configuration (opaque). */
typedef struct tide_config tide_config;

/** The built-in schema: *n receives the number of keys; the table is constant. */
TIDE_API const tide_config_key *tide_config_schema(int *n);

/** Name of a type for messages: "number", "integer", "string", "bool", "array of numbers",
 *  "FITS keyword". */
TIDE_API const char *tide_config_type_name(tide_config_type t);

/** Name of a layer: "built-in", "default.json", "instrument", "override". */
TIDE_API const char *tide_config_layer_name(tide_config_layer l);

/** A configuration holding the built-in defaults only. */
TIDE_API int tide_config_create(tide_config **out);

/** A deep copy of @p src (values and origins). */
TIDE_API int tide_config_copy(tide_config **out, const tide_config *src);

/** Release. NULL is a no-op. */
TIDE_API void tide_config_free(tide_config *cfg);

/** Merge the JSON file @p path as layer @p layer (TIDE_CONFIG_DEFAULT or _INSTRUMENT).
 *  TIDE_E_IO if the file cannot be read, TIDE_E_CONFIG for any error in it (detail
 *  "PATH:LINE:COLUMN: what"). On error @p cfg is unchanged. */
TIDE_API int tide_config_merge_file(tide_config *cfg, const char *path, tide_config_layer layer);

/** Merge JSON text (@p len bytes; @p name stands for the file in messages and origins). */
TIDE_API int tide_config_merge_string(tide_config *cfg, const char *text, size_t len,
                                      const char *name, tide_config_layer layer);

/** Apply one command-line override "section.key=value" (layer TIDE_CONFIG_OVERRIDE). The value
 *  is text, checked against the key's type: a number ("4.2", "1e3"), an integer, true/false
 *  (also yes/no, on/off, 1/0), a string as is, an array as "3,5,8" or "[3, 5, 8]"; "null"
 *  clears the key. TIDE_E_CONFIG with a detail naming the assignment if anything is wrong. */
TIDE_API int tide_config_set(tide_config *cfg, const char *assignment);

/** Find default.json: in $TIDE_CONFIG_DIR, then the installed share/tide/config (compile-time
 *  TIDE_CONFIG_INSTALL_DIR), then the source tree's config/ (compile-time
 *  TIDE_SOURCE_CONFIG_DIR, else derived from this file's location), the first that exists.
 *  Writes the path into @p out; TIDE_E_NOTFOUND if there is none (not an error for loading:
 *  the built-in defaults stand alone). */
TIDE_API int tide_config_find_default(char *out, size_t outlen);

/** How tide_config_load builds a configuration. Zero-initialised: search default.json, no
 *  instrument file, no overrides. */
typedef struct tide_config_load_options {
    const char *default_path;     /**< default.json to use; NULL = search; "" = none [NULL] */
    const char *instrument_path;  /**< INSTRUMENT.json; NULL = none [NULL] */
    const char *const *overrides; /**< "section.key=value" strings [NULL] */
    int noverrides;               /**< how many [0] */
} tide_config_load_options;

/** Build a configuration through all the layers: built-ins, default.json, the instrument file,
 *  the overrides, in that order. @p opt may be NULL. */
TIDE_API int tide_config_load(tide_config **out, const tide_config_load_options *opt);

/* ---- typed getters. @p key is "section.key". An unknown key or a getter of the wrong type is
 *      TIDE_E_INVAL (a bug in the caller); an unset key is TIDE_E_NOTFOUND. ---------------- */

/** A NUMBER or INTEGER key as a double. */
TIDE_API int tide_config_get_dbl(const tide_config *cfg, const char *key, double *out);
/** An INTEGER key. */
TIDE_API int tide_config_get_int(const tide_config *cfg, const char *key, int64_t *out);
/** A STRING or KEYWORD key; the pointer stays valid until the key is changed or @p cfg freed. */
TIDE_API int tide_config_get_str(const tide_config *cfg, const char *key, const char **out);
/** A BOOL key (0 or 1). */
TIDE_API int tide_config_get_bool(const tide_config *cfg, const char *key, int *out);
/** An ARRAY key: *vals points into @p cfg (valid as for get_str), *n elements. */
TIDE_API int tide_config_get_array(const tide_config *cfg, const char *key, const double **vals,
                                   int *n);

/** 1 if @p key is known and set, 0 if unset or unknown. */
TIDE_API int tide_config_is_set(const tide_config *cfg, const char *key);

/** Where @p key's value came from. TIDE_E_INVAL for an unknown key. */
TIDE_API int tide_config_origin_of(const tide_config *cfg, const char *key,
                                   tide_config_origin *out);

/** Format an origin as "built-in", "PATH:LINE:COLUMN" or "override" into @p buf. */
TIDE_API void tide_config_origin_format(const tide_config_origin *o, char *buf, size_t len);

/** Flags of tide_config_write_json. */
enum {
    TIDE_CONFIG_JSON_ORIGINS = 1 /**< add "_origin" to each section: key -> where it was set */
};

/** Write the configuration as one JSON object of sections (keys in schema order, unset keys as
 *  null), indented by @p indent spaces at the outer level, without a trailing newline. Without
 *  TIDE_CONFIG_JSON_ORIGINS the output is itself a valid configuration file; with it, the
 *  "_origin" members are comments for the loader, so it still is. Numbers are written with the
 *  fewest digits that read back to the same double. Passwords in string values (a store URI's
 *  "user:SECRET@", a conninfo's "password=SECRET") are written as *** (tide_redact_uri): an
 *  output never shows a secret. TIDE_E_IO if the write fails. */
TIDE_API int tide_config_write_json(const tide_config *cfg, FILE *f, int indent, int flags);

#ifdef __cplusplus
}
#endif
#endif
