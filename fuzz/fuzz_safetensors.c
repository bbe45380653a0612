/* libFuzzer target: the safetensors reader (checkpoints, PyTorch state_dicts). A file opens or is
 * refused in one line; an opened one's tensors are read as f32 with their own shapes and its
 * metadata looked up. */
#include <string.h>

#include "fuzz_common.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".safetensors");
    tt_st_file *f;
    char err[512];
    if (tt_st_open(path, &f, err, sizeof err) != 0) {
        if (strchr(err, '\n')) abort();
        return 0;
    }
    for (int i = 0; i < tt_st_meta_count(f); i++) (void)tt_st_meta(f, tt_st_meta_key(f, i));
    for (int i = 0; i < tt_st_count(f); i++) {
        const tt_st_tensor *t = tt_st_get(f, i);
        if (tt_st_find(f, t->name) == NULL) abort();
        const size_t n = tt_st_nbytes(t) / (tt_st_dtype_size(t->dtype) ? tt_st_dtype_size(t->dtype) : 1);
        if (n > (1u << 22)) continue;
        float *x = malloc((n ? n : 1) * sizeof *x);
        if (!x) abort();
        (void)tt_st_read_f32(f, t->name, t->ndim, t->shape, x, err, sizeof err);
        free(x);
    }
    tt_st_close(f);
    return 0;
}
