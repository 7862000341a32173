/* xray_svd_lanes.h — the one-sided Jacobi SVD of LPSVD's R factor in lane form (xray_lanes.h):
 * on the GPU one warp per trace with R and V in the warp's shared memory. A sweep is the
 * rounds of xray_jacobi_pair's round-robin order, whose pairs are disjoint: in each round a
 * lane forms the three column products of a pair (each in row order) and its rotation, then
 * the lanes rotate the round's (pair, row) elements side by side, all with xray_jacobi_svd's
 * own pieces (xray_math.h). A pair's numbers depend only on its own two columns, so every
 * number rounds as in xray_jacobi_svd, the reference, and the results are its bits
 * (test_xray_lm checks both lane orders against it). The cyclic order (one pair after
 * another, three lanes of 32 busy with its products) was ~1/4 of the per-pixel fit. */
#ifndef TIDE_XRAY_SVD_LANES_H
#define TIDE_XRAY_SVD_LANES_H
#include "xray/xray_lanes.h"
#include "xray/xray_math.h"

/** Doubles of workspace xray_jacobi_svd_lanes needs beside A, V and sig for @p cols columns:
 *  each pair's rotation and whether it turns, the zero threshold, and the sweep's pairs (two
 *  ints each, in doubles). */
#define XRAY_SVD_LANES_SCRATCH(cols)                                                               \
    (3 * (((cols) + 1) / 2) + 1 + ((cols) + ((cols)&1) - 1) * (((cols) + 1) / 2))

/** xray_jacobi_svd of the rows × cols matrix A (by columns, column j at A + j*lda) into V and
 *  sig, in lane form, with the same results; @p red: XRAY_SVD_LANES_SCRATCH(cols) doubles. On
 *  the GPU every lane of one warp calls it with the same arguments (all of them in shared
 *  memory). Returns the sweeps taken, or -1 when they ran out. */
TIDE_HD static inline int xray_jacobi_svd_lanes(double *A, int lda, int rows, int cols, double *V,
                                                double *sig, double *red) {
    const int rounds = xray_jacobi_rounds(cols), npair = xray_jacobi_round_pairs(cols);
    double *rc = red, *rs = red + npair, *turn = red + 2 * npair, *tinyp = red + 3 * npair;
    /* the sweep's pairs, once: (p, q) of round rd's j-th pair at pq[2 (rd npair + j)], -1 for
     * the bye's (a table, because the GPU's integer divisions cost more than the rotations) */
    int *pq = (int *)(tinyp + 1);
    XRAY_PHASE(if (lane == 0) tinyp[0] = xray_jacobi_start(A, lda, rows, cols, V);
               for (int e = lane; e < rounds * npair; e += XRAY_LANES) {
                   int p, q;
                   if (!xray_jacobi_pair(cols, e / npair, e % npair, &p, &q))
                       p = q = -1;
                   pq[2 * e] = p;
                   pq[2 * e + 1] = q;
               });
    const double tiny = tinyp[0];
    int sweep = 0, conv = 0;
    for (; sweep < 80 && !conv; sweep++) {
        conv = 1;
        for (int rd = 0; rd < rounds; rd++) {
            const int *rp = pq + 2 * rd * npair;
            /* each lane the rotation of its pairs */
            XRAY_PHASE(for (int j = lane; j < npair; j += XRAY_LANES) {
                const int p = rp[2 * j], q = rp[2 * j + 1];
                double c = 1.0, s = 0.0;
                int t = 0;
                if (p >= 0) {
                    double al, be, ga;
                    xray_dot3(A + (int64_t)p * lda, A + (int64_t)q * lda, rows, &al, &be, &ga);
                    t = xray_jacobi_rotation(al, be, ga, tiny, &c, &s);
                }
                rc[j] = c;
                rs[j] = s;
                turn[j] = t;
            });
            int any = 0;
            for (int j = 0; j < npair; j++)
                any |= turn[j] != 0.0;
            if (!any)
                continue;
            conv = 0;
            /* the lanes rotate a row each of every turning pair's columns of A and of V */
            XRAY_PHASE(for (int j = 0; j < npair; j++) {
                if (turn[j] == 0.0)
                    continue;
                const int p = rp[2 * j], q = rp[2 * j + 1];
                xray_rotate(A + (int64_t)p * lda, A + (int64_t)q * lda, lane, rows, XRAY_LANES,
                            rc[j], rs[j]);
                xray_rotate(V + p * cols, V + q * cols, lane, cols, XRAY_LANES, rc[j], rs[j]);
            });
        }
    }
    /* the norms and the sort: once, a small share of the work */
    XRAY_PHASE(if (lane == 0) xray_jacobi_sort(A, lda, rows, cols, V, sig));
    return conv ? sweep : -1;
}

/** xray_qr_r of the rows × cols matrix A (by columns, column j at A + j*lda; destroyed) into
 *  @p R (cols × cols by columns), in lane form, with the same bits: lane 0 forms each step's
 *  reflector (its column's norm in row order), then each lane reflects a later column of its
 *  own (its product with the reflector in row order, as the sequential loop) and writes R's
 *  column. @p red: 2 doubles. On the GPU every lane of one warp calls it with the same
 *  arguments (A and red in shared memory; R anywhere). One thread per trace kept A (13 KB for
 *  96 samples) in local memory: the kernel waited on it, at a quarter of the device's
 *  occupancy. */
TIDE_HD static inline void xray_qr_r_lanes(double *A, int lda, int rows, int cols, double *R,
                                           double *red) {
    for (int k = 0; k < cols; k++) {
        double *a = A + (int64_t)k * lda;
        XRAY_PHASE(if (lane == 0) red[1] = xray_qr_reflector(a, k, rows, &red[0]));
        const double alpha = red[0], vv = red[1];
        XRAY_PHASE(for (int j = k + 1 + lane; j < cols && vv > 0; j += XRAY_LANES)
                       xray_qr_reflect(a, A + (int64_t)j * lda, k, rows, vv);
                   for (int i = lane; i < cols; i += XRAY_LANES) R[k * cols + i] =
                       i < k ? a[i] : (i == k ? alpha : 0.0));
    }
}

#endif
