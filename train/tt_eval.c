/* tt-eval: perplexity of a checkpoint on a split, as MODEL.md section 2 defines it.
 * Exit codes: 0 done, 1 a run-time failure, 2 bad usage, spec, data or checkpoint. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "cpu_model.h"
#include "engine.h"
#include "evaluate.h"
#include "session.h"
#include "tt.h"
#include "util.h"

/* The most a --text file may hold. */
#define TEXT_MAX_BYTES (1u << 30)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tt-eval SPEC --checkpoint PATH [--split valid|test] [options]\n"
            "Scores every token of the split exactly once with the checkpoint's weights.\n\n"
            "  --checkpoint PATH   model.safetensors, a step folder, or a checkpoint folder (its\n"
            "                      latest)\n"
            "  --split S           valid (default) or test\n"
            "  --stride S          windows of seq_len tokens advance by S and score their last S\n"
            "                      (default: seq_len, the paper's protocol; kind: tensorized)\n"
            "  --batch B           windows per forward pass (default: train.batch); Transformer-XL:\n"
            "                      streams read side by side, each with its own memory\n"
            "  --device D          cpu, cuda, or auto (default: the GPU when there is one)\n"
            "  --gpus N            share the split among N GPUs of this host (or all), one\n"
            "                      process each; under a launcher (torchrun, mpirun, srun) its\n"
            "                      variables say the ranks instead\n"
            "  --text FILE         score FILE instead of a split: every word and each line's\n"
            "                      <eos>, after an <eos> (libtt's tt_score; --stride applies)\n"
            "  --per-line          with --text: each line on its own, one JSON object a line\n"
            "                      (logprob in nats, tokens, perplexity), as n-best rescoring\n"
            "                      wants\n"
            "  --json              one JSON object (with --per-line: the whole file's, last)\n"
            "  -h, --help\n");
}

/* One JSON object: a line's (or the whole text's) log-probability, tokens and perplexity. */
static void print_score(const char *key, long line, double logprob, size_t tokens)
{
    printf("{");
    if (key) printf("\"%s\":%ld,", key, line);
    printf("\"logprob\":%.17g,\"tokens\":%zu,\"perplexity\":%.6f}\n", logprob, tokens,
           exp(-logprob / (double)tokens));
}

/* The log-probability of text[0..len) read as lines after an <eos> (each line ending in one):
 * the sum of tt_score's, into *logprob, and the tokens scored into *tokens. */
static tt_status score_words(tt_model *m, const char *text, int stride, double *logprob,
                             size_t *tokens, tt_error *e)
{
    size_t n = 0;
    if (tt_tokenize(m, text, 1, NULL, 0, &n, NULL, e) != TT_OK) return e->code;
    int32_t *ids = tt_xmalloc((n + 1) * sizeof *ids);
    double *lp = tt_xmalloc((n ? n : 1) * sizeof *lp);
    ids[0] = tt_eos_id(m);
    tt_status rc = tt_tokenize(m, text, 1, ids + 1, n, &n, NULL, e);
    *logprob = 0;
    *tokens = n;
    if (rc == TT_OK && n) rc = tt_score(m, ids, n + 1, stride, lp, e);
    for (size_t i = 0; rc == TT_OK && i < n; i++) *logprob += lp[i];
    free(ids), free(lp);
    return rc;
}

/* tt-eval --text: FILE scored through libtt, whole or (--per-line) line by line. */
static int score_text(const char *spec, const char *ckpt, const char *path, int per_line,
                      int json, const char *split, long stride, long batch, long gpus,
                      const char *device)
{
    if (!path) {
        fprintf(stderr, "tt-eval: --per-line goes with --text FILE\n");
        return 2;
    }
    if (split || batch || gpus) {
        fprintf(stderr, "tt-eval: --text scores one file on one device: not with --%s\n",
                split ? "split" : batch ? "batch" : "gpus");
        return 2;
    }
    char msg[1024], *text = NULL;
    size_t len;
    if (tt_read_file(path, TEXT_MAX_BYTES, &text, &len, msg, sizeof msg) != 0) {
        fprintf(stderr, "tt-eval: %s\n", msg);
        return 2;
    }
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        fprintf(stderr, "tt-eval: %s: a NUL byte at offset %zu: not text\n", path,
                (size_t)(nul - text));
        free(text);
        return 2;
    }
    tt_model *m = NULL;
    tt_error e;
    int status = 2;
    if (tt_open(&m, spec, ckpt, device, &e) != TT_OK) goto fail;
    if (stride > tt_context_length(m)) {
        snprintf(e.message, sizeof e.message, "--stride %ld is more than seq_len %d", stride,
                 tt_context_length(m));
        goto fail;
    }
    size_t tokens = 0, k;
    /* the whole text read once first: a file no corpus may be is bad input (exit 2) */
    if (tt_tokenize(m, text, 1, NULL, 0, &tokens, NULL, &e) != TT_OK) {
        fprintf(stderr, "tt-eval: %s: %s\n", path, e.message);
        goto done;
    }
    if (!tokens) {
        snprintf(e.message, sizeof e.message, "%s: no words to score", path);
        goto fail;
    }
    tokens = 0;
    status = 1;
    double total = 0, lp;
    long lines = 0;
    const double t0 = tt_now_seconds();
    if (per_line) {
        for (char *line = text, *next; *line; line = next) {
            /* the line with its newline: an empty one is an <eos> alone */
            char *nl = strchr(line, '\n');
            next = nl ? nl + 1 : line + strlen(line);
            const char keep = *next;
            *next = '\0';
            const tt_status rc = score_words(m, line, (int)stride, &lp, &k, &e);
            *next = keep;
            if (rc != TT_OK) goto fail;
            print_score("line", ++lines, lp, k);
            total += lp;
            tokens += k;
        }
    } else if (score_words(m, text, (int)stride, &total, &tokens, &e) != TT_OK) {
        goto fail;
    }
    const double secs = tt_now_seconds() - t0;
    if (json || !per_line) {
        if (json)
            print_score(NULL, 0, total, tokens);
        else
            printf("%s: perplexity %.3f over %zu tokens (log-probability %.6f nats; checkpoint "
                   "step %ld) in %.1f s on %s\n", path, exp(-total / (double)tokens), tokens,
                   total, tt_checkpoint_step(m), secs, tt_device(m));
    }
    status = 0;
    goto done;
fail:
    fprintf(stderr, "tt-eval: %s\n", e.message);
done:
    free(text);
    tt_close(m);
    return status;
}

int main(int argc, char **argv)
{
    enum { CKPT = 256, SPLIT, STRIDE, BATCH, DEVICE, JSON, GPUS, TEXT, PER_LINE };
    static const struct option longs[] = {
        {"checkpoint", required_argument, 0, CKPT}, {"split", required_argument, 0, SPLIT},
        {"stride", required_argument, 0, STRIDE},   {"batch", required_argument, 0, BATCH},
        {"device", required_argument, 0, DEVICE},   {"json", no_argument, 0, JSON},
        {"gpus", required_argument, 0, GPUS},       {"text", required_argument, 0, TEXT},
        {"per-line", no_argument, 0, PER_LINE},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    const char *ckpt = NULL, *split = NULL, *device = "auto", *text = NULL;
    int per_line = 0;
    long stride = 0, batch = 0, gpus = 0; /* gpus: 0 not given, -1 all */
    int json = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        char *end;
        switch (c) {
        case CKPT: ckpt = optarg; break;
        case SPLIT: split = optarg; break;
        case STRIDE:
        case BATCH: {
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1) {
                fprintf(stderr, "tt-eval: --%s takes a positive number, not '%s'\n",
                        c == STRIDE ? "stride" : "batch", optarg);
                return 2;
            }
            *(c == STRIDE ? &stride : &batch) = v;
            break;
        }
        case DEVICE: device = optarg; break;
        case GPUS: {
            long v = strtol(optarg, &end, 10);
            if (!strcmp(optarg, "all")) {
                v = -1;
            } else if (!*optarg || *end || v < 1) {
                fprintf(stderr, "tt-eval: --gpus takes a positive number or all, not '%s'\n", optarg);
                return 2;
            }
            gpus = v;
            break;
        }
        case JSON: json = 1; break;
        case TEXT: text = optarg; break;
        case PER_LINE: per_line = 1; break;
        case 'h': usage(stdout); return 0;
        default: return tt_opt_refuse("tt-eval", c, argv);
        }
    }
    if (optind != argc - 1 || !ckpt) {
        fprintf(stderr, "tt-eval: usage: tt-eval SPEC --checkpoint PATH [--split valid|test]\n");
        return 2;
    }
    if (text || per_line)
        return score_text(argv[optind], ckpt, text, per_line, json, split, stride, batch, gpus,
                          device);
    if (!split) split = "valid";
    if (strcmp(split, "valid") && strcmp(split, "test")) {
        fprintf(stderr, "tt-eval: --split is valid or test, not '%s'\n", split);
        return 2;
    }
    char err[2048];
    tt_dist_env dist;
    if (tt_dist_from_env(&dist, err, sizeof err) != 0) {
        fprintf(stderr, "tt-eval: %s\n", err);
        return 2;
    }
    if (gpus && dist.world > 1) {
        fprintf(stderr, "tt-eval: --gpus under a launcher (%s's variables: rank %d of %d): the "
                "launcher starts the ranks\n", dist.from, dist.rank, dist.world);
        return 2;
    }
    int launched;
    if (gpus && (launched = tt_engine_launch("tt-eval", argc, argv, gpus)) >= 0) return launched;
    tt_session s;
    if (tt_session_open(&s, argv[optind], err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    const tt_model_spec *m = &s.spec.model;
    int status = 2;
    tt_tokens tokens = {0};
    tt_engine *eng = NULL;
    char where_runs[300];
    long step = 0;
    char *file = tt_checkpoint_model_file(ckpt, err, sizeof err);
    /* several GPUs: the windows (or streams) a pass rounded up to a whole number a rank */
    const long want = batch ? batch : s.spec.train.batch;
    const int passes = (int)((want + dist.world - 1) / dist.world * dist.world);
    if (!file || tt_engine_open_rank(&eng, device, &s.spec, &s.layout, passes, &dist, 60000,
                                     where_runs, sizeof where_runs, err, sizeof err) ||
        tt_checkpoint_load(file, &s.spec, &s.layout, &s.vocab, tt_engine_host(eng, 0), &step, err,
                           sizeof err) ||
        tt_session_tokens(&s, split, &tokens, err, sizeof err))
        goto fail;
    tt_engine_upload(eng);
    tt_engine_eval_batch(eng, (int)want); /* Transformer-XL's streams, as on one GPU */
    const bool txl = m->kind == TT_KIND_TXL;
    if (txl && stride) {
        tt_errf(err, sizeof err, "tt-eval: --stride is for kind: tensorized; Transformer-XL reads "
                "the split in segments with memory (the spec's eval: tgt_len, mem_len, clamp_len)");
        goto fail;
    }
    if (!stride) stride = m->seq_len;
    if (stride > m->seq_len) {
        tt_errf(err, sizeof err, "tt-eval: --stride %ld is more than seq_len %d", stride, m->seq_len);
        goto fail;
    }
    tt_eval_result r;
    const double t0 = tt_now_seconds();
    if (tt_engine_evaluate(eng, &tokens, (int)stride, 0, &r, err, sizeof err)) goto fail;
    const double secs = tt_now_seconds() - t0, ppl = exp(r.nll / r.scored);
    if (dist.rank != 0) { /* rank 0 reports the run */
        status = 0;
        goto done;
    }
    char on[320];
    snprintf(on, sizeof on, "%s", where_runs);
    if (dist.world > 1) snprintf(on, sizeof on, "%d x %.280s", dist.world, where_runs);
    const char *note = "causal: false: every position sees later tokens of its window, so this "
                       "perplexity is not a causal language-model score";
    const tt_eval_spec *ev = &s.spec.eval;
    if (txl && json)
        printf("{\"split\":\"%s\",\"perplexity\":%.6f,\"nll\":%.17g,\"tokens\":%ld,\"segments\":%ld,"
               "\"tgt_len\":%d,\"mem_len\":%d,\"clamp_len\":%d,\"step\":%ld,\"seconds\":%.3f}\n",
               split, ppl, r.nll / r.scored, r.scored, r.windows, ev->tgt_len, ev->mem_len,
               ev->clamp_len, step, secs);
    else if (txl)
        printf("%s perplexity %.3f over %ld tokens (tgt_len %d, mem_len %d, clamp_len %d, %ld "
               "segments; checkpoint step %ld) in %.1f s on %s\n",
               split, ppl, r.scored, ev->tgt_len, ev->mem_len, ev->clamp_len, r.windows, step, secs,
               on);
    else if (json)
        printf("{\"split\":\"%s\",\"perplexity\":%.6f,\"nll\":%.17g,\"tokens\":%ld,\"windows\":%ld,"
               "\"seq_len\":%d,\"stride\":%ld,\"step\":%ld,\"causal\":%s,\"seconds\":%.3f%s%s%s}\n",
               split, ppl, r.nll / r.scored, r.scored, r.windows, m->seq_len, stride, step,
               m->causal ? "true" : "false", secs, m->causal ? "" : ",\"note\":\"",
               m->causal ? "" : note, m->causal ? "" : "\"");
    else {
        printf("%s perplexity %.3f over %ld tokens (seq_len %d, stride %ld, %ld windows; "
               "checkpoint step %ld) in %.1f s on %s\n",
               split, ppl, r.scored, m->seq_len, stride, r.windows, step, secs, on);
        if (!m->causal) printf("NOTE: %s\n", note);
    }
    status = 0;
    goto done;
fail:
    fprintf(stderr, "%s\n", err);
done:
    free(file);
    tt_engine_close(eng);
    tt_tokens_free(&tokens);
    tt_session_close(&s);
    return status;
}
