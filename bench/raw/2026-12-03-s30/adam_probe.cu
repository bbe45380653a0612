// s30 probe (not part of the build): why the adam kernel takes ~709 us a wt103 step under Nsight
// Compute since the eighteenth session, against ~631 us in sessions 4 to 17, with the same grid
// and (checked by PTX) the same loop. Two changes landed between: b00dc9a put Adam's moments in
// an allocation of their own (before, w, g, m, v and the bf16 copy lay in one, a stride apart),
// and 0ec4a40 made every block read the norm and the loss sum before its loop (the guarded step).
// This times the generated kernel (KSRC: a `ttgen --dump` instance, as generated or edited) over
// n parameters in three layouts and two grids, CUDA events after warm-up, on data that is not
// zeros, beside a device-to-device copy of the same bytes as the card's reference.
//   nvcc -O3 -std=c++17 -arch=sm_90 -DKSRC='"adam.cu"' -DKNAME=adam_THREADS256_bf16 adam_probe.cu
//   ./a.out [n]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#include KSRC

// Two candidate loops of the same arithmetic (tt_adam_one, the generated source's) over the
// aligned path, for main's layout only: HINT loads and stores with the streaming (evict-first)
// hints, nothing of these arrays being read again this step; X2 two float4 groups a thread in
// flight (i and i + stride) before any arithmetic. n a multiple of 4 (wt103's 85,295,346 is not:
// the probe rounds n down for these two; their times are per n as the others').
template <int X2, int HINT>
__global__ void __launch_bounds__(TT_THREADS)
adam_alt(float *__restrict__ w, float *__restrict__ m, float *__restrict__ v, TT_T *__restrict__ wc,
         const float *__restrict__ g, const double *__restrict__ sc, long long n4, float b1,
         float b2, float eps, float wd)
{
    if (!isfinite(sc[4]) || !isfinite(sc[5])) return;
    const float step = (float)(sc[0] / sc[1]), sbc2 = (float)sqrt(sc[2]), cf = (float)sc[3];
    const long long stride = (long long)gridDim.x * TT_THREADS;
    float4 *w4 = (float4 *)w, *m4 = (float4 *)m, *v4 = (float4 *)v;
    const float4 *g4 = (const float4 *)g;
    uint2 *c2 = (uint2 *)wc;
    for (long long i = (long long)blockIdx.x * TT_THREADS + threadIdx.x; i < n4; i += (X2 + 1) * stride) {
        float4 W[2], M[2], V[2], G[2];
        bool in[2] = {true, X2 && i + stride < n4};
#pragma unroll
        for (int u = 0; u <= X2; u++) {
            if (!in[u]) continue;
            const long long k = i + u * stride;
            W[u] = HINT ? __ldcs(w4 + k) : w4[k];
            M[u] = HINT ? __ldcs(m4 + k) : m4[k];
            V[u] = HINT ? __ldcs(v4 + k) : v4[k];
            G[u] = HINT ? __ldcs(g4 + k) : g4[k];
        }
#pragma unroll
        for (int u = 0; u <= X2; u++) {
            if (!in[u]) continue;
            const long long k = i + u * stride;
            float *wq = &W[u].x, *mq = &M[u].x, *vq = &V[u].x, *gq = &G[u].x;
#pragma unroll
            for (int j = 0; j < 4; j++) tt_adam_one(wq[j], mq[j], vq[j], gq[j], cf, step, sbc2, b1, b2, eps, wd);
            const uint2 c = {tt_bf16x2(wq[0], wq[1]), tt_bf16x2(wq[2], wq[3])};
            if (HINT) __stcs(w4 + k, W[u]), __stcs(m4 + k, M[u]), __stcs(v4 + k, V[u]), __stcs(c2 + k, c);
            else w4[k] = W[u], m4[k] = M[u], v4[k] = V[u], c2[k] = c;
        }
    }
}

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));           \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

__global__ void fill(float *p, long long n, unsigned seed, float scale, int positive)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        float u = (h & 0xffffff) / 16777216.0f - 0.5f;
        p[i] = positive ? scale * (u + 0.5f) + 1e-8f : scale * u;
    }
}

static size_t round256(size_t b) { return (b + 255) & ~(size_t)255; }

int main(int argc, char **argv)
{
    const long long n = argc > 1 ? atoll(argv[1]) : 85300000LL / 16 * 16;
    const size_t stride = round256((size_t)(n + 4096) * 4), cbytes = round256((size_t)(n + 4096) * 2);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs; n %lld parameters; kernel %s\n", prop.name, prop.multiProcessorCount, n,
           KSRC);
    double *sc; /* lr, bc1, bc2, clip, norm, loss */
    CK(cudaMalloc(&sc, 6 * sizeof(double)));
    const double host[6] = {2.5e-4, 1 - 0.9 * 0.9, 1 - 0.999 * 0.999, 1.0, 0.2, 12345.0};
    CK(cudaMemcpy(sc, host, sizeof host, cudaMemcpyHostToDevice));

    struct layout { const char *name; float *w, *g, *m, *v; void *wc; std::vector<void *> allocs; };
    std::vector<layout> ls(3);
    { /* one allocation: w, g, m, v, copy a stride apart (the layout before b00dc9a) */
        char *b;
        CK(cudaMalloc(&b, 4 * stride + cbytes));
        ls[0] = {"one allocation (w g m v copy)", (float *)b, (float *)(b + stride),
                 (float *)(b + 2 * stride), (float *)(b + 3 * stride), b + 4 * stride, {b}};
    }
    { /* main's: w, g, copy in one; m, v in another, v right after m */
        char *b, *mv;
        CK(cudaMalloc(&b, 2 * stride + cbytes + (64 << 20))); /* + the carve's other buffers */
        CK(cudaMalloc(&mv, 2 * (size_t)(n + 4096) * 4));
        ls[1] = {"main's (w g copy | m v)", (float *)b, (float *)(b + stride), (float *)mv,
                 (float *)mv + (n + 4096), b + 2 * stride, {b, mv}};
    }
    { /* each its own */
        void *p[5];
        for (int i = 0; i < 5; i++) CK(cudaMalloc(&p[i], i == 4 ? cbytes : stride));
        ls[2] = {"five allocations", (float *)p[0], (float *)p[1], (float *)p[2], (float *)p[3],
                 p[4], {p[0], p[1], p[2], p[3], p[4]}};
    }
    for (auto &l : ls) {
        fill<<<1024, 256>>>(l.w, n, 1, 0.04f, 0);
        fill<<<1024, 256>>>(l.g, n, 2, 0.02f, 0);
        fill<<<1024, 256>>>(l.m, n, 3, 0.02f, 0);
        fill<<<1024, 256>>>(l.v, n, 4, 2e-4f, 1);
    }
    CK(cudaDeviceSynchronize());
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const double bytes = 30.0 * n; /* w m v g read, w m v written, the bf16 copy */
    { /* the card's reference: device-to-device copies of the same bytes (15 read, 15 written) */
        char *a, *b;
        const size_t half = (size_t)(15.0 * n);
        CK(cudaMalloc(&a, half));
        CK(cudaMalloc(&b, half));
        CK(cudaMemset(a, 1, half));
        std::vector<float> t;
        for (int it = 0; it < 25; it++) {
            CK(cudaEventRecord(e0));
            CK(cudaMemcpyAsync(b, a, half, cudaMemcpyDeviceToDevice));
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (it >= 5) t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        printf("  %-34s %9.1f us  %6.0f GB/s\n", "copy, the same bytes", t[t.size() / 2] * 1e3,
               bytes / (t[t.size() / 2] * 1e-3) / 1e9);
        CK(cudaFree(a));
        CK(cudaFree(b));
    }
    const unsigned threads = TT_THREADS, full = (unsigned)std::min<long long>((n / 4 + threads - 1) / threads, 8192);
    const unsigned grids[3] = {full, (unsigned)prop.multiProcessorCount * (2048 / threads),
                               (unsigned)prop.multiProcessorCount * (2048 / threads) * 4};
    for (auto &l : ls)
        for (unsigned grid : grids) {
            std::vector<float> t;
            for (int it = 0; it < 25; it++) {
                CK(cudaEventRecord(e0));
                KNAME<<<grid, threads>>>(l.w, l.m, l.v, (TT_T *)l.wc, l.g, sc, sc + 1, sc + 2, sc + 3,
                                         sc + 4, sc + 5, n, 0.9f, 0.999f, 1e-8f, 0.f);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaGetLastError());
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (it >= 5) t.push_back(ms);
            }
            std::sort(t.begin(), t.end());
            const float med = t[t.size() / 2];
            printf("  %-34s grid %5u: %9.1f us  %6.0f GB/s  (min %.1f, max %.1f)\n", l.name, grid,
                   med * 1e3, bytes / (med * 1e-3) / 1e9, t.front() * 1e3, t.back() * 1e3);
        }
    { /* the candidates, main's layout; checked against the generated kernel's w, m, v first */
        layout &l = ls[1];
        const long long n4 = n / 4;
        const size_t nb = (size_t)n4 * 16;
        float *ref[3], *got[3];
        float *dev[3] = {l.w, l.m, l.v};
        for (int i = 0; i < 3; i++) {
            ref[i] = (float *)malloc(nb), got[i] = (float *)malloc(nb);
        }
        float *save[3];
        for (int i = 0; i < 3; i++) {
            CK(cudaMalloc(&save[i], nb));
            CK(cudaMemcpy(save[i], dev[i], nb, cudaMemcpyDeviceToDevice));
        }
        KNAME<<<full, threads>>>(l.w, l.m, l.v, (TT_T *)l.wc, l.g, sc, sc + 1, sc + 2, sc + 3, sc + 4,
                                 sc + 5, n4 * 4, 0.9f, 0.999f, 1e-8f, 0.f);
        for (int i = 0; i < 3; i++) CK(cudaMemcpy(ref[i], dev[i], nb, cudaMemcpyDeviceToHost));
        void (*alt[3])(float *, float *, float *, TT_T *, const float *, const double *, long long,
                       float, float, float, float) = {adam_alt<0, 1>, adam_alt<1, 0>, adam_alt<1, 1>};
        static const char *const alt_name[3] = {"alt: streaming hints", "alt: two groups in flight",
                                                "alt: both"};
        for (int a = 0; a < 3; a++) {
            for (int i = 0; i < 3; i++) CK(cudaMemcpy(dev[i], save[i], nb, cudaMemcpyDeviceToDevice));
            alt[a]<<<full, threads>>>(l.w, l.m, l.v, (TT_T *)l.wc, l.g, sc, n4, 0.9f, 0.999f, 1e-8f, 0.f);
            CK(cudaDeviceSynchronize());
            long bad = 0;
            for (int i = 0; i < 3; i++) {
                CK(cudaMemcpy(got[i], dev[i], nb, cudaMemcpyDeviceToHost));
                bad += memcmp(got[i], ref[i], nb) != 0;
            }
            for (unsigned grid : grids) {
                std::vector<float> t;
                for (int it = 0; it < 25; it++) {
                    CK(cudaEventRecord(e0));
                    alt[a]<<<grid, threads>>>(l.w, l.m, l.v, (TT_T *)l.wc, l.g, sc, n4, 0.9f, 0.999f, 1e-8f, 0.f);
                    CK(cudaEventRecord(e1));
                    CK(cudaEventSynchronize(e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, e0, e1));
                    if (it >= 5) t.push_back(ms);
                }
                std::sort(t.begin(), t.end());
                const float med = t[t.size() / 2];
                printf("  %-34s grid %5u: %9.1f us  %6.0f GB/s  (%s the generated kernel's bits)\n",
                       alt_name[a], grid, med * 1e3, bytes / (med * 1e-3) / 1e9,
                       bad ? "NOT" : "the same as");
            }
        }
    }
    float probe[4];
    CK(cudaMemcpy(probe, ls[1].w, sizeof probe, cudaMemcpyDeviceToHost));
    printf("  w[0..3] after the runs: %g %g %g %g (finite: the updates ran)\n", probe[0], probe[1],
           probe[2], probe[3]);
    return 0;
}
