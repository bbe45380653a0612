"""The three large products of the materialized attention (Y = T Wo^T, dT = dY Wo, dWo = dY^T T)
timed dense against row groups that stop at the causal mask's last column (rows ordered by
position, i-major): with T's columns in (j, k) order a group of rows ending at L needs the
first L*N columns; in max(j, k) order the first L^2. cuBLAS through torch.mm on views (no copies).
   python3 bench/staircase_probe.py     (on the GPU machine)"""
import torch

def timed(f, reps=20):
    # replayed as a CUDA graph: the GPU's time, not Python's launches
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        f()
    f = g.replay
    for _ in range(3):
        f()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        f()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / reps * 1e3  # us

def run(B, N, D):
    dev, bf = "cuda", torch.bfloat16
    M, NN = B * N, N * N
    T = torch.randn(M, NN, device=dev, dtype=bf)
    dT = torch.randn(M, NN, device=dev, dtype=bf)
    Wo = torch.randn(D, NN, device=dev, dtype=bf)   # [out, in] as nn.Linear
    dY = torch.randn(M, D, device=dev, dtype=bf)
    Y = torch.empty(M, D, device=dev, dtype=bf)
    dWb = torch.empty(D, NN, device=dev, dtype=bf)
    def dense():
        torch.mm(T, Wo.t(), out=Y)
        torch.mm(dY, Wo, out=dT)
        torch.mm(dY.t(), T, out=dWb)
    def groups(ends, pre):
        # rows i-major: group rows [i0*B, i1*B), prefix pre(i1)
        def f():
            i0 = 0
            for i1 in ends:
                p = pre(i1)
                r0, r1 = i0 * B, i1 * B
                torch.mm(T[r0:r1, :p], Wo[:, :p].t(), out=Y[r0:r1])
                torch.mm(dY[r0:r1], Wo[:, :p], out=dT[r0:r1, :p])
                i0 = i1
            # dWo by column blocks: block (P(prev), P(i1)] gets rows i >= its first row
            i0, p0 = 0, 0
            for i1 in ends:
                p = pre(i1)
                torch.mm(dY[i0 * B:].t(), T[i0 * B:, p0:p], out=dWb[:, p0:p])
                p0, i0 = p, i1
        return f
    useful = sum((i + 1) ** 2 for i in range(N)) / (N * NN)
    res = {"dense": timed(dense)}
    for tile in (8, 16):
        ends = list(range(tile, N + 1, tile))
        if ends[-1] != N:
            ends.append(N)
        res[f"jprefix{tile}"] = timed(groups(ends, lambda L: L * N))
        res[f"max{tile}"] = timed(groups(ends, lambda L: L * L))
    fl = 3 * 2 * M * NN * D
    print(f"B {B} N {N} D {D}: useful/dense {useful:.3f}; " + ", ".join(
        f"{k} {v:.1f} us ({fl * useful / v / 1e6:.0f} useful TFLOP/s)" for k, v in res.items()))

for shape in [(60, 80, 256), (32, 80, 1024), (32, 80, 512), (32, 160, 1024), (32, 160, 512), (32, 32, 1024)]:
    run(*shape)
