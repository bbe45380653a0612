// Forty-second session's probe (fourth version: 128 x 256 tiles; blocks of 4 j x 16 k (32-byte rows)
// or of 1 j x 64 k (128-byte rows), to see what the copy engine's row size costs): the materialized attention's Y = T Wo^T under the causal mask as
// a staircase product of our own (TMA + wgmma, sm_90a) against cuBLAS's dense product. T's rows
// in the positions' order (i B + b), its columns (j, k) as the model has them; a block of 128 rows
// (positions up to imax) walks only the blocks of 4 j x 16 k that hold a (j, k) with both up to
// imax: about 0.4 of the dense product's work at N 80. Y written in the sequences' order.
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o /tmp/sp stair_probe.cu -lcublas -lcuda && /tmp/sp
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#define CB(x) do { cublasStatus_t s = (x); if (s) { printf("%s:%d cublas %d\n", __FILE__, __LINE__, (int)s); exit(1); } } while (0)

// A stage: one block (J, K) of 4 j x 16 k, four k16 steps: T's 128 rows and Wo's 256 features of
// it, one box each, [4 j][rows][16 k]: 32-byte rows with the 32-byte swizzle.
constexpr int BM = 128, BN = 256, STAGES = 4;
constexpr int A_SUB = BM * 32, B_SUB = BN * 32, A_BYTES = 4 * A_SUB, B_BYTES = 4 * B_SUB;
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int SMEM = STAGES * STAGE_BYTES + 2 * STAGES * 8 + 1024;

struct __align__(64) tmap { unsigned long long v[16]; };

__device__ __forceinline__ unsigned saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void bar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_expect(unsigned bar, unsigned tx)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(tx) : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity)
{
    asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void box3d(unsigned dst, unsigned bar, const tmap *map, int x, int y, int z)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst), "l"((unsigned long long)map), "r"(x), "r"(y),
                 "r"(z), "r"(bar)
                 : "memory");
}
// K-major, 128-byte swizzle: atoms of 8 rows of 128 bytes, 1024 bytes apart; a k16 step moves
// the start 32 bytes along the row
__device__ __forceinline__ unsigned long long desc_sw128(unsigned a)
{
    return (unsigned long long)((a & 0x3FFFF) >> 4) | 1ull << 16 | (unsigned long long)(1024 >> 4) << 32 | 1ull << 62;
}
__device__ __forceinline__ unsigned long long desc_sw32(unsigned a)
{
    return (unsigned long long)((a & 0x3FFFF) >> 4) | 1ull << 16 | (unsigned long long)(256 >> 4) << 32 | 3ull << 62;
}
__device__ __forceinline__ void box4d(unsigned dst, unsigned bar, const tmap *map, int x, int y, int z, int w)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst), "l"((unsigned long long)map), "r"(x), "r"(y),
                 "r"(z), "r"(w), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int n> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(n) : "memory"); }
__device__ __forceinline__ void wg_mma_n256(float (&d)[128], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db)
                 : "memory");
}

// grid (ceil(D / BN), ceil(rows / BM), splits); block 384: warpgroup 0 loads (one thread), 1 and
// 2 multiply 64 rows each. A row tile whose last row is at position imax walks the blocks (J, K)
// with 4 J, 16 K <= imax. splits > 1: fp32 partials part[z][row][D] in the positions' order.
template <int MODE>
__global__ void __launch_bounds__(384, 1)
stair_fwd(const __grid_constant__ tmap mt, const __grid_constant__ tmap mw, __nv_bfloat16 *__restrict__ y,
          float *__restrict__ part, int B, int N, int D, int rows, int all)
{
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem = (unsigned char *)(((unsigned long long)smem_raw + 1023) & ~1023ull);
    const unsigned base = saddr(smem), full = base + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int mt_i = gridDim.y - 1 - blockIdx.y; // the longest walks first
    const int row0 = mt_i * BM, n0 = blockIdx.x * BN;
    const int seen = all ? N : (min(row0 + BM, rows) - 1) / B + 1; // positions up to the tile's last row
    const int nk = MODE ? (seen + 63) / 64 : (seen + 15) / 16;
    const int S = (MODE ? seen : (seen + 3) / 4) * nk, z = blockIdx.z, nz = gridDim.z;
    const int s0 = (int)((long)S * z / nz), s1 = (int)((long)S * (z + 1) / nz);
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) bar_init(full + 8 * s, 1), bar_init(empty + 8 * s, 2);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0)
            for (int st = 0; st < s1 - s0; st++) {
                const int s = st % STAGES;
                if (st >= STAGES) bar_wait(empty + 8 * s, ((st / STAGES) & 1) ^ 1);
                bar_expect(full + 8 * s, STAGE_BYTES);
                const unsigned sa = base + s * STAGE_BYTES;
                const int J = (s0 + st) / nk, K = (s0 + st) % nk;
                if (MODE) {
                    box3d(sa, full + 8 * s, &mt, 64 * K, J, row0);
                    box3d(sa + A_BYTES, full + 8 * s, &mw, 64 * K, J, n0);
                } else {
                    box4d(sa, full + 8 * s, &mt, 0, row0, 4 * J, K);
                    box4d(sa + A_BYTES, full + 8 * s, &mw, 0, n0, 4 * J, K);
                }
            }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int cw = wg - 1;
        float acc[128];
#pragma unroll
        for (int i = 0; i < 128; i++) acc[i] = 0.f;
        for (int st = 0; st < s1 - s0; st++) {
            const int s = st % STAGES;
            bar_wait(full + 8 * s, (st / STAGES) & 1);
            const unsigned sb = base + s * STAGE_BYTES + A_BYTES;
            wg_fence();
            if (MODE) {
                const unsigned sa = base + s * STAGE_BYTES + cw * 64 * 128;
#pragma unroll
                for (int q = 0; q < 4; q++) wg_mma_n256(acc, desc_sw128(sa + 32 * q), desc_sw128(sb + 32 * q));
            } else {
                const unsigned sa = base + s * STAGE_BYTES + cw * 64 * 32;
#pragma unroll
                for (int q = 0; q < 4; q++) wg_mma_n256(acc, desc_sw32(sa + q * A_SUB), desc_sw32(sb + q * B_SUB));
            }
            wg_commit();
            wg_wait<1>();
            if (st > 0 && tid == 0) bar_arrive(empty + 8 * ((st - 1) % STAGES));
        }
        wg_wait<0>();
        const int lane = tid % 32, w4 = tid / 32;
#pragma unroll
        for (int i = 0; i < 128; i += 2) {
            const int col = n0 + (i / 4) * 8 + (lane % 4) * 2;
            const int r = row0 + cw * 64 + w4 * 16 + lane / 4 + 8 * ((i / 2) % 2);
            if (r >= rows || col >= D) continue;
            if (nz == 1) {
                const int pos = r / B, b = r % B;
                *(__nv_bfloat162 *)(y + ((size_t)b * N + pos) * D + col) = __floats2bfloat162_rn(acc[i], acc[i + 1]);
            } else {
                *(float2 *)(part + ((size_t)z * rows + r) * D + col) = make_float2(acc[i], acc[i + 1]);
            }
        }
    }
}

__global__ void sum_parts(__nv_bfloat16 *y, const float *part, int nz, int B, int N, int D, int rows)
{
    const size_t total = (size_t)rows * D;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        float s = 0.f;
        for (int z = 0; z < nz; z++) s += part[z * total + e];
        const int r = (int)(e / D), d = (int)(e % D), pos = r / B, b = r % B;
        y[((size_t)b * N + pos) * D + d] = __float2bfloat16(s);
    }
}

__global__ void fill_t(__nv_bfloat16 *p, int B, int N, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t nn = (size_t)N * N;
        const int r = (int)(i / nn), j = (int)(i % nn / N), k = (int)(i % N), pos = r / B;
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        p[i] = __float2bfloat16(B ? (j <= pos && k <= pos ? ((h & 0xffff) / 65536.f - 0.5f) : 0.f) : ((h & 0xffff) / 65536.f - 0.5f));
    }
}

static cublasHandle_t H;
template <typename F> static float time_ms(F f)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) f();
    std::vector<float> v;
    for (int r = 0; r < 15; r++) {
        CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); v.push_back(ms);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// [outer][j][k] viewed as (k % 16, outer, j, k / 16): a box (16, box_outer, 4, 1) is the block of
// 4 j x 16 k at (4 J, 16 K) for box_outer rows, laid out [4 j][box_outer][16 k]
static void make_map(tmap *m, void *base, int N, long outer, int box_outer)
{
    cuuint64_t dim[4] = {16, (cuuint64_t)outer, (cuuint64_t)N, (cuuint64_t)N / 16};
    cuuint64_t stride[3] = {(cuuint64_t)N * N * 2, (cuuint64_t)N * 2, 32};
    cuuint32_t box[4] = {16, (cuuint32_t)box_outer, 4, 1}, step[4] = {1, 1, 1, 1};
    CUresult r = cuTensorMapEncodeTiled((CUtensorMap *)m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, base, dim, stride, box, step,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r) { printf("cuTensorMapEncodeTiled: %d\n", (int)r); exit(1); }
}

// [outer][j][k] as (k, j, outer): a box (64, 1, box_outer) is 64 k of one j, 128-byte rows
static void make_map64(tmap *m, void *base, int N, long outer, int box_outer)
{
    cuuint64_t dim[3] = {(cuuint64_t)N, (cuuint64_t)N, (cuuint64_t)outer};
    cuuint64_t stride[2] = {(cuuint64_t)N * 2, (cuuint64_t)N * N * 2};
    cuuint32_t box[3] = {64, 1, (cuuint32_t)box_outer}, step[3] = {1, 1, 1};
    CUresult r = cuTensorMapEncodeTiled((CUtensorMap *)m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, base, dim, stride, box, step,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r) { printf("cuTensorMapEncodeTiled: %d\n", (int)r); exit(1); }
}

static float bf(__nv_bfloat16 x) { return __bfloat162float(x); }

int main(int argc, char **argv)
{
    const bool quick = argc > 1; // one shape, one launch: for compute-sanitizer
    CB(cublasCreate(&H));
    void *ws; CK(cudaMalloc(&ws, 64 << 20)); CB(cublasSetWorkspace(H, ws, 64 << 20));
    CK(cudaFuncSetAttribute(stair_fwd<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    CK(cudaFuncSetAttribute(stair_fwd<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    struct { int b, n, d; const char *name; } shapes[] = {
        {32, 80, 1024, "lm1b body (B 32, N 80, D 1024)"}, {16, 160, 1024, "d1024-n160 (B 16)"},
        {16, 160, 512, "d512-n160 (B 16)"}, {32, 80, 512, "d512-n80 (B 32)"}, {60, 80, 256, "wt103 shapes (B 60, N 80, D 256)"},
        {80, 32, 512, "d512-n32 (B 80)"}, {32, 80, 384, "d384-n80 (B 32)"}};
    for (auto &s : shapes) {
        const int rows = s.b * s.n, K = s.n * s.n, D = s.d;
        __nv_bfloat16 *T, *W, *Y, *Yd;
        float *part;
        CK(cudaMalloc(&T, (size_t)rows * K * 2)); CK(cudaMalloc(&W, (size_t)K * D * 2));
        CK(cudaMalloc(&Y, (size_t)rows * D * 2)); CK(cudaMalloc(&Yd, (size_t)rows * D * 2));
        CK(cudaMalloc(&part, (size_t)4 * rows * D * 4));
        fill_t<<<2048, 256>>>(T, s.b, s.n, (size_t)rows * K, 1);
        fill_t<<<2048, 256>>>(W, 0, s.n, (size_t)K * D, 2);
        CK(cudaDeviceSynchronize());
        tmap mt, mw, mt64, mw64;
        make_map(&mt, T, s.n, rows, BM);
        make_map(&mw, W, s.n, D, BN);
        make_map64(&mt64, T, s.n, rows, BM);
        make_map64(&mw64, W, s.n, D, BN);
        const float one = 1.f, zero = 0.f;
        // dense: Yd' [D, rows] (positions' order) = W'^T T'
        auto dense = [&] {
            CB(cublasGemmEx(H, CUBLAS_OP_T, CUBLAS_OP_N, D, rows, K, &one, W, CUDA_R_16BF, K, T, CUDA_R_16BF, K, &zero, Yd,
                            CUDA_R_16BF, D, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        };
        const double dense_gf = 2.0 * rows * (double)K * D * 1e-9;
        double stair_gf = 0, walk64 = 0;
        for (int m = 0; m < (rows + BM - 1) / BM; m++) {
            const int seen = (std::min((m + 1) * BM, rows) - 1) / s.b + 1;
            stair_gf += 2.0 * BM * ((seen + 3) / 4 * 4) * ((seen + 15) / 16 * 16.0) * D * 1e-9;
            walk64 += 2.0 * BM * seen * ((seen + 63) / 64 * 64.0) * D * 1e-9;
        }
        if (quick) {
            stair_fwd<0><<<dim3((D + BN - 1) / BN, (rows + BM - 1) / BM, 1), 384, SMEM>>>(mt, mw, Y, part, s.b, s.n, D, rows, 0);
            stair_fwd<1><<<dim3((D + BN - 1) / BN, (rows + BM - 1) / BM, 1), 384, SMEM>>>(mt64, mw64, Y, part, s.b, s.n, D, rows, 0);
            CK(cudaDeviceSynchronize());
            printf("quick run done\n");
            return 0;
        }
        const float td = time_ms(dense);
        printf("%s: dense %.4f ms (%.0f TFLOP/s)\n", s.name, td, dense_gf / td);
        dense();
        std::vector<__nv_bfloat16> hd((size_t)rows * D), hs((size_t)rows * D);
        CK(cudaMemcpy(hd.data(), Yd, hd.size() * 2, cudaMemcpyDeviceToHost));
        // the CPU's sums (double) over 24 rows, from the same bf16 inputs
        std::vector<__nv_bfloat16> ht((size_t)K), hw((size_t)K * D);
        CK(cudaMemcpy(hw.data(), W, hw.size() * 2, cudaMemcpyDeviceToHost));
        for (int cfg = 0; cfg < 10; cfg++) {
            const int nz = cfg < 8 ? cfg % 4 + 1 : 1, mode = cfg < 8 ? cfg / 4 : cfg - 8, all = cfg >= 8;
            CK(cudaMemset(Y, 0xff, (size_t)rows * D * 2));
            dim3 grid((D + BN - 1) / BN, (rows + BM - 1) / BM, nz);
            auto run = [&] {
                if (mode) stair_fwd<1><<<grid, 384, SMEM>>>(mt64, mw64, Y, part, s.b, s.n, D, rows, all);
                else stair_fwd<0><<<grid, 384, SMEM>>>(mt, mw, Y, part, s.b, s.n, D, rows, all);
                if (nz > 1) sum_parts<<<4 * prop.multiProcessorCount, 256>>>(Y, part, nz, s.b, s.n, D, rows);
            };
            run();
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(hs.data(), Y, hs.size() * 2, cudaMemcpyDeviceToHost));
            double maxd = 0, maxr = 0, maxc = 0;
            for (int r = 0; r < rows; r++)
                for (int d = 0; d < D; d++) {
                    const int pos = r / s.b, b = r % s.b;
                    const double a = bf(hs[((size_t)b * s.n + pos) * D + d]), c = bf(hd[(size_t)r * D + d]);
                    maxd = std::max(maxd, fabs(a - c)), maxr = std::max(maxr, fabs(c));
                }
            for (int q = 0; q < 24; q++) {
                const int r = (int)((long)q * 7919 % rows);
                CK(cudaMemcpy(ht.data(), T + (size_t)r * K, (size_t)K * 2, cudaMemcpyDeviceToHost));
                const int pos = r / s.b, b = r % s.b;
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int k = 0; k < K; k++) acc += (double)bf(ht[k]) * bf(hw[(size_t)d * K + k]);
                    maxc = std::max(maxc, fabs(acc - bf(hs[((size_t)b * s.n + pos) * D + d])) / (fabs(acc) + 1.0));
                }
            }
            const float ts = time_ms(run);
            const double w = all ? (mode ? (s.n + 63) / 64 * 64.0 / s.n : (s.n + 3) / 4 * 4.0 * ((s.n + 15) / 16 * 16) / s.n / s.n) * dense_gf
                             : mode ? walk64 : stair_gf;
            printf("  %s%s splits %d: %.4f ms, %.2fx dense (walks %.2f of dense, %.0f TFLOP/s of it); max |stair - dense| %.3g of max %.3g; "
                   "against double sums %.3g\n",
                   mode ? "1j x 64k" : "4j x 16k", all ? " every (j, k)" : "", nz, ts, td / ts, w / dense_gf, w / ts, maxd, maxr, maxc);
        }
        cudaFree(T); cudaFree(W); cudaFree(Y); cudaFree(Yd); cudaFree(part);
    }
    return 0;
}
