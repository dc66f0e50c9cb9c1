"""``linkcodec bench``: the figures quoted in README and docs, from one command.

Sections:

- ``--compression``: golden QLC, base vs optimal layout, per tensor class;
- ``--hardware``: both QLC blocks under Verilator at lanes 1, 2, 4 and 8 with no stalls,
  as ``linkcodec sim`` measures them;
- ``--golden``: speed of the golden encoders and decoders on one core, MB/s of symbols,
  side by side with zstd and zlib on the same data in the same run;
- ``--taco``: the TACO front end's reconstruction error and output entropy;
- ``--single-stage``: each activation tensor's step 3 coded with a codebook from its
  steps 0-2, and with one from the other layers, against per-shard Huffman;
- ``--analyze``: ``linkcodec analyze`` on each (layer, kind) group of bundled tensors,
  whose 4 files are 4 consecutive training steps: the fixed codebook of each step comes
  from the other steps (leave-one-out).

With no section flag, all run.
"""

import json
import time
import zlib

import numpy as np

from .cli import bundled_files, tensor_kind

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    parser.add_argument("--compression", action="store_true",
                        help="QLC base vs optimal layout per tensor class (golden model)")
    parser.add_argument("--hardware", action="store_true",
                        help="cycles per symbol of both QLC blocks at lanes 1, 2, 4, 8")
    parser.add_argument("--golden", action="store_true",
                        help="golden QLC/Huffman encode and decode speed vs zstd and zlib")
    parser.add_argument("--taco", action="store_true",
                        help="TACO reconstruction error and output entropy")
    parser.add_argument("--single-stage", dest="single_stage", action="store_true",
                        help="single-stage Huffman from earlier steps vs per-shard")
    parser.add_argument("--analyze", action="store_true",
                        help="analyze every (layer, kind) group of bundled tensors")
    parser.add_argument("--lanes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--json", action="store_true", help="print JSON")


def hardware_rows(lanes_list, *, kind="ffn2_act", layer=3):
    from .golden.qlc import QlcCode
    from .sim.harness import run_qlc

    path = bundled_files(kind, layers=[layer])[0]
    symbols = np.load(path).reshape(-1)
    code = QlcCode.from_pmf(np.bincount(symbols, minlength=256))
    rows = []
    for block in ("qlc-encoder", "qlc-decoder"):
        for lanes in lanes_list:
            result = run_qlc(block, [symbols], lanes=lanes, code=code, seed=1)
            rows.append({
                "block": block, "lanes": lanes, "file": path.name,
                "word_width": result["word_width"], "symbols": result["symbols"],
                "cycles": result["cycles"],
                "symbols_per_cycle": round(result["symbols_per_cycle"], 4),
                "bit_exact": result["bit_exact"],
            })
    return rows


def single_stage_rows():
    """Per activation tensor: step 3 under per-shard Huffman, a codebook from steps 0-2
    of the same tensor, and one from the other five layers at step 3. Every fixed-code
    frame is encoded and decoded; its bits are the true frame length."""
    from .golden.huffman import (HuffmanCodebook, average_pmf, per_shard_huffman_bits,
                                 shannon_bits)

    def fixed(book, symbols):
        data, nbits = book.encode(symbols)
        if not np.array_equal(book.decode(data, nbits), symbols):
            raise RuntimeError("a fixed-codebook frame did not round-trip")
        return nbits / symbols.size

    rows = []
    for kind in ("ffn1_act", "ffn2_act"):
        for layer in range(6):
            steps = [np.load(p).reshape(-1) for p in bundled_files(kind, layers=[layer])]
            late = steps[3]
            others = [np.load(p).reshape(-1) for p in bundled_files(kind, steps=[3])
                      if f"_l{layer}_" not in p.name]
            pmf, _, _ = average_pmf(steps[:3])
            rows.append({
                "kind": kind, "layer": layer,
                "shannon": 1 - shannon_bits(late) / 8,
                "huffman": 1 - per_shard_huffman_bits(late) / 8,
                "fixed_earlier_steps": 1 - fixed(HuffmanCodebook.from_batches(steps[:3]),
                                                 late) / 8,
                "unseen_percent": 100 * float(np.isin(late, np.flatnonzero(pmf == 0)).mean()),
                "fixed_other_layers": 1 - fixed(HuffmanCodebook.from_batches(others),
                                                late) / 8,
            })
    return rows


def analyze_rows():
    """One row per (kind, layer): the totals of ``linkcodec analyze`` over its steps."""
    from .analyze import analyze_shards
    from .inputs import read_shards
    from .report import KINDS

    rows = []
    for kind in KINDS:
        for layer in range(6):
            files = bundled_files(kind, layers=[layer])
            if not files:
                continue
            shard_rows, total = analyze_shards(read_shards(files))
            gaps = [row["huffman"] - row["huffman_fixed"] for row in shard_rows]
            rows.append(dict(total, kind=kind, layer=layer, files=len(files),
                             worst_fixed_gap=max(gaps)))
    return rows


def print_analyze(rows):
    from .analyze import METRICS

    shown = [name for name in METRICS if any(row.get(name) is not None for row in rows)]
    print("| kind | layer | symbols | " + " | ".join(shown)
          + " | fixed gap (worst step) | kl_to_average |")
    print("|---|---:|---:|" + "---:|" * (len(shown) + 2))
    for row in rows:
        cells = [f"{100 * row[name]:.2f}" for name in shown]
        print(f"| {row['kind']} | {row['layer']} | {row['symbols']} | " + " | ".join(cells)
              + f" | {100 * (row['huffman'] - row['huffman_fixed']):.2f} "
                f"({100 * row['worst_fixed_gap']:.2f}) | {row['kl_to_average']:.4f} |")


def taco_compressibility_rows():
    """Per kind: compressibility of the bundled e4m3 bytes and of TACO's e4m3 codes for
    the same values (decoded from the bundled bytes), under each lossless codec."""
    from .analyze import analyze_shards
    from .golden.formats import e4m3_bits_to_float
    from .golden.taco import quantize
    from .inputs import Shard
    from .report import KINDS

    rows = []
    for kind in KINDS:
        files = bundled_files(kind)
        inputs, outputs = [], []
        for path in files:
            bits = np.load(path)
            codes = quantize(e4m3_bits_to_float(bits)).codes
            inputs.append(Shard(str(path), path.stem, "e4m3", bits.reshape(-1)))
            outputs.append(Shard(str(path), path.stem, "e4m3", codes.reshape(-1)))
        for stream, shards in (("input e4m3", inputs), ("TACO e4m3", outputs)):
            _, total = analyze_shards(shards)
            rows.append(dict(total, kind=kind, stream=stream))
    return rows


def _best_seconds(function, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def golden_rows(repeats=3):
    """MB/s of symbols (1 MB = 1e6 symbols) on every bundled activation tensor together."""
    import zstandard

    from .golden.huffman import HuffmanCodebook
    from .golden.qlc import QlcCode

    symbols = np.concatenate([np.load(path).reshape(-1) for path in bundled_files()
                              if tensor_kind(path).endswith("_act")])
    counts = np.bincount(symbols, minlength=256)
    megabytes = symbols.size / 1e6
    raw = symbols.tobytes()
    rows = []

    def add(codec, encode, decode, check):
        encoded = encode()
        if not check(decode(encoded)):
            raise RuntimeError(f"{codec} did not round-trip in the benchmark")
        rows.append({
            "codec": codec, "symbols": int(symbols.size),
            "encode_mb_s": round(megabytes / _best_seconds(encode, repeats), 1),
            "decode_mb_s": round(megabytes / _best_seconds(lambda: decode(encoded), repeats), 1),
            "bits_per_symbol": round(8 * _size(encoded) / symbols.size, 4),
        })

    def _size(encoded):
        return encoded[1] / 8 if isinstance(encoded, tuple) else len(encoded)

    def same(decoded):
        return np.array_equal(np.asarray(decoded), symbols)

    def same_bytes(decoded):
        return decoded == raw

    qlc = QlcCode.from_pmf(counts)
    add("qlc (golden)", lambda: qlc.encode(symbols), lambda e: qlc.decode(*e), same)
    book = HuffmanCodebook.from_pmf(counts)
    add("huffman (golden)", lambda: book.encode(symbols), lambda e: book.decode(*e), same)
    for level in (3, 19):
        compressor = zstandard.ZstdCompressor(level=level)
        decompressor = zstandard.ZstdDecompressor()
        add(f"zstd -{level}", lambda c=compressor: c.compress(raw),
            decompressor.decompress, same_bytes)
    add("zlib -9", lambda: zlib.compress(raw, 9), zlib.decompress, same_bytes)
    return rows


def run(args):
    from .report import class_table, format_table

    everything = not (args.compression or args.hardware or args.golden or args.taco
                      or args.analyze or args.single_stage)
    report = {}
    if args.single_stage or everything:
        rows = single_stage_rows()
        report["single_stage"] = rows
        if not args.json:
            print("## Single-stage Huffman on step 3 (`linkcodec bench --single-stage`)\n")
            print("| kind | layer | Shannon | per-shard Huffman | fixed, from steps 0-2 | "
                  "step-3 symbols unseen in steps 0-2 (%) | fixed, from the other 5 layers |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            for row in rows:
                print(f"| {row['kind']} | {row['layer']} | {100 * row['shannon']:.2f} | "
                      f"{100 * row['huffman']:.2f} | {100 * row['fixed_earlier_steps']:.2f} | "
                      f"{row['unseen_percent']:.2f} | {100 * row['fixed_other_layers']:.2f} |")
            print()
    if args.analyze or everything:
        rows = analyze_rows()
        report["analyze"] = rows
        if not args.json:
            print("## Compressibility per tensor group (`linkcodec bench --analyze`)\n")
            print("Compressibility in % (1 - bits/8), totals over the 4 training steps of "
                  "each group; `huffman_fixed` codes each step with the codebook from the "
                  "average PMF of the other 3 steps. Fixed gap = huffman - huffman_fixed in "
                  "percentage points.\n")
            print_analyze(rows)
            print()
    if args.golden or everything:
        rows = golden_rows()
        report["golden"] = rows
        if not args.json:
            print("## Golden model speed, one core (`linkcodec bench --golden`)\n")
            print(f"{rows[0]['symbols']} symbols: every bundled activation tensor. "
                  "MB/s of e4m3 symbols (1 MB = 10^6 symbols), best of 3.\n")
            print("| codec | encode MB/s | decode MB/s | bits/symbol |")
            print("|---|---:|---:|---:|")
            for row in rows:
                print(f"| {row['codec']} | {row['encode_mb_s']} | {row['decode_mb_s']} | "
                      f"{row['bits_per_symbol']} |")
            print()
    if args.taco or everything:
        from .golden.taco import report_markdown

        text = report_markdown(bundled_files())
        rows = taco_compressibility_rows()
        report["taco"] = {"tables": text, "compressibility": rows}
        if not args.json:
            print("## TACO front end (`linkcodec bench --taco`)\n")
            print(text)
            print("## How compressible TACO's e4m3 output is (`linkcodec bench --taco`)\n")
            print("Compressibility in % (1 - bits/8) of the e4m3 bytes, totals over each "
                  "kind's 24 files, every file coded with its own PMF; `huffman_fixed` "
                  "from the other files of the kind. TACO's two float32 scales per 128 "
                  "values add 0.5 bit/value (6.25 points) on top.\n")
            print("| kind | stream | shannon | huffman | huffman_fixed | qlc_base | "
                  "qlc_optimal |")
            print("|---|---|---:|---:|---:|---:|---:|")
            for row in rows:
                print(f"| {row['kind']} | {row['stream']} | " + " | ".join(
                    f"{100 * row[name]:.2f}" for name in
                    ("shannon", "huffman", "huffman_fixed", "qlc_base", "qlc_optimal"))
                    + " |")
            print()
    if args.compression or everything:
        rows = class_table()
        report["compression"] = [
            {key: (list(value.sizes) if key == "optimal_layout" else value)
             for key, value in row.items()} for row in rows]
        if not args.json:
            print("## QLC compression on the bundled tensors (`linkcodec bench --compression`)\n")
            print(format_table(rows))
            print()
    if args.hardware or everything:
        rows = hardware_rows(args.lanes)
        report["hardware"] = rows
        if not args.json:
            print("## Cycles per symbol, no stalls (`linkcodec bench --hardware`)\n")
            print("| block | lanes | word bits | symbols | cycles | symbols/cycle | "
                  "of lanes | bit-exact |")
            print("|---|---:|---:|---:|---:|---:|---:|---|")
            for row in rows:
                print(f"| {row['block']} | {row['lanes']} | {row['word_width']} | "
                      f"{row['symbols']} | {row['cycles']} | {row['symbols_per_cycle']:.3f} | "
                      f"{row['symbols_per_cycle'] / row['lanes']:.1%} | "
                      f"{'yes' if row['bit_exact'] else 'NO'} |")
            print(f"\n(file: {rows[0]['file']})")
    if args.json:
        print(json.dumps(report, indent=2))
    ok = all(row["bit_exact"] for row in report.get("hardware", []))
    return 0 if ok else 1
