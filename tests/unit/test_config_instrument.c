/* test_config_instrument.c — resolving a frame's instrument values from its header through a
 * configuration: header keywords, camera defaults, overrides, derived pixel scale, sexagesimal
 * pointing, quoted numbers, undefined values and unusable header values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

static void make_header(tide_header *h) {
    tide_header_init(h);
    tide_header_set_dbl(h, "EXPTIME", 30.0, "s");
    tide_header_set_dbl(h, "GAIN", 1.8, "e-/ADU");
    tide_header_set_dbl(h, "SATURATE", 50000.0, NULL);
    tide_header_set_dbl(h, "XPIXSZ", 7.52, "binned pixel, um");
    tide_header_set_dbl(h, "FOCALLEN", 530.0, "mm");
    tide_header_set_int(h, "XBINNING", 2, NULL);
    tide_header_set_int(h, "YBINNING", 2, NULL);
    tide_header_set_str(h, "FILTER", "r'", NULL);
    tide_header_set_str(h, "RA", "03:32:28.99", "hours");
    tide_header_set_str(h, "DEC", "-27:48:30.0", NULL);
    tide_header_set_str(h, "DATE-OBS", "2024-01-02T03:04:05.6", NULL);
    tide_header_set_dbl(h, "MJD-OBS", 60311.12784259, NULL);
    tide_header_set_dbl(h, "AIRMASS", 1.25, NULL);
    tide_header_set_str(h, "OBJECT", "CDFS", NULL);
}

static void test_header_and_defaults(void) {
    tide_config *c = NULL;
    CHECK_OK(tide_config_create(&c));
    tide_header h;
    make_header(&h);
    tide_instrument in;
    CHECK_OK(tide_instrument_resolve(c, &h, "f.fits", &in));
    CHECK(!strcmp(in.name, "generic"));
    CHECK(in.exptime == 30.0 && in.source[TIDE_INST_EXPTIME] == TIDE_INST_HEADER);
    CHECK(!strcmp(in.keyword[TIDE_INST_EXPTIME], "EXPTIME"));
    CHECK(in.gain == 1.8 && in.source[TIDE_INST_GAIN] == TIDE_INST_HEADER);
    /* RDNOISE absent: camera default 0 (built-in) */
    CHECK(in.rdnoise == 0.0 && in.source[TIDE_INST_RDNOISE] == TIDE_INST_CAMERA);
    CHECK(!strcmp(in.keyword[TIDE_INST_RDNOISE], "RDNOISE"));
    CHECK(in.saturate == 50000.0);
    /* XPIXSZ is the binned pixel: used as is */
    CHECK(in.pixsize_um == 7.52 && in.source[TIDE_INST_PIXSIZE] == TIDE_INST_HEADER);
    CHECK(in.focallen_mm == 530.0);
    CHECK_CLOSE(in.pixscale_arcsec, 206264.806247 * 7.52e-3 / 530.0, 1e-9);
    CHECK_CLOSE(in.pixscale_arcsec, 2.92662, 1e-5);
    CHECK(in.source[TIDE_INST_PIXSCALE] == TIDE_INST_DERIVED);
    CHECK(!strcmp(in.filter, "r'"));
    /* 03:32:28.99 h = 53.1207917 deg; -27:48:30 = -27.8083333 deg */
    CHECK_CLOSE(in.ra_deg, 15.0 * (3.0 + 32.0 / 60.0 + 28.99 / 3600.0), 1e-12);
    CHECK_CLOSE(in.ra_deg, 53.12079167, 1e-7);
    CHECK_CLOSE(in.dec_deg, -27.80833333, 1e-7);
    CHECK(in.source[TIDE_INST_RA] == TIDE_INST_HEADER);
    CHECK(in.ncombine == 1 && in.source[TIDE_INST_NCOMBINE] == TIDE_INST_CAMERA);
    CHECK(in.xbinning == 2 && in.ybinning == 2);
    CHECK(!strcmp(in.dateobs, "2024-01-02T03:04:05.6"));
    CHECK_CLOSE(in.mjdobs, 60311.12784259, 1e-8);
    CHECK(in.airmass == 1.25 && !strcmp(in.object, "CDFS"));

    /* no header: camera values only, the rest missing (NaN, ""); the gain has no default */
    CHECK_OK(tide_instrument_resolve(c, NULL, "none", &in));
    CHECK(isnan(in.gain) && in.source[TIDE_INST_GAIN] == TIDE_INST_MISSING); /* unknown */
    CHECK(isnan(in.exptime) && in.source[TIDE_INST_EXPTIME] == TIDE_INST_MISSING);
    CHECK(isnan(in.saturate) && isnan(in.pixscale_arcsec) && isnan(in.ra_deg));
    CHECK(in.source[TIDE_INST_PIXSCALE] == TIDE_INST_MISSING);
    CHECK(in.filter[0] == '\0' && in.source[TIDE_INST_FILTER] == TIDE_INST_MISSING);
    CHECK(in.xbinning == 1);
    tide_header_free(&h);
    tide_config_free(c);
}

static void test_instrument_file_and_override(void) {
    tide_config *c = NULL;
    CHECK_OK(tide_config_create(&c));
    const char *js =
        "{\"instrument\": {\"name\": \"cmos\"},\n"
        " \"keywords\": {\"pixsize\": null, \"gain\": \"EGAIN\", \"ra\": \"OBJCTRA\"},\n"
        " \"camera\": {\"pixsize_um\": 3.76, \"gain\": 0.8, \"rdnoise\": 1.5,\n"
        "            \"filter\": \"L\"}}";
    CHECK_OK(tide_config_merge_string(c, js, strlen(js), "cmos.json", TIDE_CONFIG_INSTRUMENT));
    tide_header h;
    make_header(&h);
    tide_header_set_str(&h, "OBJCTRA", "12 30 00", NULL);
    tide_header_remove(&h, "FILTER");
    tide_instrument in;
    CHECK_OK(tide_instrument_resolve(c, &h, "f.fits", &in));
    CHECK(!strcmp(in.name, "cmos"));
    /* EGAIN absent: the instrument's camera gain, not the header's GAIN */
    CHECK(in.gain == 0.8 && in.source[TIDE_INST_GAIN] == TIDE_INST_CAMERA);
    CHECK(!strcmp(in.keyword[TIDE_INST_GAIN], "EGAIN"));
    /* pixsize keyword disabled: camera (unbinned) times XBINNING 2 */
    CHECK_CLOSE(in.pixsize_um, 7.52, 1e-12);
    CHECK(in.source[TIDE_INST_PIXSIZE] == TIDE_INST_CAMERA);
    CHECK(in.keyword[TIDE_INST_PIXSIZE][0] == '\0');
    CHECK_CLOSE(in.pixscale_arcsec, 2.92662, 1e-5);
    CHECK(in.rdnoise == 1.5);
    CHECK(!strcmp(in.filter, "L") && in.source[TIDE_INST_FILTER] == TIDE_INST_CAMERA);
    CHECK_CLOSE(in.ra_deg, 187.5, 1e-12);

    /* an override of the camera value wins over the header */
    CHECK_OK(tide_config_set(c, "keywords.gain=GAIN"));
    CHECK_OK(tide_instrument_resolve(c, &h, "f.fits", &in));
    CHECK(in.gain == 1.8 && in.source[TIDE_INST_GAIN] == TIDE_INST_HEADER);
    CHECK_OK(tide_config_set(c, "camera.gain=2.5"));
    CHECK_OK(tide_instrument_resolve(c, &h, "f.fits", &in));
    CHECK(in.gain == 2.5 && in.source[TIDE_INST_GAIN] == TIDE_INST_OVERRIDE);
    /* but an override that clears the camera value lets the header speak */
    CHECK_OK(tide_config_set(c, "camera.gain=null"));
    CHECK_OK(tide_instrument_resolve(c, &h, "f.fits", &in));
    CHECK(in.gain == 1.8 && in.source[TIDE_INST_GAIN] == TIDE_INST_HEADER);

    /* JSON output */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_OK(tide_instrument_write_json(&in, f, 0));
    fclose(f);
    CHECK(strstr(buf, "\"gain\": {\"value\": 1.8, \"source\": \"header\", \"keyword\": \"GAIN\"}"));
    CHECK(strstr(buf, "\"pixsize\": {\"value\": 7.52, \"source\": \"camera\", \"keyword\": null}"));
    CHECK(strstr(buf, "\"pixscale\": {\"value\": "));
    CHECK(strstr(buf, "\"xbinning\": {\"value\": 2, \"source\": \"header\""));
    free(buf);
    tide_header_free(&h);
    tide_config_free(c);
}

static void test_header_formats(void) {
    tide_config *c = NULL;
    CHECK_OK(tide_config_create(&c));
    tide_header h;
    tide_instrument in;
    make_header(&h);
    /* numbers written as strings, Fortran D exponents, numeric RA in degrees */
    tide_header_set_str(&h, "GAIN", "1.5", NULL);
    tide_header_remove(&h, "SATURATE");
    tide_header_append_card(&h, "SATURATE=              6.5D4 / Fortran exponent");
    tide_header_set_dbl(&h, "RA", 150.25, NULL);
    tide_header_set_str(&h, "DEC", "+02 12 00", NULL);
    CHECK_OK(tide_instrument_resolve(c, &h, "f.fits", &in));
    CHECK(in.gain == 1.5 && in.saturate == 65000.0);
    CHECK(in.ra_deg == 150.25);
    CHECK_CLOSE(in.dec_deg, 2.2, 1e-12);
    /* an undefined value (FITS: unknown) falls back to the camera default (none: missing) */
    tide_header_remove(&h, "GAIN");
    tide_header_append_card(&h, "GAIN    =                      / unknown");
    CHECK_OK(tide_instrument_resolve(c, &h, "f.fits", &in));
    CHECK(isnan(in.gain) && in.source[TIDE_INST_GAIN] == TIDE_INST_MISSING);
    tide_header_free(&h);

    struct {
        const char *key, *card;
        int status;
        const char *want;
    } bad[] = {
        {"GAIN", "GAIN    = 'abc'", TIDE_E_FORMAT,
         "f.fits: header keyword GAIN = 'abc' is not a number (keywords.gain: set it to null"},
        {"GAIN", "GAIN    = 0.0", TIDE_E_RANGE,
         "f.fits: header keyword GAIN = '0.0' is out of range for gain (must be > 0;"},
        {"RDNOISE", "RDNOISE = -3", TIDE_E_RANGE, "RDNOISE = '-3' is out of range"},
        {"XBINNING", "XBINNING= 1.5", TIDE_E_FORMAT, "XBINNING = '1.5' is not an integer"},
        {"XBINNING", "XBINNING= 0", TIDE_E_RANGE, "XBINNING = '0' is out of range"},
        {"DEC", "DEC     = 95.0", TIDE_E_RANGE, "DEC = '95.0' is out of range for dec"},
        {"RA", "RA      = '12:75:00'", TIDE_E_FORMAT,
         "RA = '12:75:00' is not a number or a sexagesimal angle"},
        {"AIRMASS", "AIRMASS = 0.5", TIDE_E_RANGE, "AIRMASS = '0.5' is out of range"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        make_header(&h);
        tide_header_remove(&h, bad[k].key);
        tide_header_append_card(&h, bad[k].card);
        tide_error_clear();
        int st = tide_instrument_resolve(c, &h, "f.fits", &in);
        if (st != bad[k].status || !strstr(tide_error_detail(), bad[k].want)) {
            fprintf(stderr, "card '%s': status %d, detail '%s', wanted %d '%s'\n", bad[k].card, st,
                    tide_error_detail(), bad[k].status, bad[k].want);
            tide_test_failures++;
        }
        tide_header_free(&h);
    }
    /* the remedy the message suggests works */
    make_header(&h);
    tide_header_set_str(&h, "GAIN", "abc", NULL);
    CHECK_OK(tide_config_set(c, "keywords.gain=null"));
    CHECK_OK(tide_instrument_resolve(c, &h, "f.fits", &in));
    CHECK(isnan(in.gain) && in.source[TIDE_INST_GAIN] == TIDE_INST_MISSING);
    tide_header_free(&h);
    tide_config_free(c);
}

static void test_sexagesimal(void) {
    double v = 0;
    CHECK_OK(tide_parse_sexagesimal("12 30 00", &v));
    CHECK(v == 12.5);
    CHECK_OK(tide_parse_sexagesimal("-00:30:00", &v));
    CHECK(v == -0.5);
    CHECK_OK(tide_parse_sexagesimal(" +10:15 ", &v));
    CHECK(v == 10.25);
    CHECK_OK(tide_parse_sexagesimal("-27:48:30.0", &v));
    CHECK_CLOSE(v, -27.80833333333, 1e-10);
    CHECK_OK(tide_parse_sexagesimal("7.5", &v));
    CHECK(v == 7.5);
    CHECK(tide_parse_sexagesimal("1:60:00", &v) == TIDE_E_FORMAT);
    CHECK(tide_parse_sexagesimal("1.5:30", &v) == TIDE_E_FORMAT);
    CHECK(tide_parse_sexagesimal("abc", &v) == TIDE_E_FORMAT);
    CHECK(tide_parse_sexagesimal("", &v) == TIDE_E_FORMAT);
    CHECK(tide_parse_sexagesimal("1:2:3:4", &v) == TIDE_E_FORMAT);
    CHECK(strcmp(tide_instrument_quantity_name(TIDE_INST_GAIN), "gain") == 0);
    CHECK(strcmp(tide_instrument_source_name(TIDE_INST_OVERRIDE), "override") == 0);
}

/* Without SATURATE, an 8- or 16-bit integer image's ceiling is its saturation (instrument.h). */
static void test_integer_ceiling(void) {
    tide_config *c = NULL;
    CHECK_OK(tide_config_create(&c));
    tide_header h;
    make_header(&h);
    tide_header_remove(&h, "SATURATE");
    tide_instrument in;
    static const struct {
        int bitpix;
        double bscale, bzero, want; /* bscale 0: no BSCALE card; want NaN: none derived */
    } cases[] = {
        {16, 0, 32768, 65535}, {16, 1, 0, 32767}, {8, 0, 0, 255},   {8, 1, -128, 127},
        {16, 2, 32768, NAN},   {32, 1, 0, NAN},   {-32, 0, 0, NAN}, {-64, 1, 0, NAN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_header_set_int(&h, "BITPIX", cases[i].bitpix, NULL);
        tide_header_remove(&h, "BSCALE");
        if (cases[i].bscale)
            tide_header_set_dbl(&h, "BSCALE", cases[i].bscale, NULL);
        tide_header_set_dbl(&h, "BZERO", cases[i].bzero, NULL);
        CHECK_OK(tide_instrument_resolve(c, &h, "int.fits", &in));
        if (isnan(cases[i].want)) {
            CHECK(isnan(in.saturate) && in.source[TIDE_INST_SATURATE] == TIDE_INST_MISSING);
        } else {
            CHECK(in.saturate == cases[i].want);
            CHECK(in.source[TIDE_INST_SATURATE] == TIDE_INST_DERIVED);
        }
    }
    /* the frame's own SATURATE wins over the type's ceiling */
    tide_header_set_int(&h, "BITPIX", 16, NULL);
    tide_header_set_dbl(&h, "SATURATE", 60000.0, NULL);
    CHECK_OK(tide_instrument_resolve(c, &h, "int.fits", &in));
    CHECK(in.saturate == 60000.0 && in.source[TIDE_INST_SATURATE] == TIDE_INST_HEADER);
    tide_header_free(&h);
    tide_config_free(c);
}

int main(void) {
    test_header_and_defaults();
    test_integer_ceiling();
    test_instrument_file_and_override();
    test_header_formats();
    test_sexagesimal();
    return TIDE_TEST_RESULT();
}
