#!/usr/bin/env python3
"""How cuBLAS (through PyTorch, bf16 in and out, fp32 accumulation) times the wt103 step's FFN
products at d_inner 2100 against neighbouring widths that are multiples of 8 and 64: whether an
odd width costs more than its FLOPs. CUDA events, median of 50 after 10 warm-up runs, random
inputs.   bench/gemm_shapes.py [ROWS D]"""
import sys

import torch


def median_ms(fn):
    for _ in range(10):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(50)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return sorted(a.elapsed_time(b) for a, b in ev)[25]


rows, d = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (4800, 256)
print(f"{torch.cuda.get_device_name()}: rows {rows}, D {d}, bf16 (us; TFLOP/s)")
for f in (2100, 2104, 2112, 2048, 2176):
    x = torch.randn(rows, d, device="cuda", dtype=torch.bfloat16)
    w1 = torch.randn(f, d, device="cuda", dtype=torch.bfloat16)
    h = torch.randn(rows, f, device="cuda", dtype=torch.bfloat16)
    w2 = torch.randn(d, f, device="cuda", dtype=torch.bfloat16)
    flop = 2 * rows * d * f
    cases = {"x W1^T": lambda: x @ w1.t(), "h W2^T": lambda: h @ w2.t(),
             "dh W1": lambda: h @ w1, "dy^T h": lambda: x.t() @ h}
    print(f"F {f}: " + "  ".join(f"{k} {1e3 * (t := median_ms(fn)):.1f} ({flop / t / 1e9:.0f})"
                                  for k, fn in cases.items()))
