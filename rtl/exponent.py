"""ZipCCL exponent-remap encoder and decoder for bf16 values.

The wire format is ``docs/bitstream.md``, "Exponent-remap frames"; the golden model is
:func:`linkcodec.golden.exponent.wire_encode` / ``wire_decode``. A frame travels as two
streams of :func:`~.payload.word_layout` words, each on its own port and each framed
with ``last`` like a QLC frame:

- the *values* stream: per value ``code(3) | sign(1) | mantissa(7)``, a fixed 11 bits,
  so value ``i`` starts at bit ``11 i``;
- the *escapes* stream: the 8-bit exponent of every value whose code is 0, in order.

Every frame has both, even when it holds no escape (then its escapes frame is one word
with ``bits = 0, last = 1``). Because a value is always 11 bits, a beat's values sit at
fixed positions (no chain between lanes), and a beat's escapes are a prefix count of its
code-0 lanes.

The 7-entry exponent table (``exponents[i]`` has code ``i + 1``) is held in registers,
set at elaboration from an :class:`~linkcodec.golden.exponent.ExponentTable` (default
:data:`DEFAULT_TABLE`) and rewritable at run time through ``i_config``:

=================  ==========================================================
``addr``           meaning of ``data``
=================  ==========================================================
``0 .. 6``         the exponent of code ``addr + 1`` (``data[0:8]``)
``7``              a spare register that nothing reads
=================  ==========================================================

Write the table between frames, while the block is idle, and keep its 7 exponents
distinct (the encoder gives an exponent that appears twice its lowest code).
:func:`config_writes` lists the writes for a table.

**Reset** (``rst``) clears stream state and never touches a table: the exponent
registers keep what was last loaded, or their elaboration-time contents if nothing was,
so an encoder and its decoder reset together need no reload.
"""

from math import gcd

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..golden.exponent import TABLE_SIZE, VALUE_BITS, ExponentTable
from .bitpack import BitPacker, WordQueue, concatenation_tree, frame_order, pipeline_stage
from .block import LanedBlock
from .payload import (check_lanes, config_write_layout, symbol_layout,
                      word_layout)
from .table import ConfigRegisters

__all__ = ["LANES", "DEFAULT_TABLE", "ESCAPE_BITS", "config_layout", "default_word_width",
           "config_writes", "ExponentRemapEncoder", "ExponentRemapDecoder"]

#: The lane counts both blocks take.
LANES = (4, 8, 16)

#: The table the blocks hold unless told otherwise: the 7 binades around 1.0 (exponents 124..130, the
#: nearest to 127 first), the ones unit-scale activations fill.
DEFAULT_TABLE = ExponentTable((127, 126, 128, 125, 129, 124, 130))

#: Bits of an escaped exponent in the escapes stream.
ESCAPE_BITS = 8

#: A write to the exponent table.
config_layout = config_write_layout(addr_width=3, data_width=8)

_MANTISSA_BITS = 7
_SYMBOL_BITS = 16


def default_word_width(lanes):
    """The word width of both streams unless told otherwise: ``16 * lanes``, the raw
    bf16 rate, since a value takes 11 bits or more."""
    return _SYMBOL_BITS * check_lanes(lanes, LANES)


def _check_table(table):
    if table is None:
        return DEFAULT_TABLE
    if not isinstance(table, ExponentTable):
        raise TypeError(f"table must be an ExponentTable, not {type(table).__name__}")
    return table


def config_writes(table):
    """The ``i_config`` writes (``dict`` of ``addr``, ``data``) that load ``table``."""
    table = _check_table(table)
    return [{"addr": index, "data": int(exponent)}
            for index, exponent in enumerate(table.exponents)]


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
        """The :class:`ExponentTable` the registers hold from elaboration (at power-up on
        an FPGA) until one is loaded through ``i_config``; a reset does not bring it
        back."""
        return self.tables

    def _table_registers(self, m):
        """The 7 exponent registers, loaded through ``i_config`` (always ready)."""
        # Eight registers, not seven: address 7 is a spare that nothing reads, so that the
        # registers' write decoder covers every 3-bit address (Verilator's lint asks it).
        m.submodules.table = table = ConfigRegisters(
            shape=8, depth=TABLE_SIZE + 1, init=[*self.table.exponents, 0],
            config_layout=config_layout)
        m.d.comb += [self.i_config.ready.eq(1),
                     table.config.valid.eq(self.i_config.valid),
                     table.config.payload.eq(self.i_config.payload)]
        return [table.entries[index] for index in range(TABLE_SIZE)]


class ExponentRemapEncoder(_ExponentBlock):
    """Exponent-remap encoder: ``lanes`` bf16 values a cycle in, two word streams out.

    Parameters (keyword-only): ``lanes`` (4, 8 or 16), ``word_width`` (a multiple of 8,
    at least ``11 * lanes``; default :func:`default_word_width`, both streams), ``tables``
    (the :class:`ExponentTable` held until one is loaded; default :data:`DEFAULT_TABLE`).

    Ports: ``i`` (:func:`symbol_layout` beats of 16-bit bf16 bit patterns; a frame ends
    with the beat whose ``last`` is set, and may be empty: one beat with ``count = 0,
    last = 1``), ``o`` (the values stream, :func:`word_layout` words), ``o_escapes``
    (the escapes stream), ``i_config`` (table writes).

    A feed-forward pipeline in front of two :class:`~.bitpack.BitPacker`, every register
    moving while both packers' registered ``i.ready`` are high:

    1. each lane compares its exponent with the 7 table registers at once: its code, its
       11-bit field, and its escape byte (length 8, or 0 if the code is not 0); lanes past
       ``count`` are empty. The beat's values are ``11 * count`` bits at fixed places;
    2. the escape bytes are concatenated in a tree (:func:`~.bitpack.concatenation_tree`,
       ``log2(lanes)`` register levels), each level a shift by 0 or a whole number of
       bytes; the values chunk travels beside it unchanged;
    3. each packer aligns its chunk at its word offset and queues the words it completes.

    Latency (cycles from an input transfer to the first output transfer that carries
    something of it, no stalls): :attr:`latency`, ``3 + log2(lanes)``, on both ports, for
    a beat that completes a word or ends its frame. Throughput ``lanes`` values a cycle
    on any data (a beat's values take ``11 * lanes`` bits, its escapes at most ``8 *
    lanes``, both at most a word); frames follow each other with no idle cycle. Under
    backpressure on either output its packer's queue fills, then ``i.ready`` falls and
    the whole pipeline holds; nothing is lost, and ``i.ready`` never depends on
    ``o.ready`` or ``o_escapes.ready``. Every bit pattern is a valid bf16 value; a
    ``count`` above ``lanes`` is taken as ``lanes``.

    Reset: clears stream state (the pipeline, both packers' partial words and queues: a
    frame in flight is lost, and the next beat starts a frame) and never touches a table:
    the exponent registers keep what was last loaded. On an FPGA the tables come up with
    their elaboration-time contents; on an ASIC a memory or reset-less flop has no defined
    power-up contents, so load every table after power-up there.
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
        # the code stage, one per tree level, and the packer's two stages
        return 3 + self._lanes.bit_length() - 1

    def elaborate(self, platform):
        m = Module()
        lanes, width = self._lanes, self._word_width
        exponents = self._table_registers(m)

        m.submodules.values_packer = values_packer = BitPacker(
            chunk_width=VALUE_BITS * lanes, word_width=width)
        m.submodules.escapes_packer = escapes_packer = BitPacker(
            chunk_width=ESCAPE_BITS * lanes, word_width=width)
        wiring.connect(m, wiring.flipped(self.o), values_packer.o)
        wiring.connect(m, wiring.flipped(self.o_escapes), escapes_packer.o)
        step = Signal()         # both packers take a chunk: every stage moves
        m.d.comb += [step.eq(values_packer.i.ready & escapes_packer.i.ready),
                     self.i.ready.eq(step)]

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

        # 3: the packers, each told to take a chunk only when the other takes it too.
        m.d.comb += [
            values_packer.i.valid.eq(beside["valid"] & escapes_packer.i.ready),
            values_packer.i.payload.bits.eq(beside["values"]),
            values_packer.i.payload.length.eq(beside["values_length"]),
            values_packer.i.payload.last.eq(beside["last"]),
            escapes_packer.i.valid.eq(beside["valid"] & values_packer.i.ready),
            escapes_packer.i.payload.bits.eq(chunk),
            escapes_packer.i.payload.length.eq(length),
            escapes_packer.i.payload.last.eq(beside["last"]),
        ]
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


class ExponentRemapDecoder(_ExponentBlock):
    """Exponent-remap decoder: two word streams in, up to ``lanes`` bf16 values a cycle out.

    Parameters as :class:`ExponentRemapEncoder`. Ports: ``i`` (the values stream,
    :func:`word_layout` words), ``i_escapes`` (the escapes stream), ``o``
    (:func:`symbol_layout` beats of 16-bit values, with ``error``), ``i_config`` (table
    writes). Frame ``n`` of ``i`` pairs with frame ``n`` of ``i_escapes``.

    How it works. Each stream goes through a :class:`~.bitpack.WordQueue` (word faults
    applied there). Then a pipeline, one beat of ``lanes`` values a stage:

    1. *values*: the position ``p`` in the values stream steps by ``11 * lanes`` bits a
       beat, a constant, so ``p`` takes only the multiples of ``gcd(11 * lanes,
       word_width)`` below the word width; a mux over those picks the beat's fields from
       the head word and the one behind it. Where the frame's last word is in view, the
       beat's ``count`` and whether the values end in a fault (a word fault, or a value
       cut short) come from the frame's bit count;
    2. *codes*: each lane's escape flag, its escape number (a prefix count of the flags
       before it) and the beat's escape count;
    3. *escapes*: the one data-dependent recurrence, the byte position in the escapes
       stream, steps by the beat's escape count (an add); the escape bytes from there
       are registered, with how many of them the escapes frame holds. It waits only for a
       beat that needs escape bytes (or ends the frame) while they are not in;
    4. *exponents*: each lane takes the table's exponent for its code, or its escape
       byte; an escape missing from the stream, or one that carries a table exponent, is
       a fault at that lane;
    5. *beat*: the first fault, if any, ends the frame; lanes past ``count`` are 0.

    Latency (cycles from a frame's first values word to the first output transfer, its
    escapes word in and the next values word right behind, no stalls): :attr:`latency`.
    Throughput ``lanes`` values a cycle (the values words, ``11 * lanes`` bits a beat,
    arrive faster than that), less a cycle or two at a frame end. A beat is sent when all
    lanes are full or the frame ends; an empty frame gives one beat with ``count = 0, last
    = 1``. Under backpressure on ``o`` every stage holds and the input queues fill; the
    ``ready`` of ``i`` and ``i_escapes`` are registers, so they never depend on
    ``o.ready``.

    Bad input (a frame that no valid encoder makes): a word fault on either stream
    (``docs/bitstream.md``, "Faults in words") cuts that stream where the word's bits
    begin; a value whose 11 bits are not all in the values frame; a code-0 value with no
    escape byte left; an escape that carries a table exponent; escape bytes (or bits)
    left after the last value, or a word fault in the escapes stream after all the
    escapes the values need. The values before the first fault are emitted, then the
    frame ends with ``error = 1, last = 1`` in the beat that would have held the next
    value (a full beat of good values is followed by a beat of ``count = 0``; escapes
    left over end the frame after all its values). The rest of the frame, on both
    ports, up to and including each one's ``last`` word, is dropped; the next frame
    decodes normally.

    Reset: clears stream state (both queues, every stage and the pending error beat: a
    frame in flight is lost, and the next words start a frame on both ports) and never
    touches a table: the exponent registers keep what was last loaded. On an FPGA the
    tables come up with their elaboration-time contents; on an ASIC a memory or reset-less
    flop has no defined power-up contents, so load every table after power-up there.
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
        exponents = self._table_registers(m)

        m.submodules.values_queue = values_queue = WordQueue(word_width=width)
        m.submodules.escapes_queue = escapes_queue = WordQueue(word_width=width)
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

        # -- 3: escapes (the recurrence: the byte position in the escapes stream) ----------
        byte_positions = width // ESCAPE_BITS
        escape_at = Signal(range(byte_positions + 1))  # in bytes from the head word
        escapes_draining = Signal()
        escape_end, escape_fault, escape_known = frame_end(escapes_queue)
        escape_room = Signal(range(2 * width + 1))   # bits from the position to the end
        m.d.comb += escape_room.eq(escape_end - escape_at * ESCAPE_BITS)
        available = Signal(range(lanes + 1))         # escape bytes the frame holds from here
        m.d.comb += available.eq(Mux(escape_known & (escape_room < ESCAPE_BITS * lanes),
                                     escape_room >> 3, lanes))
        needs = Signal()                             # the beat reads the escapes stream
        m.d.comb += needs.eq((codes_stage["escapes"] != 0) | codes_stage["last"])
        m.d.comb += escapes_step.eq(
            codes_stage["valid"] & advance & ~escapes_draining
            & (~needs | escapes_queue.head_ready))
        used = Signal(range(lanes + 1))              # escape bytes this beat consumes
        m.d.comb += used.eq(Mux(codes_stage["escapes"] < available,
                                codes_stage["escapes"], available))
        escape_next = Signal(range(byte_positions + lanes + 1))
        m.d.comb += escape_next.eq(escape_at + used)
        escape_crosses = Signal()
        m.d.comb += escape_crosses.eq((escape_next >= byte_positions)
                                      & ~escapes_queue.head.end)
        # Escapes left over once the frame's values are all in (or a fault cut them).
        extra = Signal()
        m.d.comb += extra.eq(~escape_known | escape_fault
                             | (escape_end != escape_next * ESCAPE_BITS))
        m.d.comb += escapes_queue.take.eq(
            (escapes_step & needs & (codes_stage["last"] | escape_crosses))
            | (escapes_draining & escapes_queue.head_ready))
        with m.If(escapes_step & needs):
            with m.If(codes_stage["last"]):
                m.d.sync += [escape_at.eq(0),
                             escapes_draining.eq(~escapes_queue.head.end)]
            with m.Elif(escape_crosses):
                m.d.sync += escape_at.eq(escape_next - byte_positions)
            with m.Else():
                m.d.sync += escape_at.eq(escape_next)
        with m.If(escapes_draining & escapes_queue.head_ready & escapes_queue.head.end):
            m.d.sync += escapes_draining.eq(0)

        escape_bits = Cat(frame_order(escapes_queue.head.data),
                          frame_order(escapes_queue.after.data),
                          Const(0, ESCAPE_BITS * lanes))
        window = _mux(m, "escape_window", escape_at,
                      [escape_bits[ESCAPE_BITS * index:ESCAPE_BITS * (index + lanes)]
                       for index in range(byte_positions + 1)], ESCAPE_BITS * lanes)

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
            "available": stage("escapes_available", available),
            "bytes": [stage(f"escapes_byte{index}",
                            window[ESCAPE_BITS * index:ESCAPE_BITS * (index + 1)][::-1])
                      for index in range(lanes)],
            "fields": [stage(f"escapes_field{lane}", field)
                       for lane, field in enumerate(codes_stage["fields"])],
            "escaped": [stage(f"escapes_escaped{lane}", flag)
                        for lane, flag in enumerate(codes_stage["escaped"])],
            "number": [stage(f"escapes_number{lane}", number)
                       for lane, number in enumerate(codes_stage["number"])],
        }

        # -- 4: exponents -------------------------------------------------------------------
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
