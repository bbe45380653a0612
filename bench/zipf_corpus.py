#!/usr/bin/env python3
"""A synthetic word corpus whose word frequencies follow Zipf's law, so that the trainer can be
timed at a real corpus' shapes (WikiText-103: 267,735 words, adaptive softmax) without that corpus.

  zipf_corpus.py OUTDIR [--vocab V] [--train-tokens T] [--valid-tokens T] [--test-tokens T]
                        [--exponent S] [--min-len A] [--max-len B] [--seed K] [--cutoffs C1,C2,..]
                        [--chunk-words W]

Writes OUTDIR/train.txt, valid.txt and test.txt: lines ("sentences") of A to B words (uniform),
each word w<r> drawn with probability proportional to 1 / (r + 1)^S, r in [0, V - 2). Our
vocabulary (train/corpus.c) is every distinct word of the training text plus <eos> (one per
line) and <unk> (always added, count 0 here), so V - 2 word types give a vocabulary of exactly V:
every type is made to occur in train (the types that sampling missed are added once each, shuffled
in), and valid and test use only those types (no <unk>). Token counts include the <eos> of each
line, as the trainer counts them. The same seed writes the same files. --chunk-words W draws and
writes the training text W words at a time (a One-Billion-Word-sized corpus does not fit in memory
as one list), the missing types shuffled into the last chunk: other files than without it, the
same for the same W. Prints how the training
tokens fall into the clusters of --cutoffs under our vocabulary's order (most frequent first).
This file is the project's own code; it uses only the standard library.
"""
import argparse
import itertools
import os
import random
import sys


def zipf_cum(types, s):
    """Cumulative weights 1 / (r + 1)^s, r in [0, types)."""
    return list(itertools.accumulate((r + 1) ** -s for r in range(types)))


def sample_words(rng, cum, tokens, mean_len):
    """Word ranks drawn from the weights, as many as make about `tokens` tokens with one <eos>
    per line of mean_len words."""
    return rng.choices(range(len(cum)), cum_weights=cum,
                       k=max(1, round(tokens * mean_len / (mean_len + 1))))


def split_lines(rng, words, min_len, max_len):
    """The words cut into lines of min_len..max_len words (the last one may be shorter)."""
    lines, at = [], 0
    while at < len(words):
        n = rng.randint(min_len, max_len)
        lines.append(words[at:at + n])
        at += n
    return lines


def write(path, lines, names):
    with open(path, "w", encoding="ascii") as f:
        for line in lines:
            f.write(" ".join(names[r] for r in line))
            f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--vocab", type=int, default=267735,
                    help="the vocabulary size our trainer will see, <eos> and <unk> included")
    ap.add_argument("--train-tokens", type=int, default=4_000_000)
    ap.add_argument("--valid-tokens", type=int, default=200_000)
    ap.add_argument("--test-tokens", type=int, default=200_000)
    ap.add_argument("--exponent", type=float, default=1.0, help="Zipf exponent S")
    ap.add_argument("--min-len", type=int, default=5)
    ap.add_argument("--max-len", type=int, default=45)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunk-words", type=int, default=0,
                    help="draw and write the training text this many words at a time (0: at once)")
    ap.add_argument("--cutoffs", default="20000,40000,200000",
                    help="clusters to report the training tokens' shares of")
    a = ap.parse_args()
    types = a.vocab - 2
    if types < 1 or not 1 <= a.min_len <= a.max_len or a.exponent <= 0:
        sys.exit("zipf_corpus.py: need --vocab of at least 3, 1 <= --min-len <= --max-len and "
                 "--exponent above 0")
    cutoffs = [int(x) for x in a.cutoffs.split(",")] if a.cutoffs else []
    os.makedirs(a.outdir, exist_ok=True)
    names = [f"w{r}" for r in range(types)]
    cum = zipf_cum(types, a.exponent)
    mean_len = (a.min_len + a.max_len) / 2

    # train: sampled, then each type that sampling missed once more, shuffled in (rare types
    # are missed when T is small against V: rank r occurs about T / ((r + 1)^S H) times)
    rng = random.Random(f"zipf-corpus {a.seed} train")
    counts = [0] * types
    n_words = n_lines = 0
    want = max(1, round(a.train_tokens * mean_len / (mean_len + 1)))  # as sample_words
    chunk = a.chunk_words if a.chunk_words > 0 else want
    with open(os.path.join(a.outdir, "train.txt"), "w", encoding="ascii") as f:
        while n_words < want or n_words == 0:
            k = min(chunk, want - n_words)
            words = rng.choices(range(types), cum_weights=cum, k=k)
            n_words += k
            for r in words:
                counts[r] += 1
            if n_words >= want:  # the last chunk: each type that sampling missed, shuffled in
                missing = [r for r in range(types) if counts[r] == 0]
                for r in missing:
                    counts[r] = 1
                words.extend(missing)
                n_words += len(missing)
                rng.shuffle(words)
            elif a.chunk_words <= 0:
                raise AssertionError("one draw makes the whole text")
            lines = split_lines(rng, words, a.min_len, a.max_len)
            n_lines += len(lines)
            for line in lines:
                f.write(" ".join(names[r] for r in line))
                f.write("\n")
    n = n_words + n_lines
    print(f"train: {n} tokens ({n_words} words, {n_lines} lines), {types} word types + "
          f"<eos> + <unk> = vocabulary {a.vocab}; {len(missing)} rare types added once each "
          f"({100 * len(missing) / n:.2f}% of the tokens)")

    # the clusters' shares of training targets, ids in our vocabulary's order (count, then bytes:
    # equal counts have equal shares, so the tie order does not matter here)
    ordered = sorted(counts + [n_lines, 0], reverse=True)
    total = sum(ordered)
    bounds = [0] + [c for c in cutoffs if c < a.vocab] + [a.vocab]
    shares = [sum(ordered[lo:hi]) / total for lo, hi in zip(bounds, bounds[1:])]
    print("train tokens per cluster (ids " + ", ".join(f"{lo}..{hi - 1}" for lo, hi in
                                                      zip(bounds, bounds[1:])) + "): " +
          ", ".join(f"{100 * s:.2f}%" for s in shares))

    for split, n in (("valid", a.valid_tokens), ("test", a.test_tokens)):
        rng = random.Random(f"zipf-corpus {a.seed} {split}")
        words = sample_words(rng, cum, n, mean_len)
        lines = split_lines(rng, words, a.min_len, a.max_len)
        write(os.path.join(a.outdir, f"{split}.txt"), lines, names)
        print(f"{split}: {sum(map(len, lines)) + len(lines)} tokens ({len(lines)} lines)")


if __name__ == "__main__":
    main()
