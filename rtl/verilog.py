"""Amaranth components as Verilog text, as every simulation and ``linkcodec generate``
write them: one conversion, kept per component object and top name."""

import weakref

__all__ = ["verilog_text"]


#: Verilog already converted in this process, per component object and top name.
_VERILOG = weakref.WeakKeyDictionary()

#: What Yosys does to Amaranth's RTLIL: ``amaranth.back.verilog``'s script with a full
#: ``proc`` where it has ``proc -nomux``. That left each combinational process an
#: ``always @*`` block, woken first by an event on a ``reg ... = 0`` Yosys adds; under
#: SystemVerilog rules (Icarus with ``-g2012``, as cocotb builds it) a declaration's value
#: is set before any process starts and makes no event, so a block whose inputs never
#: change stayed X (LinkRx's valid in reset, LinkTx's bank bit). A full ``proc`` makes
#: that logic multiplexers, written as continuous assignments, which every simulator
#: evaluates at time 0; the function and the registers are the same. (A multiplexer
#: passes an X select on, where ``if`` took its else branch: a clock edge taken with
#: inputs still X now leaves X in a reset-less register, as hardware might.)
_YOSYS_SCRIPT = ("proc -norom", "memory_collect", "write_verilog -norename")


def verilog_text(component, *, name):
    """``component`` as Verilog text, its top module called ``name``: every register a
    clocked ``always`` block, all other logic continuous assignments (no ``always @*``).

    The text is kept for as long as the component object lives, so a testbench that runs
    one component several times converts it once (a 2-stream link pair takes 4 s): a
    component is not to be changed after its first conversion.
    """
    try:
        kept = _VERILOG.setdefault(component, {})
    except TypeError:                  # not weakly referable: convert every time
        kept = {}
    if name not in kept:
        kept[name] = _convert(component, name)
    return kept[name]


def _convert(component, name):
    """``component`` through Amaranth's RTLIL and :data:`_YOSYS_SCRIPT` to Verilog."""
    # Amaranth has no public call that runs Yosys on a script of one's own: this is the
    # helper its Verilog back end uses (the same Yosys, AMARANTH_USE_YOSYS honoured).
    from amaranth._toolchain.yosys import find_yosys
    from amaranth.back import rtlil

    text = rtlil.convert(component, name=name, emit_src=False)
    yosys = find_yosys(lambda version: version >= (0, 40))    # amaranth.back.verilog's
    script = "\n".join([f"read_rtlil <<rtlil\n{text}\nrtlil", *_YOSYS_SCRIPT])
    # Warnings are not squashed, as Amaranth's script must (its processes that Yosys
    # cannot write): with a full proc there are none, and a new one is worth seeing.
    return yosys.run(["-q", "-"], script)
