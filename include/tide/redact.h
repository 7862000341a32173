/* redact.h — passwords out of connection strings before any text leaves tide.
 *
 * Store and reference-catalog URIs (postgresql://user:password@host/db, pg:host=... password=...)
 * reach messages, log lines and JSON outputs. Every such text goes through tide_redact_uri()
 * first: tide_error() and tide_log() apply it to what they record, the CLI to what it prints. */
#ifndef TIDE_REDACT_H
#define TIDE_REDACT_H
#include "tide/export.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Copy @p in to @p out (capacity @p n, always NUL-terminated, truncated when too long) with
 *  every password replaced by "***": the password of a URI's user information
 *  ("scheme://user:SECRET@host" -> "scheme://user:***@host", for any scheme: a mistyped
 *  "postgresq://" or "mysql://" too; a password holding '@' or '/' unencoded is covered up to
 *  the '@' that ends it) and the value of a "password=" keyword ("password=SECRET",
 *  "password = 'SE CRET'", "?password=SECRET&..." -> "password=***"; the keyword in any case).
 *  Text without either comes out unchanged. @p in and @p out must not overlap; @p in NULL is
 *  read as "". Returns @p out, so a call can stand as a printf argument. */
TIDE_API const char *tide_redact_uri(const char *in, char *out, size_t n);

/** tide_redact_uri of @p text, then every further occurrence in it of a password that
 *  tide_redact_uri finds in @p uri, or of a piece of one between delimiters (/?#&@: and
 *  blank), of 4 characters or more, replaced by "***" as well: for a
 *  message built from what a library made of @p uri (libpq reads "postgresql://u:pa/ss@h" as
 *  host u, port pa, and says so). Same contract as tide_redact_uri. */
TIDE_API const char *tide_redact_uri_in(const char *text, const char *uri, char *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
