/* rb_sources.h — where `tide rb train` gets labelled examples: a set of feature rows with
 * labels and a group per row (the pair or file it came from, so that the held-out part never
 * shares a pair with the training part). Each source appends to a set and describes itself
 * in one line for the model's training_set attribute; a new source (the store's labels) is
 * one more function of this shape. */
#ifndef TIDE_CLI_RB_SOURCES_H
#define TIDE_CLI_RB_SOURCES_H
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/header.h"
#include "tide/rb.h"

/** Labelled feature rows. */
typedef struct rb_set {
    int64_t n, cap;
    float *x;        /**< n × TIDE_RB_NFEAT */
    float *y;        /**< 1 real, 0 bogus */
    int64_t *group;  /**< the pair or file of each row */
    char desc[1024]; /**< the sources, one phrase each, for the model file */
} rb_set;

/** Release a set's rows and zero it. */
void rb_set_free(rb_set *s);

/** Append one row. */
int rb_set_add(rb_set *s, const float *x, float y, int64_t group);

/** Simulated pairs with truth: @p npairs pairs of @p size² pixels from seeds seed, seed + 1,
 *  ... differenced by tide_diff_run; a candidate within max(2, FWHM) pixels of a transient,
 *  variable star or moving object (either epoch) is real, one farther than 3 FWHM from all
 *  of them bogus (cosmic rays, hot pixels, bleed trails, satellite trails, mis-subtracted
 *  stars, noise), one in between left out. Every other pair keeps the candidates on flagged
 *  pixels (reject_bits 0), so that the artifacts reach the model; one pair in three has no
 *  star catalog.
 *  Groups are @p group0 + pair. Prints a line per pair unless @p quiet. */
int rb_source_sim(tide_ctx *ctx, int npairs, uint64_t seed, int size, int64_t group0, int quiet,
                  rb_set *s);

/** Human labels: @p labels (CSV lines "ROW,LABEL": ROW the 1-based row of @p cands, LABEL 1,
 *  0, real or bogus; a header line and # comments are skipped) for the candidates file
 *  @p cands, scored on the difference image @p diff (NULL: difference.fits beside it). The
 *  group of each row is @p group0 + its row. */
int rb_source_labels(tide_ctx *ctx, const char *cands, const char *labels, const char *diff,
                     int64_t group0, rb_set *s);

/** Human labels of a candidate store (`--store URI`, rb_source_store.c): every candidate
 *  whose real and bogus labels are not tied, its features from the stored difference cutout
 *  and fit row. The group of each row is @p group0 + its candidate id. */
int rb_source_store(const char *uri, int64_t group0, rb_set *s);

/** The PSF FWHM of a tide diff difference.fits header: the broader of FWHMSCI and FWHMTMPL
 *  (3 when neither is there). */
double rb_header_fwhm(const tide_header *h);

#endif
