/* noise_ops_math.h — per-pixel formulas of the difference pipeline's own kernels, once for the
 * CPU and CUDA twins (DESIGN §3). */
#ifndef TIDE_DIFF_OPS_MATH_H
#define TIDE_DIFF_OPS_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "tide/image.h"

/** Prepare one input pixel for subtraction: flag saturation on the raw value (at or above
 *  @p saturate; NaN = no level), subtract the background and give the pixel its variance,
 *  the sky term rms² plus the source's Poisson term max(pix − bkg, 0) / gain (gain <= 0: sky
 *  only), the CCD noise model Source Extractor and HOTPANTS use. Non-finite pixels keep NaN
 *  (their NODATA bit was set by the reader) and get NaN variance. */
TIDE_HD static inline void tide_diffp_prepare_one(float *pix, float bkg, float rms, uint16_t *mask,
                                                  float *var, float gain, float saturate) {
    const float raw = *pix;
    if (!(raw == raw) || raw > 3.0e38f || raw < -3.0e38f) {
        *pix = NAN;
        *var = NAN;
        *mask = (uint16_t)(*mask | TIDE_MASK_NODATA);
        return;
    }
    if (saturate == saturate && raw >= saturate)
        *mask = (uint16_t)(*mask | TIDE_MASK_SATURATED);
    const float sub = raw - bkg;
    float v = rms * rms;
    if (gain > 0.0f && sub > 0.0f)
        v += sub / gain;
    *pix = sub;
    *var = v;
}

/** The noise test of box (bx, by) of side b (diffp noise scale): the box's pixel sum over the
 *  square root of its summed variance, both summed in double row by row; NaN when any pixel
 *  is masked, non-finite or has no positive variance. */
TIDE_HD static inline double tide_diffp_box_z(const float *pix, const uint16_t *mask,
                                              const float *var, int64_t stride, int b, int64_t bx,
                                              int64_t by) {
    double s = 0, v = 0;
    for (int64_t y = by * b; y < (by + 1) * b; y++)
        for (int64_t x = bx * b; x < (bx + 1) * b; x++) {
            const int64_t i = y * stride + x;
            if ((mask && mask[i]) || !isfinite(pix[i]) || !(var[i] > 0))
                return NAN;
            s += pix[i];
            v += var[i];
        }
    return s / sqrt(v);
}

#endif
