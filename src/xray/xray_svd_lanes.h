/* xray_svd_lanes.h — the one-sided Jacobi SVD of LPSVD's R factor in lane form (xray_lanes.h):
 * on the GPU one warp per trace with R and V in the warp's shared memory. The cyclic pair
 * order is sequential (each rotation changes the columns the next reads); within a pair three
 * lanes form the three column products, each in row order, and the lanes rotate a row each,
 * all with xray_jacobi_svd's own pieces (xray_math.h). So every number rounds as in
 * xray_jacobi_svd, the reference, and the results are its bits
 * (test_xray_lm checks both lane orders against it). One thread per trace kept R and V (9 KB
 * for 96 samples) in local memory, which no cache holds for a full SM: ~70% of LPSVD's time. */
#ifndef TIDE_XRAY_SVD_LANES_H
#define TIDE_XRAY_SVD_LANES_H
#include "xray/xray_lanes.h"
#include "xray/xray_math.h"

/** Doubles of workspace xray_jacobi_svd_lanes needs beside A, V and sig: the three products. */
#define XRAY_SVD_LANES_SCRATCH 4

/** xray_jacobi_svd of the rows × cols matrix A (by columns, column j at A + j*lda) into V and
 *  sig, in lane form, with the same results; @p red: XRAY_SVD_LANES_SCRATCH doubles. On the GPU
 *  every lane of one warp calls it with the same arguments (all of them in shared memory).
 *  Returns the sweeps taken, or -1 when they ran out. */
TIDE_HD static inline int xray_jacobi_svd_lanes(double *A, int lda, int rows, int cols, double *V,
                                                double *sig, double *red) {
    XRAY_PHASE(if (lane == 0) red[3] = xray_jacobi_start(A, lda, rows, cols, V));
    const double tiny = red[3];
    int sweep = 0, conv = 0;
    for (; sweep < 80 && !conv; sweep++) {
        conv = 1;
        for (int p = 0; p < cols - 1; p++)
            for (int q = p + 1; q < cols; q++) {
                double *ap = A + (int64_t)p * lda, *aq = A + (int64_t)q * lda, c, s;
                /* lane 0: ap·ap, lane 1: aq·aq, lane 2: ap·aq */
                XRAY_PHASE(if (lane < 3) red[lane] =
                               xray_dot(lane == 1 ? aq : ap, lane == 0 ? ap : aq, rows));
                if (!xray_jacobi_rotation(red[0], red[1], red[2], tiny, &c, &s))
                    continue;
                conv = 0;
                XRAY_PHASE(xray_rotate(ap, aq, lane, rows, XRAY_LANES, c, s);
                           xray_rotate(V + p * cols, V + q * cols, lane, cols, XRAY_LANES, c, s));
            }
    }
    /* the norms and the sort: once, a small share of the work */
    XRAY_PHASE(if (lane == 0) xray_jacobi_sort(A, lda, rows, cols, V, sig));
    return conv ? sweep : -1;
}

#endif
