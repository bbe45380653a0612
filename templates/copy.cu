// ttgen: needs copy_rows.cuh
// Rows of bytes copied from one pitch to another, many arrays in one launch: the padded copies
// of the weights the products read (gpu_model.c's padded: Transformer-XL's D and H d_head of
// 410 in rows of 416, the FFN's F of 2100 in 2104), rewritten from the storage-type masters
// after every Adam step. One launch for every padded weight of the model, where a memory copy
// node each had cost a node apiece (80 a txl-wt103-base step, 12 a wt103 step).
//   job j: rows[j] rows of row_bytes[j] bytes, from src[j] + r * src_pitch[j] to
//          dst[j] + r * dst_pitch[j]
// Nothing else is written: the bytes between a destination's rows (the padding, zero since the
// arena was zeroed) are left as they were.
// A job is TT_COPY_FIELDS 64-bit values in device memory (a table the caller builds once, laid
// out as copy_rows.cuh says). blockIdx.y is the job; a warp
// copies a row in the widest access that divides both addresses, both pitches and the row's
// length (16, 8, 4, 2 or 1 bytes), chosen per job, the same for each of its rows; the warps of
// blockIdx.x's blocks take rows in turn.
// Constants: TT_THREADS (whole warps).
// Tunable (ttgen --tune; the plan's heuristic otherwise):
// ttgen: tunable copy_rows THREADS 128 256 512

#ifdef TT_OP_COPY_ROWS
template <typename W>
__device__ __forceinline__ void tt_copy_row(char *__restrict__ d, const char *__restrict__ s,
                                            long long bytes, int lane)
{
    const long long n = bytes / (long long)sizeof(W);
    const W *sw = reinterpret_cast<const W *>(s);
    W *dw = reinterpret_cast<W *>(d);
    for (long long i = lane; i < n; i += 32) dw[i] = sw[i];
}

extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(const long long *__restrict__ jobs, int njobs)
{
    tt_pdl_begin();
    if ((int)blockIdx.y >= njobs) return;
    const long long *q = jobs + (size_t)blockIdx.y * TT_COPY_FIELDS;
    const char *src = reinterpret_cast<const char *>(q[TT_COPY_SRC]);
    char *dst = reinterpret_cast<char *>(q[TT_COPY_DST]);
    const long long sp = q[TT_COPY_SRC_PITCH], dp = q[TT_COPY_DST_PITCH];
    const long long bytes = q[TT_COPY_ROW_BYTES], rows = q[TT_COPY_ROWS];
    const unsigned long long a = (unsigned long long)q[TT_COPY_SRC] | (unsigned long long)q[TT_COPY_DST] |
                                 (unsigned long long)sp | (unsigned long long)dp |
                                 (unsigned long long)bytes;
    constexpr int warps = TT_THREADS / 32;
    const int lane = threadIdx.x % 32;
    for (long long r = (long long)blockIdx.x * warps + threadIdx.x / 32; r < rows;
         r += (long long)gridDim.x * warps) {
        const char *s = src + r * sp;
        char *d = dst + r * dp;
        if (a % 16 == 0) tt_copy_row<uint4>(d, s, bytes, lane);
        else if (a % 8 == 0) tt_copy_row<uint2>(d, s, bytes, lane);
        else if (a % 4 == 0) tt_copy_row<unsigned>(d, s, bytes, lane);
        else if (a % 2 == 0) tt_copy_row<unsigned short>(d, s, bytes, lane);
        else tt_copy_row<unsigned char>(d, s, bytes, lane);
    }
}
#endif
