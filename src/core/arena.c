/* arena.c — host bump allocator: plan a workspace once, hand out slices, free all at once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tide/memory.h"
#include "tide/status.h"

#define ARENA_ALIGN 64
#define ARENA_DEFAULT_BLOCK ((size_t)1 << 20)

struct tide_arena_block {
    struct tide_arena_block *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    unsigned char *base; /* 64-byte aligned start of usable bytes */
};

void tide_arena_init(tide_arena *a, size_t block_size) {
    memset(a, 0, sizeof *a);
    a->block_size = block_size ? block_size : ARENA_DEFAULT_BLOCK;
}

static struct tide_arena_block *block_new(size_t size) {
    struct tide_arena_block *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    void *mem = NULL;
    if (posix_memalign(&mem, ARENA_ALIGN, size)) {
        free(b);
        return NULL;
    }
    b->next = NULL;
    b->size = size;
    b->used = 0;
    b->base = mem;
    return b;
}

void *tide_arena_alloc(tide_arena *a, size_t bytes) {
    size_t need = (bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (need < bytes) {
        tide_error(TIDE_E_NOMEM, "arena: request of %zu bytes overflows", bytes);
        return NULL;
    }
    struct tide_arena_block *b = a->head;
    if (!b || b->size - b->used < need) {
        size_t size = need > a->block_size ? need : a->block_size;
        b = block_new(size);
        if (!b) {
            tide_error(TIDE_E_NOMEM, "arena: cannot allocate %zu bytes", size);
            return NULL;
        }
        b->next = a->head;
        a->head = b;
    }
    void *p = b->base + b->used;
    b->used += need;
    a->used += need;
    if (a->used > a->peak)
        a->peak = a->used;
    return p;
}

void *tide_arena_calloc(tide_arena *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) {
        tide_error(TIDE_E_NOMEM, "arena: %zu x %zu bytes overflows", n, size);
        return NULL;
    }
    void *p = tide_arena_alloc(a, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void tide_arena_reset(tide_arena *a) {
    /* Keep the largest block so a planned workspace is reused without touching malloc. */
    struct tide_arena_block *keep = NULL;
    for (struct tide_arena_block *b = a->head; b; b = b->next)
        if (!keep || b->size > keep->size)
            keep = b;
    struct tide_arena_block *b = a->head;
    while (b) {
        struct tide_arena_block *next = b->next;
        if (b != keep) {
            free(b->base);
            free(b);
        }
        b = next;
    }
    if (keep) {
        keep->next = NULL;
        keep->used = 0;
    }
    a->head = keep;
    a->used = 0;
}

void tide_arena_free(tide_arena *a) {
    struct tide_arena_block *b = a->head;
    while (b) {
        struct tide_arena_block *next = b->next;
        free(b->base);
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used = 0;
}
