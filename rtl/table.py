"""Tables that load at run time through a block's config port.

Every codec block keeps its tables (QLC rank tables and areas, Huffman codebooks,
exponent tables) in one of two shapes, both written by config writes
(:func:`~linkcodec.rtl.payload.config_write_layout`: ``addr``, ``data``):

- :class:`ConfigTable`: a :class:`~amaranth.lib.memory.Memory` of ``depth`` entries with
  one read port per lane (registered, or asynchronous with ``registered=False``), for a
  lookup a lane does each cycle;
- :class:`ConfigRegisters`: ``depth`` registers whose every entry is visible at once, for
  a small table that a block compares or muxes in parallel.

Each answers the writes to its own address range ``base .. base + depth - 1`` and ignores
the rest, so one config port serves several tables. A table holds its elaboration-time
contents (``init``) until the first write.

**Reset never touches a table.** Both shapes keep what was last written through the
reset (``rst``): a :class:`ConfigTable` is a memory, which has no reset, and a
:class:`ConfigRegisters` holds its entries in reset-less registers. On an FPGA both come
up at power-up with ``init``; on an ASIC a memory or a reset-less flop has no defined
power-up contents, so there every table must be written after power-up.
"""

from amaranth.hdl import Cat, Module, ResetSignal, Shape, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["config_listener", "ConfigTable", "ConfigRegisters", "BankSwitch", "bank_switch",
           "two_bank_table"]


def config_listener(config_layout):
    """A port that watches a config stream without driving its ``ready``: ``valid`` and
    ``payload`` in. A block drives every listener from its own ``i_config`` stream."""
    return wiring.Signature({"valid": In(1), "payload": In(config_layout)})


def _check_table(depth, base, init):
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive integer, not {depth!r}")
    if not isinstance(base, int) or base < 0:
        raise ValueError(f"base must be a non-negative integer, not {base!r}")
    init = list(init)
    if len(init) != depth:
        raise ValueError(f"init holds {len(init)} entries; the table has {depth}")
    return init


class _Loaded(wiring.Component):
    def __init__(self, members, *, config_layout, base, depth):
        self._base, self._depth = base, depth
        self._addr_width = Shape.cast(config_layout["addr"].shape).width
        if base + depth > 1 << self._addr_width:
            raise ValueError(f"addresses {base}..{base + depth - 1} do not fit the "
                             f"{self._addr_width}-bit config address")
        super().__init__({"config": In(config_listener(config_layout)), **members})

    @property
    def base(self):
        return self._base

    @property
    def depth(self):
        return self._depth

    def _write(self):
        """``(enable, index, data)`` of a config write that hits this table."""
        addr = self.config.payload.addr
        hit = self.config.valid & (addr < self._base + self._depth)
        if self._base:                     # (addr >= 0 would be a constant comparison)
            hit &= addr >= self._base
        index = (addr - self._base)[:max(1, (self._depth - 1).bit_length())]
        return hit, index, self.config.payload.data


class ConfigTable(_Loaded):
    """A ``depth``-entry table of ``shape``, read by ``read_ports`` lanes each cycle.

    Ports: ``config`` (:func:`config_listener`), ``read`` (an array of ``read_ports``
    ports, each ``addr`` in and ``data`` out). With ``registered=False`` a read is
    asynchronous: ``data`` follows ``addr`` in the same cycle. With ``registered=True``
    ``data`` is the entry at the ``addr`` of the previous cycle in which ``en`` was high
    (a block RAM's registered read; ``en`` low holds ``data``). A write to address
    ``base + index`` sets entry ``index`` to the low bits of ``data`` at the next clock
    edge; a read in the same cycle returns the old entry.
    """

    def __init__(self, *, shape, depth, init, read_ports, config_layout, base=0,
                 registered=False):
        init = _check_table(depth, base, init)
        if not isinstance(read_ports, int) or read_ports < 1:
            raise ValueError(f"read_ports must be a positive integer, not {read_ports!r}")
        self._shape, self._init, self._registered = shape, init, bool(registered)
        members = {"addr": In(range(depth)), "data": Out(shape)}
        if self._registered:
            members["en"] = In(1, init=1)
        read = wiring.Signature(members)
        super().__init__({"read": Out(read).array(read_ports)},
                         config_layout=config_layout, base=base, depth=depth)

    @property
    def registered(self):
        return self._registered

    def elaborate(self, platform):
        m = Module()
        m.submodules.memory = memory = Memory(shape=self._shape, depth=self._depth,
                                              init=self._init)
        write = memory.write_port()
        enable, index, value = self._write()
        m.d.comb += [write.en.eq(enable), write.addr.eq(index), write.data.eq(value)]
        for port in self.read:
            if self._registered:
                read = memory.read_port(domain="sync", transparent_for=())
                m.d.comb += read.en.eq(port.en)
            else:
                read = memory.read_port(domain="comb")
            m.d.comb += [read.addr.eq(port.addr), port.data.eq(read.data)]
        return m


class ConfigRegisters(_Loaded):
    """``depth`` registers of ``shape``, all visible at once on ``entries``.

    Ports: ``config`` (:func:`config_listener`), ``entries`` (an array of ``depth``
    values). A write to address ``base + index`` sets entry ``index`` at the next clock
    edge. The registers are reset-less: a reset keeps what was last written (``init``
    if nothing was), as a :class:`ConfigTable`'s memory does.
    """

    def __init__(self, *, shape, depth, init, config_layout, base=0):
        init = _check_table(depth, base, init)
        self._layout = data.ArrayLayout(shape, depth)
        self._init = init
        super().__init__({"entries": Out(self._layout, init=init)},
                         config_layout=config_layout, base=base, depth=depth)
        # The registers are the port itself, made anew reset-less (a port is made with a
        # reset): a reset never touches a table.
        self.entries = Signal(self._layout, init=init, reset_less=True, name="entries")

    def elaborate(self, platform):
        m = Module()
        enable, index, value = self._write()
        with m.If(enable):
            with m.Switch(index):
                for entry in range(self._depth):
                    with m.Case(entry):
                        m.d.sync += self.entries[entry].eq(value)
        return m


class BankSwitch:
    """The bank logic of a block whose tables have two banks (see :func:`bank_switch`).

    ``active`` is the bank in use, ``bank`` the bank of the work that starts this cycle,
    ``pending`` a switch asked for and not yet made, ``requested`` a switch asked for
    this cycle."""

    def __init__(self, active, bank, pending, requested):
        self.active, self.bank, self.pending, self.requested = active, bank, pending, requested

    def idle_in_use(self, in_flight, *, active=None):
        """Whether any of ``in_flight`` (``(valid, bank)`` pairs, one a pipeline stage
        that reads a table) holds work of the idle bank: then a config write, which goes
        to that bank, must wait. ``active``: the bank taken as active (default
        :attr:`active`; a registered ``ready`` asks of next cycle's, :attr:`bank`)."""
        active = self.active if active is None else active
        used = 0
        for valid, bank in in_flight:
            used = used | (valid & (bank != active))
        return used


def bank_switch(m, config, *, boundary, switch_addr):
    """The bank logic every two-bank block shares, added to ``m``; a :class:`BankSwitch`.

    ``config`` is the block's config stream (a write is ``valid & ready``; ``ready`` is
    the caller's), ``boundary`` is high when the block is between frames, and a write to
    ``switch_addr`` asks for a switch. A switch asked for takes effect at the next
    ``boundary`` (at once if the block is between frames): ``bank`` is then the new bank,
    and ``active`` becomes it at the clock edge. Config writes go to ``~active``, the
    idle bank (the caller's tables take that as their top address bit).

    ``active`` names the working table, so it is a table itself: reset-less. A reset is
    a frame boundary, so a switch pending at reset takes effect there; ``pending`` is
    stream state and resets to 0, after that switch."""
    active = Signal(reset_less=True)
    pending = Signal()
    requested = Signal()
    bank = Signal()
    m.d.comb += [requested.eq(config.valid & config.ready
                              & (config.payload.addr == switch_addr)),
                 bank.eq(active ^ (pending & boundary))]
    # (``bank`` leaves the reset out: nothing read in a reset cycle is used.)
    flip = Signal()
    m.d.comb += flip.eq(pending & (boundary | ResetSignal(allow_reset_less=True)))
    # Assigned every cycle, not under an If: the register has no reset, so its next value
    # must be defined from the first clock edge (the Verilog is continuous assignments,
    # evaluated at time 0 by a 4-state simulator: rtl/verilog.py's verilog_text).
    m.d.sync += active.eq(active ^ flip)
    with m.If(flip):
        m.d.sync += pending.eq(0)
    with m.Elif(requested):
        m.d.sync += pending.eq(1)
    return BankSwitch(active, bank, pending, requested)


def two_bank_table(m, name, config, *, shape, init, read_ports, idle_bank, hit, index,
                   data=None):
    """A :class:`ConfigTable` of two banks of ``init`` (the bank in the top address
    bit), with registered reads, added to ``m`` as ``name``; returns its read ports.

    A config write on ``config`` (``valid & ready``) that ``hit`` selects goes to entry
    ``index`` of ``idle_bank``: ``data``, default the write's data. A read's address is
    ``Cat(entry, bank)``."""
    depth = len(init)
    table = ConfigTable(shape=shape, depth=2 * depth, init=list(init) * 2,
                        read_ports=read_ports, config_layout=config.payload.shape(),
                        registered=True)
    m.submodules[name] = table
    width = (depth - 1).bit_length()
    m.d.comb += [table.config.valid.eq(config.valid & config.ready & hit),
                 table.config.payload.addr.eq(Cat(index[:width], idle_bank)),
                 table.config.payload.data.eq(config.payload.data if data is None else data)]
    return table.read
