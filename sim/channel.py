"""A channel that spoils flits in hardware, for a link with retry under simulation.

:class:`FaultChannel` sits between ``LinkTx``'s link words and ``LinkRx``'s, and carries
``LinkRx``'s acks back to ``LinkTx`` a fixed number of cycles later. As each flit comes
in, a seeded generator (a 32-bit LFSR, seeded by a config write) decides whether it is
hit, with a chance of 1 in ``2 ** rate``, until ``count`` faults are in; the kinds of
:data:`CHANNEL_FAULTS` take turns. A hit flit gets a flipped bit (``flip``), a burst
of 2 to 16 bits whose ends are flipped (``burst``), is lost (``drop``), goes twice
(``duplicate``) or is replaced by random bytes (``garbage``); a ``stall`` leaves the flit
alone and freezes the return channel for ``stall_cycles`` cycles. Each fault is
reported on ``faults`` (:data:`fault_layout`), a stream that is always taken, for the
testbench to watch. Faults in flight when the link goes back N are injected again on the
flits sent again, as a channel would.

The channel keeps two flits (one comes in while the other goes out): a flit leaves
``flit_bytes / link_bytes`` cycles after it came. A reset empties it; its config, its
generator and the count of faults injected outlive a reset.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..rtl.link import connect_pair, pair_blocks, pair_members
from ..rtl.payload import config_write_layout, word_layout
from ..rtl.retry import ack_layout
from .harness import shared

__all__ = ["CHANNEL_FAULTS", "FaultChannel", "FaultyLink", "shared_faulty_link",
           "fault_layout", "CONFIG_SEED", "CONFIG_COUNT",
           "CONFIG_RATE", "CONFIG_KINDS"]

#: The faults the channel injects, in the order they take turns (the log's ``kind``).
CHANNEL_FAULTS = ("flip", "burst", "drop", "duplicate", "garbage", "stall")

#: A fault as the channel reports it: ``kind`` (an index of :data:`CHANNEL_FAULTS`),
#: ``flit`` (the flit's index among those that came in, modulo 2**16), and for a flip
#: or a burst, the ``row`` (link word of the flit), ``start`` (its lowest bit flipped,
#: 0 the word's lowest bit) and ``mask`` (the bits flipped from ``start`` up).
fault_layout = data.StructLayout({"kind": 3, "flit": 16, "row": 8, "start": 12,
                                  "mask": 16})

#: Config addresses: the seed (not 0), the faults to inject, the rate (a flit is hit
#: with a chance of 1 in 2**rate) and the kinds allowed (a bit each, of CHANNEL_FAULTS).
CONFIG_SEED, CONFIG_COUNT, CONFIG_RATE, CONFIG_KINDS = range(4)


def _lfsr_next(state):
    """A 32-bit Galois LFSR's next state (taps 32, 22, 2, 1)."""
    shifted = state >> 1
    return Mux(state[0], shifted ^ 0x80200003, shifted)


def _first_allowed(kinds, after):
    """The first kind allowed by the mask ``kinds`` after ``after`` (a kind's index,
    or a signal of one), in turn (``after`` itself if it is the only one)."""
    count = len(CHANNEL_FAULTS)
    choice = after
    for step in reversed(range(1, count + 1)):
        if isinstance(after, int):
            candidate = (after + step) % count
        else:
            raw = after + step
            candidate = Mux(raw >= count, (raw - count)[:len(after)], raw[:len(after)])
        choice = Mux(kinds.bit_select(candidate, 1), candidate, choice)
    return choice


class FaultChannel(wiring.Component):
    """See the module's docstring. Parameters: ``flit_bytes``, ``link_bytes``,
    ``ack_delay`` (cycles the return channel takes) and ``stall_cycles``."""

    def __init__(self, *, flit_bytes, link_bytes, ack_delay=16, stall_cycles=300):
        self.rows = flit_bytes // link_bytes
        self.row_bits = 8 * link_bytes
        self.ack_delay, self.stall_cycles = ack_delay, stall_cycles
        super().__init__({
            "i": In(stream.Signature(word_layout(self.row_bits))),
            "o": Out(stream.Signature(word_layout(self.row_bits))),
            "i_ack": In(ack_layout),
            "o_ack": Out(ack_layout),
            "i_config": In(stream.Signature(config_write_layout(addr_width=2,
                                                                data_width=32))),
            "faults": Out(stream.Signature(fault_layout)),
        })

    def elaborate(self, platform):
        m = Module()
        rows, row_bits = self.rows, self.row_bits
        row_width = max(1, (rows - 1).bit_length())

        # The config and the faults' count outlive a reset (of the link under test).
        lfsr = Signal(32, init=0xACE1ACE1, reset_less=True)
        turn = Signal(range(len(CHANNEL_FAULTS)), reset_less=True)   # the next fault's kind
        count = Signal(32, reset_less=True)
        rate = Signal(5, init=3, reset_less=True)
        kinds = Signal(len(CHANNEL_FAULTS), init=(1 << len(CHANNEL_FAULTS)) - 1,
                       reset_less=True)
        m.d.comb += self.i_config.ready.eq(1)
        m.d.sync += lfsr.eq(_lfsr_next(lfsr))
        with m.If(self.i_config.valid):
            value = self.i_config.payload.data
            with m.Switch(self.i_config.payload.addr):
                with m.Case(CONFIG_SEED):
                    m.d.sync += lfsr.eq(Mux(value == 0, 1, value))
                with m.Case(CONFIG_COUNT):
                    m.d.sync += count.eq(value)
                with m.Case(CONFIG_RATE):
                    m.d.sync += rate.eq(value)
                with m.Case(CONFIG_KINDS):
                    m.d.sync += [kinds.eq(value),
                                 turn.eq(_first_allowed(value, len(CHANNEL_FAULTS) - 1))]

        m.submodules.buffer = buffer = Memory(shape=row_bits, depth=2 * rows, init=[])
        write, read = buffer.write_port(), buffer.read_port(domain="comb")
        fill, drain = Signal(), Signal()
        copies = [Signal(2, name=f"copies{n}") for n in range(2)]   # sends left a slot
        row_in, row_out = Signal(range(rows)), Signal(range(rows))
        flits_in = Signal(16)
        injected = Signal(32, reset_less=True)

        # The fault of the flit coming in, decided at its first word.
        kind = Signal(3)                 # of the flit in hand; 7: none
        hit_row = Signal(8)
        start = Signal(12)
        mask = Signal(16)
        taken = self.i.valid & self.i.ready
        first = row_in == 0
        chance = (lfsr & ((Const(1, 33) << rate) - 1)[:32]) == 0
        hit = (injected < count) & chance
        allowed = kinds.bit_select(turn, 1)
        length = Signal(5)
        top_bit = Signal(4)
        nibble = lfsr[8:12]
        m.d.comb += [length.eq(2 + Mux(nibble == 15, 14, nibble)), top_bit.eq(length - 1)]
        burst_mask = ((lfsr[16:32] & ((Const(1, 17) << length) - 1)[:16]) | 1
                      | (Const(1, 16) << top_bit)[:16])
        spot = lfsr[12:12 + max(1, (row_bits - 1).bit_length())]
        is_burst = turn == CHANNEL_FAULTS.index("burst")
        stall_left = Signal(range(self.stall_cycles + 1))
        m.d.comb += [self.faults.payload.kind.eq(turn),
                     self.faults.payload.flit.eq(flits_in),
                     self.faults.payload.row.eq(lfsr[24:32] & (rows - 1)),
                     self.faults.payload.start.eq(Mux(is_burst & (spot > row_bits - 16),
                                                      row_bits - 16, spot)),
                     self.faults.payload.mask.eq(Mux(is_burst, burst_mask, 1))]
        with m.If(taken & first):
            m.d.sync += kind.eq(7)
            with m.If(hit):
                m.d.sync += turn.eq(_first_allowed(kinds, turn))
                with m.If(allowed):
                    m.d.comb += self.faults.valid.eq(1)
                    m.d.sync += [injected.eq(injected + 1), kind.eq(turn),
                                 hit_row.eq(self.faults.payload.row),
                                 start.eq(self.faults.payload.start),
                                 mask.eq(self.faults.payload.mask)]
                    with m.If(turn == CHANNEL_FAULTS.index("stall")):
                        m.d.sync += stall_left.eq(self.stall_cycles)
        # The kind in force for this word: the register, or at the first word the choice.
        now = Signal(3)
        now_row, now_start, now_mask = Signal(8), Signal(12), Signal(16)
        with m.If(first):
            m.d.comb += [now.eq(Mux(hit & allowed, turn, 7)),
                         now_row.eq(self.faults.payload.row),
                         now_start.eq(self.faults.payload.start),
                         now_mask.eq(self.faults.payload.mask)]
        with m.Else():
            m.d.comb += [now.eq(kind), now_row.eq(hit_row), now_start.eq(start),
                         now_mask.eq(mask)]
        flips = Signal(row_bits)
        m.d.comb += flips.eq(Mux(((now == CHANNEL_FAULTS.index("flip"))
                                  | (now == CHANNEL_FAULTS.index("burst")))
                                 & (now_row[:row_width] == row_in),
                                 Cat(now_mask, Const(0, row_bits)) << now_start, 0)[:row_bits])
        garbage = Cat(*[_lfsr_next(lfsr) ^ (0x9E3779B9 * (k + 1) & 0xFFFFFFFF)
                        for k in range(-(-row_bits // 32))])[:row_bits]
        word = Mux(now == CHANNEL_FAULTS.index("garbage"), garbage,
                   self.i.payload.data ^ flips)
        busy = Cat(*[copy != 0 for copy in copies])
        m.d.comb += [self.i.ready.eq(~busy.bit_select(fill, 1)),
                     write.addr.eq(Cat(row_in, fill) if rows > 1 else fill),
                     write.data.eq(word), write.en.eq(taken)]
        filled = Signal()
        with m.If(taken):
            m.d.sync += row_in.eq(Mux(row_in == rows - 1, 0, row_in + 1))
            with m.If(row_in == rows - 1):
                m.d.sync += flits_in.eq(flits_in + 1)
                with m.If(now != CHANNEL_FAULTS.index("drop")):
                    m.d.comb += filled.eq(1)
                    m.d.sync += fill.eq(~fill)

        last_out = row_out == rows - 1
        sent = self.o.valid & self.o.ready
        m.d.comb += [self.o.valid.eq(busy.bit_select(drain, 1)),
                     read.addr.eq(Cat(row_out, drain) if rows > 1 else drain),
                     self.o.payload.data.eq(read.data), self.o.payload.bits.eq(row_bits),
                     self.o.payload.last.eq(last_out)]
        emptied = Signal()
        with m.If(sent):
            m.d.sync += row_out.eq(Mux(last_out, 0, row_out + 1))
            with m.If(last_out):
                m.d.comb += emptied.eq(1)
        for index, copy in enumerate(copies):
            with m.If(filled & (fill == index)):
                m.d.sync += copy.eq(Mux(now == CHANNEL_FAULTS.index("duplicate"), 2, 1))
            with m.Elif(emptied & (drain == index)):
                m.d.sync += copy.eq(copy - 1)
        with m.If(emptied & (Mux(drain, copies[1], copies[0]) == 1)):
            m.d.sync += drain.eq(~drain)

        # The return channel: a delay line, frozen while a stall lasts.
        line = [Signal(ack_layout, name=f"ack{n}") for n in range(max(1, self.ack_delay))]
        m.d.sync += line[0].eq(self.i_ack)
        m.d.sync += [later.eq(earlier) for earlier, later in zip(line, line[1:])]
        out = Signal(ack_layout)
        with m.If(stall_left != 0):
            m.d.sync += stall_left.eq(stall_left - 1)
        with m.Else():
            m.d.sync += out.eq(line[-1])
        m.d.comb += self.o_ack.eq(out)
        return m


class FaultyLink(wiring.Component):
    """``LinkTx`` to a :class:`FaultChannel` to ``LinkRx``, both with retry (keyword
    parameters as theirs, ``retry_depth`` not 0, and the channel's ``ack_delay`` and
    ``stall_cycles``): ports ``i_s0`` .., ``o_s0`` .. and ``i_config`` (the channel's
    config writes, addresses as :data:`CONFIG_SEED` ..). Streams to watch: ``sent``
    (``LinkTx``'s words into the channel), ``received`` (the channel's words into
    ``LinkRx``), ``accepted`` (the words ``LinkRx``'s retry check passes on to its flit
    reader) and ``faults`` (the channel's log)."""

    def __init__(self, *, ack_delay=16, stall_cycles=300, **params):
        if not params.get("retry_depth"):
            self._MustUse__silence = True
            raise ValueError("a faulty link runs with retry: give retry_depth")
        self.tx, self.rx = pair_blocks(self, **params)
        self.channel = FaultChannel(flit_bytes=params.get("flit_bytes", 256),
                                    link_bytes=self.tx.link_bytes, ack_delay=ack_delay,
                                    stall_cycles=stall_cycles)
        super().__init__({"i_config": In(stream.Signature(
            config_write_layout(addr_width=2, data_width=32))), **pair_members(self.tx, self.rx)})

    def elaborate(self, platform):
        m = Module()
        tx, rx, channel = self.tx, self.rx, self.channel
        m.submodules.tx, m.submodules.rx, m.submodules.channel = tx, rx, channel
        wiring.connect(m, wiring.flipped(self.i_config), channel.i_config)
        watched = {}
        for name, shape in (("sent", tx.o.payload.shape()), ("received", rx.i.payload.shape()),
                            ("accepted", rx.i.payload.shape()), ("faults", fault_layout)):
            watched[name] = (Signal(name=f"{name}__valid"), Signal(name=f"{name}__ready"),
                             Signal(shape, name=f"{name}__payload"))
        for name, (source, sink) in {"sent": (tx.o, channel.i),
                                     "received": (channel.o, rx.i)}.items():
            valid, ready, payload = watched[name]
            m.d.comb += [valid.eq(source.valid), ready.eq(sink.ready),
                         payload.eq(source.payload), sink.valid.eq(valid),
                         sink.payload.eq(payload), source.ready.eq(ready)]
        # What RetryRx passes on to LinkRx's flit reader (read only: LinkRx drives it).
        valid, ready, payload = watched["accepted"]
        m.d.comb += [valid.eq(rx.retry.o.valid), ready.eq(rx.retry.o.ready),
                     payload.eq(rx.retry.o.payload)]
        valid, ready, payload = watched["faults"]
        m.d.comb += [valid.eq(channel.faults.valid), ready.eq(1),
                     payload.eq(channel.faults.payload), channel.faults.ready.eq(ready)]
        m.d.comb += [channel.i_ack.eq(rx.o_ack), tx.i_ack.eq(channel.o_ack)]
        connect_pair(m, self, tx, rx)
        return m


def shared_faulty_link(**params):
    """``FaultyLink(**params)``, or the one an earlier call with the same parameters made
    in this process (:func:`~linkcodec.sim.harness.shared`), so that its Verilog is
    converted once. For runs only: it is not to be changed."""
    return shared(FaultyLink, FaultyLink, **params)
