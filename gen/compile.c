/* NVRTC compilation through the cache, in parallel (see compile.h). */
#include "compile.h"

#include <nvrtc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sha256.h"
#include "util.h"

void tt_nvrtc_version(int *major, int *minor)
{
    if (nvrtcVersion(major, minor) != NVRTC_SUCCESS) *major = *minor = -1;
}

int tt_check_arch(const char *arch, char *err, size_t errlen)
{
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
        return tt_errf(err, errlen, "NVRTC does not list its supported architectures");
    int *archs = tt_xcalloc((size_t)n, sizeof *archs);
    nvrtcGetSupportedArchs(archs);
    int want = atoi(arch + 3), ok = 0;
    tt_buf list = {0};
    for (int i = 0; i < n; i++) {
        ok |= archs[i] == want;
        tt_buf_printf(&list, "%ssm_%d", i ? ", " : "", archs[i]);
    }
    if (!ok) tt_errf(err, errlen, "NVRTC cannot compile for %s; it supports %s", arch, list.data);
    free(archs);
    tt_buf_free(&list);
    return ok ? 0 : -1;
}

static void compute_key(tt_build *b, const char *arch)
{
    int major, minor;
    tt_nvrtc_version(&major, &minor);
    char head[128];
    int n = snprintf(head, sizeof head, "ttgen-key-1%cttgen %s%c%s%cnvrtc %d.%d%c", 0, TT_VERSION, 0,
                     arch, 0, major, minor, 0);
    tt_sha256_ctx s;
    tt_sha256_init(&s);
    tt_sha256_update(&s, head, (size_t)n);
    for (int i = 0; i < b->n_options; i++) tt_sha256_update(&s, b->options[i], strlen(b->options[i]) + 1);
    tt_sha256_update(&s, b->source, b->source_len);
    tt_sha256_final(&s, b->key);
    tt_hex(b->key, 32, b->key_hex);
}

int tt_builds_prepare(const tt_plan *plan, const tt_build_opts *o, tt_build **builds, char *err,
                      size_t errlen)
{
    tt_build *b = tt_xcalloc((size_t)plan->n, sizeof *b);
    for (int i = 0; i < plan->n; i++) {
        b[i].kernel = &plan->kernels[i];
        b[i].registers = b[i].spill_bytes = b[i].smem_bytes = -1;
        b[i].source = tt_emit_source(b[i].kernel, o->template_dir, &b[i].source_len, err, errlen);
        if (!b[i].source) {
            tt_builds_free(b, plan->n);
            return -1;
        }
        const char *arch = b[i].kernel->arch[0] ? b[i].kernel->arch : o->arch;
        b[i].n_options = tt_emit_options(arch, o->extra_options, o->n_extra, b[i].options);
        compute_key(&b[i], arch);
    }
    *builds = b;
    return 0;
}

/* ptxas' report: "Used 38 registers, used 1 barriers, 41616 bytes smem, ..." and
 * "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads". */
static void parse_resources(tt_build *b)
{
    if (!b->log) return;
    const char *p = strstr(b->log, "Used ");
    if (p) {
        b->registers = atoi(p + 5);
        const char *s = strstr(p, " bytes smem");
        const char *eol = strchr(p, '\n');
        if (s && (!eol || s < eol)) {
            while (s > p && s[-1] >= '0' && s[-1] <= '9') s--;
            b->smem_bytes = atoi(s);
        } else {
            b->smem_bytes = 0;
        }
    }
    const char *st = strstr(b->log, "bytes spill stores");
    const char *ld = strstr(b->log, "bytes spill loads");
    if (st && ld) {
        const char *a = st - 1, *c = ld - 1;
        while (a > b->log && a[-1] >= '0' && a[-1] <= '9') a--;
        while (c > b->log && c[-1] >= '0' && c[-1] <= '9') c--;
        b->spill_bytes = atoi(a) + atoi(c);
    }
}

static void write_failure(tt_build *b, const tt_build_opts *o, const char *what)
{
    char err[512];
    char *dir = tt_xasprintf("%s/%s-%.12s", o->failure_dir, b->kernel->name, b->key_hex);
    tt_buf opts = {0};
    for (int i = 0; i < b->n_options; i++) tt_buf_printf(&opts, "%s\n", b->options[i]);
    const char *log = b->log ? b->log : "";
    int ok = tt_mkdir_p(dir, err, sizeof err) == 0;
    char *src_path = tt_xasprintf("%s/%s.cu", dir, b->kernel->name);
    char *opt_path = tt_xasprintf("%s/options.txt", dir);
    char *log_path = tt_xasprintf("%s/nvrtc.log", dir);
    const void *p1[] = {b->source}, *p2[] = {opts.data ? opts.data : ""}, *p3[] = {log};
    size_t l1[] = {b->source_len}, l2[] = {opts.len}, l3[] = {strlen(log)};
    ok = ok && tt_write_file_atomic(src_path, p1, l1, 1, err, sizeof err) == 0 &&
         tt_write_file_atomic(opt_path, p2, l2, 1, err, sizeof err) == 0 &&
         tt_write_file_atomic(log_path, p3, l3, 1, err, sizeof err) == 0;
    if (ok)
        b->error = tt_xasprintf("%s: %s; NVRTC's log:\n%s\nsource, options and log written to %s/",
                                b->kernel->name, what, log, dir);
    else
        b->error = tt_xasprintf("%s: %s; NVRTC's log:\n%s\n(could not save the failure: %s)",
                                b->kernel->name, what, log, err);
    tt_buf_free(&opts);
    free(src_path);
    free(opt_path);
    free(log_path);
    free(dir);
}

static void compile_one(tt_build *b, const tt_build_opts *o)
{
    double t0 = tt_now_seconds();
    nvrtcProgram prog;
    char *fname = tt_xasprintf("%s.cu", b->kernel->name);
    nvrtcResult r = nvrtcCreateProgram(&prog, b->source, fname, 0, NULL, NULL);
    free(fname);
    if (r != NVRTC_SUCCESS) {
        b->error = tt_xasprintf("%s: nvrtcCreateProgram: %s", b->kernel->name, nvrtcGetErrorString(r));
        return;
    }
    r = nvrtcCompileProgram(prog, b->n_options, (const char *const *)b->options);
    size_t log_len = 0;
    nvrtcGetProgramLogSize(prog, &log_len);
    b->log = tt_xcalloc(log_len + 1, 1);
    if (log_len) nvrtcGetProgramLog(prog, b->log);
    if (r != NVRTC_SUCCESS) {
        write_failure(b, o, nvrtcGetErrorString(r));
    } else if (nvrtcGetCUBINSize(prog, &b->cubin_len) != NVRTC_SUCCESS || b->cubin_len == 0) {
        write_failure(b, o, "NVRTC produced no CUBIN (is the architecture a real sm_XY?)");
    } else {
        b->cubin = tt_xmalloc(b->cubin_len);
        nvrtcGetCUBIN(prog, b->cubin);
    }
    nvrtcDestroyProgram(&prog);
    b->seconds = tt_now_seconds() - t0;
    parse_resources(b);
    if (b->cubin && o->cache) {
        char err[512];
        if (tt_cache_put(o->cache, b->key, b->cubin, b->cubin_len, b->log, err, sizeof err) != 0)
            fprintf(stderr, "ttgen: warning: could not store %s in the cache: %s\n",
                    b->kernel->name, err);
    }
}

typedef struct {
    tt_build **todo;
    const tt_build_opts *o;
} work_queue;

static void build_at(void *ctx, int i)
{
    const work_queue *q = ctx;
    compile_one(q->todo[i], q->o);
}

int tt_builds_run(tt_build *builds, int n, const tt_build_opts *o)
{
    work_queue q = {.todo = tt_xcalloc((size_t)n, sizeof(tt_build *)), .o = o};
    int todo = 0;
    for (int i = 0; i < n; i++) {
        tt_build *b = &builds[i];
        /* Two instances of one plan with the same key would be compiled twice; plans dedupe. */
        if (o->cache) {
            char why[256];
            tt_cache_status st =
                tt_cache_get(o->cache, b->key, &b->cubin, &b->cubin_len, &b->log, why, sizeof why);
            if (st == TT_CACHE_HIT) {
                b->cached = true;
                parse_resources(b);
                continue;
            }
            if (st == TT_CACHE_CORRUPT)
                snprintf(b->cache_note, sizeof b->cache_note, "rebuilt: cache entry %.16s... %s",
                         b->key_hex, why);
        }
        q.todo[todo++] = b;
    }
    tt_parallel_for(todo, o->jobs, build_at, &q);
    free(q.todo);
    int failed = 0;
    for (int i = 0; i < n; i++) failed += builds[i].error != NULL;
    return failed;
}

void tt_builds_free(tt_build *builds, int n)
{
    if (!builds) return;
    for (int i = 0; i < n; i++) {
        free(builds[i].source);
        tt_emit_free_options(builds[i].options, builds[i].n_options);
        free(builds[i].cubin);
        free(builds[i].log);
        free(builds[i].error);
    }
    free(builds);
}
