/* test_obsinfo.c — observing conditions against astropy 5.2 (Debian python3-astropy).
 *
 * The reference values were computed once with astropy, bundled IERS tables, no download:
 *     t = Time(DATE, scale='utc') + EXPTIME/2 * u.s
 *     loc = EarthLocation.from_geodetic(LON*u.deg, LAT*u.deg, H*u.m)
 *     p = 1013.25 * exp(-H / (29.3 * (10 + 273.15)))            # tide's default pressure
 *     fr = AltAz(obstime=t, location=loc, pressure=p*u.hPa, temperature=10*u.deg_C,
 *                relative_humidity=0.5, obswl=0.55*u.micron)
 *     field = SkyCoord(RA*u.deg, DEC*u.deg).transform_to(fr)
 *     with solar_system_ephemeris.set('builtin'):
 *         sun = get_body('sun', t, loc).transform_to(fr)
 *         moon = get_body('moon', t, loc).transform_to(fr)
 *     illumination: elong = sun_gcrs.separation(moon_gcrs) (geocentric get_body);
 *         i = arctan2(d_sun sin(elong), d_moon - d_sun cos(elong)); k = (1 + cos i) / 2
 *     MOONDIST = separation of moon and field in AltAz(obstime=t, location=loc) (no
 *         refraction: tide gives the geometric topocentric distance)
 * astropy used the real ΔUT1 from its IERS table, tide ΔUT1 = 0: differences up to ~14″
 * are expected (measured ≤ 0.0001° here; the tolerances are 0.01° for alt/az and the Moon,
 * 0.002 in k).
 * tests/peer/test_obsinfo.py repeats the comparison live on random cases. */
#include <math.h>
#include <string.h>

#include "tide/obsinfo.h"
#include "tide/status.h"
#include "tide_test.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct {
    const char *date;
    double exptime, lon, lat, h, ra, dec;
    double mjd, alt, az, sunalt, moonalt, moonaz, illum, moondist;
} ref_case;

static const ref_case cases[] = {
    {"2024-03-15T03:12:45.000", 60.0, -70.7345, -29.2584, 2400.0, 150.0, 2.2, 60384.134201389,
     58.662958, 359.071637, -50.825405, -15.314931, 289.366342, 0.289752, 93.064616},
    {"2025-01-10T20:00:00.000", 300.0, 2.5, 48.8, 100.0, 45.0, 30.0, 60685.835069444, 70.259102,
     201.798874, -36.500647, 64.691632, 146.466707, 0.883831, 21.094901},
    {"2023-08-01T23:30:00.500", 120.0, -17.8792, 28.7606, 2396.0, 300.0, -10.0, 60157.979866898,
     48.644789, 157.089511, -36.607617, 30.370348, 145.762610, 0.997538, 20.214923},
};

/* azimuth difference folded into -180..180 */
static double daz(double a, double b) {
    double d = fmod(a - b + 540.0, 360.0) - 180.0;
    return fabs(d);
}

static void test_cases(void) {
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const ref_case *c = &cases[k];
        tide_obsinfo_in in;
        tide_obsinfo_in_default(&in);
        snprintf(in.date_obs, sizeof in.date_obs, "%s", c->date);
        in.exptime = c->exptime;
        in.lon_deg = c->lon, in.lat_deg = c->lat, in.height_m = c->h;
        in.ra_deg = c->ra, in.dec_deg = c->dec;
        tide_obsinfo o;
        CHECK_OK(tide_obsinfo_compute(&in, &o));
        printf("%s: alt %+.5f az %+.5f sun %+.5f moon alt %+.5f az %+.5f k %+.5f dist %+.5f "
               "(tide - astropy, deg)\n",
               c->date, o.alt_deg - c->alt, o.az_deg - c->az, o.sun_alt_deg - c->sunalt,
               o.moon_alt_deg - c->moonalt, o.moon_az_deg - c->moonaz, o.moon_illum - c->illum,
               o.moon_dist_deg - c->moondist);
        CHECK_CLOSE(o.mjd_mid, c->mjd, 1e-8); /* ~1 ms */
        CHECK_CLOSE(o.alt_deg, c->alt, 0.01);
        CHECK(daz(o.az_deg, c->az) * cos(c->alt * M_PI / 180) <= 0.01);
        CHECK_CLOSE(o.sun_alt_deg, c->sunalt, 0.01);
        CHECK_CLOSE(o.moon_alt_deg, c->moonalt, 0.01);
        CHECK(daz(o.moon_az_deg, c->moonaz) * cos(c->moonalt * M_PI / 180) <= 0.01);
        CHECK_CLOSE(o.moon_illum, c->illum, 0.002);
        CHECK_CLOSE(o.moon_dist_deg, c->moondist, 0.01);
        /* Pickering airmass of the apparent altitude: ~sec z away from the horizon */
        const double secz = 1.0 / sin(o.alt_deg * M_PI / 180);
        CHECK(o.airmass > 1.0 && fabs(o.airmass - secz) < 0.01 * secz);
    }
}

static void test_airmass_and_header(void) {
    tide_obsinfo_in in;
    tide_obsinfo_in_default(&in);
    snprintf(in.date_obs, sizeof in.date_obs, "2024-03-15T03:12:45");
    in.lon_deg = -70.7345, in.lat_deg = -29.2584, in.height_m = 2400;
    /* the field at the zenith: dec = latitude, ra = local sidereal time (found by search) */
    in.dec_deg = in.lat_deg;
    tide_obsinfo o;
    double best = -1, best_ra = 0;
    for (double ra = 0; ra < 360; ra += 0.5) {
        in.ra_deg = ra;
        CHECK_OK(tide_obsinfo_compute(&in, &o));
        if (o.alt_deg > best)
            best = o.alt_deg, best_ra = ra;
    }
    in.ra_deg = best_ra;
    CHECK_OK(tide_obsinfo_compute(&in, &o));
    CHECK(o.alt_deg > 89.5);
    CHECK_CLOSE(o.airmass, 1.0, 1e-3);
    /* Pickering at the horizon is ~38; below it NaN */
    in.ra_deg = fmod(best_ra + 180.0, 360.0);
    in.dec_deg = 0;
    CHECK_OK(tide_obsinfo_compute(&in, &o));
    CHECK(o.alt_deg < 0 && isnan(o.airmass));

    /* header: TAIRMASS always, AIRMASS kept when present, NaN cards not written */
    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_header_set_dbl(&h, "AIRMASS", 1.234, NULL));
    CHECK_OK(tide_obsinfo_to_header(&o, &h));
    double v;
    CHECK_OK(tide_header_get_dbl(&h, "AIRMASS", &v));
    CHECK_CLOSE(v, 1.234, 1e-12);
    CHECK(tide_header_find(&h, "TAIRMASS") < 0); /* below the horizon: NaN, not written */
    CHECK_OK(tide_header_get_dbl(&h, "MOONPHAS", &v));
    CHECK_CLOSE(v, o.moon_illum, 1e-12);
    CHECK_OK(tide_header_get_dbl(&h, "MJD-MID", &v));
    CHECK_CLOSE(v, o.mjd_mid, 1e-9);
    tide_header_free(&h);
    in.ra_deg = best_ra, in.dec_deg = in.lat_deg;
    CHECK_OK(tide_obsinfo_compute(&in, &o));
    tide_header_init(&h);
    CHECK_OK(tide_obsinfo_to_header(&o, &h));
    CHECK_OK(tide_header_get_dbl(&h, "AIRMASS", &v));
    CHECK_CLOSE(v, o.airmass, 1e-12);
    CHECK_OK(tide_header_get_dbl(&h, "TAIRMASS", &v));
    tide_header_free(&h);
}

static void test_header_input_and_errors(void) {
    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_header_set_str(&h, "DATE-OBS", "2025-01-10", NULL));
    CHECK_OK(tide_header_set_str(&h, "TIME-OBS", "20:00:00.000", NULL));
    CHECK_OK(tide_header_set_dbl(&h, "EXPTIME", 300.0, NULL));
    CHECK_OK(tide_header_set_str(&h, "SITELONG", "02:30:00", NULL));
    CHECK_OK(tide_header_set_dbl(&h, "SITELAT", 48.8, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "SITEELEV", 100.0, NULL));
    CHECK_OK(tide_header_set_str(&h, "CTYPE1", "RA---TAN", NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CRVAL1", 45.0, NULL));
    CHECK_OK(tide_header_set_dbl(&h, "CRVAL2", 30.0, NULL));
    tide_obsinfo_in in;
    tide_obsinfo_in_default(&in);
    CHECK_OK(tide_obsinfo_in_from_header(&h, &in));
    CHECK(!strcmp(in.date_obs, "2025-01-10T20:00:00.000"));
    CHECK_CLOSE(in.lon_deg, 2.5, 1e-12);
    tide_obsinfo o;
    CHECK_OK(tide_obsinfo_compute(&in, &o));
    CHECK_CLOSE(o.alt_deg, cases[1].alt, 0.01);
    tide_header_free(&h);

    tide_header_init(&h);
    CHECK(tide_obsinfo_in_from_header(&h, &in) == TIDE_E_NOTFOUND);
    tide_header_free(&h);
    tide_obsinfo_in_default(&in);
    snprintf(in.date_obs, sizeof in.date_obs, "2024-13-45T00:00:00");
    in.lon_deg = 0, in.lat_deg = 0, in.ra_deg = 0, in.dec_deg = 0;
    CHECK(tide_obsinfo_compute(&in, &o) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "DATE-OBS") != NULL);
    snprintf(in.date_obs, sizeof in.date_obs, "2024-03-15T00:00:00");
    in.lat_deg = NAN;
    CHECK(tide_obsinfo_compute(&in, &o) == TIDE_E_INVAL);
    in.lat_deg = 0, in.dec_deg = 91;
    CHECK(tide_obsinfo_compute(&in, &o) == TIDE_E_INVAL);
    /* a leap second inside the exposure: 2016-12-31T23:59:60 exists; mid of 2 s from :59 */
    tide_obsinfo_in_default(&in);
    in.lon_deg = 0, in.lat_deg = 0, in.ra_deg = 0, in.dec_deg = 0;
    snprintf(in.date_obs, sizeof in.date_obs, "2016-12-31T23:59:59.000");
    in.exptime = 4.0; /* 23:59:59 + 2 s on TAI = 2017-01-01T00:00:00 UTC (one leap second) */
    CHECK_OK(tide_obsinfo_compute(&in, &o));
    CHECK_CLOSE(o.mjd_mid, 57754.0, 1e-9);
}

int main(void) {
    test_cases();
    test_airmass_and_header();
    test_header_input_and_errors();
    return TIDE_TEST_RESULT();
}
