/* task_parse.c — a task (task.h) read from its JSON object and written back: every member
 * checked, an unknown one refused, the options checked against the configuration's schema
 * (task_options.c); and the name of a frame's derived outputs. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_internal.h"
#include "tide/status.h"

void tide_task_free(tide_task *t) {
    if (!t)
        return;
    free(t->id);
    free(t->path);
    free(t->tmpl);
    free(t->out);
    free(t->options);
    memset(t, 0, sizeof *t);
}

static const char *json_kind(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Member @p name of @p root as a new non-empty string in *out (NULL when absent). */
static int take_string(const json_t *root, const char *name, char **out) {
    const json_t *v = json_object_get(root, name);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_is_string(v))
        return tide_error(TIDE_E_FORMAT, "task: \"%s\" must be a string, not %s", name,
                          json_kind(v));
    if (!json_string_length(v))
        return tide_error(TIDE_E_FORMAT, "task: \"%s\" is empty", name);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return tide_error(TIDE_E_FORMAT, "task: \"%s\" holds a NUL character", name);
    *out = strdup(json_string_value(v));
    return *out ? 0 : tide_error(TIDE_E_NOMEM, "out of memory");
}

static int parse_object(const json_t *root, tide_task *t) {
    static const char *const known[] = {"path", "job", "template", "id", "out", "options"};
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        int ok = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            ok |= !strcmp(key, known[k]);
        if (!ok)
            return tide_error(TIDE_E_FORMAT, "task: unknown member \"%s\"", key);
    }
    char *job = NULL;
    int st = take_string(root, "job", &job);
    if (!st && job && strcmp(job, "reduce") && strcmp(job, "diff"))
        st = tide_error(TIDE_E_FORMAT, "task: \"job\" is \"reduce\" or \"diff\", not \"%s\"", job);
    t->kind = job && !strcmp(job, "diff") ? TIDE_TASK_DIFF : TIDE_TASK_REDUCE;
    free(job);
    if (!st)
        st = take_string(root, "path", &t->path);
    if (!st && !t->path)
        st = tide_error(TIDE_E_FORMAT, "task: \"path\" is missing");
    if (!st)
        st = take_string(root, "template", &t->tmpl);
    if (!st && t->kind == TIDE_TASK_DIFF && !t->tmpl)
        st = tide_error(TIDE_E_FORMAT, "task: a diff task needs \"template\"");
    if (!st && t->kind == TIDE_TASK_REDUCE && t->tmpl)
        st = tide_error(TIDE_E_FORMAT, "task: \"template\" is for diff tasks (give \"job\": "
                                       "\"diff\")");
    if (!st)
        st = take_string(root, "id", &t->id);
    if (!st && !t->id && !(t->id = strdup(t->path)))
        st = tide_error(TIDE_E_NOMEM, "out of memory");
    if (!st)
        st = take_string(root, "out", &t->out);
    const json_t *o = json_object_get(root, "options");
    if (!st && o && !json_is_object(o))
        st = tide_error(TIDE_E_FORMAT, "task: \"options\" must be an object, not %s", json_kind(o));
    if (!st && o && json_object_size(o)) {
        t->options = json_dumps(o, JSON_COMPACT);
        if (!t->options)
            st = tide_error(TIDE_E_NOMEM, "out of memory");
        tide_task_opts opts;
        if (!st && !(st = tide_task_opts_parse(t->options, t->kind, &opts)))
            tide_task_opts_free(&opts);
    }
    return st;
}

int tide_task_parse(const char *text, size_t len, tide_task *t) {
    if (!t)
        return tide_error(TIDE_E_INVAL, "tide_task_parse: NULL task");
    memset(t, 0, sizeof *t);
    if (!text)
        return tide_error(TIDE_E_INVAL, "tide_task_parse: NULL text");
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) /* jansson's column is 0 right after a newline; say 1 */
        return tide_error(TIDE_E_FORMAT, "task: not JSON at line %d column %d: %s",
                          err.line > 0 ? err.line : 1, err.column > 0 ? err.column : 1, err.text);
    int st = json_is_object(root) ? parse_object(root, t)
                                  : tide_error(TIDE_E_FORMAT, "task: must be a JSON object, not %s",
                                               json_kind(root));
    json_decref(root);
    if (st)
        tide_task_free(t);
    return st;
}

char *tide_task_to_json(const tide_task *t) {
    if (!t || !t->path)
        return NULL;
    json_t *o = json_object();
    int bad = !o;
    bad = bad || json_object_set_new(o, "path", json_string(t->path));
    bad = bad ||
          json_object_set_new(o, "job", json_string(t->kind == TIDE_TASK_DIFF ? "diff" : "reduce"));
    if (t->tmpl)
        bad = bad || json_object_set_new(o, "template", json_string(t->tmpl));
    if (t->id)
        bad = bad || json_object_set_new(o, "id", json_string(t->id));
    if (t->out)
        bad = bad || json_object_set_new(o, "out", json_string(t->out));
    if (t->options) {
        json_t *opt = json_loads(t->options, 0, NULL);
        bad = bad || !opt || json_object_set_new(o, "options", opt);
    }
    char *s = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

void tide_task_stem(const char *path, char *out, size_t cap) {
    if (!cap)
        return;
    const char *b = path ? strrchr(path, '/') : NULL;
    b = b ? b + 1 : (path ? path : "");
    size_t n = strlen(b);
    const char *sel = memchr(b, '[', n); /* FILE[ext]: the file's name */
    if (sel && sel > b && b[n - 1] == ']')
        n = (size_t)(sel - b);
    static const char *const ext[] = {".gz", ".fz", ".fits", ".fit", ".fts"};
    for (int k = 0; k < 5; k++) {
        const size_t e = strlen(ext[k]);
        if (n > e && !strncmp(b + n - e, ext[k], e)) {
            n -= e;
            if (k < 2) /* .fits.gz: the FITS extension too */
                k = 1;
            else
                break;
        }
    }
    snprintf(out, cap, "%.*s", (int)n, b);
}

void tide_task_output(const tide_task *t, const char *outdir, char *out, size_t cap) {
    if (!cap)
        return;
    out[0] = 0;
    if (!t || !t->path)
        return;
    if (t->out) {
        snprintf(out, cap, "%s", t->out);
        return;
    }
    if (!outdir)
        return;
    char stem[1024];
    tide_task_stem(t->path, stem, sizeof stem);
    snprintf(out, cap, "%s/%s%s", outdir, stem, t->kind == TIDE_TASK_REDUCE ? ".cat.fits" : "");
}
