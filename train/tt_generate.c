/* tt-generate: text from a trained model (libtt's tt_generate), streamed as it comes.
 * Exit codes: 0 done, 1 a run-time failure, 2 bad usage, spec, checkpoint or prompt. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tt.h"
#include "util.h"

/* The most a prompt file (or standard input) may hold. */
#define PROMPT_MAX_BYTES (64u << 20)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tt-generate SPEC --checkpoint PATH [options]\n"
            "Generates text after a prompt with the checkpoint's weights, a word at a time.\n\n"
            "  --checkpoint PATH   model.safetensors, a step folder, or a checkpoint folder (its\n"
            "                      latest)\n"
            "  --prompt TEXT       the text to go on from (default: standard input; none: a\n"
            "                      new line)\n"
            "  --prompt-file F     the prompt from a file (each line ends with <eos>)\n"
            "  --tokens K          words to generate (default 50; <eos> prints a newline)\n"
            "  --temperature T     0: greedy, the most likely word each time (default 1)\n"
            "  --top-k K           sample among the K most likely words only (default 0: all)\n"
            "  --top-p P           sample among the fewest most likely words whose probability\n"
            "                      reaches P (default 1: all)\n"
            "  --seed S            the same seed and options give the same text, on the CPU and\n"
            "                      the GPU alike (default 1)\n"
            "  --device D          cpu, cuda, or auto (default: the GPU when there is one)\n"
            "  -q, --quiet         the text alone (no notes, no speed on standard error)\n"
            "  -h, --help\n");
}

typedef struct {
    const char *spec, *ckpt, *prompt, *prompt_file, *device;
    long tokens, top_k;
    double temperature, top_p;
    unsigned long long seed;
    int quiet;
} options;

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= lo && v <= hi)) {
        fprintf(stderr, "tt-generate: %s takes a number in [%g, %g], not '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_whole(const char *opt, const char *s, long lo, long *out)
{
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo) {
        fprintf(stderr, "tt-generate: %s takes a whole number of at least %ld, not '%s'\n", opt,
                lo, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    enum { CKPT = 256, PROMPT, PROMPT_FILE, TOKENS, TEMP, TOPK, TOPP, SEED, DEVICE };
    static const struct option longs[] = {
        {"checkpoint", required_argument, 0, CKPT}, {"prompt", required_argument, 0, PROMPT},
        {"prompt-file", required_argument, 0, PROMPT_FILE},
        {"tokens", required_argument, 0, TOKENS},   {"temperature", required_argument, 0, TEMP},
        {"top-k", required_argument, 0, TOPK},      {"top-p", required_argument, 0, TOPP},
        {"seed", required_argument, 0, SEED},       {"device", required_argument, 0, DEVICE},
        {"quiet", no_argument, 0, 'q'},             {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    *o = (options){.device = "auto", .tokens = 50, .temperature = 1, .top_p = 1, .seed = 1};
    int c;
    long seed;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":qh", longs, NULL)) != -1) {
        switch (c) {
        case CKPT: o->ckpt = optarg; break;
        case PROMPT: o->prompt = optarg; break;
        case PROMPT_FILE: o->prompt_file = optarg; break;
        case TOKENS: if (parse_whole("--tokens", optarg, 0, &o->tokens)) return 2; break;
        case TEMP: if (parse_num("--temperature", optarg, 0, 1e6, &o->temperature)) return 2; break;
        case TOPK: if (parse_whole("--top-k", optarg, 0, &o->top_k)) return 2; break;
        case TOPP: if (parse_num("--top-p", optarg, 0, 1, &o->top_p)) return 2; break;
        case SEED:
            if (parse_whole("--seed", optarg, 0, &seed)) return 2;
            o->seed = (unsigned long long)seed;
            break;
        case DEVICE: o->device = optarg; break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        default: return tt_opt_refuse("tt-generate", c, argv);
        }
    }
    if (optind != argc - 1 || !o->ckpt) {
        fprintf(stderr, "tt-generate: usage: tt-generate SPEC --checkpoint PATH [options]\n");
        return 2;
    }
    if (o->prompt && o->prompt_file) {
        fprintf(stderr, "tt-generate: --prompt and --prompt-file: one or the other\n");
        return 2;
    }
    if (o->top_k > 0x7fffffffL) o->top_k = 0x7fffffffL; /* more than any vocabulary: all */
    o->spec = argv[optind];
    return 0;
}

/* Standard input, whole (up to PROMPT_MAX_BYTES), its length in *len. */
static char *read_stdin(size_t *len, char *err, size_t errlen)
{
    tt_buf b = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, stdin)) > 0) {
        if (b.len + got > PROMPT_MAX_BYTES) {
            tt_buf_free(&b);
            tt_errf(err, errlen, "standard input: more than %u bytes of prompt", PROMPT_MAX_BYTES);
            return NULL;
        }
        tt_buf_append(&b, chunk, got);
    }
    if (ferror(stdin)) {
        tt_buf_free(&b);
        tt_errf(err, errlen, "standard input: %s", strerror(errno));
        return NULL;
    }
    *len = b.len;
    tt_buf_append(&b, "", 1);
    return b.data;
}

/* Words as they come: <eos> ends a line. */
static int print_word(void *ctx, int32_t id, const char *word)
{
    (void)ctx, (void)id;
    if (!strcmp(word, "<eos>")) {
        fputc('\n', stdout);
    } else {
        fputs(word, stdout);
        fputc(' ', stdout);
    }
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    char msg[1024];
    char *text = NULL;
    size_t len = 0;
    if (o.prompt) {
        text = tt_xstrdup(o.prompt);
    } else if (o.prompt_file) {
        if (tt_read_file(o.prompt_file, PROMPT_MAX_BYTES, &text, &len, msg, sizeof msg) != 0) {
            fprintf(stderr, "tt-generate: %s\n", msg);
            return 2;
        }
    } else if (!(text = read_stdin(&len, msg, sizeof msg))) {
        fprintf(stderr, "tt-generate: %s\n", msg);
        return 2;
    }
    const char *nul = o.prompt ? NULL : memchr(text, '\0', len);
    if (nul) {
        fprintf(stderr, "tt-generate: %s: a NUL byte at offset %zu: not text\n",
                o.prompt_file ? o.prompt_file : "standard input", (size_t)(nul - text));
        free(text);
        return 2;
    }
    tt_model *m = NULL;
    tt_error e;
    int status = 2;
    int32_t *ids = NULL;
    if (tt_open(&m, o.spec, o.ckpt, o.device, &e) != TT_OK) goto fail;
    /* the prompt's words after an <eos>, as a line of the training text starts; a file's lines
     * each end with one */
    size_t n = 0, unknown = 0;
    if (tt_tokenize(m, text, !o.prompt, NULL, 0, &n, NULL, &e) != TT_OK) {
        fprintf(stderr, "tt-generate: %s: %s\n",
                o.prompt ? "--prompt" : o.prompt_file ? o.prompt_file : "standard input", e.message);
        goto done;
    }
    ids = tt_xmalloc((n + 1) * sizeof *ids);
    ids[0] = tt_eos_id(m);
    if (tt_tokenize(m, text, !o.prompt, ids + 1, n, &n, &unknown, &e) != TT_OK) goto fail;
    n++;
    if (!o.quiet && unknown)
        fprintf(stderr, "note: %zu word%s of the prompt %s not in the vocabulary: read as <unk>\n",
                unknown, unknown == 1 ? "" : "s", unknown == 1 ? "is" : "are");
    if (!o.quiet && !tt_is_transformer_xl(m) && n > (size_t)tt_context_length(m))
        fprintf(stderr, "note: the prompt's %zu tokens are more than the window of %d: the model "
                "reads its last %d\n", n, tt_context_length(m), tt_context_length(m));
    const tt_sample_opts so = {.temperature = o.temperature, .top_k = (int)o.top_k,
                               .top_p = o.top_p, .seed = o.seed};
    size_t made = 0;
    status = 1;
    const double t0 = tt_now_seconds();
    if (tt_generate(m, ids, n, (size_t)o.tokens, &so, NULL, &made, print_word, NULL, &e) != TT_OK)
        goto fail;
    const double secs = tt_now_seconds() - t0;
    if (made) fputc('\n', stdout);
    if (!o.quiet)
        fprintf(stderr, "%zu words in %.2f s (%.1f words/s) on %s\n", made, secs,
                secs > 0 ? made / secs : 0.0, tt_device(m));
    status = 0;
    goto done;
fail:
    fprintf(stderr, "tt-generate: %s\n", e.message);
done:
    free(ids);
    free(text);
    tt_close(m);
    return status;
}
