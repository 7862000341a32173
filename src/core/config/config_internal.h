/* config_internal.h — what the config_*.c files share: the value store, text and JSON value
 * parsing, the key-position scanner and the JSON writers. Not part of the public API; the io
 * layer (instrument.c) may use the JSON writers. */
#ifndef TIDE_CONFIG_INTERNAL_H
#define TIDE_CONFIG_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tide/config.h"

/** Longest array a key may hold. */
#define TIDE_CFG_MAX_ARRAY 64

/** One value; which member is meaningful follows the key's type. */
typedef struct tide_cfg_value {
    int set;     /**< 0: unset (null) */
    double num;  /**< NUMBER */
    int64_t i;   /**< INTEGER */
    int b;       /**< BOOL */
    char *str;   /**< STRING, KEYWORD (malloc'd) */
    double *arr; /**< ARRAY (malloc'd) */
    int n;       /**< ARRAY length */
} tide_cfg_value;

typedef struct tide_cfg_slot {
    tide_cfg_value v;
    tide_config_origin origin;
} tide_cfg_slot;

struct tide_config {
    int nkeys;
    tide_cfg_slot *slots; /**< one per schema key, schema order */
    char **files;         /**< names of merged files, owned; origins point at them */
    int nfiles;
};

/** Index of a key in the schema, or -1. */
int tide_cfg_index(const char *section, const char *name);
/** Index of "section.key", or -1. */
int tide_cfg_index_dotted(const char *dotted);
/** 1 if @p section is a known section name. */
int tide_cfg_section_known(const char *section);
/** The closest known key name of @p section to @p name (or closest section name when
 *  @p section is NULL) if it is a plausible typo, else NULL. */
const char *tide_cfg_suggest(const char *section, const char *name);

/** Parse --set text into a value of key @p k. On error returns TIDE_E_CONFIG and writes why
 *  ("must be a number") into @p why, without recording a detail. */
int tide_cfg_value_from_text(const tide_config_key *k, const char *text, tide_cfg_value *out,
                             char *why, size_t whylen);
/** Check a number against the key's range; 0 or TIDE_E_CONFIG with @p why. */
int tide_cfg_check_range(const tide_config_key *k, double v, char *why, size_t whylen);
/** Check and upper-case a FITS keyword in place; 0 or TIDE_E_CONFIG with @p why. */
int tide_cfg_check_keyword(char *s, char *why, size_t whylen);
void tide_cfg_value_free(tide_cfg_value *v);
int tide_cfg_value_copy(tide_cfg_value *dst, const tide_cfg_value *src);

/** Remember a file name in @p cfg; returns the owned copy (NULL on out of memory). */
const char *tide_cfg_intern_file(tide_config *cfg, const char *name);

/** Where a key of the first two levels of a JSON text sits. */
typedef struct tide_cfg_pos {
    char *section;         /**< the level-1 key (NULL for level-1 entries themselves) */
    char *key;             /**< the key, unescaped */
    int key_line, key_col; /**< its opening quote */
    int val_line, val_col; /**< first character of its value */
} tide_cfg_pos;

/** Scan JSON text (already known to be valid) for the keys of the top-level object and of
 *  the objects directly inside it. *out is malloc'd; free with tide_cfg_pos_free. */
int tide_cfg_scan_positions(const char *text, size_t len, tide_cfg_pos **out, int *n);
void tide_cfg_pos_free(tide_cfg_pos *p, int n);

/** JSON writers: a string literal with escapes; a finite double with the fewest digits that
 *  read back exactly (with ".0" appended when @p as_real and it would read as an integer). */
void tide_cfg_json_string(FILE *f, const char *s);
void tide_cfg_json_number(FILE *f, double v, int as_real);

#endif
