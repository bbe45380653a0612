/* Checkpoint files in the safetensors format, so that PyTorch users can load ours and we theirs:
 * an 8-byte little-endian header length N, N bytes of JSON naming each tensor's dtype, shape and
 * byte range, then the raw data. The reader checks everything before it hands out a pointer. */
#ifndef TT_SAFETENSORS_H
#define TT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define TT_ST_MAX_DIMS 8

typedef enum { TT_ST_F32, TT_ST_F16, TT_ST_BF16, TT_ST_F64, TT_ST_I32, TT_ST_I64 } tt_st_dtype;

const char *tt_st_dtype_name(tt_st_dtype d); /* "F32", "BF16", ... as in the file */
size_t tt_st_dtype_size(tt_st_dtype d);      /* bytes per element */

/* One tensor. Raw data in the file's layout: row-major, little-endian. A scalar has ndim 0. */
typedef struct {
    const char *name;
    tt_st_dtype dtype;
    int ndim;
    int64_t shape[TT_ST_MAX_DIMS];
    const void *data;
} tt_st_tensor;

size_t tt_st_nbytes(const tt_st_tensor *t); /* product of the shape times the dtype's size */

/* Writes tensors (in the order given, data in that order) and string metadata (the key
 * "__metadata__", written first), atomically (temporary, fsync, rename). The format allows no
 * gaps between tensors, so alignment comes from order, as in the reference writer: the header is
 * padded with spaces to a multiple of 8 bytes, and each tensor is aligned to its element size when
 * wider dtypes come before narrower ones. Names are PyTorch state_dict keys (UTF-8). -1 with
 * "PATH: reason" in err. */
int tt_st_write(const char *path, const tt_st_tensor *tensors, int n, const char *const *meta_keys,
                const char *const *meta_values, int n_meta, char *err, size_t errlen);

typedef struct tt_st_file tt_st_file;

/* Reads the whole file and validates it: header, every entry, and that the tensors tile the data
 * region exactly. -1 with a one-line "PATH: ..." in err, and *f NULL. */
int tt_st_open(const char *path, tt_st_file **f, char *err, size_t errlen);
int tt_st_count(const tt_st_file *f);
/* Tensors in file (offset) order. data points into the file's buffer and may be unaligned when a
 * writer put a narrow dtype before a wide one: read it with memcpy, or use tt_st_read_f32. */
const tt_st_tensor *tt_st_get(const tt_st_file *f, int i);
const tt_st_tensor *tt_st_find(const tt_st_file *f, const char *name); /* NULL if absent */
int tt_st_meta_count(const tt_st_file *f);
const char *tt_st_meta_key(const tt_st_file *f, int i);       /* in header order */
const char *tt_st_meta(const tt_st_file *f, const char *key); /* NULL if absent */
/* Copies tensor `name` into dst (numel floats) as float32, converting F16, BF16 and F64, after
 * checking its shape against (ndim, shape). Errors name the file, the tensor, and the expected
 * and found shapes. */
int tt_st_read_f32(const tt_st_file *f, const char *name, int ndim, const int64_t *shape,
                   float *dst, char *err, size_t errlen);
void tt_st_close(tt_st_file *f);

#endif
