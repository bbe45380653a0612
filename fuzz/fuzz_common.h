/* What the libFuzzer targets share: the input written to a file of this process's own in
 * /dev/shm (or /tmp), for the readers that take a path. */
#ifndef TT_FUZZ_COMMON_H
#define TT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* libFuzzer's entry point, which each target defines */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[256];
    if (!path[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(path, sizeof path, "%s/tt-fuzz-%ld%s", dir, (long)getpid(), suffix);
    }
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();
    return path;
}

#endif
