/* sim_galaxies.c — Sérsic galaxies: drawn on the sky, rendered as PSF-convolved stamps.
 *
 * The profile is I(r) ∝ exp(-b_n [(r/Re)^(1/n) - 1]) (Sérsic 1963) on elliptical radii
 * r² = x'² + (y'/q)² (Re along the major axis), with b_n from the asymptotic series of Ciotti &
 * Bertin (1999, A&A 352, 447, eq. 18). The stamp is sampled on the frame's pixel grid with
 * 3×3 sub-samples (11×11 near the cusp), truncated at 5 Re, convolved directly with the
 * local pixel-integrated Moffat PSF and normalised to the galaxy's flux. */
#include <math.h>
#include <stdlib.h>

#include "sim_internal.h"
#include "sim_psf_math.h"
#include "tide/status.h"

#define SIM_PI 3.14159265358979323846

static double sersic_b(double n) {
    return 2.0 * n - 1.0 / 3.0 + 4.0 / (405.0 * n) + 46.0 / (25515.0 * n * n) +
           131.0 / (1148175.0 * n * n * n);
}

int sim_galaxies_make(tide_sim_sky *sky) {
    const tide_sim_params *p = &sky->p;
    const int64_t n = p->ngalaxies;
    int st = sim_sky_reserve(sky, n);
    if (st)
        return st;
    sim_object *obj = sky->obj + sky->nobj;
    const int64_t id0 = sky->nobj + 1;
    const double mb = p->mag_bright + 3.0,
                 mf = p->mag_faint - 1.0 > mb ? p->mag_faint - 1.0 : mb + 1;
    for (int64_t i = 0; i < n; i++) {
        sim_rng r = sim_rng_make(p->seed, SIM_STREAM_GALAXIES, (uint64_t)i);
        double x = -0.5 + (double)p->width * sim_rng_uniform(&r);
        double y = -0.5 + (double)p->height * sim_rng_uniform(&r);
        sim_object *o = &obj[i];
        o->id = id0 + i;
        o->type = TIDE_SIM_GALAXY;
        o->mag[0] = o->mag[1] = sim_lf_draw(sim_rng_uniform(&r), 0.35, mb, mf);
        double kind = sim_rng_uniform(&r);
        o->sersic_n = kind < 0.5 ? 1.0 : (kind < 0.75 ? 4.0 : sim_rng_range(&r, 0.5, 2.5));
        /* Brighter galaxies are larger: Re from 1.5 to 8 px, log-uniform, shifted by mag. */
        double lre = sim_rng_range(&r, log(1.5), log(5.0)) - 0.25 * (o->mag[0] - mf);
        o->re_pix = fmin(exp(lre), 8.0);
        o->q = sim_rng_range(&r, 0.3, 1.0);
        o->theta1 = sim_rng_range(&r, -90.0, 90.0);
        o->color = 1.0 + 0.3 * sim_rng_gauss(&r);
        sim_wcs_pix2sky(&sky->geom[0].wcs, x, y, &o->ra[0], &o->dec[0]);
        o->ra[1] = o->ra[0];
        o->dec[1] = o->dec[0];
    }
    sky->nobj += n;
    return 0;
}

int sim_galaxy_stamp(sim_src *s, const sim_object *o, double theta_pix) {
    const double re = o->re_pix, nn = o->sersic_n, q = o->q, bn = sersic_b(nn);
    const int64_t H = (int64_t)ceil(fmin(fmax(5.0 * re, 6.0), 40.0));
    const double qf = pow(0.005, 1.0 / (1.0 - s->beta)) - 1.0;
    const double amaj = 1.0 / sqrt(fmin(s->cxx, s->cyy) > 0 ? fmin(s->cxx, s->cyy) : 1.0);
    const int64_t K = (int64_t)ceil(fmin(amaj * sqrt(qf), 15.0));
    const int64_t gx0 = (int64_t)floor(s->x) - H, gy0 = (int64_t)floor(s->y) - H;
    const int64_t gn = 2 * H + 2, kn = 2 * K + 1, on = gn + 2 * K;
    float *g = malloc(sizeof(float) * (size_t)(gn * gn));
    float *k = malloc(sizeof(float) * (size_t)(kn * kn));
    float *out = calloc((size_t)(on * on), sizeof(float));
    if (!g || !k || !out) {
        free(g);
        free(k);
        free(out);
        return tide_error(TIDE_E_NOMEM, "sim: out of memory for a galaxy stamp");
    }
    const double c = cos(theta_pix), sn = sin(theta_pix);
    for (int64_t j = 0; j < gn; j++)
        for (int64_t i = 0; i < gn; i++) {
            double dx = (double)(gx0 + i) - s->x, dy = (double)(gy0 + j) - s->y;
            int ns = dx * dx + dy * dy < 4.0 ? 11 : 3;
            double acc = 0;
            for (int b = 0; b < ns; b++)
                for (int a = 0; a < ns; a++) {
                    double sx = dx - 0.5 + (a + 0.5) / ns, sy = dy - 0.5 + (b + 0.5) / ns;
                    double xp = c * sx + sn * sy, yp = (-sn * sx + c * sy) / q;
                    double r = sqrt(xp * xp + yp * yp);
                    if (r <= 5.0 * re)
                        acc += exp(-bn * (pow(r / re, 1.0 / nn) - 1.0));
                }
            g[j * gn + i] = (float)(acc / (ns * ns));
        }
    const double rs2 = (double)s->rsub * s->rsub;
    for (int64_t j = 0; j < kn; j++)
        for (int64_t i = 0; i < kn; i++) {
            double dx = (double)(i - K), dy = (double)(j - K);
            k[j * kn + i] = sim_moffat_pixel((float)dx, (float)dy, s->cxx, s->cxy, s->cyy, s->beta,
                                             s->nsub, dx * dx + dy * dy <= rs2);
        }
    /* out(p) = Σ_k g(p - k) kern(k), p and k on the output/kernel grids. */
    double tot = 0;
    for (int64_t j = 0; j < gn; j++)
        for (int64_t i = 0; i < gn; i++) {
            float gv = g[j * gn + i];
            if (gv == 0.0f)
                continue;
            for (int64_t kj = 0; kj < kn; kj++) {
                float *orow = out + (j + kj) * on + i;
                const float *krow = k + kj * kn;
                for (int64_t ki = 0; ki < kn; ki++)
                    orow[ki] += gv * krow[ki];
            }
        }
    for (int64_t t = 0; t < on * on; t++)
        tot += out[t];
    const float scale = tot > 0 ? (float)(s->flux / tot) : 0.0f;
    double vmax = 0;
    for (int64_t t = 0; t < on * on; t++) {
        out[t] *= scale;
        if (out[t] > vmax)
            vmax = out[t];
    }
    free(g);
    free(k);
    s->stamp = out;
    s->sx0 = gx0 - K;
    s->sy0 = gy0 - K;
    s->sw = s->sh = on;
    s->peak = vmax;
    s->radius = (float)(H + K);
    return 0;
}
