/* subtract_basis.c — the Alard & Lupton (1998) kernel basis: Gaussians times polynomials,
 * with the flux-conserving transformation of Alard (2000, §3): every kernel but the first has
 * zero sum, so the kernel sum (the photometric ratio) is the first coefficient alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "subtract_internal.h"
#include "tide/status.h"

int tide_sub_basis_make(int kh, int ngauss, const double *sigmas, const int *degrees,
                        tide_sub_basis *b) {
    memset(b, 0, sizeof *b);
    if (kh < 1 || ngauss < 1 || ngauss > 4)
        return tide_error(TIDE_E_INVAL,
                          "subtract: kernel half-width %d / %d Gaussians "
                          "(need >= 1 and 1..4)",
                          kh, ngauss);
    int nb = 0;
    for (int g = 0; g < ngauss; g++) {
        if (!(sigmas[g] > 0.0) || degrees[g] < 0 || degrees[g] > 10)
            return tide_error(TIDE_E_INVAL,
                              "subtract: Gaussian %d has sigma %g, degree %d "
                              "(need sigma > 0, degree 0..10)",
                              g, sigmas[g], degrees[g]);
        nb += (degrees[g] + 1) * (degrees[g] + 2) / 2;
    }
    int kw = 2 * kh + 1;
    size_t kn = (size_t)kw * (size_t)kw;
    double *k = malloc((size_t)nb * kn * sizeof *k);
    b->k = malloc((size_t)nb * kn * sizeof *b->k);
    if (!k || !b->k) {
        free(k);
        free(b->k);
        b->k = NULL;
        return tide_error(TIDE_E_NOMEM, "subtract: kernel basis (%d kernels)", nb);
    }
    int n = 0;
    for (int g = 0; g < ngauss; g++) {
        double s2 = 2.0 * sigmas[g] * sigmas[g];
        for (int d = 0; d <= degrees[g]; d++)
            for (int j = 0; j <= d; j++, n++) {
                int i = d - j;
                double *kk = k + (size_t)n * kn;
                for (int y = -kh; y <= kh; y++)
                    for (int x = -kh; x <= kh; x++)
                        kk[(y + kh) * kw + (x + kh)] =
                            exp(-(double)(x * x + y * y) / s2) * pow(x, i) * pow(y, j);
            }
    }
    /* kernel 0: unit sum; the others: minus their sum times kernel 0 (zero sum), then
     * orthonormalised on the kernel's pixels by modified Gram-Schmidt, run twice for
     * stability; a kernel that the earlier ones already span to 1e-4 of its norm is dropped
     * (a high-degree polynomial on a narrow Gaussian has fewer pixels than terms). Linear
     * combinations of zero-sum kernels keep zero sum, so the constraint survives. */
    double s0 = 0.0;
    for (size_t i = 0; i < kn; i++)
        s0 += k[i];
    for (size_t i = 0; i < kn; i++)
        k[i] /= s0;
    int kept = 1;
    for (int m = 1; m < nb; m++) {
        double *kk = k + (size_t)m * kn, s = 0.0, q0 = 0.0;
        for (size_t i = 0; i < kn; i++)
            s += kk[i];
        for (size_t i = 0; i < kn; i++) {
            kk[i] -= s * k[i];
            q0 += kk[i] * kk[i];
        }
        if (!(q0 > 0.0))
            continue;
        for (int pass = 0; pass < 2; pass++)
            for (int e = 1; e < kept; e++) {
                const double *ke = k + (size_t)e * kn;
                double d = 0.0;
                for (size_t i = 0; i < kn; i++)
                    d += kk[i] * ke[i];
                for (size_t i = 0; i < kn; i++)
                    kk[i] -= d * ke[i];
            }
        double q = 0.0;
        for (size_t i = 0; i < kn; i++)
            q += kk[i] * kk[i];
        if (q < 1e-8 * q0)
            continue;
        double norm = 1.0 / sqrt(q);
        double *dst = k + (size_t)kept * kn;
        for (size_t i = 0; i < kn; i++)
            dst[i] = kk[i] * norm;
        kept++;
    }
    nb = kept;
    for (size_t i = 0; i < (size_t)nb * kn; i++)
        b->k[i] = (float)k[i];
    free(k);
    b->nb = nb;
    b->kh = kh;
    b->kw = kw;
    return TIDE_OK;
}

void tide_sub_basis_free(tide_sub_basis *b) {
    free(b->k);
    memset(b, 0, sizeof *b);
}
