/* store_cutout.c — the cutouts' compact form (store_cand.h): int16 per pixel with a zero and
 * a scale of the cutout's own, chosen over float16 (whose 11-bit mantissa spends its
 * precision on the bright core and whose range ends at 65504) and over zlib'd float32 (noise
 * does not compress: ~3.5 bytes a pixel). */
#include <math.h>
#include <stdint.h>

#include "tide/store_cand.h"

const char *tide_cutout_kind_name(int kind) {
    static const char *const n[] = {"science", "template", "diff", "residual"};
    return kind >= 0 && kind < 4 ? n[kind] : 0;
}

void tide_cutout_encode(const float *v, int64_t n, int16_t *q, double *zero, double *scale) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(v[i])) {
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
    if (!(lo <= hi)) { /* nothing finite */
        lo = hi = 0;
    }
    *zero = 0.5 * (lo + hi);
    *scale = hi > lo ? (hi - lo) / 65534.0 : 1.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            q[i] = INT16_MIN;
            continue;
        }
        double k = nearbyint((v[i] - *zero) / *scale);
        k = k < -32767 ? -32767 : k > 32767 ? 32767 : k;
        q[i] = (int16_t)k;
    }
}

void tide_cutout_decode(const int16_t *q, int64_t n, double zero, double scale, float *v) {
    for (int64_t i = 0; i < n; i++)
        v[i] = q[i] == INT16_MIN ? NAN : (float)(zero + scale * q[i]);
}
