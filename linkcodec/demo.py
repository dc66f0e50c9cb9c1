"""``linkcodec demo``: the main job on the bundled real tensors, in one screen.

Every figure comes from the same functions as ``linkcodec bench``.
"""

import time

from .bench import bf16_rows, codec_classes, codec_rows
from .hardware import throughput
from .rtl.blocks import BLOCKS
from .tables import markdown_table

__all__ = ["codec_table", "bf16_table", "run_demo"]


def codec_table():
    """Per tensor class: step 3 of each layer coded single-stage, with a code built from
    steps 0-2 of the same layer (``bench --codecs``), by QLC and by Huffman (as codes, and
    carried to step 3's scale), beside per-shard Huffman and Shannon; compressibility in %."""
    columns = (("qlc_single_stage", "QLC"), ("huffman_single_stage", "Huffman"),
               ("huffman_at_scale", "Huffman at scale"),
               ("huffman_per_shard", "per-shard Huffman"), ("shannon", "Shannon"))
    return markdown_table(
        ["tensor class", "symbols"] + [title for _, title in columns] + ["QLC / Huffman"],
        [[entry["kind"], str(entry["symbols"])]
         + [f"{100 * entry[key]:.1f}" for key, _ in columns] + [f"{entry['qlc_share']:.0%}"]
         for entry in codec_classes(codec_rows())])


def bf16_table():
    """Per kind, over the bundled bf16 tensors (layers 1 and 4): step 3 coded with tables
    from steps 0-2 (``bench --bf16``), by the exponent remap's wire format (table by sigma
    and by histogram), exponent Huffman and zstd -19; compressibility in % (1 - bits/16)."""
    rows = bf16_rows(lmz=False)
    columns = (("remap_sigma", "remap, sigma"), ("remap_histogram", "remap, histogram"),
               ("exponent_huffman", "exponent Huffman"), ("zstd_19", "zstd -19"))
    kinds = dict.fromkeys(row["kind"] for row in rows)
    body = []
    for kind in kinds:
        own = [row for row in rows if row["kind"] == kind]
        values = sum(row["values"] for row in own)
        body.append([f"bf16 {kind}", str(values)] + [
            f"{100 * sum(row[key] * row['values'] for row in own) / values:.1f}"
            for key, _ in columns])
    return markdown_table(["tensor", "values"] + [title for _, title in columns], body)


def run_demo(*, lanes=4):
    print("linkcodec demo: lossless codecs on real FP8 e4m3 and bf16 tensors")
    print("sample: all-MiniLM-L6-v2, 4 consecutive fine-tuning steps on real text, FFN")
    print("activations and gradients of all 6 layers, e4m3 with per-tensor amax scaling,")
    print("and of layers 1 and 4 as bf16 (docs/data.md)\n")

    print("Compressibility in % (1 - bits/8) of step 3 of every layer, coded single-stage as")
    print("a link runs: with a code built from steps 0-2 of the same layer and kind, nothing")
    print("sent per batch. QLC: optimal layout and ranks from those steps; Huffman: their")
    print("codebook as built, and carried to step 3's e4m3 scale. Per-shard Huffman and")
    print("Shannon use step 3's own PMF. \"QLC / Huffman\": QLC's saving as a share of")
    print("Huffman's, both from steps 0-2 (docs/results.md, `linkcodec bench --codecs`):")
    print(codec_table())
    print("\nbf16, the same way (1 - bits/16; `linkcodec bench --bf16`): ZipCCL's exponent")
    print("remap, its 7 exponents from the sigma or the histogram of steps 0-2:")
    print(bf16_table())

    start = time.monotonic()
    # (a block that does not take ``lanes`` runs at the most it takes below them)
    rows = [throughput(name, lanes if lanes in block.lanes
                       else max(count for count in block.lanes if count <= lanes))
            for name, block in BLOCKS.items()]
    files = ", ".join(dict.fromkeys(row["file"] for row in rows))
    print(f"\nHardware: Amaranth RTL under Verilator (cocotb), {lanes} lanes, no stalls, on")
    print(f"{files}, tables fitted to it loaded at run time "
          f"[{time.monotonic() - start:.0f} s]:")
    for row in rows:
        at = "" if row["lanes"] == lanes else f" at {row['lanes']} lanes"
        print(f"  {row['block']}: {row['symbols']} symbols in {row['cycles']} cycles{at} = "
              f"{row['symbols_per_cycle']:.3f}/cycle "
              f"({row['symbols_per_cycle'] / row['lanes']:.1%}), "
              f"bit-exact: {'yes' if row['bit_exact'] else 'NO'}")
    print("\nMore: docs/results.md (throughput, area), `linkcodec sim --help`, `linkcodec "
          "bench`.")
    return 0 if all(row["bit_exact"] for row in rows) else 1
