// Shared by every kernel template: the storage types, their conversions, and reductions.
// ttgen pastes this file in front of each instance, so a dumped .cu compiles on its own.
// The instance defines TT_T (the activation storage type: float or tt_bf16) before this text, and
// cpu/rng.h (the counter-based RNG the CPU reference uses) comes just before it.

// bfloat16 as raw bits: no CUDA header is needed, so NVRTC compiles without include paths.
struct __align__(2) tt_bf16 {
    unsigned short bits;
};

#define TT_NEG_INF __uint_as_float(0xff800000u) // NVRTC has no math.h, hence no INFINITY

// Programmatic dependent launch (Hopper on): the runtime may launch a kernel while the one before
// it on the stream is still running (gpu/gpu.c, unless TT_PDL=0), so that its blocks are resident
// and waiting when that one ends instead of being launched then. Every kernel begins with
// tt_pdl_begin(), before any access to global memory: griddepcontrol.wait holds the block until
// the kernels it depends on have completed and their writes are visible (at once when it was
// launched without the attribute), and launch_dependents lets the next kernel's blocks take the
// SMs this kernel's blocks leave. tests/test_pipeline.c checks that every kernel begins so.
__device__ __forceinline__ void tt_pdl_begin()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// tt_pdl_trigger_then_wait(), the other way to begin: the next kernel may launch before this one
// waits. For a kernel with nothing to hand over early, a one-warp clock reading between two kernels
// (prof_mark.cu): the next kernel's blocks are then resident when this one reads, as they are
// without it. The wait still comes before any access to global memory.
__device__ __forceinline__ void tt_pdl_trigger_then_wait()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ float tt_float(float x) { return x; }
__device__ __forceinline__ float tt_float(tt_bf16 x) { return __uint_as_float((unsigned)x.bits << 16); }

template <typename T> __device__ __forceinline__ T tt_store_as(float x);
template <> __device__ __forceinline__ float tt_store_as<float>(float x) { return x; }
template <> __device__ __forceinline__ tt_bf16 tt_store_as<tt_bf16>(float x)
{
    // Round to nearest, ties to even, as the CPU reference does; NaN stays NaN (quiet).
    unsigned u = __float_as_uint(x);
    tt_bf16 r;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        r.bits = (unsigned short)((u >> 16) | 0x40u);
    } else {
        u += 0x7fffu + ((u >> 16) & 1u);
        r.bits = (unsigned short)(u >> 16);
    }
    return r;
}

// Sum over groups of WIDTH consecutive lanes (WIDTH a power of two, at most 32). The butterfly
// gives every lane the same bits: each step adds the same two values, in either order.
template <typename V, int WIDTH> __device__ __forceinline__ V tt_group_sum_of(V v)
{
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o, WIDTH);
    return v;
}
template <int WIDTH> __device__ __forceinline__ float tt_group_sum(float v)
{
    return tt_group_sum_of<float, WIDTH>(v);
}

// N consecutive storage values moved as one access (8 or 16 bytes instead of N small ones).
// The address must be aligned to the whole vector: callers check it or bake N to fit.
template <typename T, int N> struct alignas(sizeof(T) * N) tt_vec {
    T v[N];
};

template <int N, typename T> __device__ __forceinline__ void tt_load(float (&out)[N], const T *p)
{
    const tt_vec<T, N> x = *reinterpret_cast<const tt_vec<T, N> *>(p);
#pragma unroll
    for (int i = 0; i < N; i++) out[i] = tt_float(x.v[i]);
}

template <int N, typename T> __device__ __forceinline__ void tt_store(T *p, const float (&in)[N])
{
    tt_vec<T, N> x;
#pragma unroll
    for (int i = 0; i < N; i++) x.v[i] = tt_store_as<T>(in[i]);
    *reinterpret_cast<tt_vec<T, N> *>(p) = x;
}

// Two values rounded to bf16 and packed (lo in the low half): on sm_80 and later by the
// hardware's conversion, one instruction for both instead of a dozen; its round to nearest even
// is tt_store_as's for every value but NaN, which goes the long way to stay the CPU's quiet NaN.
__device__ __forceinline__ unsigned tt_bf16x2(float lo, float hi)
{
#if __CUDA_ARCH__ >= 800
    if (lo == lo && hi == hi) {
        unsigned r;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
        return r;
    }
#endif
    return (unsigned)tt_store_as<tt_bf16>(lo).bits | (unsigned)tt_store_as<tt_bf16>(hi).bits << 16;
}

// bf16 vectors of an even length: rounded in pairs (an odd length: the generic one, by value)
template <int N> __device__ __forceinline__ void tt_store(tt_bf16 *p, const float (&in)[N])
{
    if constexpr (N % 2 == 0) {
        struct alignas(2 * N) pairs {
            unsigned w[N / 2];
        } x;
#pragma unroll
        for (int i = 0; i < N / 2; i++) x.w[i] = tt_bf16x2(in[2 * i], in[2 * i + 1]);
        *reinterpret_cast<pairs *>(p) = x;
    } else {
        tt_store<N, tt_bf16>(p, in);
    }
}

// Kernels over rows of W features, a thread per VEC of them (a 1-D grid): the thread's row i
// and column col, or false past the end of `count` rows.
template <int W, int VEC> __device__ __forceinline__ bool tt_row_slot(int count, int &i, int &col)
{
    const long long vi = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (vi >= (long long)count * (W / VEC)) return false;
    i = (int)(vi / (W / VEC));
    col = (int)(vi % (W / VEC)) * VEC;
    return true;
}

// Inverted dropout as the CPU reference defines it (cpu_dropout_fwd): element `index` of a site's
// stream is kept when its uniform draw is >= p, and a kept value is scaled by 1 / (1 - p). No mask
// is stored anywhere: a backward pass draws the same numbers again. As an integer comparison of
// the draw's bits with threshold = tt_keep_threshold(p) (exactly the same test), which a kernel
// works out once: left to the compiler it was worked out again for every draw in some kernels
// (embedding_bwd, residual_ln_fwd).
__device__ __forceinline__ bool tt_dropout_kept(uint64_t seed, uint64_t stream, uint64_t index,
                                                unsigned threshold)
{
    return tt_uniform_bits(seed, stream, index) >= threshold;
}

// Sum over a whole block (blockDim.x a multiple of 32); every thread gets the same value, in an
// order fixed by the block size alone. scratch holds 32 values and is free again on return.
template <typename V> __device__ __forceinline__ V tt_block_sum(V v, V *scratch)
{
    v = tt_group_sum_of<V, 32>(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    V s = 0;
    for (int w = 0; w < (int)blockDim.x / 32; w++) s += scratch[w];
    __syncthreads(); // scratch may be written again by the next call
    return s;
}

// --- bf16 tensor cores (mma.sync m16n8k16, sm_80+) and asynchronous copies: the pieces that
// templates/mla_tc.cu and txl_flash.cu share. Only compiled where a kernel calls them.

// Four 8x8 bf16 matrices from shared memory, transposed: lane l gives the address of row l % 8
// of matrix l / 8 (16-byte aligned) and gets, of matrix q, elements (2t, g) and (2t+1, g) in
// register q, which is an m16n8k16 B operand (or A operand) read from a row-major tile.
__device__ __forceinline__ void tt_ldsm_t(unsigned (&r)[4], const tt_bf16 *row)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// The same, not transposed: lane l gives the address of row l % 8 of matrix l / 8 and gets, of
// matrix q, elements (g, 2t) and (g, 2t+1) in register q: an m16n8k16 B operand read from a tile
// stored n-major (rows n, k contiguous), or an A operand from a row-major one.
__device__ __forceinline__ void tt_ldsm(unsigned (&r)[4], const tt_bf16 *row)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// d += a b: one m16n8k16 product, bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void tt_mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair, lo in the low half, each rounded to nearest even.
__device__ __forceinline__ unsigned tt_pack_bf16(float lo, float hi)
{
    unsigned d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

// Element (row, col) of a warp's m16n8 accumulator tile that register e of lane holds.
__device__ __forceinline__ int tt_acc_row(int lane, int e) { return (lane >> 2) + (e >= 2 ? 8 : 0); }
__device__ __forceinline__ int tt_acc_col(int lane, int e) { return (lane & 3) * 2 + (e & 1); }

// 16 bytes from global to shared memory without passing through registers (cp.async, sm_80+):
// the copy lands by the next tt_cp_wait that covers its group. full false: 16 zero bytes (src
// is not read, but must be a valid address).
__device__ __forceinline__ void tt_cp16(void *dst, const void *src, bool full)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(full ? 16 : 0));
}
__device__ __forceinline__ void tt_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most n of this thread's groups are in flight.
template <int n> __device__ __forceinline__ void tt_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(n)); }
