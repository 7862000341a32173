/* test_dipole_pop.h — the population of issue 15 item 6 for the dipole-convergence test: well-
 * formed Gaussian dipoles (lobe separation 1-6 sigma, lobe peak S/N 20-1000 log-uniform, any
 * orientation, sub-pixel centres, sigma 1.2-3 px, half of them round and half elliptical with
 * axis ratio 0.6-1) and the degenerate stamps (a lone point source, pure noise, lobes much
 * closer than sigma). Counter-based noise (dipole_sim.h): deterministic in seed and index. */
#ifndef TEST_DIPOLE_POP_H
#define TEST_DIPOLE_POP_H
#include "difference/dipole/dipole_sim.h"

/* Kinds of stamp. */
enum { DPOP_DIPOLE = 0, DPOP_SINGLE = 1, DPOP_NOISE = 2 };

/* Stamp s (side²) of kind @p kind: separation in [sep_lo, sep_hi] × sigma (geometric mean),
 * peak S/N of one lobe alone in [snr_lo, snr_hi]; truth q in dip_model's GDIP order. */
static inline void dpop_stamp(uint64_t seed, int64_t s, int kind, int side, double sep_lo,
                              double sep_hi, double snr_lo, double snr_hi, float *pix, float *var,
                              double *q) {
    uint64_t k = (uint64_t)s * 64;
    const double c = 0.5 * (side - 1), pi = 3.141592653589793;
    const double noise = 0.5 + 1.5 * dsim_unif(seed, k++);
    const double cx = c + dsim_unif(seed, k++) - 0.5, cy = c + dsim_unif(seed, k++) - 0.5;
    const double usep = sep_lo + (sep_hi - sep_lo) * dsim_unif(seed, k++);
    const double phi = 2.0 * pi * dsim_unif(seed, k++);
    const double snr = snr_lo * exp(log(snr_hi / snr_lo) * dsim_unif(seed, k++));
    const double s1 = 1.2 + 1.8 * dsim_unif(seed, k++);
    const double ratio = dsim_unif(seed, k++) < 0.5 ? 1.0 : 0.6 + 0.4 * dsim_unif(seed, k++);
    const double s2 = s1 * ratio;
    for (int i = 0; i < DIP_MAXP; i++)
        q[i] = 0.0;
    q[1] = log(s1);
    q[2] = log(s2);
    q[3] = (dsim_unif(seed, k++) - 0.5) * pi;
    /* peak of a unit-sum Gaussian is 1 / (2 pi s1 s2) */
    q[0] = kind == DPOP_NOISE ? 0.0 : snr * noise * 2.0 * pi * s1 * s2;
    const double sep = usep * sqrt(s1 * s2);
    q[4] = cx + 0.5 * sep * cos(phi);
    q[5] = cy + 0.5 * sep * sin(phi);
    q[6] = cx - 0.5 * sep * cos(phi);
    q[7] = cy - 0.5 * sep * sin(phi);
    if (kind == DPOP_SINGLE) { /* the negative lobe far away: a lone positive source */
        q[4] = cx;
        q[5] = cy;
        q[6] = q[7] = 1e4;
    }
    dip_shape sh;
    dip_shape_make(q, DIP_K_GDIP, &sh);
    double J[DIP_MAXP];
    for (int t = 0; t < side * side; t++) {
        const double m = dip_model(DIP_K_GDIP, q, &sh, NULL, 0, t % side, t / side, J);
        pix[t] = (float)(m + noise * dsim_gauss(seed ^ 0x5eedull, (uint64_t)s * side * side + t));
        var[t] = (float)(noise * noise);
    }
}

#endif
