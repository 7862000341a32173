/* store_cand_cols.h — what the candidate tables' files share (store_cand.c: schema and
 * writes; store_cand_read.c: queries): the diffs columns, their kinds and where each lives in
 * tide_store_diff. */
#ifndef TIDE_STORE_CAND_COLS_H
#define TIDE_STORE_CAND_COLS_H
#include <stddef.h>

#include "store_sql.h"
#include "tide/store_cand.h"

/* One diffs column: name, kind ('T' text of a char array, 'R' double, 'I' int64) and the
 * field's offset in tide_store_diff. */
typedef struct tide_scand_col {
    const char *name;
    char kind;
    size_t off;
    size_t size; /* of a text field */
} tide_scand_col;

extern const tide_scand_col tide_scand_diff_cols[];
extern const int tide_scand_ndiff_cols;

/* Create the tables of store_cand.h when missing (a store opened for writing). */
int tide_store_cand_schema(tide_store *s);
/* Add the reviewers' token_hash column to a store made before it (store_review.c). */
int tide_store_review_schema(tide_store *s);

/* Candidate columns the store names itself (not taken from a candidate table). */
int tide_scand_reserved(const char *name);

#endif
