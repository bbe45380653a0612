/* Finds the GPU through the driver API, opened with dlopen (see device.h). Only the few entry
 * points needed here are resolved; the runtime's own loader grows from this one. */
#include "device.h"

#include <cuda.h> /* types and enums only: nothing links libcuda */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "util.h"


static struct {
    int loaded; /* 0 not tried, 1 ok, -1 failed */
    char why[256];
    CUresult (*init)(unsigned);
    CUresult (*get_count)(int *);
    CUresult (*get)(CUdevice *, int);
    CUresult (*get_name)(char *, int, CUdevice);
    CUresult (*get_attr)(int *, CUdevice_attribute, CUdevice);
    CUresult (*total_mem)(size_t *, CUdevice);
    CUresult (*error_string)(CUresult, const char **);
    /* optional: the kernels on the tensor memory accelerator need it (sm_90 drivers have it) */
    CUresult (*encode_tiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                             const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                             CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                             CUtensorMapFloatOOBfill);
    /* optional: what a graph's kernel node launches (tt-bench --profile's kernels by op) */
    CUresult (*node_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2 *);
    CUresult (*func_name)(const char **, CUfunction);
    CUresult (*kernel_name)(const char **, CUkernel);
} cu;

static const char *cu_error(CUresult r)
{
    const char *s = NULL;
    if (cu.error_string) cu.error_string(r, &s);
    return s ? s : "unknown CUDA error";
}

static int load_driver(void)
{
    if (cu.loaded) return cu.loaded;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(cu.why, sizeof cu.why,
                 "no CUDA device: libcuda.so.1 not found (no NVIDIA driver on this machine)");
        return cu.loaded = -1;
    }
#define SYM(field, name)                                                                           \
    if (!(*(void **)&cu.field = dlsym(h, name))) {                                                 \
        snprintf(cu.why, sizeof cu.why, "no CUDA device: the driver lacks %s (too old?)", name);   \
        return cu.loaded = -1;                                                                     \
    }
    SYM(init, "cuInit")
    SYM(get_count, "cuDeviceGetCount")
    SYM(get, "cuDeviceGet")
    SYM(get_name, "cuDeviceGetName")
    SYM(get_attr, "cuDeviceGetAttribute")
    SYM(total_mem, "cuDeviceTotalMem_v2")
    SYM(error_string, "cuGetErrorString")
#undef SYM
    *(void **)&cu.encode_tiled = dlsym(h, "cuTensorMapEncodeTiled");
    *(void **)&cu.node_params = dlsym(h, "cuGraphKernelNodeGetParams_v2");
    *(void **)&cu.func_name = dlsym(h, "cuFuncGetName");
    *(void **)&cu.kernel_name = dlsym(h, "cuKernelGetName");
    CUresult r = cu.init(0);
    if (r != CUDA_SUCCESS) {
        snprintf(cu.why, sizeof cu.why, "no CUDA device: cuInit failed: %s", cu_error(r));
        return cu.loaded = -1;
    }
    return cu.loaded = 1;
}

int tt_device_count(char *why, size_t whylen)
{
    if (load_driver() < 0) return tt_errf(why, whylen, "%s", cu.why);
    int count = 0;
    const CUresult r = cu.get_count(&count);
    if (r != CUDA_SUCCESS) return tt_errf(why, whylen, "no CUDA device: %s", cu_error(r));
    return count;
}

int tt_device_query(int ordinal, tt_device_info *info, char *why, size_t whylen)
{
    if (load_driver() < 0) return tt_errf(why, whylen, "%s", cu.why);
    int count = 0;
    CUresult r = cu.get_count(&count);
    if (r != CUDA_SUCCESS) return tt_errf(why, whylen, "no CUDA device: %s", cu_error(r));
    if (count == 0) return tt_errf(why, whylen, "no CUDA device: the driver sees none");
    if (ordinal < 0 || ordinal >= count)
        return tt_errf(why, whylen, "no CUDA device %d (this machine has %d)", ordinal, count);
    CUdevice dev;
    memset(info, 0, sizeof *info);
    info->ordinal = ordinal;
    if ((r = cu.get(&dev, ordinal)) != CUDA_SUCCESS ||
        (r = cu.get_name(info->name, (int)sizeof info->name, dev)) != CUDA_SUCCESS ||
        (r = cu.get_attr(&info->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) != CUDA_SUCCESS ||
        (r = cu.get_attr(&info->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) != CUDA_SUCCESS ||
        (r = cu.get_attr(&info->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) != CUDA_SUCCESS ||
        (r = cu.total_mem(&info->total_mem, dev)) != CUDA_SUCCESS)
        return tt_errf(why, whylen, "CUDA device %d: %s", ordinal, cu_error(r));
    return 0;
}

int tt_device_tensor_map(void *map, const void *base, int rank, const uint64_t *dims, const uint64_t *strides,
                         const uint32_t *box, int swizzle_bytes, char *why, size_t whylen)
{
    _Static_assert(sizeof(CUtensorMap) == TT_TENSOR_MAP_BYTES, "a tensor map is 128 bytes");
    if (load_driver() < 0) return tt_errf(why, whylen, "%s", cu.why);
    if (!cu.encode_tiled) return tt_errf(why, whylen, "the CUDA driver lacks cuTensorMapEncodeTiled (too old?)");
    if (rank < 1 || rank > 5) return tt_errf(why, whylen, "a tensor map of rank %d", rank);
    const CUtensorMapSwizzle sw = swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                  : swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                  : swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                                         : CU_TENSOR_MAP_SWIZZLE_NONE;
    cuuint64_t dim[5], stride[4];
    cuuint32_t bx[5], step[5];
    for (int i = 0; i < rank; i++) {
        dim[i] = dims[i], bx[i] = box[i], step[i] = 1;
        if (i + 1 < rank) stride[i] = strides[i];
    }
    const CUresult r = cu.encode_tiled((CUtensorMap *)map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, (cuuint32_t)rank,
                                       (void *)base, dim, stride, bx, step, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                                       CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return tt_errf(why, whylen, "cuTensorMapEncodeTiled (rank %d, %llu x %llu..., box %u x %u...): %s", rank,
                       (unsigned long long)dims[0], (unsigned long long)(rank > 1 ? dims[1] : 1), box[0],
                       rank > 1 ? box[1] : 1, cu_error(r));
    return 0;
}

int tt_device_kernel_node(void *node, const void **kernel, const char **name)
{
    *kernel = NULL, *name = NULL;
    if (load_driver() < 0 || !cu.node_params) return -1;
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    memset(&p, 0, sizeof p);
    if (cu.node_params((CUgraphNode)node, &p) != CUDA_SUCCESS) return -1;
    *kernel = p.kern;
    if (p.func && cu.func_name && cu.func_name(name, p.func) == CUDA_SUCCESS && *name) return 0;
    *name = NULL;
    if (p.kern && cu.kernel_name && cu.kernel_name(name, p.kern) == CUDA_SUCCESS && *name) return 0;
    *name = NULL;
    return 0;
}
