/* detect_snr_cpu.c — CPU twin of the per-pixel S/N combination (detect_filter_math.h).
 *
 * F = sum c_b r_b, E = sum_ab c_a c_b G_ab, SNR = F / (rms sqrt(E)), in the row form both
 * twins share: along a row v is fixed, so each coefficient c_b(u, v) is a polynomial in u
 * alone (degree + 1 coefficients) and so is the kernel energy E (2 degree + 1 coefficients),
 * all formed once per row; a chunk of pixels then gets c_b and E by Horner's rule and F in
 * loops over the chunk that the compiler vectorises (double precision throughout). The
 * CUDA twin does the same operations in the same order, each rounded on its own, so the two
 * give the same bits. Only the order of the double-precision sums differs from the direct
 * per-pixel formula (tide_det_snr_pixel, the tests' reference): E is dominated by the mean
 * PSF's c_0^2 G_00 (the eigen-PSFs are small corrections), so the float S/N agrees with it
 * to a rounding of the double result (relative ~1e-15 before the cast). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "detect_filter_math.h"
#include "detect_kernels.h"
#include "tide/status.h"

#define SNR_CHUNK 256

/* Along row y: P[b * (deg + 1) + p] multiplies u^p in c_b, and Q[q] multiplies u^q in
 * E = sum_ab G_ab c_a c_b (degree 2 deg); the shared row form (detect_filter_math.h). */
static void row_poly(const tide_det_filter *f, int64_t y, double *P, double *Q) {
    const double v = tide_det_unorm((double)y, f->height);
    for (int b = 0; b < f->nbasis; b++)
        tide_det_row_coef(f, v, b, P + b * (f->degree + 1));
    for (int q = 0; q <= 2 * f->degree; q++)
        Q[q] = tide_det_row_energy(f, P, q);
}

/* ---- chunks of a row ------------------------------------------------------------------- */

/* F over one chunk for basis b (b == 0 starts the sum): c_b by Horner's rule on the row's
 * polynomial, then F += c_b r_b. The one-pass and the streamed forms both add the bases in
 * order through this function, so their double sums are bitwise the same. */
static void accum_chunk(const tide_image *Rb, int b, const tide_det_filter *f, const double *P,
                        const double *u, int64_t y, int64_t x0, int64_t n, double *Fp) {
    const int deg = f->degree;
    double cb[SNR_CHUNK];
    const double *restrict ux = u + x0;
    if (b == 0)
        for (int64_t i = 0; i < n; i++)
            Fp[i] = 0.0;
    const double *pb = P + b * (deg + 1);
    for (int64_t i = 0; i < n; i++)
        cb[i] = pb[deg];
    for (int p = deg - 1; p >= 0; p--)
        for (int64_t i = 0; i < n; i++)
            cb[i] = cb[i] * ux[i] + pb[p];
    const float *restrict rb = Rb->pix + y * Rb->stride + x0;
    for (int64_t i = 0; i < n; i++)
        Fp[i] += cb[i] * (double)rb[i];
}

static void finish_chunk(const tide_image *sub, const tide_image *rms, const double *Fp,
                         const tide_det_filter *f, const double *Q, const double *u, int64_t y,
                         int64_t x0, int64_t n, float *out) {
    const int deg = f->degree;
    double E[SNR_CHUNK];
    const double *restrict ux = u + x0;
    for (int64_t i = 0; i < n; i++)
        E[i] = Q[2 * deg];
    for (int q = 2 * deg - 1; q >= 0; q--)
        for (int64_t i = 0; i < n; i++)
            E[i] = E[i] * ux[i] + Q[q];
    const float *val = sub->pix + y * sub->stride + x0;
    const float *sd = rms->pix + y * rms->stride + x0;
    const uint16_t *m = sub->mask ? sub->mask + y * sub->stride + x0 : NULL;
    for (int64_t i = 0; i < n; i++)
        out[i] = tide_det_snr_of(Fp[i], E[i], val[i], sd[i], m ? m[i] : 0, f->nodata_bits);
}

/* What stream_rows does with each chunk. */
enum {
    SNR_FINISH = -1,  /* S/N from the accumulated F (Fr) */
    SNR_ONE_PASS = -2 /* all bases from the array Rb, then S/N, with F per chunk */
};

/* Rows of the frame in parallel, with the row polynomials; @p b >= 0: accumulate basis b of
 * Rb into Fw; SNR_FINISH or SNR_ONE_PASS as above. */
static int stream_rows(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                       const tide_image *Rb, int b, const tide_det_filter *f, double *Fw,
                       const double *Fr, tide_image *snr, int64_t W, int64_t H) {
    const int np = f->nbasis * (f->degree + 1) + 2 * f->degree + 1;
    double *u = malloc(sizeof(double) * (size_t)W);
    if (!u)
        return tide_error(TIDE_E_NOMEM, "tide_detect: S/N scratch");
    for (int64_t x = 0; x < W; x++)
        u[x] = tide_det_unorm((double)x, f->width);
    int nomem = 0;
#pragma omp parallel num_threads(ctx->threads > 0 ? ctx->threads : 1)
    {
        double *P = malloc(sizeof(double) * (size_t)np);
        if (!P) {
#pragma omp atomic write
            nomem = 1;
        }
        double *Q = P ? P + f->nbasis * (f->degree + 1) : NULL;
#pragma omp for schedule(static)
        for (int64_t y = 0; y < H; y++) {
            if (!P)
                continue;
            row_poly(f, y, P, Q);
            for (int64_t x0 = 0; x0 < W; x0 += SNR_CHUNK) {
                const int64_t n = x0 + SNR_CHUNK < W ? SNR_CHUNK : W - x0;
                float *out = snr ? snr->pix + y * snr->stride + x0 : NULL;
                if (b >= 0) {
                    accum_chunk(Rb, b, f, P, u, y, x0, n, Fw + y * W + x0);
                } else if (b == SNR_FINISH) {
                    finish_chunk(sub, rms, Fr + y * W + x0, f, Q, u, y, x0, n, out);
                } else {
                    double F[SNR_CHUNK];
                    for (int k = 0; k < f->nbasis; k++)
                        accum_chunk(&Rb[k], k, f, P, u, y, x0, n, F);
                    finish_chunk(sub, rms, F, f, Q, u, y, x0, n, out);
                }
            }
        }
        free(P);
    }
    free(u);
    if (nomem)
        return tide_error(TIDE_E_NOMEM, "tide_detect: S/N scratch");
    return 0;
}

int tide_det_snr_accum_cpu(tide_ctx *ctx, const tide_image *Rb, int b, const tide_det_filter *f,
                           double *F) {
    if (b < 0 || b >= f->nbasis)
        return tide_error(TIDE_E_INVAL, "tide_detect: basis %d outside 0..%d", b, f->nbasis - 1);
    return stream_rows(ctx, NULL, NULL, Rb, b, f, F, NULL, NULL, Rb->width, Rb->height);
}

int tide_det_snr_finish_cpu(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                            const double *F, const tide_det_filter *f, tide_image *snr) {
    return stream_rows(ctx, sub, rms, NULL, SNR_FINISH, f, NULL, F, snr, sub->width, sub->height);
}

int tide_det_snr_cpu(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                     const tide_image *R, const tide_det_filter *f, tide_image *snr) {
    return stream_rows(ctx, sub, rms, R, SNR_ONE_PASS, f, NULL, NULL, snr, sub->width, sub->height);
}
