/* The GPU, found lazily: libcuda.so.1 is opened with dlopen on first use, so every binary starts
 * and does its CPU work on a machine without an NVIDIA driver, and says "no CUDA device" there. */
#ifndef TT_DEVICE_H
#define TT_DEVICE_H

#include <stddef.h>

typedef struct {
    int ordinal;
    char name[256];
    int cc_major, cc_minor; /* compute capability */
    int sm_count;
    size_t total_mem;
} tt_device_info;

/* Fills info for device `ordinal`. Returns 0, or -1 with why (e.g. "no CUDA device: libcuda.so.1
 * not found (no NVIDIA driver on this machine)"). */
int tt_device_query(int ordinal, tt_device_info *info, char *why, size_t whylen);

#endif
