"""The ``linkcodec`` command line.

- ``linkcodec sim BLOCK [--lanes N] [--layout base|optimal] [--codebook JSON]
  [--table sigma|histogram] [--json] FILE...`` runs a block under Verilator and counts
  cycles per symbol (values, for the bf16 exponent-remap blocks); ``linkcodec sim
  qlc-decoder|huffman-decoder --fuzz N [FILE...]`` fuzzes a decoder against the golden
  model;
- ``linkcodec analyze [--format e4m3|bf16] [--json] [--plot PNG] FILE... [--scales S...]``
  reports how compressible tensors are under each codec;
- ``linkcodec codebook build --from FILE... -o book.json [--scales S... --scale S]``
  builds a single-stage Huffman codebook (``--codebook`` uses one in ``analyze`` and
  ``sim``);
- ``linkcodec bench`` measures every figure the docs quote;
- ``linkcodec demo`` is the tour on the bundled real tensors;
- ``linkcodec capture`` regenerates that sample (needs the ``capture`` extra).
"""

import argparse
import json
import sys

import numpy as np

__all__ = ["main"]


def _qlc_code(symbol_arrays, layout_name, codebook=None):
    """The QLC code ``sim`` loads: ranks from the files' pooled PMF or, with a codebook,
    from the codebook's model of the source (``2**-length``: shorter codes rank first)."""
    from .golden.qlc import QlcCode, QlcLayout

    if codebook is not None:
        pmf = 2.0 ** -codebook.lengths.astype(np.float64)
    else:
        pmf = np.zeros(256, dtype=np.int64)
        for symbols in symbol_arrays:
            pmf += np.bincount(symbols, minlength=256)
    layout = QlcLayout.base() if layout_name == "base" else None
    return QlcCode.from_pmf(pmf, layout=layout)


def _block_kind(args):
    """``"qlc"``, ``"huffman"`` or ``"exponent"``: which family ``sim``'s block is of. Each
    family's options (``--layout``, ``--codebook``, ``--table``) are refused on the others."""
    kind = args.block.split("-")[0]
    if args.layout is not None and kind != "qlc":
        own = "--codebook" if kind == "huffman" else "--table"
        raise ValueError(f"--layout picks a QLC layout; {args.block} takes {own}")
    if args.codebook and kind == "exponent":
        raise ValueError(f"--codebook gives a Huffman codebook; {args.block} takes --table")
    if args.table is not None and kind != "exponent":
        raise ValueError(f"--table picks the exponent table of the exponent-remap blocks; "
                         f"{args.block} does not take it")
    if args.layout is None:
        args.layout = "optimal"
    if args.table is None:
        args.table = "sigma"
    return kind


def _huffman_codebook(args, arrays):
    """The codebook a Huffman block runs with: ``--codebook``, else the one ``linkcodec
    codebook build`` would build from the FILEs (one batch a file)."""
    from .sim.blocks import get_block

    codebook = _codebook(args)
    if codebook is not None:
        return codebook
    return get_block(args.block).fitted_tables(arrays)


def _exponent_table(kind, shards):
    """The exponent table of ``sim``'s exponent-remap blocks, from all the FILEs' values
    together: by their sigma (``table_from_tensor_sigma``) or their exponent histogram."""
    from .golden.exponent import table_from_histogram, table_from_tensor_sigma

    values = np.concatenate([shard.symbols for shard in shards])
    if kind == "sigma":
        return table_from_tensor_sigma(values)
    return table_from_histogram(values)


def _read_bf16_shards(paths):
    """The FILEs as bf16 values: ``uint16`` bit patterns, or floats rounded to bf16. An
    e4m3 file (``uint8``) is refused: the exponent-remap blocks carry bf16 values."""
    from .inputs import FormatError, read_shards

    shards = read_shards(paths, format="bf16")
    for shard in shards:
        if shard.format != "bf16":
            raise FormatError(f"{shard.file}:{shard.tensor} holds e4m3 bytes (uint8); the "
                              "exponent-remap blocks carry bf16 values (uint16 bit "
                              "patterns or floats)")
    return shards


def cmd_sim(args):
    from .inputs import read_e4m3_shards

    kind = _block_kind(args)
    if args.lanes is None:
        from .sim.blocks import get_block

        args.lanes = min(get_block(args.block).lanes)      # 1, or 4 for exponent blocks
    if args.fuzz is not None:
        return _sim_fuzz(args, kind == "huffman")
    if not args.files:
        raise ValueError("give at least one FILE (FILEs are optional only with --fuzz)")
    from .sim.harness import run_frames

    if kind == "exponent":
        shards = _read_bf16_shards(args.files)
    else:
        shards = read_e4m3_shards(args.files)
    arrays = [shard.symbols for shard in shards]
    if kind == "huffman":
        code = _huffman_codebook(args, arrays)
        described = {"codebook": code.id}
    elif kind == "exponent":
        code = _exponent_table(args.table, shards)
        described = {"table": args.table,
                     "exponents": [int(exponent) for exponent in code.exponents]}
    else:
        code = _qlc_code(arrays, args.layout, _codebook(args))
        described = {"layout": args.layout}
    result = run_frames(args.block, arrays, lanes=args.lanes, tables=code,
                        word_width=args.word_width, idle=args.idle or 0.0,
                        stall=args.stall or 0.0, seed=args.seed)
    report = {
        "block": result["block"],
        "lanes": result["lanes"],
        "symbols": result["symbols"],
        "cycles": result["cycles"],
        "symbols_per_cycle": round(result["symbols_per_cycle"], 4),
        "bit_exact": result["bit_exact"],
        "word_width": result["word_width"],
        **described,
        "seed": result["seed"],
        "files": [
            dict(frame, file=shard.file, tensor=shard.tensor)
            for frame, shard in zip(result["frames"], shards)
        ],
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        unit = "values" if kind == "exponent" else "symbols"
        table = " ".join(f"{key} {value}" for key, value in described.items()
                         if key != "exponents")
        print(f"{report['block']}  lanes {report['lanes']}  word {report['word_width']} bits  "
              f"{table}  seed {report['seed']}")
        for frame in report["files"]:
            print(f"  {frame['file']}: {frame['symbols']} {unit} in {frame['cycles']} cycles"
                  f" = {frame['symbols_per_cycle']:.3f} {unit}/cycle")
        print(f"  total: {report['symbols']} {unit} in {report['cycles']} cycles = "
              f"{report['symbols_per_cycle']:.3f} {unit}/cycle, "
              f"bit-exact: {'yes' if report['bit_exact'] else 'NO'}")
    return 0 if report["bit_exact"] else 1


def _codebook(args):
    if not args.codebook:
        return None
    from .golden.huffman import HuffmanCodebook

    return HuffmanCodebook.load(args.codebook)


def _beats_summary(beats):
    """``"12 symbols in 4 beats, error"``: what a frame's output beats hold."""
    if not beats:
        return "no beats"
    symbols = sum(beat["count"] for beat in beats)
    end = ("error" if beats[-1]["error"] else "end") if beats[-1]["last"] else "no end"
    return f"{symbols} symbols in {len(beats)} beats, {end}"


#: Idle and stall probabilities of a fuzz run unless told otherwise: random idle cycles
#: and backpressure are part of what is fuzzed.
FUZZ_IDLE = FUZZ_STALL = 0.3


def _sim_fuzz(args, huffman):
    """``linkcodec sim qlc-decoder|huffman-decoder --fuzz N [FILE...]``: differential
    fuzzing against the golden word-level model (``linkcodec.sim.fuzz``)."""
    from .golden.qlc import QlcCode
    from .inputs import read_e4m3_shards
    from .sim.fuzz import run_fuzz

    if args.block not in ("qlc-decoder", "huffman-decoder"):
        raise ValueError(f"--fuzz fuzzes a decoder (qlc-decoder or huffman-decoder), not "
                         f"{args.block}")
    if args.fuzz < 1:
        raise ValueError(f"--fuzz takes a number of frames of at least 1, not {args.fuzz}")
    shards = read_e4m3_shards(args.files) if args.files else []
    arrays = [shard.symbols for shard in shards]
    codebook = _codebook(args)
    if huffman:
        if arrays or codebook is not None:
            code = _huffman_codebook(args, arrays)
        else:
            from .rtl.huffman import default_codebook
            code = default_codebook()                  # random symbols, the reset codebook
        described = {"codebook": code.id}
    elif arrays or codebook is not None:
        code = _qlc_code(arrays, args.layout, codebook)
        described = {"layout": args.layout}
    else:
        code = QlcCode.base()                          # random symbols and the base code
        described = {"layout": "base"}
    pool = np.concatenate(arrays) if arrays else None
    if pool is not None and pool.size == 0:
        raise ValueError("the FILEs hold no symbols to fuzz with")
    result = run_fuzz(args.fuzz, lanes=args.lanes, word_width=args.word_width, code=code,
                      pool=pool, seed=args.seed, block=args.block,
                      idle=FUZZ_IDLE if args.idle is None else args.idle,
                      stall=FUZZ_STALL if args.stall is None else args.stall)
    clean = result["mismatches"] == 0 and result["hangs"] == 0
    report = {
        "block": result["block"],
        "lanes": result["lanes"],
        "word_width": result["word_width"],
        **described,
        "seed": result["seed"],
        "frames": result["frames"],
        "faults_injected": result["faults_injected"],
        "mismatches": result["mismatches"],
        "hangs": result["hangs"],
        "bit_exact": clean,
        "symbols": result["symbols"],
        "cycles": result["cycles"],
        "idle": result["idle"],
        "stall": result["stall"],
        "word_faults": result["word_faults"],
        "golden_errors": result["golden_errors"],
        "unchecked": result["unchecked"],
        "kinds": result["kinds"],
        "mismatches_by_kind": result["mismatches_by_kind"],
        "hung_frames": result["hung_frames"],
        "runs": result["runs"],
        "files": [{"file": shard.file, "tensor": shard.tensor,
                   "symbols": int(shard.symbols.size)} for shard in shards],
        "examples": result["examples"],
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['block']}  lanes {report['lanes']}  word {report['word_width']} bits  "
              f"{' '.join(f'{key} {value}' for key, value in described.items())}  "
              f"seed {report['seed']}  fuzz {args.fuzz} frames  "
              f"idle {report['idle']}  stall {report['stall']}")
        kinds = ", ".join(f"{kind} {count}" for kind, count in report["kinds"].items())
        print(f"  frames {report['frames']} ({kinds}); faults injected "
              f"{report['faults_injected']}, word faults {report['word_faults']}; golden ends "
              f"{report['golden_errors']} with the error beat")
        print("  runs: " + ", ".join(f"seed {run['seed']} ({run['frames']} frames, "
                                     f"{run['cycles']} cycles)" for run in report["runs"]))
        for example in report["examples"]:
            print(f"  frame {example['frame']} ({example['kind']}, "
                  f"{len(example['words'])} words): expected "
                  f"{_beats_summary(example['expected'])}, got "
                  f"{_beats_summary(example['got'])} (--json shows the words and beats)")
        by_kind = ", ".join(f"{kind} {count}"
                            for kind, count in report["mismatches_by_kind"].items())
        print(f"  mismatches {report['mismatches']}{f' ({by_kind})' if by_kind else ''}, "
              f"hangs {report['hangs']}"
              + (f", {report['unchecked']} frames unchecked" if report["unchecked"] else "")
              + f": {'clean' if clean else 'NOT CLEAN'}")
    return 0 if clean else 1


def cmd_codebook_build(args):
    from .golden.huffman import DEFAULT_MAX_LENGTH, HuffmanCodebook
    from .inputs import read_shards

    shards = read_shards(args.sources, format=args.format)
    batches = [shard.byte_plane for shard in shards]
    max_length = DEFAULT_MAX_LENGTH if args.max_length is None else args.max_length
    if (args.scales is None) != (args.scale is None):
        raise ValueError("give --scales (one per source tensor) and --scale (the scale of "
                         "the tensors to be coded) together")
    if args.scales is not None and args.format != "e4m3":
        raise ValueError("--scales and --scale follow e4m3 scaling; bf16 has no scale")
    if args.scales is not None and len(args.scales) != len(batches):
        raise ValueError(f"{len(args.scales)} --scales for {len(batches)} source tensors; "
                         f"give one scale per tensor")
    book = HuffmanCodebook.from_batches(batches, max_length=max_length, scales=args.scales,
                                        scale=args.scale)
    book.save(args.output)
    at = "" if args.scale is None else f", at scale {args.scale:g}"
    print(f"codebook {book.id}: {len(batches)} batches{at}, "
          f"{sum(b.size for b in batches)} symbols, max length {book.max_length}, "
          f"written to {args.output}")
    return 0


def cmd_demo(args):
    from .demo import run_demo

    return run_demo(lanes=args.lanes)


def cmd_capture(args):
    from . import capture

    return capture.run(args)


def _files_after_options(parser):
    """``parser.parse_known_args`` that also takes FILEs given after an option.

    FILE is ``nargs="*"`` since ``--fuzz`` makes it optional, and Python 3.11's argparse
    gives such a positional nothing when an option comes between it and BLOCK (``sim
    qlc-decoder --lanes 4 x.npy``), leaving the FILEs over as unrecognized; this puts
    them back.
    """
    parse = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):
        namespace, extras = parse(args, namespace)
        namespace.files = [*(namespace.files or []),
                           *(arg for arg in extras if not arg.startswith("-"))]
        return namespace, [arg for arg in extras if arg.startswith("-")]

    return parse_known_args


def build_parser():
    parser = argparse.ArgumentParser(prog="linkcodec", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    sim = commands.add_parser(
        "sim", help="run a block under Verilator and count cycles per symbol",
        description="Run a codec block under Verilator on the symbols of each FILE (one "
                    "frame per file) and check it bit-exact against the golden model. A "
                    "FILE is a .npy: uint8 means e4m3 bit patterns; a float array is cast "
                    "to e4m3 with per-tensor amax scaling. A .safetensors "
                    "file gives one frame per tensor. The code's ranks come from the "
                    "PMF of all the FILEs together and are loaded through the config port. "
                    "The exponent-remap blocks carry bf16 values: a FILE is a uint16 .npy "
                    "of bf16 bit patterns or a float array rounded to bf16, and the exponent "
                    "table comes from all the FILEs together (--table).")
    sim.add_argument("block", choices=["qlc-encoder", "qlc-decoder", "huffman-encoder",
                                       "huffman-decoder", "exponent-encoder",
                                       "exponent-decoder"])
    sim.add_argument("files", nargs="*", metavar="FILE",
                     help="tensors to code (at least one; optional with --fuzz)")
    sim.add_argument("--lanes", type=int, default=None, choices=[1, 2, 4, 8, 16],
                     help="symbols (values) a beat (default: the block's fewest, 1; 4 for "
                          "the exponent-remap blocks)")
    sim.add_argument("--layout", choices=["base", "optimal"], default=None,
                     help="QLC blocks: the base layout or the optimal one for the FILEs "
                          "(default optimal)")
    sim.add_argument("--word-width", type=int, default=None,
                     help="bits per coded word (default: 8 x lanes, at least 16)")
    sim.add_argument("--idle", type=float, default=None,
                     help="chance of an idle input cycle (default 0: measure throughput; "
                          f"{FUZZ_IDLE} with --fuzz)")
    sim.add_argument("--stall", type=float, default=None,
                     help="chance of output backpressure in a cycle (default 0; "
                          f"{FUZZ_STALL} with --fuzz)")
    sim.add_argument("--seed", type=int, default=None, help="seed for idle/stall patterns")
    sim.add_argument("--codebook", metavar="JSON",
                     help="QLC blocks: rank symbols by this codebook's code lengths instead "
                          "of the files' PMF; Huffman blocks: code with this codebook instead "
                          "of the one built from the FILEs (a codebook from `linkcodec "
                          "codebook build`)")
    sim.add_argument("--table", choices=["sigma", "histogram"], default=None,
                     help="exponent-remap blocks: the 7 exponents from the sigma of all the "
                          "FILEs' values (default) or from their exponent histogram")
    sim.add_argument("--fuzz", type=int, default=None, metavar="N",
                     help="decoders only: differential fuzzing against the golden model "
                          "on N frames (random words; coded frames with flipped bits, cut "
                          "short or with bad bits counts) under idle and backpressure; "
                          "reports frames, faults_injected, mismatches and hangs. With "
                          "FILEs the frames are mutations of their symbols, coded with "
                          "their code; without, random symbols and the base code (the "
                          "default codebook for huffman-decoder)")
    sim.add_argument("--json", action="store_true", help="print JSON")
    sim.set_defaults(func=cmd_sim)
    sim.parse_known_args = _files_after_options(sim)

    from . import analyze as analyze_module
    analyze = commands.add_parser(
        "analyze", help="how compressible tensors are under each codec",
        description=analyze_module.__doc__.split("\n\n", 1)[1])
    analyze_module.add_arguments(analyze)
    analyze.set_defaults(func=analyze_module.run)

    codebook = commands.add_parser("codebook", help="single-stage Huffman codebooks")
    codebook_commands = codebook.add_subparsers(dest="codebook_command", required=True)
    build = codebook_commands.add_parser(
        "build", help="build a codebook from the average PMF of earlier batches",
        description="Build a length-limited canonical Huffman codebook from the average "
                    "PMF of the given tensors (each tensor one batch) and write it as JSON. "
                    "For bf16 tensors the codebook codes the exponent bytes.")
    build.add_argument("--from", dest="sources", nargs="+", required=True, metavar="FILE")
    build.add_argument("-o", "--output", required=True, metavar="JSON")
    build.add_argument("--format", choices=["e4m3", "bf16"], default="e4m3")
    build.add_argument("--max-length", type=int, default=None,
                       help="longest code in bits (default: the hardware table's limit)")
    build.add_argument("--scales", type=float, nargs="+", metavar="S",
                       help="e4m3 only: the scale each source tensor was cast with "
                            "(448 / its amax), one per tensor; with --scale")
    build.add_argument("--scale", type=float, metavar="S",
                       help="the scale of the tensors the codebook will code: the average "
                            "PMF is taken of the values and cast at this scale "
                            "(docs/huffman.md, 'Scale changes')")
    build.set_defaults(func=cmd_codebook_build)

    demo = commands.add_parser("demo", help="compress the bundled real tensors and simulate")
    demo.add_argument("--lanes", type=int, default=4, choices=[1, 2, 4, 8])
    demo.set_defaults(func=cmd_demo)

    from . import generate as generate_module
    generate = commands.add_parser(
        "generate", help="write a block's Verilog (and its lint waivers) for your flow",
        description=generate_module.__doc__.split("\n\n", 1)[1])
    generate_module.add_arguments(generate)
    generate.set_defaults(func=generate_module.run)

    from . import report as report_module
    report = commands.add_parser(
        "report", help="symbols per second and area: synthesis for ECP5 and gates",
        description=report_module.__doc__.split("\n\n", 1)[1])
    report_module.add_arguments(report)
    report.set_defaults(func=report_module.run)

    bench = commands.add_parser("bench", help="measure the figures quoted in the docs")
    from . import bench as bench_module
    bench_module.add_arguments(bench)
    bench.set_defaults(func=bench_module.run)

    capture = commands.add_parser(
        "capture", help="regenerate the bundled tensor sample (needs linkcodec[capture])")
    from . import capture as capture_module
    capture_module.add_arguments(capture)
    capture.set_defaults(func=cmd_capture)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except (ValueError, RuntimeError, OSError) as error:
        print(f"linkcodec {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
