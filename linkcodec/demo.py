"""``linkcodec demo``: the main job on the bundled real tensors, in one screen."""

import time

import numpy as np

from .cli import bundled_files
from .report import class_table, format_table

__all__ = ["run_demo", "single_stage_table"]


def single_stage_table():
    from .golden.huffman import HuffmanCodebook, per_shard_huffman_bits
    from .report import KINDS

    lines = ["| tensor class | Huffman from step 3 itself | codebook from steps 0-2 | gap |",
             "|---|---:|---:|---:|"]
    for kind in KINDS:
        own = fixed = count = 0
        for layer in range(6):
            earlier = [np.load(p).reshape(-1)
                       for p in bundled_files(kind, layers=[layer], steps=[0, 1, 2])]
            later = np.load(bundled_files(kind, layers=[layer], steps=[3])[0]).reshape(-1)
            book = HuffmanCodebook.from_batches(earlier)
            own += per_shard_huffman_bits(later) * later.size
            fixed += float(book.lengths[later].astype(np.int64).sum())
            count += later.size
        own, fixed = own / count, fixed / count
        lines.append(f"| {kind} | {own:.3f} b ({1 - own / 8:.1%}) | {fixed:.3f} b "
                     f"({1 - fixed / 8:.1%}) | {100 * (fixed - own) / 8:.2f} points |")
    return "\n".join(lines)


def run_demo(*, lanes=4):
    print("linkcodec demo: lossless QLC on real FP8 e4m3 tensors")
    print("sample: all-MiniLM-L6-v2, 4 consecutive fine-tuning steps on real text, FFN")
    print("activations and gradients of all 6 layers, e4m3 with per-tensor amax scaling")
    print("(docs/data.md)\n")

    print("QLC, golden model (bits/symbol; compressibility = 1 - bits/8 in brackets):")
    print(format_table(class_table()))
    print("\nSingle-stage Huffman: each layer's step 3 coded with a codebook built from its")
    print("steps 0-2 (nothing sent per batch), against a Huffman code built from step 3 itself:")
    print(single_stage_table())

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
