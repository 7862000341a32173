/* checked.h — overflow-safe size arithmetic for sizes that come from a file or a user.
 *
 * A FITS header can claim NAXIS2 = 2^58 + 1: multiplied by the other axes and the pixel size,
 * the byte count wraps to a small number, the allocation succeeds and the read overruns it.
 * Every product of sizes read from outside goes through these helpers, which report the
 * overflow instead of wrapping (gcc and clang builtins, exact for every input). Not public. */
#ifndef TIDE_CORE_CHECKED_H
#define TIDE_CORE_CHECKED_H
#include <stddef.h>
#include <stdint.h>

/** *out = a * b; returns 0, or -1 (and leaves *out unspecified) when it overflows int64. */
static inline int tide_mul_i64(int64_t a, int64_t b, int64_t *out) {
    return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}

/** *out = a + b; returns 0, or -1 when it overflows int64. */
static inline int tide_add_i64(int64_t a, int64_t b, int64_t *out) {
    return __builtin_add_overflow(a, b, out) ? -1 : 0;
}

/** *out = n * elem bytes, for n >= 0 elements of @p elem bytes: 0, or -1 when n is negative or
 *  the byte count exceeds what both size_t and int64 (the offsets tide computes) can hold. */
static inline int tide_size_bytes(int64_t n, size_t elem, size_t *out) {
    int64_t b;
    if (n < 0 || elem > (size_t)INT64_MAX || __builtin_mul_overflow(n, (int64_t)elem, &b) ||
        (uint64_t)b > (uint64_t)SIZE_MAX)
        return -1;
    *out = (size_t)b;
    return 0;
}

/** The byte count of a width x height x depth block of @p elem-byte values, checked as above:
 *  0, or -1 when a dimension is negative or the product overflows. */
static inline int tide_size_block(int64_t width, int64_t height, int64_t depth, size_t elem,
                                  size_t *out) {
    int64_t n;
    if (width < 0 || height < 0 || depth < 0 || tide_mul_i64(width, height, &n) ||
        tide_mul_i64(n, depth, &n))
        return -1;
    return tide_size_bytes(n, elem, out);
}

#endif
