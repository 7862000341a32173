/* submit.c — a task made ready to publish to a worker's queue (submit.h). */
#define _DEFAULT_SOURCE /* realpath */
#include "submit.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tide/status.h"

/* The absolute form of FILE or FILE[ext] into @p out: 0, or -1 with errno. */
static int absolute_spec(const char *spec, char *out, size_t cap) {
    char root[PATH_MAX];
    const char *br = strchr(spec, '[');
    size_t n = br ? (size_t)(br - spec) : strlen(spec);
    if (n >= sizeof root) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(root, spec, n);
    root[n] = 0;
    char abs[PATH_MAX];
    struct stat sb;
    if (!realpath(root, abs) || stat(abs, &sb))
        return -1;
    if (!S_ISREG(sb.st_mode)) {
        errno = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
        return -1;
    }
    if ((size_t)snprintf(out, cap, "%s%s", abs, br ? br : "") >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int tide_submit_task(const tide_task *base, const json_t *opts, const char *id, tide_task *out,
                     char *reason, size_t cap) {
    memset(out, 0, sizeof *out);
    reason[0] = 0;
    char path[PATH_MAX + 64], tmpl[PATH_MAX + 64];
    if (absolute_spec(base->path, path, sizeof path)) {
        snprintf(reason, cap, "%s: %s", base->path, strerror(errno));
        return -1;
    }
    if (base->tmpl && absolute_spec(base->tmpl, tmpl, sizeof tmpl)) {
        snprintf(reason, cap, "%s: the template: %s", base->tmpl, strerror(errno));
        return -1;
    }
    json_t *o = base->options ? json_loads(base->options, 0, NULL) : json_object();
    if (!o) {
        snprintf(reason, cap, "%s: options are not a JSON object", base->path);
        return -1;
    }
    if (opts)
        json_object_update(o, (json_t *)opts);
    char *otext = json_object_size(o) ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    tide_task t = {.kind = base->kind,
                   .id = (char *)(id                                         ? id
                                  : base->id && strcmp(base->id, base->path) ? base->id
                                                                             : path),
                   .path = path,
                   .tmpl = base->tmpl ? tmpl : NULL,
                   .out = base->out,
                   .options = otext};
    char *text = tide_task_to_json(&t);
    free(otext);
    if (!text) {
        snprintf(reason, cap, "%s: out of memory", base->path);
        return -1;
    }
    int st = tide_task_parse(text, strlen(text), out);
    free(text);
    if (st) {
        snprintf(reason, cap, "%s: %s", base->path, tide_error_detail());
        return -1;
    }
    return 0;
}

int tide_submit_add_option(json_t *opts, const char *kv) {
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!eq || eq == kv)
        return -1;
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
    json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
    return json_object_set_new(opts, key, v ? v : json_string(eq + 1));
}
