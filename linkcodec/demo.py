"""``linkcodec demo``: the main job on the bundled real tensors, in one screen."""

import time

import numpy as np

from .cli import bundled_files
from .report import class_table, format_table

__all__ = ["run_demo"]


def run_demo(*, lanes=4):
    print("linkcodec demo: lossless QLC on real FP8 e4m3 tensors")
    print("sample: all-MiniLM-L6-v2, one fine-tuning step on real text, FFN activations and")
    print("gradients of all 6 layers, e4m3 with per-tensor amax scaling (docs/data.md)\n")

    print("Compression, golden model (bits/symbol; compressibility = 1 - bits/8 in brackets):")
    print(format_table(class_table()))

    from .golden.qlc import QlcCode
    from .sim.harness import run_qlc

    path = bundled_files("ffn2_act", layers=[3])[0]
    symbols = np.load(path).reshape(-1)
    code = QlcCode.from_pmf(np.bincount(symbols, minlength=256))
    print(f"\nHardware: Amaranth RTL under Verilator (cocotb), {lanes} lanes, no stalls,")
    print(f"{path.name} ({symbols.size} symbols), optimal layout loaded at run time:")
    exact = True
    for block in ("qlc-encoder", "qlc-decoder"):
        start = time.monotonic()
        result = run_qlc(block, [symbols], lanes=lanes, code=code, seed=1)
        exact &= result["bit_exact"]
        print(f"  {block}: {result['symbols']} symbols in {result['cycles']} cycles = "
              f"{result['symbols_per_cycle']:.3f} symbols/cycle "
              f"({result['symbols_per_cycle'] / lanes:.1%} of {lanes}), "
              f"{result['word_width']}-bit words, bit-exact: "
              f"{'yes' if result['bit_exact'] else 'NO'} "
              f"[{time.monotonic() - start:.0f} s]")
    print("\nMore: `linkcodec sim --help`, `linkcodec bench`, docs/.")
    return 0 if exact else 1
