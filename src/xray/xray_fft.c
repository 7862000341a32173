/* xray_fft.c — the FFT map of tide xray fit: |DFT|/n of every fitted segment as float32, bin
 * by bin (the FITS/HDF5 cube's layout). On a CUDA context the fit runs it in a thread of its
 * own (xray_bg.h) while the GPU fits, so the host's DFTs cost the fit no time. */
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tide/status.h"
#include "xray/xray_fft.h"
#include "xray/xray_math.h"

/* Bins computed per trace at most (beyond, the map holds 0: 8192-sample segments). */
#define XRAY_FFT_MAXBINS 4096

int xray_fft_map(const double *seg, int64_t ntr, int L, float *fft, int threads) {
    const int64_t nb = L / 2;
    if (nb <= 0 || ntr <= 0)
        return 0;
    double *tw = malloc(sizeof(double) * 2 * (size_t)L);
    if (!tw)
        return tide_error(TIDE_E_NOMEM, "xray: DFT twiddles of %d samples", L);
    xray_dft_twiddles(L, tw);
    const int nbc = nb < XRAY_FFT_MAXBINS ? (int)nb : XRAY_FFT_MAXBINS;
    int nt = threads;
#ifdef _OPENMP
    if (nt < 1)
        nt = omp_get_max_threads();
#endif
    (void)nt;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t i = 0; i < ntr; i++) {
        double d[XRAY_FFT_MAXBINS];
        xray_dft_abs(seg + i * L, L, nbc, tw, d);
        for (int64_t k = 0; k < nb; k++)
            fft[k * ntr + i] = k < nbc ? (float)d[k] : 0.0f;
    }
    free(tw);
    return 0;
}

int xray_fft_step(void *args) {
    const xray_fft_args *a = args;
    return xray_fft_map(a->seg, a->ntr, a->L, a->fft, a->threads);
}
