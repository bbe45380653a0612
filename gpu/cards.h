/* What a GPU can do at most: the dense peak TFLOP/s and the DRAM bandwidth of the cards we know,
 * from NVIDIA's datasheets and whitepapers, so that a throughput can be stated as a share of them
 * (model-FLOPs utilization, the roofline of tt-bench --profile).
 * Dense means without 2:4 structured sparsity, which the datasheets' headline tensor figures
 * assume and no kernel here uses. A card missing from the table is unknown: callers say so. */
#ifndef TT_CARDS_H
#define TT_CARDS_H

#include "spec.h"

#define TT_CARD_MAX_NAMES 4

typedef struct {
    const char *label;                     /* canonical, e.g. "NVIDIA H100 SXM" */
    const char *names[TT_CARD_MAX_NAMES];  /* as cudaGetDeviceProperties names it; NULL-padded */
    double bf16; /* bf16 tensor cores, fp32 accumulation */
    double tf32; /* tf32 tensor cores */
    double fp32; /* fp32 without tensor cores */
    double dram; /* device memory bandwidth, GB/s (1e9 bytes/s) */
} tt_card;

/* The card of a device name: its label or one of its names, compared without regard to case, to
 * an "NVIDIA " prefix, or to how words are separated (spaces, '-', '_'). Anything else (another
 * SKU, a MIG slice, a bare "NVIDIA H100" that could be any of three) is unknown: NULL. */
const tt_card *tt_card_lookup(const char *device_name);
/* Dense peak TFLOP/s at precision p; 0 for an unknown card (NULL). */
double tt_card_peak_tflops(const tt_card *c, tt_precision p);
/* Device memory (DRAM) bandwidth in GB/s; 0 for an unknown card (NULL). */
double tt_card_bandwidth_gbs(const tt_card *c);
/* c's label, or "unknown" for NULL. */
const char *tt_card_label(const tt_card *c);

/* The table itself (for tests and listings). */
int tt_card_count(void);
const tt_card *tt_card_at(int i);

#endif
