/* test_gpu_crossmatch.c — the CUDA crossmatch (spatial hashing) against the CPU k-d tree:
 * the same pairs exactly and the same separation bits (both use crossmatch_math.h with
 * explicitly rounded operations; 1e-9 arcsec is the fallback tolerance reported), at list
 * sizes 0, 1, 7, 1000 and 100003, plain and mutual, in fields at the equator, across RA
 * 0/360 and at the pole, with NaN and duplicate positions, radii 1e-3 to 3600 arcsec; device
 * arrays (tide_crossmatch) and host arrays (tide_crossmatch_host); a repeated call allocates
 * nothing and gives the same bits. Skipped without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/crossmatch.h"
#include "tide/tide.h"
#include "tide_test.h"

static double rnd(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

#define D2R 0.017453292519943295

/* Uniform in a cap of @p cap degrees around (ra0, dec0). */
static void cap_point(unsigned long long *sd, double ra0, double dec0, double cap, double *ra,
                      double *dec) {
    const double cmin = cos(cap * D2R);
    const double z = cmin + (1 - cmin) * rnd(sd), phi = 6.283185307179586 * rnd(sd);
    const double rr = sqrt(fmax(0.0, 1 - z * z));
    const double v0 = rr * cos(phi), v1 = rr * sin(phi);
    const double th = (90.0 - dec0) * D2R, ph = ra0 * D2R;
    const double x = v0 * cos(th) + z * sin(th), y = v1, zz = -v0 * sin(th) + z * cos(th);
    double a = atan2(x * sin(ph) + y * cos(ph), x * cos(ph) - y * sin(ph)) / D2R;
    *ra = a < 0 ? a + 360.0 : a;
    *dec = asin(fmax(-1.0, fmin(1.0, zz))) / D2R;
}

typedef struct field {
    double *ra1, *de1, *ra2, *de2;
    int64_t n1, n2;
} field;

/* n1 positions; list 2 = 80% of them moved by up to @p jitter arcsec (shuffled) plus 25%
 * more random ones; every 97th position NaN, every 13th list-2 position a duplicate. */
static field make_field(unsigned long long seed, int64_t n1, double ra0, double dec0, double cap,
                        double jitter) {
    field f;
    unsigned long long sd = seed;
    const int64_t nm = n1 * 4 / 5;
    f.n1 = n1;
    f.n2 = nm + n1 / 4;
    f.ra1 = malloc(sizeof(double) * (size_t)(n1 + 1));
    f.de1 = malloc(sizeof(double) * (size_t)(n1 + 1));
    f.ra2 = malloc(sizeof(double) * (size_t)(f.n2 + 1));
    f.de2 = malloc(sizeof(double) * (size_t)(f.n2 + 1));
    for (int64_t i = 0; i < n1; i++)
        cap_point(&sd, ra0, dec0, cap, &f.ra1[i], &f.de1[i]);
    for (int64_t j = 0; j < nm; j++) {
        f.de2[j] = fmax(-90.0, fmin(90.0, f.de1[j] + jitter * (2 * rnd(&sd) - 1) / 3600.0));
        f.ra2[j] =
            f.ra1[j] + jitter * (2 * rnd(&sd) - 1) / 3600.0 / fmax(1e-3, cos(f.de1[j] * D2R));
    }
    for (int64_t j = nm - 1; j > 0; j--) {
        const int64_t k = (int64_t)(rnd(&sd) * (double)(j + 1));
        double t = f.ra2[j];
        f.ra2[j] = f.ra2[k];
        f.ra2[k] = t;
        t = f.de2[j];
        f.de2[j] = f.de2[k];
        f.de2[k] = t;
    }
    for (int64_t j = nm; j < f.n2; j++)
        cap_point(&sd, ra0, dec0, cap, &f.ra2[j], &f.de2[j]);
    for (int64_t j = 13; j < f.n2; j += 13) {
        f.ra2[j] = f.ra2[j - 1];
        f.de2[j] = f.de2[j - 1];
    }
    for (int64_t i = 50; i < n1; i += 97)
        f.de1[i] = NAN;
    for (int64_t j = 60; j < f.n2; j += 97)
        f.ra2[j] = NAN;
    return f;
}

static void free_field(field *f) {
    free(f->ra1);
    free(f->de1);
    free(f->ra2);
    free(f->de2);
}

static double *upload(tide_ctx *g, const double *h, int64_t n) {
    void *d = NULL;
    CHECK_OK(tide_device_alloc(g, sizeof(double) * (size_t)(n + 1), &d));
    if (n)
        CHECK_OK(tide_memcpy(g, d, 1, h, 0, sizeof(double) * (size_t)n));
    return (double *)d;
}

static void agree(tide_ctx *cpu, tide_ctx *gpu, const char *what, const field *f, double radius,
                  int mutual) {
    const int64_t n1 = f->n1, n2 = f->n2;
    const size_t nb = (size_t)(n1 + 1);
    int64_t *mc = malloc(nb * sizeof(int64_t)), *mg = malloc(nb * sizeof(int64_t));
    int64_t *mh = malloc(nb * sizeof(int64_t));
    double *sc = malloc(nb * sizeof(double)), *sg = malloc(nb * sizeof(double));
    double *sh = malloc(nb * sizeof(double));
    tide_xmatch_params p = {radius, mutual};
    int64_t nc = -1, ng = -2, nh = -3;
    CHECK_OK(tide_crossmatch(cpu, f->ra1, f->de1, n1, f->ra2, f->de2, n2, &p, mc, sc, &nc));
    double *dra1 = upload(gpu, f->ra1, n1), *dde1 = upload(gpu, f->de1, n1);
    double *dra2 = upload(gpu, f->ra2, n2), *dde2 = upload(gpu, f->de2, n2);
    void *dm = NULL, *ds = NULL;
    CHECK_OK(tide_device_alloc(gpu, nb * sizeof(int64_t), &dm));
    CHECK_OK(tide_device_alloc(gpu, nb * sizeof(double), &ds));
    CHECK_OK(tide_crossmatch(gpu, dra1, dde1, n1, dra2, dde2, n2, &p, dm, ds, &ng));
    /* the same call again: the same bits, and no new device memory */
    size_t before = 0, after = 0;
    tide_device_usage(gpu, &before, NULL);
    CHECK_OK(tide_crossmatch(gpu, dra1, dde1, n1, dra2, dde2, n2, &p, dm, ds, NULL));
    CHECK_OK(tide_sync(gpu));
    tide_device_usage(gpu, &after, NULL);
    CHECK(after == before);
    if (n1) {
        CHECK_OK(tide_memcpy(gpu, mg, 0, dm, 1, (size_t)n1 * sizeof(int64_t)));
        CHECK_OK(tide_memcpy(gpu, sg, 0, ds, 1, (size_t)n1 * sizeof(double)));
    }
    CHECK_OK(tide_crossmatch_host(gpu, f->ra1, f->de1, n1, f->ra2, f->de2, n2, &p, mh, sh, &nh));
    int64_t bad = 0, badh = 0, bits = 0;
    double worst = 0.0;
    for (int64_t i = 0; i < n1; i++) {
        if (mc[i] != mg[i]) {
            if (bad++ < 5)
                fprintf(stderr, "%s: i=%lld cpu %lld gpu %lld (sep %.17g %.17g)\n", what,
                        (long long)i, (long long)mc[i], (long long)mg[i], sc[i], sg[i]);
            continue;
        }
        badh += mh[i] != mc[i] || memcmp(&sh[i], &sc[i], sizeof(double)) != 0;
        if (mc[i] >= 0) {
            const double e = fabs(sc[i] - sg[i]);
            worst = e > worst ? e : worst;
            bits += memcmp(&sc[i], &sg[i], sizeof(double)) != 0;
        } else {
            CHECK(isnan(sg[i]));
        }
    }
    printf("%-22s n1 %6lld n2 %6lld r %8.3f\" mutual %d: %6lld matched; pair diffs %lld, "
           "host-path diffs %lld, sep bit diffs %lld (worst %.2g\")\n",
           what, (long long)n1, (long long)n2, radius, mutual, (long long)nc, (long long)bad,
           (long long)badh, (long long)bits, worst);
    CHECK(bad == 0);
    CHECK(badh == 0);
    CHECK(worst <= 1e-9);
    CHECK(bits == 0);
    CHECK(nc == ng && nc == nh);
    tide_device_free(gpu, dra1);
    tide_device_free(gpu, dde1);
    tide_device_free(gpu, dra2);
    tide_device_free(gpu, dde2);
    tide_device_free(gpu, dm);
    tide_device_free(gpu, ds);
    free(mc);
    free(mg);
    free(mh);
    free(sc);
    free(sg);
    free(sh);
}

int main(void) {
    int ndev = 0;
    if (!tide_cuda_available(&ndev))
        TIDE_TEST_SKIP("no CUDA device");
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *cpu = NULL, *gpu = NULL;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();
    const int64_t sizes[] = {0, 1, 7, 1000, 100003};
    for (int k = 0; k < 5; k++) {
        const int64_t n = sizes[k];
        for (int mutual = 0; mutual < 2; mutual++) {
            field f = make_field(10 + (unsigned long long)n, n, 150.0, 2.0, 1.0, 0.3);
            agree(cpu, gpu, "equator 1 deg", &f, 1.0, mutual);
            free_field(&f);
            f = make_field(20 + (unsigned long long)n, n, 0.0, -30.0, 0.7, 0.5);
            agree(cpu, gpu, "RA 0/360", &f, 2.0, mutual);
            free_field(&f);
            f = make_field(30 + (unsigned long long)n, n, 0.0, 90.0, 0.5, 0.5);
            if (n > 1) {
                f.ra1[1] = 33.0; /* exactly at the pole, in both lists */
                f.de1[1] = 90.0;
                f.ra2[0] = 250.0;
                f.de2[0] = 90.0;
            }
            agree(cpu, gpu, "north pole", &f, 1.5, mutual);
            free_field(&f);
            f = make_field(40 + (unsigned long long)n, n, 200.0, -60.0, 0.2, 20.0);
            agree(cpu, gpu, "crowded, 30\"", &f, 30.0, mutual);
            free_field(&f);
        }
    }
    /* extreme radii on moderate sizes */
    field f = make_field(51, 20000, 80.0, 10.0, 0.01, 0.003);
    agree(cpu, gpu, "tiny radius", &f, 1e-3, 0);
    free_field(&f);
    f = make_field(52, 3001, 300.0, 45.0, 20.0, 1000.0);
    agree(cpu, gpu, "radius 3600\"", &f, 3600.0, 0);
    agree(cpu, gpu, "radius 3600\"", &f, 3600.0, 1);
    free_field(&f);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
