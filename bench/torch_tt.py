#!/usr/bin/env python3
"""The peer of issue 4's benchmark: the tensorized LM of MODEL.md in plain PyTorch, with the
attention written as the released code writes it (one einsum per core over the full N x N x N
tensor, the causal mask applied to it, then the N^2 -> D projection o_net), and the adaptive
embedding and softmax written as Transformer-XL's users write them (head logits for every row,
each tail cluster only for the rows whose targets fall in it).

  torch_tt.py check SPEC_VALUES CKPT TEXT    perplexity of our checkpoint on a split, scored as
                                             tt-eval scores it (windows of N, stride N)
  torch_tt.py time SPEC_VALUES [--compile [--no-capture]] [--bf16] [--steps K] [--corpus TRAIN]
                                             training tokens/s (forward, backward, Adam), timed
                                             with CUDA events after warm-up, and peak memory;
                                             batches are windows of TRAIN in our vocabulary's ids
                                             (so the softmax clusters see the rows a real run
                                             sees), else uniform random ids. --no-capture: let
                                             torch.compile break its graph at each nonzero
  torchrun --nproc_per_node K torch_tt.py time SPEC_VALUES --ddp [--compile] [--bf16] ...
                                             the same on K GPUs with DistributedDataParallel over
                                             NCCL, B sequences a GPU (weak scaling): the model
                                             compiled (not the optimizer, fused Adam), the
                                             all-reduce in DDP's buckets; rank 0 prints the K
                                             GPUs' tokens/s

SPEC_VALUES is "V,D,L,R,H,N,F,B,dropout,causal,label_smoothing[,CUTOFFS,DIV_VAL[,TIE]]" (the model
and batch of a spec): CUTOFFS the adaptive cutoffs joined by ':' ("20000:40000:200000"; '-' for
none, the full softmax), DIV_VAL the width divisor (default 1), TIE true or false (default true).
This file is the project's own code; it uses only torch and safetensors.
"""
import math
import os
import random
import sys

import torch
import torch.nn.functional as F


def parse_values(s):
    v = s.split(",")
    if len(v) not in (11, 13, 14):
        sys.exit(f"torch_tt.py: SPEC_VALUES has {len(v)} fields, not 11, 13 or 14: '{s}'")
    c = dict(V=int(v[0]), D=int(v[1]), L=int(v[2]), R=int(v[3]), H=int(v[4]), N=int(v[5]),
             F=int(v[6]), B=int(v[7]), dropout=float(v[8]), causal=v[9] == "true",
             eps=float(v[10]))
    c["cutoffs"] = [int(x) for x in v[11].split(":")] if len(v) > 11 and v[11] != "-" else []
    c["div_val"] = int(v[12]) if len(v) > 12 else 1
    c["tie"] = v[13] != "false" if len(v) > 13 else True
    # as the spec's rules and cpu/model.c: cluster i holds ids [cut[i], cut[i+1]), its
    # width D / div_val^i; projections (D x width) only when div_val > 1
    c["cut"] = [0] + c["cutoffs"] + [c["V"]]
    if any(a >= b for a, b in zip(c["cut"], c["cut"][1:])) or c["div_val"] < 1:
        sys.exit(f"torch_tt.py: cutoffs must increase and stay below V, div_val be 1 or more: '{s}'")
    c["proj"] = c["div_val"] > 1
    c["dim"] = [c["D"] // c["div_val"] ** i for i in range(len(c["cut"]) - 1)]
    if c["dim"][-1] < 1:
        sys.exit(f"torch_tt.py: D / div_val^{len(c['cutoffs'])} is below 1: '{s}'")
    if c["cutoffs"] and c["eps"] != 0:
        sys.exit(f"torch_tt.py: label smoothing is 0 with cutoffs (as the spec's rule): '{s}'")
    return c


def param_shapes(c):
    """Names and shapes of MODEL.md section 4 with their initialization (MODEL.md section 2):
    name -> (shape, std), std 0 for zeros, None for ones. As cpu/model.c builds them."""
    D, R, N, F_, V, nc = c["D"], c["R"], c["N"], c["F"], c["V"], len(c["cutoffs"])
    s = {}
    tables = nc + 1 if c["proj"] else 1  # one table for every word when div_val is 1
    rows = [c["cut"][i + 1] - c["cut"][i] for i in range(nc + 1)] if c["proj"] else [V]
    for i in range(tables):
        s[f"word_emb.emb_layers.{i}.weight"] = ((rows[i], c["dim"][i]), 0.02)
        if c["proj"]:
            s[f"word_emb.emb_projs.{i}"] = ((D, c["dim"][i]), 0.01)
    for l in range(c["L"]):
        a, f = f"layers.{l}.dec_attn.", f"layers.{l}.pos_ff."
        s[a + "qkv_net.weight"] = ((3 * R, D), 0.02)
        s[a + "o_net.weight"] = ((D, N * N), 0.02)
        s[a + "core_value"] = ((c["H"], R), 0.02)
        s[a + "layer_norm.weight"] = ((D,), None)
        s[a + "layer_norm.bias"] = ((D,), 0)
        s[f + "CoreNet.0.weight"] = ((F_, D), 0.02)
        s[f + "CoreNet.0.bias"] = ((F_,), 0)
        s[f + "CoreNet.3.weight"] = ((D, F_), 0.02)
        s[f + "CoreNet.3.bias"] = ((D,), 0)
        s[f + "layer_norm.weight"] = ((D,), None)
        s[f + "layer_norm.bias"] = ((D,), 0)
    for i in range(tables):
        if not c["tie"]:
            s[f"crit.out_layers.{i}.weight"] = ((rows[i], c["dim"][i]), 0.02)
            if c["proj"]:
                s[f"crit.out_projs.{i}"] = ((D, c["dim"][i]), 0.01)
        s[f"crit.out_layers.{i}.bias"] = ((rows[i],), 0)
    if nc:
        s["crit.cluster_weight"] = ((nc, D), 0.02)
        s["crit.cluster_bias"] = ((nc,), 0)
    return s


def init_params(c, device):
    p = {}
    for name, (shape, std) in param_shapes(c).items():
        p[name] = torch.ones(shape) if std is None else torch.randn(shape) * std
    return {k: v.to(device).requires_grad_() for k, v in p.items()}


def causal_mask(N, device):
    i = torch.arange(N, device=device)
    # m(i, j, k) = 1 iff j <= i and k <= i
    return ((i[None, :, None] <= i[:, None, None]) & (i[None, None, :] <= i[:, None, None])).float()


def cluster_rows(ids, lo, hi):
    """Positions of the ids in [lo, hi), and those ids less lo."""
    idx = ((ids >= lo) & (ids < hi)).nonzero().squeeze(1)
    return idx, ids.index_select(0, idx) - lo


def embed(p, c, tok):
    """E[tok] * sqrt(D); with projections, each cluster's rows looked up in its own table and
    projected to D (Transformer-XL's AdaptiveEmbedding)."""
    D = c["D"]
    if not c["proj"]:
        return F.embedding(tok, p["word_emb.emb_layers.0.weight"]) * math.sqrt(D)
    flat, parts = tok.reshape(-1), []
    for i in range(len(c["cut"]) - 1):
        idx, ids = cluster_rows(flat, c["cut"][i], c["cut"][i + 1])
        e = F.embedding(ids, p[f"word_emb.emb_layers.{i}.weight"])
        parts.append((idx, F.linear(e, p[f"word_emb.emb_projs.{i}"])))  # e proj^T
    x = torch.zeros(flat.numel(), D, dtype=parts[0][1].dtype, device=tok.device)
    for idx, e in parts:
        x = x.index_copy(0, idx, e)
    return x.view(*tok.shape, D) * math.sqrt(D)


def layer_tail(p, l, x, y, D, drop, train):
    """A layer's end (MODEL.md sections 2 and 3 alike): x = LN(x + drop(y)), then the FFN with
    its residual and LayerNorm."""
    a, f = f"layers.{l}.dec_attn.", f"layers.{l}.pos_ff."
    x = F.layer_norm(x + F.dropout(y, drop, train), (D,), p[a + "layer_norm.weight"],
                     p[a + "layer_norm.bias"])
    h1 = F.relu(F.linear(x, p[f + "CoreNet.0.weight"], p[f + "CoreNet.0.bias"]))
    y = F.linear(F.dropout(h1, drop, train), p[f + "CoreNet.3.weight"], p[f + "CoreNet.3.bias"])
    return F.layer_norm(x + F.dropout(y, drop, train), (D,), p[f + "layer_norm.weight"],
                        p[f + "layer_norm.bias"])


def hidden(p, c, tok, train, mask):
    """x_L of MODEL.md section 2: [B, N, D]."""
    D, R, N, H, B = c["D"], c["R"], c["N"], c["H"], tok.shape[0]
    drop = c["dropout"] if train else 0.0
    x = F.dropout(embed(p, c, tok), drop, train)
    for l in range(c["L"]):
        a = f"layers.{l}.dec_attn."
        q, k, v = (x @ p[a + "qkv_net.weight"].t()).split(R, dim=-1)
        g = torch.softmax(p[a + "core_value"], dim=-1)
        # one einsum per core, as the released code; the cores' mean
        t = sum(torch.einsum("r,bir,bjr,bkr->bijk", g[h], q, k, v) for h in range(H)) / H
        if mask is not None:
            t = t * mask
        y = t.reshape(B, N, N * N) @ p[a + "o_net.weight"].t()
        x = layer_tail(p, l, x, y, D, drop, train)
    return x


def out_layer(p, c, i):
    """Cluster i's output weight [rows, width], bias, and projection [D, width] (None without);
    tied weights are the embedding's tables (and projections)."""
    w, pr = ("word_emb.emb_layers", "word_emb.emb_projs") if c["tie"] else \
        ("crit.out_layers", "crit.out_projs")
    if not c["proj"]:  # one table: cluster i is its rows [lo, hi)
        lo, hi = c["cut"][i], c["cut"][i + 1]
        return p[f"{w}.0.weight"][lo:hi], p["crit.out_layers.0.bias"][lo:hi], None
    return p[f"{w}.{i}.weight"], p[f"crit.out_layers.{i}.bias"], p[f"{pr}.{i}"]


def row_losses(p, c, x, tgt, eps=0.0):
    """Loss of each row of x [rows, D] for its target (fp32): the full softmax's cross-entropy
    with label smoothing eps, or the adaptive softmax's negative log-likelihood (as
    cpu/cpu_model.c and Transformer-XL's ProjectedAdaptiveLogSoftmax): the head scores the
    shortlist and one column per tail cluster, cluster i's column shortlist + clusters - i."""
    nc = len(c["cutoffs"])
    w0, b0, proj0 = out_layer(p, c, 0)
    if nc == 0:
        return F.cross_entropy(F.linear(x, w0, b0).float(), tgt, reduction="none",
                               label_smoothing=eps)
    h0 = x if proj0 is None else x @ proj0
    head = F.linear(h0, torch.cat([w0, p["crit.cluster_weight"]]),
                    torch.cat([b0, p["crit.cluster_bias"]]))
    head_lp = F.log_softmax(head.float(), dim=-1)
    nll = torch.zeros(tgt.shape[0], dtype=torch.float32, device=x.device)
    for i in range(nc + 1):
        idx, t = cluster_rows(tgt, c["cut"][i], c["cut"][i + 1])
        lp_head = head_lp.index_select(0, idx)
        if i == 0:
            lp = lp_head.gather(1, t[:, None]).squeeze(1)
        else:
            w, b, proj = out_layer(p, c, i)
            xi = x.index_select(0, idx)
            tail_lp = F.log_softmax(F.linear(xi if proj is None else xi @ proj, w, b).float(), dim=-1)
            lp = lp_head[:, c["cut"][1] + nc - i] + tail_lp.gather(1, t[:, None]).squeeze(1)
        nll = nll.index_copy(0, idx, -lp)
    return nll


def read_words(path):
    """The words of a text as train/corpus.c splits it (bytes; spaces, tabs, CR, VT, FF), each
    line followed by None for its <eos>."""
    out = []
    with open(path, "rb") as f:
        for line in f:
            out.extend(line.split())
            out.append(None)
    return out


def vocabulary(words):
    """Our vocabulary of a training text, as tt_vocab_build: each word with <eos> (a count per
    line) and <unk> (count 0 unless in the text), most frequent first, ties in byte order."""
    counts = {b"<unk>": 0}
    for w in words:
        w = b"<eos>" if w is None else w
        counts[w] = counts.get(w, 0) + 1
    return sorted(counts, key=lambda w: (-counts[w], w))


def to_ids(words, vocab):
    ids = {w: i for i, w in enumerate(vocab)}
    unk, eos = ids[b"<unk>"], ids[b"<eos>"]
    return [eos if w is None else ids.get(w, unk) for w in words]


def load_checkpoint(ckpt_dir, shapes, values, split_path, who):
    """Our checkpoint's weights (every tensor of `shapes`, name -> (shape, std), and nothing
    else), and the split's ids in its vocabulary; on the GPU when there is one."""
    from safetensors.torch import load_file
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    p = {k: v.to(dev) for k, v in load_file(f"{ckpt_dir}/model.safetensors").items()}
    want = {k: tuple(s) for k, (s, _) in shapes.items()}
    got = {k: tuple(v.shape) for k, v in p.items()}
    if want != got:
        diff = sorted(set(want.items()) ^ set(got.items()))[:4]
        sys.exit(f"{who}: {ckpt_dir}/model.safetensors does not hold the model of "
                 f"'{values}' (first differences, name and shape: {diff})")
    with open(f"{ckpt_dir}/vocab.txt", "rb") as f:
        vocab = [w for w in f.read().split(b"\n") if w]
    return p, torch.tensor(to_ids(read_words(split_path), vocab), device=dev), dev


def check(values, ckpt_dir, split_path):
    c = parse_values(values)
    p, ids, dev = load_checkpoint(ckpt_dir, param_shapes(c), values, split_path, "torch_tt.py")
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
            x = hidden(p, c, w[:, :N], False, mask)
            l = row_losses(p, c, x.reshape(-1, c["D"]), w[:, 1:].reshape(-1)).view(len(s), N)
            fs = torch.tensor(first_scored[b0:b0 + 256], device=dev)
            keep = torch.arange(N, device=dev)[None, :] >= fs[:, None]
            nll += float(l[keep].double().sum())
            count += int(keep.sum())
    print(f"peer perplexity {math.exp(nll / count):.3f} over {count} tokens (mean nll "
          f"{nll / count:.12f})")


class Net(torch.nn.Module):
    """The parameters of init_params as a module (DistributedDataParallel wraps modules): the
    mean loss of a batch."""

    def __init__(self, c, p, mask):
        super().__init__()
        self.c, self.mask, self.names = c, mask, list(p)
        self.ps = torch.nn.ParameterList([torch.nn.Parameter(p[k].detach()) for k in self.names])

    def forward(self, tok, tgt):
        p = dict(zip(self.names, self.ps))
        x = hidden(p, self.c, tok, True, self.mask)
        return row_losses(p, self.c, x.reshape(-1, self.c["D"]), tgt.reshape(-1), self.c["eps"]).mean()


def time_training(values, compile_, bf16, steps, corpus, capture, ddp=False):
    c = parse_values(values)
    rank, world = 0, 1
    if ddp:  # under torchrun: its variables, NCCL
        import torch.distributed as dist
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl")
        rank, world = dist.get_rank(), dist.get_world_size()
    dev = "cuda"
    # nonzero's data-dependent sizes inside the graph (dynamo's own hint at that graph break), so
    # that the adaptive softmax compiles with the rest instead of running eagerly between graphs
    torch._dynamo.config.capture_dynamic_output_shape_ops = capture
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    p = init_params(c, dev)
    mask = causal_mask(c["N"], dev) if c["causal"] else None
    B, N, V, D = c["B"], c["N"], c["V"], c["D"]

    if ddp:
        net = Net(c, p, mask)
        model = torch.nn.parallel.DistributedDataParallel(net, device_ids=[torch.cuda.current_device()],
                                                          gradient_as_bucket_view=True)
        fwd = torch.compile(model) if compile_ else model
        opt = torch.optim.Adam(net.parameters(), lr=2.5e-4, fused=True)

        def step(tok, tgt):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                loss = fwd(tok, tgt)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 0.25)
            opt.step()
            return loss

        fn = step
    else:
        opt = torch.optim.Adam(p.values(), lr=2.5e-4)

        def step(tok, tgt):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                x = hidden(p, c, tok, True, mask)
                loss = row_losses(p, c, x.reshape(-1, D), tgt.reshape(-1), c["eps"]).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(p.values(), 0.25)
            opt.step()
            return loss

        fn = torch.compile(step) if compile_ else step
    if corpus:  # B random windows of N + 1 tokens each
        words = read_words(corpus)
        vocab = vocabulary(words)
        if len(vocab) != V:
            sys.exit(f"torch_tt.py: {corpus} makes a vocabulary of {len(vocab)} words, not V {V}")
        if len(words) <= N + 1:
            sys.exit(f"torch_tt.py: {corpus} has {len(words)} tokens, too few for windows of {N + 1}")
        ids = torch.tensor(to_ids(words, vocab), device=dev)
        rng = random.Random(rank)
        at = torch.arange(N + 1, device=dev)
        batches = [ids[torch.tensor([rng.randrange(len(ids) - N) for _ in range(B)],
                                    device=dev)[:, None] + at] for _ in range(8)]
    else:
        torch.manual_seed(1 + rank)
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
    if compile_ and c["cutoffs"] and not capture:
        mode += " (nonzero outside the graph)"
    if ddp:
        mode += f", DistributedDataParallel on {world} GPUs, {B} sequences each"
        torch.distributed.destroy_process_group()
    if rank == 0:
        print(f"peer {mode}: {ms:.3f} ms/step, {world * B * N / ms * 1e3:.0f} tokens/s, peak "
              f"memory {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")


def option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        time_training(sys.argv[2], "--compile" in sys.argv, "--bf16" in sys.argv,
                      int(option("--steps", 50)), option("--corpus", None),
                      "--no-capture" not in sys.argv, "--ddp" in sys.argv)
