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
 *  each pair's rotation and whether it turns, and the zero threshold. */
#define XRAY_SVD_LANES_SCRATCH(cols) (3 * (((cols) + 1) / 2) + 1)

/** xray_jacobi_svd of the rows × cols matrix A (by columns, column j at A + j*lda) into V and
 *  sig, in lane form, with the same results; @p red: XRAY_SVD_LANES_SCRATCH(cols) doubles. On
 *  the GPU every lane of one warp calls it with the same arguments (all of them in shared
 *  memory). Returns the sweeps taken, or -1 when they ran out. */
TIDE_HD static inline int xray_jacobi_svd_lanes(double *A, int lda, int rows, int cols, double *V,
                                                double *sig, double *red) {
    const int rounds = xray_jacobi_rounds(cols), npair = xray_jacobi_round_pairs(cols);
    double *rc = red, *rs = red + npair, *turn = red + 2 * npair, *tinyp = red + 3 * npair;
    XRAY_PHASE(if (lane == 0) tinyp[0] = xray_jacobi_start(A, lda, rows, cols, V));
    const double tiny = tinyp[0];
    int sweep = 0, conv = 0;
    for (; sweep < 80 && !conv; sweep++) {
        conv = 1;
        for (int rd = 0; rd < rounds; rd++) {
            /* each lane the rotation of its pairs */
            XRAY_PHASE(for (int j = lane; j < npair; j += XRAY_LANES) {
                int p, q;
                double c = 1.0, s = 0.0;
                int t = xray_jacobi_pair(cols, rd, j, &p, &q);
                if (t) {
                    const double *ap = A + (int64_t)p * lda, *aq = A + (int64_t)q * lda;
                    t = xray_jacobi_rotation(xray_dot(ap, ap, rows), xray_dot(aq, aq, rows),
                                             xray_dot(ap, aq, rows), tiny, &c, &s);
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
            /* the lanes rotate the (pair, row) elements of A and of V */
            XRAY_PHASE(for (int e = lane; e < npair * (rows + cols); e += XRAY_LANES) {
                const int j = e / (rows + cols), i = e % (rows + cols);
                int p, q;
                if (turn[j] == 0.0 || !xray_jacobi_pair(cols, rd, j, &p, &q))
                    continue;
                if (i < rows)
                    xray_rotate(A + (int64_t)p * lda, A + (int64_t)q * lda, i, i + 1, 1, rc[j],
                                rs[j]);
                else
                    xray_rotate(V + p * cols, V + q * cols, i - rows, i - rows + 1, 1, rc[j],
                                rs[j]);
            });
        }
    }
    /* the norms and the sort: once, a small share of the work */
    XRAY_PHASE(if (lane == 0) xray_jacobi_sort(A, lda, rows, cols, V, sig));
    return conv ? sweep : -1;
}

#endif
