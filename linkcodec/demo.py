"""``linkcodec demo``: the main job on the bundled real tensors, in one screen.

Every figure comes from the same functions as ``linkcodec bench``.
"""

import time

from .bench import hardware_rows, single_stage_rows
from .bundled import KINDS
from .golden.formats import compressibility
from .tables import class_table, format_table, markdown_table

__all__ = ["run_demo", "single_stage_table"]


def single_stage_table():
    """Per tensor class, over its 6 layers: step 3 under a Huffman code built from step 3
    itself and under codebooks built from steps 0-2, as codes and carried to step 3's
    scale (``bench --single-stage`` rows)."""
    rows = single_stage_rows(KINDS)
    cells = []
    for kind in KINDS:
        own = [row for row in rows if row["kind"] == kind]
        count = sum(row["symbols"] for row in own)

        def bits(key):  # compressibility to bits/symbol, weighted by each layer's symbols
            return sum(8 * (1 - row[key]) * row["symbols"] for row in own) / count

        def gaps(key):
            return [100 * (row["huffman"] - row[key]) for row in own]

        huffman = bits("huffman")
        cells.append([kind, f"{huffman:.3f} b ({compressibility(huffman):.1%})"] + [
            f"{bits(key):.3f} b, gap {max(gaps(key)):.2f}"
            for key in ("fixed_earlier_steps", "fixed_at_scale")])
    return markdown_table(["tensor class", "Huffman from step 3 itself",
                           "codebook from steps 0-2 (worst layer's gap, points)",
                           "same, carried to step 3's scale"], cells)


def run_demo(*, lanes=4):
    print("linkcodec demo: lossless QLC on real FP8 e4m3 tensors")
    print("sample: all-MiniLM-L6-v2, 4 consecutive fine-tuning steps on real text, FFN")
    print("activations and gradients of all 6 layers, e4m3 with per-tensor amax scaling")
    print("(docs/data.md)\n")

    print("QLC, golden model (bits/symbol; compressibility = 1 - bits/8 in brackets):")
    print(format_table(class_table()))
    print("\nSingle-stage Huffman: each layer's step 3 coded with a codebook built from its")
    print("steps 0-2 (nothing sent per batch), against a Huffman code built from step 3 itself.")
    print("Carried to step 3's amax scale, the codebook stays within 0.5 points on every")
    print("activation tensor; on gradients neither way holds on every layer (docs/huffman.md):")
    print(single_stage_table())

    start = time.monotonic()
    rows = hardware_rows([lanes])
    print(f"\nHardware: Amaranth RTL under Verilator (cocotb), {lanes} lanes, no stalls,")
    print(f"{rows[0]['file']} ({rows[0]['symbols']} symbols), optimal layout loaded at run "
          f"time [{time.monotonic() - start:.0f} s]:")
    for row in rows:
        print(f"  {row['block']}: {row['symbols']} symbols in {row['cycles']} cycles = "
              f"{row['symbols_per_cycle']:.3f} symbols/cycle "
              f"({row['symbols_per_cycle'] / lanes:.1%} of {lanes}), "
              f"{row['word_width']}-bit words, bit-exact: "
              f"{'yes' if row['bit_exact'] else 'NO'}")
    print("\nMore: `linkcodec sim --help`, `linkcodec bench`, docs/.")
    return 0 if all(row["bit_exact"] for row in rows) else 1
