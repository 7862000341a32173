/* store_review.h — the review tools' side of a candidate store (store_cand.h): named
 * reviewers with secret tokens, their labels, the review queues, per-reviewer summaries and
 * the labels as a table for export and training (issue 18).
 *
 * Tokens. tide_store_add_reviewer draws 32 random bytes (getrandom), returns them once as
 * 64 hexadecimal characters and stores only their SHA-256 (reviewers.token_hash): a copy of
 * the store does not let anyone sign in.
 *
 * Labels. One current label per reviewer and candidate: a new one replaces the old (with its
 * tags, comment and time).
 *
 * Queues (all SQL over candidates and labels, ties broken by candidate id):
 *   uncertainty   candidates not yet labelled by the reviewer first, then by |score − 0.5|
 *                 ascending (the least certain score first), unscored candidates last;
 *   disagreement  candidates whose labels differ (two reviewers, or real against unsure...),
 *                 or with a label that contradicts the score (real with score < 0.5, bogus
 *                 with score > 0.5), those with the most distinct labels first;
 *   audit         a random sample, fixed by a seed (the Lehmer generator from id + seed),
 *                 candidates not yet labelled by the reviewer first. */
#ifndef TIDE_STORE_REVIEW_H
#define TIDE_STORE_REVIEW_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/store.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The review queues. */
typedef enum {
    TIDE_QUEUE_UNCERTAINTY = 0,
    TIDE_QUEUE_DISAGREEMENT = 1,
    TIDE_QUEUE_AUDIT = 2
} tide_review_queue_kind;

/** The queue called @p name ("uncertainty", "disagreement", "audit"), or -1. */
TIDE_API int tide_review_queue_parse(const char *name);

/** Length of a reviewer token (hexadecimal characters, without the NUL). */
#define TIDE_REVIEW_TOKEN_LEN 64

/** Add reviewer @p name (1..63 printable characters, unique) with a new token, written into
 *  @p token (TIDE_REVIEW_TOKEN_LEN + 1 bytes); its id into *id (may be NULL). Errors:
 *  TIDE_E_INVAL (bad name, name taken, read-only store), TIDE_E_IO (no random bytes),
 *  TIDE_E_DB. */
TIDE_API int tide_store_add_reviewer(tide_store *s, const char *name, char *token, int64_t *id);

/** The reviewer whose token is @p token: id into *id, name into @p name (@p cap bytes).
 *  TIDE_E_NOTFOUND for any token that is not a reviewer's (malformed ones too). */
TIDE_API int tide_store_reviewer_by_token(tide_store *s, const char *token, int64_t *id, char *name,
                                          int cap);

/** The id of reviewer @p name into *id. TIDE_E_NOTFOUND when there is none. */
TIDE_API int tide_store_reviewer_id(tide_store *s, const char *name, int64_t *id);

/** Set reviewer @p reviewer_id's label of candidate @p cand_id: @p label "real", "bogus" or
 *  "unsure"; @p tags and @p comment free text (NULL: none; at most 1000 bytes each), the time
 *  now (ISO 8601 UTC). Errors: TIDE_E_INVAL (bad label, texts too long), TIDE_E_NOTFOUND (no
 *  such candidate or reviewer), TIDE_E_DB. */
TIDE_API int tide_store_put_label(tide_store *s, int64_t cand_id, int64_t reviewer_id,
                                  const char *label, const char *tags, const char *comment);

/** Queue @p kind for reviewer @p reviewer_id (-1: nobody's labels first): at most @p limit
 *  candidate ids into @p ids, their count into *n. @p seed: the audit sample's. */
TIDE_API int tide_store_review_queue(tide_store *s, int kind, int64_t reviewer_id, int64_t limit,
                                     uint64_t seed, int64_t *ids, int64_t *n);

/** What a reviewer has done. */
typedef struct tide_review_summary {
    int64_t nlabels;                /**< labels given */
    int64_t nreal, nbogus, nunsure; /**< of each value */
    int64_t npairs, nagree;         /**< label pairs shared with other reviewers, equal */
    int64_t nmodel, nmodel_agree;   /**< real/bogus labels of scored candidates, and those
                                         on the score's side of 0.5 */
} tide_review_summary;

/** The summary of reviewer @p reviewer_id. */
TIDE_API int tide_store_review_summary(tide_store *s, int64_t reviewer_id,
                                       tide_review_summary *out);

/** Every label, ordered by id, into @p out (reset): LABEL_ID, CAND_ID, DIFF_ID, SEQ,
 *  REVIEWER_ID (I64), SCORE (F64, NaN: none), REVIEWER (STR 64), LABEL (STR 8), TAGS
 *  (STR 256), COMMENT (STR 512), TIME (STR 32); longer texts are cut. @p cand_id >= 0: only
 *  that candidate's labels. */
TIDE_API int tide_store_labels(tide_store *s, int64_t cand_id, tide_table *out);

#ifdef __cplusplus
}
#endif
#endif
