"""The ``linkcodec`` command line.

- ``linkcodec sim BLOCK [--lanes N] [--layout base|optimal] [--codebook JSON]
  [--table sigma|histogram] [--json] FILE...`` runs a block under Verilator and counts
  cycles per symbol (values, for the bf16 exponent-remap blocks) and the bits it coded;
  ``linkcodec sim qlc-decoder|huffman-decoder --fuzz N [FILE...]`` fuzzes a decoder
  against the golden model. BLOCK is any block of the registry
  (:mod:`linkcodec.rtl.blocks`), and its table options are those its description
  declares;
- ``linkcodec analyze [--format e4m3|bf16] [--json] [--plot PNG] FILE... [--scales S...]``
  reports how compressible tensors are under each codec;
- ``linkcodec codebook build --from FILE... -o book.json [--scales S... --scale S]
  [--value-bits 16 [--coded-bits K] [--sigma S | --sigma-of FILE]]``
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


def _sim_block(args):
    """The description of ``sim``'s block, with the table options of ``sim`` that it does
    not declare (:attr:`~linkcodec.rtl.blocks.description.BlockDescription.sim_options`) refused, and
    ``--lanes`` defaulting to its fewest lanes."""
    from .rtl.blocks import get_block

    block = get_block(args.block)
    for name in _sim_option_names():
        if getattr(args, name, None) is not None and name not in block.sim_options:
            own = ", ".join(f"--{option}" for option in block.sim_options) or "none"
            raise ValueError(f"--{name} is not an option of {block.name}; it takes {own}")
    block = block.variant({name: getattr(args, name, None) for name in block.sim_options})
    if args.lanes is None:
        args.lanes = min(block.lanes)      # 1, or 4 for exponent blocks
    return block


def _sim_option_names():
    """The table options of every registered block, in registry order."""
    from .rtl.blocks import BLOCKS

    return list(dict.fromkeys(name for block in BLOCKS.values() for name in block.sim_options))


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


def _read_frames(block, paths):
    """The FILEs as the block's frames: bf16 for a block of 16-bit values, else e4m3."""
    from .inputs import read_e4m3_shards

    if not paths:
        return []
    if block.value_bits == 16:
        return _read_bf16_shards(paths)
    return read_e4m3_shards(paths)


def _sim_tables(block, args, arrays):
    return block.sim_tables(arrays, {name: getattr(args, name, None)
                                     for name in block.sim_options})


def cmd_sim(args):
    if args.block == "link":
        return _sim_link(args)
    for name in LINK_OPTIONS:
        if getattr(args, name, None) is not None:
            raise ValueError(f"--{name.replace('_', '-')} is an option of `linkcodec sim "
                             f"link`, not of {args.block}")
    block = _sim_block(args)
    if args.fuzz is not None:
        return _sim_fuzz(args, block)
    if not args.files:
        raise ValueError("give at least one FILE (FILEs are optional only with --fuzz)")
    from .sim.harness import run_frames

    shards = _read_frames(block, args.files)
    arrays = [shard.symbols for shard in shards]
    code, described = _sim_tables(block, args, arrays)
    result = run_frames(block, arrays, lanes=args.lanes, tables=code,
                        word_width=args.word_width, idle=args.idle or 0.0,
                        stall=args.stall or 0.0, seed=args.seed)
    report = {
        "block": result["block"],
        "lanes": result["lanes"],
        "symbols": result["symbols"],
        "cycles": result["cycles"],
        "symbols_per_cycle": round(result["symbols_per_cycle"], 4),
        "payload_bits": result["payload_bits"],
        "compressibility": result["compressibility"],
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
        unit = "values" if block.value_bits == 16 else "symbols"
        table = " ".join(f"{key} {value}" for key, value in described.items()
                         if key != "exponents")
        print(f"{report['block']}  lanes {report['lanes']}  word {report['word_width']} bits  "
              f"{table}  seed {report['seed']}")
        for frame in report["files"]:
            print(f"  {frame['file']}: {frame['symbols']} {unit} in {frame['cycles']} cycles"
                  f" = {frame['symbols_per_cycle']:.3f} {unit}/cycle, "
                  f"{frame['payload_bits']} coded bits "
                  f"({100 * frame['compressibility']:.1f}% saved)")
        print(f"  total: {report['symbols']} {unit} in {report['cycles']} cycles = "
              f"{report['symbols_per_cycle']:.3f} {unit}/cycle, {report['payload_bits']} "
              f"coded bits ({100 * report['compressibility']:.1f}% saved), "
              f"bit-exact: {'yes' if report['bit_exact'] else 'NO'}")
    return 0 if report["bit_exact"] else 1


#: Options of ``linkcodec sim link`` alone.
LINK_OPTIONS = ("codec", "streams", "flit_bytes", "link_bytes", "fixed_tables",
                "inject_faults", "no_retry", "retry_depth", "ack_latency", "stream_numbers")


def _sim_link(args):
    """``linkcodec sim link``: LinkTx driving LinkRx under Verilator (``sim/link.py``),
    the FILEs' frames dealt to the streams, tables from the FILEs as ``linkcodec sim``
    builds them for the codec's blocks."""
    from .rtl.link import DEFAULT_ACK_LATENCY, DEFAULT_RETRY_DEPTH, link_tables
    from .rtl.link_codec import link_hardware_codecs
    from .rtl.blocks import get_block
    from .sim.link import run_link

    codec = args.codec or "qlc"
    if codec not in link_hardware_codecs():
        raise ValueError(f"the link hardware carries {' and '.join(link_hardware_codecs())} "
                         f"so far, "
                         f"not {codec} (the flit format and `linkcodec link` take it)")
    if args.fuzz is not None:
        raise ValueError("--fuzz fuzzes a decoder block, not the link")
    if not args.files:
        raise ValueError("give at least one FILE")
    lanes = 1 if args.lanes is None else args.lanes
    block = get_block(f"{codec}-encoder")
    for name in _sim_option_names():
        if getattr(args, name, None) is not None and name not in block.sim_options:
            own = ", ".join(f"--{option}" for option in block.sim_options) or "none"
            raise ValueError(f"--{name} is not an option of the {codec} link; it takes {own}")
    shards = _read_frames(block, args.files)
    arrays = [shard.symbols for shard in shards]
    code, described = _sim_tables(block, args, arrays)
    faults = _fault_count(args)
    numbers = args.stream_numbers      # None: numbered unless the link has retry
    result = run_link(arrays, codec=codec, streams=args.streams or 1, lanes=lanes,
                      flit_bytes=args.flit_bytes or 256, link_bytes=args.link_bytes or 64,
                      tables=link_tables(codec, code), tables_in_band=not args.fixed_tables,
                      idle="random" if args.idle is None else args.idle,
                      stall="random" if args.stall is None else args.stall, seed=args.seed,
                      faults=faults, retry=not args.no_retry,
                      retry_depth=args.retry_depth or (DEFAULT_RETRY_DEPTH if faults else 0),
                      ack_latency=args.ack_latency or DEFAULT_ACK_LATENCY,
                      stream_numbers=numbers)
    report = {"block": "link", **result,
              "compressibility": round(1 - result["link_bytes"] / result["raw_bytes"], 6)
              if result["raw_bytes"] else 0.0,
              **described,
              "files": [{"file": shard.file, "tensor": shard.tensor,
                         "symbols": int(shard.symbols.size)} for shard in shards]}
    exact = report["bit_exact"] and report.get("tx_bit_exact", True)
    retried = "rx_model_exact" in report
    if retried:
        exact = (exact and report["rx_model_exact"] and not report["hangs"]
                 and not report["frames_lost"] and not report["frames_duplicated"]
                 and not report["symbols_wrong"])
    elif "faults_injected" in report:
        exact = (exact and report["rx_bit_exact"] and not report["hangs"]
                 and report.get("only_hit_lost", True) and not report["symbols_wrong"])
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        table = " ".join(f"{key} {value}" for key, value in described.items())
        print(f"link {codec}  streams {report['streams']}  lanes {report['lanes']}  "
              f"flit {report['flit_bytes']} bytes  link word {report['link_word_bytes']} "
              f"bytes  {table}"
              + (f"  retry {report['retry_depth']} flits" if report.get("retry_depth") else "")
              + ("  stream numbers" if report.get("stream_numbers") else "")
              + f"  seed {report['seed']}")
        print(f"  {report['symbols']} symbols ({len(shards)} frames) in {report['cycles']} "
              f"cycles = {report['symbols_per_cycle']:.3f} symbols/cycle under random idle "
              f"and backpressure")
        print(f"  flits {report['flits']} (raw {report['raw_flits']}, table "
              f"{report['table_flits']}): {report['link_bytes']} link bytes for "
              f"{report['raw_bytes']} raw = {report['link_bytes_per_symbol']:.4f} bytes a "
              f"symbol ({100 * report['compressibility']:.1f}% saved; the codec alone "
              f"{report['coded_bytes']} bytes)")
        print(f"  latency {report['latency_cycles']} cycles (the longest a symbol took, no "
              f"stalls); bit-exact: {'yes' if exact else 'NO'} (LinkTx's flits "
              f"{'match' if report.get('tx_bit_exact') else 'DIFFER from'} the golden model's)")
        if "faults_injected" in report:
            print(_fault_line(report, retried))
    return 0 if exact else 1


def _fault_line(report, retried):
    """The line ``linkcodec sim link`` prints of a run with faults."""
    kinds = ", ".join(f"{kind} {counts['detected']}/{counts['injected']}"
                      for kind, counts in report["faults"].items())
    found = (f"{report['faults_injected']} injected, {report['faults_detected']} detected "
             f"({kinds}); ")
    cost = (f"frames lost {report['frames_lost']}, duplicated "
            f"{report['frames_duplicated']}, symbols wrong {report['symbols_wrong']}, hangs "
            f"{report['hangs']}; ")
    if retried:
        return (f"  faults (go-back-N retry, {report['retry_depth']} flits kept, ack latency "
                f"{report['ack_latency']}, return channel {report['ack_delay']} cycles): "
                f"{found}{report['retries']} retries, {report['flits_sent']} flits sent; "
                f"{cost}LinkRx took what a go-back-N receiver takes: "
                f"{'yes' if report['rx_model_exact'] else 'NO'}")
    if not report["stream_numbers"]:
        return (f"  faults (no retry, no stream numbers: lost and repeated flits go "
                f"unseen): {found}{cost}LinkRx as the model of a receiver without retry: "
                f"{'yes' if report['rx_bit_exact'] else 'NO'}")
    found += (f"lost at a stream's end, told by no later flit: {report['lost_at_end']}; ")
    return (f"  faults (no retry, stream numbers): {found}{cost}symbols lost "
            f"{report['symbols_lost']} (in the hit flits {report['symbols_hit']}), each run "
            f"of them an error beat where it was: "
            f"{'yes' if report['only_hit_lost'] else 'NO'}; LinkRx as the model of a "
            f"receiver without retry: {'yes' if report['rx_bit_exact'] else 'NO'}")


def _fault_count(args):
    """``--inject-faults N`` (0 without), checked, with the retry options (without faults,
    ``--retry-depth`` runs the pair with retry and nothing to send again)."""
    if args.inject_faults is None:
        if args.no_retry is not None:
            raise ValueError("--no-retry goes with --inject-faults N")
        if args.stream_numbers and args.retry_depth:
            raise ValueError("--stream-numbers is for a link without retry: with "
                             "--retry-depth every flit is numbered in link order")
        if args.ack_latency is not None and args.retry_depth is None:
            raise ValueError("--ack-latency goes with --retry-depth FLITS or "
                             "--inject-faults N")
        return 0
    if args.inject_faults < 1:
        raise ValueError(f"--inject-faults takes a number of faults, 1 or more, not "
                         f"{args.inject_faults}")
    if args.no_retry:
        for name in ("retry_depth", "ack_latency"):
            if getattr(args, name) is not None:
                raise ValueError(f"--{name.replace('_', '-')} is an option of the link "
                                 f"with retry, not with --no-retry")
    elif args.stream_numbers:
        raise ValueError("--stream-numbers with --inject-faults goes with --no-retry (a "
                         "link with retry numbers its flits in link order)")
    return args.inject_faults


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


def _sim_fuzz(args, block):
    """``linkcodec sim DECODER --fuzz N [FILE...]``: differential fuzzing against the
    golden word-level model (``linkcodec.sim.fuzz``), for the blocks that say they can be
    fuzzed."""
    from .rtl.blocks import BLOCKS
    from .sim.fuzz import run_fuzz

    if not block.fuzzable:
        fuzzable = " or ".join(name for name, other in BLOCKS.items() if other.fuzzable)
        raise ValueError(f"--fuzz fuzzes a decoder ({fuzzable}), not {args.block}")
    if args.fuzz < 1:
        raise ValueError(f"--fuzz takes a number of frames of at least 1, not {args.fuzz}")
    shards = _read_frames(block, args.files)
    arrays = [shard.symbols for shard in shards]
    # Without FILEs or a table option: random symbols and the block's reset tables.
    code, described = _sim_tables(block, args, arrays)
    pool = np.concatenate(arrays) if arrays else None
    if pool is not None and pool.size == 0:
        raise ValueError("the FILEs hold no symbols to fuzz with")
    result = run_fuzz(args.fuzz, lanes=args.lanes, word_width=args.word_width, code=code,
                      pool=pool, seed=args.seed, block=block,
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

    if args.format is None:
        args.format = "bf16" if args.value_bits == 16 else "e4m3"
    if args.value_bits == 16 and args.format != "bf16":
        raise ValueError("--value-bits 16 codes bf16 values: --format e4m3 is for 8-bit "
                         "values")
    if args.value_bits == 8 and args.coded_bits not in (None, 8):
        raise ValueError(f"--coded-bits {args.coded_bits} splits 16-bit values: give "
                         f"--value-bits 16 (e4m3 symbols are coded whole, 8 bits)")
    shards = read_shards(args.sources, format=args.format)
    if args.value_bits == 16:
        batches = [shard.symbols for shard in shards]
    else:
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
    if args.sigma is not None and args.sigma_of is not None:
        raise ValueError("give --sigma or --sigma-of, not both")
    if (args.sigma, args.sigma_of) != (None, None) and args.value_bits != 16:
        raise ValueError("--sigma and --sigma-of follow the sigma of bf16 values: give "
                         "--value-bits 16 (e4m3 codebooks follow the scale: --scales and "
                         "--scale)")
    sigma = args.sigma
    if args.sigma_of is not None:
        from .golden.formats import bf16_sigma

        sigma = bf16_sigma(np.concatenate([shard.symbols for shard in read_shards(
            [args.sigma_of], format="bf16")]))
    book = HuffmanCodebook.from_batches(batches, max_length=max_length, scales=args.scales,
                                        scale=args.scale, sigma=sigma,
                                        value_bits=args.value_bits, coded_bits=args.coded_bits)
    book.save(args.output)
    at = "" if args.scale is None else f", at scale {args.scale:g}"
    if sigma is not None:
        shifts = ", ".join(f"{shift:+d}" for shift in book.source["shifts"])
        at = f", at sigma {sigma:.6g} (powers of two {shifts})"
    split = ""
    if not book.is_e4m3:
        split = (f", top {book.coded_bits} of {book.value_bits} bits coded, "
                 f"{book.tail_bits} raw, {int((book.lengths == 0).sum())} of "
                 f"{book.lengths.size} by the {book.escape_length}-bit escape")
    what = "symbols" if args.value_bits == 8 else "values"
    print(f"codebook {book.id}: {len(batches)} batches{at}, "
          f"{sum(b.size for b in batches)} {what}, max length {book.max_length}{split}, "
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
    from .rtl.link_codec import link_hardware_codecs
    from .rtl.blocks import BLOCKS

    sim.add_argument("block", choices=[*BLOCKS, "link"],
                     help="a block of the registry, or `link`: LinkTx driving LinkRx")
    sim.add_argument("files", nargs="*", metavar="FILE",
                     help="tensors to code (at least one; optional with --fuzz)")
    sim.add_argument("--lanes", type=int, default=None,
                     choices=sorted({lanes for block in BLOCKS.values() for lanes in block.lanes}),
                     help="symbols (values) a beat (default: the block's fewest)")
    sim.add_argument("--word-width", type=int, default=None,
                     help="bits per coded word (default: the block's own for its lanes)")
    sim.add_argument("--idle", type=float, default=None,
                     help="chance of an idle input cycle (default 0: measure throughput; "
                          f"{FUZZ_IDLE} with --fuzz)")
    sim.add_argument("--stall", type=float, default=None,
                     help="chance of output backpressure in a cycle (default 0; "
                          f"{FUZZ_STALL} with --fuzz)")
    sim.add_argument("--seed", type=int, default=None, help="seed for idle/stall patterns")
    # Each block's own table options; one that a block does not declare is refused.
    for name in _sim_option_names():
        takers = [block for block in BLOCKS.values() if name in block.sim_options]
        helps = dict.fromkeys(block.sim_options[name].get("help", "") for block in takers)
        text = "; ".join(
            ", ".join(block.name for block in takers
                      if block.sim_options[name].get("help", "") == help) + ": " + help
            for help in helps)
        options = {key: value for key, value in takers[0].sim_options[name].items()
                   if key != "help"}
        sim.add_argument(f"--{name}", dest=name, default=None, help=text, **options)
    sim.add_argument("--fuzz", type=int, default=None, metavar="N",
                     help="decoders that can be fuzzed only: differential fuzzing against the golden model "
                          "on N frames (random words; coded frames with flipped bits, cut "
                          "short or with bad bits counts) under idle and backpressure; "
                          "reports frames, faults_injected, mismatches and hangs. With "
                          "FILEs the frames are mutations of their symbols, coded with "
                          "their code; without, random symbols and the base code (the "
                          "default codebook for huffman-decoder)")
    sim.add_argument("--codec", default=None, choices=list(link_hardware_codecs()),
                     help="link only: the codec of every stream (default qlc)")
    sim.add_argument("--streams", type=int, default=None,
                     help="link only: streams side by side, 1 to 16 (default 1)")
    sim.add_argument("--flit-bytes", type=int, default=None,
                     help="link only: bytes a flit, 64, 128 or 256 (default 256)")
    sim.add_argument("--link-bytes", type=int, default=None,
                     help="link only: bytes the link carries a cycle (default 64)")
    sim.add_argument("--fixed-tables", action="store_true", default=None,
                     help="link only: tables fixed at elaboration in both blocks, none "
                          "in band (see `linkcodec generate --fixed-tables`)")
    sim.add_argument("--inject-faults", type=int, default=None, metavar="N",
                     help="link only: N faults on the channel (bit flips, bursts, lost, "
                          "duplicated and garbage flits, stalls of the return channel, "
                          "in turn; seeded by --seed) on a link with go-back-N retry")
    sim.add_argument("--no-retry", action="store_true", default=None,
                     help="link only, with --inject-faults: no retry, flits numbered on "
                          "their streams (unless --no-stream-numbers): LinkRx alone on "
                          "the spoilt flits; a flit that fails its CRC or repeats one is "
                          "dropped, and the lost symbols are reported with error beats "
                          "where they were")
    sim.add_argument("--stream-numbers", action=argparse.BooleanOptionalAction,
                     default=None,
                     help="link only, without retry: number each flit on its stream, and "
                          "send status flits from idle streams (the default without "
                          "retry); --no-stream-numbers: the link unnumbered, where a lost "
                          "or repeated flit goes unseen")
    sim.add_argument("--retry-depth", type=int, default=None, metavar="FLITS",
                     help="link only: go-back-N retry with this many flits kept by LinkTx, "
                          "a power of two to 128 (default: 16 with --inject-faults, else "
                          "no retry; without faults nothing is sent again: the pair's "
                          "figures with retry)")
    sim.add_argument("--ack-latency", type=int, default=None, metavar="CYCLES",
                     help="link only, with retry: cycles LinkTx waits for an ack before it "
                          "sends again (default 128)")
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
                    "For bf16 tensors (--format bf16) the codebook codes the exponent "
                    "bytes; with --value-bits 16 it codes each bf16 value's top "
                    "--coded-bits bits and sends the rest raw (docs/huffman.md, 'bf16 "
                    "values').")
    build.add_argument("--from", dest="sources", nargs="+", required=True, metavar="FILE")
    build.add_argument("-o", "--output", required=True, metavar="JSON")
    build.add_argument("--format", choices=["e4m3", "bf16"], default=None,
                       help="how to read the FILEs (default: e4m3, bf16 with --value-bits "
                            "16)")
    build.add_argument("--max-length", type=int, default=None,
                       help="longest code in bits (default: the hardware table's limit)")
    build.add_argument("--value-bits", type=int, choices=[8, 16], default=8,
                       help="8: e4m3 symbols (default); 16: bf16 values, the top "
                            "--coded-bits coded, the rest raw, and an escape for values "
                            "the FILEs never showed")
    build.add_argument("--coded-bits", type=int, choices=list(range(8, 13)), default=None,
                       metavar="K", help="with --value-bits 16: how many top bits of a "
                                         "value the code covers (8..12, default 11)")
    build.add_argument("--scales", type=float, nargs="+", metavar="S",
                       help="e4m3 only: the scale each source tensor was cast with "
                            "(448 / its amax), one per tensor; with --scale")
    build.add_argument("--scale", type=float, metavar="S",
                       help="the scale of the tensors the codebook will code: the average "
                            "PMF is taken of the values and cast at this scale "
                            "(docs/huffman.md, 'Scale changes')")
    build.add_argument("--sigma", type=float, metavar="S",
                       help="with --value-bits 16: the sigma of the values the codebook "
                            "will code; each source tensor is first multiplied by the power "
                            "of two that brings its sigma nearest S (docs/huffman.md, "
                            "'bf16 values')")
    build.add_argument("--sigma-of", metavar="FILE",
                       help="with --value-bits 16: as --sigma, the sigma of the finite "
                            "values of this bf16 tensor (the one to be coded)")
    build.set_defaults(func=cmd_codebook_build)

    demo = commands.add_parser("demo", help="compress the bundled real tensors and simulate")
    demo.add_argument("--lanes", type=int, default=4, choices=[1, 2, 4, 8])
    demo.set_defaults(func=cmd_demo)

    from . import linkmodel
    link = commands.add_parser(
        "link", help="what a link gains: bandwidth, latency and the side that limits",
        description=linkmodel.__doc__.split("\n\n", 1)[0])
    linkmodel.add_arguments(link)
    link.set_defaults(func=linkmodel.run)

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
