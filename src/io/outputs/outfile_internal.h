/* outfile_internal.h — what outfile.c, outfile_sweep.c and outset.c share. Not public. */
#ifndef TIDE_OUTFILE_INTERNAL_H
#define TIDE_OUTFILE_INTERNAL_H
#include <stddef.h>

/** The start of every private directory's name: ".tide-HOST-PID-XXXXXX". */
#define TIDE_OUTFILE_PREFIX ".tide-"

/** Directory part of @p path ("." when it has none, "/" for a name in the root). */
void tide_outfile_dir_of(const char *path, char *dir, size_t n);

/** fsync a directory (best effort), making renames in it durable. */
void tide_outfile_sync_dir(const char *dir);

#endif
