/* dipole_sim.h — random simulated dipoles and point sources with known truth: the model of the
 * fit (dipole_math.h) plus white Gaussian noise from a counter-based generator (deterministic
 * in seed and stamp index). One stamp maker for the dipole tests (tests/unit/test_dipole_sim.h)
 * and `tide bench --diff` (src/cli/bench/bench_diff.c). Not public. */
#ifndef TIDE_DIPOLE_SIM_H
#define TIDE_DIPOLE_SIM_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dipole_math.h"
#include "core/rng.h"
#include "tide/dipole.h"

/* splitmix64 step: the simulator's finaliser (core/rng.h) after the golden-ratio increment */
static inline uint64_t dsim_mix(uint64_t z) {
    return sim_mix64(z + 0x9E3779B97F4A7C15ull);
}
static inline double dsim_unif(uint64_t seed, uint64_t i) {
    return ((double)(dsim_mix(seed * 0x100000001B3ull + i) >> 11) + 0.5) / 9007199254740992.0;
}
static inline double dsim_gauss(uint64_t seed, uint64_t i) {
    double u1 = dsim_unif(seed, 2 * i), u2 = dsim_unif(seed, 2 * i + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Truth of one stamp (stamp coordinates). */
typedef struct dsim_truth {
    int dipole;         /* 1 dipole, 0 single point source */
    double q[DIP_MAXP]; /* model parameters in the fit's order */
    double noise;       /* sigma of the white noise */
} dsim_truth;

/* A unit-sum Gaussian PSF stamp of width sigma, side psf_side, sampled at pixel centres. */
static inline void dsim_psf(float *psf, int psf_side, double sigma) {
    const int h = (psf_side - 1) / 2;
    for (int j = 0; j < psf_side; j++)
        for (int i = 0; i < psf_side; i++)
            psf[j * psf_side + i] =
                (float)(exp(-0.5 * ((i - h) * (i - h) + (j - h) * (j - h)) / (sigma * sigma)) /
                        (6.283185307179586 * sigma * sigma));
}

/* Draw stamp s: a dipole (or a point source when !dipole) of the model family, lobe S/N
 * between snr_lo and snr_hi, lobe separation between sep_lo and sep_hi times the Gaussian
 * width (geometric mean of the axes; the PSF's sigma_psf), noise sigma in [0.5, 2]. Writes
 * side² pixels and variances. */
static inline void dsim_stamp(uint64_t seed, int64_t s, int model, int dipole, int side,
                              double snr_lo, double snr_hi, double sep_lo, double sep_hi,
                              const float *psf, int psf_side, double sigma_psf, float *pix,
                              float *var, dsim_truth *tr) {
    uint64_t k = (uint64_t)s * 64;
    const double c = 0.5 * (side - 1);
    const double noise = 0.5 + 1.5 * dsim_unif(seed, k++);
    const double cx = c + (dsim_unif(seed, k++) - 0.5), cy = c + (dsim_unif(seed, k++) - 0.5);
    const double usep = sep_lo + (sep_hi - sep_lo) * dsim_unif(seed, k++);
    const double phi = 6.283185307179586 * dsim_unif(seed, k++);
    const double snr = snr_lo + (snr_hi - snr_lo) * dsim_unif(seed, k++);
    double q[DIP_MAXP] = {0};
    int kind;
    double s1 = sigma_psf, s2 = sigma_psf;
    if (model == TIDE_DIPOLE_GAUSS) {
        s1 = 1.2 + 0.8 * dsim_unif(seed, k++);
        s2 = s1 * (0.6 + 0.2 * dsim_unif(seed, k++));
        q[1] = log(s1);
        q[2] = log(s2);
        q[3] = (dsim_unif(seed, k++) - 0.5) * 3.141592653589793;
    }
    /* Flux from the lobe S/N of a Gaussian: snr = F / (noise sqrt(4 pi s1 s2)). */
    q[0] = snr * noise * sqrt(4.0 * 3.141592653589793 * s1 * s2);
    const double sep = usep * sqrt(s1 * s2);
    const int ix = model == TIDE_DIPOLE_GAUSS ? 4 : 1;
    if (dipole) {
        kind = model == TIDE_DIPOLE_GAUSS ? DIP_K_GDIP : DIP_K_PDIP;
        q[ix] = cx + 0.5 * sep * cos(phi);
        q[ix + 1] = cy + 0.5 * sep * sin(phi);
        q[ix + 2] = cx - 0.5 * sep * cos(phi);
        q[ix + 3] = cy - 0.5 * sep * sin(phi);
    } else {
        kind = model == TIDE_DIPOLE_GAUSS ? DIP_K_GPS : DIP_K_PPS;
        q[ix] = cx;
        q[ix + 1] = cy;
        if (dsim_unif(seed, k++) < 0.5)
            q[0] = -q[0]; /* negative single sources too */
    }
    dip_shape sh;
    dip_shape_make(q, kind, &sh);
    double J[DIP_MAXP];
    const int npix = side * side;
    for (int t = 0; t < npix; t++) {
        const double m = dip_model(kind, q, &sh, psf, psf_side, t % side, t / side, J);
        pix[t] = (float)(m + noise * dsim_gauss(seed ^ 0x5eedull, (uint64_t)s * npix + t));
        var[t] = (float)(noise * noise);
    }
    tr->dipole = dipole;
    tr->noise = noise;
    memcpy(tr->q, q, sizeof q);
}

#endif
