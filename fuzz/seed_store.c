/* seed_store.c — writes the seed stores of fuzz_store (fuzz/make-seeds.py calls it): a
 * SQLite store as tide makes it (schema, sky-cell metadata), with two frames of a few sources
 * each, and an empty one. Built with the harnesses (TIDE_FUZZ); not a harness itself.
 * usage: seed_store DIR */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tide/status.h"
#include "tide/store.h"
#include "tide/table.h"

static int put(tide_store *s, const char *checksum, const char *file, double ra0, int n) {
    tide_store_frame f;
    tide_store_frame_init(&f);
    snprintf(f.checksum, sizeof f.checksum, "%s", checksum);
    snprintf(f.file, sizeof f.file, "%s", file);
    snprintf(f.filter, sizeof f.filter, "r");
    f.mjd = 60000.5;
    f.exptime = 30.0;
    f.naxis1 = f.naxis2 = 64;
    f.ra_center = ra0;
    f.dec_center = 2.2;
    char card[81];
    snprintf(card, sizeof card, "%-80s", "FILTER  = 'r       '");
    f.header = card;
    tide_table t;
    tide_table_init(&t);
    int st = tide_table_add_column(&t, "ALPHA_J2000", TIDE_COL_F64, 1, "deg", NULL, NULL);
    if (!st)
        st = tide_table_add_column(&t, "DELTA_J2000", TIDE_COL_F64, 1, "deg", NULL, NULL);
    if (!st)
        st = tide_table_add_column(&t, "FLUX_AUTO", TIDE_COL_F32, 1, "count", NULL, NULL);
    if (!st)
        st = tide_table_add_column(&t, "FLAGS", TIDE_COL_I32, 1, NULL, NULL, NULL);
    if (!st)
        st = tide_table_resize(&t, n);
    if (!st) {
        double *ra = tide_table_f64(&t, "ALPHA_J2000"), *dec = tide_table_f64(&t, "DELTA_J2000");
        float *flux = tide_table_f32(&t, "FLUX_AUTO");
        for (int i = 0; i < n; i++) {
            ra[i] = ra0 + 0.01 * i;
            dec[i] = 2.2 + 0.005 * i;
            flux[i] = 100.0f * (float)(i + 1);
        }
        if (n > 2)
            ra[n - 1] = NAN; /* stored with CELL -1 */
        st = tide_store_put_frame(s, &f, &t, NULL);
    }
    tide_table_free(&t);
    return st;
}

static int make(const char *path, int frames) {
    char uri[1100];
    snprintf(uri, sizeof uri, "sqlite:%s", path);
    tide_store *s = NULL;
    int st = tide_store_open(uri, NULL, &s);
    if (!st && frames > 0)
        st = put(s, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "a.fits",
                 150.0, 5);
    if (!st && frames > 1)
        st = put(s, "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "b.fits",
                 150.02, 3);
    tide_store_close(s);
    if (st)
        fprintf(stderr, "seed_store: %s: %s\n", path, tide_error_detail());
    return st;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: seed_store DIR\n");
        return 2;
    }
    char p[1024];
    snprintf(p, sizeof p, "%s/two_frames.db", argv[1]);
    int st = make(p, 2);
    snprintf(p, sizeof p, "%s/empty.db", argv[1]);
    st = st ? st : make(p, 0);
    return st ? 1 : 0;
}
