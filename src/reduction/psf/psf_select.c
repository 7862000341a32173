/* psf_select.c — which candidates become PSF stars. Two host-side steps over small arrays:
 * before the kernels, a screen of the candidate list by position, flux and isolation (a grid
 * of cells of the isolation radius makes the neighbour search linear); after the
 * measurement kernel, the choice of the best-measured stars. */
#include <math.h>
#include <stdlib.h>

#include "compute/select_first.h"
#include "psf_internal.h"
#include "psf_kernels.h"
#include "tide/status.h"

static void count_reject(tide_psf_model *m, int bits) {
    for (int i = 0; i < 8; i++)
        if (bits & (1 << i)) {
            m->nreject[i]++;
            return; /* one reason per candidate: the first */
        }
}

/* Sort keys: flux descending, then index ascending (a total order: deterministic). */
typedef struct cand_key {
    double f;
    int64_t i;
} cand_key;

static int cmp_key(const void *a, const void *b) {
    const cand_key *p = a, *q = b;
    if (p->f > q->f)
        return -1;
    if (p->f < q->f)
        return 1;
    return p->i < q->i ? -1 : (p->i > q->i);
}

int64_t psf_select_candidates(const psf_plan *pl, int64_t width, int64_t height, int64_t n,
                              const double *x, const double *y, const double *flux, int64_t cap,
                              int64_t *idx, tide_psf_model *m) {
    const tide_psf_params *p = &pl->p;
    const double margin = pl->half + 4.0; /* stamp + Lanczos taps + a pixel of centroid play */
    const double r = pl->isolation;
    /* grid over the frame (candidates outside are clamped to it) of cells no smaller than r,
     * so the 3×3 cells around a candidate hold every neighbour within r, and about one
     * candidate a cell on crowded frames (a few thousand cells for 42k candidates on 151 MP,
     * not ~10^6 of side r to allocate and clear) */
    const double cs = fmax(r, sqrt((double)width * (double)height / (double)(n > 0 ? n : 1)));
    const int64_t gw = (int64_t)(width / cs) + 1, gh = (int64_t)(height / cs) + 1;
    int64_t *head = malloc(sizeof(int64_t) * (size_t)(gw * gh));
    int64_t *next = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    cand_key *keys = malloc(sizeof(cand_key) * (size_t)(n > 0 ? n : 1));
    if (!head || !next || !keys) {
        free(head);
        free(next);
        free(keys);
        return tide_error(TIDE_E_NOMEM, "psf: candidate grid for %lld candidates", (long long)n);
    }
    for (int64_t c = 0; c < gw * gh; c++)
        head[c] = -1;
    for (int64_t i = n - 1; i >= 0; i--) { /* lists in ascending index order */
        next[i] = -1;
        if (!isfinite(x[i]) || !isfinite(y[i]))
            continue;
        const double qx = x[i] / cs, qy = y[i] / cs; /* clamped before the conversion */
        const int64_t cx = qx < 0 ? 0 : (qx >= (double)(gw - 1) ? gw - 1 : (int64_t)qx);
        const int64_t cy = qy < 0 ? 0 : (qy >= (double)(gh - 1) ? gh - 1 : (int64_t)qy);
        next[i] = head[cy * gw + cx];
        head[cy * gw + cx] = i;
    }
    int64_t nk = 0;
    for (int64_t i = 0; i < n; i++) {
        const double fi = flux ? flux[i] : 0.0;
        if (!isfinite(x[i]) || !isfinite(y[i]) || x[i] < margin || y[i] < margin ||
            x[i] > (double)(width - 1) - margin || y[i] > (double)(height - 1) - margin) {
            count_reject(m, TIDE_PSF_REJ_EDGE);
            continue;
        }
        if (flux && (!isfinite(fi) || fi <= 0.0 || (p->flux_min > 0 && fi < p->flux_min) ||
                     (p->flux_max > 0 && fi > p->flux_max))) {
            count_reject(m, TIDE_PSF_REJ_SNR);
            continue;
        }
        int crowded = 0;
        const int64_t cx = (int64_t)(x[i] / cs), cy = (int64_t)(y[i] / cs);
        for (int64_t gy = cy - 1; gy <= cy + 1 && !crowded; gy++)
            for (int64_t gx = cx - 1; gx <= cx + 1 && !crowded; gx++) {
                if (gx < 0 || gy < 0 || gx >= gw || gy >= gh)
                    continue;
                for (int64_t j = head[gy * gw + gx]; j >= 0; j = next[j]) {
                    if (j == i)
                        continue;
                    const double dx = x[j] - x[i], dy = y[j] - y[i];
                    if (dx * dx + dy * dy >= r * r)
                        continue;
                    /* a neighbour counts unless it is much fainter (or of unknown flux
                     * when fluxes are given: NaN compares false, so it counts) */
                    if (!flux || !(flux[j] * p->iso_flux_ratio < fi)) {
                        crowded = 1;
                        break;
                    }
                }
            }
        if (crowded) {
            count_reject(m, TIDE_PSF_REJ_CROWDED);
            continue;
        }
        keys[nk].f = fi;
        keys[nk].i = i;
        nk++;
    }
    const int64_t nout = nk < cap ? nk : cap;
    if (flux) {
        if (nout < nk)
            tide_select_first(keys, nk, nout, sizeof *keys, cmp_key);
        qsort(keys, (size_t)nout, sizeof *keys, cmp_key);
    }
    for (int64_t k = 0; k < nout; k++)
        idx[k] = keys[k].i;
    free(head);
    free(next);
    free(keys);
    return nout;
}

int psf_choose_stars(const psf_plan *pl, int64_t n, const double *meas, const int32_t *flags,
                     int *pick, tide_psf_model *m) {
    const tide_psf_params *p = &pl->p;
    cand_key *keys = malloc(sizeof(cand_key) * (size_t)(n > 0 ? n : 1));
    if (!keys)
        return tide_error(TIDE_E_NOMEM, "psf: star choice");
    int64_t nk = 0;
    for (int64_t i = 0; i < n; i++) {
        if (flags[i]) {
            count_reject(m, flags[i]);
            continue;
        }
        const double snr = meas[i * PSF_NMEAS + PSF_M_SNR];
        if (!(snr >= p->snr_min) || (p->snr_max > 0 && snr > p->snr_max) ||
            !(meas[i * PSF_NMEAS + PSF_M_SUM] > 0.0)) {
            count_reject(m, TIDE_PSF_REJ_SNR);
            continue;
        }
        keys[nk].f = snr;
        keys[nk].i = i;
        nk++;
    }
    /* size: median of the S/N-passing candidates (sizes ride in f for the sort) */
    if (nk > 0) {
        for (int64_t k = 0; k < nk; k++)
            keys[k].f = meas[keys[k].i * PSF_NMEAS + PSF_M_FWHM];
        qsort(keys, (size_t)nk, sizeof *keys, cmp_key); /* descending size */
        const double med = nk % 2 ? keys[nk / 2].f : 0.5 * (keys[nk / 2 - 1].f + keys[nk / 2].f);
        m->size_median = med;
        int64_t nn = 0;
        for (int64_t k = 0; k < nk; k++) {
            if (!(fabs(keys[k].f / med - 1.0) <= p->size_tolerance)) {
                count_reject(m, TIDE_PSF_REJ_SIZE);
                continue;
            }
            keys[nn].i = keys[k].i;
            keys[nn].f = meas[keys[k].i * PSF_NMEAS + PSF_M_SNR];
            nn++;
        }
        nk = nn;
    }
    qsort(keys, (size_t)nk, sizeof *keys, cmp_key);
    const int64_t nout = nk < p->max_stars ? nk : p->max_stars;
    for (int64_t k = 0; k < nout; k++)
        pick[k] = (int)keys[k].i;
    free(keys);
    return (int)nout;
}
