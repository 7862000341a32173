/* test_task_parse.c — the task of task.h read from JSON: good tasks with their defaults,
 * every refusal with what it names, a round trip through tide_task_to_json, and the derived
 * output names. */
#include <string.h>

#include "tide/task.h"
#include "tide_test.h"

static int parse(const char *s, tide_task *t) {
    return tide_task_parse(s, strlen(s), t);
}

/* @p text is refused with TIDE_E_FORMAT and a detail holding @p what. */
static void refused(const char *text, const char *what) {
    tide_task t;
    const int st = parse(text, &t);
    CHECK(st == TIDE_E_FORMAT);
    CHECK(t.path == NULL && t.id == NULL && t.options == NULL);
    if (!strstr(tide_error_detail(), what)) {
        fprintf(stderr, "refusal of %s: \"%s\" does not name \"%s\"\n", text, tide_error_detail(),
                what);
        tide_test_failures++;
    }
}

/* parse(to_json(t)) is t */
static void round_trip(const tide_task *t) {
    char *s = tide_task_to_json(t);
    CHECK(s != NULL);
    if (!s)
        return;
    tide_task u;
    CHECK_OK(parse(s, &u));
    CHECK(u.kind == t->kind);
    CHECK(u.path && !strcmp(u.path, t->path));
    CHECK(u.id && !strcmp(u.id, t->id));
    CHECK((!u.tmpl && !t->tmpl) || (u.tmpl && t->tmpl && !strcmp(u.tmpl, t->tmpl)));
    CHECK((!u.out && !t->out) || (u.out && t->out && !strcmp(u.out, t->out)));
    CHECK((!u.options && !t->options) ||
          (u.options && t->options && !strcmp(u.options, t->options)));
    char *s2 = tide_task_to_json(&u);
    CHECK(s2 && !strcmp(s, s2));
    free(s2);
    free(s);
    tide_task_free(&u);
}

int main(void) {
    tide_task t;
    /* the least: a path; the job is reduce and the id the path */
    CHECK_OK(parse("{\"path\": \"a.fits\"}", &t));
    CHECK(t.kind == TIDE_TASK_REDUCE && !strcmp(t.path, "a.fits") && !strcmp(t.id, "a.fits"));
    CHECK(!t.tmpl && !t.out && !t.options);
    round_trip(&t);
    tide_task_free(&t);
    CHECK(t.path == NULL);
    tide_task_free(&t); /* twice is harmless */
    tide_task_free(NULL);

    /* everything, with options of each kind; the text need not end in NUL */
    const char *full = "{\"path\": \"d/s1.fits[1]\", \"job\": \"diff\", \"template\": \"t.fits\","
                       " \"id\": \"night 7\", \"out\": \"o/s1\", \"options\": {\"camera.gain\": "
                       "2.5, \"camera.rdnoise\": 3}}XXXX";
    CHECK_OK(tide_task_parse(full, strlen(full) - 4, &t));
    CHECK(t.kind == TIDE_TASK_DIFF && !strcmp(t.tmpl, "t.fits") && !strcmp(t.id, "night 7"));
    CHECK(!strcmp(t.out, "o/s1"));
    CHECK(t.options && strstr(t.options, "camera.gain"));
    round_trip(&t);
    tide_task_free(&t);
    CHECK_OK(
        parse("{\"path\": \"a.fits\", \"job\": \"reduce\", \"options\": {\"detect_thresh\": "
              "3.5, \"aper_radii\": [3, 5, 8], \"processing.clean_cosmics\": false, \"refcat\": "
              "\"r.fits\", \"index_dir\": \"/idx\", \"solve\": true, \"instrument.name\": "
              "\"x\"}}",
              &t));
    CHECK(t.options != NULL);
    round_trip(&t);
    tide_task_free(&t);
    /* an empty options object is no options */
    CHECK_OK(parse("{\"path\": \"a.fits\", \"options\": {}}", &t));
    CHECK(t.options == NULL);
    tide_task_free(&t);

    /* refusals: each names what is wrong */
    refused("{\"path\": \"a.fits\",", "not JSON at line 1 column");
    refused("{\n\"path\": \"a.fits\"\n\"id\": 1}", "line 3");
    refused("[\"a.fits\"]", "must be a JSON object, not an array");
    refused("{}", "\"path\" is missing");
    refused("{\"path\": 3}", "\"path\" must be a string, not a number");
    refused("{\"path\": \"\"}", "\"path\" is empty");
    refused("{\"paht\": \"a.fits\"}", "unknown member \"paht\"");
    refused("{\"path\": \"a.fits\", \"path\": \"b.fits\"}", "duplicate");
    refused("{\"path\": \"a.fits\", \"job\": \"photometry\"}", "\"reduce\" or \"diff\"");
    refused("{\"path\": \"a.fits\", \"job\": \"diff\"}", "needs \"template\"");
    refused("{\"path\": \"a.fits\", \"template\": \"t.fits\"}", "\"template\" is for diff");
    refused("{\"path\": \"a.fits\", \"out\": false}", "\"out\" must be a string, not a boolean");
    refused("{\"path\": \"a.fits\", \"options\": [1]}", "\"options\" must be an object");
    refused("{\"path\": \"a.fits\", \"options\": {\"detect_thresold\": 3}}",
            "option \"detect_thresold\"");
    refused("{\"path\": \"a.fits\", \"options\": {\"camera.gian\": 3}}", "option \"camera.gian\"");
    refused("{\"path\": \"a.fits\", \"options\": {\"detect_thresh\": \"high\"}}",
            "option \"detect_thresh\"");
    refused("{\"path\": \"a.fits\", \"options\": {\"detect_thresh\": -4}}",
            "option \"detect_thresh\"");
    refused("{\"path\": \"a.fits\", \"options\": {\"detect_thresh\": {\"a\": 1}}}",
            "an object is not a configuration value");
    refused("{\"path\": \"a.fits\", \"options\": {\"solve\": 1}}",
            "\"solve\" must be true or false");
    refused("{\"path\": \"a.fits\", \"options\": {\"refcat\": \"\"}}", "non-empty string");
    refused("{\"path\": \"s.fits\", \"job\": \"diff\", \"template\": \"t.fits\", \"options\": "
            "{\"refcat\": \"r.fits\"}}",
            "\"refcat\" is for reduce tasks");
    CHECK(tide_task_parse(NULL, 0, &t) == TIDE_E_INVAL);
    CHECK(tide_task_parse("{}", 2, NULL) == TIDE_E_INVAL);
    CHECK(tide_task_to_json(NULL) == NULL);

    /* derived names */
    static const char *const stems[][2] = {
        {"/d/a.fits", "a"},    {"a.fits.gz", "a"},   {"b.fit", "b"},     {"c.fts", "c"},
        {"d/e.fits[1]", "e"},  {"f.fits.fz", "f"},   {"noext", "noext"}, {"x.y.fits", "x.y"},
        {"/d/.fits", ".fits"}, {"g.fits[SCI]", "g"}, {"h.gz", "h"},      {"dir/", ""},
    };
    for (size_t k = 0; k < sizeof stems / sizeof stems[0]; k++) {
        char out[64];
        tide_task_stem(stems[k][0], out, sizeof out);
        if (strcmp(out, stems[k][1])) {
            fprintf(stderr, "stem of %s: %s (%s expected)\n", stems[k][0], out, stems[k][1]);
            tide_test_failures++;
        }
    }
    return TIDE_TEST_RESULT();
}
