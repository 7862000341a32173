/* tide_test.h — a minimal test harness: CHECK macros that count failures and report the
 * expression, file and line; main returns TIDE_TEST_RESULT(). Exit code 77 means skipped. */
#ifndef TIDE_TEST_H
#define TIDE_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/tide.h"

static int tide_test_failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            tide_test_failures++;                                                                  \
        }                                                                                          \
    } while (0)

/* CHECK_OK: a tide call must return 0; prints the status and detail otherwise. */
#define CHECK_OK(call)                                                                             \
    do {                                                                                           \
        int tide_st_ = (call);                                                                     \
        if (tide_st_ != 0) {                                                                       \
            fprintf(stderr, "%s:%d: %s returned %d (%s): %s\n", __FILE__, __LINE__, #call,         \
                    tide_st_, tide_strerror(tide_st_), tide_error_detail());                       \
            tide_test_failures++;                                                                  \
        }                                                                                          \
    } while (0)

/* CHECK_CLOSE: |a - b| <= tol, printing both values on failure. */
#define CHECK_CLOSE(a, b, tol)                                                                     \
    do {                                                                                           \
        double tide_a_ = (double)(a), tide_b_ = (double)(b);                                       \
        if (!(fabs(tide_a_ - tide_b_) <= (tol))) {                                                 \
            fprintf(stderr, "%s:%d: CHECK_CLOSE failed: %s = %.10g, %s = %.10g, tol %g\n",         \
                    __FILE__, __LINE__, #a, tide_a_, #b, tide_b_, (double)(tol));                  \
            tide_test_failures++;                                                                  \
        }                                                                                          \
    } while (0)

/* A context of backend @p b with @p threads CPU threads (0: all cores); NULL, counted as a
 * failure, when it cannot be made. */
static inline tide_ctx *tide_test_ctx(tide_backend b, int threads) {
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = b;
    o.threads = threads;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    return ctx;
}

/* Path of a file in ../shared/data (TIDE_SHARED_DATA); aborts the test if unset. */
static inline const char *tide_test_data(const char *rel) {
    static char buf[4096];
    const char *root = getenv("TIDE_SHARED_DATA");
    if (!root) {
        fprintf(stderr, "TIDE_SHARED_DATA is not set\n");
        exit(1);
    }
    snprintf(buf, sizeof buf, "%s/%s", root, rel);
    return buf;
}

#define TIDE_TEST_SKIP(why)                                                                        \
    do {                                                                                           \
        printf("SKIP: %s\n", why);                                                                 \
        return 77;                                                                                 \
    } while (0)

#define TIDE_TEST_RESULT()                                                                         \
    (tide_test_failures ? (fprintf(stderr, "%d check(s) failed\n", tide_test_failures), 1)         \
                        : (printf("ok\n"), 0))

#endif
