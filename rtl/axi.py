"""AXI4-Stream names around any block: what ``linkcodec generate --axi-stream`` emits.

:class:`AxiStreamWrapper` takes a block built with the payload layouts of
:mod:`linkcodec.rtl.payload` and gives it the port names an AXI4-Stream system expects.
Nothing is registered: the wrapper adds wires and a few gates, no latency.

Clock and reset: ``aclk``, and ``aresetn``, active low and synchronous (the block's
``rst`` is ``~aresetn``).

Stream ports: the block's input ``i`` becomes ``s_axis_*``, an input ``i_<name>``
``s_axis_<name>_*``; the output ``o`` becomes ``m_axis_*``, an output ``o_<name>``
``m_axis_<name>_*``. Each has ``tvalid``, ``tready``, ``tdata``, ``tkeep``, ``tlast`` and,
where the payload has fields AXI has none for, ``tuser``:

- a **symbol beat** (``symbols``, ``count``, ``last``, maybe ``error``): ``tdata`` holds
  the symbols, lane 0 in the low bits, so stream order is byte order; ``tkeep`` has one
  bit a byte, set for the bytes of lanes ``0 .. count-1``. On an input, ``count`` is the
  number of lanes whose first byte is kept: keep a contiguous run from lane 0 (a
  continuous aligned stream). ``tuser`` is ``error`` on a decoder's output.
- a **word** (``data``, ``bits``, ``last``): ``tdata`` holds the word's bytes in stream
  order, byte 0 (the first 8 bits of the frame, MSB first, as ``docs/bitstream.md``
  says) in ``tdata[7:0]``; ``tuser`` is ``bits``, the count of the word's bits that
  belong to the frame. On an output ``tkeep`` marks the bytes that hold those bits; on
  an input it is ignored (``tuser`` says it exactly).

Config port: ``i_config`` becomes a simple write port, ``cfg_we``, ``cfg_addr`` and
``cfg_data``: every cycle with ``cfg_we`` high writes ``cfg_data`` at ``cfg_addr``. The
blocks' config ports are always ready, so no write is ever refused.
"""

from amaranth.hdl import Cat, ClockDomain, DomainRenamer, Module, Mux, Shape
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["AxiStreamWrapper", "axi_port_prefix"]

#: Payload fields AXI4-Stream has a signal for; the rest go to ``tuser``.
_MAPPED = ("symbols", "data", "count", "last")


def axi_port_prefix(name, *, output):
    """``s_axis_`` / ``m_axis_`` for ``i`` / ``o``; ``s_axis_<x>_`` for ``i_<x>``."""
    stem = "m_axis" if output else "s_axis"
    suffix = name[2:] if "_" in name else ""
    return f"{stem}_{suffix}_" if suffix else f"{stem}_"


def _user_fields(layout):
    return [name for name, _ in layout if name not in _MAPPED]


def _data_width(layout):
    return layout["symbols"].shape.size if "symbols" in dict(layout) else layout["data"].width


class AxiStreamWrapper(wiring.Component):
    """``block`` with AXI4-Stream port names (see the module's docstring).

    ``config_ports`` names the block's config ports (at most one) that become the
    ``cfg_*`` write port.
    """

    def __init__(self, block, *, config_ports=()):
        if len(config_ports) > 1:
            raise ValueError("the AXI wrapper maps at most one config port")
        self._block = block
        self._config = tuple(config_ports)
        self._streams = []            # (name, prefix, layout, is_output)
        members = {"aclk": In(1), "aresetn": In(1)}
        for name, member in block.signature.members.items():
            if member.is_port or not isinstance(member.signature, stream.Signature):
                continue
            layout = member.signature.members["payload"].shape
            output = member.flow == Out
            if name in self._config:
                members.update({"cfg_we": In(1), "cfg_addr": In(layout["addr"].width),
                                "cfg_data": In(layout["data"].width)})
                continue
            prefix = axi_port_prefix(name, output=output)
            width = _data_width(layout)
            direction = Out if output else In
            back = In if output else Out
            members.update({
                f"{prefix}tvalid": direction(1), f"{prefix}tready": back(1),
                f"{prefix}tdata": direction(width), f"{prefix}tkeep": direction(width // 8),
                f"{prefix}tlast": direction(1)})
            user = sum(layout[field].width for field in _user_fields(layout))
            if user:
                members[f"{prefix}tuser"] = direction(user)
            self._streams.append((name, prefix, layout, output))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        # The block's `sync` becomes a domain of the wrapper's own, local to it, so a
        # design around the wrapper keeps its `sync`.
        m.domains.axi = axi = ClockDomain("axi", local=True)
        m.d.comb += [axi.clk.eq(self.aclk), axi.rst.eq(~self.aresetn)]
        m.submodules.block = DomainRenamer("axi")(self._block)
        block = self._block

        for name in self._config:
            port = getattr(block, name)
            m.d.comb += [port.valid.eq(self.cfg_we), port.payload.addr.eq(self.cfg_addr),
                         port.payload.data.eq(self.cfg_data)]

        for name, prefix, layout, output in self._streams:
            port = getattr(block, name)
            axi = {signal: getattr(self, prefix + signal)
                   for signal in ("tvalid", "tready", "tdata", "tkeep", "tlast", "tuser")
                   if hasattr(self, prefix + signal)}
            payload = port.payload
            fields = dict(layout)
            if output:
                m.d.comb += [axi["tvalid"].eq(port.valid), port.ready.eq(axi["tready"]),
                             axi["tlast"].eq(payload.last)]
            else:
                m.d.comb += [port.valid.eq(axi["tvalid"]), axi["tready"].eq(port.ready),
                             payload.last.eq(axi["tlast"])]
            if "tuser" in axi:
                user = Cat(*(getattr(payload, field) for field in _user_fields(layout)))
                m.d.comb += (axi["tuser"].eq(user) if output else user.eq(axi["tuser"]))
            if "symbols" in fields:
                self._symbols(m, payload, layout, axi, output)
            else:
                self._word(m, payload, layout, axi, output)
        return m

    @staticmethod
    def _symbols(m, payload, layout, axi, output):
        lanes = layout["symbols"].shape.length
        lane_bytes = Shape.cast(layout["symbols"].shape.elem_shape).width // 8
        if output:
            m.d.comb += axi["tdata"].eq(payload.symbols.as_value())
            m.d.comb += axi["tkeep"].eq(Cat(*(
                Mux(lane < payload.count, (1 << lane_bytes) - 1, 0)[:lane_bytes]
                for lane in range(lanes))))
        else:
            m.d.comb += payload.symbols.eq(axi["tdata"])
            m.d.comb += payload.count.eq(sum(axi["tkeep"][lane * lane_bytes]
                                             for lane in range(lanes)))

    @staticmethod
    def _word(m, payload, layout, axi, output):
        width = layout["data"].width
        count = width // 8
        # Byte k of the frame is bits [W-8k-8, W-8k) of `data` and tdata[8k+7:8k].
        swapped = Cat(*(payload.data[width - 8 * (k + 1):width - 8 * k]
                        for k in range(count)))
        if output:
            m.d.comb += axi["tdata"].eq(swapped)
            m.d.comb += axi["tkeep"].eq(Cat(*((payload.bits > 8 * k) for k in range(count))))
        else:
            m.d.comb += swapped.eq(axi["tdata"])
