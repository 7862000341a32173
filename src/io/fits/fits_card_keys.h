/* fits_card_keys.h — a header card's keyword as cfitsio finds it, and the keywords an HDU has
 * already given a value, for the scan of fits_scan.c.
 *
 * cfitsio 4.2.0 looks keywords up more loosely than the standard writes them (getkey.c,
 * ffgcrd/ffgknm/ffpsvc): a card's name is everything up to its first blank or '=' (so
 * "ZTILE2=0" is ZTILE2), compared upper-cased ("ztile2" is ZTILE2), a HIERARCH card is named
 * by what follows HIERARCH ("HIERARCH ZTILE2 = 0" is ZTILE2), and a value follows the first
 * '=' when columns 9-10 are not "= ". A lookup starts at the card after the last one read and
 * wraps, so of two cards with one name it may take either. tide's header reader follows the
 * standard (FITS 4.0 §4.1). Where the two would read a keyword that either interprets
 * differently, the scan refuses the header: a ZTILEn = 0 that cfitsio sees and tide does not
 * is a division by zero in cfitsio (docs/cfitsio-bugs.md §5). */
#ifndef TIDE_IO_FITS_CARD_KEYS_H
#define TIDE_IO_FITS_CARD_KEYS_H

#include <stddef.h>
#include <stdint.h>

/** The keyword name cfitsio's lookup sees in the 80-byte card @p card, upper-cased, into
 * @p name (at least 72 bytes; "" for a blank name). Returns 1 when the card is in the
 * standard's form for a valued keyword (name left-justified in columns 1-8 of upper-case
 * letters, digits, '-' and '_', then "= " in columns 9-10), 0 otherwise. */
int tide_fits_cfitsio_key_name(const char *card, char *name);

/** A set of keyword names, each with the value text of the card that first gave it. */
typedef struct tide_key_set {
    struct tide_key_entry *slot; /* open addressing, capacity a power of two */
    size_t cap, n;
} tide_key_set;

/** Record keyword @p key (at most 8 characters) with value text @p value (@p len bytes, the
 * card after "= " up to its comment, blanks trimmed by the caller). Returns 0 when new or the
 * same as before, 1 when the keyword was already given another value (*first_card then holds
 * that card's 0-based index), -1 when out of memory. */
int tide_key_set_put(tide_key_set *s, const char *key, const char *value, size_t len, int64_t card,
                     int64_t *first_card);

/** Release the set's memory; it may be used again, empty. */
void tide_key_set_free(tide_key_set *s);

#endif
