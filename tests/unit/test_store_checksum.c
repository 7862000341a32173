/* test_store_checksum.c — the stores' file key (tide_store_file_checksum): the plain SHA-256
 * primitive matches FIPS 180-4 vectors, files up to TIDE_STORE_CHECKSUM_CHUNK give their plain
 * SHA-256 and larger ones the documented tree (SHA-256 of the pieces' digests), whatever the
 * number of threads; a file that cannot be read is TIDE_E_IO. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tide/tide.h"
#include "tide_test.h"

static unsigned char *pattern(int64_t n) {
    unsigned char *b = malloc((size_t)n + 1);
    uint64_t x = 0x243F6A8885A308D3ULL;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b[i] = (unsigned char)(x >> 32);
    }
    return b;
}

/* FIPS 180-4 example vectors through the public primitive (the dispatching path). */
static void test_vectors(void) {
    char h[72];
    tide_store_sha256_hex("abc", 3, h);
    CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    tide_store_sha256_hex("", 0, h);
    CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    const char *m = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                    "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    tide_store_sha256_hex(m, (int64_t)strlen(m), h);
    CHECK(!strcmp(h, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"));
}

/* The long FIPS 180-4 example (one million 'a'), through both the primitive and a file that
 * fits one piece, so the key of a real file is checked against an outside value. */
static void test_million_a(void) {
    const int64_t n = 1000000;
    unsigned char *b = malloc((size_t)n);
    memset(b, 'a', (size_t)n);
    const char *want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    char h[72];
    tide_store_sha256_hex(b, n, h);
    CHECK(!strcmp(h, want));
    char path[] = "/tmp/tide_ck_aXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, b, (size_t)n) == (ssize_t)n);
        close(fd);
        CHECK(tide_store_file_checksum(path, h) == TIDE_OK);
        CHECK(!strcmp(h, want));
        unlink(path);
    }
    free(b);
}

static int write_file(const char *path, const unsigned char *b, int64_t n) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(b, 1, (size_t)n, f);
    fclose(f);
    return w == (size_t)n ? 0 : -1;
}

/* The key of n bytes by the definition in store.h, from the plain primitive. */
static void expected_key(const unsigned char *b, int64_t n, char *out) {
    const int64_t c = TIDE_STORE_CHECKSUM_CHUNK;
    if (n <= c) {
        tide_store_sha256_hex(b, n, out);
        return;
    }
    int64_t np = (n + c - 1) / c;
    unsigned char *dig = malloc((size_t)np * 32);
    for (int64_t k = 0; k < np; k++) {
        char hx[72];
        int64_t len = n - k * c < c ? n - k * c : c;
        tide_store_sha256_hex(b + k * c, len, hx);
        for (int i = 0; i < 32; i++) {
            unsigned v;
            sscanf(hx + 2 * i, "%2x", &v);
            dig[32 * k + i] = (unsigned char)v;
        }
    }
    tide_store_sha256_hex(dig, np * 32, out);
    free(dig);
}

static void test_files(void) {
    const int64_t c = TIDE_STORE_CHECKSUM_CHUNK;
    const int64_t max = 3 * c + 12345;
    unsigned char *b = pattern(max);
    char path[] = "/tmp/tide-cksum-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    /* sizes around the piece boundary: plain up to c, a tree from c + 1 */
    const int64_t sizes[] = {0, 1, 63, 64, 65, 1000000, c - 1, c, c + 1, 2 * c, max};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int64_t n = sizes[i];
        CHECK(write_file(path, b, n) == 0);
        char want[72], got[72] = "";
        expected_key(b, n, want);
        CHECK_OK(tide_store_file_checksum(path, got));
        if (strcmp(want, got)) {
            fprintf(stderr, "size %lld: key %s, expected %s\n", (long long)n, got, want);
            CHECK(0);
        }
    }
#ifdef _OPENMP
    /* one thread gives the same key as many */
    char many[72], one[72];
    CHECK_OK(tide_store_file_checksum(path, many));
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    CHECK_OK(tide_store_file_checksum(path, one));
    omp_set_num_threads(nt);
    CHECK(!strcmp(many, one));
#endif
    /* the plain SHA-256 of a million 'a' (FIPS 180-2 appendix B.3) from a file */
    memset(b, 'a', 1000000);
    CHECK(write_file(path, b, 1000000) == 0);
    char h[72];
    CHECK_OK(tide_store_file_checksum(path, h));
    CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    unlink(path);
    free(b);
    CHECK(tide_store_file_checksum("/nonexistent/x.fits", h) == TIDE_E_IO);
    CHECK(tide_store_file_checksum("/tmp", h) == TIDE_E_IO); /* a directory */
}

int main(void) {
    test_million_a();
    test_vectors();
    test_files();
    return TIDE_TEST_RESULT();
}
