/* subtract_decorr.c — the decorrelation afterburner of the difference image (Reiss & Lupton
 * 2016; Rubin's ip_diffim "afterburner"). Convolving the reference with K colours its noise:
 * the difference's noise spectrum is vt + vr |K(k)|^2. The kernel
 *     phi(k) = sqrt((vt + k0^2 vr) / (vt + vr |K(k)|^2)),   k0 = K(0) = sum K,
 * whitens it again (phi(0) = 1 keeps fluxes). phi is built on an N x N grid on the host
 * (direct separable DFTs in double: the grid is small), brought back to real space, cropped to
 * twice the matching kernel's width, and applied with the FFT correlator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "subtract_internal.h"
#include "tide/ctx.h"
#include "tide/fft.h"
#include "tide/status.h"
#include "tide/subtract.h"
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

int tide_sub_decorrelate(tide_ctx *ctx, tide_subtract_result *r, float vr, float vt,
                         uint16_t bits) {
    int kw = r->kernel_w, kh = r->kernel_half;
    int N = 32;
    while (N < 4 * kw)
        N *= 2;
    int dh = 2 * kh < N / 2 - 1 ? 2 * kh : N / 2 - 1, dw = 2 * dh + 1;
    size_t NN = (size_t)N * (size_t)N;
    double *re = calloc(NN, sizeof *re), *im = calloc(NN, sizeof *im);
    double *ph = calloc(NN, sizeof *ph), *tmp = calloc(2 * NN, sizeof *tmp);
    float *phi = malloc((size_t)dw * (size_t)dw * sizeof *phi);
    int st = TIDE_OK;
    if (!re || !im || !ph || !tmp || !phi) {
        st = tide_error(TIDE_E_NOMEM, "subtract: decorrelation kernel");
        goto done;
    }
    /* K(u, v) = sum_ij K(i - kh, j - kh) exp(-2 pi i (u (i - kh) + v (j - kh)) / N): rows,
     * then columns. */
    double k0 = 0.0;
    for (int i = 0; i < kw * kw; i++)
        k0 += r->kernel_center[i];
    for (int j = 0; j < kw; j++)
        for (int u = 0; u < N; u++) {
            double a = 0.0, b = 0.0;
            for (int i = 0; i < kw; i++) {
                double t = -2.0 * M_PI * (double)(u * (i - kh)) / N;
                a += r->kernel_center[j * kw + i] * cos(t);
                b += r->kernel_center[j * kw + i] * sin(t);
            }
            tmp[2 * ((size_t)j * N + u)] = a;
            tmp[2 * ((size_t)j * N + u) + 1] = b;
        }
    for (int v = 0; v < N; v++)
        for (int u = 0; u < N; u++) {
            double a = 0.0, b = 0.0;
            for (int j = 0; j < kw; j++) {
                double t = -2.0 * M_PI * (double)(v * (j - kh)) / N, c = cos(t), s = sin(t);
                double xr = tmp[2 * ((size_t)j * N + u)], xi = tmp[2 * ((size_t)j * N + u) + 1];
                a += xr * c - xi * s;
                b += xr * s + xi * c;
            }
            re[(size_t)v * N + u] = a;
            im[(size_t)v * N + u] = b;
        }
    double num = (double)vt + k0 * k0 * (double)vr;
    for (size_t i = 0; i < NN; i++) {
        double den = (double)vt + (double)vr * (re[i] * re[i] + im[i] * im[i]);
        ph[i] = den > 0.0 ? sqrt(num / den) : 1.0;
    }
    /* back to real space (phi is real and even), crop and keep unit sum */
    double sum = 0.0;
    for (int y = -dh; y <= dh; y++)
        for (int x = -dh; x <= dh; x++) {
            double a = 0.0;
            for (int v = 0; v < N; v++)
                for (int u = 0; u < N; u++)
                    a += ph[(size_t)v * N + u] * cos(2.0 * M_PI * (double)(u * x + v * y) / N);
            a /= (double)NN;
            phi[(y + dh) * dw + (x + dh)] = (float)a;
            sum += a;
        }
    for (int i = 0; i < dw * dw; i++)
        phi[i] = (float)(phi[i] / sum);
    {
        const float *kp = phi;
        tide_correlate_options opt = {TIDE_PAD_ZERO, 0, (uint16_t)(bits | TIDE_MASK_EDGE)};
        tide_image out;
        memset(&out, 0, sizeof out);
        st = tide_correlate(ctx, &r->diff, 1, &kp, dw, dw, &opt, &out);
        if (!st)
            st = tide_image_copy(ctx, &r->diff, &out);
        tide_image_free(ctx, &out);
    }
done:
    free(re);
    free(im);
    free(ph);
    free(tmp);
    free(phi);
    return st;
}
