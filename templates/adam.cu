// ttgen: needs copy_rows.cuh
// The optimizer step over the flat fp32 parameter array, as cpu/optim.c does it on the CPU:
//   grad_norm                         norm = ||g||_2; clip = maxnorm / (norm + 1e-6) if it is
//                                     over maxnorm, else 1 (tt_clip_grad_norm)
//   adam                              g' = g * clip (+ weight_decay * w); m, v updated;
//                                     w -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)
//                                     (tt_adam_step)
// lr, bc1 and bc2 (written by the host) and norm and clip (written by grad_norm) are read
// from device memory, so that a step captured in a CUDA graph takes each replay's values.
// The guarded step: adam also reads the gradient's norm and the step's loss sum (when given)
// and leaves w, m and v as they are when either is not finite (a NaN or an infinity anywhere in
// the gradient makes the norm so): the weights stay the last step's without the host looking
// inside the step, and the host, which reads both after the step, reports it.
// With a step guard (tt_step_guard, gpu/launch.h; the trainer's, where it submits a step before
// the last one's result is back): grad_norm's final block decides the step's skip (the norm or
// the loss not finite, or the guard's halt and the last guarded step skipped: the host that
// stops at a non-finite step wants the step it submitted after it to leave the weights alone too)
// and keeps it in *skipped for the next step; adam leaves w, m, v as they are on skip, and where
// the norm or the loss is not finite writes into the guard's first_bad the least index (plus
// base) of a non-finite gradient element, which the host names a tensor by, as the gradient
// itself is the next step's by the time it looks.
// The sum of squares is accumulated in double: a float's square is exact in double, and the sum
// of ~1e8 of them keeps ~1e-16 relative error in any order, so the norm is the CPU's to the last
// float bit (bar ties), and so is the clip factor. Its order is fixed by TT_BLOCKS and TT_THREADS
// alone (grid-stride partials per block, then the last block to finish sums the partials in
// block order, whichever block that is): deterministic.
// Tunable (ttgen --tune; the plan's heuristic otherwise): adam's threads per block (each element's
// arithmetic is the same whatever the grid, so every variant gives the same bits).
// ttgen: tunable adam THREADS 128 256 512 1024
// adam's arithmetic is the CPU's, operation for operation (the _rn intrinsics are never fused
// into FMAs), so w, m and v match the CPU's bit for bit given the same clip factor.
// Constants: TT_THREADS per block; grad_norm: TT_BLOCKS partial sums.

// The step guard (see above), laid out as gpu/launch.h's tt_step_guard.
struct tt_step_guard {
    double halt, skip;
    long long first_bad;
};

// 16-byte accesses need every array aligned to 16 bytes (true of whole cudaMalloc buffers, not of
// any slice): checked at run time, the same answer for every thread.
__device__ __forceinline__ bool tt_aligned16(const void *a, const void *b, const void *c,
                                             const void *d)
{
    return (((unsigned long long)a | (unsigned long long)b | (unsigned long long)c |
             (unsigned long long)d) & 15) == 0;
}

#ifdef TT_OP_GRAD_NORM
// part[blockIdx.x] = the sum of g[i]^2 over this block's grid-stride share of i; the block that
// finishes last (counted in *done, which it leaves at 0 for the next launch) adds the TT_BLOCKS
// partials in a fixed order and writes norm and the clip factor. Several GPUs with the optimizer
// sharded: raw writes the sum of squares of this rank's shard to norm instead (the ranks'
// all-reduce adds them), and a launch over no elements with add (which may be norm) then writes
// the norm and clip factor of that sum.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(double *norm, double *__restrict__ clip, double *part, unsigned *done,
          const float *__restrict__ g, long long n, double maxnorm, int raw, const double *add,
          tt_step_guard *guard, const double *__restrict__ loss, unsigned *skipped)
{
    tt_pdl_begin();
    __shared__ double scratch[32];
    __shared__ unsigned last;
    static_assert(sizeof scratch + sizeof last == TT_SMEM, "the shared memory the plan counted is what the block declares");
    const long long stride = (long long)TT_BLOCKS * TT_THREADS;
    const long long first = (long long)blockIdx.x * TT_THREADS + threadIdx.x;
    double acc = 0;
    long long done_n = 0;
    if (tt_aligned16(g, g, g, g)) {
        const float4 *g4 = reinterpret_cast<const float4 *>(g);
        for (long long i = first; i < n / 4; i += stride) {
            const float4 q = g4[i];
            acc += (double)q.x * q.x + (double)q.y * q.y + (double)q.z * q.z + (double)q.w * q.w;
        }
        done_n = n / 4 * 4;
    }
    for (long long i = done_n + first; i < n; i += stride) acc += (double)g[i] * g[i];
    acc = tt_block_sum(acc, scratch);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = acc;
        __threadfence(); // the partial visible to every block before this block is counted
        last = atomicAdd(done, 1u) == TT_BLOCKS - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    acc = 0;
    for (int i = threadIdx.x; i < TT_BLOCKS; i += TT_THREADS) acc += __ldcg(part + i);
    acc = tt_block_sum(acc, scratch);
    if (threadIdx.x == 0) {
        if (add) acc += *add; // the other ranks' sums (several GPUs: n is 0 then)
        if (raw) { // several GPUs: this rank's sum of squares, for the ranks' all-reduce
            *norm = acc;
        } else {
            const double nn = sqrt(acc);
            *norm = nn;
            *clip = maxnorm > 0 && nn > maxnorm ? maxnorm / (nn + 1e-6) : 1.0;
            if (guard) {
                const bool skip = !isfinite(nn) || (loss && !isfinite(*loss)) ||
                                  (guard->halt != 0 && *skipped != 0);
                guard->skip = skip;
                *skipped = skip;
            }
        }
        *done = 0;
    }
}
#endif

#ifdef TT_OP_ADAM
// One element of tt_adam_step, with tt_clip_grad_norm's scaling of g in front.
__device__ __forceinline__ void tt_adam_one(float &w, float &m, float &v, float g, float clip,
                                            float step, float sbc2, float b1, float b2, float eps,
                                            float wd)
{
    float gi = __fmul_rn(g, clip); // clip is exactly 1 when the norm is under the limit
    if (wd > 0.f) gi = __fadd_rn(gi, __fmul_rn(wd, w));
    m = __fadd_rn(__fmul_rn(b1, m), __fmul_rn(1.f - b1, gi));
    v = __fadd_rn(__fmul_rn(b2, v), __fmul_rn(__fmul_rn(1.f - b2, gi), gi));
    w = __fsub_rn(w, __fdiv_rn(__fmul_rn(step, m), __fadd_rn(__fdiv_rn(__fsqrt_rn(v), sbc2), eps)));
}

// The padded copies (copy_rows' jobs, whose sources are ranges of the storage-type weights: of
// wcopy, or of w itself where there is no wcopy) written here too, so that no copy_rows launch
// follows Adam: an element in a job's source range also goes to its place in the job's
// destination, the same bytes copy_rows would have copied there. The jobs sorted by source
// address, at most TT_ADAM_PAD_JOBS (templates/copy_rows.cuh), in shared memory.
struct tt_adam_pads {
    long long job[TT_ADAM_PAD_JOBS][TT_COPY_FIELDS];
};

// The last of the n jobs whose source starts at or below byte a; -1: none.
__device__ __forceinline__ int tt_adam_pad_last(const tt_adam_pads &p, int n, unsigned long long a)
{
    int lo = -1, hi = n; // job lo starts at or below a (-1: before all), job hi above it
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if ((unsigned long long)p.job[mid][TT_COPY_SRC] <= a) lo = mid;
        else hi = mid;
    }
    return lo;
}

// The elements [i, i + count) of the storage-type weights (base: their array; vals: the values
// stored there) into their padded places, where they have them. One search for the group: no job
// meets it when the last job starting before its end ends before its start (the jobs' sources
// are sorted and disjoint). Else the job of the first element is searched, its row and column
// worked out once (32-bit: a job's source is under 4 GiB, gpu_model.c checks) and stepped
// element by element; a search again only where an element leaves that job.
template <int count>
__device__ __forceinline__ void tt_adam_pad(const tt_adam_pads &p, int n, const char *base,
                                            long long i, const float *vals)
{
    constexpr unsigned es = sizeof(TT_T);
    const unsigned long long a0 = (unsigned long long)(base + i * (long long)es);
    const unsigned long long a1 = a0 + count * es;
    const int last = tt_adam_pad_last(p, n, a1 - 1);
    if (last < 0 || (unsigned long long)p.job[last][TT_COPY_SRC] +
                            (unsigned long long)(p.job[last][TT_COPY_ROWS] * p.job[last][TT_COPY_SRC_PITCH]) <=
                        a0)
        return;
    int j = -1;                   // the job element e is in (-1: not known, or none)
    unsigned long long end = 0;   // its source's end
    unsigned r = 0, c = 0, pitch = 0; // e's row and byte in it, the source's pitch
#pragma unroll
    for (int e = 0; e < count; e++) {
        const unsigned long long a = a0 + e * es;
        if (j >= 0 && a < end) { // the next element of the same job
            c += es;
            if (c >= pitch) c -= pitch, r++;
        } else {
            j = tt_adam_pad_last(p, n, a);
            if (j < 0) continue;
            const unsigned long long start = (unsigned long long)p.job[j][TT_COPY_SRC];
            pitch = (unsigned)p.job[j][TT_COPY_SRC_PITCH];
            end = start + (unsigned long long)p.job[j][TT_COPY_ROWS] * pitch;
            if (a >= end) { // between jobs
                j = -1;
                continue;
            }
            const unsigned off = (unsigned)(a - start);
            r = off / pitch;
            c = off - r * pitch;
        }
        if (c < (unsigned)p.job[j][TT_COPY_ROW_BYTES])
            *reinterpret_cast<TT_T *>(reinterpret_cast<char *>(p.job[j][TT_COPY_DST]) +
                                      (unsigned long long)r * (unsigned long long)p.job[j][TT_COPY_DST_PITCH] + c) =
                tt_store_as<TT_T>(vals[e]);
    }
}

// w, m, v updated in place; wcopy (may be NULL) gets w in the storage type, for the GEMMs, and
// the padded copies their elements (pads: njobs jobs, or none).
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ w, float *__restrict__ m, float *__restrict__ v,
          TT_T *__restrict__ wcopy, const float *__restrict__ g, const double *__restrict__ lr,
          const double *__restrict__ bc1, const double *__restrict__ bc2,
          const double *__restrict__ clip, const double *__restrict__ norm,
          const double *__restrict__ loss, long long n, float beta1, float beta2, float eps,
          float weight_decay, const long long *__restrict__ pads, int npads, tt_step_guard *guard,
          long long base)
{
    tt_pdl_begin();
    __shared__ tt_adam_pads pad;
    static_assert(sizeof pad == TT_SMEM, "the shared memory the plan counted is what the block declares");
    for (int i = threadIdx.x; i < npads * TT_COPY_FIELDS; i += TT_THREADS)
        pad.job[i / TT_COPY_FIELDS][i % TT_COPY_FIELDS] = pads[i];
    __syncthreads();
    // the same for every thread
    const bool nonfinite = !isfinite(*norm) || (loss && !isfinite(*loss));
    if (nonfinite || (guard && guard->skip != 0)) {
        if (nonfinite && guard) // the least index of a non-finite element (each thread's first)
            for (long long i = (long long)blockIdx.x * TT_THREADS + threadIdx.x; i < n;
                 i += (long long)gridDim.x * TT_THREADS)
                if (!isfinite(g[i])) {
                    atomicMin(&guard->first_bad, base + i);
                    break;
                }
        return;
    }
    // the padded copies' source: the storage-type weights (w where they are w itself)
    const char *pbase = wcopy ? reinterpret_cast<const char *>(wcopy) : reinterpret_cast<const char *>(w);
    // As tt_adam_step: the step size and sqrt(bc2) in double, then rounded to float.
    const float step = (float)(*lr / *bc1), sbc2 = (float)sqrt(*bc2), cf = (float)*clip;
    const long long stride = (long long)gridDim.x * TT_THREADS;
    const long long first = (long long)blockIdx.x * TT_THREADS + threadIdx.x;
    long long done = 0;
    if (tt_aligned16(w, m, v, g) && ((unsigned long long)wcopy & (4 * sizeof(TT_T) - 1)) == 0) {
        for (long long i = first; i < n / 4; i += stride) {
            float wq[4], mq[4], vq[4], gq[4];
            tt_load<4>(wq, w + 4 * i);
            tt_load<4>(mq, m + 4 * i);
            tt_load<4>(vq, v + 4 * i);
            tt_load<4>(gq, g + 4 * i);
#pragma unroll
            for (int j = 0; j < 4; j++)
                tt_adam_one(wq[j], mq[j], vq[j], gq[j], cf, step, sbc2, beta1, beta2, eps,
                            weight_decay);
            tt_store<4>(w + 4 * i, wq);
            tt_store<4>(m + 4 * i, mq);
            tt_store<4>(v + 4 * i, vq);
            if (wcopy) tt_store<4>(wcopy + 4 * i, wq);
            if (npads) tt_adam_pad<4>(pad, npads, pbase, 4 * i, wq);
        }
        done = n / 4 * 4;
    }
    for (long long i = done + first; i < n; i += stride) {
        float wi = w[i], mi = m[i], vi = v[i];
        tt_adam_one(wi, mi, vi, g[i], cf, step, sbc2, beta1, beta2, eps, weight_decay);
        w[i] = wi;
        m[i] = mi;
        v[i] = vi;
        if (wcopy) wcopy[i] = tt_store_as<TT_T>(wi);
        if (npads) tt_adam_pad<1>(pad, npads, pbase, i, &wi);
    }
}
#endif
