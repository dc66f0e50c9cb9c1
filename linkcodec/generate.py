"""``linkcodec generate``: a block's Verilog, for FPGA and ASIC flows.

``linkcodec generate BLOCK [--lanes N] [--word-width W] [--axi-stream] -o DIR`` writes
``DIR/<module>.v`` and ``DIR/<module>.vlt`` and prints both paths. The module's name is
stable and says what it is: ``linkcodec_qlc_decoder_l4`` for the 4-lane QLC decoder,
``_w<W>`` added where the word width is not the default, ``_axis`` with
``--axi-stream``. Without ``--lanes`` the block gets its fewest lanes (1; 4 for the
exponent blocks), as ``linkcodec sim`` does. The block holds its default tables from
elaboration (QLC: the base code); every table loads at run time through the config port,
and a reset keeps what was loaded.

Plain blocks have one clock, ``clk``, and a synchronous, active-high reset, ``rst``; every
stream port is ``<port>__valid``, ``<port>__ready`` and ``<port>__payload`` (layouts in
``docs/qlc.md``). ``--axi-stream`` wraps the block in
:class:`~linkcodec.rtl.axi.AxiStreamWrapper`: ``aclk``, ``aresetn``, ``s_axis_*``,
``m_axis_*`` and a ``cfg_*`` write port with its ``cfg_ready`` (``docs/axi.md`` maps every
block, port by port; :func:`axi_port_tables` writes its tables).

The ``.vlt`` file holds the Verilator lint waivers, each beside its reason, for that one
file: ``verilator --lint-only -Wall DIR/<module>.vlt DIR/<module>.v`` is clean.
"""

import argparse
from pathlib import Path

__all__ = ["WAIVERS", "waiver_file", "write_verilog", "generate", "generate_link",
           "add_link_arguments",
           "link_options", "axi_wrapper", "axi_port_tables", "add_arguments", "run"]

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
     "A register carries its initial value as a declaration initialiser (the FPGA power-up "
     "value); stream registers are also reset synchronously by rst (aresetn), table "
     "registers are not (reset never touches a table); both are intended."),
]


def waiver_file(module):
    """The Verilator config (`.vlt`) that waives :data:`WAIVERS` for ``module``."""
    lines = ["`verilator_config", f"// Lint waivers for {module}.v, written by linkcodec "
             "generate.", ""]
    for rule, reason in WAIVERS:
        lines.append(f"// {reason}")
        lines.append(f'lint_off -rule {rule} -file "*/{module}.v"')
        lines.append("")
    return "\n".join(lines)


def generate(block, *, lanes=None, word_width=None, axi_stream=False, output):
    """Write ``block``'s Verilog and lint waivers into ``output``; return both paths.

    ``lanes`` defaults to the block's fewest."""
    from .rtl.axi import AxiStreamWrapper
    from .rtl.blocks import get_block

    description = get_block(block) if isinstance(block, str) else block
    lanes = min(description.lanes) if lanes is None else lanes
    description.check_lanes(lanes)
    component = description.build(lanes=lanes, word_width=word_width)
    module = description.module_name(lanes=lanes, word_width=word_width)
    if axi_stream:
        component = AxiStreamWrapper(component, config_ports=description.config_ports)
        module += "_axis"
    return write_verilog(component, module, output)


def write_verilog(component, module, output):
    """Write ``component`` as ``output/<module>.v`` with its lint waivers beside it,
    ``output/<module>.vlt``; return both paths."""
    from .rtl.verilog import verilog_text

    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    verilog = output / f"{module}.v"
    verilog.write_text(verilog_text(component, name=module))
    waivers = output / f"{module}.vlt"
    waivers.write_text(waiver_file(module))
    return [verilog, waivers]


def add_arguments(parser):
    from .link_hardware import LINK_BLOCKS
    from .rtl.blocks import BLOCKS

    parser.add_argument("block", choices=[*BLOCKS, *LINK_BLOCKS])
    parser.add_argument("--lanes", type=int, default=None,
                        help="lanes (default: the block's fewest, 1 or 4 for the exponent "
                             "blocks)")
    parser.add_argument("--word-width", type=int, default=None,
                        help="bits per coded word (default: the block's, 8 x lanes, at "
                             "least 16, for QLC)")
    parser.add_argument("--axi-stream", action="store_true",
                        help="AXI4-Stream port names (aclk, aresetn, s_axis_*, m_axis_*, "
                             "cfg_*; see docs/axi.md)")
    add_link_arguments(parser)
    parser.add_argument("-o", "--output", required=True, metavar="DIR")


def add_link_arguments(parser):
    """The options of the link's blocks (``link-tx``, ``link-rx``)."""
    from .rtl.link_codec import link_hardware_codecs

    parser.add_argument("--codec", default=None, choices=list(link_hardware_codecs()),
                        help="link-tx and link-rx only: the codec (default qlc)")
    parser.add_argument("--streams", type=int, default=None,
                        help="link-tx and link-rx only: streams, 1 to 16 (default 1)")
    parser.add_argument("--flit-bytes", type=int, default=None,
                        help="link-tx and link-rx only: 64, 128 or 256 (default 256)")
    parser.add_argument("--link-bytes", type=int, default=None,
                        help="link-tx and link-rx only: bytes the link carries a cycle "
                             "(default 64)")
    parser.add_argument("--fixed-tables", action="store_true", default=None,
                        help="link-tx and link-rx only: tables fixed at elaboration, no "
                             "tables in band (no i_table/o_table; table flits dropped): "
                             "smaller and faster where the code never changes")
    parser.add_argument("--retry-depth", type=int, default=None, metavar="FLITS",
                        help="link-tx and link-rx only: go-back-N retry with this many "
                             "flits kept, a power of two to 128 (default 0: no retry; "
                             "LinkTx gets i_ack, LinkRx o_ack; with --axi-stream, "
                             "s_axis_ack_* and m_axis_ack_*)")
    parser.add_argument("--ack-latency", type=int, default=None, metavar="CYCLES",
                        help="link-tx only, with --retry-depth: cycles without an ack "
                             "before LinkTx sends again (default 128)")
    parser.add_argument("--stream-numbers", action=argparse.BooleanOptionalAction,
                        default=None,
                        help="link-tx and link-rx only, without retry: each flit numbered "
                             "on its stream, so LinkRx tells lost and repeated flits and "
                             "reports their symbols missing with error beats, and a "
                             "stream's idle LinkTx sends status flits that tell its last "
                             "flits lost (default: on without --retry-depth; "
                             "--no-stream-numbers: off, losses unseen)")


def link_options(args):
    """``args``' link options as keyword arguments of the link's blocks; for another
    block, a ``ValueError`` if any is given."""
    from .link_hardware import LINK_BLOCKS

    given = {"codec": args.codec, "streams": args.streams, "flit_bytes": args.flit_bytes,
             "link_bytes": args.link_bytes, "fixed_tables": args.fixed_tables,
             "retry_depth": args.retry_depth, "ack_latency": args.ack_latency,
             "stream_numbers": args.stream_numbers}
    blocks = getattr(args, "blocks", None) or [args.block]
    if not any(block in LINK_BLOCKS for block in blocks):
        for name, value in given.items():
            if value is not None:
                raise ValueError(f"--{name.replace('_', '-')} is an option of link-tx and "
                                 f"link-rx only")
    if args.ack_latency is not None and not args.retry_depth:
        raise ValueError("--ack-latency goes with --retry-depth FLITS")
    defaults = {"codec": "qlc", "streams": 1, "flit_bytes": 256, "link_bytes": 64,
                "fixed_tables": False, "retry_depth": 0,
                "ack_latency": None, "stream_numbers": None}
    options = {name: defaults[name] if value is None else value
               for name, value in given.items()}
    options["tables_in_band"] = not options.pop("fixed_tables")
    return options


def run(args):
    from .link_hardware import LINK_BLOCKS

    options = link_options(args)
    if args.block in LINK_BLOCKS:
        if args.word_width is not None:
            raise ValueError("--word-width is not an option of the link's blocks "
                             "(--link-bytes sets the link word)")
        paths = generate_link(args.block, lanes=args.lanes or 1, axi_stream=args.axi_stream,
                              output=args.output, **options)
    else:
        paths = generate(args.block, lanes=args.lanes, word_width=args.word_width,
                         axi_stream=args.axi_stream, output=args.output)
    for path in paths:
        print(path)
    return 0


def axi_wrapper(block, *, lanes, word_width=None):
    """The :class:`~linkcodec.rtl.axi.AxiStreamWrapper` of ``block`` (a name or a
    description) as ``generate --axi-stream`` builds it, for its signature only: it and
    its block are marked used, so leaving them unelaborated raises no warning."""
    from .rtl.axi import AxiStreamWrapper
    from .rtl.blocks import get_block

    description = get_block(block) if isinstance(block, str) else block
    component = description.build(lanes=description.check_lanes(lanes), word_width=word_width)
    wrapper = AxiStreamWrapper(component, config_ports=description.config_ports)
    for elaboratable in (component, wrapper):
        elaboratable._MustUse__silence = True        # Amaranth's unused-elaboratable check
    return wrapper


def _carries(wrapper, name):
    """What the AXI port ``name`` of ``wrapper`` carries, in a few words."""
    from amaranth.hdl import Shape

    fixed = {"aclk": "clock: every signal is sampled on its rising edge",
             "aresetn": "reset, active low, synchronous",
             "cfg_we": "a config write is offered (hold it until `cfg_ready`)",
             "cfg_addr": "table address of the write", "cfg_data": "value written",
             "cfg_ready": "the write offered is made this cycle (`cfg_we & cfg_ready`)"}
    if name in fixed:
        return fixed[name]
    for _, prefix, layout, output in wrapper.streams:
        if not name.startswith(prefix) or name[len(prefix):].count("_"):
            continue
        signal = name[len(prefix):]
        fields = dict(layout)
        symbols = "symbols" in fields
        if symbols:
            lane_bits = Shape.cast(fields["symbols"].shape.elem_shape).width
        texts = {
            "tvalid": "valid", "tready": "ready",
            "tlast": "last transfer of a frame",
            "tdata": (f"{lane_bits}-bit symbols, lane 0 in `tdata[{lane_bits - 1}:0]`"
                      if symbols else "the word's bytes in stream order, byte 0 in "
                      "`tdata[7:0]`"),
        }
        if symbols and output:
            texts["tkeep"] = "the bytes of lanes 0 .. count-1; lane 0's always"
            user = [field for field, _ in layout
                    if field not in ("symbols", "count", "last")] + ["placeholder"]
            texts["tuser"] = ", ".join(f"bit {bit}: {field}" for bit, field in enumerate(user))
        elif symbols:
            texts["tkeep"] = "count: lanes 0 .. count-1 kept (first byte of each read)"
        elif output:
            texts["tkeep"] = "the bytes that hold the word's `tuser` bits; byte 0 always"
            texts["tuser"] = "bits: how many of the word's bits belong to the frame"
        else:
            texts["tkeep"] = "ignored (`tuser` says which bits count)"
            texts["tuser"] = "bits: how many of the word's bits belong to the frame"
        return texts[signal]
    raise ValueError(f"no AXI port {name!r}")


def axi_port_tables():
    """The AXI port table of every block of the registry, in Markdown, as ``docs/axi.md``
    holds it: each port's direction, its width at every lane count the block takes, and
    what it carries."""
    from amaranth.hdl import Shape
    from amaranth.lib.wiring import Out

    from .rtl.blocks import BLOCKS

    sections = []
    for name, description in BLOCKS.items():
        lanes = list(description.lanes)
        wrappers = [axi_wrapper(description, lanes=count) for count in lanes]
        module = description.module_name(lanes=lanes[0])
        head, tail = module.rsplit(f"_l{lanes[0]}", 1)
        lines = [f"### {name}", "",
                 f"Module `{head}_l<lanes>{tail}_axis`; lanes {', '.join(map(str, lanes))}.",
                 "",
                 f"| port | direction | width at lanes {', '.join(map(str, lanes))} "
                 f"| carries |", "|---|---|---|---|"]
        for port, member in wrappers[0].signature.members.items():
            widths = [Shape.cast(wrapper.signature.members[port].shape).width
                      for wrapper in wrappers]
            shown = str(widths[0]) if len(set(widths)) == 1 else ", ".join(map(str, widths))
            direction = "output" if member.flow == Out else "input"
            lines.append(f"| `{port}` | {direction} | {shown} | "
                         f"{_carries(wrappers[0], port)} |")
        sections.append("\n".join(lines))
    return "\n\n".join(sections) + "\n"


def generate_link(kind, *, codec="qlc", streams=1, lanes=1, flit_bytes=256, link_bytes=64,
                  tables_in_band=True, retry_depth=0, ack_latency=None,
                  stream_numbers=None, status_cycles=None, axi_stream=False, output):
    """Write ``kind``'s Verilog and lint waivers into ``output``; return both paths
    (``status_cycles``: LinkTx's, None for the default)."""
    from .link_hardware import link_component, link_module_name
    from .rtl.axi import AxiStreamWrapper

    retry = {"retry_depth": retry_depth, "ack_latency": ack_latency,
             "stream_numbers": stream_numbers, "status_cycles": status_cycles}
    component = link_component(kind, codec=codec, streams=streams, lanes=lanes,
                               flit_bytes=flit_bytes, link_bytes=link_bytes,
                               tables_in_band=tables_in_band, **retry)
    module = link_module_name(kind, codec=codec, streams=streams, lanes=lanes,
                              flit_bytes=flit_bytes, link_bytes=link_bytes,
                              tables_in_band=tables_in_band, **retry)
    if axi_stream:
        # The link's blocks have no config port: tables come in band (LinkTx's i_table
        # stream) or are fixed at elaboration. With retry the return channel (o_ack,
        # i_ack), a value every cycle, becomes a value port: m_axis_ack_*, s_axis_ack_*.
        component = AxiStreamWrapper(component)
        module += "_axis"
    return write_verilog(component, module, output)
