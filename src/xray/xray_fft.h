/* xray_fft.h — the FFT map of tide xray fit (xray_fft.c). */
#ifndef TIDE_XRAY_FFT_H
#define TIDE_XRAY_FFT_H
#include <stdint.h>

/** |DFT|/L of each of @p ntr segments of @p L samples (xray_dft_abs) at bins 0..L/2-1 into
 *  @p fft as float32, bin-major: fft[k * ntr + i] (the maps' (bin, y, x) cube). OpenMP over
 *  segments on @p threads threads (< 1: OpenMP's default). */
int xray_fft_map(const double *seg, int64_t ntr, int L, float *fft, int threads);

/** xray_fft_map's arguments, for xray_bg_start(xray_fft_step). */
typedef struct xray_fft_args {
    const double *seg;
    int64_t ntr;
    int L;
    float *fft;
    int threads;
} xray_fft_args;

/** xray_fft_map of an xray_fft_args. */
int xray_fft_step(void *args);

#endif
