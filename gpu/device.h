/* The GPU, found lazily: libcuda.so.1 is opened with dlopen on first use, so every binary starts
 * and does its CPU work on a machine without an NVIDIA driver, and says "no CUDA device" there. */
#ifndef TT_DEVICE_H
#define TT_DEVICE_H

#include <stddef.h>
#include <stdint.h>

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
/* The CUDA devices this process sees, or -1 with why ("no CUDA device: ...", or no driver). */
int tt_device_count(char *why, size_t whylen);

/* A CUtensorMap's bytes (the driver's type, 64-byte aligned where a kernel takes it). */
#define TT_TENSOR_MAP_BYTES 128

/* Encodes into map (TT_TENSOR_MAP_BYTES) a bf16 tensor of rank 1..5 at base: dims from the
 * innermost, strides[i] the bytes between steps of dimension i + 1, read in boxes of box[] with
 * the given swizzle (0, 32, 64 or 128 bytes); out-of-range elements read as zeros. Returns 0, or
 * -1 with why (no driver, or a shape the driver refuses). */
int tt_device_tensor_map(void *map, const void *base, int rank, const uint64_t *dims, const uint64_t *strides,
                         const uint32_t *box, int swizzle_bytes, char *why, size_t whylen);

/* What kernel node `node` of a CUDA graph (a cudaGraphNode_t) launches: its kernel handle (a
 * cudaKernel_t where it was launched as one, else NULL) and its name as its module declares it
 * (NULL where the driver cannot say). Returns 0, or -1 where the driver cannot read the node. */
int tt_device_kernel_node(void *node, const void **kernel, const char **name);

#endif
