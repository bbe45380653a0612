// The adaptive softmax's tail clusters (MODEL.md sections 2 and 3; cpu_model.c's output_layer):
// a tail cluster is scored only for the rows whose target it holds. The host lists them per
// cluster (idx [count]: the rows, ascending, then -1 up to a multiple of 64), so that cuBLAS
// runs the cluster's products on dense gathered rows:
//   adaptive_gather       xc[i] = x[idx[i]]          a zero row for padding
//   (cuBLAS, xent)        the cluster's logits, loss and gradient, d xc
//   adaptive_scatter_add  dx[idx[i]] += dxc[i]        padding skipped
// A row's target is in one cluster, so a row of dx is in at most one list: one writer per row,
// and the head's part of it is there before (stream order), as the CPU adds them.
// Constants: TT_D features (d_model), TT_VEC features per thread (divides TT_D), TT_THREADS.
// Rows of x, xc, dx and dxc are ld elements apart (a multiple of TT_VEC); columns from TT_D on
// are neither read nor written.
// Tunable (ttgen --tune; the plan's heuristic otherwise): the gather's threads per block.
// ttgen: tunable adaptive_gather THREADS 64 128 256 512 1024

#ifdef TT_OP_ADAPTIVE_GATHER
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ xc, const TT_T *__restrict__ x, const int *__restrict__ idx, int count,
          int ld)
{
    tt_pdl_begin();
    int i, col;
    if (!tt_row_slot<TT_D, TT_VEC>(count, i, col)) return;
    const int r = idx[i];
    float v[TT_VEC] = {};
    if (r >= 0) tt_load<TT_VEC>(v, x + (size_t)r * ld + col);
    tt_store<TT_VEC>(xc + (size_t)i * ld + col, v);
}
#endif

#ifdef TT_OP_ADAPTIVE_SCATTER_ADD
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dx, const TT_T *__restrict__ dxc, const int *__restrict__ idx,
          int count, int ld)
{
    tt_pdl_begin();
    int i, col;
    if (!tt_row_slot<TT_D, TT_VEC>(count, i, col)) return;
    const int r = idx[i];
    if (r < 0) return;
    float a[TT_VEC], b[TT_VEC];
    tt_load<TT_VEC>(a, dx + (size_t)r * ld + col);
    tt_load<TT_VEC>(b, dxc + (size_t)i * ld + col);
#pragma unroll
    for (int j = 0; j < TT_VEC; j++) a[j] += b[j];
    tt_store<TT_VEC>(dx + (size_t)r * ld + col, a);
}
#endif
