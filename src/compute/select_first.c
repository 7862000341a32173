/* select_first.c — quickselect of the k first elements of a total order (select_first.h). */
#include <stdlib.h>
#include <string.h>

#include "select_first.h"

/* Swap two elements of @p size bytes through a small stack buffer. */
static void swap_bytes(unsigned char *a, unsigned char *b, size_t size) {
    unsigned char t[64];
    while (size) {
        const size_t n = size < sizeof t ? size : sizeof t;
        memcpy(t, a, n);
        memcpy(a, b, n);
        memcpy(b, t, n);
        a += n;
        b += n;
        size -= n;
    }
}

void tide_select_first(void *base, int64_t n, int64_t k, size_t size,
                       int (*cmp)(const void *, const void *)) {
    unsigned char *a = base;
    unsigned char piv[256];
    if (size > sizeof piv)
        return; /* elements this large are not used: callers select small keys */
    int64_t lo = 0, hi = n - 1;
    while (lo < hi && k > lo && k <= hi) {
        memcpy(piv, a + (size_t)(lo + (hi - lo) / 2) * size, size);
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (cmp(a + (size_t)i * size, piv) < 0)
                i++;
            while (cmp(a + (size_t)j * size, piv) > 0)
                j--;
            if (i <= j) {
                swap_bytes(a + (size_t)i * size, a + (size_t)j * size, size);
                i++;
                j--;
            }
        }
        /* now a[lo..j] <= piv <= a[i..hi], and a[j+1..i-1] == piv */
        if (k <= j + 1)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}
