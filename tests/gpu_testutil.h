/* What the GPU tests share: the device and the kernel cache, or a clear skip without a device. */
#ifndef TT_GPU_TESTUTIL_H
#define TT_GPU_TESTUTIL_H

#include "cache.h"
#include "gpu.h"

/* Opens device 0 and the kernel cache, and prints the card and the seed. Returns 0, or the
 * exit status the test should end with: 77 (CTest: skipped; the reason printed) without a
 * device, 1 when the cache cannot be opened. */
int tu_gpu_open(tt_gpu *gpu, tt_cache *cache, uint64_t seed);
void tu_gpu_close(tt_gpu *gpu, tt_cache *cache);

#endif
