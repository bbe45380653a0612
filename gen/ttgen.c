/* ttgen: from a YAML spec to kernels specialized for exactly its shapes, compiled by NVRTC into
 * the cache, plus a report of what the model costs. Every stage can be written out with --dump.
 * Exit codes: 0 done, 1 a kernel failed to compile or a file could not be written, 2 bad usage or
 * a bad spec. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "autotune.h"
#include "cache.h"
#include "compile.h"
#include "corpus.h"
#include "device.h"
#include "plan.h"
#include "report.h"
#include "spec.h"
#include "tune.h"
#include "util.h"

#define MAX_EXTRA 8

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ttgen SPEC [options]\n"
            "Generates, compiles (NVRTC) and caches the kernels of the model SPEC describes, and\n"
            "reports its parameters, FLOPs and memory.\n\n"
            "  --arch sm_XY       target GPU architecture (default: the spec's kernels.arch, else\n"
            "                     this machine's GPU, else sm_90)\n"
            "  --dump DIR         write every stage to DIR: spec.yaml, plan.txt, and per kernel\n"
            "                     NAME.cu, NAME.options, NAME.log, NAME.cubin; report.json\n"
            "  --cache-dir DIR    kernel cache (default: $TTGEN_CACHE_DIR, else\n"
            "                     $XDG_CACHE_HOME/ttgen, else ~/.cache/ttgen)\n"
            "  --no-cache         compile everything and store nothing\n"
            "  --no-compile       stop after the plan and the CUDA source\n"
            "  --templates DIR    read kernel templates from DIR instead of the built-in copies\n"
            "  --nvrtc-opt OPT    pass OPT to NVRTC (repeatable)\n"
            "  --jobs N           parallel compiles (default: one per CPU)\n"
            "  --tune             on this machine's GPU: build every variant of each kernel\n"
            "                     that declares tunables, check it against the CPU, time it,\n"
            "                     and keep the fastest in the tuning cache (beside the kernel\n"
            "                     cache, keyed by the card's name and the kernel's signature)\n"
            "  --tune-iters K     timed runs per variant, the median kept (default 30)\n"
            "  --card NAME        report the variants tuned for card NAME (default: this\n"
            "                     machine's GPU; without one, the plan's heuristics)\n"
            "  --json             print one JSON object instead of the human report\n"
            "  -q, --quiet        print nothing but errors\n"
            "  -h, --help         this text\n"
            "  --version          ttgen's version\n");
}

typedef struct {
    const char *spec_path, *arch, *dump, *cache_dir, *templates, *card;
    const char *extra[MAX_EXTRA];
    int n_extra, jobs, json, quiet, no_cache, no_compile, tune, tune_iters;
} options;

static int parse_args(int argc, char **argv, options *o)
{
    enum { ARCH = 256, DUMP, CACHE, NOCACHE, NOCOMPILE, TEMPLATES, NVRTC, JOBS, JSON, VERSION,
           TUNE, TUNE_ITERS, CARD };
    static const struct option longs[] = {
        {"arch", required_argument, 0, ARCH},       {"dump", required_argument, 0, DUMP},
        {"cache-dir", required_argument, 0, CACHE}, {"no-cache", no_argument, 0, NOCACHE},
        {"no-compile", no_argument, 0, NOCOMPILE},  {"templates", required_argument, 0, TEMPLATES},
        {"nvrtc-opt", required_argument, 0, NVRTC}, {"jobs", required_argument, 0, JOBS},
        {"json", no_argument, 0, JSON},             {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},              {"version", no_argument, 0, VERSION},
        {"tune", no_argument, 0, TUNE},             {"tune-iters", required_argument, 0, TUNE_ITERS},
        {"card", required_argument, 0, CARD},       {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":qh", longs, NULL)) != -1) {
        switch (c) {
        case ARCH: o->arch = optarg; break;
        case DUMP: o->dump = optarg; break;
        case CACHE: o->cache_dir = optarg; break;
        case NOCACHE: o->no_cache = 1; break;
        case NOCOMPILE: o->no_compile = 1; break;
        case TEMPLATES: o->templates = optarg; break;
        case NVRTC:
            if (o->n_extra == MAX_EXTRA) {
                fprintf(stderr, "ttgen: at most %d --nvrtc-opt\n", MAX_EXTRA);
                return 2;
            }
            o->extra[o->n_extra++] = optarg;
            break;
        case JOBS: {
            char *end;
            long j = strtol(optarg, &end, 10);
            if (*end || j < 1 || j > 256) {
                fprintf(stderr, "ttgen: --jobs takes a number from 1 to 256, not '%s'\n", optarg);
                return 2;
            }
            o->jobs = (int)j;
            break;
        }
        case JSON: o->json = 1; break;
        case TUNE: o->tune = 1; break;
        case CARD: o->card = optarg; break;
        case TUNE_ITERS: {
            char *end;
            long k = strtol(optarg, &end, 10);
            if (*end || k < 3 || k > 10000) {
                fprintf(stderr, "ttgen: --tune-iters takes a number from 3 to 10000, not '%s'\n",
                        optarg);
                return 2;
            }
            o->tune_iters = (int)k;
            break;
        }
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        case VERSION: printf("ttgen %s\n", TT_VERSION); exit(0);
        default: return tt_opt_refuse("ttgen", c, argv);
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, optind >= argc ? "ttgen: no spec given (usage: ttgen SPEC [options])\n"
                                       : "ttgen: one spec at a time (usage: ttgen SPEC [options])\n");
        return 2;
    }
    o->spec_path = argv[optind];
    if (o->tune && (o->no_cache || o->no_compile)) {
        fprintf(stderr, "ttgen: --tune keeps what it finds in the cache: not with --no-cache or "
                        "--no-compile\n");
        return 2;
    }
    if (o->tune && o->card) {
        fprintf(stderr, "ttgen: --tune tunes this machine's GPU: not with --card\n");
        return 2;
    }
    return 0;
}

static int valid_arch(const char *a)
{
    if (strncmp(a, "sm_", 3) != 0) return 0;
    const char *p = a + 3;
    int digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == 'a') p++;
    return (digits == 2 || digits == 3) && *p == '\0' && atoi(a + 3) >= 80;
}

/* --arch, else the spec's kernels.arch, else the GPU's own, else sm_90. */
static const char *choose_arch(const options *o, const tt_spec *s, char *buf, size_t n,
                               char *why, size_t whylen)
{
    if (o->arch) {
        snprintf(why, whylen, "--arch");
        return o->arch;
    }
    if (strcmp(s->kernels.arch, "auto") != 0) {
        snprintf(why, whylen, "kernels.arch");
        return s->kernels.arch;
    }
    tt_device_info dev;
    char msg[256];
    if (tt_device_query(0, &dev, msg, sizeof msg) == 0) {
        snprintf(buf, n, "sm_%d%d", dev.cc_major, dev.cc_minor);
        snprintf(why, whylen, "%s", dev.name);
        return buf;
    }
    snprintf(why, whylen, "default; %s", msg);
    return "sm_90";
}

static int dump_file(const char *dir, const char *name, const void *data, size_t len)
{
    char err[512];
    char *path = tt_xasprintf("%s/%s", dir, name);
    const void *parts[] = {data};
    int rc = tt_write_file_atomic(path, parts, &len, 1, err, sizeof err);
    if (rc != 0) fprintf(stderr, "ttgen: %s\n", err);
    free(path);
    return rc;
}

static int dump_stream(const char *dir, const char *name, void (*write)(const void *, FILE *),
                       const void *arg)
{
    char *buf = tt_capture(write, arg);
    int rc = dump_file(dir, name, buf, strlen(buf));
    free(buf);
    return rc;
}

static void write_spec(const void *s, FILE *f) { tt_spec_write(s, f); }
static void write_plan(const void *p, FILE *f) { tt_plan_write(p, f); }

typedef struct {
    const tt_spec *spec;
    const tt_costs *costs;
} report_args;

static void write_report(const void *a, FILE *f)
{
    const report_args *r = a;
    tt_report_json(r->spec, r->costs, f);
    fputc('\n', f);
}

static int dump_builds(const char *dir, const tt_build *b, int n, int compiled)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = b[i].kernel->name;
        char *f = tt_xasprintf("%s.cu", name);
        rc |= dump_file(dir, f, b[i].source, b[i].source_len);
        free(f);
        tt_buf opts = {0};
        for (int k = 0; k < b[i].n_options; k++) tt_buf_printf(&opts, "%s\n", b[i].options[k]);
        f = tt_xasprintf("%s.options", name);
        rc |= dump_file(dir, f, opts.data, opts.len);
        free(f);
        tt_buf_free(&opts);
        if (!compiled) continue;
        if (b[i].log) {
            f = tt_xasprintf("%s.log", name);
            rc |= dump_file(dir, f, b[i].log, strlen(b[i].log));
            free(f);
        }
        if (b[i].cubin) {
            f = tt_xasprintf("%s.cubin", name);
            rc |= dump_file(dir, f, b[i].cubin, b[i].cubin_len);
            free(f);
        }
    }
    return rc;
}

static void print_kernels_text(const tt_build *b, int n, const char *arch, const char *arch_why,
                               const tt_cache *cache, int compiled, double wall)
{
    printf("\nkernels for %s (%s)%s%s\n", arch, arch_why, cache ? ", cache " : "",
           cache ? cache->dir : "");
    int hits = 0, built = 0;
    double cpu = 0;
    for (int i = 0; i < n; i++) {
        const tt_build *k = &b[i];
        const tt_kernel *p = k->kernel;
        printf("  %s\n    block %u, grid %ux%ux%u for the spec's batch", p->name, p->block[0],
               p->grid[0], p->grid[1], p->grid[2]);
        if (p->arch[0]) printf("; built for %s", p->arch);
        if (compiled && !k->error) {
            printf("; %d registers, %d B spilled, %d B smem", k->registers, k->spill_bytes,
                   k->smem_bytes);
            if (p->dyn_smem) printf(" + %u B dynamic", p->dyn_smem);
            printf("; %s", k->cached ? "cached" : "compiled");
            if (!k->cached) printf(" in %.2f s", k->seconds);
        }
        printf("\n    %s\n", p->why);
        if (p->strategy[0]) printf("    strategy %s\n", p->strategy);
        if (p->variant[0]) printf("    variant %s\n", p->variant);
        if (k->cache_note[0]) printf("    %s\n", k->cache_note);
        hits += k->cached;
        built += compiled && !k->cached && !k->error;
        cpu += k->seconds;
    }
    if (compiled)
        printf("%d kernels: %d compiled (%.2f s of NVRTC), %d from the cache; %.3f s in all\n", n,
               built, cpu, hits, wall);
    else
        printf("%d kernels emitted, none compiled (--no-compile)\n", n);
}

/* s as a JSON string: the spec's path is the user's, and may hold quotes or backslashes. */
static void print_json(const tt_spec *spec, const tt_costs *costs, const tt_build *b, int n,
                       const char *arch, int compiled, double wall)
{
    printf("{\"ttgen\":\"%s\",\"spec\":", TT_VERSION);
    tt_json_string(spec->path, stdout);
    printf(",\"arch\":\"%s\",\"report\":", arch);
    tt_report_json(spec, costs, stdout);
    printf(",\"kernels\":[");
    for (int i = 0; i < n; i++) {
        const tt_kernel *p = b[i].kernel;
        printf("%s{\"name\":\"%s\",\"op\":\"%s\",\"key\":\"%s\",\"block\":[%u,%u,%u],"
               "\"grid\":[%u,%u,%u]",
               i ? "," : "", p->name, p->op, b[i].key_hex, p->block[0], p->block[1], p->block[2],
               p->grid[0], p->grid[1], p->grid[2]);
        printf(",\"arch\":\"%s\"", p->arch[0] ? p->arch : arch);
        printf(",\"dynamic_smem_bytes\":%u", p->dyn_smem);
        if (p->variant[0]) {
            printf(",\"variant\":");
            tt_json_string(p->variant, stdout);
        }
        if (p->strategy[0]) {
            printf(",\"strategy\":");
            tt_json_string(p->strategy, stdout);
        }
        if (compiled)
            printf(",\"cached\":%s,\"compile_seconds\":%.4f,\"registers\":%d,\"spill_bytes\":%d,"
                   "\"smem_bytes\":%d",
                   b[i].cached ? "true" : "false", b[i].seconds, b[i].registers, b[i].spill_bytes,
                   b[i].smem_bytes);
        printf("}");
    }
    printf("],\"seconds\":%.4f}\n", wall);
}

/* --tune: every tunable kernel of the spec timed on this machine's GPU (gpu/autotune.h). */
static int tune(const options *o, const tt_spec *spec, const char *arch, const tt_cache *cache,
                long params, long vocab)
{
    char err[4096];
    tt_gpu gpu;
    if (tt_gpu_open(&gpu, 0, err, sizeof err) != 0) {
        fprintf(stderr, "ttgen --tune: %s\n", err);
        return -1;
    }
    int rc = 0;
    if (strcmp(gpu.arch, arch) != 0) {
        fprintf(stderr, "ttgen --tune: the kernels are for %s but this GPU (%s) is %s\n", arch,
                gpu.name, gpu.arch);
        rc = -1;
    } else {
        const tt_tune_opts to = {.iters = o->tune_iters, .jobs = o->jobs, .params = params,
                                 .vocab = vocab,
                                 .out = o->quiet || o->json ? NULL : stdout};
        if (!o->quiet && !o->json)
            printf("tuning %s on %s (%s); tuning cache %s/tuning.tsv\n", spec->path, gpu.name,
                   gpu.arch, cache->dir);
        rc = tt_tune(spec, &gpu, cache, &to, err, sizeof err);
        if (rc != 0) fprintf(stderr, "ttgen --tune: %s\n", err);
    }
    tt_gpu_close(&gpu);
    return rc;
}

int main(int argc, char **argv)
{
    const double t0 = tt_now_seconds();
    options o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;

    char err[4096];
    tt_spec spec;
    if (tt_spec_load(o.spec_path, &spec, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    long vocab = spec.model.vocab;
    if (vocab == 0) {
        if (!spec.data.train) {
            fprintf(stderr, "%s: model.vocab is 'data' but the spec names no data.train file\n",
                    spec.path);
            tt_spec_free(&spec);
            return 2;
        }
        if (tt_corpus_count_vocab(spec.data.train, &vocab, err, sizeof err) != 0 ||
            tt_spec_check_vocab(&spec, vocab, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            tt_spec_free(&spec);
            return 2;
        }
    }

    char arch_buf[16], arch_why[300];
    const char *arch = choose_arch(&o, &spec, arch_buf, sizeof arch_buf, arch_why, sizeof arch_why);
    if (!valid_arch(arch)) {
        fprintf(stderr, "ttgen: --arch: expected sm_80 or newer (e.g. sm_90), got '%s'\n", arch);
        tt_spec_free(&spec);
        return 2;
    }
    if (!o.no_compile && tt_check_arch(arch, err, sizeof err) != 0) {
        fprintf(stderr, "ttgen: %s\n", err);
        tt_spec_free(&spec);
        return 2;
    }

    tt_costs costs;
    tt_costs_compute(&spec, vocab, &costs);
    /* the cache: compiled kernels, and beside them the tuning cache, read even with --no-compile */
    tt_cache cache = {0};
    const int use_cache = !o.no_cache && !o.no_compile;
    if (!o.no_cache && tt_cache_open(&cache, o.cache_dir, err, sizeof err) != 0) {
        fprintf(stderr, "ttgen: %s\n", err);
        tt_spec_free(&spec);
        return 1;
    }
    if (o.tune && tune(&o, &spec, arch, &cache, (long)costs.params_total, vocab) != 0) {
        tt_cache_close(&cache);
        tt_spec_free(&spec);
        return 1;
    }
    /* the card whose tuned variants the plan takes: --card, else this machine's GPU */
    tt_device_info dev;
    char dev_why[256];
    const char *card = o.card ? o.card
                       : tt_device_query(0, &dev, dev_why, sizeof dev_why) == 0 ? dev.name : NULL;
    char *tuning = o.no_cache ? NULL : tt_tuning_path(cache.dir);
    tt_plan plan;
    const int planned = tt_plan_build_for_card(&spec, arch, card, tuning, &plan, err, sizeof err);
    free(tuning);
    if (planned == 0 && plan.warning[0]) fprintf(stderr, "ttgen: %s\n", plan.warning);
    if (planned != 0) {
        fprintf(stderr, "%s: %s\n", spec.path, err);
        if (!o.no_cache) tt_cache_close(&cache);
        tt_spec_free(&spec);
        return 2;
    }
    char *failure_dir = o.dump ? tt_xstrdup(o.dump)
                        : use_cache ? tt_xasprintf("%s/failed", cache.dir)
                                    : tt_xstrdup("ttgen-failed");
    tt_build_opts bo = {.arch = arch, .template_dir = o.templates, .extra_options = o.extra,
                        .n_extra = o.n_extra, .cache = use_cache ? &cache : NULL,
                        .failure_dir = failure_dir, .jobs = o.jobs};
    tt_build *builds = NULL;
    int status = 0;
    if (o.dump && tt_mkdir_p(o.dump, err, sizeof err) != 0) {
        fprintf(stderr, "ttgen: --dump: %s\n", err);
        status = 1;
        goto done;
    }
    if (tt_builds_prepare(&plan, &bo, &builds, err, sizeof err) != 0) {
        fprintf(stderr, "ttgen: %s\n", err);
        status = 1;
        goto done;
    }
    int failed = o.no_compile ? 0 : tt_builds_run(builds, plan.n, &bo);
    for (int i = 0; i < plan.n; i++)
        if (builds[i].error) fprintf(stderr, "ttgen: %s\n", builds[i].error);
    if (failed) status = 1;

    if (o.dump) {
        int drc = dump_stream(o.dump, "spec.yaml", write_spec, &spec);
        drc |= dump_stream(o.dump, "plan.txt", write_plan, &plan);
        drc |= dump_builds(o.dump, builds, plan.n, !o.no_compile);
        drc |= dump_stream(o.dump, "report.json", write_report, &(report_args){&spec, &costs});
        if (drc) status = 1;
    }
    const double wall = tt_now_seconds() - t0;
    if (o.json) {
        print_json(&spec, &costs, builds, plan.n, arch, !o.no_compile, wall);
    } else if (!o.quiet) {
        tt_report_text(&spec, &costs, stdout);
        print_kernels_text(builds, plan.n, arch, arch_why, use_cache ? &cache : NULL,
                           !o.no_compile, wall);
        if (o.dump) printf("stages written to %s/\n", o.dump);
    }
done:
    tt_builds_free(builds, plan.n);
    free(failure_dir);
    if (!o.no_cache) tt_cache_close(&cache);
    tt_plan_free(&plan);
    tt_spec_free(&spec);
    return status;
}
