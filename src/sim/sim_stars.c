/* sim_stars.c — stars: a power-law luminosity function, uniform positions, colours.
 *
 * Magnitudes follow dN/dm ∝ 10^(alpha m) between mag_bright and mag_faint, drawn by inverting
 * the cumulative distribution: with k = alpha ln 10,
 *     m = m_b + ln(1 + u (e^{k (m_f - m_b)} - 1)) / k,  u uniform in (0, 1).
 * Star i's position, magnitude and colour depend only on (seed, i). The first nstars lie inside
 * the epoch-1 frame; the rest fill a margin around it at the same density, so edge stars spill
 * light into the frame and epoch 2 (shifted, rotated) sees the same sky. */
#include <math.h>
#include <stdlib.h>

#include "sim_internal.h"
#include "tide/status.h"

double sim_lf_draw(double u, double alpha, double mb, double mf) {
    if (fabs(alpha) < 1e-9)
        return mb + u * (mf - mb);
    double k = alpha * log(10.0);
    return mb + log1p(u * expm1(k * (mf - mb))) / k;
}

int sim_stars_make(tide_sim_sky *sky) {
    const tide_sim_params *p = &sky->p;
    const double W = (double)p->width, H = (double)p->height, M = (double)sky->margin;
    const double area_in = W * H, area_all = (W + 2 * M) * (H + 2 * M);
    const int64_t nin = p->nstars;
    const int64_t nout = (int64_t)llround((double)nin * (area_all - area_in) / area_in);
    const int64_t n = nin + nout;
    int st = sim_sky_reserve(sky, n);
    if (st)
        return st;
    sim_object *obj = sky->obj + sky->nobj;
    const int64_t id0 = sky->nobj + 1;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        sim_rng r = sim_rng_make(p->seed, SIM_STREAM_STARS, (uint64_t)i);
        double x, y;
        if (i < nin) {
            x = -0.5 + W * sim_rng_uniform(&r);
            y = -0.5 + H * sim_rng_uniform(&r);
        } else {
            do { /* rejection: the ring around the frame */
                x = -0.5 - M + (W + 2 * M) * sim_rng_uniform(&r);
                y = -0.5 - M + (H + 2 * M) * sim_rng_uniform(&r);
            } while (x >= -0.5 && x < W - 0.5 && y >= -0.5 && y < H - 0.5);
        }
        sim_object *o = &obj[i];
        o->id = id0 + i;
        o->type = TIDE_SIM_STAR;
        o->mag[0] = o->mag[1] =
            sim_lf_draw(sim_rng_uniform(&r), p->lf_alpha, p->mag_bright, p->mag_faint);
        double c = 0.8 + 0.35 * sim_rng_gauss(&r);
        o->color = c < -0.3 ? -0.3 : (c > 2.5 ? 2.5 : c);
        sim_wcs_pix2sky(&sky->geom[0].wcs, x, y, &o->ra[0], &o->dec[0]);
        o->ra[1] = o->ra[0];
        o->dec[1] = o->dec[0];
    }
    sky->nobj += n;
    sky->nstars_total = n;
    return 0;
}
