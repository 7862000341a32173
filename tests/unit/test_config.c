/* test_config.c — configuration: built-ins, layering and origins, every type error, unknown
 * keys and malformed JSON with their line and column, overrides, JSON output round trip, and
 * the shipped config/ JSON files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/tide.h"
#include "tide_test.h"

static int merge(tide_config *c, const char *text, tide_config_layer layer) {
    return tide_config_merge_string(c, text, strlen(text), "t.json", layer);
}

/* Merging @p text must fail with TIDE_E_CONFIG and a detail that contains @p want. */
static void expect_error(const char *text, const char *want, int line) {
    tide_config *c = NULL;
    CHECK_OK(tide_config_create(&c));
    tide_error_clear();
    int st = merge(c, text, TIDE_CONFIG_INSTRUMENT);
    if (st != TIDE_E_CONFIG || !strstr(tide_error_detail(), want)) {
        fprintf(stderr, "test_config.c:%d: status %d, detail '%s', wanted '%s'\n", line, st,
                tide_error_detail(), want);
        tide_test_failures++;
    }
    /* a failed merge changes nothing: the gain stays unset (unknown), the read noise built-in */
    CHECK(!tide_config_is_set(c, "camera.gain"));
    double g = -1;
    CHECK_OK(tide_config_get_dbl(c, "camera.rdnoise", &g));
    CHECK(g == 0.0);
    tide_config_origin o;
    CHECK_OK(tide_config_origin_of(c, "camera.rdnoise", &o));
    CHECK(o.layer == TIDE_CONFIG_BUILTIN);
    tide_config_free(c);
}
#define EXPECT_ERROR(text, want) expect_error(text, want, __LINE__)

static void test_builtins(void) {
    tide_config *c = NULL;
    CHECK_OK(tide_config_create(&c));
    double d;
    int64_t i;
    int b, n;
    const char *s;
    const double *arr;
    CHECK_OK(tide_config_get_dbl(c, "processing.detect_thresh", &d));
    CHECK(d == 5.0);
    CHECK_OK(tide_config_get_int(c, "processing.back_size", &i));
    CHECK(i == 64);
    CHECK_OK(tide_config_get_dbl(c, "processing.back_size", &d)); /* integers read as doubles */
    CHECK(d == 64.0);
    CHECK_OK(tide_config_get_int(c, "processing.back_filtersize", &i));
    CHECK(i == 3);
    CHECK_OK(tide_config_get_array(c, "processing.aper_radii", &arr, &n));
    CHECK(n == 3 && arr[0] == 3.0 && arr[1] == 5.0 && arr[2] == 8.0);
    CHECK_OK(tide_config_get_int(c, "processing.psf_neigen", &i));
    CHECK(i == 5);
    CHECK_OK(tide_config_get_dbl(c, "processing.fwhm_guess", &d));
    CHECK(d == 3.0);
    CHECK_OK(tide_config_get_bool(c, "processing.clean_cosmics", &b));
    CHECK(b == 1);
    CHECK_OK(tide_config_get_str(c, "keywords.exptime", &s));
    CHECK(!strcmp(s, "EXPTIME"));
    CHECK_OK(tide_config_get_str(c, "keywords.dateobs", &s));
    CHECK(!strcmp(s, "DATE-OBS"));
    CHECK_OK(tide_config_get_str(c, "instrument.name", &s));
    CHECK(!strcmp(s, "generic"));
    /* unset, unknown key, wrong getter */
    CHECK(tide_config_get_dbl(c, "camera.saturate", &d) == TIDE_E_NOTFOUND);
    CHECK(strstr(tide_error_detail(), "camera.saturate is not set"));
    CHECK(!tide_config_is_set(c, "camera.gain")); /* unknown unless a frame or file says */
    CHECK(tide_config_is_set(c, "camera.rdnoise"));
    CHECK(tide_config_get_dbl(c, "camera.nope", &d) == TIDE_E_INVAL);
    CHECK(tide_config_get_dbl(c, "nosection", &d) == TIDE_E_INVAL);
    CHECK(tide_config_get_int(c, "camera.rdnoise", &i) == TIDE_E_INVAL);
    CHECK(tide_config_get_str(c, "camera.rdnoise", &s) == TIDE_E_INVAL);
    CHECK(tide_config_get_bool(c, "camera.rdnoise", &b) == TIDE_E_INVAL);
    CHECK(tide_config_get_array(c, "camera.rdnoise", &arr, &n) == TIDE_E_INVAL);
    tide_config_origin o;
    CHECK_OK(tide_config_origin_of(c, "processing.back_size", &o));
    CHECK(o.layer == TIDE_CONFIG_BUILTIN && o.file == NULL);
    char buf[256];
    tide_config_origin_format(&o, buf, sizeof buf);
    CHECK(!strcmp(buf, "built-in"));
    /* every schema default parses (tide_config_create would fail otherwise) and every key has
     * documentation */
    int nk;
    const tide_config_key *k = tide_config_schema(&nk);
    CHECK(nk > 40);
    for (int j = 0; j < nk; j++)
        CHECK(k[j].doc && k[j].doc[0] && k[j].unit);
    tide_config_free(c);
}

static void test_layers(void) {
    tide_config *c = NULL;
    CHECK_OK(tide_config_create(&c));
    const char *def = "{\n"
                      "  \"camera\": {\"gain\": 2.0, \"rdnoise\": 5.0},\n"
                      "  \"processing\": {\"back_size\": 32}\n"
                      "}\n";
    CHECK_OK(
        tide_config_merge_string(c, def, strlen(def), "site/default.json", TIDE_CONFIG_DEFAULT));
    const char *ins = "{\n"
                      "  \"_comment\": \"ignored\",\n"
                      "  \"instrument\": {\"name\": \"Cam\"},\n"
                      "  \"camera\": {\n"
                      "    \"_note\": 5,\n"
                      "    \"gain\": 3.5,\n"
                      "    \"saturate\": 60000\n"
                      "  },\n"
                      "  \"keywords\": {\"rdnoise\": null, \"gain\": \"egain\"}\n"
                      "}\n";
    CHECK_OK(tide_config_merge_string(c, ins, strlen(ins), "cam.json", TIDE_CONFIG_INSTRUMENT));
    CHECK_OK(tide_config_set(c, "processing.back_size=256"));
    CHECK_OK(tide_config_set(c, "processing.aper_radii=[2, 4.5]"));

    double d;
    int64_t i;
    const char *s;
    tide_config_origin o;
    char buf[256];
    /* gain: built-in 1 -> default 2 -> instrument 3.5 */
    CHECK_OK(tide_config_get_dbl(c, "camera.gain", &d));
    CHECK(d == 3.5);
    CHECK_OK(tide_config_origin_of(c, "camera.gain", &o));
    CHECK(o.layer == TIDE_CONFIG_INSTRUMENT && o.line == 6 && o.column == 13);
    tide_config_origin_format(&o, buf, sizeof buf);
    CHECK(!strcmp(buf, "cam.json:6:13"));
    /* rdnoise: default.json only */
    CHECK_OK(tide_config_get_dbl(c, "camera.rdnoise", &d));
    CHECK(d == 5.0);
    CHECK_OK(tide_config_origin_of(c, "camera.rdnoise", &o));
    CHECK(o.layer == TIDE_CONFIG_DEFAULT && !strcmp(o.file, "site/default.json"));
    CHECK(o.line == 2 && o.column == 38);
    /* integer given for a number key */
    CHECK_OK(tide_config_get_dbl(c, "camera.saturate", &d));
    CHECK(d == 60000.0);
    /* back_size: built-in 64 -> default 32 -> override 256 */
    CHECK_OK(tide_config_get_int(c, "processing.back_size", &i));
    CHECK(i == 256);
    CHECK_OK(tide_config_origin_of(c, "processing.back_size", &o));
    CHECK(o.layer == TIDE_CONFIG_OVERRIDE && o.file == NULL);
    const double *arr;
    int n;
    CHECK_OK(tide_config_get_array(c, "processing.aper_radii", &arr, &n));
    CHECK(n == 2 && arr[0] == 2.0 && arr[1] == 4.5);
    /* null clears, keywords are upper-cased */
    CHECK(!tide_config_is_set(c, "keywords.rdnoise"));
    CHECK_OK(tide_config_get_str(c, "keywords.gain", &s));
    CHECK(!strcmp(s, "EGAIN"));
    CHECK_OK(tide_config_get_str(c, "instrument.name", &s));
    CHECK(!strcmp(s, "Cam"));
    /* untouched keys keep their built-in origin */
    CHECK_OK(tide_config_origin_of(c, "processing.detect_thresh", &o));
    CHECK(o.layer == TIDE_CONFIG_BUILTIN);

    /* a copy is deep and keeps origins */
    tide_config *c2 = NULL;
    CHECK_OK(tide_config_copy(&c2, c));
    CHECK_OK(tide_config_set(c, "instrument.name=Other"));
    CHECK_OK(tide_config_get_str(c2, "instrument.name", &s));
    CHECK(!strcmp(s, "Cam"));
    CHECK_OK(tide_config_origin_of(c2, "camera.gain", &o));
    CHECK(o.layer == TIDE_CONFIG_INSTRUMENT && !strcmp(o.file, "cam.json"));
    tide_config_free(c);
    CHECK_OK(tide_config_origin_of(c2, "camera.rdnoise", &o)); /* file names owned by the copy */
    CHECK(!strcmp(o.file, "site/default.json"));
    tide_config_free(c2);
}

static void test_type_errors(void) {
    /* NUMBER */
    EXPECT_ERROR("{\"camera\": {\"gain\": \"fast\"}}",
                 "t.json:1:21: camera.gain must be a number, got a string");
    EXPECT_ERROR("{\"camera\": {\"gain\": true}}", "camera.gain must be a number, got true");
    EXPECT_ERROR("{\"camera\": {\"gain\": [1]}}", "camera.gain must be a number, got an array");
    /* INTEGER */
    EXPECT_ERROR("{\"processing\": {\"back_size\": 64.5}}",
                 "t.json:1:30: processing.back_size must be an integer, got a real number");
    EXPECT_ERROR("{\"processing\": {\"back_size\": \"64\"}}",
                 "processing.back_size must be an integer, got a string");
    /* STRING */
    EXPECT_ERROR("{\"instrument\": {\"name\": 5}}",
                 "t.json:1:25: instrument.name must be a string, got an integer");
    /* BOOL */
    EXPECT_ERROR("{\"processing\": {\"clean_cosmics\": \"yes\"}}",
                 "processing.clean_cosmics must be true or false, got a string");
    EXPECT_ERROR("{\"processing\": {\"clean_cosmics\": 1}}",
                 "processing.clean_cosmics must be true or false, got an integer");
    /* ARRAY */
    EXPECT_ERROR("{\"processing\": {\"aper_radii\": 3}}",
                 "processing.aper_radii must be a non-empty array of numbers, got an integer");
    EXPECT_ERROR("{\"processing\": {\"aper_radii\": []}}",
                 "processing.aper_radii must be a non-empty array of numbers, got an array");
    EXPECT_ERROR("{\"processing\": {\"aper_radii\": [3, \"x\"]}}",
                 "processing.aper_radii element 1 must be a number, got a string");
    EXPECT_ERROR("{\"processing\": {\"aper_radii\": [3, -1]}}",
                 "processing.aper_radii element 1: -1 is out of range (must be > 0)");
    /* KEYWORD */
    EXPECT_ERROR("{\"keywords\": {\"gain\": 5}}",
                 "keywords.gain must be a FITS keyword string (or null), got an integer");
    EXPECT_ERROR("{\"keywords\": {\"gain\": \"GAIN VALUE\"}}",
                 "keywords.gain 'GAIN VALUE' is not a FITS keyword");
    EXPECT_ERROR("{\"keywords\": {\"gain\": \"TOOLONGKEY\"}}", "is not a FITS keyword");
    EXPECT_ERROR("{\"keywords\": {\"gain\": \"\"}}", "is not a FITS keyword");
    /* ranges */
    EXPECT_ERROR("{\"camera\": {\"gain\": 0}}", "camera.gain 0 is out of range (must be > 0)");
    EXPECT_ERROR("{\"camera\": {\"rdnoise\": -1.5}}",
                 "camera.rdnoise -1.5 is out of range (must be >= 0)");
    EXPECT_ERROR("{\"processing\": {\"back_size\": 2}}",
                 "processing.back_size 2 is out of range (must be >= 4 and <= 65536)");
    EXPECT_ERROR("{\"processing\": {\"deblend_cont\": 1.5}}", "out of range");
    /* sections */
    EXPECT_ERROR("{\"camera\": 5}", "t.json:1:12: section 'camera' must be an object, got an "
                                    "integer");
    EXPECT_ERROR("[1, 2]", "t.json:1:1: the top level must be an object of sections, got an "
                           "array");
    EXPECT_ERROR("  \n  [1]", "t.json:2:3: the top level must be an object");
    /* a bad key after good ones: nothing applied (expect_error checks camera.gain stays unset) */
    EXPECT_ERROR("{\"camera\": {\"gain\": 7, \"rdnoise\": \"x\"}}", "camera.rdnoise");
}

static void test_unknown_keys(void) {
    EXPECT_ERROR("{\n"
                 "  \"camera\": {\n"
                 "    \"gain\": 2.0,\n"
                 "    \"gian\": 3.0\n"
                 "  }\n"
                 "}\n",
                 "t.json:4:5: unknown key 'gian' in section 'camera' (did you mean 'gain'?)");
    /* tabs count one column; a non-ASCII character before the key counts one column */
    EXPECT_ERROR("{\"instrument\": {\"name\": \"\xc3\xa9t\xc3\xa9\",\t\"nmae\": \"x\"}}",
                 "t.json:1:32: unknown key 'nmae' in section 'instrument' (did you mean 'name'?)");
    /* no hint when nothing is close */
    EXPECT_ERROR("{\"processing\": {\"zzzzzzzz\": 1}}",
                 "t.json:1:17: unknown key 'zzzzzzzz' in section 'processing'");
    /* an escaped key is compared unescaped, located at its quote */
    EXPECT_ERROR("{\"camera\": {\n\"g\\u0061in\": 1, \"g\\u00e9\": 2}}",
                 "t.json:2:17: unknown key 'g\xc3\xa9' in section 'camera'");
    /* the same name in another section is not confused with it */
    EXPECT_ERROR("{\"keywords\": {\"pixsize_um\": \"X\"},\n \"camera\": {\"pixsize_um\": 5}}",
                 "t.json:1:15: unknown key 'pixsize_um' in section 'keywords'");
    /* nested objects deeper down do not confuse the scanner */
    EXPECT_ERROR("{\"_x\": {\"camera\": {\"gain\": {\"a\": [1, {\"b\": 2}]}}},\n"
                 " \"camera\": {\"gain\": 2, \"bogus\": 1}}",
                 "t.json:2:24: unknown key 'bogus' in section 'camera'");
    EXPECT_ERROR("{\"camra\": {}}",
                 "t.json:1:2: unknown section 'camra' (sections: instrument, keywords, camera, "
                 "processing) (did you mean 'camera'?)");
}

static void test_malformed(void) {
    /* jansson's positions: the line, and the column of the last character it read */
    EXPECT_ERROR("{\n  \"camera\": {\n    \"gain\": 2.0\n    \"rdnoise\": 3\n  }\n}\n",
                 "t.json:4:13: malformed JSON: '}' expected near '\"rdnoise\"'");
    EXPECT_ERROR("{\"camera\": {\"gain\": 1,}}", "t.json:1:23: malformed JSON:");
    EXPECT_ERROR("{\"camera\": {\"gain\": 1, \"gain\": 2}}",
                 "t.json:1:29: malformed JSON: duplicate object key");
    EXPECT_ERROR("", "t.json:1:1: malformed JSON:");
    EXPECT_ERROR("{\"camera\": {\"gain\": 2.5\n", "t.json:2:1: malformed JSON:");
    EXPECT_ERROR("{\"camera\": {\"gain\": 1e999}}", "t.json:1:");
    EXPECT_ERROR("{\"camera\": {\"gain\": 1}} trailing", "malformed JSON");
    EXPECT_ERROR("{\"instrument\": {\"name\": \"a\\u0000b\"}}", "malformed JSON");
}

static void test_overrides(void) {
    tide_config *c = NULL;
    CHECK_OK(tide_config_create(&c));
    double d;
    int b;
    int64_t i;
    const char *s;
    CHECK_OK(tide_config_set(c, "camera.gain=2.25"));
    CHECK_OK(tide_config_get_dbl(c, "camera.gain", &d));
    CHECK(d == 2.25);
    CHECK_OK(tide_config_set(c, "camera.saturate=1e4"));
    CHECK_OK(tide_config_get_dbl(c, "camera.saturate", &d));
    CHECK(d == 1e4);
    CHECK_OK(tide_config_set(c, "processing.clean_cosmics=no"));
    CHECK_OK(tide_config_get_bool(c, "processing.clean_cosmics", &b));
    CHECK(b == 0);
    CHECK_OK(tide_config_set(c, "processing.clean_cosmics=on"));
    CHECK_OK(tide_config_get_bool(c, "processing.clean_cosmics", &b));
    CHECK(b == 1);
    CHECK_OK(tide_config_set(c, "processing.psf_neigen=0"));
    CHECK_OK(tide_config_get_int(c, "processing.psf_neigen", &i));
    CHECK(i == 0);
    CHECK_OK(tide_config_set(c, "keywords.exptime=exposure"));
    CHECK_OK(tide_config_get_str(c, "keywords.exptime", &s));
    CHECK(!strcmp(s, "EXPOSURE"));
    CHECK_OK(tide_config_set(c, "instrument.name=My camera = good"));
    CHECK_OK(tide_config_get_str(c, "instrument.name", &s));
    CHECK(!strcmp(s, "My camera = good"));
    CHECK_OK(tide_config_set(c, "camera.gain=null"));
    CHECK(!tide_config_is_set(c, "camera.gain"));

    struct {
        const char *set, *want;
    } bad[] = {
        {"camera.gain", "expected section.key=value"},
        {"gain=2", "expected section.key=value"},
        {"camera.gain=abc", "--set camera.gain=abc: camera.gain must be a number, got 'abc'"},
        {"camera.gain=", "must be a number"},
        {"camera.gain=inf", "must be a number"},
        {"camera.gain=-2", "camera.gain -2 is out of range (must be > 0)"},
        {"processing.back_size=64.0", "must be an integer, got '64.0'"},
        {"processing.back_size=99999999999999999999", "must be an integer"},
        {"processing.back_size=1", "out of range"},
        {"processing.clean_cosmics=maybe", "must be true or false, got 'maybe'"},
        {"processing.aper_radii=", "must be a non-empty array"},
        {"processing.aper_radii=[3,,5]", "element 1 ('') is not a number"},
        {"processing.aper_radii=[3,5", "unclosed '['"},
        {"processing.aper_radii=3,0", "element 1: 0 is out of range (must be > 0)"},
        {"keywords.gain=bad key", "'bad key' is not a FITS keyword"},
        {"camera.gian=2", "unknown key 'gian' in section 'camera' (did you mean 'gain'?)"},
        {"camra.gain=2", "unknown section 'camra' (did you mean 'camera'?)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tide_error_clear();
        int st = tide_config_set(c, bad[k].set);
        if (st != TIDE_E_CONFIG || !strstr(tide_error_detail(), bad[k].want)) {
            fprintf(stderr, "--set %s: status %d, detail '%s', wanted '%s'\n", bad[k].set, st,
                    tide_error_detail(), bad[k].want);
            tide_test_failures++;
        }
    }
    /* failed overrides changed nothing */
    CHECK_OK(tide_config_get_int(c, "processing.back_size", &i));
    CHECK(i == 64);
    tide_config_free(c);
}

/* Write a configuration with origins, read it back: same values. */
static void test_round_trip(void) {
    tide_config *c = NULL, *r = NULL;
    CHECK_OK(tide_config_create(&c));
    CHECK_OK(tide_config_set(c, "camera.gain=0.1"));
    CHECK_OK(tide_config_set(c, "camera.rdnoise=3.000000000000001"));
    CHECK_OK(tide_config_set(c, "instrument.description=quote \" and \\ and \ttab"));
    CHECK_OK(tide_config_set(c, "processing.aper_radii=1.5,2,1e-3"));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    CHECK_OK(tide_config_write_json(c, f, 0, TIDE_CONFIG_JSON_ORIGINS));
    fclose(f);
    CHECK(strstr(buf, "\"gain\": 0.1,") != NULL); /* shortest digits */
    CHECK(strstr(buf, "\"gain\": \"override\"") != NULL);
    CHECK_OK(tide_config_create(&r));
    CHECK_OK(tide_config_merge_string(r, buf, len, "out.json", TIDE_CONFIG_INSTRUMENT));
    int nk;
    const tide_config_key *k = tide_config_schema(&nk);
    for (int j = 0; j < nk; j++) {
        char key[64];
        snprintf(key, sizeof key, "%s.%s", k[j].section, k[j].name);
        CHECK(tide_config_is_set(c, key) == tide_config_is_set(r, key));
        if (!tide_config_is_set(c, key))
            continue;
        if (k[j].type == TIDE_CFG_NUMBER || k[j].type == TIDE_CFG_INTEGER) {
            double a = 0, b = 1;
            tide_config_get_dbl(c, key, &a);
            tide_config_get_dbl(r, key, &b);
            CHECK(a == b);
        } else if (k[j].type == TIDE_CFG_STRING || k[j].type == TIDE_CFG_KEYWORD) {
            const char *a = "", *b = "x";
            tide_config_get_str(c, key, &a);
            tide_config_get_str(r, key, &b);
            CHECK(!strcmp(a, b));
        } else if (k[j].type == TIDE_CFG_ARRAY) {
            const double *a = NULL, *b = NULL;
            int na = 0, nb = -1;
            tide_config_get_array(c, key, &a, &na);
            tide_config_get_array(r, key, &b, &nb);
            CHECK(na == nb && !memcmp(a, b, (size_t)na * sizeof(double)));
        }
    }
    free(buf);
    tide_config_free(c);
    tide_config_free(r);
}

/* The shipped default.json equals the built-ins; the instrument examples load. */
static void test_shipped_files(void) {
    const char *src = getenv("TIDE_SOURCE_DIR");
    if (!src) {
        fprintf(stderr, "TIDE_SOURCE_DIR not set: shipped files not checked\n");
        tide_test_failures++;
        return;
    }
    char path[4096];
    tide_config *b = NULL, *c = NULL;
    CHECK_OK(tide_config_create(&b));
    CHECK_OK(tide_config_create(&c));
    snprintf(path, sizeof path, "%s/config/default.json", src);
    CHECK_OK(tide_config_merge_file(c, path, TIDE_CONFIG_DEFAULT));
    char *s1 = NULL, *s2 = NULL;
    size_t l1 = 0, l2 = 0;
    FILE *f1 = open_memstream(&s1, &l1), *f2 = open_memstream(&s2, &l2);
    CHECK_OK(tide_config_write_json(b, f1, 0, 0));
    CHECK_OK(tide_config_write_json(c, f2, 0, 0));
    fclose(f1);
    fclose(f2);
    if (strcmp(s1, s2)) {
        fprintf(stderr, "config/default.json differs from the built-in defaults:\n%s\n---\n%s\n",
                s1, s2);
        tide_test_failures++;
    }
    free(s1);
    free(s2);
    /* every key of the schema is in default.json (so sites see them all) */
    int nk;
    const tide_config_key *k = tide_config_schema(&nk);
    for (int j = 0; j < nk; j++) {
        char key[64];
        snprintf(key, sizeof key, "%s.%s", k[j].section, k[j].name);
        tide_config_origin o;
        CHECK_OK(tide_config_origin_of(c, key, &o));
        if (o.layer != TIDE_CONFIG_DEFAULT) {
            fprintf(stderr, "config/default.json lacks %s\n", key);
            tide_test_failures++;
        }
    }
    tide_config_free(b);

    const char *inst[] = {"decam.json", "generic_cmos.json"};
    for (int j = 0; j < 2; j++) {
        snprintf(path, sizeof path, "%s/config/instruments/%s", src, inst[j]);
        CHECK_OK(tide_config_merge_file(c, path, TIDE_CONFIG_INSTRUMENT));
    }
    const char *name;
    CHECK_OK(tide_config_get_str(c, "instrument.name", &name));
    CHECK(!strcmp(name, "generic-cmos"));

    /* tide_config_load with the layers, and a missing file */
    tide_config *l = NULL;
    snprintf(path, sizeof path, "%s/config/instruments/decam.json", src);
    const char *ov[] = {"camera.gain=4.5"};
    tide_config_load_options opt = {"", path, ov, 1};
    CHECK_OK(tide_config_load(&l, &opt));
    double g;
    CHECK_OK(tide_config_get_dbl(l, "camera.gain", &g));
    CHECK(g == 4.5);
    CHECK_OK(tide_config_get_dbl(l, "camera.pixsize_um", &g));
    CHECK(g == 15.0);
    tide_config_free(l);
    opt.instrument_path = "/nonexistent/x.json";
    CHECK(tide_config_load(&l, &opt) == TIDE_E_IO);
    CHECK(strstr(tide_error_detail(), "/nonexistent/x.json") != NULL);
    CHECK(l == NULL);
    tide_config_free(c);

    /* the search finds the source tree's default.json, or $TIDE_CONFIG_DIR's */
    char found[4096];
    CHECK_OK(tide_config_find_default(found, sizeof found));
    CHECK(strstr(found, "default.json") != NULL);
}

/* Random mutations of a valid configuration: every outcome is success or TIDE_E_CONFIG with a
 * real position (line and column >= 1), never a crash or an unlocated error. Deterministic. */
static void test_fuzz(void) {
    static const char base[] =
        "{\n  \"_c\": [1, {\"x\": \"}\"}],\n  \"instrument\": {\"name\": \"F\\u00e9\\\"z\"},\n"
        "  \"keywords\": {\"gain\": \"EGAIN\", \"pixsize\": null},\n"
        "  \"camera\": {\"gain\": 1.5, \"ncombine\": 3, \"filter\": \"r\"},\n"
        "  \"processing\": {\"aper_radii\": [2, 3.5], \"clean_cosmics\": false}\n}\n";
    const char alphabet[] = "{}[]:,\"\\ \n0-.eatrufnl_xg";
    unsigned long long rng = 12345;
    char text[sizeof base + 8];
    int nok = 0, nerr = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(text, base, sizeof base);
        size_t len = sizeof base - 1;
        int nmut = 1 + (int)(it % 3);
        for (int m = 0; m < nmut; m++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t at = (size_t)((rng >> 33) % len);
            char ch = alphabet[(rng >> 20) % (sizeof alphabet - 1)];
            int op = (int)((rng >> 10) % 3);
            if (op == 0) {
                text[at] = ch;
            } else if (op == 1 && len > 1) {
                memmove(text + at, text + at + 1, len - at);
                len--;
            } else if (len + 1 < sizeof text) {
                memmove(text + at + 1, text + at, len - at + 1);
                text[at] = ch;
                len++;
            }
        }
        tide_config *c = NULL;
        CHECK_OK(tide_config_create(&c));
        int st = tide_config_merge_string(c, text, len, "t.json", TIDE_CONFIG_INSTRUMENT);
        int line = 0, col = 0;
        if (st == 0) {
            nok++;
        } else if (st == TIDE_E_CONFIG &&
                   sscanf(tide_error_detail(), "t.json:%d:%d:", &line, &col) == 2 && line >= 1 &&
                   col >= 1) {
            nerr++;
        } else {
            fprintf(stderr, "fuzz %d: status %d, detail '%s' for:\n%.*s\n", it, st,
                    tide_error_detail(), (int)len, text);
            tide_test_failures++;
        }
        tide_config_free(c);
        if (tide_test_failures > 5)
            break;
    }
    printf("fuzz: %d accepted, %d rejected with a position\n", nok, nerr);
    CHECK(nok > 100 && nerr > 1000);
}

int main(void) {
    test_builtins();
    test_layers();
    test_type_errors();
    test_unknown_keys();
    test_malformed();
    test_overrides();
    test_round_trip();
    test_shipped_files();
    test_fuzz();
    return TIDE_TEST_RESULT();
}
