/* rng.h — the simulator's counter-based random numbers.
 *
 * Every random quantity is a pure function of (seed, stream, index, draw number): a stream
 * is keyed by hashing seed, stream and index with the splitmix64 finaliser (Steele, Lea &
 * Flood 2014), and draw k is the finaliser of key + (k+1)·golden, i.e. the splitmix64
 * sequence started at the key. So a pixel's noise does not depend on which thread made it
 * or on how many pixels came before it. */
#ifndef TIDE_SIM_RNG_H
#define TIDE_SIM_RNG_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"

/* Streams: one per kind of random quantity, so adding draws to one never shifts another. */
enum {
    SIM_STREAM_STARS = 1,
    SIM_STREAM_GALAXIES = 2,
    SIM_STREAM_SPECIAL = 3, /* moving objects, transients, variables */
    SIM_STREAM_WCS = 4,
    SIM_STREAM_EPOCH = 5,    /* per-epoch geometry, PSF and sky pattern */
    SIM_STREAM_NOISE = 6,    /* per pixel, per epoch */
    SIM_STREAM_READ = 7,     /* per pixel, per epoch */
    SIM_STREAM_COSMIC = 8,   /* per track, per epoch */
    SIM_STREAM_DETECTOR = 9, /* hot pixels and bad columns: the same in every epoch */
    SIM_STREAM_REFCAT = 10,
    SIM_STREAM_TRAIL = 11 /* satellite trails of epoch 2 */
};

typedef struct sim_rng {
    uint64_t key;
    uint64_t ctr;
} sim_rng;

TIDE_HD static inline uint64_t sim_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/** The stream for (seed, stream, index). */
TIDE_HD static inline sim_rng sim_rng_make(uint64_t seed, uint64_t stream, uint64_t index) {
    sim_rng r;
    uint64_t k = sim_mix64(seed + 0x9e3779b97f4a7c15ULL);
    k = sim_mix64(k ^ (stream * 0xd1b54a32d192ed03ULL));
    r.key = sim_mix64(k + index * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
    r.ctr = 0;
    return r;
}

TIDE_HD static inline uint64_t sim_rng_u64(sim_rng *r) {
    r->ctr++;
    return sim_mix64(r->key + r->ctr * 0x9e3779b97f4a7c15ULL);
}

/** Uniform in the open interval (0, 1). */
TIDE_HD static inline double sim_rng_uniform(sim_rng *r) {
    return ((double)(sim_rng_u64(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/** Uniform in [lo, hi). */
TIDE_HD static inline double sim_rng_range(sim_rng *r, double lo, double hi) {
    return lo + (hi - lo) * sim_rng_uniform(r);
}

/** Standard normal by inverting the normal CDF of one uniform, with P. J. Acklam's rational
 *  approximation (relative error < 1.2e-9): the central 95 % needs no transcendental
 *  function, which makes per-pixel read noise cheap. */
TIDE_HD static inline double sim_rng_gauss(sim_rng *r) {
    const double p = sim_rng_uniform(r), plow = 0.02425;
    if (p > plow && p < 1.0 - plow) {
        const double q = p - 0.5, t = q * q;
        return (((((-3.969683028665376e+01 * t + 2.209460984245205e+02) * t -
                   2.759285104469687e+02) *
                      t +
                  1.383577518672690e+02) *
                     t -
                 3.066479806614716e+01) *
                    t +
                2.506628277459239e+00) *
               q /
               (((((-5.447609879822406e+01 * t + 1.615858368580409e+02) * t -
                   1.556989798598866e+02) *
                      t +
                  6.680131188771972e+01) *
                     t -
                 1.328068155288572e+01) *
                    t +
                1.0);
    }
    const double q = sqrt(-2.0 * log(p < 0.5 ? p : 1.0 - p));
    const double x =
        (((((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q - 2.400758277161838e+00) * q -
           2.549732539343734e+00) *
              q +
          4.374664141464968e+00) *
             q +
         2.938163982698783e+00) /
        ((((7.784695709041462e-03 * q + 3.224671290700398e-01) * q + 2.445134137142996e+00) * q +
          3.754408661907416e+00) *
             q +
         1.0);
    return p < 0.5 ? x : -x;
}

/* log(k!) : a table below 10, Stirling's series above (error < 1e-10 for k >= 10). */
TIDE_HD static inline double sim_log_factorial(double k) {
    if (k < 10.0) {
        const double t[10] = {0.0,
                              0.0,
                              0.6931471805599453,
                              1.791759469228055,
                              3.1780538303479458,
                              4.787491742782046,
                              6.579251212010101,
                              8.525161361065415,
                              10.60460290274525,
                              12.801827480081469};
        return t[(int)k];
    }
    double x = k + 1.0, x2 = 1.0 / (x * x);
    return (x - 0.5) * log(x) - x + 0.9189385332046727 +
           (1.0 / 12.0 - x2 * (1.0 / 360.0 - x2 * (1.0 / 1260.0))) / x;
}

/** Poisson deviate of mean @p lam (>= 0). Below 12, inversion by sequential search; from 12
 *  up, Hörmann's transformed rejection with squeeze (PTRS; Hörmann 1993, Insurance: Math.
 *  and Economics 12, 39), which is exact and needs ~2.3 uniforms per deviate. */
TIDE_HD static inline double sim_rng_poisson(sim_rng *r, double lam) {
    if (!(lam > 0.0))
        return 0.0;
    if (lam < 12.0) {
        double u = sim_rng_uniform(r), p = exp(-lam), f = p, k = 0.0;
        while (u > f && k < 200.0) {
            k += 1.0;
            p *= lam / k;
            f += p;
        }
        return k;
    }
    const double slam = sqrt(lam);
    const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
    for (;;) {
        double u = sim_rng_uniform(r) - 0.5, v = sim_rng_uniform(r);
        double us = 0.5 - fabs(u);
        double k = floor((2.0 * a / us + b) * u + lam + 0.43);
        if (us >= 0.07 && v <= vr)
            return k;
        if (k < 0.0 || (us < 0.013 && v > us))
            continue;
        if (log(v) + log(invalpha) - log(a / (us * us) + b) <=
            -lam + k * log(lam) - sim_log_factorial(k))
            return k;
    }
}

#endif
