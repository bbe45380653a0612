/* The card table (see cards.h). Each row is NVIDIA's own figure, halved where the source gives it
 * only with sparsity (marked *), and names the document it comes from. The figures were checked
 * against several independent quotations of each document's table, not against the PDF itself:
 * re-read the source before trusting a new row. */
#include "cards.h"

#include <ctype.h>
#include <string.h>

#include "util.h"

static const tt_card cards[] = {
    /* NVIDIA H100 Tensor Core GPU Architecture whitepaper V1.04, Table 3 (H100 SXM5 column:
     * BF16 989.4/1978.9, TF32 494.7/989.4, FP32 66.9; memory bandwidth 3352 GB/s, the datasheet's
     * 3.35 TB/s): https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper */
    {"NVIDIA H100 SXM", {"NVIDIA H100 80GB HBM3"}, 989.4, 494.7, 66.9, 3352},
    /* The same table, H100 PCIe column: BF16 756/1513, TF32 378/756, FP32 51.2; 2000 GB/s. */
    {"NVIDIA H100 PCIe", {"NVIDIA H100 PCIe"}, 756, 378, 51.2, 2000},
    /* https://www.nvidia.com/en-us/data-center/h100/ (H100 NVL column): FP32 60, TF32 835*,
     * BF16 1,671*; GPU memory bandwidth 3.9 TB/s. */
    {"NVIDIA H100 NVL", {"NVIDIA H100 NVL"}, 835.5, 417.5, 60, 3900},
    /* https://www.nvidia.com/en-us/data-center/h200/ (H200 SXM column, "preliminary"): FP32 67,
     * TF32 989*, BF16 1,979*: the H100 SXM5's figures (same GH100 and clocks), so the
     * whitepaper's unrounded dense values above; GPU memory bandwidth 4.8 TB/s. */
    {"NVIDIA H200 SXM", {"NVIDIA H200"}, 989.4, 494.7, 66.9, 4800},
    /* The same page, H200 NVL column: FP32 60, TF32 835*, BF16 1,671*; 4.8 TB/s. */
    {"NVIDIA H200 NVL", {"NVIDIA H200 NVL"}, 835.5, 417.5, 60, 4800},
    /* NVIDIA A100 datasheet (40GB and 80GB, PCIe and SXM: the same rates): FP32 19.5,
     * TF32 156 | 312*, BF16 312 | 624*; GPU memory bandwidth by model, which is why each memory
     * size is a row: 80GB SXM 2,039 GB/s, 80GB PCIe 1,935 GB/s, 40GB (SXM and PCIe) 1,555 GB/s:
     * https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
     * The labels keep CUDA's word order, so that "A100-PCIE-80GB" stays unknown. */
    {"NVIDIA A100 SXM4 80GB", {"NVIDIA A100-SXM4-80GB"}, 312, 156, 19.5, 2039},
    {"NVIDIA A100 SXM4 40GB", {"NVIDIA A100-SXM4-40GB"}, 312, 156, 19.5, 1555},
    {"NVIDIA A100 80GB PCIe", {"NVIDIA A100 80GB PCIe"}, 312, 156, 19.5, 1935},
    {"NVIDIA A100 PCIe 40GB", {"NVIDIA A100-PCIE-40GB"}, 312, 156, 19.5, 1555},
    /* NVIDIA L40S datasheet: FP32 91.6, TF32 183 | 366*, BF16 362.05 | 733*; GPU memory
     * bandwidth 864 GB/s: https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413 */
    {"NVIDIA L40S", {"NVIDIA L40S"}, 362.05, 183, 91.6, 864},
    /* NVIDIA Ada GPU Architecture whitepaper, Appendix A, Table 2 (GeForce RTX 4090): BF16 with
     * FP32 accumulate 165.2/330.4 (half the FP16-accumulate rate on GeForce), TF32 82.6/165.2,
     * FP32 82.6; memory bandwidth 1008 GB/s:
     * https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf */
    {"NVIDIA GeForce RTX 4090", {"NVIDIA GeForce RTX 4090"}, 165.2, 82.6, 82.6, 1008},
};
#define N_CARDS ((int)(sizeof cards / sizeof cards[0]))

#define KEY_MAX 128

/* s lower-cased, its separators (space, '-', '_', tab) one space, trimmed, without a leading
 * "nvidia ". 0 when it does not fit (no card has so long a name). */
static int key_of(const char *s, char *out)
{
    size_t k = 0;
    int sep = 0;
    for (; *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == ' ' || ch == '-' || ch == '_' || ch == '\t') {
            sep = k > 0;
            continue;
        }
        if (k + 2 >= KEY_MAX) return 0;
        if (sep) out[k++] = ' ';
        sep = 0;
        out[k++] = (char)tolower(ch);
    }
    out[k] = '\0';
    if (strncmp(out, "nvidia ", 7) == 0) memmove(out, out + 7, k - 7 + 1);
    return 1;
}

static int same(const char *key, const char *name)
{
    char k2[KEY_MAX];
    return name && key_of(name, k2) && strcmp(key, k2) == 0;
}

const tt_card *tt_card_lookup(const char *device_name)
{
    char key[KEY_MAX];
    if (!device_name || !key_of(device_name, key) || !*key) return NULL;
    for (int i = 0; i < N_CARDS; i++) {
        if (same(key, cards[i].label)) return &cards[i];
        for (int j = 0; j < TT_CARD_MAX_NAMES; j++)
            if (same(key, cards[i].names[j])) return &cards[i];
    }
    return NULL;
}

double tt_card_peak_tflops(const tt_card *c, tt_precision p)
{
    if (!c) return 0;
    switch (p) {
    case TT_PREC_FP32: return c->fp32;
    case TT_PREC_TF32: return c->tf32;
    case TT_PREC_BF16: return c->bf16;
    }
    tt_panic(__FILE__, __LINE__, "no precision %d", (int)p);
}

double tt_card_bandwidth_gbs(const tt_card *c) { return c ? c->dram : 0; }

const char *tt_card_label(const tt_card *c) { return c ? c->label : "unknown"; }

int tt_card_count(void) { return N_CARDS; }

const tt_card *tt_card_at(int i)
{
    TT_ASSERT(i >= 0 && i < N_CARDS);
    return &cards[i];
}
