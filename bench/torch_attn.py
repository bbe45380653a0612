#!/usr/bin/env python3
"""The peer of tt-attn-bench: the same multi-linear attention (MODEL.md section 1, position none)
written in PyTorch with a materialized T and cuBLAS, checked against the outputs tt-attn-bench
dumped and then timed on the same card.

  torch_attn.py --load FILE.safetensors [--iters K] [--warmup W]

Two ways of writing it, each eager and under torch.compile:
  bmm     A = g*Q; KV[b, j*N+k, r] = K[b,j,r] V[b,k,r]; T = bmm(A, KV^T), [B, N, N*N] in memory;
          T times the causal mask m(i,j,k) = (j <= i and k <= i); Y = T Wo^T
  einsum  as the released code: T = einsum('r,bir,bjr,bkr->bijk', g, Q, K, V), masked, Y = T Wo^T
The backward is autograd's, from the dumped dY. Precision as the dump says: bf16 (the inputs are
bf16 values already), tf32 or fp32. First every variant's y, dqkv, dWo and dg are compared with
ours (max|a-b| / max|b| per tensor); a mismatch ends the run with status 1 before any timing.
Times are medians of CUDA-event times after warm-up; memory is torch.cuda.max_memory_allocated
over one forward and backward (inputs, outputs and everything in between).
This file is the project's own code; it uses only torch (and safetensors when it is installed).
"""
import argparse
import json
import statistics
import struct
import sys

import torch

BOUND = {"bf16": 2e-2, "tf32": 1e-2, "fp32": 1e-4}


def read_safetensors(path):
    """{name: tensor (cpu)} and the string metadata of a safetensors file."""
    try:
        from safetensors import safe_open
    except ImportError:
        safe_open = None
    if safe_open is not None:
        with safe_open(path, framework="pt", device="cpu") as f:
            return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})
    entries, meta, data = read_safetensors_raw(path)
    dtypes = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
              "F64": torch.float64}
    out = {}
    for name, (dtype, shape, lo, hi) in entries.items():
        if dtype not in dtypes:
            raise SystemExit(f"{path}: tensor {name} has dtype {dtype}, not one of {list(dtypes)}")
        out[name] = torch.frombuffer(bytearray(data[lo:hi]), dtype=dtypes[dtype]).reshape(shape)
    return out, meta


def read_safetensors_raw(path):
    """The format itself: an 8-byte little-endian header length, the JSON header, the data.
    Returns {name: (dtype, shape, begin, end)} with offsets into the data, the metadata, the data."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SystemExit(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise SystemExit(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {}) or {}
    data = blob[8 + n:]
    entries = {}
    for name, e in header.items():
        lo, hi = e["data_offsets"]
        if not 0 <= lo <= hi <= len(data):
            raise SystemExit(f"{path}: tensor {name} lies outside the data ({lo}..{hi})")
        entries[name] = (e["dtype"], list(e["shape"]), lo, hi)
    return entries, meta, data


def causal_mask(N, device, dtype):
    """m[i, j*N + k] = 1 iff j <= i and k <= i."""
    i = torch.arange(N, device=device)
    m = (i[None, :, None] <= i[:, None, None]) & (i[None, None, :] <= i[:, None, None])
    return m.reshape(N, N * N).to(dtype)


def attn_bmm(qkv, g, wo, mask, B, N, R):
    """T materialized by one cuBLAS batched product, then the N^2 -> D projection."""
    x = qkv.view(B, N, 3, R)  # a row of qkv is Q | K | V
    q, k, v = x[:, :, 0], x[:, :, 1], x[:, :, 2]
    a = q * g.to(q.dtype)  # A[b,i,r] = g_r Q[b,i,r]
    kv = (k[:, :, None, :] * v[:, None, :, :]).reshape(B, N * N, R)  # KV[b, j*N+k, r]
    t = torch.bmm(a, kv.transpose(1, 2))  # [B, N, N*N]
    if mask is not None:
        t = t * mask
    return t.reshape(B * N, N * N) @ wo.t()


def attn_einsum(qkv, g, wo, mask, B, N, R):
    """The released code's way: one einsum into [B, N, N, N], then the projection."""
    x = qkv.view(B, N, 3, R)
    q, k, v = x[:, :, 0], x[:, :, 1], x[:, :, 2]
    t = torch.einsum("r,bir,bjr,bkr->bijk", g.to(q.dtype), q, k, v)
    if mask is not None:
        t = t * mask.view(N, N, N)
    return t.reshape(B * N, N * N) @ wo.t()


def clear(leaves):
    for p in leaves:
        p.grad = None


def rel_err(a, b):
    a, b = a.detach().float().cpu(), b.float()
    den = b.abs().max().item()
    return (a - b).abs().max().item() / (den if den > 0 else 1.0)


def check(name, f, leaves, dy, ours, bound):
    """One forward and backward of f against our outputs; True when every tensor is in bound."""
    qkv, g, wo = leaves
    clear(leaves)
    y = f(qkv, g, wo)
    y.backward(dy)
    got = {"y": y, "dqkv": qkv.grad, "dwo": wo.grad, "dg": g.grad}
    errs = {k: rel_err(got[k], ours[k]) for k in got}
    ok = all(e <= bound for e in errs.values())
    print(f"check {name:<24} " + "  ".join(f"{k} {e:.2e}" for k, e in errs.items())
          + f"  (bound {bound:.0e}): {'ok' if ok else 'MISMATCH'}", flush=True)
    clear(leaves)
    return ok


def peak_mib(f, leaves, dy):
    """max_memory_allocated over one forward and backward, in MiB: what stays allocated (inputs,
    the mask) plus what the step allocates (activations, T, outputs, gradients)."""
    clear(leaves)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    y = f(*leaves)
    y.backward(dy)
    del y
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    clear(leaves)
    return peak / 2**20


def time_ms(f, leaves, dy, iters, warmup):
    """Medians in ms of forward alone, backward alone (the forward queued before its start event)
    and forward+backward. Gradients are set to None before each, outside what is timed."""
    out = {}
    for kind in ("fwd", "bwd", "fwd_bwd"):
        events = []
        for it in range(warmup + iters):
            clear(leaves)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if kind == "fwd":
                s.record()
                y = f(*leaves)
                e.record()
            elif kind == "bwd":
                y = f(*leaves)
                s.record()
                y.backward(dy)
                e.record()
            else:
                s.record()
                y = f(*leaves)
                y.backward(dy)
                e.record()
            del y
            if it >= warmup:
                events.append((s, e))
        torch.cuda.synchronize()
        out[kind] = statistics.median(s.elapsed_time(e) for s, e in events)
    clear(leaves)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--load", required=True, help="the safetensors file of tt-attn-bench --dump")
    ap.add_argument("--iters", type=int, default=50, help="timed iterations (default 50)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed first iterations (default 10)")
    args = ap.parse_args()
    if args.iters < 1 or args.warmup < 1:
        ap.error("--iters and --warmup take a number of at least 1")
    tensors, meta = read_safetensors(args.load)
    for key in ("batch", "n", "r", "d", "causal", "precision", "device", "fwd_ms", "bwd_ms",
                "fwd_bwd_ms", "device_bytes"):
        if key not in meta:
            raise SystemExit(f"{args.load}: no metadata '{key}' (not written by tt-attn-bench?)")
    B, N, R, D = (int(meta[k]) for k in ("batch", "n", "r", "d"))
    causal, prec = meta["causal"] == "true", meta["precision"]
    want = {"qkv": (B * N, 3 * R), "wo": (D, N * N), "g": (R,), "dy": (B * N, D),
            "y": (B * N, D), "dqkv": (B * N, 3 * R), "dwo": (D, N * N), "dg": (R,)}
    for name, shape in want.items():
        if name not in tensors or tuple(tensors[name].shape) != shape:
            got = tuple(tensors[name].shape) if name in tensors else "absent"
            raise SystemExit(f"{args.load}: tensor {name} is {got}, expected {shape}")
    if not torch.cuda.is_available():
        print("no CUDA device: torch.cuda.is_available() is False", file=sys.stderr)
        sys.exit(77)

    dev = "cuda"
    card = torch.cuda.get_device_name()
    dtype = torch.bfloat16 if prec == "bf16" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    torch.backends.cudnn.allow_tf32 = prec == "tf32"
    print(f"torch {torch.__version__} on {card}; B {B}, N {N}, R {R}, D {D}, "
          f"{'causal' if causal else 'NOT causal'}, {prec}; {args.warmup} warm-up iterations, "
          f"then the median of {args.iters}", flush=True)
    if card != meta["device"]:
        print(f"WARNING: tt-attn-bench ran on {meta['device']}, this is {card}: the ratios below "
              "compare two cards", flush=True)
    # the inputs as the device held them (bf16 values stored as fp32 in the dump: exact)
    qkv = tensors["qkv"].to(dev, dtype).requires_grad_()
    wo = tensors["wo"].to(dev, dtype).requires_grad_()
    g = tensors["g"].to(dev, torch.float32).requires_grad_()
    dy = tensors["dy"].to(dev, dtype)
    leaves = (qkv, g, wo)
    ours = {k: tensors[k] for k in ("y", "dqkv", "dwo", "dg")}
    mask = causal_mask(N, dev, dtype) if causal else None

    def bmm(qkv_, g_, wo_):
        return attn_bmm(qkv_, g_, wo_, mask, B, N, R)

    def einsum(qkv_, g_, wo_):
        return attn_einsum(qkv_, g_, wo_, mask, B, N, R)

    bound = BOUND[prec]
    ok = check("bmm, eager", bmm, leaves, dy, ours, bound)
    ok &= check("einsum, eager", einsum, leaves, dy, ours, bound)
    if not ok:
        print("the peer does not compute what tt-attn-bench computed: no timing", file=sys.stderr)
        sys.exit(1)

    variants = [("bmm (materialized T), eager", bmm), ("einsum (released code), eager", einsum)]
    for name, f in (("bmm (materialized T), torch.compile", bmm),
                    ("einsum (released code), torch.compile", einsum)):
        try:
            cf = torch.compile(f, dynamic=False)
            if not check(name.split(",")[0] + ", compiled", cf, leaves, dy, ours, bound):
                print(f"{name} does not compute what tt-attn-bench computed", file=sys.stderr)
                sys.exit(1)
            variants.append((name, cf))
        except Exception as e:  # a missing compiler toolchain ends this row, not the run
            print(f"{name}: torch.compile failed: {type(e).__name__}: {e}".splitlines()[0],
                  flush=True)

    rows = []
    for name, f in variants:
        mem = peak_mib(f, leaves, dy)
        t = time_ms(f, leaves, dy, args.iters, args.warmup)
        rows.append((name, t["fwd"], t["bwd"], t["fwd_bwd"], mem))
        print(f"{name}: fwd {t['fwd']:.4f} ms, bwd {t['bwd']:.4f} ms, fwd+bwd {t['fwd_bwd']:.4f} "
              f"ms, peak {mem:.1f} MiB", flush=True)

    o_f, o_b, o_fb = (float(meta[k]) for k in ("fwd_ms", "bwd_ms", "fwd_bwd_ms"))
    o_mem = int(meta["device_bytes"]) / 2**20
    print(f"\nattention alone, B {B}, N {N}, R {R}, D {D}, {'causal' if causal else 'NOT causal'}, "
          f"{prec}, on {card} (medians, ms; x = the peer's time / ours)")
    print(f"  {'':<42} {'fwd':>8} {'bwd':>8} {'fwd+bwd':>8} {'x fwd':>6} {'x bwd':>6} "
          f"{'x fwd+bwd':>9} {'peak MiB':>9}")
    print(f"  {'ours: fused (tt-attn-bench)':<42} {o_f:8.4f} {o_b:8.4f} {o_fb:8.4f} {'':>6} {'':>6} "
          f"{'':>9} {o_mem:9.1f}")
    for name, f_, b_, fb_, mem in rows:
        print(f"  {'torch ' + name:<42} {f_:8.4f} {b_:8.4f} {fb_:8.4f} {f_ / o_f:6.2f} "
              f"{b_ / o_b:6.2f} {fb_ / o_fb:9.2f} {mem:9.1f}")
    base = rows[0][3] / o_fb
    print(f"goal: fused forward+backward at least 3x faster than the materialized T with cuBLAS "
          f"(eager): {base:.2f}x, {'met' if base >= 3 else 'NOT met'}")
    compiled = [r for r in rows if r[0].startswith("bmm") and "compile" in r[0]]
    if compiled:
        print(f"      against the same under torch.compile: {compiled[0][3] / o_fb:.2f}x")


if __name__ == "__main__":
    main()
