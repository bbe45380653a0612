#!/usr/bin/env python3
"""The PyTorch peer of issue 5: Transformer-XL as MODEL.md section 3 defines it (kimiyoung's
MemTransformerLM with attn_type 0: relative-position attention with the shared biases u and v,
segment-level memory of each layer's inputs, post-LayerNorm), in plain PyTorch, with the adaptive
embedding and softmax of bench/torch_tt.py.

  torch_txl.py check SPEC_VALUES CKPT TEXT   perplexity of our checkpoint on a split, read as
                                             tt-eval reads it (B streams, segments of the eval
                                             tgt_len with memory)
  torch_txl.py time SPEC_VALUES [--compile] [--bf16] [--steps K]
                                             training tokens/s (forward, backward, Adam) with the
                                             memory carried from step to step, CUDA events after
                                             warm-up, and peak memory

SPEC_VALUES is "V,D,L,H,DH,N,M,F,B,dropout,dropatt,clamp,EVAL_N,EVAL_M,EVAL_CLAMP[,CUTOFFS,DIV_VAL,
TIE]" (a spec's model, batch and eval section; CUTOFFS joined by ':' or '-', DIV_VAL default 1,
TIE true or false, default true). This file is the project's own code; it uses only torch and
safetensors (and bench/torch_tt.py beside it).
"""
import math
import sys

import torch
import torch.nn.functional as F

import torch_tt as tt


def parse_values(s):
    v = s.split(",")
    if len(v) not in (15, 17, 18):
        sys.exit(f"torch_txl.py: SPEC_VALUES has {len(v)} fields, not 15, 17 or 18: '{s}'")
    c = dict(V=int(v[0]), D=int(v[1]), L=int(v[2]), H=int(v[3]), DH=int(v[4]), N=int(v[5]),
             M=int(v[6]), F=int(v[7]), B=int(v[8]), dropout=float(v[9]), dropatt=float(v[10]),
             clamp=int(v[11]), eval_n=int(v[12]), eval_m=int(v[13]), eval_clamp=int(v[14]))
    # the adaptive part as torch_tt.py reads it (its R, H, causal and eps do not apply here)
    a = tt.parse_values(",".join([v[0], v[1], v[2], "1", "1", v[5], v[7], v[8], v[9], "true", "0"]
                                 + v[15:]))
    for k in ("cutoffs", "div_val", "tie", "cut", "proj", "dim"):
        c[k] = a[k]
    return c


def param_shapes(c):
    """MODEL.md section 4's names and shapes for Transformer-XL, as cpu/model.c builds them."""
    D, HD, F_ = c["D"], c["H"] * c["DH"], c["F"]
    s = {}
    for name, (shape, std) in tt.param_shapes(dict(c, R=1, H=1, causal=True, eps=0.0)).items():
        if ".dec_attn." not in name and not name.startswith("r_"):
            s[name] = (shape, std)  # embedding, feed-forward, output layer: shared with torch_tt
    s["r_w_bias"] = ((c["H"], c["DH"]), 0.02)
    s["r_r_bias"] = ((c["H"], c["DH"]), 0.02)
    for l in range(c["L"]):
        a = f"layers.{l}.dec_attn."
        s[a + "qkv_net.weight"] = ((3 * HD, D), 0.02)
        s[a + "r_net.weight"] = ((HD, D), 0.02)
        s[a + "o_net.weight"] = ((D, HD), 0.02)
        s[a + "layer_norm.weight"] = ((D,), None)
        s[a + "layer_norm.bias"] = ((D,), 0)
    return s


def pos_emb(klen, D, clamp, device):
    """pe of distances klen-1 .. 0 (clamped), [sin(p f), cos(p f)], f_t = 10000^(-2t/D)."""
    pos = torch.arange(klen - 1, -1, -1.0, device=device)
    if clamp > 0:
        pos = pos.clamp(max=clamp)
    inv_freq = 1.0 / (10000 ** (torch.arange(0.0, D, 2.0, device=device) / D))
    s = pos[:, None] * inv_freq[None, :]
    return torch.cat([s.sin(), s.cos()], dim=-1)


def hidden(p, c, tok, mems, train, clamp):
    """x_L [B, N, D] and the next memories (detached): each layer's input at the last M of
    concat(memory, segment) positions. mems: a list of L [B, mlen, D] tensors, or None."""
    B, N, D, H, DH, M = tok.shape[0], tok.shape[1], c["D"], c["H"], c["DH"], c["M_now"]
    drop = c["dropout"] if train else 0.0
    mlen = 0 if mems is None else mems[0].shape[1]
    klen = mlen + N
    x = F.dropout(tt.embed(p, c, tok), drop, train)
    r = F.dropout(pos_emb(klen, D, clamp, tok.device), drop, train)
    # query i (at mlen + i) sees key j when j <= mlen + i; its distance mlen + i - j is r's row
    # klen - 1 - (mlen + i - j); the masked keys' rows are clamped into range (gather checks them)
    i = torch.arange(N, device=tok.device)[:, None]
    j = torch.arange(klen, device=tok.device)[None, :]
    visible = j <= i + mlen
    ridx = (klen - 1 - (mlen + i - j)).clamp(0, klen - 1)
    new = []
    for l in range(c["L"]):
        a = f"layers.{l}.dec_attn."
        cat = x if mems is None else torch.cat([mems[l], x], dim=1)
        new.append(cat[:, -M:].detach() if M > 0 else None)
        q, k, v = (cat @ p[a + "qkv_net.weight"].t()).split(H * DH, dim=-1)
        q = q[:, mlen:].view(B, N, H, DH)
        k, v = k.view(B, klen, H, DH), v.view(B, klen, H, DH)
        rk = (r @ p[a + "r_net.weight"].t()).view(klen, H, DH)
        ac = torch.einsum("bihd,bjhd->bhij", q + p["r_w_bias"], k)
        bd_all = torch.einsum("bihd,jhd->bhij", q + p["r_r_bias"], rk)  # [B, H, N, klen] by r row
        bd = bd_all.gather(3, ridx[None, None].expand(B, H, N, klen))
        score = ((ac + bd) / math.sqrt(DH)).masked_fill(~visible, float("-inf"))
        prob = F.dropout(torch.softmax(score.float(), dim=-1).to(v.dtype),
                         c["dropatt"] if train else 0.0, train)
        y = torch.einsum("bhij,bjhd->bihd", prob, v).reshape(B, N, H * DH) @ p[a + "o_net.weight"].t()
        x = tt.layer_tail(p, l, x, y, D, drop, train)
    return x, (new if M > 0 else None)


def check(values, ckpt_dir, split_path):
    c = parse_values(values)
    p, ids, dev = tt.load_checkpoint(ckpt_dir, param_shapes(c), values, split_path, "torch_txl.py")
    # train/evaluate.c's tt_evaluate_txl_cpu: predictions 0 .. P-1 in B streams of equal length
    # (to one), each in segments of the eval tgt_len with the memory its segments leave
    P, N = len(ids) - 1, c["eval_n"]
    b = min(P, c["B"])
    first = [P // b * s + min(s, P % b) for s in range(b + 1)]
    segments = (first[1] - first[0] + N - 1) // N
    c["M_now"] = c["eval_m"]
    mems, nll, count = None, 0.0, 0
    with torch.no_grad():
        for g in range(segments):
            at = torch.tensor(first[:b], device=dev)[:, None] + g * N + torch.arange(N, device=dev)
            last = torch.tensor(first[1:], device=dev)[:, None] - 1
            scored = at <= last
            q = torch.minimum(at, last)
            x, mems = hidden(p, c, ids[q], mems, False, c["eval_clamp"])
            l = tt.row_losses(p, c, x.reshape(-1, c["D"]), ids[q + 1].reshape(-1)).view(b, N)
            nll += float(l[scored].double().sum())
            count += int(scored.sum())
    print(f"peer perplexity {math.exp(nll / count):.3f} over {count} tokens (mean nll "
          f"{nll / count:.12f}; tgt_len {N}, mem_len {c['eval_m']}, clamp_len {c['eval_clamp']})")


def time_training(values, compile_, bf16, steps):
    c = parse_values(values)
    dev = "cuda"
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    p = {}
    for name, (shape, std) in param_shapes(c).items():
        t = torch.ones(shape) if std is None else torch.randn(shape) * std
        p[name] = t.to(dev).requires_grad_()
    opt = torch.optim.Adam(p.values(), lr=2.5e-4)
    B, N, V, D = c["B"], c["N"], c["V"], c["D"]
    c["M_now"] = c["M"]

    def step(tok, tgt, mems):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            x, new = hidden(p, c, tok, mems, True, c["clamp"])
            loss = tt.row_losses(p, c, x.reshape(-1, D), tgt.reshape(-1)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(p.values(), 0.25)
        opt.step()
        return loss, new

    fn = torch.compile(step) if compile_ else step
    batches = [torch.randint(0, V, (B, N + 1), device=dev) for _ in range(8)]  # never zeros
    mems = None
    for i in range(10):
        _, mems = fn(batches[i % 8][:, :N], batches[i % 8][:, 1:], mems)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for i in range(steps):
        _, mems = fn(batches[i % 8][:, :N], batches[i % 8][:, 1:], mems)
    t1.record()
    torch.cuda.synchronize()
    ms = t0.elapsed_time(t1) / steps
    mode = ("torch.compile" if compile_ else "eager") + (" bf16 autocast" if bf16 else " tf32")
    print(f"peer txl {mode}: {ms:.3f} ms/step, {B * N / ms * 1e3:.0f} tokens/s, peak memory "
          f"{torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("check", "time"):
        sys.exit(__doc__)
    if sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        time_training(sys.argv[2], "--compile" in sys.argv, "--bf16" in sys.argv,
                      int(tt.option("--steps", 50)))
