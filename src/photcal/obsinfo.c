/* obsinfo.c — airmass, altitude/azimuth, Sun and Moon at mid-exposure through ERFA. */
#include <ctype.h>
#include <erfa.h>
#include <erfam.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/instrument.h"
#include "tide/obsinfo.h"
#include "tide/instrument.h"
#include "tide/status.h"

void tide_obsinfo_in_default(tide_obsinfo_in *in) {
    memset(in, 0, sizeof *in);
    in->lon_deg = in->lat_deg = in->ra_deg = in->dec_deg = NAN;
    in->height_m = 0.0;
    in->pressure_hpa = NAN;
    in->temperature_c = 10.0;
    in->humidity = 0.5;
    in->wavelength_um = 0.55;
    in->dut1 = 0.0;
}

/* A header value as degrees: a number, or sexagesimal text (degrees, or hours when @p hours). */
static int header_angle(const tide_header *h, const char *key, int hours, double *out) {
    if (tide_header_find(h, key) < 0)
        return -1;
    double v;
    if (!tide_header_get_dbl(h, key, &v)) {
        *out = v;
        return 0;
    }
    char s[72];
    if (!tide_header_get_str(h, key, s, sizeof s) && !tide_parse_angle(s, hours, &v)) {
        *out = v;
        return 0;
    }
    tide_error_clear();
    return -1;
}

int tide_obsinfo_in_from_header(const tide_header *h, tide_obsinfo_in *in) {
    char date[72];
    if (tide_header_get_str(h, "DATE-OBS", date, sizeof date))
        return tide_error(TIDE_E_NOTFOUND, "observing conditions: the frame has no DATE-OBS");
    if (!strchr(date, 'T') && strlen(date) <= 10) {
        char t[72];
        if (!tide_header_get_str(h, "TIME-OBS", t, sizeof t) ||
            !tide_header_get_str(h, "UT", t, sizeof t)) {
            char full[160];
            snprintf(full, sizeof full, "%sT%s", date, t);
            snprintf(date, sizeof date, "%s", full);
        }
    }
    tide_error_clear();
    snprintf(in->date_obs, sizeof in->date_obs, "%s", date);
    double v;
    if (!tide_header_get_dbl(h, "EXPTIME", &v) || !tide_header_get_dbl(h, "EXPOSURE", &v))
        in->exptime = v;
    if (!header_angle(h, "SITELONG", 0, &v) || !header_angle(h, "LONG-OBS", 0, &v))
        in->lon_deg = v;
    if (!header_angle(h, "SITELAT", 0, &v) || !header_angle(h, "LAT-OBS", 0, &v))
        in->lat_deg = v;
    if (!tide_header_get_dbl(h, "SITEELEV", &v) || !tide_header_get_dbl(h, "ALT-OBS", &v))
        in->height_m = v;
    char ctype[72];
    if (!tide_header_get_str(h, "CTYPE1", ctype, sizeof ctype) && !strncmp(ctype, "RA--", 4)) {
        double ra, dec;
        if (!tide_header_get_dbl(h, "CRVAL1", &ra) && !tide_header_get_dbl(h, "CRVAL2", &dec)) {
            in->ra_deg = ra;
            in->dec_deg = dec;
        }
    }
    tide_error_clear();
    return 0;
}

/* "YYYY-MM-DD[Thh:mm:ss[.fff]]" to a UTC two-part JD. */
static int parse_date(const char *s, double *u1, double *u2) {
    int y, mo, d, hh = 0, mi = 0, n = 0;
    double sec = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3)
        return -1;
    const char *p = s + n;
    if (*p == 'T' || *p == ' ') {
        int m = 0;
        if (sscanf(p + 1, "%2d:%2d:%lf%n", &hh, &mi, &sec, &m) != 3)
            return -1;
        p += 1 + m;
    }
    while (isspace((unsigned char)*p))
        p++;
    if (*p == 'Z')
        p++;
    if (*p)
        return -1;
    return eraDtf2d("UTC", y, mo, d, hh, mi, sec, u1, u2) < 0 ? -1 : 0;
}

/* Observed azimuth, altitude (and hour angle) of a natural direction (BCRS-aligned unit
 * vector from the observer); @p ri, @p di receive its CIRS coordinates. */
static void observe(double p[3], eraASTROM *a, double *az, double *alt, double *ha, double *ri,
                    double *di) {
    double ppr[3], pci[3];
    eraAb(p, a->v, a->em, a->bm1, ppr); /* aberration (annual + diurnal: v includes the site) */
    eraRxp(a->bpn, ppr, pci);           /* GCRS -> CIRS */
    eraC2s(pci, ri, di);
    *ri = eraAnp(*ri);
    double aob, zob, hob, dob, rob;
    eraAtioq(*ri, *di, a, &aob, &zob, &hob, &dob, &rob);
    *az = aob * ERFA_DR2D;
    *alt = 90.0 - zob * ERFA_DR2D;
    if (ha)
        *ha = eraAnpm(hob) * ERFA_DR2D;
}

/* Pickering (2002): airmass from the apparent altitude in degrees. */
static double pickering(double h) {
    if (!(h >= 0))
        return NAN;
    return 1.0 / sin((h + 244.0 / (165.0 + 47.0 * pow(h, 1.1))) * ERFA_DD2R);
}

int tide_obsinfo_compute(const tide_obsinfo_in *in, tide_obsinfo *out) {
    memset(out, 0, sizeof *out);
    if (!(fabs(in->lat_deg) <= 90.0) || !isfinite(in->lon_deg) || !isfinite(in->height_m))
        return tide_error(TIDE_E_INVAL,
                          "observing conditions: no valid site (longitude %g, "
                          "latitude %g, height %g)",
                          in->lon_deg, in->lat_deg, in->height_m);
    if (!(fabs(in->dec_deg) <= 90.0) || !isfinite(in->ra_deg))
        return tide_error(TIDE_E_INVAL, "observing conditions: no valid field centre (%g, %g)",
                          in->ra_deg, in->dec_deg);
    if (!(in->exptime >= 0) || !isfinite(in->exptime))
        return tide_error(TIDE_E_INVAL, "observing conditions: exposure time %g", in->exptime);
    double u1, u2, t1, t2, m1, m2;
    if (parse_date(in->date_obs, &u1, &u2))
        return tide_error(TIDE_E_INVAL,
                          "observing conditions: DATE-OBS '%s' is not an ISO "
                          "8601 date",
                          in->date_obs);
    /* mid-exposure on TAI (no leap-second ambiguity), back to UTC */
    if (eraUtctai(u1, u2, &t1, &t2) < 0)
        return tide_error(TIDE_E_RANGE, "observing conditions: ERFA refused %s", in->date_obs);
    t2 += 0.5 * in->exptime / ERFA_DAYSEC;
    if (eraTaiutc(t1, t2, &m1, &m2) < 0)
        return tide_error(TIDE_E_RANGE, "observing conditions: ERFA refused %s", in->date_obs);
    out->mjd_mid = (m1 - ERFA_DJM0) + m2;
    double tt1, tt2;
    eraTaitt(t1, t2, &tt1, &tt2);

    double phpa = in->pressure_hpa;
    if (isnan(phpa)) /* ERFA eraRefco notes: pressure from height, T_sl ~ T + 273.15 */
        phpa = 1013.25 * exp(-in->height_m / (29.3 * (in->temperature_c + 273.15)));
    eraASTROM a;
    double eo;
    if (eraApco13(m1, m2, in->dut1, in->lon_deg * ERFA_DD2R, in->lat_deg * ERFA_DD2R, in->height_m,
                  0.0, 0.0, phpa, in->temperature_c, in->humidity, in->wavelength_um, &a, &eo) < 0)
        return tide_error(TIDE_E_RANGE, "observing conditions: ERFA refused %s", in->date_obs);

    /* field */
    double ri, di, fri, fdi;
    eraAtciq(in->ra_deg * ERFA_DD2R, in->dec_deg * ERFA_DD2R, 0, 0, 0, 0, &a, &fri, &fdi);
    double aob, zob, hob, dob, rob;
    eraAtioq(fri, fdi, &a, &aob, &zob, &hob, &dob, &rob);
    out->az_deg = aob * ERFA_DR2D;
    out->alt_deg = 90.0 - zob * ERFA_DR2D;
    out->ha_deg = eraAnpm(hob) * ERFA_DR2D;
    out->airmass = pickering(out->alt_deg);

    /* Sun: from the observer towards the Sun is -eh */
    double ps[3] = {-a.eh[0], -a.eh[1], -a.eh[2]};
    observe(ps, &a, &out->sun_az_deg, &out->sun_alt_deg, NULL, &ri, &di);

    /* Moon: eraMoon98's geocentric position plus the Earth's barycentric position, both at
     * the emission time t - tau (light time, ~1.3 s, iterated), minus the observer's
     * barycentric position at t. Without the light time the Earth's motion during it (~40 km,
     * ~20") would not cancel the annual aberration applied below, as it does for a body that
     * travels with the Earth. */
    double pvh[2][3], pvb[2][3], pvm[2][3];
    eraEpv00(tt1, tt2, pvh, pvb);
    double pm[3], pn[3], r, tau = 0;
    for (int it = 0; it < 3; it++) {
        double eh[2][3], eb[2][3];
        eraEpv00(tt1, tt2 - tau, eh, eb);
        eraMoon98(tt1, tt2 - tau, pvm);
        for (int k = 0; k < 3; k++)
            pm[k] = pvm[0][k] + eb[0][k] - a.eb[k];
        tau = eraPm(pm) * ERFA_AULT / ERFA_DAYSEC;
    }
    eraMoon98(tt1, tt2, pvm); /* the geometric position at t for the phase below */
    eraPn(pm, &r, pn);
    double mri, mdi;
    observe(pn, &a, &out->moon_az_deg, &out->moon_alt_deg, NULL, &mri, &mdi);
    out->moon_dist_deg = eraSeps(mri, mdi, fri, fdi) * ERFA_DR2D;

    /* phase angle at the Moon between the Sun and the Earth (geocentric vectors) */
    double to_sun[3], to_earth[3];
    for (int k = 0; k < 3; k++) {
        to_sun[k] = -pvh[0][k] - pvm[0][k];
        to_earth[k] = -pvm[0][k];
    }
    const double i = eraSepp(to_sun, to_earth);
    out->moon_illum = 0.5 * (1.0 + cos(i));
    return 0;
}

int tide_obsinfo_to_header(const tide_obsinfo *o, tide_header *h) {
    int st = 0;
    struct {
        const char *key;
        double v;
        const char *comment;
    } cards[] = {
        {"MJD-MID", o->mjd_mid, "MJD (UTC) of mid-exposure"},
        {"ALT_OBJ", o->alt_deg, "[deg] apparent altitude of the field centre"},
        {"AZ_OBJ", o->az_deg, "[deg] azimuth of the field centre (N=0, E=90)"},
        {"HA_OBJ", o->ha_deg, "[deg] hour angle of the field centre"},
        {"TAIRMASS", o->airmass, "airmass at mid-exposure (tide, Pickering 2002)"},
        {"SUNALT", o->sun_alt_deg, "[deg] altitude of the Sun"},
        {"MOONALT", o->moon_alt_deg, "[deg] altitude of the Moon"},
        {"MOONPHAS", o->moon_illum, "illuminated fraction of the Moon"},
        {"MOONDIST", o->moon_dist_deg, "[deg] Moon - field centre distance"},
    };
    for (size_t k = 0; k < sizeof cards / sizeof *cards; k++) {
        if (isfinite(cards[k].v))
            st |= tide_header_set_dbl(h, cards[k].key, cards[k].v, cards[k].comment);
        else
            tide_header_remove(h, cards[k].key);
    }
    if (tide_header_find(h, "AIRMASS") < 0 && isfinite(o->airmass))
        st |= tide_header_set_dbl(h, "AIRMASS", o->airmass, "airmass at mid-exposure (tide)");
    return st ? tide_error(TIDE_E_NOMEM, "observing conditions: cannot write the header") : 0;
}
