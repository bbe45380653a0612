#!/usr/bin/env python3
"""Writes py-ref.safetensors, the interop fixture of tests/test_safetensors.c, with the reference
implementation (pip install safetensors numpy). Not run by the build or CI: the file is committed,
and the C test recomputes every value below, so keep the two in step.

    python3 tests/data/make-py-ref.py tests/data/py-ref.safetensors
"""
import sys

import numpy as np
from safetensors.numpy import save_file


def tensors():
    return {
        "embed.weight": (np.arange(12, dtype=np.float32) * 0.25 - 1.0).reshape(3, 4),
        "layers.0.attn.bias": np.arange(6, dtype=np.float16) * np.float16(0.5) - np.float16(1.0),
        "layers.0.scale": (np.arange(4, dtype=np.float64) / 3.0).reshape(2, 2),
        "ids": np.arange(6, dtype=np.int64).reshape(2, 3) - 3,
        "step": np.array(1234567890123, dtype=np.int64),  # a scalar: shape []
        "empty": np.zeros((0, 5), dtype=np.float32),
    }


METADATA = {
    "format": "pt",
    "note": 'line one\nline "two"\twith a \\ and \u00fc\u00df \u65e5\u672c',
}


if __name__ == "__main__":
    save_file(tensors(), sys.argv[1] if len(sys.argv) > 1 else "py-ref.safetensors",
              metadata=METADATA)
