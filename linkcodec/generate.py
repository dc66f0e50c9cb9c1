"""``linkcodec generate``: a block's Verilog, for FPGA and ASIC flows.

``linkcodec generate BLOCK [--lanes N] [--word-width W] [--axi-stream] -o DIR`` writes
``DIR/<module>.v`` and ``DIR/<module>.vlt`` and prints both paths. The module's name is
stable and says what it is: ``linkcodec_qlc_decoder_l4`` for the 4-lane QLC decoder,
``_w<W>`` added where the word width is not the default, ``_axis`` with
``--axi-stream``. The block holds its default reset-time tables (QLC: the base code);
every table loads at run time through the config port.

Plain blocks have one clock, ``clk``, and a synchronous, active-high reset, ``rst``; every
stream port is ``<port>__valid``, ``<port>__ready`` and ``<port>__payload`` (layouts in
``docs/qlc.md``). ``--axi-stream`` wraps the block in
:class:`~linkcodec.rtl.axi.AxiStreamWrapper`: ``aclk``, ``aresetn``, ``s_axis_*``,
``m_axis_*`` and a ``cfg_*`` write port.

The ``.vlt`` file holds the Verilator lint waivers, each beside its reason, for that one
file: ``verilator --lint-only -Wall DIR/<module>.vlt DIR/<module>.v`` is clean.
"""

from pathlib import Path

__all__ = ["WAIVERS", "generate", "add_arguments", "run"]

#: (rule, reason): what Amaranth's Verilog back end emits by design, waived for the
#: generated file only. Everything else a lint finds is fixed in the RTL.
WAIVERS = [
    ("UNUSEDSIGNAL",
     "Amaranth emits every named signal and every field of a struct or array payload as a "
     "wire, for waveforms, even where the logic reads the value through another net; "
     "those wires have no load by design."),
    ("WIDTHEXPAND",
     "Amaranth leaves operands at their own widths and relies on Verilog's context-width "
     "extension, which is exactly Amaranth's arithmetic; simulation against the golden "
     "model checks the result."),
    ("WIDTHTRUNC",
     "Likewise for truncation: an assignment keeps the low bits, as Amaranth specifies."),
    ("DECLFILENAME",
     "Amaranth writes the block's submodules into the same file, named <module>.<sub>, so "
     "only the top module matches the file name."),
    ("PROCASSINIT",
     "A register carries its reset value as a declaration initialiser (the FPGA power-up "
     "value) and is also reset synchronously by rst (aresetn); both are intended."),
]


def _waiver_file(module):
    lines = ["`verilator_config", f"// Lint waivers for {module}.v, written by linkcodec "
             "generate.", ""]
    for rule, reason in WAIVERS:
        lines.append(f"// {reason}")
        lines.append(f'lint_off -rule {rule} -file "*/{module}.v"')
        lines.append("")
    return "\n".join(lines)


def generate(block, *, lanes, word_width=None, axi_stream=False, output):
    """Write ``block``'s Verilog and lint waivers into ``output``; return both paths."""
    from .rtl.axi import AxiStreamWrapper
    from .sim.blocks import get_block
    from .sim.runner import verilog_text

    description = get_block(block) if isinstance(block, str) else block
    description.check_lanes(lanes)
    component = description.build(lanes=lanes, word_width=word_width)
    module = description.module_name(lanes=lanes, word_width=word_width)
    if axi_stream:
        component = AxiStreamWrapper(component, config_ports=description.config_ports)
        module += "_axis"
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    verilog = output / f"{module}.v"
    verilog.write_text(verilog_text(component, name=module))
    waivers = output / f"{module}.vlt"
    waivers.write_text(_waiver_file(module))
    return [verilog, waivers]


def add_arguments(parser):
    from .sim.blocks import BLOCKS

    parser.add_argument("block", choices=list(BLOCKS))
    parser.add_argument("--lanes", type=int, default=1)
    parser.add_argument("--word-width", type=int, default=None,
                        help="bits per coded word (default: the block's, 8 x lanes, at "
                             "least 16, for QLC)")
    parser.add_argument("--axi-stream", action="store_true",
                        help="AXI4-Stream port names (aclk, aresetn, s_axis_*, m_axis_*, "
                             "cfg_*)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR")


def run(args):
    for path in generate(args.block, lanes=args.lanes, word_width=args.word_width,
                         axi_stream=args.axi_stream, output=args.output):
        print(path)
    return 0
