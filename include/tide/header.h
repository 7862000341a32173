/* header.h — a FITS header as an ordered list of 80-character cards.
 *
 * Used to read keywords from frames, to build a WCS (wcslib parses the cards), and to write
 * headers of images and tables. Values are parsed with FITS rules (quoted strings, logicals T/F,
 * integers, reals with D or E exponents). Keys are case-insensitive and at most 8 characters
 * (HIERARCH keys are kept verbatim but not looked up). */
#ifndef TIDE_HEADER_H
#define TIDE_HEADER_H
#include "tide/export.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An ordered list of cards; each card is 80 characters plus a NUL. */
typedef struct tide_header {
    char (*cards)[81];
    int ncards;
    int capacity;
} tide_header;

/** Make an empty header. */
TIDE_API void tide_header_init(tide_header *h);
/** Release the cards. */
TIDE_API void tide_header_free(tide_header *h);
/** Replace @p dst by a copy of @p src. */
TIDE_API int tide_header_copy(tide_header *dst, const tide_header *src);

/** Append cards from a string of concatenated 80-character cards (cfitsio's
 *  fits_hdr2str layout); stops at END. */
TIDE_API int tide_header_parse(tide_header *h, const char *cards, int ncards);

/** Append one raw card (padded or cut to 80 characters). */
TIDE_API int tide_header_append_card(tide_header *h, const char *card);

/** Set (replace the first card with that key, or append) a keyword. @p comment may be NULL. */
TIDE_API int tide_header_set_str(tide_header *h, const char *key, const char *value,
                                 const char *comment);
TIDE_API int tide_header_set_int(tide_header *h, const char *key, int64_t value,
                                 const char *comment);
TIDE_API int tide_header_set_dbl(tide_header *h, const char *key, double value,
                                 const char *comment);
TIDE_API int tide_header_set_bool(tide_header *h, const char *key, int value, const char *comment);

/** Append a COMMENT or HISTORY card (@p key is "COMMENT" or "HISTORY"). */
TIDE_API int tide_header_add_text(tide_header *h, const char *key, const char *text);

/** Read a keyword. TIDE_E_NOTFOUND if absent (detail names the key), TIDE_E_FORMAT if its
 *  value has the wrong type. Integers convert to doubles; strings lose their quotes and
 *  trailing blanks. */
TIDE_API int tide_header_get_str(const tide_header *h, const char *key, char *out, int outlen);
TIDE_API int tide_header_get_int(const tide_header *h, const char *key, int64_t *out);
TIDE_API int tide_header_get_dbl(const tide_header *h, const char *key, double *out);
TIDE_API int tide_header_get_bool(const tide_header *h, const char *key, int *out);

/** Index of the first card with @p key, or -1. */
TIDE_API int tide_header_find(const tide_header *h, const char *key);

/** Remove every card with @p key; returns how many were removed. */
TIDE_API int tide_header_remove(tide_header *h, const char *key);

/** The cards concatenated (ncards * 80 characters, NUL-terminated, malloc'd; caller frees),
 *  the layout wcspih and fits_hdr2str use. *ncards receives the count. */
TIDE_API char *tide_header_to_string(const tide_header *h, int *ncards);

#ifdef __cplusplus
}
#endif
#endif
