/* sha256.h — the SHA-256 compression function the store's checksum uses (sha256.c): a portable
 * one and, on x86-64 processors with the SHA extensions, one on SHA-NI (sha256_ni.c). */
#ifndef TIDE_STORE_SHA256_H
#define TIDE_STORE_SHA256_H
#include <stddef.h>
#include <stdint.h>

/* Process @p nblocks 64-byte blocks of @p p into the state @p h (FIPS 180-4, §6.2.2). */
typedef void (*tide_sha256_blocks_fn)(uint32_t h[8], const unsigned char *p, size_t nblocks);

/* The portable version (every processor). */
void tide_sha256_blocks_portable(uint32_t h[8], const unsigned char *p, size_t nblocks);

/* The SHA-NI version, or NULL when this build or this processor has none. */
tide_sha256_blocks_fn tide_sha256_blocks_ni(void);

#endif
