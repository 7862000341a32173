/* outcheck.c — refusing, before any work, an output that is the same file as an input or as
 * another output of the same command: writing it would destroy the input (or one output would
 * silently replace the other). Files are compared by device and inode, so a symlink or a hard
 * link to the input is caught as well as the same name spelt differently. */
#include <string.h>
#include <sys/stat.h>

#include "outfile_internal.h"
#include "tide/outfile.h"
#include "tide/status.h"

/* Device and inode of an existing file (following links); FILE[ext] specs are tried without
 * their selector when the whole name does not exist. */
static int file_id(const char *name, int spec, struct stat *sb) {
    if (!name || !*name)
        return 0;
    if (stat(name, sb) == 0)
        return 1;
    const char *b = spec ? strchr(name, '[') : NULL;
    if (!b || b == name)
        return 0;
    char root[4096];
    if ((size_t)(b - name) >= sizeof root)
        return 0;
    snprintf(root, sizeof root, "%.*s", (int)(b - name), name);
    return stat(root, sb) == 0;
}

/* The name an output will have once renamed: its directory's device and inode and its last
 * component (a file that does not exist yet is still one place). */
static int name_id(const char *path, struct stat *dir, const char **base) {
    char d[4096];
    tide_outfile_dir_of(path, d, sizeof d);
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    return stat(d, dir) == 0;
}

static int same(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int tide_outputs_check(const char *const *inputs, int nin, const char *const *outputs, int nout) {
    for (int j = 0; j < nout; j++) {
        const char *o = outputs[j];
        if (!o || !*o || !strcmp(o, "-"))
            continue;
        struct stat os;
        const int oexists = file_id(o, 0, &os);
        for (int i = 0; oexists && i < nin; i++) {
            struct stat is;
            if (file_id(inputs[i], 1, &is) && same(&is, &os))
                return tide_error(TIDE_E_INVAL,
                                  "%s: is the same file as the input %s; writing it would "
                                  "destroy the input (choose another output name)",
                                  o, inputs[i]);
        }
        struct stat od;
        const char *ob;
        const int oname = name_id(o, &od, &ob);
        for (int k = 0; k < j; k++) {
            const char *p = outputs[k];
            if (!p || !*p || !strcmp(p, "-"))
                continue;
            struct stat ps, pd;
            const char *pb;
            const int clash = (oexists && file_id(p, 0, &ps) && same(&ps, &os)) ||
                              (oname && name_id(p, &pd, &pb) && same(&pd, &od) && !strcmp(pb, ob));
            if (clash)
                return tide_error(TIDE_E_INVAL,
                                  "%s and %s are the same file: two outputs of one command "
                                  "cannot share a file",
                                  p, o);
        }
    }
    return 0;
}
