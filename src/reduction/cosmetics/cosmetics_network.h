/* cosmetics_network.h — the comparator networks of the exact box medians, shared by the CPU
 * (cosmetics_median_cpu.c, which says how they were made and why they are exact) and the CUDA
 * twin (cosmetics_cuda.cu): the same comparators in the same order on the same wires, so both
 * give the very same float. Comparators are written with `q < p ? q : p` (compares only, no
 * arithmetic). Wires are locals v0..v24 of the caller. */
#ifndef TIDE_COSMETICS_NETWORK_H
#define TIDE_COSMETICS_NETWORK_H

/* full comparator, min-only (wire i), max-only (wire j) */
#define CX(i, j)                                                                                   \
    do {                                                                                           \
        const float p_ = v##i, q_ = v##j;                                                          \
        v##i = q_ < p_ ? q_ : p_;                                                                  \
        v##j = q_ < p_ ? p_ : q_;                                                                  \
    } while (0)
#define CN(i, j) v##i = v##j < v##i ? v##j : v##i
#define CM(i, j) v##j = v##j < v##i ? v##i : v##j

/* Sort v0..v4 ascending (9 comparators). */
#define SORT5()                                                                                    \
    do {                                                                                           \
        CX(0, 4);                                                                                  \
        CX(0, 2);                                                                                  \
        CX(1, 3);                                                                                  \
        CX(2, 4);                                                                                  \
        CX(0, 1);                                                                                  \
        CX(2, 3);                                                                                  \
        CX(1, 4);                                                                                  \
        CX(1, 2);                                                                                  \
        CX(3, 4);                                                                                  \
    } while (0)

/* v0..v24 = v[5c + r]: column c sorted ascending in r. Leaves the 13th smallest of the 25
 * in v12. */
#define MED25()                                                                                    \
    do {                                                                                           \
        CX(0, 20);                                                                                 \
        CM(0, 10);                                                                                 \
        CX(5, 15);                                                                                 \
        CX(10, 20);                                                                                \
        CM(10, 15);                                                                                \
        CM(5, 20);                                                                                 \
        CX(1, 21);                                                                                 \
        CX(1, 11);                                                                                 \
        CX(6, 16);                                                                                 \
        CX(11, 21);                                                                                \
        CM(1, 6);                                                                                  \
        CX(11, 16);                                                                                \
        CX(6, 21);                                                                                 \
        CM(6, 11);                                                                                 \
        CX(16, 21);                                                                                \
        CX(2, 22);                                                                                 \
        CX(2, 12);                                                                                 \
        CX(7, 17);                                                                                 \
        CX(12, 22);                                                                                \
        CM(2, 7);                                                                                  \
        CX(12, 17);                                                                                \
        CX(7, 22);                                                                                 \
        CX(7, 12);                                                                                 \
        CN(17, 22);                                                                                \
        CX(3, 23);                                                                                 \
        CX(3, 13);                                                                                 \
        CX(8, 18);                                                                                 \
        CX(13, 23);                                                                                \
        CX(3, 8);                                                                                  \
        CN(13, 18);                                                                                \
        CN(8, 23);                                                                                 \
        CX(8, 13);                                                                                 \
        CX(4, 14);                                                                                 \
        CX(9, 19);                                                                                 \
        CX(4, 9);                                                                                  \
        CN(14, 19);                                                                                \
        CN(9, 24);                                                                                 \
        CN(9, 14);                                                                                 \
        CX(15, 3);                                                                                 \
        CX(20, 8);                                                                                 \
        CX(16, 4);                                                                                 \
        CX(21, 9);                                                                                 \
        CM(20, 7);                                                                                 \
        CX(21, 3);                                                                                 \
        CN(17, 4);                                                                                 \
        CM(15, 11);                                                                                \
        CX(21, 12);                                                                                \
        CX(7, 17);                                                                                 \
        CN(3, 13);                                                                                 \
        CX(11, 3);                                                                                 \
        CX(16, 8);                                                                                 \
        CN(12, 9);                                                                                 \
        CX(16, 7);                                                                                 \
        CX(12, 3);                                                                                 \
        CX(17, 8);                                                                                 \
        CM(11, 16);                                                                                \
        CM(21, 7);                                                                                 \
        CN(12, 17);                                                                                \
        CN(3, 8);                                                                                  \
        CM(16, 12);                                                                                \
        CN(7, 3);                                                                                  \
        CM(7, 12);                                                                                 \
    } while (0)

#define DECL25(src)                                                                                \
    float v0 = src(0), v1 = src(1), v2 = src(2), v3 = src(3), v4 = src(4), v5 = src(5),            \
          v6 = src(6), v7 = src(7), v8 = src(8), v9 = src(9), v10 = src(10), v11 = src(11),        \
          v12 = src(12), v13 = src(13), v14 = src(14), v15 = src(15), v16 = src(16),               \
          v17 = src(17), v18 = src(18), v19 = src(19), v20 = src(20), v21 = src(21),               \
          v22 = src(22), v23 = src(23), v24 = src(24)

/* Sort the five wires a..e ascending (the SORT5 network on other wires). */
#define SORT5_AT(a, b, c, d, e)                                                                    \
    do {                                                                                           \
        CX(a, e);                                                                                  \
        CX(a, c);                                                                                  \
        CX(b, d);                                                                                  \
        CX(c, e);                                                                                  \
        CX(a, b);                                                                                  \
        CX(c, d);                                                                                  \
        CX(b, e);                                                                                  \
        CX(b, c);                                                                                  \
        CX(d, e);                                                                                  \
    } while (0)

#endif
