"""The ``linkcodec`` command line.

- ``linkcodec sim BLOCK [--lanes N] [--layout base|optimal] [--json] FILE...`` runs a
  block under Verilator and counts cycles per symbol;
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


def cmd_sim(args):
    from .inputs import read_e4m3_shards
    from .sim.harness import run_frames

    shards = read_e4m3_shards(args.files)
    arrays = [shard.symbols for shard in shards]
    codebook = None
    if args.codebook:
        from .golden.huffman import HuffmanCodebook

        codebook = HuffmanCodebook.load(args.codebook)
    code = _qlc_code(arrays, args.layout, codebook)
    result = run_frames(args.block, arrays, lanes=args.lanes, tables=code,
                        word_width=args.word_width, idle=args.idle, stall=args.stall,
                        seed=args.seed)
    report = {
        "block": result["block"],
        "lanes": result["lanes"],
        "symbols": result["symbols"],
        "cycles": result["cycles"],
        "symbols_per_cycle": round(result["symbols_per_cycle"], 4),
        "bit_exact": result["bit_exact"],
        "word_width": result["word_width"],
        "layout": args.layout,
        "seed": result["seed"],
        "files": [
            dict(frame, file=shard.file, tensor=shard.tensor)
            for frame, shard in zip(result["frames"], shards)
        ],
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['block']}  lanes {report['lanes']}  word {report['word_width']} bits  "
              f"layout {args.layout}  seed {report['seed']}")
        for frame in report["files"]:
            print(f"  {frame['file']}: {frame['symbols']} symbols in {frame['cycles']} cycles"
                  f" = {frame['symbols_per_cycle']:.3f} symbols/cycle")
        print(f"  total: {report['symbols']} symbols in {report['cycles']} cycles = "
              f"{report['symbols_per_cycle']:.3f} symbols/cycle, "
              f"bit-exact: {'yes' if report['bit_exact'] else 'NO'}")
    return 0 if report["bit_exact"] else 1


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
                    "PMF of all the FILEs together and are loaded through the config port.")
    sim.add_argument("block", choices=["qlc-encoder", "qlc-decoder"])
    sim.add_argument("files", nargs="+", metavar="FILE")
    sim.add_argument("--lanes", type=int, default=1, choices=[1, 2, 4, 8, 16])
    sim.add_argument("--layout", choices=["base", "optimal"], default="optimal")
    sim.add_argument("--word-width", type=int, default=None,
                     help="bits per coded word (default: 8 x lanes, at least 16)")
    sim.add_argument("--idle", type=float, default=0.0,
                     help="chance of an idle input cycle (default 0: measure throughput)")
    sim.add_argument("--stall", type=float, default=0.0,
                     help="chance of output backpressure in a cycle (default 0)")
    sim.add_argument("--seed", type=int, default=None, help="seed for idle/stall patterns")
    sim.add_argument("--codebook", metavar="JSON",
                     help="rank symbols by this codebook's code lengths instead of the "
                          "files' PMF (a codebook from `linkcodec codebook build`)")
    sim.add_argument("--json", action="store_true", help="print JSON")
    sim.set_defaults(func=cmd_sim)

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
