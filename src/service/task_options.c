/* task_options.c — a task's "options" object (task.h): configuration keys and values as
 * `--set KEY=VALUE` gives them, plus tide reduce's calibration choices, checked against the
 * configuration's schema when the task is parsed, so a typo is refused with the key named
 * before anything runs, and applied to a copy of the runner's configuration when it runs. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_internal.h"
#include "tide/status.h"

void tide_task_opts_free(tide_task_opts *o) {
    if (!o)
        return;
    for (int k = 0; k < o->nsets; k++)
        free(o->sets[k]);
    free(o->sets);
    free(o->refcat);
    free(o->index_dir);
    memset(o, 0, sizeof *o);
}

/* The --set text of a JSON value: a number with every digit, a string as is, true/false, an
 * array as "[a, b]", null as "null". NULL (with the error recorded) for an object or when out
 * of memory. */
static char *value_text(const char *key, const json_t *v) {
    char *s = NULL;
    if (json_is_string(v)) {
        s = strdup(json_string_value(v));
    } else if (json_is_integer(v)) {
        s = malloc(32);
        if (s)
            snprintf(s, 32, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        s = malloc(40);
        if (s)
            snprintf(s, 40, "%.17g", json_real_value(v));
    } else if (json_is_boolean(v)) {
        s = strdup(json_is_true(v) ? "true" : "false");
    } else if (json_is_null(v)) {
        s = strdup("null");
    } else if (json_is_array(v)) {
        s = json_dumps(v, JSON_COMPACT);
    } else {
        tide_error(TIDE_E_FORMAT, "task: option \"%s\": an object is not a configuration value",
                   key);
        return NULL;
    }
    if (!s)
        tide_error(TIDE_E_NOMEM, "out of memory");
    return s;
}

/* "section.key=value" of option @p key (a bare key is a processing key, as for --set). */
static char *assignment(const char *key, const char *val) {
    const int bare = !strchr(key, '.');
    const size_t n = strlen(key) + strlen(val) + 16;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s=%s", bare ? "processing." : "", key, val);
    return s;
}

/* The calibration choices: "refcat" and "index_dir" (strings), "solve" (a boolean). 1 when
 * @p key is one (taken into @p o, or an error in *st), 0 when it is not. */
static int calib_option(const char *key, const json_t *v, tide_task_kind kind, tide_task_opts *o,
                        int *st) {
    const int is_str = !strcmp(key, "refcat") || !strcmp(key, "index_dir");
    if (!is_str && strcmp(key, "solve"))
        return 0;
    *st = 0;
    if (kind != TIDE_TASK_REDUCE)
        *st = tide_error(TIDE_E_FORMAT, "task: option \"%s\" is for reduce tasks", key);
    else if (is_str && (!json_is_string(v) || !json_string_length(v)))
        *st = tide_error(TIDE_E_FORMAT, "task: option \"%s\" must be a non-empty string", key);
    else if (!is_str && !json_is_boolean(v))
        *st = tide_error(TIDE_E_FORMAT, "task: option \"solve\" must be true or false");
    if (*st)
        return 1;
    if (!is_str) {
        o->solve = json_is_true(v);
        return 1;
    }
    char **dst = !strcmp(key, "refcat") ? &o->refcat : &o->index_dir;
    *dst = strdup(json_string_value(v));
    if (!*dst)
        *st = tide_error(TIDE_E_NOMEM, "out of memory");
    return 1;
}

int tide_task_opts_parse(const char *json, tide_task_kind kind, tide_task_opts *o) {
    memset(o, 0, sizeof *o);
    if (!json)
        return 0;
    json_error_t err;
    json_t *root = json_loads(json, 0, &err);
    if (!json_is_object(root)) {
        json_decref(root);
        return tide_error(TIDE_E_FORMAT, "task: \"options\" must be an object");
    }
    tide_config *check = NULL; /* the built-in defaults: each value checked on them */
    int st = tide_config_create(&check);
    const size_t n = json_object_size(root);
    if (!st && n && !(o->sets = calloc(n, sizeof *o->sets)))
        st = tide_error(TIDE_E_NOMEM, "out of memory");
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (st)
            break;
        if (calib_option(key, v, kind, o, &st))
            continue;
        char *val = value_text(key, v);
        if (!val) {
            st = TIDE_E_FORMAT;
            break;
        }
        char *a = assignment(key, val);
        free(val);
        if (!a) {
            st = tide_error(TIDE_E_NOMEM, "out of memory");
            break;
        }
        o->sets[o->nsets++] = a;
        if (tide_config_set(check, a)) {
            char why[768];
            snprintf(why, sizeof why, "%s", tide_error_detail());
            st = tide_error(TIDE_E_FORMAT, "task: option \"%s\": %s", key, why);
        }
    }
    tide_config_free(check);
    json_decref(root);
    if (st)
        tide_task_opts_free(o);
    return st;
}

int tide_task_opts_config(const tide_config *base, const tide_task_opts *o, tide_config **out) {
    *out = NULL;
    tide_config *c = NULL;
    int st = tide_config_copy(&c, base);
    for (int k = 0; !st && k < o->nsets; k++)
        st = tide_config_set(c, o->sets[k]);
    if (st) {
        tide_config_free(c);
        return st;
    }
    *out = c;
    return 0;
}
