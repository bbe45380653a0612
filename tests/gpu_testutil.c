/* GPU test set-up (see gpu_testutil.h). */
#include "gpu_testutil.h"

#include <stdio.h>

int tu_gpu_open(tt_gpu *gpu, tt_cache *cache, uint64_t seed)
{
    char why[512];
    if (tt_gpu_open(gpu, 0, why, sizeof why) != 0) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    printf("%s (%s, %d SMs); seed %llu (TT_TEST_SEED reproduces)\n", gpu->name, gpu->arch,
           gpu->sm_count, (unsigned long long)seed);
    if (tt_cache_open(cache, NULL, why, sizeof why) != 0) {
        fprintf(stderr, "%s\n", why);
        tt_gpu_close(gpu);
        return 1;
    }
    return 0;
}

void tu_gpu_close(tt_gpu *gpu, tt_cache *cache)
{
    tt_cache_close(cache);
    tt_gpu_close(gpu);
}
