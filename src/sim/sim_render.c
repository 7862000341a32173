/* sim_render.c — draw every source into the electron image, deterministically in parallel.
 *
 * The frame is cut into bands of SIM_BAND rows. Each source is listed in every band its
 * footprint touches (a counting sort keeps the lists in source order); a thread owns a whole
 * band and adds its sources in list order, so each pixel sees the same additions in the same
 * order whatever the number of threads, and no two threads write one pixel (no atomics). */
#include <stdlib.h>

#include "sim_internal.h"
#include "sim_psf_math.h"
#include "tide/status.h"

#define SIM_BAND 32

/* Rows [*j0, *j1] of the frame that source s touches; 0 if none (or off the frame in x). */
static int src_rows(const sim_src *s, int64_t width, int64_t height, int64_t *j0, int64_t *j1) {
    int64_t a, b, xa, xb;
    if (s->stamp) {
        a = s->sy0;
        b = s->sy0 + s->sh - 1;
        xa = s->sx0;
        xb = s->sx0 + s->sw - 1;
    } else {
        if (!(s->amp > 0))
            return 0;
        a = (int64_t)ceil(s->y - s->radius);
        b = (int64_t)floor(s->y + s->radius);
        xa = (int64_t)ceil(s->x - s->radius);
        xb = (int64_t)floor(s->x + s->radius);
    }
    if (xb < 0 || xa >= width)
        return 0;
    if (a < 0)
        a = 0;
    if (b > height - 1)
        b = height - 1;
    *j0 = a;
    *j1 = b;
    return a <= b;
}

static void draw_rows(float *e, int64_t width, const sim_src *s, int64_t ja, int64_t jb) {
    if (s->stamp) {
        int64_t i0 = s->sx0 < 0 ? 0 : s->sx0;
        int64_t i1 = s->sx0 + s->sw - 1 < width - 1 ? s->sx0 + s->sw - 1 : width - 1;
        for (int64_t j = ja; j <= jb; j++) {
            const float *srow = s->stamp + (j - s->sy0) * s->sw;
            float *row = e + j * width;
            for (int64_t i = i0; i <= i1; i++)
                row[i] += srow[i - s->sx0];
        }
        return;
    }
    const double rs2 = (double)s->rsub * s->rsub;
    for (int64_t j = ja; j <= jb; j++) {
        int64_t i0, i1;
        if (!sim_src_span(s, j, &i0, &i1))
            continue;
        double dy = (double)j - s->y;
        if (i0 < 0)
            i0 = 0;
        if (i1 > width - 1)
            i1 = width - 1;
        float *row = e + j * width;
        for (int64_t i = i0; i <= i1; i++) {
            double dx = (double)i - s->x;
            int sub = dx * dx + dy * dy <= rs2;
            row[i] += s->amp * sim_moffat_pixel((float)dx, (float)dy, s->cxx, s->cxy, s->cyy,
                                                s->beta, s->nsub, sub);
        }
    }
}

int sim_render(float *e, int64_t width, int64_t height, const sim_src *src, int64_t nsrc,
               int nthreads) {
    const int64_t nb = (height + SIM_BAND - 1) / SIM_BAND;
    int64_t *start = calloc((size_t)nb + 1, sizeof *start);
    int64_t *fill = calloc((size_t)nb + 1, sizeof *fill);
    if (!start || !fill) {
        free(start);
        free(fill);
        return tide_error(TIDE_E_NOMEM, "sim: out of memory for the band lists");
    }
    for (int64_t k = 0; k < nsrc; k++) {
        int64_t j0, j1;
        if (src_rows(&src[k], width, height, &j0, &j1))
            for (int64_t b = j0 / SIM_BAND; b <= j1 / SIM_BAND; b++)
                start[b + 1]++;
    }
    for (int64_t b = 0; b < nb; b++)
        start[b + 1] += start[b];
    int64_t *list = malloc(sizeof *list * (size_t)(start[nb] > 0 ? start[nb] : 1));
    if (!list) {
        free(start);
        free(fill);
        return tide_error(TIDE_E_NOMEM, "sim: out of memory for the band lists");
    }
    for (int64_t b = 0; b < nb; b++)
        fill[b] = start[b];
    for (int64_t k = 0; k < nsrc; k++) {
        int64_t j0, j1;
        if (src_rows(&src[k], width, height, &j0, &j1))
            for (int64_t b = j0 / SIM_BAND; b <= j1 / SIM_BAND; b++)
                list[fill[b]++] = k;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t ba = b * SIM_BAND;
        const int64_t bb = (ba + SIM_BAND - 1 < height - 1) ? ba + SIM_BAND - 1 : height - 1;
        for (int64_t t = start[b]; t < start[b + 1]; t++) {
            const sim_src *s = &src[list[t]];
            int64_t j0, j1;
            src_rows(s, width, height, &j0, &j1);
            draw_rows(e, width, s, j0 > ba ? j0 : ba, j1 < bb ? j1 : bb);
        }
    }
    free(list);
    free(start);
    free(fill);
    return 0;
}
