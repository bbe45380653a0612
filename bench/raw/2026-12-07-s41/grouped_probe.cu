// Forty-first session's probe: the materialized attention's products with Wo under the causal
// mask, as one dense product, as tiles of positions launched one by one (what main does), and as
// the same tiles in one cublasGemmGroupedBatchedEx call. Position i of a sequence sees T's first
// (i+1)^2 columns (columns in max(j,k) order); a tile of positions [p0, p1) of every sequence
// (rows in position order) needs K = p1^2 for Y = T Wo^T, and the columns [0, p1^2) of dT = dY Wo.
//   nvcc -O2 -o /tmp/gp grouped_probe.cu -lcublas && /tmp/gp
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#define CB(x) do { cublasStatus_t s = (x); if (s) { printf("%s:%d cublas %d\n", __FILE__, __LINE__, (int)s); exit(1); } } while (0)

__global__ void fill(__nv_bfloat16 *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        p[i] = __float2bfloat16(((h & 0xffff) / 65536.f - 0.5f));
    }
}

static cublasHandle_t H;
static float one = 1.f, zero = 0.f;

template <typename F> static float time_ms(F f)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) f();
    std::vector<float> v;
    for (int r = 0; r < 15; r++) {
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); v.push_back(ms);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static long tile_end(long t, long tiles, long n) { return (t + 1) * n / tiles; }

// C col-major [m, n] (ldc) = op(A) op(B) in bf16, fp32 compute
static void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A, int lda,
                 const void *B, int ldb, void *C, int ldc)
{
    CB(cublasGemmEx(H, ta, tb, m, n, k, &one, A, CUDA_R_16BF, lda, B, CUDA_R_16BF, ldb, &zero, C,
                    CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

int main()
{
    CB(cublasCreate(&H));
    void *ws; CK(cudaMalloc(&ws, 64 << 20)); CB(cublasSetWorkspace(H, ws, 64 << 20));
    struct { int b, n, d; const char *name; } shapes[] = {
        {32, 80, 1024, "lm1b body (B 32, N 80, D 1024)"}, {16, 160, 1024, "d1024-n160 (B 16, N 160)"},
        {16, 160, 512, "d512-n160"}, {32, 80, 512, "d512-n80 (B 32)"}, {60, 80, 256, "wt103 shapes (B 60, N 80, D 256)"}};
    for (auto &s : shapes) {
        const long rows = (long)s.b * s.n, K = (long)s.n * s.n, D = s.d;
        __nv_bfloat16 *T, *W, *Y, *dY, *dT;
        CK(cudaMalloc(&T, rows * K * 2)); CK(cudaMalloc(&W, K * D * 2)); CK(cudaMalloc(&Y, rows * D * 2));
        CK(cudaMalloc(&dY, rows * D * 2)); CK(cudaMalloc(&dT, rows * K * 2));
        fill<<<1024, 256>>>(T, rows * K, 1); fill<<<1024, 256>>>(W, K * D, 2); fill<<<1024, 256>>>(dY, rows * D, 3);
        CK(cudaDeviceSynchronize());
        // Y' [D, rows] = W'^T [D, K] x T' [K, rows]; dT' [K, rows] = W' [K, D] x dY' [D, rows]
        const double dense_gf = 2.0 * rows * K * D * 1e-9;
        float y1 = time_ms([&] { gemm(CUBLAS_OP_T, CUBLAS_OP_N, D, rows, K, W, K, T, K, Y, D); });
        float d1 = time_ms([&] { gemm(CUBLAS_OP_N, CUBLAS_OP_N, K, rows, D, W, K, dY, D, dT, K); });
        printf("%s: dense Y %.3f ms (%.0f TFLOP/s), dT %.3f ms (%.0f)\n", s.name, y1, dense_gf / y1, d1, dense_gf / d1);
        for (int tiles : {2, 3, 4, 5, 8, 10, 16}) {
            if (s.n % tiles) continue;
            std::vector<int> m(tiles), n(tiles), k(tiles), lda(tiles), ldb(tiles), ldc(tiles), gs(tiles, 1);
            std::vector<cublasOperation_t> ta(tiles), tb(tiles);
            std::vector<float> al(tiles, 1.f), be(tiles, 0.f);
            std::vector<const void *> ha(tiles), hb(tiles); std::vector<void *> hc(tiles);
            std::vector<const void *> ha2(tiles), hb2(tiles); std::vector<void *> hc2(tiles);
            double gf = 0;
            for (int t = 0; t < tiles; t++) {
                const long p0 = t ? tile_end(t - 1, tiles, s.n) : 0, p1 = tile_end(t, tiles, s.n);
                const long r0 = p0 * s.b, nr = (p1 - p0) * s.b;
                m[t] = D, n[t] = nr, k[t] = p1 * p1, lda[t] = K, ldb[t] = K, ldc[t] = D;
                ta[t] = CUBLAS_OP_T, tb[t] = CUBLAS_OP_N;
                ha[t] = W, hb[t] = T + r0 * K, hc[t] = Y + r0 * D;
                ha2[t] = W, hb2[t] = dY + r0 * D, hc2[t] = dT + r0 * K;
                gf += 2.0 * nr * p1 * p1 * D * 1e-9;
            }
            void **da, **db, **dc, **da2, **db2, **dc2;
            CK(cudaMalloc(&da, tiles * 8)); CK(cudaMalloc(&db, tiles * 8)); CK(cudaMalloc(&dc, tiles * 8));
            CK(cudaMalloc(&da2, tiles * 8)); CK(cudaMalloc(&db2, tiles * 8)); CK(cudaMalloc(&dc2, tiles * 8));
            CK(cudaMemcpy(da, ha.data(), tiles * 8, cudaMemcpyHostToDevice)); CK(cudaMemcpy(db, hb.data(), tiles * 8, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dc, hc.data(), tiles * 8, cudaMemcpyHostToDevice)); CK(cudaMemcpy(da2, ha2.data(), tiles * 8, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(db2, hb2.data(), tiles * 8, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dc2, hc2.data(), tiles * 8, cudaMemcpyHostToDevice));
            float ys = time_ms([&] { for (int t = 0; t < tiles; t++) gemm(ta[t], tb[t], m[t], n[t], k[t], ha[t], lda[t], hb[t], ldb[t], hc[t], ldc[t]); });
            float yg = time_ms([&] {
                CB(cublasGemmGroupedBatchedEx(H, ta.data(), tb.data(), m.data(), n.data(), k.data(), al.data(), (const void *const *)da,
                                              CUDA_R_16BF, lda.data(), (const void *const *)db, CUDA_R_16BF, ldb.data(), be.data(),
                                              dc, CUDA_R_16BF, ldc.data(), tiles, gs.data(), CUBLAS_COMPUTE_32F));
            });
            // dT tiles: m = p1^2 columns, n = tile rows, k = D; A = W' (K x D, lda K), B = dY' tile
            std::vector<int> m2(tiles), n2(tiles), k2(tiles), lda2(tiles, (int)K), ldb2(tiles, (int)D), ldc2(tiles, (int)K);
            std::vector<cublasOperation_t> nn(tiles, CUBLAS_OP_N);
            for (int t = 0; t < tiles; t++) m2[t] = k[t], n2[t] = n[t], k2[t] = (int)D;
            float ds = time_ms([&] { for (int t = 0; t < tiles; t++) gemm(CUBLAS_OP_N, CUBLAS_OP_N, m2[t], n2[t], k2[t], ha2[t], K, hb2[t], D, hc2[t], K); });
            float dg = time_ms([&] {
                CB(cublasGemmGroupedBatchedEx(H, nn.data(), nn.data(), m2.data(), n2.data(), k2.data(), al.data(), (const void *const *)da2,
                                              CUDA_R_16BF, lda2.data(), (const void *const *)db2, CUDA_R_16BF, ldb2.data(), be.data(),
                                              dc2, CUDA_R_16BF, ldc2.data(), tiles, gs.data(), CUBLAS_COMPUTE_32F));
            });
            printf("  %2d tiles (%.2f of dense FLOPs): Y one by one %.3f ms, grouped %.3f ms (%.2fx dense); dT one by one %.3f, grouped %.3f (%.2fx dense)\n",
                   tiles, gf / dense_gf, ys, yg, y1 / yg, ds, dg, d1 / dg);
            cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(da2); cudaFree(db2); cudaFree(dc2);
        }
        cudaFree(T); cudaFree(W); cudaFree(Y); cudaFree(dY); cudaFree(dT);
    }
    return 0;
}
