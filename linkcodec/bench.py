"""``linkcodec bench``: the figures quoted in README and docs, from one command.

Sections:

- ``--compression``: golden QLC, base vs optimal layout, per tensor class;
- ``--hardware``: both QLC blocks under Verilator at lanes 1, 2, 4 and 8 with no stalls,
  as ``linkcodec sim`` measures them;
- ``--golden``: speed of the golden encoders and decoders on one core, MB/s of symbols,
  side by side with zstd and zlib on the same data in the same run;
- ``--taco``: the TACO front end's reconstruction error and output entropy;
- ``--single-stage``: each tensor's step 3 coded with a codebook from its steps 0-2 (as
  codes, and as values cast at step 3's scale), and with one from the other layers,
  against per-shard Huffman;
- ``--data``: the bundled sample's steps and files, from its ``manifest.json`` and bytes;
- ``--analyze``: ``linkcodec analyze`` on each (layer, kind) group of bundled tensors,
  whose 4 files are 4 consecutive training steps: the fixed codebook of each step comes
  from the other steps (leave-one-out).

With no section flag, all run.
"""

import json
import time
import zlib

import numpy as np

from .bundled import (DATA_DIR, KINDS, LAYERS, bundled_files, bundled_scale, manifest,
                      tensor_kind)
from .tables import class_table, format_table, markdown_table

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
    parser.add_argument("--data", action="store_true",
                        help="the bundled sample's steps and per-kind file summary")
    parser.add_argument("--analyze", action="store_true",
                        help="analyze every (layer, kind) group of bundled tensors")
    parser.add_argument("--lanes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--json", action="store_true", help="print JSON")


def hardware_rows(lanes_list):
    """Every block of the harness at each lane count: :func:`linkcodec.hardware.throughput`
    (``minilm_l3_ffn2_act_s0.npy``, optimal layout loaded at run time, no stalls)."""
    from .hardware import throughput
    from .sim.blocks import BLOCKS

    return [throughput(block, lanes) for block in BLOCKS for lanes in lanes_list]


def _frame_bits(code, symbols):
    """Bits per symbol of ``symbols`` coded by ``code`` (a QLC code or a Huffman
    codebook): the true length of the frame, which must decode back to ``symbols``."""
    data, nbits = code.encode(symbols)
    if not np.array_equal(code.decode(data, nbits), symbols):
        raise RuntimeError(f"a frame of {type(code).__name__} did not round-trip")
    return nbits / symbols.size


def single_stage_rows(kinds=KINDS):
    """Per tensor (layer) of ``kinds``: step 3 under per-shard Huffman, under a codebook
    from steps 0-2 of the same tensor (their average PMF as codes, and as values cast at
    step 3's scale), and under one from the other five layers at step 3. Every
    fixed-code frame is encoded and decoded; its bits are the true frame length."""
    from .golden.formats import compressibility
    from .golden.huffman import (HuffmanCodebook, average_pmf, per_shard_huffman_bits,
                                 shannon_bits)

    rows = []
    for kind in kinds:
        for layer in LAYERS:
            paths = bundled_files(kind, layers=[layer])
            steps = [np.load(p).reshape(-1) for p in paths]
            scales = [bundled_scale(p) for p in paths]
            late = steps[3]
            others = [np.load(p).reshape(-1) for p in bundled_files(kind, steps=[3])
                      if f"_l{layer}_" not in p.name]
            pmf, _, _ = average_pmf(steps[:3])
            start = time.perf_counter()
            at_scale = HuffmanCodebook.from_batches(steps[:3], scales=scales[:3],
                                                    scale=scales[3])
            build_ms = 1e3 * (time.perf_counter() - start)
            rows.append({
                "kind": kind, "layer": layer, "symbols": int(late.size),
                "scale_change": round(max(abs(s / scales[3] - 1) for s in scales[:3]), 4),
                "shannon": compressibility(shannon_bits(late)),
                "huffman": compressibility(per_shard_huffman_bits(late)),
                "fixed_earlier_steps": compressibility(
                    _frame_bits(HuffmanCodebook.from_pmf(pmf), late)),
                "fixed_at_scale": compressibility(_frame_bits(at_scale, late)),
                "build_ms_at_scale": round(build_ms, 2),
                "unseen_percent": 100 * float(np.isin(late, np.flatnonzero(pmf == 0)).mean()),
                "fixed_other_layers": compressibility(
                    _frame_bits(HuffmanCodebook.from_batches(others), late)),
            })
    return rows


def analyze_rows():
    """One row per (kind, layer): the totals of ``linkcodec analyze`` over its steps, with
    the leave-one-out codebook as codes, and the gaps of the one at each step's scale
    (``analyze --scales``)."""
    from .analyze import analyze_shards
    from .inputs import read_shards

    def gaps(rows):
        return [row["huffman"] - row["huffman_fixed"] for row in rows]

    rows = []
    for kind in KINDS:
        for layer in LAYERS:
            files = bundled_files(kind, layers=[layer])
            if not files:
                continue
            shards = read_shards(files)
            shard_rows, total = analyze_shards(shards)
            scaled_rows, scaled = analyze_shards(shards,
                                                 scales=[bundled_scale(f) for f in files])
            rows.append(dict(total, kind=kind, layer=layer, files=len(files),
                             worst_fixed_gap=max(gaps(shard_rows)),
                             fixed_gap_at_scale=scaled["huffman"] - scaled["huffman_fixed"],
                             worst_fixed_gap_at_scale=max(gaps(scaled_rows))))
    return rows


def taco_compressibility_rows():
    """Per kind: compressibility of the bundled e4m3 bytes and of TACO's e4m3 codes for
    the same values (decoded from the bundled bytes), under each lossless codec."""
    from .analyze import analyze_shards
    from .golden.formats import e4m3_bits_to_float
    from .golden.taco import quantize
    from .inputs import Shard

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


def _points(value):
    return f"{100 * value:.2f}"


def render_single_stage(rows):
    builds = sorted(row["build_ms_at_scale"] for row in rows)
    return markdown_table(
        ["kind", "layer", "scale change", "Shannon", "per-shard Huffman",
         "fixed, steps 0-2 as codes", "fixed, steps 0-2 at step 3's scale",
         "step-3 symbols unseen in steps 0-2 (%)", "fixed, from the other 5 layers"],
        [[row["kind"], str(row["layer"]), f"{100 * row['scale_change']:.1f}%",
          _points(row["shannon"]), _points(row["huffman"]),
          _points(row["fixed_earlier_steps"]), _points(row["fixed_at_scale"]),
          f"{row['unseen_percent']:.2f}", _points(row["fixed_other_layers"])]
         for row in rows]) + (
        f"\n\nBuilding a codebook at step 3's scale from steps 0-2 (histograms, fit, "
        f"package-merge; golden NumPy, one core): median {builds[len(builds) // 2]:.1f} ms, "
        f"max {builds[-1]:.1f} ms.")


def render_analyze(rows):
    from .analyze import METRICS

    shown = [name for name in METRICS if any(row.get(name) is not None for row in rows)]
    return ("Compressibility in % (1 - bits/8), totals over the 4 training steps of each "
            "group; `huffman_fixed` codes each step with the codebook from the average PMF "
            "of the other 3 steps, as codes. Fixed gap = huffman - huffman_fixed in "
            "percentage points, for the group and (in brackets) its worst step; \"at "
            "scale\" is the same with the codebook at each step's scale "
            "(`analyze --scales`).\n\n" + markdown_table(
                ["kind", "layer", "symbols"] + shown
                + ["fixed gap (worst step)", "fixed gap at scale (worst step)",
                   "kl_to_average"],
                [[row["kind"], str(row["layer"]), str(row["symbols"])]
                 + [_points(row[name]) for name in shown]
                 + [f"{_points(row['huffman'] - row['huffman_fixed'])} "
                    f"({_points(row['worst_fixed_gap'])})",
                    f"{_points(row['fixed_gap_at_scale'])} "
                    f"({_points(row['worst_fixed_gap_at_scale'])})",
                    f"{row['kl_to_average']:.4f}"]
                 for row in rows]))


def render_golden(rows):
    return (f"{rows[0]['symbols']} symbols: every bundled activation tensor. MB/s of e4m3 "
            "symbols (1 MB = 10^6 symbols), best of 3.\n\n" + markdown_table(
                ["codec", "encode MB/s", "decode MB/s", "bits/symbol"],
                [[row["codec"], str(row["encode_mb_s"]), str(row["decode_mb_s"]),
                  str(row["bits_per_symbol"])] for row in rows]))


def taco_section():
    from .golden.taco import report_markdown

    groups = {}
    for path in bundled_files():
        groups.setdefault(tensor_kind(path), []).append(path)
    return {"tables": report_markdown(groups),
            "compressibility": taco_compressibility_rows()}


def render_taco(section):
    metrics = ("shannon", "huffman", "huffman_fixed", "qlc_base", "qlc_optimal")
    return (section["tables"] + "\n## How compressible TACO's e4m3 output is "
            "(`linkcodec bench --taco`)\n\nCompressibility in % (1 - bits/8) of the e4m3 "
            "bytes, totals over each kind's 24 files, every file coded with its own PMF; "
            "`huffman_fixed` from the other files of the kind. TACO's two float32 scales "
            "per 128 values add 0.5 bit/value (6.25 points) on top.\n\n" + markdown_table(
                ["kind", "stream"] + list(metrics),
                [[row["kind"], row["stream"]] + [_points(row[name]) for name in metrics]
                 for row in section["compressibility"]], align="ll" + "r" * len(metrics)))


def render_hardware(rows):
    return markdown_table(
        ["block", "lanes", "word bits", "symbols", "cycles", "symbols/cycle", "of lanes",
         "bit-exact"],
        [[row["block"], str(row["lanes"]), str(row["word_width"]), str(row["symbols"]),
          str(row["cycles"]), f"{row['symbols_per_cycle']:.3f}",
          f"{row['symbols_per_cycle'] / row['lanes']:.1%}",
          "yes" if row["bit_exact"] else "NO"] for row in rows],
        align="lrrrrrrl") + f"\n\n(file: {rows[0]['file']})"


def data_section():
    """The capture's steps and, per kind and step, its six layers' files: from the
    manifest ``linkcodec capture`` wrote, the pooled entropy from the bytes."""
    from .golden.huffman import entropy_bits

    sample = manifest()
    steps = [{"step": step["step"],
              "text": ", ".join(f"{source} {step['pair_sources'].count(source)}"
                                for source in step["text_sources"]),
              "sentences": step["sentences"],
              "padded_batch": f"{step['batch_rows']} x {step['padded_length']}",
              "real_tokens": step["real_tokens"], "kept": step["tokens_kept"],
              "loss": step["loss_value"], "grad_norm": step["gradient_global_norm"]}
             for step in sample["steps"]]
    groups = {}
    for entry in sample["files"]:
        groups.setdefault((entry["kind"], entry["step"]), []).append(entry)
    files = []
    for (kind, step), entries in sorted(groups.items()):
        counts = sum(np.bincount(np.load(DATA_DIR / e["file"]).reshape(-1), minlength=256)
                     for e in entries)
        entropies = [e["entropy_bits_per_symbol"] for e in entries]
        amaxes = [e["amax"] for e in entries]
        files.append({"kind": kind, "step": step, "files": len(entries),
                      "shape": " x ".join(map(str, entries[0]["shape"])),
                      "amax_min": min(amaxes), "amax_max": max(amaxes),
                      "entropy_min": min(entropies), "entropy_max": max(entropies),
                      "entropy_mean": sum(entropies) / len(entropies),
                      "entropy_pooled": entropy_bits(counts)})
    return {"steps": steps, "files": files}


def render_data(section):
    steps = markdown_table(
        ["step", "text (pairs per source)", "sentences", "padded batch", "real tokens",
         "kept", "loss", "grad norm"],
        [[str(s["step"]), s["text"], str(s["sentences"]), s["padded_batch"],
          str(s["real_tokens"]), str(s["kept"]), f"{s['loss']:.4f}", f"{s['grad_norm']:.2f}"]
         for s in section["steps"]], align="rlrlrrrr")
    files = markdown_table(
        ["kind", "step", "shape", "amax (range over layers)", "entropy per file", "mean",
         "pooled over layers"],
        [[f"`{f['kind']}`", str(f["step"]), f["shape"],
          f"{f['amax_min']:.4g} - {f['amax_max']:.4g}",
          f"{f['entropy_min']:.3f} - {f['entropy_max']:.3f}", f"{f['entropy_mean']:.3f}",
          f"{f['entropy_pooled']:.2f}"] for f in section["files"]], align="lrlllrr")
    return steps + "\n\n" + files


#: (flag, title, compute(args), render(result)), in the order the sections print.
SECTIONS = [
    ("data", "The bundled sample", lambda args: data_section(), render_data),
    ("single_stage", "Single-stage Huffman on step 3", lambda args: single_stage_rows(),
     render_single_stage),
    ("analyze", "Compressibility per tensor group", lambda args: analyze_rows(),
     render_analyze),
    ("golden", "Golden model speed, one core", lambda args: golden_rows(), render_golden),
    ("taco", "TACO front end", lambda args: taco_section(), render_taco),
    ("compression", "QLC compression on the bundled tensors",
     lambda args: class_table(), format_table),
    ("hardware", "Cycles per symbol, no stalls", lambda args: hardware_rows(args.lanes),
     render_hardware),
]


def run(args):
    chosen = [section for section in SECTIONS if getattr(args, section[0])] or SECTIONS
    report = {}
    for flag, title, compute, render in chosen:
        report[flag] = compute(args)
        if not args.json:
            option = "--" + flag.replace("_", "-")
            print(f"## {title} (`linkcodec bench {option}`)\n")
            print(render(report[flag]))
            print()
    if args.json:
        print(json.dumps(report, indent=2))
    return 0 if all(row["bit_exact"] for row in report.get("hardware", [])) else 1
