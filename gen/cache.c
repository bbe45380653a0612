/* The kernel cache (see cache.h). Entry layout, little-endian:
 *   "TTKCACHE" | u32 format | u32 0 | key[32] | u64 cubin_len | u64 log_len | sha256[32] | cubin | log
 * where sha256 covers everything before it and the payload, so any flipped byte is caught. */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"
#include "util.h"

#define MAGIC "TTKCACHE"
#define FORMAT 1u
#define HEADER_LEN (8 + 4 + 4 + 32 + 8 + 8)
#define DIGEST_AT HEADER_LEN
#define PAYLOAD_AT (HEADER_LEN + 32)

char *tt_cache_root(const char *flag_dir)
{
    const char *env = getenv("TTGEN_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (flag_dir && *flag_dir) return tt_xstrdup(flag_dir);
    if (env && *env) return tt_xstrdup(env);
    if (xdg && *xdg == '/') return tt_xasprintf("%s/ttgen", xdg);
    if (home && *home) return tt_xasprintf("%s/.cache/ttgen", home);
    return NULL;
}

/* The temporaries tt_write_file_atomic names NAME.tmp.PID.THREAD, of processes no longer running
 * (an interrupted ttgen's, which would stay for ever), removed; a live process's are its own.
 * Only those older than a minute: a cache folder shared with another PID namespace (a
 * container) holds its writers' temporaries under PIDs this one cannot see. */
static void remove_stale_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!tt_pid_gone(tt_temp_pid(e->d_name))) continue;
        char *path = tt_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && time(NULL) - st.st_mtime > 60)
            unlink(path);
        free(path);
    }
    closedir(d);
}

int tt_cache_open(tt_cache *cache, const char *flag_dir, char *err, size_t errlen)
{
    char *base = tt_cache_root(flag_dir);
    if (!base)
        return tt_errf(err, errlen, "no cache folder: set TTGEN_CACHE_DIR or HOME, or pass --cache-dir");
    cache->dir = tt_xasprintf("%s/v%u", base, FORMAT);
    free(base);
    if (tt_mkdir_p(cache->dir, err, errlen) != 0) {
        tt_cache_close(cache);
        return -1;
    }
    remove_stale_temporaries(cache->dir);
    return 0;
}

void tt_cache_close(tt_cache *cache)
{
    free(cache->dir);
    cache->dir = NULL;
}

char *tt_cache_path(const tt_cache *cache, const uint8_t key[32])
{
    char hex[65];
    tt_hex(key, 32, hex);
    return tt_xasprintf("%s/%s.cubin", cache->dir, hex);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void digest(const uint8_t *header, const void *cubin, size_t cubin_len, const char *log,
                   size_t log_len, uint8_t out[32])
{
    tt_sha256_ctx s;
    tt_sha256_init(&s);
    tt_sha256_update(&s, header, HEADER_LEN);
    tt_sha256_update(&s, cubin, cubin_len);
    tt_sha256_update(&s, log, log_len);
    tt_sha256_final(&s, out);
}

tt_cache_status tt_cache_get(const tt_cache *cache, const uint8_t key[32], void **cubin,
                             size_t *cubin_len, char **log, char *why, size_t whylen)
{
    char *path = tt_cache_path(cache, key);
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        free(path);
        return TT_CACHE_MISS;
    }
    char *data;
    size_t len;
    int rc = tt_read_file(path, TT_CACHE_ENTRY_MAX_BYTES, &data, &len, why, whylen);
    free(path);
    if (rc != 0) return TT_CACHE_CORRUPT;

    const uint8_t *p = (const uint8_t *)data;
    tt_cache_status st = TT_CACHE_CORRUPT;
    uint8_t d[32];
    uint64_t clen = 0, llen = 0;
    if (len < PAYLOAD_AT) {
        tt_errf(why, whylen, "truncated header (%zu bytes)", len);
        goto out;
    }
    clen = get_u64(p + 48);
    llen = get_u64(p + 56);
    if (memcmp(p, MAGIC, 8) != 0 || get_u32(p + 8) != FORMAT) {
        tt_errf(why, whylen, "not a cache entry of this format");
    } else if (memcmp(p + 16, key, 32) != 0) {
        tt_errf(why, whylen, "entry holds another key");
    } else if (clen > len || llen > len || PAYLOAD_AT + clen + llen != len) {
        tt_errf(why, whylen, "length %zu does not match its header (%llu)", len,
                (unsigned long long)(PAYLOAD_AT + clen + llen));
    } else if (digest(p, p + PAYLOAD_AT, clen, (const char *)p + PAYLOAD_AT + clen, llen, d),
               memcmp(d, p + DIGEST_AT, 32) != 0) {
        tt_errf(why, whylen, "checksum mismatch");
    } else {
        *cubin = tt_xmalloc(clen);
        memcpy(*cubin, p + PAYLOAD_AT, clen);
        *cubin_len = clen;
        *log = tt_xmalloc(llen + 1);
        memcpy(*log, p + PAYLOAD_AT + clen, llen);
        (*log)[llen] = '\0';
        st = TT_CACHE_HIT;
    }
out:
    free(data);
    return st;
}

int tt_cache_put(const tt_cache *cache, const uint8_t key[32], const void *cubin, size_t cubin_len,
                 const char *log, char *err, size_t errlen)
{
    const size_t log_len = log ? strlen(log) : 0;
    uint8_t header[PAYLOAD_AT];
    memcpy(header, MAGIC, 8);
    put_u32(header + 8, FORMAT);
    put_u32(header + 12, 0);
    memcpy(header + 16, key, 32);
    put_u64(header + 48, cubin_len);
    put_u64(header + 56, log_len);
    digest(header, cubin, cubin_len, log ? log : "", log_len, header + DIGEST_AT);
    const void *parts[] = {header, cubin, log ? log : ""};
    const size_t lens[] = {sizeof header, cubin_len, log_len};
    char *path = tt_cache_path(cache, key);
    int rc = tt_write_file_atomic(path, parts, lens, 3, err, errlen);
    free(path);
    return rc;
}
