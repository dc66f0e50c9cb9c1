"""AXI4-Stream names around any block: what ``linkcodec generate --axi-stream`` emits.

``docs/axi.md`` holds the mapping of every block in one place, port by port, and what a
client must do with error and placeholder beats.

:class:`AxiStreamWrapper` takes a block built with the payload layouts of
:mod:`linkcodec.rtl.payload` and gives it the port names an AXI4-Stream system expects.
Stream ports are not registered: the wrapper adds wires and a few gates, no latency; a
value port (below) adds one register, which holds its value, and no latency.

Clock and reset: ``aclk``, and ``aresetn``, active low and synchronous (the block's
``rst`` is ``~aresetn``).

Stream ports: the block's input ``i`` becomes ``s_axis_*``, an input ``i_<name>``
``s_axis_<name>_*``; the output ``o`` becomes ``m_axis_*``, an output ``o_<name>``
``m_axis_<name>_*``. Each has ``tvalid``, ``tready``, ``tdata``, ``tkeep``, ``tlast`` and,
where the payload has fields AXI has none for, ``tuser``. **Every output transfer keeps
at least one byte** (``tkeep`` is never all low), so no output is a null transfer, which
AXI4-Stream infrastructure may drop:

- a **symbol beat** (``symbols``, ``count``, ``last``, maybe ``error``): ``tdata`` holds
  the symbols, lane 0 in the low bits, so stream order is byte order; ``tkeep`` has one
  bit a byte, set for the bytes of lanes ``0 .. count-1``.

  On an output, ``tuser`` is the payload's own fields (``error`` on a decoder's output,
  bit 0) and then one more bit, *placeholder*, set when ``count = 0``: the beat carries
  no symbol (an empty frame's ``last`` beat, or a decoder's error beat after a full
  beat), and it keeps the bytes of lane 0, which hold 0, only so that the transfer is
  not null. A client drops the kept bytes of a beat with *placeholder* set and reads its
  ``tlast`` and ``error`` as usual.

  On an input, ``count`` is the number of lanes whose first byte is kept: keep a
  contiguous run from lane 0 (a continuous aligned stream). An empty frame is one
  transfer with ``tkeep`` all low and ``tlast`` set: a null transfer, which whatever
  sits in front of the block must pass on.
- a **word** (``data``, ``bits``, ``last``): ``tdata`` holds the word's bytes in stream
  order, byte 0 (the first 8 bits of the frame, MSB first, as ``docs/bitstream.md``
  says) in ``tdata[7:0]``; ``tuser`` is ``bits``, the count of the word's bits that
  belong to the frame. On an output ``tkeep`` marks the bytes that hold those bits, and
  byte 0 always (a word of 0 bits, an empty frame's only word, keeps byte 0 and its
  ``tuser`` says that none of its bits count); on an input ``tkeep`` is ignored
  (``tuser`` says it exactly).

Value ports: a plain port of the block (not a stream: a value every cycle, such as the
link's return channel, ``LinkRx``'s ``o_ack`` to ``LinkTx``'s ``i_ack``) becomes an
AXI4-Stream port under the same names, ``m_axis_<name>_*`` for ``o_<name>``,
``s_axis_<name>_*`` for ``i_<name>``, with ``tvalid``, ``tready``, ``tdata``, ``tkeep`` and
``tlast``. ``tdata`` is the value (its layout's first field in the low bits) with 0 above
it up to a whole byte. Each transfer is the value of that cycle, a frame of its own: a
later value replaces an earlier one, so a value may be taken late or skipped, never
needed twice.

- An output: ``tvalid`` is a register, low in reset and high from the cycle after it;
  ``tdata`` is the block's value of the cycle, except that a value offered while
  ``tready`` was low is held until it is taken (the AXI rule) and the newest follows.
  ``tkeep`` is all high and ``tlast`` always high. A register of the value's width and
  a flag hold it; with ``tready`` high there is no latency.
- An input: ``tready`` is always high; the block sees ``tdata`` on a cycle with
  ``tvalid`` high and, on other cycles, the last value taken (a register; reset makes it
  0, the reset value of the link's return channel). ``tkeep``, ``tlast`` and ``tdata``'s
  bits above the value are ignored.

Config port: ``i_config`` becomes a write port with a ready, ``cfg_we``, ``cfg_addr``,
``cfg_data`` and ``cfg_ready``: a write happens on a cycle with ``cfg_we`` and
``cfg_ready`` both high (``cfg_data`` goes to ``cfg_addr``). A write that meets
``cfg_ready`` low waits: hold ``cfg_we``, ``cfg_addr`` and ``cfg_data`` until it is
high. ``cfg_ready`` is the block's ``i_config.ready``: every block lowers it while a bank
switch is pending (see :mod:`linkcodec.rtl.qlc`, :mod:`linkcodec.rtl.huffman` and
:mod:`linkcodec.rtl.exponent`).
"""

from amaranth.hdl import (Cat, ClockDomain, Const, DomainRenamer, Module, Mux, Shape, Signal,
                          Value)
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


def _is_symbols(layout):
    return "symbols" in dict(layout)


def _data_width(layout):
    return layout["symbols"].shape.size if _is_symbols(layout) else layout["data"].width


def _user_width(layout, output):
    """Bits of ``tuser``: the payload's own fields, and the placeholder flag on a symbol
    output."""
    width = sum(layout[field].width for field in _user_fields(layout))
    return width + (1 if output and _is_symbols(layout) else 0)


class AxiStreamWrapper(wiring.Component):
    """``block`` with AXI4-Stream port names (see the module's docstring and
    ``docs/axi.md``).

    ``config_ports`` names the block's config ports (at most one) that become the
    ``cfg_*`` write port. Every other port is a stream port or, if it is a plain port (a
    value every cycle), a value port.
    """

    def __init__(self, block, *, config_ports=()):
        if len(config_ports) > 1:
            raise ValueError("the AXI wrapper maps at most one config port")
        self._block = block
        self._config = tuple(config_ports)
        self._streams = []            # (name, prefix, layout, is_output)
        self._values = []             # (name, prefix, shape, is_output)
        members = {"aclk": In(1), "aresetn": In(1)}
        for name, member in block.signature.members.items():
            output = member.flow == Out
            if member.is_port:
                prefix = axi_port_prefix(name, output=output)
                width = -(-Shape.cast(member.shape).width // 8) * 8
                direction, back = (Out, In) if output else (In, Out)
                members.update({
                    f"{prefix}tvalid": direction(1), f"{prefix}tready": back(1),
                    f"{prefix}tdata": direction(width),
                    f"{prefix}tkeep": direction(width // 8), f"{prefix}tlast": direction(1)})
                self._values.append((name, prefix, member.shape, output))
                continue
            if not isinstance(member.signature, stream.Signature):
                continue
            layout = member.signature.members["payload"].shape
            if name in self._config:
                members.update({"cfg_we": In(1), "cfg_addr": In(layout["addr"].width),
                                "cfg_data": In(layout["data"].width), "cfg_ready": Out(1)})
                continue
            prefix = axi_port_prefix(name, output=output)
            width = _data_width(layout)
            direction = Out if output else In
            back = In if output else Out
            members.update({
                f"{prefix}tvalid": direction(1), f"{prefix}tready": back(1),
                f"{prefix}tdata": direction(width), f"{prefix}tkeep": direction(width // 8),
                f"{prefix}tlast": direction(1)})
            user = _user_width(layout, output)
            if user:
                members[f"{prefix}tuser"] = direction(user)
            self._streams.append((name, prefix, layout, output))
        super().__init__(members)

    @property
    def streams(self):
        """``(block_port, prefix, layout, is_output)`` of every stream port mapped, in the
        block's signature order (the config port is not among them)."""
        return list(self._streams)

    @property
    def values(self):
        """``(block_port, prefix, shape, is_output)`` of every value port (a plain port of
        the block, a value every cycle) mapped, in the block's signature order."""
        return list(self._values)

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
            m.d.comb += [port.valid.eq(self.cfg_we), self.cfg_ready.eq(port.ready),
                         port.payload.addr.eq(self.cfg_addr),
                         port.payload.data.eq(self.cfg_data)]

        for name, prefix, layout, output in self._streams:
            port = getattr(block, name)
            axi = {signal: getattr(self, prefix + signal)
                   for signal in ("tvalid", "tready", "tdata", "tkeep", "tlast", "tuser")
                   if hasattr(self, prefix + signal)}
            payload = port.payload
            if output:
                m.d.comb += [axi["tvalid"].eq(port.valid), port.ready.eq(axi["tready"]),
                             axi["tlast"].eq(payload.last)]
            else:
                m.d.comb += [port.valid.eq(axi["tvalid"]), axi["tready"].eq(port.ready),
                             payload.last.eq(axi["tlast"])]
            if _is_symbols(layout):
                self._symbols(m, payload, layout, axi, output)
            else:
                self._word(m, payload, layout, axi, output)

        for name, prefix, _, output in self._values:
            axi = {signal: getattr(self, prefix + signal)
                   for signal in ("tvalid", "tready", "tdata", "tkeep", "tlast")}
            self._value(m, Value.cast(getattr(block, name)), axi, output,
                        name=prefix.removeprefix("m_axis_").removeprefix("s_axis_"))
        return m

    @staticmethod
    def _value(m, value, axi, output, *, name):
        """A value every cycle as an AXI4-Stream port: see the module's docstring."""
        if output:
            # The value offered while tready was low is held until taken, as AXI asks;
            # otherwise the value of the cycle goes out, with no latency.
            started = Signal(name=f"{name}started")
            holding = Signal(name=f"{name}holding")
            held = Signal(len(axi["tdata"]), name=f"{name}held")
            m.d.axi += [started.eq(1), holding.eq(axi["tvalid"] & ~axi["tready"]),
                        held.eq(axi["tdata"])]
            m.d.comb += [axi["tvalid"].eq(started),
                         axi["tdata"].eq(Mux(holding, held, value)),
                         axi["tkeep"].eq(Const(-1, len(axi["tkeep"]))), axi["tlast"].eq(1)]
        else:
            # The block sees a value every cycle: the one taken, else the last one.
            last = Signal(len(value), name=f"{name}last")
            m.d.axi += last.eq(value)
            m.d.comb += [axi["tready"].eq(1),
                         value.eq(Mux(axi["tvalid"], axi["tdata"][:len(value)], last))]

    @staticmethod
    def _user(payload, layout):
        return [getattr(payload, field) for field in _user_fields(layout)]

    @classmethod
    def _symbols(cls, m, payload, layout, axi, output):
        lanes = layout["symbols"].shape.length
        lane_bytes = Shape.cast(layout["symbols"].shape.elem_shape).width // 8
        if output:
            placeholder = payload.count == 0
            m.d.comb += axi["tdata"].eq(payload.symbols.as_value())
            # Lane 0 is always kept: with count = 0 it is the placeholder.
            m.d.comb += axi["tkeep"].eq(Cat(*(
                (payload.count > lane).replicate(lane_bytes) if lane
                else Const((1 << lane_bytes) - 1, lane_bytes)
                for lane in range(lanes))))
            m.d.comb += axi["tuser"].eq(Cat(*cls._user(payload, layout), placeholder))
        else:
            m.d.comb += payload.symbols.eq(axi["tdata"])
            m.d.comb += payload.count.eq(sum(axi["tkeep"][lane * lane_bytes]
                                             for lane in range(lanes)))
            if "tuser" in axi:
                m.d.comb += Cat(*cls._user(payload, layout)).eq(axi["tuser"])

    @classmethod
    def _word(cls, m, payload, layout, axi, output):
        width = layout["data"].width
        count = width // 8
        # Byte k of the frame is bits [W-8k-8, W-8k) of `data` and tdata[8k+7:8k].
        swapped = Cat(*(payload.data[width - 8 * (k + 1):width - 8 * k]
                        for k in range(count)))
        user = Cat(*cls._user(payload, layout))
        if output:
            m.d.comb += axi["tdata"].eq(swapped)
            # Byte 0 is always kept, so a word of 0 bits is not a null transfer.
            if "bits" in dict(layout):
                m.d.comb += axi["tkeep"].eq(Cat(1, *((payload.bits > 8 * k)
                                                      for k in range(1, count))))
            else:                             # a word with no bits field is all kept
                m.d.comb += axi["tkeep"].eq((1 << count) - 1)
            m.d.comb += axi["tuser"].eq(user)
        else:
            m.d.comb += swapped.eq(axi["tdata"])
            m.d.comb += user.eq(axi["tuser"])
