/* review.h — the review page and its JSON API (issue 18): `tide review serve`. One HTTP
 * server (libmicrohttpd, one polling thread, so the store is used by one request at a time)
 * over a candidate store opened for writing; every byte it sends is built into tide (the
 * page's HTML, script and style are one string in the binary, the stamps PNGs drawn from the
 * stored cutouts). docs/review.md documents the API.
 *
 * Authentication: a reviewer's token (store_review.h) as "Authorization: Bearer TOKEN", or
 * the session cookie that POST /api/login sets (HttpOnly, SameSite=Strict) for the token it
 * is given. Without either, 401. A write made with the cookie must carry the session's CSRF
 * token in an X-CSRF-Token header, else 403. Request values reach SQL only as bound
 * parameters and never a file path (the stamp kind is one of four names). */
#ifndef TIDE_REVIEW_H
#define TIDE_REVIEW_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A running review server (opaque). */
typedef struct tide_review_server tide_review_server;

/** Serve the review page and API for store @p s (opened for writing; borrowed until
 *  tide_review_server_stop) on @p listen ("HOST:PORT", port 0: any free one). @p seed: the
 *  audit queue's. Errors: TIDE_E_INVAL (address), TIDE_E_IO (cannot bind or start). */
TIDE_API int tide_review_serve(tide_store *s, const char *listen, uint64_t seed,
                               tide_review_server **out);

/** The port the server listens on. */
TIDE_API int tide_review_server_port(const tide_review_server *r);

/** Stop the server (joins its thread) and free it; NULL is fine. */
TIDE_API void tide_review_server_stop(tide_review_server *r);

#ifdef __cplusplus
}
#endif
#endif
