#!/usr/bin/env python3
"""The peer of issue 4's benchmark: the tensorized LM of MODEL.md in plain PyTorch, with the
attention written as the released code writes it (one einsum per core over the full N x N x N
tensor, the causal mask applied to it, then the N^2 -> D projection o_net).

  torch_tt.py check SPEC_VALUES CKPT VALID   perplexity of our checkpoint on a split, scored as
                                             tt-eval scores it (windows of N, stride N)
  torch_tt.py time SPEC_VALUES [--compile] [--bf16] [--steps K]
                                             training tokens/s (forward, backward, Adam), timed
                                             with CUDA events after warm-up, and peak memory

SPEC_VALUES is "V,D,L,R,H,N,F,B,dropout,causal,label_smoothing" (the model and batch of a spec).
This file is the project's own code; it uses only torch and safetensors.
"""
import math
import sys

import torch
import torch.nn.functional as F


def parse_values(s):
    v = s.split(",")
    return dict(V=int(v[0]), D=int(v[1]), L=int(v[2]), R=int(v[3]), H=int(v[4]), N=int(v[5]),
                F=int(v[6]), B=int(v[7]), dropout=float(v[8]), causal=v[9] == "true",
                eps=float(v[10]))


def init_params(c, device):
    """Names and shapes of MODEL.md section 4, initialized as MODEL.md section 2."""
    D, R, N, F_, V = c["D"], c["R"], c["N"], c["F"], c["V"]
    p = {"word_emb.emb_layers.0.weight": torch.randn(V, D) * 0.02,
         "crit.out_layers.0.bias": torch.zeros(V)}
    for l in range(c["L"]):
        a, f = f"layers.{l}.dec_attn.", f"layers.{l}.pos_ff."
        p[a + "qkv_net.weight"] = torch.randn(3 * R, D) * 0.02
        p[a + "o_net.weight"] = torch.randn(D, N * N) * 0.02
        p[a + "core_value"] = torch.randn(c["H"], R) * 0.02
        p[a + "layer_norm.weight"] = torch.ones(D)
        p[a + "layer_norm.bias"] = torch.zeros(D)
        p[f + "CoreNet.0.weight"] = torch.randn(F_, D) * 0.02
        p[f + "CoreNet.0.bias"] = torch.zeros(F_)
        p[f + "CoreNet.3.weight"] = torch.randn(D, F_) * 0.02
        p[f + "CoreNet.3.bias"] = torch.zeros(D)
        p[f + "layer_norm.weight"] = torch.ones(D)
        p[f + "layer_norm.bias"] = torch.zeros(D)
    return {k: v.to(device).requires_grad_() for k, v in p.items()}


def causal_mask(N, device):
    i = torch.arange(N, device=device)
    # m(i, j, k) = 1 iff j <= i and k <= i
    return ((i[None, :, None] <= i[:, None, None]) & (i[None, None, :] <= i[:, None, None])).float()


def forward(p, c, tok, tgt, train, mask):
    D, R, N, H, B = c["D"], c["R"], c["N"], c["H"], tok.shape[0]
    drop = c["dropout"] if train else 0.0
    x = F.embedding(tok, p["word_emb.emb_layers.0.weight"]) * math.sqrt(D)
    x = F.dropout(x, drop, train)
    for l in range(c["L"]):
        a, f = f"layers.{l}.dec_attn.", f"layers.{l}.pos_ff."
        q, k, v = (x @ p[a + "qkv_net.weight"].t()).split(R, dim=-1)
        g = torch.softmax(p[a + "core_value"], dim=-1)
        # one einsum per core, as the released code; the cores' mean
        t = sum(torch.einsum("r,bir,bjr,bkr->bijk", g[h], q, k, v) for h in range(H)) / H
        if mask is not None:
            t = t * mask
        y = t.reshape(B, N, N * N) @ p[a + "o_net.weight"].t()
        x = F.layer_norm(x + F.dropout(y, drop, train), (D,), p[a + "layer_norm.weight"],
                         p[a + "layer_norm.bias"])
        h1 = F.relu(F.linear(x, p[f + "CoreNet.0.weight"], p[f + "CoreNet.0.bias"]))
        y = F.linear(F.dropout(h1, drop, train), p[f + "CoreNet.3.weight"], p[f + "CoreNet.3.bias"])
        x = F.layer_norm(x + F.dropout(y, drop, train), (D,), p[f + "layer_norm.weight"],
                         p[f + "layer_norm.bias"])
    logits = x @ p["word_emb.emb_layers.0.weight"].t() + p["crit.out_layers.0.bias"]
    return logits.float().reshape(-1, c["V"]), tgt.reshape(-1)


def read_ids(path, vocab_path):
    words = [w for w in open(vocab_path, encoding="utf-8").read().split("\n") if w]
    ids = {w: i for i, w in enumerate(words)}
    unk, out = ids["<unk>"], []
    for line in open(path, encoding="utf-8"):
        out.extend(ids.get(w, unk) for w in line.split())
        out.append(ids["<eos>"])
    return out


def check(values, ckpt_dir, split_path):
    from safetensors.torch import load_file
    c = parse_values(values)
    dev = "cuda"
    p = {k: v.to(dev) for k, v in load_file(f"{ckpt_dir}/model.safetensors").items()}
    ids = torch.tensor(read_ids(split_path, f"{ckpt_dir}/vocab.txt"), device=dev)
    N = c["N"]
    mask = causal_mask(N, dev) if c["causal"] else None
    # windows of N with stride N; the last moved back to end at the split's end, scoring what is left
    starts, first_scored = [], []
    nxt, last = 1, len(ids) - 1
    while nxt <= last:
        end = N if nxt == 1 else min(nxt - 1 + N, last)
        starts.append(end - N)
        first_scored.append(nxt - (end - N) - 1)
        nxt = end + 1
    nll, count = 0.0, 0
    with torch.no_grad():
        for b0 in range(0, len(starts), 256):
            s = torch.tensor(starts[b0:b0 + 256], device=dev)
            pos = s[:, None] + torch.arange(N + 1, device=dev)[None, :]
            w = ids[pos]
            logits, tgt = forward(p, c, w[:, :N], w[:, 1:], False, mask)
            l = F.cross_entropy(logits, tgt, reduction="none").view(len(s), N)
            fs = torch.tensor(first_scored[b0:b0 + 256], device=dev)
            keep = torch.arange(N, device=dev)[None, :] >= fs[:, None]
            nll += float(l[keep].double().sum())
            count += int(keep.sum())
    print(f"peer perplexity {math.exp(nll / count):.3f} over {count} tokens")


def time_training(values, compile_, bf16, steps):
    c = parse_values(values)
    dev = "cuda"
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    p = init_params(c, dev)
    opt = torch.optim.Adam(p.values(), lr=2.5e-4)
    mask = causal_mask(c["N"], dev) if c["causal"] else None
    B, N, V = c["B"], c["N"], c["V"]

    def step(tok, tgt):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            logits, t = forward(p, c, tok, tgt, True, mask)
            loss = F.cross_entropy(logits, t, label_smoothing=c["eps"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(p.values(), 0.25)
        opt.step()
        return loss

    fn = torch.compile(step) if compile_ else step
    batches = [torch.randint(0, V, (B, N + 1), device=dev) for _ in range(8)]  # never zeros
    for i in range(10):
        fn(batches[i % 8][:, :N], batches[i % 8][:, 1:])
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for i in range(steps):
        fn(batches[i % 8][:, :N], batches[i % 8][:, 1:])
    t1.record()
    torch.cuda.synchronize()
    ms = t0.elapsed_time(t1) / steps
    mode = ("torch.compile" if compile_ else "eager") + (" bf16 autocast" if bf16 else " tf32")
    print(f"peer {mode}: {ms:.3f} ms/step, {B * N / ms * 1e3:.0f} tokens/s, peak memory "
          f"{torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 50
        time_training(sys.argv[2], "--compile" in sys.argv, "--bf16" in sys.argv, steps)
