/* checked.h — overflow-checked integer arithmetic for sizes that come from a file or a user.
 *
 * A size read from a header (NAXISn, ZTILEn, a descriptor's element count) is attacker
 * controlled: a product that wraps can turn a 2^64-pixel image into a 0- or 1-byte buffer and
 * the copy that follows into a heap overflow. Every product or sum of such numbers goes
 * through these helpers, which say whether the exact result fits instead of wrapping. Each
 * returns 0 and stores the result, or -1 (and leaves *out unchanged) when it would not fit or
 * an argument is out of range. Not public. */
#ifndef TIDE_CHECKED_H
#define TIDE_CHECKED_H
#include <stddef.h>
#include <stdint.h>

/** *out = a + b, when the sum fits in int64_t. */
static inline int tide_add_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

/** *out = a * b, when the product fits in int64_t. */
static inline int tide_mul_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

/** *out = a + b for sizes, when the sum fits in size_t. */
static inline int tide_add_size(size_t a, size_t b, size_t *out) {
    size_t r;
    if (__builtin_add_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

/** *out = a * b for sizes, when the product fits in size_t. */
static inline int tide_mul_size(size_t a, size_t b, size_t *out) {
    size_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

/** Bytes of @p n elements of @p k bytes each: -1 when n < 0 or n * k does not fit in size_t
 *  (nor in int64_t, so the result can also be used as a file offset or length). */
static inline int tide_size_elems(int64_t n, size_t k, size_t *out) {
    size_t r;
    if (n < 0 || __builtin_mul_overflow((uint64_t)n, (uint64_t)k, &r) || r > (size_t)INT64_MAX)
        return -1;
    *out = r;
    return 0;
}

/** Bytes of a width x height x depth block of @p elem-byte values: -1 when a dimension is
 *  negative or the product does not fit (as tide_size_elems). */
static inline int tide_size_block(int64_t width, int64_t height, int64_t depth, size_t elem,
                                  size_t *out) {
    int64_t n;
    if (width < 0 || height < 0 || depth < 0 || tide_mul_i64(width, height, &n) ||
        tide_mul_i64(n, depth, &n))
        return -1;
    return tide_size_elems(n, elem, out);
}

#endif
