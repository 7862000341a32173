/* review_internal.h — what the review server's files share (review_http.c: the daemon,
 * sessions and routing; review_api.c: the JSON answers; review_page.c: the page). */
#ifndef TIDE_SERVICE_REVIEW_INTERNAL_H
#define TIDE_SERVICE_REVIEW_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "tide/review.h"

/* An answer: status, content type, body (malloc'd, taken by the sender). */
typedef struct review_reply {
    unsigned int code;
    const char *type;
    char *body;
    size_t len;
} review_reply;

/* Who is asking. */
typedef struct review_who {
    int64_t reviewer; /* -1: nobody */
    char name[64];
} review_who;

/* A JSON answer {"error": msg} with status @p code. */
void review_error(review_reply *r, unsigned int code, const char *msg);

/* The JSON API's routes once the caller is known: GET /api/queue, /api/candidates/ID,
 * /api/candidates/ID/stamp/KIND.png, /api/summary, POST /api/candidates/ID/label (@p body:
 * the request's, NUL-terminated). @p query_by and @p query_limit: the query's by= and
 * limit= (NULL when absent). */
void review_api(tide_store *s, uint64_t seed, const review_who *who, const char *method,
                const char *url, const char *body, const char *query_by, const char *query_limit,
                review_reply *r);

/* The page (HTML with its script and style). */
extern const char review_page_html[];

#endif
