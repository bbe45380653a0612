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
#include "util.h"

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
            "  --json              one JSON object\n"
            "  -h, --help\n");
}

int main(int argc, char **argv)
{
    enum { CKPT = 256, SPLIT, STRIDE, BATCH, DEVICE, JSON, GPUS };
    static const struct option longs[] = {
        {"checkpoint", required_argument, 0, CKPT}, {"split", required_argument, 0, SPLIT},
        {"stride", required_argument, 0, STRIDE},   {"batch", required_argument, 0, BATCH},
        {"device", required_argument, 0, DEVICE},   {"json", no_argument, 0, JSON},
        {"gpus", required_argument, 0, GPUS},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    const char *ckpt = NULL, *split = "valid", *device = "auto";
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
        case 'h': usage(stdout); return 0;
        default: return tt_opt_refuse("tt-eval", c, argv);
        }
    }
    if (optind != argc - 1 || !ckpt) {
        fprintf(stderr, "tt-eval: usage: tt-eval SPEC --checkpoint PATH [--split valid|test]\n");
        return 2;
    }
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
