/* test_files.h — comparing output files byte for byte in the unit tests. */
#ifndef TIDE_TEST_FILES_H
#define TIDE_TEST_FILES_H
#include <stdint.h>
#include <stdio.h>

/* The size of files @p a and @p b when both exist and hold the same bytes, else -1 (the
 * first differing byte is reported on stderr). */
static inline int64_t tide_test_same_file(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int64_t size = fa && fb ? 0 : -1;
    while (size >= 0) {
        const int ca = getc(fa), cb = getc(fb);
        if (ca != cb) {
            fprintf(stderr, "%s and %s differ at byte %lld\n", a, b, (long long)size);
            size = -1;
        }
        if (ca == EOF || cb == EOF)
            break;
        size++;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return size;
}

#endif
