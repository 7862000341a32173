/* outfile.h — how tide writes every output file (FITS, CSV, PNG, WCS headers, index files).
 *
 * A file is written in a private directory created with mkdtemp (mode 0700) beside its
 * target, DIR/.tide-HOST-PID-XXXXXX/NAME, and renamed over the target only when it is
 * complete and on disk (fsync): a reader sees the old file or the new one, never half of one,
 * and a failure leaves nothing behind. Nobody else can create anything inside the private
 * directory, so a symlink planted by another user cannot redirect the write, whether the file
 * is created by name (cfitsio) or through a descriptor (O_CREAT|O_EXCL|O_NOFOLLOW). The
 * directory is on the target's file system, so rename(2) is atomic.
 *
 * The name carries HOST (8 hex digits of a hash of the host name and, on Linux, of the PID
 * namespace, as containers sharing a volume have PIDs of their own) and the writer's PID, so a
 * later writer in the same directory can tell the leftovers of a dead process (kill -9, a
 * crash) from the work of a live one: it removes the private directories (and the temporary
 * names of earlier tide versions) of its own user, made on its own host, whose process no
 * longer exists (kill(pid, 0) fails with ESRCH). A live process's files, another user's and
 * another host's (a shared NFS directory) are left alone. A PID reused by another process
 * only delays the clean-up.
 *
 * Several outputs of one command form an output set: each is staged on its own, and the set
 * is committed (all renamed into place) only when every one is complete, or aborted (none
 * is). Should a rename fail half-way, the outputs already renamed are put back as they were. */
#ifndef TIDE_OUTFILE_H
#define TIDE_OUTFILE_H
#include "tide/export.h"
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One output being written. Zero it (or tide_outfile_begin fills it); every function is safe
 *  on a zeroed or finished one. */
typedef struct tide_outfile {
    char path[4096]; /**< the final name, as given */
    char dir[4096];  /**< its directory ("." when the name has none) */
    char priv[4160]; /**< the private directory ("" when there is none) */
    char tmp[4420];  /**< where the file is written: priv/NAME */
    int synced;      /**< the temporary is complete and on disk */
    int placed;      /**< renamed into place (by a set's commit that may still be undone) */
    int had_old;     /**< 1: the previous file at path is kept as priv/.old (undo of a set);
                          0: there was none; -1: there was one that could not be kept */
} tide_outfile;

/** Prepare an output: refuse a target that is a directory or exists and is not a regular file
 *  (or a link to one), remove dead processes' leftovers in its directory, and create the
 *  private directory. The caller then creates o->tmp (by name, it does not exist yet) or calls
 *  tide_outfile_fopen, writes it completely and closes it. Errors name @p path. */
TIDE_API int tide_outfile_begin(tide_outfile *o, const char *path);

/** Create o->tmp (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0666 less the umask) and open it as a stdio
 *  stream for writing. The caller fflushes and fcloses it, then calls tide_outfile_commit. */
TIDE_API int tide_outfile_fopen(tide_outfile *o, FILE **f);

/** tide_outfile_begin and tide_outfile_fopen in one, for text written with stdio (reports):
 *  finish with tide_outfile_close. On failure nothing is left and *f is NULL. */
TIDE_API int tide_outfile_open(tide_outfile *o, const char *path, FILE **f);

/** Flush and close the stream of tide_outfile_open and commit the file; when anything
 *  written to it failed (ferror), remove it instead. Returns a status naming the path. */
TIDE_API int tide_outfile_close(tide_outfile *o, FILE *f);

/** Flush the complete temporary to disk (done once; commit calls it when needed). */
TIDE_API int tide_outfile_sync(tide_outfile *o);

/** Flush, rename the temporary over the target, remove the private directory and flush the
 *  directory. On failure the temporary is removed and the target is as it was. */
TIDE_API int tide_outfile_commit(tide_outfile *o);

/** Remove the temporary and the private directory (after a failure); keeps the error detail. */
TIDE_API void tide_outfile_abort(tide_outfile *o);

/** Remove, in @p dir, what dead writers of this user and host left (as described above). Done
 *  by tide_outfile_begin; exposed for tests and for writers of whole directories. */
TIDE_API void tide_outfile_sweep(const char *dir);

/** The HOST part of private names into @p out (9+ bytes): 8 hex digits of the 32-bit FNV-1a
 *  hash of "HOSTNAME\nPIDNS", PIDNS the target of /proc/self/ns/pid ("" when unreadable). */
TIDE_API void tide_outfile_host_tag(char *out);

/** Create a private directory for a whole output directory beside @p path (as
 *  tide_outfile_begin, without a file in it) into @p priv (of @p n bytes). */
TIDE_API int tide_outfile_mkdtemp(const char *path, char *priv, size_t n);

/** Remove @p dir and everything in it (plain files and directories, a few levels deep; links
 *  are removed, not followed). For private directories. */
TIDE_API void tide_outfile_remove_tree(const char *dir);

/** The largest number of outputs in one set: a mosaic's per-CCD side outputs (three for
 *  each of LSSTCam's 189 CCDs) are one set. */
#define TIDE_OUTSET_MAX 1024

/** The outputs of one command, committed together. */
typedef struct tide_outset {
    int n;                            /**< outputs added */
    tide_outfile *f[TIDE_OUTSET_MAX]; /**< each one (allocated by tide_outset_add) */
} tide_outset;

/** An empty set. */
TIDE_API void tide_outset_init(tide_outset *s);

/** Begin one more output of the set (tide_outfile_begin) and return it in @p out. A NULL or
 *  empty @p path adds nothing and sets *out to NULL. */
TIDE_API int tide_outset_add(tide_outset *s, const char *path, tide_outfile **out);

/** Flush every output, then rename them all into place; when one cannot be placed, those
 *  already placed are put back as they were (the old file or none) and every temporary is
 *  removed. Returns a status; the set is finished either way (tide_outset_abort is then a
 *  no-op apart from freeing). */
TIDE_API int tide_outset_commit(tide_outset *s);

/** Remove every temporary of the set and free it (also after a commit: then it only frees). */
TIDE_API void tide_outset_abort(tide_outset *s);

/** Refuse, before any work, an output of @p outputs that is the same file as one of
 *  @p inputs (same device and inode: the same name, a symlink or a hard link to it; an input
 *  FILE[ext] is its FILE), or that is the same file or the same final name as an earlier
 *  output. NULL, empty and "-" (standard output) entries are skipped, and so are inputs that
 *  do not exist. Returns TIDE_E_INVAL naming both files, or 0. */
TIDE_API int tide_outputs_check(const char *const *inputs, int nin, const char *const *outputs,
                                int nout);

#ifdef __cplusplus
}
#endif
#endif
