// The table of templates/copy.cu's copy_rows, in one place: a job is TT_COPY_FIELDS 64-bit
// values, in this order (addresses and bytes; rows a count). gpu/launch.c writes the tables
// (tt_copy_job), the kernel reads them. Valid C and CUDA C++ (as mla_geom.cuh): the host includes
// it, NVRTC compiles it.
#ifndef TT_COPY_ROWS_CUH
#define TT_COPY_ROWS_CUH

enum {
    TT_COPY_SRC,       /* the first source row's address */
    TT_COPY_DST,       /* the first destination row's address */
    TT_COPY_SRC_PITCH, /* bytes from one source row to the next */
    TT_COPY_DST_PITCH, /* and of the destination's */
    TT_COPY_ROW_BYTES, /* bytes a row */
    TT_COPY_ROWS,      /* rows */
    TT_COPY_FIELDS
};

/* templates/adam.cu writes the padded copies itself (no copy_rows after it) for at most this
 * many jobs, a table it keeps in shared memory: TT_ADAM_PAD_SMEM bytes. More jobs than that:
 * copy_rows after Adam, as before. */
#define TT_ADAM_PAD_JOBS 64
#define TT_ADAM_PAD_SMEM (TT_ADAM_PAD_JOBS * TT_COPY_FIELDS * 8)

#endif
