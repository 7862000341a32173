/* fuzz_common.h — what every libFuzzer harness of fuzz/ shares: tide reads inputs by name, so
 * each input is written to a file of this process in /dev/shm (memory, no disk), under a name
 * of its own per process (libFuzzer's -jobs/-fork run several at once). */
#ifndef TIDE_FUZZ_COMMON_H
#define TIDE_FUZZ_COMMON_H
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tide/status.h"

/* The directory for the inputs: /dev/shm where it exists, else $TMPDIR or /tmp. */
static inline const char *fuzz_dir(void) {
    if (access("/dev/shm", W_OK) == 0)
        return "/dev/shm";
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* The name of this process's input file for harness @p tag, ending in @p ext (".fits"...):
 * made once, reused for every input; removed at exit. */
static char fuzz_path_buf[512];
static inline void fuzz_remove_at_exit(void) {
    unlink(fuzz_path_buf);
}
static inline const char *fuzz_path(const char *tag, const char *ext) {
    if (!fuzz_path_buf[0]) {
        snprintf(fuzz_path_buf, sizeof fuzz_path_buf, "%s/tide-fuzz-%s-%ld%s", fuzz_dir(), tag,
                 (long)getpid(), ext);
        atexit(fuzz_remove_at_exit);
    }
    return fuzz_path_buf;
}

/* Write @p size bytes to @p path (truncated first). 0, or -1 when the file cannot be written
 * (then the harness skips the input: that is the machine's fault, not tide's). */
static inline int fuzz_write(const char *path, const uint8_t *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    return close(fd);
}

#endif
