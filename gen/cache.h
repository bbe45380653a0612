/* The on-disk cache of compiled kernels: one file per kernel instance, named by its key (a
 * SHA-256 over everything that changes the CUBIN's bytes). Entries carry their own length and
 * checksum, so a truncated or altered file is detected and rebuilt, never loaded. Writes are
 * atomic (temporary file, fsync, rename), so concurrent ttgen runs cannot corrupt an entry. */
#ifndef TT_CACHE_H
#define TT_CACHE_H

/* The most bytes a cache entry (a cubin and its header) may have: sm_90 cubins of our kernels
 * are tens to hundreds of KB. */
#define TT_CACHE_ENTRY_MAX_BYTES (64u << 20)

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *dir; /* the folder entries live in (version subfolder included) */
} tt_cache;

/* The cache's root folder: flag_dir if set, else $TTGEN_CACHE_DIR, else $XDG_CACHE_HOME/ttgen,
 * else $HOME/.cache/ttgen (malloc'd; NULL when none can be named). Kernels live in a versioned
 * subfolder of it, token ids in tokens/. */
char *tt_cache_root(const char *flag_dir);

/* Chooses the folder: flag_dir if set, else $TTGEN_CACHE_DIR, else $XDG_CACHE_HOME/ttgen, else
 * $HOME/.cache/ttgen; creates it. -1 with a message when it cannot. */
int tt_cache_open(tt_cache *cache, const char *flag_dir, char *err, size_t errlen);
void tt_cache_close(tt_cache *cache);

typedef enum {
    TT_CACHE_HIT,
    TT_CACHE_MISS,    /* no entry */
    TT_CACHE_CORRUPT, /* an entry exists but fails its checks; why says which */
} tt_cache_status;

/* Looks up key. On a hit *cubin and *log are malloc'd (log NUL-terminated). */
tt_cache_status tt_cache_get(const tt_cache *cache, const uint8_t key[32], void **cubin,
                             size_t *cubin_len, char **log, char *why, size_t whylen);

int tt_cache_put(const tt_cache *cache, const uint8_t key[32], const void *cubin, size_t cubin_len,
                 const char *log, char *err, size_t errlen);

/* The entry's path for key (malloc'd). */
char *tt_cache_path(const tt_cache *cache, const uint8_t key[32]);

#endif
