"""ZipCCL exponent-remap encoder and decoder for bf16 values.

The wire format is ``docs/bitstream.md``, "Exponent-remap frames"; the golden model is
:func:`linkcodec.golden.exponent.wire_encode` / ``wire_decode`` (and, for the words of
both ports, ``escape_words`` and ``wire_decode_words``). A frame travels as two streams
of :func:`~.payload.word_layout` words, each on its own port and each framed with
``last``:

- the *values* stream: per value ``code(3) | sign(1) | mantissa(7)``, a fixed 11 bits,
  so value ``i`` starts at bit ``11 i``; its words follow the usual word rules (every
  word but the last is full);
- the *escapes* stream: the 8-bit exponent of every value whose code is 0, in order. Its
  words carry any whole number of bytes: the encoder sends the escapes of each beat as
  one word at once, so no escape waits for a word to fill.

Every frame has both, even when it holds no escape (then its escapes frame is one word
with ``bits = 0, last = 1``). Because a value is always 11 bits, a beat's values sit at
fixed positions (no chain between lanes), and a beat's escapes are a prefix count of its
code-0 lanes.

**An encoder driving its decoder never stalls for good** (the same lanes and word width,
nothing between them, beats of ``lanes`` values but for each frame's last): the encoder
sends a beat's escapes word with the beat's values; the decoder's escapes stage reads
the word at the head of its queue without waiting for the one behind it, and its queue
(:func:`escape_queue_depth`) holds more words than the encoder can send before the
decoder can read a beat's values (``docs/exponent.md``, "Why a pair cannot hang").

The 7-entry exponent table (``exponents[i]`` has code ``i + 1``) is held in registers,
in two banks, set at elaboration from an
:class:`~linkcodec.golden.exponent.ExponentTable` (default :data:`DEFAULT_TABLE`) and
rewritable at run time through ``i_config`` (one write a transfer):

======================  =====================================================================
``addr``                meaning of ``data``
======================  =====================================================================
``0 .. 6``              the exponent of code ``addr + 1`` (``data[0:8]``), written into the
                        *idle* bank
:data:`SWITCH_ADDR`     any ``data``: switch banks at the next frame boundary
======================  =====================================================================

**Banks.** Writes go to the idle bank. A write to :data:`SWITCH_ADDR` asks for a switch;
it takes effect at the next frame boundary (before the first beat of the next frame that
reads the table: the encoder's input, the decoder's escapes stage), at once if the block
is between frames, so a table swap costs no idle cycle and the next tensor's table loads
while the current one flows. While a switch is pending (and, in the decoder, while a beat
of the bank that became idle is still being decoded) ``i_config.ready`` is low, so the
next table's writes cannot reach a bank in use. :func:`config_writes` makes the writes
that load a table and switch to it. Keep a table's 7 exponents distinct (the encoder
gives an exponent that appears twice its lowest code).

**Reset** (``rst``) clears stream state and never touches a table: both banks and the
active-bank select keep what was last loaded, or their elaboration-time contents (bank 0
active) if nothing was, so an encoder and its decoder reset together need no reload. A
switch still pending at reset takes effect at the reset: a reset is a frame boundary, so
both ends of a link reset together end up on the same bank.
"""

from math import gcd

from amaranth.hdl import Cat, Const, Module, Mux, ResetSignal, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..golden.exponent import TABLE_SIZE, VALUE_BITS, ExponentTable
from .bitpack import BitPacker, WordQueue, concatenation_tree, frame_order, pipeline_stage
from .block import LanedBlock
from .link_codec import LinkHardware
from .table import ConfigTable, bank_switch
from .payload import (check_lanes, check_word_width, config_write_layout, symbol_layout,
                      word_layout)

__all__ = ["ExponentLinkHardware", "LINK_LANES", "LINK_WORD_WIDTH", "LANES", "DEFAULT_TABLE", "ESCAPE_BITS", "SWITCH_ADDR", "config_layout",
           "default_word_width", "escape_queue_depth", "escape_entry_layout", "switch_write",
           "config_writes", "EscapeQueue", "ExponentRemapEncoder", "ExponentRemapDecoder"]

#: The lane counts both blocks take.
LANES = (4, 8, 16)

#: The table the blocks hold unless told otherwise: the 7 binades around 1.0 (exponents
#: 124..130, the nearest to 127 first), the ones unit-scale activations fill.
DEFAULT_TABLE = ExponentTable((127, 126, 128, 125, 129, 124, 130))

#: Bits of an escaped exponent in the escapes stream.
ESCAPE_BITS = 8

#: A write to the exponent table.
config_layout = config_write_layout(addr_width=3, data_width=8)

#: A write here asks for a bank switch at the next frame boundary.
SWITCH_ADDR = 7

_MANTISSA_BITS = 7
_SYMBOL_BITS = 16
# Entries a bank of the table memory holds: the 7 exponents and one that nothing reads
# (a bank is then a power of two, selected by an address bit).
_BANK_ENTRIES = TABLE_SIZE + 1
# The table memory's write port: the bank in the top address bit.
_bank_write_layout = config_write_layout(addr_width=4, data_width=8)
# Words the encoder's escapes queue holds: one leaves and one arrives each cycle.
_ENCODER_ESCAPE_WORDS = 2


def default_word_width(lanes):
    """The word width of both streams unless told otherwise: ``16 * lanes``, the raw
    bf16 rate, since a value takes 11 bits or more."""
    return _SYMBOL_BITS * check_lanes(lanes, LANES)


def escape_queue_depth(lanes, word_width):
    """Escapes words the decoder holds: ``floor(2 W / (11 lanes)) + 1``, 3 at the default
    width. Before the decoder can read a beat's values, the word behind the one they end
    in must be in, and the encoder sends that word once a bit after it is in: at most
    ``floor(2 W / (11 lanes))`` beats after the beat, each with at most one escapes
    word. So the queue always has room for the escapes words the encoder sends while
    the decoder waits for values, and a pair cannot stall (``docs/exponent.md``)."""
    return 2 * word_width // (VALUE_BITS * lanes) + 1


def escape_entry_layout(word_width):
    """An escapes word as :class:`EscapeQueue` holds it: ``data``, ``bytes`` (0 after a
    word fault), ``end`` (it ends its frame, normally or at a fault) and ``fault``."""
    return data.StructLayout({
        "data": word_width,
        "bytes": range(word_width // ESCAPE_BITS + 1),
        "end": 1,
        "fault": 1,
    })


def _check_table(table):
    if table is None:
        return DEFAULT_TABLE
    if not isinstance(table, ExponentTable):
        raise TypeError(f"table must be an ExponentTable, not {type(table).__name__}")
    return table


def switch_write():
    """The config write that asks for a bank switch."""
    return {"addr": SWITCH_ADDR, "data": 0}


def config_writes(table, *, switch=True):
    """The ``i_config`` writes (``dict`` of ``addr``, ``data``) that load ``table`` into
    the idle bank, then (``switch``) the switch write that makes it the working one at
    the next frame boundary."""
    table = _check_table(table)
    writes = [{"addr": index, "data": int(exponent)}
              for index, exponent in enumerate(table.exponents)]
    if switch:
        writes.append(switch_write())
    return writes


class _ExponentBlock(LanedBlock):
    def __init__(self, signature, *, lanes, word_width, tables):
        def check(lanes, word_width):
            if word_width < VALUE_BITS * lanes:
                raise ValueError(f"word_width must be at least {VALUE_BITS} * lanes = "
                                 f"{VALUE_BITS * lanes}, not {word_width}")
            if tables is not None and not isinstance(tables, ExponentTable):
                raise TypeError(f"tables must be an ExponentTable, not "
                                f"{type(tables).__name__}")
            return _check_table(tables)

        super().__init__(signature, lanes=lanes, word_width=word_width,
                         default_word_width=default_word_width, allowed_lanes=LANES,
                         check=check)

    @property
    def table(self):
        """The :class:`ExponentTable` both banks hold from elaboration (at power-up on an
        FPGA) until one is loaded through ``i_config``; a reset does not bring it back."""
        return self.tables

    def _banks(self, m, boundary):
        """The two banks of the table and the bank logic: ``(exponents, active, bank,
        pending, requested)``. ``exponents(which)`` is the 7 exponents of bank ``which``;
        ``active`` the bank in use, ``bank`` the bank of work that starts this cycle (a
        pending switch takes effect when ``boundary``), ``pending`` the switch asked for,
        ``requested`` a switch asked for this cycle.

        Config writes go to the idle bank (``i_config.ready`` is the caller's). ``active``
        is a table (it names the working bank), so it is reset-less; a reset is a frame
        boundary, so a switch pending at reset takes effect there. ``pending`` is stream
        state and resets to 0, after that switch."""
        write = Signal()
        m.d.comb += write.eq(self.i_config.valid & self.i_config.ready)
        addr = self.i_config.payload.addr
        switch = bank_switch(m, self.i_config, boundary=boundary, switch_addr=SWITCH_ADDR)
        active = switch.active
        # A memory of both banks (the bank in the top address bit), every entry read at
        # once. A memory, not registers: its write is a clocked ``if``, and its contents
        # an ``initial`` block, so even a config port left undriven in a 4-state
        # simulator (an X write enable) leaves the table as it was.
        m.submodules.table = table = ConfigTable(
            shape=8, depth=2 * _BANK_ENTRIES, init=[*self.table.exponents, 0] * 2,
            read_ports=2 * TABLE_SIZE, config_layout=_bank_write_layout)
        m.d.comb += [table.config.valid.eq(write & (addr != SWITCH_ADDR)),
                     table.config.payload.addr.eq(Cat(addr, ~active)),
                     table.config.payload.data.eq(self.i_config.payload.data)]
        banks = []
        for which in range(2):
            ports = table.read[which * TABLE_SIZE:(which + 1) * TABLE_SIZE]
            for index, port in enumerate(ports):
                m.d.comb += port.addr.eq(which * _BANK_ENTRIES + index)
            banks.append([port.data for port in ports])
        bank, pending, requested = switch.bank, switch.pending, switch.requested

        def exponents(which):
            return [Mux(which, high, low) for low, high in zip(*banks)]
        return exponents, active, bank, pending, requested


class ExponentRemapEncoder(_ExponentBlock):
    """Exponent-remap encoder: ``lanes`` bf16 values a cycle in, two word streams out.

    Parameters (keyword-only): ``lanes`` (4, 8 or 16), ``word_width`` (a multiple of 8,
    at least ``11 * lanes``; default :func:`default_word_width`, both streams), ``tables``
    (the :class:`ExponentTable` both banks hold until one is loaded; default
    :data:`DEFAULT_TABLE`).

    Ports: ``i`` (:func:`symbol_layout` beats of 16-bit bf16 bit patterns; a frame ends
    with the beat whose ``last`` is set, and may be empty: one beat with ``count = 0,
    last = 1``), ``o`` (the values stream, :func:`word_layout` words), ``o_escapes``
    (the escapes stream, one word a beat that holds an escape), ``i_config`` (table
    writes and the bank switch, see the module docstring).

    A feed-forward pipeline in front of a :class:`~.bitpack.BitPacker` (values) and a
    queue of escapes words, every register moving while the packer's ``i.ready`` and the
    queue's room (both registers) are high:

    1. each lane compares its exponent with the 7 exponents of the frame's bank at once:
       its code, its 11-bit field, and its escape byte (length 8, or 0 if the code is
       not 0); lanes past ``count`` are empty. The beat's values are ``11 * count`` bits
       at fixed places;
    2. the escape bytes are concatenated in a tree (:func:`~.bitpack.concatenation_tree`,
       ``log2(lanes)`` register levels), each level a shift by 0 or a whole number of
       bytes; the values chunk travels beside it unchanged;
    3. the packer aligns the values chunk at its word offset and queues the words it
       completes; beside it, the beat's escape bytes become one word (``bits`` 8 a byte,
       MSB first), if the beat holds an escape or ends its frame, and enter the escapes
       queue the next cycle, whatever the packer does.

    Latency (cycles from an input transfer to the first output transfer that carries
    something of it, no stalls): :attr:`latency`, ``3 + log2(lanes)``, on both ports, for
    a beat that completes a values word or ends its frame (on the escapes port, for any
    beat with an escape). Throughput ``lanes`` values a cycle on any data (a beat's
    values take ``11 * lanes`` bits, at most a word); frames, and bank switches between
    them, follow each other with no idle cycle. Under backpressure on either output its
    queue fills, then ``i.ready`` falls and the whole pipeline holds; nothing is lost,
    and ``i.ready`` never depends on ``o.ready`` or ``o_escapes.ready``. Every bit
    pattern is a valid bf16 value; a ``count`` above ``lanes`` is taken as ``lanes``.

    Reset: clears stream state (the pipeline, the packer's partial word, both queues: a
    frame in flight is lost, and the next beat starts a frame) and never touches a table:
    both banks and the active-bank select keep what was last loaded, and a pending switch
    takes effect. On an FPGA the tables come up with their elaboration-time contents; on
    an ASIC a reset-less flop has no defined power-up contents, so load every table after
    power-up there.
    """

    def __init__(self, *, lanes=4, word_width=None, tables=None):
        super().__init__(lambda lanes, width: {
            "i": In(stream.Signature(symbol_layout(lanes, width=_SYMBOL_BITS))),
            "o": Out(stream.Signature(word_layout(width))),
            "o_escapes": Out(stream.Signature(word_layout(width))),
            "i_config": In(stream.Signature(config_layout)),
        }, lanes=lanes, word_width=word_width, tables=tables)

    @property
    def latency(self):
        """Cycles from a beat that completes a word (or ends its frame) to that word."""
        # the code stage, one per tree level, and two more: the packer's two stages, or
        # the escapes word and its queue
        return 3 + self._lanes.bit_length() - 1

    def elaborate(self, platform):
        m = Module()
        lanes, width = self._lanes, self._word_width
        chunk_bits = ESCAPE_BITS * lanes

        m.submodules.values_packer = values_packer = BitPacker(
            chunk_width=VALUE_BITS * lanes, word_width=width)
        wiring.connect(m, wiring.flipped(self.o), values_packer.o)
        room = Signal(init=1)   # the escapes queue takes a word next cycle (a register)
        step = Signal()         # the packer takes a chunk, the queue a word: every stage moves
        m.d.comb += [step.eq(values_packer.i.ready & room),
                     self.i.ready.eq(step)]

        # Frame boundary: no beat of a frame taken yet since the last frame's end.
        in_frame = Signal()
        with m.If(self.i.valid & step):
            m.d.sync += in_frame.eq(~self.i.payload.last)
        bank_exponents, active, _, pending, requested = self._banks(m, ~in_frame)
        m.d.comb += self.i_config.ready.eq(~pending)
        # The exponents of the code stage's bank, ``active ^ (pending & ~in_frame)``, as
        # registers loaded the cycle before from the bank that it becomes, so that the
        # comparators read flip-flops, as with one bank (the bank select and its mux were
        # the encoder's critical path). A write in that cycle goes to the other bank. A
        # reset takes a pending switch; each condition is an ``If``, so a config port left
        # undriven in a 4-state simulator reads as no switch.
        in_frame_next = Mux(self.i.valid & step, ~self.i.payload.last, in_frame)
        next_bank = Signal()
        with m.If(ResetSignal(allow_reset_less=True)):
            m.d.comb += next_bank.eq(active ^ pending)
        with m.Elif(pending & ~in_frame):             # the switch takes effect now
            m.d.comb += next_bank.eq(~active)
        with m.Elif(requested):
            m.d.comb += next_bank.eq(active ^ ~in_frame_next)
        with m.Else():
            m.d.comb += next_bank.eq(active ^ (pending & ~in_frame_next))
        exponents = [Signal(8, init=exponent, reset_less=True, name=f"code_exponent{index}")
                     for index, exponent in enumerate(self.table.exponents)]
        m.d.sync += [register.eq(exponent) for register, exponent
                     in zip(exponents, bank_exponents(next_bank))]

        stage = pipeline_stage(m, step)

        # 1: codes. A priority chain (the lowest code wins) so that a table written with
        # an exponent twice still gives one code.
        beat = self.i.payload
        count = Mux(beat.count > lanes, lanes, beat.count)
        fields, escapes = [], []
        for lane in range(lanes):
            value = beat.symbols[lane]
            exponent = value[_MANTISSA_BITS:_MANTISSA_BITS + 8]
            code = Const(0, 3)
            for index in reversed(range(TABLE_SIZE)):
                code = Mux(exponent == exponents[index], index + 1, code)
            present = lane < count
            field = Cat(value[:_MANTISSA_BITS], value[15], code[:3])   # code in the MSBs
            escaped = present & (code == 0)
            fields.append(stage(f"field{lane}", VALUE_BITS, Mux(present, field, 0)))
            escapes.append((stage(f"escape{lane}", ESCAPE_BITS, Mux(escaped, exponent, 0)),
                            stage(f"escape_length{lane}", range(ESCAPE_BITS + 1),
                                  Mux(escaped, ESCAPE_BITS, 0))))
        valid = stage("code_valid", 1, self.i.valid)
        last = stage("code_last", 1, beat.last)
        values_length = stage("values_length", range(VALUE_BITS * lanes + 1),
                              count * VALUE_BITS)
        values = Cat(*reversed(fields))                  # lane 0 first on the wire: MSBs

        # 2: the escapes' concatenation tree; the values chunk travels beside it.
        chunk, length, beside = concatenation_tree(
            escapes, stage, {"valid": valid, "last": last, "values": values,
                             "values_length": values_length})

        # 3: the packer takes the values chunk while the queue has room for the word.
        m.d.comb += [
            values_packer.i.valid.eq(beside["valid"] & room),
            values_packer.i.payload.bits.eq(beside["values"]),
            values_packer.i.payload.length.eq(beside["values_length"]),
            values_packer.i.payload.last.eq(beside["last"]),
        ]
        # The escapes word of the beat (its escapes, or the frame's end), loaded beside
        # the packer's first stage; it enters the queue the next cycle the queue has room,
        # whatever the packer does, so an escape never waits for values to move.
        entry_layout = data.StructLayout({"data": chunk_bits,
                                          "bits": range(chunk_bits + 1), "last": 1})
        word = Signal(entry_layout)
        word_valid = Signal()
        push = Signal()
        m.d.comb += push.eq(word_valid & room)
        with m.If(step):
            m.d.sync += [word_valid.eq(beside["valid"] & ((length != 0) | beside["last"])),
                         word.data.eq(chunk), word.bits.eq(length),
                         word.last.eq(beside["last"])]
        with m.Elif(push):
            m.d.sync += word_valid.eq(0)

        depth = _ENCODER_ESCAPE_WORDS
        queue = [Signal(entry_layout, name=f"escapes_queue{slot}") for slot in range(depth)]
        held = Signal(range(depth + 1))
        sent = Signal()
        m.d.comb += [
            sent.eq(self.o_escapes.valid & self.o_escapes.ready),
            self.o_escapes.payload.data.eq(Cat(Const(0, width - chunk_bits), queue[0].data)),
            self.o_escapes.payload.bits.eq(queue[0].bits),
            self.o_escapes.payload.last.eq(queue[0].last),
        ]
        for slot in range(depth):
            # The word lands in slot `held`, one lower if the head leaves (``sent`` only
            # enables registers).
            lands = push & Mux(sent, held == slot + 1, held == slot)
            with m.If(lands):
                m.d.sync += queue[slot].eq(word)
            if slot + 1 < depth:
                with m.Elif(sent):
                    m.d.sync += queue[slot].eq(queue[slot + 1])
        held_next = Signal(range(depth + 1))
        m.d.comb += held_next.eq(held + push - sent)
        m.d.sync += [held.eq(held_next),
                     self.o_escapes.valid.eq(held_next != 0),
                     room.eq(held_next < depth)]
        return m


def _mux(m, name, index, candidates, width):
    """A signal holding ``candidates[index]`` (0 past the end), from a chain of equality
    muxes. A signal, so that slicing it later does not copy the chain for every slice."""
    chosen = Const(0, width)
    for position, candidate in enumerate(candidates):
        chosen = Mux(index == position, candidate, chosen)
    picked = Signal(width, name=name)
    m.d.comb += picked.eq(chosen)
    return picked


class EscapeQueue(wiring.Component):
    """The escapes port's words, held for the decoder's escapes stage, with the escapes
    port's word faults applied (``docs/bitstream.md``, "Escape words").

    A word whose ``bits`` is not a multiple of 8, exceeds ``word_width``, or is 0 on a
    word without ``last`` is a fault where the word's bits begin: it enters as an entry
    with ``bytes = 0, end = 1, fault = 1`` in its place, and the rest of its frame, up to
    and including the word with ``last``, is dropped. Every other word enters as it came
    (``bytes = bits / 8``), with ``end`` set on the word with ``last``.

    Ports: ``i`` (:func:`~.payload.word_layout` words), ``head`` (the oldest entry,
    :func:`escape_entry_layout`), ``present`` (the queue holds an entry: the head may be
    read and taken; it never waits for the entry behind it) and ``take`` (the user takes
    the head this cycle, while ``present``).

    ``depth`` entries deep. ``i.ready`` comes from registers alone (the queue has room,
    or it is dropping the rest of a faulty frame), so it never depends on ``take``. A
    word taken at ``i`` is in the queue the next cycle; one entry leaves per cycle.
    """

    def __init__(self, *, word_width, depth):
        self._word_width = check_word_width(word_width)
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, not {depth!r}")
        self._depth = depth
        super().__init__({
            "i": In(stream.Signature(word_layout(word_width))),
            "head": Out(escape_entry_layout(word_width)),
            "present": Out(1),
            "take": In(1),
        })

    @property
    def word_width(self):
        return self._word_width

    @property
    def depth(self):
        return self._depth

    def elaborate(self, platform):
        m = Module()
        W, depth = self._word_width, self._depth
        entries = [Signal(escape_entry_layout(W), name=f"entry{index}")
                   for index in range(depth)]
        held = Signal(range(depth + 1))
        dropping = Signal()               # discarding the rest of a faulty frame
        m.d.comb += [
            self.i.ready.eq(dropping | (held < depth)),
            self.head.eq(entries[0]),
            self.present.eq(held != 0),
        ]

        word = self.i.payload
        fault = Signal()
        m.d.comb += fault.eq((word.bits > W) | (word.bits[:3] != 0)
                             | (~word.last & (word.bits == 0)))
        incoming = Signal(escape_entry_layout(W))
        m.d.comb += [
            incoming.data.eq(word.data),
            incoming.bytes.eq(Mux(fault, 0, word.bits >> 3)),
            incoming.end.eq(word.last | fault),
            incoming.fault.eq(fault),
        ]
        taken = Signal()
        m.d.comb += taken.eq(self.i.valid & self.i.ready)
        push = Signal()
        m.d.comb += push.eq(taken & ~dropping)
        with m.If(taken & dropping & word.last):
            m.d.sync += dropping.eq(0)
        with m.If(push & fault & ~word.last):
            m.d.sync += dropping.eq(1)

        # ``take`` comes late in the user's cycle, so it only enables registers: what an
        # entry loads is picked by registers alone (the entry above, or the incoming word),
        # and ``take`` only chooses between two compares of ``held``.
        pop = self.take
        for index in range(depth):
            loads = push & Mux(pop, held == index + 1, held == index)
            if index + 1 < depth:
                has_above = held > index + 1
                with m.If((pop & has_above) | loads):
                    m.d.sync += entries[index].eq(Mux(has_above, entries[index + 1], incoming))
            else:
                with m.If(loads):
                    m.d.sync += entries[index].eq(incoming)
        m.d.sync += held.eq(held - pop + push)
        return m


class ExponentRemapDecoder(_ExponentBlock):
    """Exponent-remap decoder: two word streams in, up to ``lanes`` bf16 values a cycle out.

    Parameters as :class:`ExponentRemapEncoder`. Ports: ``i`` (the values stream,
    :func:`word_layout` words), ``i_escapes`` (the escapes stream), ``o``
    (:func:`symbol_layout` beats of 16-bit values, with ``error``), ``i_config`` (table
    writes and the bank switch, see the module docstring). Frame ``n`` of ``i`` pairs with
    frame ``n`` of ``i_escapes``.

    How it works. The values stream goes through a :class:`~.bitpack.WordQueue`, the
    escapes stream through an :class:`EscapeQueue` of :func:`escape_queue_depth` words
    (word faults applied there). Then a pipeline, one beat of ``lanes`` values a stage:

    1. *values*: the position ``p`` in the values stream steps by ``11 * lanes`` bits a
       beat, a constant, so ``p`` takes only the multiples of ``gcd(11 * lanes,
       word_width)`` below the word width; a mux over those picks the beat's fields from
       the head word and the one behind it. Where the frame's last word is in view, the
       beat's ``count`` and whether the values end in a fault (a word fault, or a value
       cut short) come from the frame's bit count;
    2. *codes*: each lane's escape flag, its escape number (a prefix count of the flags
       before it) and the beat's escape count;
    3. *escapes*: the beat's escape bytes are read from the head escapes word, from the
       byte the last beat stopped at (the recurrence: that byte and the bytes gathered
       so far); a beat whose bytes run past the head word takes it and reads on from the
       next word the next cycle, so a beat takes one cycle a word it reads (one, with the
       words an encoder of the same lanes sends). It reads only the head word, never
       waiting for the one behind it, and waits only for a beat that needs escape bytes
       (or ends the frame) while none is in. The frame's bank is chosen here;
    4. *exponents*: each lane takes the exponent of its code in its frame's bank, or its
       escape byte; an escape missing from the stream, or one that carries a table
       exponent, is a fault at that lane;
    5. *beat*: the first fault, if any, ends the frame; lanes past ``count`` are 0.

    Latency (cycles from a frame's first values word to the first output transfer, its
    escapes word in and the next values word right behind, no stalls): :attr:`latency`.
    Throughput ``lanes`` values a cycle (the values words, ``11 * lanes`` bits a beat,
    arrive faster than that), less a cycle or two at a frame end, with escapes words of
    a beat each; a beat whose escapes span words takes a cycle more a word. A beat is
    sent when all lanes are full or the frame ends; an empty frame gives one beat with
    ``count = 0, last = 1``. Under backpressure on ``o`` every stage holds and the input
    queues fill; the ``ready`` of ``i`` and ``i_escapes`` come from registers, so they
    never depend on ``o.ready``.

    Bad input (a frame that no valid encoder makes): a word fault on either stream
    (``docs/bitstream.md``: "Faults in words" for the values, "Escape words" for the
    escapes) cuts that stream where the word's bits begin; a value whose 11 bits are not
    all in the values frame; a code-0 value with no escape byte left; an escape that
    carries a table exponent; escape bytes left after the last value, or a word fault in
    the escapes stream after all the escapes the values need. The values before the
    first fault are emitted, then the frame ends with ``error = 1, last = 1`` in the beat
    that would have held the next value (a full beat of good values is followed by a
    beat of ``count = 0``; escapes left over end the frame after all its values). The
    rest of the frame, on both ports, up to and including each one's ``last`` word, is
    dropped; the next frame decodes normally.

    Reset: clears stream state (both queues, every stage and the pending error beat: a
    frame in flight is lost, and the next words start a frame on both ports) and never
    touches a table: both banks and the active-bank select keep what was last loaded, and
    a pending switch takes effect. On an FPGA the tables come up with their
    elaboration-time contents; on an ASIC a reset-less flop has no defined power-up
    contents, so load every table after power-up there.
    """

    def __init__(self, *, lanes=4, word_width=None, tables=None):
        super().__init__(lambda lanes, width: {
            "i": In(stream.Signature(word_layout(width))),
            "i_escapes": In(stream.Signature(word_layout(width))),
            "o": Out(stream.Signature(symbol_layout(lanes, width=_SYMBOL_BITS,
                                                    error=True))),
            "i_config": In(stream.Signature(config_layout)),
        }, lanes=lanes, word_width=word_width, tables=tables)

    @property
    def latency(self):
        """Cycles from the transfer of a frame's first values word to the first output
        transfer, with its escapes word in and the next values word right behind."""
        # the queue and the next word behind it (2), values (1), codes (1), escapes (1),
        # exponents (1), beat (1)
        return 7

    def elaborate(self, platform):
        m = Module()
        lanes, width = self._lanes, self._word_width
        span = VALUE_BITS * lanes                   # bits of a full beat of values

        m.submodules.values_queue = values_queue = WordQueue(word_width=width)
        m.submodules.escapes_queue = escapes_queue = EscapeQueue(
            word_width=width, depth=escape_queue_depth(lanes, width))
        wiring.connect(m, wiring.flipped(self.i), values_queue.i)
        wiring.connect(m, wiring.flipped(self.i_escapes), escapes_queue.i)

        def frame_end(queue):
            """Where the frame ends, in bits from the head word's first bit, whether at a
            word fault, and whether that end is in view (head or the entry behind it;
            meaningful while ``head_ready``)."""
            head, after = queue.head, queue.after
            end = Mux(head.end, head.bits, width + after.bits)
            return end, Mux(head.end, head.fault, after.fault), head.end | after.end

        # Every stage from the escapes on moves on ``advance``; ``pending`` is the extra
        # error beat of a frame whose escapes outlast its values (a full beat before it).
        pending = Signal()
        out_free = Signal()
        advance = Signal()
        m.d.comb += [out_free.eq(~self.o.valid | self.o.ready),
                     advance.eq(out_free & ~pending)]

        # -- 1: values ----------------------------------------------------------------------
        step_bits = gcd(span, width)
        positions = width // step_bits
        position = Signal(range(positions))         # p = position * step_bits
        values_draining = Signal()                   # dropping to the frame's last word
        bits = Cat(frame_order(values_queue.head.data),
                   frame_order(values_queue.after.data))
        bits = Cat(bits, Const(0, max(0, (positions - 1) * step_bits + span - 2 * width)))
        group = _mux(m, "group", position,
                     [bits[index * step_bits:index * step_bits + span]
                      for index in range(positions)], span)
        fields = [group[VALUE_BITS * lane:VALUE_BITS * (lane + 1)][::-1]
                  for lane in range(lanes)]          # each MSB first: code, sign, mantissa
        end, fault, known = frame_end(values_queue)
        start = Signal(range(width))
        m.d.comb += start.eq(position * step_bits)
        room = Signal(range(2 * width + 1))           # bits from p to the frame's end
        m.d.comb += room.eq(end - start)
        fits = [room >= VALUE_BITS * count for count in range(1, lanes + 1)]
        count = Signal(range(lanes + 1))
        m.d.comb += count.eq(Mux(known, sum(fits), lanes))
        whole = 0                                    # the frame ends on a value boundary
        for count_at in range(lanes + 1):
            whole |= room == VALUE_BITS * count_at
        short = Signal()                              # the frame ends within this beat
        full_end = Signal()                           # ... or right after it
        m.d.comb += [short.eq(known & (room < span)),
                     full_end.eq(known & (room == span) & ~fault)]
        group_last = short | full_end
        group_error = short & (fault | ~whole)

        # Where the next beat starts, and whether this one reaches the next word: constants
        # of the position. (Plain expressions, not a ``Switch``: an event-driven simulator
        # then evaluates them at time 0 too, and no X lingers in them.)
        ends = [index * step_bits + span for index in range(positions)]
        crosses = _mux(m, "crosses", position, [Const(end >= width, 1) for end in ends], 1)
        next_position = _mux(m, "next_position", position,
                             [Const((end % width) // step_bits, range(positions))
                              for end in ends], len(position))

        # Stage registers: G (values), P (codes); each loads when empty or taken.
        values_stage = {"valid": Signal(name="values_valid"),
                        "count": Signal(range(lanes + 1), name="values_count"),
                        "last": Signal(name="values_last"),
                        "error": Signal(name="values_error"),
                        "fields": [Signal(VALUE_BITS, name=f"values_field{lane}")
                                   for lane in range(lanes)]}
        codes_stage = {"valid": Signal(name="codes_valid"),
                       "count": Signal(range(lanes + 1), name="codes_count"),
                       "last": Signal(name="codes_last"),
                       "error": Signal(name="codes_error"),
                       "fields": [Signal(VALUE_BITS, name=f"codes_field{lane}")
                                  for lane in range(lanes)],
                       "escaped": [Signal(name=f"codes_escaped{lane}")
                                   for lane in range(lanes)],
                       "number": [Signal(range(lanes), name=f"codes_number{lane}")
                                  for lane in range(lanes)],
                       "escapes": Signal(range(lanes + 1), name="codes_escapes")}
        escapes_step = Signal()                      # stage 3 takes the codes stage
        codes_load = Signal()
        values_load = Signal()
        m.d.comb += [codes_load.eq(~codes_stage["valid"] | escapes_step),
                     values_load.eq(~values_stage["valid"] | codes_load)]

        values_go = Signal()
        m.d.comb += values_go.eq(values_queue.head_ready & ~values_draining & values_load)
        values_take = Signal()
        m.d.comb += values_take.eq(
            (values_go & (group_last | crosses))
            | (values_draining & values_queue.head_ready))
        m.d.comb += values_queue.take.eq(values_take)
        with m.If(values_load):
            m.d.sync += [values_stage["valid"].eq(values_go),
                         values_stage["count"].eq(count),
                         values_stage["last"].eq(group_last),
                         values_stage["error"].eq(group_error)]
            m.d.sync += [register.eq(field)
                         for register, field in zip(values_stage["fields"], fields)]
        with m.If(values_go):
            with m.If(group_last):
                m.d.sync += [position.eq(0),
                             values_draining.eq(~values_queue.head.end)]
            with m.Else():
                m.d.sync += position.eq(next_position)
        with m.If(values_draining & values_queue.head_ready & values_queue.head.end):
            m.d.sync += values_draining.eq(0)

        # -- 2: codes -----------------------------------------------------------------------
        escaped = [(field[8:11] == 0) & (lane < values_stage["count"])
                   for lane, field in enumerate(values_stage["fields"])]
        with m.If(codes_load):
            m.d.sync += [codes_stage[key].eq(values_stage[key])
                         for key in ("valid", "count", "last", "error")]
            m.d.sync += [register.eq(field) for register, field
                         in zip(codes_stage["fields"], values_stage["fields"])]
            m.d.sync += [register.eq(flag)
                         for register, flag in zip(codes_stage["escaped"], escaped)]
            m.d.sync += [register.eq(sum(escaped[:lane]) if lane else 0)
                         for lane, register in enumerate(codes_stage["number"])]
            m.d.sync += codes_stage["escapes"].eq(sum(escaped))

        # -- 3: escapes (the recurrence: where the beat's bytes start in the head word) ----
        # A beat reads its bytes from the head escapes word, from byte ``offset``; if they
        # run past the head word's bytes it takes the word, keeps the bytes it has
        # (``gathered``, ``got`` of them) and reads on from the next word the next cycle.
        # It never looks at the word behind the head: an encoder sends that word only
        # after later beats, which may wait for this one.
        head = escapes_queue.head
        byte_positions = width // ESCAPE_BITS
        offset = Signal(range(byte_positions + 1))   # bytes of the head word read before
        got = Signal(range(lanes + 1))              # bytes this beat gathered before
        gathered = [Signal(ESCAPE_BITS, name=f"gathered{index}") for index in range(lanes)]
        escapes_draining = Signal()
        need = codes_stage["escapes"]
        last = codes_stage["last"]
        needs = Signal()                             # the beat reads the escapes stream
        m.d.comb += needs.eq((need != 0) | last)
        left = Signal(range(byte_positions + 1))    # bytes of the head word not read yet
        m.d.comb += left.eq(head.bytes - offset)
        wanted = Signal(range(lanes + 1))            # bytes the beat still needs
        m.d.comb += wanted.eq(need - got)
        # Two compares of two differences (not a sum of what it took), so the decision
        # below, which every stage before this one waits for, stays shallow.
        complete = Signal()                          # the head word holds every byte
        spare = Signal()                             # ... and bytes after them
        m.d.comb += [complete.eq(wanted <= left), spare.eq(wanted < left)]
        took = Signal(range(lanes + 1))              # bytes it reads from the head word
        m.d.comb += took.eq(Mux(complete, wanted, left))
        got_next = Signal(range(lanes + 1))
        m.d.comb += got_next.eq(got + took)
        # The beat is done with the head word if it has all its bytes, or the frame has
        # no more (the head ends it: the rest are missing); a frame's last beat also
        # needs to know that nothing is left over: the head ends the frame, or bytes are
        # left in it (extra escapes). Otherwise it takes the head word and reads on.
        finished = Signal()
        m.d.comb += finished.eq(head.end | Mux(last, spare, complete))
        # Escapes left over once the frame's values are all in (or a fault cut them).
        extra = Signal()
        m.d.comb += extra.eq(spare | (head.end & head.fault))
        active = Signal()
        m.d.comb += active.eq(codes_stage["valid"] & advance & ~escapes_draining)
        reading = Signal()                           # the beat reads the head word
        m.d.comb += reading.eq(active & needs & escapes_queue.present)
        m.d.comb += escapes_step.eq(active & (~needs | (escapes_queue.present & finished)))
        m.d.comb += escapes_queue.take.eq(
            (reading & (~finished | last | (~spare & ~head.end)))
            | (escapes_draining & escapes_queue.present))
        with m.If(reading):
            with m.If(~finished):
                m.d.sync += [offset.eq(0), got.eq(got_next)]
            with m.Elif(last | (~spare & ~head.end)):
                m.d.sync += [offset.eq(0), got.eq(0)]
            with m.Else():
                m.d.sync += [offset.eq(offset + took), got.eq(0)]
            with m.If(finished & last):
                m.d.sync += escapes_draining.eq(~head.end)
        with m.If(escapes_draining & escapes_queue.present & head.end):
            m.d.sync += escapes_draining.eq(0)

        head_bits = Cat(frame_order(head.data), Const(0, ESCAPE_BITS * lanes))
        window = _mux(m, "escape_window", offset,
                      [head_bits[ESCAPE_BITS * index:ESCAPE_BITS * (index + lanes)]
                       for index in range(byte_positions + 1)], ESCAPE_BITS * lanes)
        window_bytes = [window[ESCAPE_BITS * index:ESCAPE_BITS * (index + 1)][::-1]
                        for index in range(lanes)]
        # Byte ``index`` of the beat: gathered before, or from the window after them.
        merged = [_mux(m, f"escape_merged{index}", got,
                       [window_bytes[index - before] if before <= index else gathered[index]
                        for before in range(lanes + 1)], ESCAPE_BITS)
                  for index in range(lanes)]
        with m.If(reading & ~finished):
            m.d.sync += [register.eq(byte) for register, byte in zip(gathered, merged)]

        # The frame's bank: a switch takes effect before the first beat of a frame.
        in_frame = Signal()
        with m.If(escapes_step):
            m.d.sync += in_frame.eq(~last)
        bank_exponents, active_bank, bank, switch_pending, _ = self._banks(m, ~in_frame)

        def stage(name, value, shape=None):
            register = Signal(shape if shape is not None else len(value), name=name)
            with m.If(advance):
                m.d.sync += register.eq(value)
            return register

        escape_stage = {
            "valid": stage("escapes_valid", escapes_step),
            "count": stage("escapes_count", codes_stage["count"]),
            "last": stage("escapes_last", codes_stage["last"]),
            "error": stage("escapes_error", codes_stage["error"]),
            "extra": stage("escapes_extra", extra),
            "available": stage("escapes_available", Mux(needs, got_next, 0),
                               range(lanes + 1)),
            "bank": stage("escapes_bank", bank),
            "bytes": [stage(f"escapes_byte{index}", byte)
                      for index, byte in enumerate(merged)],
            "fields": [stage(f"escapes_field{lane}", field)
                       for lane, field in enumerate(codes_stage["fields"])],
            "escaped": [stage(f"escapes_escaped{lane}", flag)
                        for lane, flag in enumerate(codes_stage["escaped"])],
            "number": [stage(f"escapes_number{lane}", number)
                       for lane, number in enumerate(codes_stage["number"])],
        }

        # -- 4: exponents -------------------------------------------------------------------
        exponents = [Signal(8, name=f"bank_exponent{index}") for index in range(TABLE_SIZE)]
        m.d.comb += [signal.eq(exponent) for signal, exponent
                     in zip(exponents, bank_exponents(escape_stage["bank"]))]
        # Writes wait while a switch is pending or a beat of the bank that became idle is
        # still read here.
        m.d.comb += self.i_config.ready.eq(
            ~switch_pending & ~(escape_stage["valid"] & (escape_stage["bank"] != active_bank)))
        symbols, faults = [], []
        for lane in range(lanes):
            field = escape_stage["fields"][lane]
            number = escape_stage["number"][lane]
            escape = _mux(m, f"escape{lane}", number, escape_stage["bytes"][:lane + 1],
                          ESCAPE_BITS)
            in_table = 0
            for exponent in exponents:
                in_table |= escape == exponent
            escaped = escape_stage["escaped"][lane]
            fault = escaped & ((number >= escape_stage["available"]) | in_table)
            exponent = Mux(escaped, escape, _mux(m, f"table_exponent{lane}", field[8:11],
                                                  [Const(0, 8), *exponents], 8))
            symbol = Cat(field[:_MANTISSA_BITS], exponent, field[_MANTISSA_BITS])
            symbols.append(stage(f"exponents_symbol{lane}", symbol))
            faults.append(stage(f"exponents_fault{lane}", fault))
        exponent_stage = {key: stage(f"exponents_{key}", escape_stage[key])
                          for key in ("valid", "count", "last", "error", "extra")}

        # -- 5: the beat --------------------------------------------------------------------
        first_fault = Const(lanes, range(lanes + 1))
        for lane in reversed(range(lanes)):
            first_fault = Mux(faults[lane], lane, first_fault)
        faulty = Signal()
        m.d.comb += faulty.eq(Cat(*faults).any())
        discarding = Signal()        # dropping the beats of a frame after its error beat
        last = exponent_stage["last"]
        beat_count = Signal(range(lanes + 1))
        beat_error = Signal()
        beat_last = Signal()
        beat_valid = Signal()
        needs_extra = Signal()       # a full last beat, then the error beat of extra escapes
        overflow = ~exponent_stage["error"] & last & exponent_stage["extra"]
        m.d.comb += [
            beat_valid.eq(exponent_stage["valid"] & ~discarding),
            beat_count.eq(Mux(faulty, first_fault, exponent_stage["count"])),
            beat_error.eq(faulty | exponent_stage["error"]
                          | (overflow & (exponent_stage["count"] != lanes))),
            beat_last.eq(faulty | (last & ~(overflow & (exponent_stage["count"] == lanes)))),
            needs_extra.eq(~faulty & overflow & (exponent_stage["count"] == lanes)),
        ]
        with m.If(advance & exponent_stage["valid"]):
            with m.If(discarding):
                m.d.sync += discarding.eq(~last)
            with m.Elif(faulty & ~last):
                m.d.sync += discarding.eq(1)

        with m.If(out_free):
            with m.If(pending):
                m.d.sync += [self.o.valid.eq(1), pending.eq(0),
                             self.o.payload.count.eq(0), self.o.payload.error.eq(1),
                             self.o.payload.last.eq(1)]
                m.d.sync += [self.o.payload.symbols[lane].eq(0) for lane in range(lanes)]
            with m.Else():
                m.d.sync += [self.o.valid.eq(beat_valid),
                             pending.eq(beat_valid & needs_extra),
                             self.o.payload.count.eq(beat_count),
                             self.o.payload.error.eq(beat_error),
                             self.o.payload.last.eq(beat_last)]
                m.d.sync += [self.o.payload.symbols[lane].eq(
                    Mux(lane < beat_count, symbol, 0)) for lane, symbol in enumerate(symbols)]
        return m


# -- on the link ------------------------------------------------------------------------

#: The exponent blocks in a link stream: their lanes (the fewest they take; a stream
#: gives them a value a beat) and word width (their default at those lanes).
LINK_LANES = 4
LINK_WORD_WIDTH = default_word_width(LINK_LANES)


class ExponentLinkHardware(LinkHardware):
    """bf16 values in a link stream, exponents remapped: a
    :class:`ExponentRemapEncoder` and :class:`ExponentRemapDecoder` of
    :data:`LINK_LANES` lanes and :data:`LINK_WORD_WIDTH`-bit words, whose values and
    escapes go as two streams (``two_streams``)."""

    name, two_streams = "exponent", True
    encoder_config_layout = decoder_config_layout = config_layout
    encoder_switch = decoder_switch = SWITCH_ADDR

    def tables(self, tables=None):
        if tables is not None and not isinstance(tables, ExponentTable):
            raise TypeError(f"tables must be an ExponentTable, not {type(tables).__name__}")
        return DEFAULT_TABLE if tables is None else tables

    def code_lengths(self, tables):
        raise TypeError("the exponent remap codes every value in 11 bits and an escape "
                        "apart: its cutter reads no code lengths")

    def block(self, kind, tables):
        block = {"encoder": ExponentRemapEncoder, "decoder": ExponentRemapDecoder}[kind]
        return block(lanes=LINK_LANES, word_width=LINK_WORD_WIDTH, tables=tables)
