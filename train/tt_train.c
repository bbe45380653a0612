/* tt-train: trains the spec'd model and writes checkpoints. The CPU path is the reference of
 * MODEL.md; two CPU runs of the same spec are bit-identical, and --resume continues the exact
 * trajectory (the data position and dropout masks are functions of the step; Transformer-XL's
 * memories and the early stopping's state come from the checkpoint's state.safetensors).
 * Exit codes: 0 done (or interrupted after writing a checkpoint), 1 a run-time failure,
 * 2 bad usage, spec, data or checkpoint. */
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cards.h"
#include "checkpoint.h"
#include "cpu_model.h"
#include "curve.h"
#include "engine.h"
#include "evaluate.h"
#include "optim.h"
#include "ranks.h"
#include "report.h"
#include "session.h"
#include "util.h"

static volatile sig_atomic_t g_stop_signal;
static void on_signal(int sig) { g_stop_signal = sig; }

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tt-train SPEC [options]\n"
            "Trains the model SPEC describes on its data.train, validating on data.valid.\n\n"
            "  --device D           cpu, cuda, or auto (default: the GPU when there is one)\n"
            "  --gpus N             train on N GPUs of this host (or all), one process each,\n"
            "                       each an equal share of every step's batch (train.batch);\n"
            "                       under a launcher (torchrun, mpirun, srun) its variables\n"
            "                       say the ranks instead\n"
            "  --shard-optimizer    several GPUs: each rank clips and steps a share of the\n"
            "                       parameters (reduce-scatter, then all-gather the weights)\n"
            "  --resume             continue from the newest checkpoint in the checkpoint folder\n"
            "  --checkpoint-dir D   checkpoint folder (default: train.checkpoint.dir, else\n"
            "                       runs/SPEC-NAME)\n"
            "  --stop-after K       stop after step K with a checkpoint, as an interrupt would\n"
            "  --log-every K        a progress line every K steps (default 10)\n"
            "  --log-json FILE      one JSON object per step and per validation, losses exact\n"
            "  --eval-tokens T      periodic validation on the first T tokens of data.valid\n"
            "                       (default: all; the final validation always uses all)\n"
            "  --patience K         stop when K validations in a row did not improve the best\n"
            "                       validation perplexity (default 0: never)\n"
            "  --skip-nonfinite K   skip up to K steps whose loss or gradient is not finite\n"
            "                       (their weights left as they were), instead of stopping at\n"
            "                       the first (default 0)\n"
            "  -q, --quiet          only the final summary\n"
            "  -h, --help\n");
}

typedef struct {
    const char *spec, *device, *ckpt_dir, *log_json;
    int resume, quiet;
    long stop_after, log_every, eval_tokens, patience, skip_nonfinite;
    long gpus; /* --gpus: 0 none given, -1 all */
    int shard;
} options;

static int parse_long(const char *opt, const char *s, long lo, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || v < lo) {
        fprintf(stderr, "tt-train: %s takes a number of at least %ld, not '%s'\n", opt, lo, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    enum { DEVICE = 256, RESUME, CKPT, STOP, LOGEVERY, LOGJSON, EVALTOK, PATIENCE, GPUS, SHARD,
           SKIPNF };
    static const struct option longs[] = {
        {"device", required_argument, 0, DEVICE},  {"resume", no_argument, 0, RESUME},
        {"checkpoint-dir", required_argument, 0, CKPT}, {"stop-after", required_argument, 0, STOP},
        {"log-every", required_argument, 0, LOGEVERY}, {"log-json", required_argument, 0, LOGJSON},
        {"eval-tokens", required_argument, 0, EVALTOK}, {"quiet", no_argument, 0, 'q'},
        {"patience", required_argument, 0, PATIENCE}, {"gpus", required_argument, 0, GPUS},
        {"shard-optimizer", no_argument, 0, SHARD}, {"skip-nonfinite", required_argument, 0, SKIPNF},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    o->device = "auto";
    o->log_every = 10;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":qh", longs, NULL)) != -1) {
        switch (c) {
        case DEVICE: o->device = optarg; break;
        case RESUME: o->resume = 1; break;
        case CKPT: o->ckpt_dir = optarg; break;
        case STOP: if (parse_long("--stop-after", optarg, 1, &o->stop_after)) return 2; break;
        case LOGEVERY: if (parse_long("--log-every", optarg, 1, &o->log_every)) return 2; break;
        case LOGJSON: o->log_json = optarg; break;
        case EVALTOK: if (parse_long("--eval-tokens", optarg, 0, &o->eval_tokens)) return 2; break;
        case PATIENCE: if (parse_long("--patience", optarg, 0, &o->patience)) return 2; break;
        case SHARD: o->shard = 1; break;
        case SKIPNF:
            if (parse_long("--skip-nonfinite", optarg, 0, &o->skip_nonfinite)) return 2;
            break;
        case GPUS:
            if (!strcmp(optarg, "all")) o->gpus = -1;
            else if (parse_long("--gpus", optarg, 1, &o->gpus)) return 2;
            break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        default: return tt_opt_refuse("tt-train", c, argv);
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "tt-train: expected one spec (usage: tt-train SPEC [options])\n");
        return 2;
    }
    o->spec = argv[optind];
    return 0;
}

static char *default_ckpt_dir(const char *spec_path)
{
    const char *base = strrchr(spec_path, '/');
    base = base ? base + 1 : spec_path;
    size_t n = strcspn(base, ".");
    return tt_xasprintf("runs/%.*s", (int)n, base);
}

static void fmt_time(double s, char *out, size_t n)
{
    long t = (long)(s + 0.5);
    snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* Model-FLOPs utilization of a GPU run: tokens/s times the training FLOPs per token that ttgen's
 * report counts, against the card's dense peak at the spec's precision. */
static void print_mfu(const tt_session *s, const char *device, double tokens_per_s)
{
    const tt_card *card = tt_card_lookup(device);
    const tt_precision prec = s->spec.train.precision;
    if (!card) {
        printf("MFU: unknown peak for %s\n", device);
        return;
    }
    tt_costs c;
    tt_costs_compute(&s->spec, s->layout.vocab, &c);
    const double peak = tt_card_peak_tflops(card, prec), f = c.train_total;
    printf("MFU %.1f%% of %s's %.0f TFLOP/s dense %s (train FLOPs %.3g %sFLOP/token)\n",
           100 * tokens_per_s * f / (peak * 1e12), tt_card_label(card), peak,
           tt_precision_name(prec), f >= 1e9 ? f / 1e9 : f / 1e6, f >= 1e9 ? "G" : "M");
}

/* Brings the engine's weights, moments and memories to the host and writes them, with the early
 * stopping's state in st, as step's checkpoint. Several GPUs: every rank takes part (the
 * memories are gathered from all), rank 0 alone (lead) writes. */
static int save(tt_engine *eng, const tt_session *s, tt_train_state *st, const char *dir, long step,
                bool lead, char *where, size_t wlen, char *err, size_t errlen)
{
    st->step = step;
    st->mem_len = tt_engine_memory(eng, st->mems, &st->mem_step);
    tt_engine_download(eng); /* every rank: a sharded optimizer's moments are gathered */
    if (!lead) return 0;
    tt_checkpoint ck = {&s->spec, &s->layout, &s->vocab, tt_engine_host(eng, 0),
                        tt_engine_host(eng, 1), tt_engine_host(eng, 2), step, st};
    return tt_checkpoint_save(dir, &ck, where, wlen, err, errlen);
}

/* Restores what state.safetensors beside model_file holds: the memories into the engine, and the
 * early stopping's state into st. A checkpoint without it, or with memories of another batch, is
 * resumed without what is missing, saying so in one line. */
static int resume_state(tt_engine *eng, const tt_session *s, const char *model_file, long step,
                        tt_train_state *st, char *err, size_t errlen)
{
    tt_train_state got;
    const int rc = tt_checkpoint_load_state(model_file, &s->layout, s->spec.train.batch, &got, err,
                                            errlen);
    if (rc < 0) return -1;
    if (rc > 0) fprintf(stderr, "tt-train: note: %s\n", err);
    if (rc != 1 && got.step != step) {
        free(got.mems);
        return tt_errf(err, errlen, "%s: the state.safetensors beside it is of step %ld, this file "
                       "of step %ld", model_file, got.step, step);
    }
    if (rc != 1 && got.seed != s->spec.train.seed)
        fprintf(stderr, "tt-train: note: the checkpoint's run had train.seed %" PRIu64 ", the spec "
                "has %" PRIu64 ": the dropout masks from here on follow the spec\n", got.seed,
                s->spec.train.seed);
    tt_engine_set_memory(eng, got.mems, got.mem_len, got.mem_step);
    free(got.mems);
    st->best_valid_ppl = got.best_valid_ppl;
    st->best_step = got.best_step;
    st->stale = got.stale;
    st->skipped = got.skipped;
    return 0;
}

/* Step's options (a test's fault: step nan_step's label smoothing NaN, so its loss and gradient). */
static tt_lm_opts train_opts(const tt_train_spec *ts, long step, long nan_step)
{
    return (tt_lm_opts){.train = true, .seed = ts->seed, .step = (uint64_t)step,
                        .label_smoothing = step == nan_step ? NAN : (float)ts->label_smoothing};
}

/* A step whose loss or gradient norm is not finite, which left the weights as they were: logged,
 * and skipped while --skip-nonfinite allows (0), else -1 with the line that stops the run in err
 * (the step, the numbers, the first gradient that is not finite, the last checkpoint). */
static int nonfinite_step(tt_engine *eng, const options *o, tt_train_state *st, long step,
                          double loss, double gnorm, double lr, FILE *json, const char *last_ckpt,
                          char *err, size_t errlen)
{
    char what[256], tensor[128], num[2][32];
    for (int i = 0; i < 2; i++) { /* a NaN's sign is noise: "NaN" whatever it is */
        const double x = i ? gnorm : loss;
        if (isnan(x)) snprintf(num[i], sizeof num[i], "NaN");
        else snprintf(num[i], sizeof num[i], "%g", x);
    }
    if (tt_engine_nonfinite(eng, tensor, sizeof tensor))
        snprintf(what, sizeof what, "the loss is %s, the gradient norm %s (first non-finite "
                 "gradient: %s)", num[0], num[1], tensor);
    else
        snprintf(what, sizeof what, "the loss is %s, the gradient norm %s", num[0], num[1]);
    if (json) {
        fprintf(json, "{\"step\":%ld,\"skipped\":true,\"lr\":%.17g}\n", step, lr);
        fflush(json);
    }
    if (st->skipped < o->skip_nonfinite) {
        st->skipped++;
        if (!o->quiet)
            printf("step %ld: %s: skipped, the weights left as they were (%ld of "
                   "--skip-nonfinite %ld)\n", step, what, st->skipped, o->skip_nonfinite);
        return 0;
    }
    return tt_errf(err, errlen, "step %ld: %s; stopped, the weights of step %ld "
                   "unchanged and not saved; last checkpoint: %s (lower train.optimizer.lr, or "
                   "--skip-nonfinite K)", step, what, step - 1, last_ckpt[0] ? last_ckpt : "none");
}

int main(int argc, char **argv)
{
    options o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    char err[2048];
    tt_dist_env dist;
    if (tt_dist_from_env(&dist, err, sizeof err) != 0) {
        fprintf(stderr, "tt-train: %s\n", err);
        return 2;
    }
    if (o.gpus && dist.world > 1) {
        fprintf(stderr, "tt-train: --gpus under a launcher (%s's variables: rank %d of %d): the "
                "launcher starts the ranks\n", dist.from, dist.rank, dist.world);
        return 2;
    }
    if (o.gpus && (rc = tt_engine_launch("tt-train", argc, argv, o.gpus)) >= 0) return rc;
    const bool lead = dist.rank == 0; /* prints, logs and writes checkpoints */
    if (!lead) o.quiet = 1, o.log_json = NULL;
    tt_session s;
    if (tt_session_open(&s, o.spec, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    const tt_train_spec *ts = &s.spec.train;
    const tt_model_spec *m = &s.spec.model;
    const int n = m->seq_len, batch = ts->batch;
    int status = 2;
    tt_tokens train = {0}, valid = {0};
    int32_t *in = NULL, *tg = NULL;
    FILE *json = NULL;
    tt_curve *curve = NULL;
    tt_engine *eng = NULL;
    tt_train_state st = {0};
    char where_runs[300];
    char *ckpt_dir = o.ckpt_dir ? tt_xstrdup(o.ckpt_dir)
                     : ts->checkpoint_dir ? tt_xstrdup(ts->checkpoint_dir)
                                          : default_ckpt_dir(o.spec);
    int cleaned = 0; /* the folder checked before training, not at its first save */
    if (lead && tt_checkpoint_prepare(ckpt_dir, &cleaned, err, sizeof err) != 0) goto fail;
    if (cleaned && !o.quiet)
        printf("note: %s: %d temporar%s of an interrupted run put right\n", ckpt_dir, cleaned,
               cleaned == 1 ? "y" : "ies");
    if (tt_session_tokens(&s, "train", &train, err, sizeof err) != 0) goto fail;
    if (train.n / batch < n + 2) {
        tt_errf(err, sizeof err, "%s: %ld training tokens are too few for batch %d x seq_len %d",
                s.spec.data.train, train.n, batch, n);
        goto fail;
    }
    const int have_valid = s.spec.data.valid != NULL;
    if (have_valid && tt_session_tokens(&s, "valid", &valid, err, sizeof err) != 0) goto fail;

    if (tt_engine_open_rank(&eng, o.device, &s.spec, &s.layout, batch, &dist, 60000, where_runs,
                            sizeof where_runs, err, sizeof err) != 0)
        goto fail;
    float *w = tt_engine_host(eng, 0), *am = tt_engine_host(eng, 1), *av = tt_engine_host(eng, 2);
    long step = 0;
    /* what a checkpoint holds besides weights and moments: the early stopping's state, and
     * Transformer-XL's memories [layers, batch, mem_len, d_model] */
    const size_t mem_floats =
        m->kind == TT_KIND_TXL ? (size_t)m->layers * batch * m->mem_len * m->d_model : 0;
    st = (tt_train_state){.seed = ts->seed, .mem_step = -1, .batch = batch,
                          .best_valid_ppl = INFINITY,
                          .mems = mem_floats ? tt_xmalloc(mem_floats * sizeof(float)) : NULL};
    if (o.resume) {
        char *file = tt_checkpoint_model_file(ckpt_dir, err, sizeof err);
        if (!file) {
            fprintf(stderr, "tt-train: --resume: %s\n", err);
            goto done;
        }
        int lrc = tt_checkpoint_load(file, &s.spec, &s.layout, &s.vocab, w, &step, err, sizeof err);
        lrc = lrc ? lrc : tt_checkpoint_load_optim(file, &s.layout, am, av, err, sizeof err);
        lrc = lrc ? lrc : resume_state(eng, &s, file, step, &st, err, sizeof err);
        free(file);
        if (lrc) goto fail;
        if (!o.quiet) printf("resumed from %s at step %ld\n", ckpt_dir, step);
    } else {
        tt_layout_init(&s.layout, w, ts->seed);
    }
    tt_engine_upload(eng);
    const int sharded = o.shard && tt_engine_shard_optimizer(eng);
    if (o.shard && !sharded && !o.quiet)
        printf("note: --shard-optimizer: one device, nothing to share the optimizer with\n");
    if (lead) curve = tt_curve_open(ckpt_dir, step, o.quiet);
    if (o.log_json && !(json = fopen(o.log_json, o.resume ? "a" : "w"))) {
        tt_errf(err, sizeof err, "%s: cannot open for writing", o.log_json);
        goto fail;
    }
    double params = 0;
    for (int i = 0; i < s.layout.n_params; i++) params += (double)s.layout.params[i].numel;
    if (!o.quiet) {
        char gpus[64] = "", share[96] = "";
        if (dist.world > 1) {
            snprintf(gpus, sizeof gpus, "%d x ", dist.world);
            snprintf(share, sizeof share, " (each %d sequences of a batch; NCCL%s)",
                     batch / dist.world, sharded ? "; the optimizer sharded" : "");
        }
        printf("tt-train %s on %s%s%s: %.0f parameters, vocab %ld, %ld training tokens, batch %d x "
               "%d, %ld steps; checkpoints in %s\n",
               o.spec, gpus, where_runs, share, params, s.vocab.n, train.n, batch, n, ts->steps,
               ckpt_dir);
    }
    size_t moments = 0;
    if (!o.quiet && tt_engine_device_bytes(eng, &moments))
        printf("device memory%s: %.1f MiB (weights, gradients, activations; Adam's moments %.1f MiB%s)\n",
               dist.world > 1 ? " a GPU" : "", tt_engine_device_bytes(eng, NULL) / 1048576.0,
               moments / 1048576.0, sharded ? ", this rank's shard" : "");
    in = tt_xmalloc((size_t)batch * n * sizeof *in);
    tg = tt_xmalloc((size_t)batch * n * sizeof *tg);
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    const double t0 = tt_now_seconds();
    double window_loss = 0, window_t = t0;
    long window_steps = 0, first = step;
    tt_eval_result ev = {0};
    int stopped_early = 0;
    long saved_step = -1;
    char where[1024], last_ckpt[1024] = "";
    if (o.resume) snprintf(last_ckpt, sizeof last_ckpt, "%s (step %ld)", ckpt_dir, step);
    /* a test's fault: step K's loss and gradients made NaN (label smoothing NaN), either device */
    const long nan_step = tt_env_long("TT_FAULT_NAN_STEP", 0, LONG_MAX, 0);
    const long last = o.stop_after && o.stop_after < ts->steps ? o.stop_after : ts->steps;
    /* a stop asked for by a signal: on several GPUs every rank stops after the same step, the
     * first whose flags (the ranks' signals summed over them) are not 0 */
    bool interrupted = dist.world == 1 && g_stop_signal != 0;
    /* One device (tt_engine_pipelined): step + 1 is submitted before step's result is waited for,
     * unless step is one the host works at (a validation, a checkpoint, the last, a stop asked
     * for), so that the GPU runs it while the host reads this one's result and prepares the
     * next batch; ahead is the step so submitted (0: none). */
    const bool pipelined = tt_engine_pipelined(eng);
    long ahead = 0;
    while (step < last && (!interrupted || ahead)) {
        step++;
        tt_lm_result r;
        double gnorm = 0; /* step's, from tt_engine_result when pipelined */
        if (ahead != step) {
            tt_engine_flag(eng, g_stop_signal != 0);
            const bool continues = tt_tokens_batch(&train, batch, n, step, in, tg);
            const tt_lm_opts lo = train_opts(ts, step, nan_step);
            if (pipelined) tt_engine_submit(eng, in, tg, &lo, step, false);
            else gnorm = tt_engine_train_step(eng, in, tg, &lo, step, continues, &r);
        }
        ahead = 0;
        /* what the host does after this step (the end of training validates on the whole split;
         * --stop-after is an interruption, and last <= ts->steps) */
        const bool final = step == ts->steps;
        const bool validates =
            have_valid && ((ts->eval_interval && step % ts->eval_interval == 0) || final);
        const bool saves =
            (ts->checkpoint_interval && step % ts->checkpoint_interval == 0) || step == last;
        if (pipelined && !validates && !saves && !interrupted && g_stop_signal == 0) {
            tt_tokens_batch(&train, batch, n, step + 1, in, tg);
            const tt_lm_opts lo = train_opts(ts, step + 1, nan_step);
            /* should step turn out not finite with no skip left, the run stops at it: step + 1
             * then leaves the weights as step left them */
            tt_engine_submit(eng, in, tg, &lo, step + 1, st.skipped >= o.skip_nonfinite);
            ahead = step + 1;
        }
        if (pipelined) gnorm = tt_engine_result(eng, &r);
        interrupted = dist.world > 1 ? r.flags > 0 : g_stop_signal != 0;
        tt_rank_beat(); /* several GPUs: the launcher sees this rank's progress */
        const double loss = r.loss_sum / r.scored;
        const double lr = tt_lr_at(ts, step);
        const bool finite = isfinite(loss) && isfinite(gnorm);
        if (!finite && nonfinite_step(eng, &o, &st, step, loss, gnorm, lr, json, last_ckpt, err,
                                      sizeof err)) {
            status = 1;
            if (!lead) goto done; /* rank 0 says it */
            goto fail;
        }
        if (finite) {
            window_loss += loss;
            window_steps++;
            tt_curve_loss(curve, step, loss);
        }
        if (json && finite) { /* flushed: a run is watched through its log */
            fprintf(json, "{\"step\":%ld,\"loss\":%.17g,\"nll\":%.17g,\"lr\":%.17g,\"grad_norm\":%.17g}\n",
                    step, loss, r.nll_sum / r.scored, lr, gnorm);
            fflush(json);
        }
        if (!o.quiet && window_steps && (step % o.log_every == 0 || step == last)) {
            const double now = tt_now_seconds(), mean = window_loss / window_steps;
            const double tps = (double)window_steps * batch * n / (now - window_t);
            char eta[32];
            fmt_time((double)(last - step) * batch * n / tps, eta, sizeof eta);
            printf("step %ld/%ld  loss %.4f  ppl %.2f  lr %.3e  |g| %.3f  %.0f tok/s  ETA %s\n",
                   step, ts->steps, mean, exp(mean), lr, gnorm, tps, eta);
            fflush(stdout);
            window_loss = 0;
            window_steps = 0;
            window_t = now;
        }
        if (validates) {
            const double e0 = tt_now_seconds();
            if (tt_engine_evaluate(eng, &valid, n, final ? 0 : o.eval_tokens, &ev, err, sizeof err))
                goto fail;
            const double vppl = exp(ev.nll / ev.scored);
            if (vppl < st.best_valid_ppl) {
                st.best_valid_ppl = vppl;
                st.best_step = step;
                st.stale = 0;
            } else {
                st.stale++;
            }
            if (!o.quiet)
                printf("step %ld: valid ppl %.3f over %ld tokens (%.1f s)%s\n", step,
                       exp(ev.nll / ev.scored), ev.scored, tt_now_seconds() - e0,
                       m->causal ? "" : " [causal: false: not a causal LM score]");
            if (json) {
                fprintf(json, "{\"step\":%ld,\"valid_nll\":%.17g,\"valid_tokens\":%ld}\n", step,
                        ev.nll / ev.scored, ev.scored);
                fflush(json);
            }
            tt_curve_valid(curve, step, vppl); /* draws curve.png */
            window_t += tt_now_seconds() - e0; /* keep tokens/s about training */
            tt_rank_beat();
        }
        if (saves) {
            tt_curve_flush(curve); /* a run resumed from this checkpoint finds every row */
            if (save(eng, &s, &st, ckpt_dir, step, lead, where, sizeof where, err, sizeof err)) {
                status = 1;
                goto fail;
            }
            if (!o.quiet) printf("checkpoint %s\n", where);
            saved_step = step;
            snprintf(last_ckpt, sizeof last_ckpt, "%s", where);
            tt_rank_beat();
        }
        if (o.patience && st.stale >= o.patience) {
            printf("validation perplexity has not improved for %ld validations (best %.3f at step "
                   "%ld): stopping\n", st.stale, st.best_valid_ppl, st.best_step);
            stopped_early = 1;
            break;
        }
    }
    /* a stop (early, or asked for) writes its step's checkpoint unless the step just wrote it:
     * saving a step twice only replaced a whole folder with another */
    if ((stopped_early || interrupted) && saved_step != step) {
        if (save(eng, &s, &st, ckpt_dir, step, lead, where, sizeof where, err, sizeof err)) {
            status = 1;
            goto fail;
        }
        if (!o.quiet && !interrupted) printf("checkpoint %s\n", where);
    }
    if (!lead) {
        /* rank 0 reports the run */
    } else if (interrupted) {
        printf("interrupted (%s) after step %ld: checkpoint %s; continue with --resume",
               g_stop_signal ? strsignal(g_stop_signal) : "another rank's signal", step, where);
        if (st.best_step)
            printf(" (best valid ppl %.3f at step %ld)", st.best_valid_ppl, st.best_step);
        printf("\n");
    } else {
        const double secs = tt_now_seconds() - t0;
        printf("trained steps %ld..%ld in %.1f s (%.0f tok/s)", first + 1, step, secs,
               (double)(step - first) * batch * n / secs);
        if (have_valid && ev.scored) printf("; valid ppl %.3f", exp(ev.nll / ev.scored));
        if (st.best_step) printf(" (best %.3f at step %ld)", st.best_valid_ppl, st.best_step);
        printf("\n");
        if (tt_engine_device_bytes(eng, NULL) && step > first)
            print_mfu(&s, where_runs, (double)(step - first) * batch * n / secs / dist.world);
    }
    status = 0;
    goto done;
fail:
    fprintf(stderr, "%s\n", err);
done:
    if (json) fclose(json);
    tt_curve_close(curve);
    tt_engine_close(eng);
    free(in), free(tg), free(ckpt_dir), free(st.mems);
    tt_tokens_free(&train);
    tt_tokens_free(&valid);
    tt_session_close(&s);
    return status;
}
