/* Every kernel op a plan may hold, described once: the templates it is instantiated from, the
 * launcher that runs it (gpu/launch.h), the CPU reference it computes (cpu/), and what checks it
 * against that reference on the GPU. Its constants, geometry and launch shape are chosen by its
 * family's function in gen/plan.c (the attention's geometry: templates/mla_geom.cuh, which the
 * plan, the launcher and the kernels share); its tunables are declared in its template
 * (gen/tune.h); its tolerances live with its check (gpu/unit.c).
 * The planner takes an op's template from here and refuses a kernel this table does not
 * describe; the tuner times the ops through their units; test_ops (CPU) checks that every op
 * of every shipped spec's plan is here, and that each names a check that exists.
 * Adding an op: its template, its CPU twin, a line here, its family's planning in plan.c, its
 * launcher, and its unit in gpu/unit.c (or a test named here). */
#ifndef TT_OPS_H
#define TT_OPS_H

typedef struct {
    const char *op;           /* the plan's name for it, e.g. "mla_bwd_q" */
    const char *templates[2]; /* the templates it is built from: [0] the SIMT one, [1] the
                               * tensor-core one of the bf16 path where it has one (NULL: none) */
    const char *launcher;     /* the gpu/launch.h function that runs it */
    const char *twin;         /* the CPU reference of what it computes */
    const char *check;        /* "unit": gpu/unit.c's unit that runs the op (tt_unit_of_op);
                               * else "FILE:FUNCTION", the GPU test that checks it */
} tt_op;

extern const tt_op tt_ops[];
extern const int tt_n_ops;

/* The description of op, or NULL. */
const tt_op *tt_op_find(const char *op);

#endif
