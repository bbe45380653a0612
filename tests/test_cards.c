/* The card table: every row's dense peaks and memory bandwidth (literals copied from the datasheet
 * figures named in gpu/cards.c, so an edit of the table cannot move both sides), the device names
 * CUDA gives,
 * their spelling variants, and names that must stay unknown rather than be guessed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cards.h"
#include "spec.h"

typedef struct {
    const char *device; /* as cudaGetDeviceProperties names it */
    const char *label;
    double bf16, tf32, fp32;
    double gbs; /* DRAM bandwidth, GB/s */
} row;

static const row rows[] = {
    {"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM", 989.4, 494.7, 66.9, 3352},
    {"NVIDIA H100 PCIe", "NVIDIA H100 PCIe", 756, 378, 51.2, 2000},
    {"NVIDIA H100 NVL", "NVIDIA H100 NVL", 835.5, 417.5, 60, 3900},
    {"NVIDIA H200", "NVIDIA H200 SXM", 989.4, 494.7, 66.9, 4800},
    {"NVIDIA H200 NVL", "NVIDIA H200 NVL", 835.5, 417.5, 60, 4800},
    /* the A100's memory sizes differ in bandwidth, not in FLOP/s */
    {"NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB", 312, 156, 19.5, 2039},
    {"NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4 40GB", 312, 156, 19.5, 1555},
    {"NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 312, 156, 19.5, 1935},
    {"NVIDIA A100-PCIE-40GB", "NVIDIA A100 PCIe 40GB", 312, 156, 19.5, 1555},
    {"NVIDIA L40S", "NVIDIA L40S", 362.05, 183, 91.6, 864},
    {"NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090", 165.2, 82.6, 82.6, 1008},
};
#define N_ROWS (sizeof rows / sizeof rows[0])

static void expect_peak(const tt_card *c, tt_precision p, double want)
{
    const double got = tt_card_peak_tflops(c, p);
    if (got != want)
        fail_msg("%s at %s: %.2f TFLOP/s, want %.2f", tt_card_label(c), tt_precision_name(p), got,
                 want);
}

static void test_every_row(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_ROWS; i++) {
        const tt_card *c = tt_card_lookup(rows[i].device);
        if (!c) fail_msg("'%s' is unknown", rows[i].device);
        assert_string_equal(tt_card_label(c), rows[i].label);
        expect_peak(c, TT_PREC_BF16, rows[i].bf16);
        expect_peak(c, TT_PREC_TF32, rows[i].tf32);
        expect_peak(c, TT_PREC_FP32, rows[i].fp32);
        if (tt_card_bandwidth_gbs(c) != rows[i].gbs)
            fail_msg("%s: %.0f GB/s, want %.0f", rows[i].device, tt_card_bandwidth_gbs(c), rows[i].gbs);
        /* the label names the same card */
        assert_ptr_equal(tt_card_lookup(rows[i].label), c);
    }
}

/* Every row of the table is reached by a device name above, its figures are ordered as the
 * hardware orders them (bf16 tensor above tf32 tensor, that at least fp32; not exactly twice: the
 * datasheets round, L40S: tf32 183, bf16 362.05), and its bandwidth is one these cards' memories
 * can have (GDDR6's 864 GB/s to HBM3e's 4800: a figure in TB/s or bytes/s is caught). */
static void test_table_is_covered(void **state)
{
    (void)state;
    for (int i = 0; i < tt_card_count(); i++) {
        const tt_card *c = tt_card_at(i);
        int found = 0;
        for (size_t j = 0; j < N_ROWS; j++) found |= tt_card_lookup(rows[j].device) == c;
        if (!found) fail_msg("no test reaches the row '%s'", c->label);
        if (!(c->bf16 > c->tf32 && c->tf32 >= c->fp32 && c->fp32 > 0))
            fail_msg("%s: bf16 %.2f, tf32 %.2f, fp32 %.2f", c->label, c->bf16, c->tf32, c->fp32);
        if (!(c->dram >= 500 && c->dram <= 5000)) fail_msg("%s: %g GB/s", c->label, c->dram);
    }
}

static void test_name_variants(void **state)
{
    (void)state;
    static const struct {
        const char *name, *label;
    } v[] = {
        {"nvidia h100 80gb hbm3", "NVIDIA H100 SXM"},
        {"H100 80GB HBM3", "NVIDIA H100 SXM"},
        {"  NVIDIA   H100 80GB HBM3 ", "NVIDIA H100 SXM"},
        {"NVIDIA_H100_PCIe", "NVIDIA H100 PCIe"},
        {"H100-PCIE", "NVIDIA H100 PCIe"},
        {"NVIDIA H200", "NVIDIA H200 SXM"},
        {"H200", "NVIDIA H200 SXM"},
        {"h200 sxm", "NVIDIA H200 SXM"},
        {"NVIDIA H200-NVL", "NVIDIA H200 NVL"},
        {"h200 nvl", "NVIDIA H200 NVL"},
        {"NVIDIA A100 SXM4 80GB", "NVIDIA A100 SXM4 80GB"},
        {"a100 pcie 40gb", "NVIDIA A100 PCIe 40GB"},
        {"NVIDIA A100-80GB-PCIe", "NVIDIA A100 80GB PCIe"},
        {"NVIDIA\tL40S", "NVIDIA L40S"},
        {"geforce rtx 4090", "NVIDIA GeForce RTX 4090"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        const tt_card *c = tt_card_lookup(v[i].name);
        if (!c) fail_msg("'%s' is unknown", v[i].name);
        assert_string_equal(c->label, v[i].label);
    }
}

/* Names that are not in the table stay unknown: no prefix match, no nearest guess. */
static void test_unknown(void **state)
{
    (void)state;
    static const char *const names[] = {
        "NVIDIA H100",                          /* SXM, PCIe or NVL: ambiguous */
        "NVIDIA H100 80GB HBM3 MIG 1g.10gb",    /* a slice of the card */
        "NVIDIA H20",
        "NVIDIA H2000",
        "NVIDIA H200 NVL2",
        "NVIDIA GH200 480GB",
        "NVIDIA A100",
        "NVIDIA A100 SXM4",                     /* 40GB or 80GB: their bandwidths differ */
        "NVIDIA A100 PCIe",
        "A100-PCIE-80GB",                       /* words in another order than CUDA's */
        "NVIDIA L40",
        "NVIDIA GeForce RTX 4090 D",
        "NVIDIA B200",
        "Tesla V100-SXM2-16GB",
        "NVIDIA",
        "",
        "   ",
        "the cpu",
        NULL, /* a name longer than any card's: set below */
    };
    char longname[300];
    memset(longname, 'A', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *name = names[i] ? names[i] : longname;
        const tt_card *c = tt_card_lookup(name);
        if (c) fail_msg("'%s' matched %s", name, c->label);
        assert_string_equal(tt_card_label(c), "unknown");
        expect_peak(c, TT_PREC_BF16, 0);
        expect_peak(c, TT_PREC_TF32, 0);
        expect_peak(c, TT_PREC_FP32, 0);
        if (tt_card_bandwidth_gbs(c) != 0) fail_msg("'%s': %g GB/s", name, tt_card_bandwidth_gbs(c));
    }
    assert_null(tt_card_lookup(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row),
        cmocka_unit_test(test_table_is_covered),
        cmocka_unit_test(test_name_variants),
        cmocka_unit_test(test_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
