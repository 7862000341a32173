/* outset.c — the outputs of one command committed together: all renamed into place once every
 * one is complete, or none (outfile.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile_internal.h"
#include "tide/outfile.h"
#include "tide/status.h"

void tide_outset_init(tide_outset *s) {
    memset(s, 0, sizeof *s);
}

int tide_outset_add(tide_outset *s, const char *path, tide_outfile **out) {
    *out = NULL;
    if (!path || !*path)
        return 0;
    if (s->n >= TIDE_OUTSET_MAX)
        return tide_error(TIDE_E_INVAL, "%s: more than %d outputs at once", path, TIDE_OUTSET_MAX);
    tide_outfile *o = calloc(1, sizeof *o);
    if (!o)
        return tide_error(TIDE_E_NOMEM, "%s: no memory", path);
    int st = tide_outfile_begin(o, path);
    if (st) {
        free(o);
        return st;
    }
    s->f[s->n++] = o;
    *out = o;
    return 0;
}

/* Put output @p o back as it was before its rename: the kept old file, or no file. */
static void unplace(tide_outfile *o) {
    if (!o->placed)
        return;
    char old[4500];
    snprintf(old, sizeof old, "%s/.old", o->priv);
    if (o->had_old > 0)
        rename(old, o->path);
    else if (o->had_old == 0) /* there was none */
        unlink(o->path);
    /* else: an old file that could not be kept; the new one stays rather than nothing */
    o->placed = 0;
}

int tide_outset_commit(tide_outset *s) {
    int st = 0;
    for (int i = 0; !st && i < s->n; i++)
        st = tide_outfile_sync(s->f[i]);
    for (int i = 0; !st && i < s->n; i++) {
        tide_outfile *o = s->f[i];
        /* Keep the file being replaced (a hard link in the private directory) until every
         * output is in place, so a failed rename can be undone. Where links are not possible,
         * the rename still replaces it; only that undo is lost. */
        char old[4500];
        snprintf(old, sizeof old, "%s/.old", o->priv);
        struct stat sb;
        o->had_old = 0;
        if (s->n > 1 && lstat(o->path, &sb) == 0)
            o->had_old = link(o->path, old) == 0 ? 1 : -1;
        if (rename(o->tmp, o->path) != 0) {
            st = tide_error(TIDE_E_IO, "%s: cannot rename the finished file into place: %s",
                            o->path, strerror(errno));
            if (o->had_old > 0)
                unlink(old);
            o->had_old = 0;
            break;
        }
        o->placed = 1;
    }
    if (st)
        for (int i = 0; i < s->n; i++)
            unplace(s->f[i]);
    for (int i = 0; i < s->n; i++) {
        tide_outfile *o = s->f[i];
        const int placed = o->placed;
        tide_outfile_abort(o); /* the kept old file and the private directory */
        if (placed)
            tide_outfile_sync_dir(o->dir);
        o->placed = 0;
    }
    return st;
}

void tide_outset_abort(tide_outset *s) {
    for (int i = 0; i < s->n; i++) {
        tide_outfile_abort(s->f[i]);
        free(s->f[i]);
        s->f[i] = NULL;
    }
    s->n = 0;
}
