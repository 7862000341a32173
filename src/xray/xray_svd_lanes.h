/* xray_svd_lanes.h — the one-sided Jacobi SVD of LPSVD's R factor in lane form (xray_lanes.h):
 * on the GPU one warp per trace with R and V in the warp's shared memory. The cyclic pair
 * order is sequential (each rotation changes the columns the next reads); within a pair three
 * lanes form the three column products, each in row order, and the lanes rotate a row each. So
 * every number rounds as in xray_jacobi_svd, the reference, and the results are its bits
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
    XRAY_PHASE(for (int e = lane; e < cols * cols; e += XRAY_LANES) V[e] =
                   e / cols == e % cols ? 1.0 : 0.0;
               if (lane == 0) {
                   /* columns below 1e-14 of the matrix's norm are zero (xray_jacobi_svd) */
                   double frob = 0.0;
                   for (int j = 0; j < cols; j++)
                       for (int i = 0; i < rows; i++)
                           frob += A[(int64_t)j * lda + i] * A[(int64_t)j * lda + i];
                   red[3] = frob;
               });
    const double tiny = 1e-28 * red[3];
    int sweep = 0, conv = 0;
    for (; sweep < 80 && !conv; sweep++) {
        conv = 1;
        for (int p = 0; p < cols - 1; p++)
            for (int q = p + 1; q < cols; q++) {
                double *ap = A + (int64_t)p * lda, *aq = A + (int64_t)q * lda;
                /* lane 0: ap·ap, lane 1: aq·aq, lane 2: ap·aq, each in row order */
                XRAY_PHASE(if (lane < 3) {
                    const double *x = lane == 1 ? aq : ap, *y = lane == 0 ? ap : aq;
                    double acc = 0.0;
                    for (int i = 0; i < rows; i++)
                        acc += x[i] * y[i];
                    red[lane] = acc;
                });
                const double al = red[0], be = red[1], ga = red[2];
                if (!(fabs(ga) > 1e-15 * sqrt(al * be)) || ga == 0.0 || al <= tiny || be <= tiny)
                    continue;
                conv = 0;
                const double zeta = (be - al) / (2.0 * ga);
                const double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                const double c = 1.0 / sqrt(1.0 + t * t), s = c * t;
                double *vp = V + p * cols, *vq = V + q * cols;
                XRAY_PHASE(
                    for (int i = lane; i < rows; i += XRAY_LANES) {
                        const double x = ap[i], y = aq[i];
                        ap[i] = c * x - s * y;
                        aq[i] = s * x + c * y;
                    } for (int i = lane; i < cols; i += XRAY_LANES) {
                        const double x = vp[i], y = vq[i];
                        vp[i] = c * x - s * y;
                        vq[i] = s * x + c * y;
                    });
            }
    }
    XRAY_PHASE(for (int j = lane; j < cols; j += XRAY_LANES) {
        double v = 0.0;
        for (int i = 0; i < rows; i++)
            v += A[(int64_t)j * lda + i] * A[(int64_t)j * lda + i];
        sig[j] = sqrt(v);
    });
    /* selection sort by decreasing σ: every lane finds the same column, the lanes swap rows */
    for (int j = 0; j < cols - 1; j++) {
        int b = j;
        for (int k = j + 1; k < cols; k++)
            if (sig[k] > sig[b])
                b = k;
        if (b == j)
            continue;
        XRAY_PHASE(
            if (lane == 0) {
                const double t = sig[j];
                sig[j] = sig[b];
                sig[b] = t;
            } for (int i = lane; i < rows; i += XRAY_LANES) {
                const double x = A[(int64_t)j * lda + i];
                A[(int64_t)j * lda + i] = A[(int64_t)b * lda + i];
                A[(int64_t)b * lda + i] = x;
            } for (int i = lane; i < cols; i += XRAY_LANES) {
                const double x = V[j * cols + i];
                V[j * cols + i] = V[b * cols + i];
                V[b * cols + i] = x;
            });
    }
    return conv ? sweep : -1;
}

#endif
