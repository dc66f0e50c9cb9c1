"""Quad Length Code (QLC) encoder and decoder for FP8 e4m3 symbols.

The bitstream is defined in ``docs/bitstream.md``; the golden model is
:mod:`linkcodec.golden.qlc`. Both blocks hold their tables in registers and a
:class:`~amaranth.lib.memory.Memory`, set at elaboration from a
:class:`~linkcodec.golden.qlc.QlcCode` and rewritable at run time through ``i_config``, so
a new distribution needs no new synthesis.

Config port (``i_config``, always ready, one write per transfer):

=================  ==========================================================
``addr``           meaning of ``data``
=================  ==========================================================
``0 .. 255``       table entry ``addr``: the encoder's rank of symbol ``addr``,
                   the decoder's symbol of rank ``addr`` (``data[0:8]``)
``256 .. 263``     area ``addr - 256``: ``data`` is an :data:`area_layout`
                   (``suffix_bits``, ``base``, ``size``)
=================  ==========================================================

Write the tables between frames, while the block is idle; :func:`config_writes` lists the
writes for a code.
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..golden.qlc import QlcCode
from .bitpack import BitPacker, BitUnpacker
from .payload import symbol_layout, word_layout, check_lanes, check_word_width
from .payload import config_write_layout
from .table import ConfigRegisters, ConfigTable

__all__ = [
    "MAX_CODE_LENGTH", "AREA_BASE", "area_layout", "config_layout", "default_word_width", "config_writes",
    "QlcEncoder", "QlcDecoder",
]

#: Longest QLC code: a 3-bit prefix and an 8-bit suffix.
MAX_CODE_LENGTH = 11

#: One area of a layout, as held in the blocks' area registers.
area_layout = data.StructLayout({
    "suffix_bits": 4,   # k: the area's codes are 3 + k bits long
    "base": 9,          # first rank of the area
    "size": 9,          # number of ranks (symbols) in the area
})

#: A write to a block's tables.
config_layout = config_write_layout(addr_width=9, data_width=area_layout.size)

#: Config address of area 0; areas 0..7 follow the 256 table entries.
AREA_BASE = 256


def default_word_width(lanes):
    """The word width a block gets unless told otherwise: ``8 * lanes``, at least 16.

    That is the raw symbol rate, so a frame whose codes average under 8 bits a symbol
    streams at ``lanes`` symbols a cycle with room to spare.
    """
    return max(16, 8 * check_lanes(lanes))


def _area_entries(code):
    layout = code.layout
    return [
        {"suffix_bits": int(k), "base": int(base), "size": int(size)}
        for k, base, size in zip(layout.suffix_bits, layout.bases, layout.sizes)
    ]


def config_writes(code, *, block):
    """The ``i_config`` writes (``dict`` of ``addr``, ``data``) that load ``code``.

    ``block`` is ``"encoder"`` (table: symbol to rank) or ``"decoder"`` (rank to symbol).
    """
    if block == "encoder":
        table = code.symbol_to_rank
    elif block == "decoder":
        table = code.rank_to_symbol
    else:
        raise ValueError(f"block must be 'encoder' or 'decoder', not {block!r}")
    writes = [{"addr": index, "data": int(entry)} for index, entry in enumerate(table)]
    for index, entry in enumerate(_area_entries(code)):
        writes.append({"addr": AREA_BASE + index, "data": area_layout.const(entry).as_bits()})
    return writes


def _check_code(code):
    if code is None:
        return QlcCode.base()
    if not isinstance(code, QlcCode):
        raise TypeError(f"code must be a QlcCode, not {type(code).__name__}")
    return code


class _QlcBlock(wiring.Component):
    def __init__(self, signature, *, lanes, word_width, code):
        try:
            self._lanes = check_lanes(lanes)
            self._word_width = check_word_width(
                default_word_width(lanes) if word_width is None else word_width)
            self._code = _check_code(code)
        except (TypeError, ValueError):
            # A block refused at construction is not an unused block: no warning later.
            self._MustUse__silence = True
            raise
        super().__init__(signature(self._lanes, self._word_width))

    @property
    def lanes(self):
        return self._lanes

    @property
    def word_width(self):
        return self._word_width

    @property
    def code(self):
        """The code the tables hold at reset."""
        return self._code

    def _tables(self, m, table_init):
        """The table memory (one read port per lane) and the area registers, both loaded
        through ``i_config``; returns the read ports and the areas."""
        m.submodules.table = table = ConfigTable(
            shape=8, depth=256, init=[int(entry) for entry in table_init],
            read_ports=self._lanes, config_layout=config_layout)
        m.submodules.areas = areas = ConfigRegisters(
            shape=area_layout, depth=8, init=_area_entries(self._code),
            config_layout=config_layout, base=AREA_BASE)
        m.d.comb += self.i_config.ready.eq(1)
        for listener in (table.config, areas.config):
            m.d.comb += [listener.valid.eq(self.i_config.valid),
                         listener.payload.eq(self.i_config.payload)]
        return table.read, areas.entries


def _one_hot(selects, values):
    """The value whose select is high (``selects`` is one-hot), as an AND-OR tree."""
    chosen = 0
    for select, value in zip(selects, values):
        chosen |= Mux(select, value, 0)
    return chosen


class QlcEncoder(_QlcBlock):
    """QLC encoder: ``lanes`` e4m3 symbols a cycle in, ``word_width``-bit words out.

    Parameters (keyword-only): ``lanes`` (1, 2, 4, 8 or 16), ``word_width`` (a multiple
    of 8; default :func:`default_word_width`), ``code`` (the :class:`QlcCode` held at
    reset; default the base layout with rank = symbol value).

    Ports: ``i`` (:func:`symbol_layout` beats; a frame ends with the beat whose ``last``
    is set, and may be empty: one beat with ``count = 0, last = 1``), ``o``
    (:func:`word_layout` words, see ``docs/bitstream.md``), ``i_config`` (table writes).

    A feed-forward pipeline in front of a :class:`~.bitpack.BitPacker`, every register
    moving while the packer's registered ``i.ready`` is high:

    1. the rank table is read (a registered read, a block RAM per lane) and its data
       registered again, since a block RAM's data comes late in the cycle;
    2. each lane subtracts every area's base from its rank at once: the borrows give the
       area, the difference its suffix;
    3. each lane's code is aligned to the top of 11 bits, with its length (0 for a lane
       past ``count``);
    4. the lanes' codes are concatenated in a tree, one register per level
       (``log2(lanes)`` levels): a pair is the left code with the right one shifted right
       by the left's length;
    5. the packer aligns the chunk at its word offset and queues the words it completes.

    Latency (cycles from an input transfer to the first output transfer that carries
    something of it, with no stalls): :attr:`latency`, ``6 + log2(lanes)``, for a beat
    whose bits complete a word or end the frame. Throughput ``lanes`` symbols a cycle
    while codes average at most ``word_width / lanes`` bits; frames follow each other with
    no idle cycle. Under
    backpressure on ``o`` the packer's word queue fills, then ``i.ready`` falls and the
    whole pipeline holds; nothing is lost, and ``i.ready`` never depends on ``o.ready``.
    Every byte is a valid symbol; a ``count`` above ``lanes`` is taken as ``lanes``.
    """

    def __init__(self, *, lanes=1, word_width=None, code=None):
        super().__init__(lambda lanes, width: {
            "i": In(stream.Signature(symbol_layout(lanes))),
            "o": Out(stream.Signature(word_layout(width))),
            "i_config": In(stream.Signature(config_layout)),
        }, lanes=lanes, word_width=word_width, code=code)

    @property
    def latency(self):
        """Cycles from a beat that completes a word (or ends its frame) to that word."""
        # read, rank, area, code, one per tree level, and the packer's two stages
        return 6 + self._lanes.bit_length() - 1

    def _registered_tables(self, m):
        """The rank table (one registered read port per lane) and the area registers."""
        m.submodules.table = table = ConfigTable(
            shape=8, depth=256, init=[int(entry) for entry in self._code.symbol_to_rank],
            read_ports=self._lanes, config_layout=config_layout, registered=True)
        m.submodules.areas = areas = ConfigRegisters(
            shape=area_layout, depth=8, init=_area_entries(self._code),
            config_layout=config_layout, base=AREA_BASE)
        m.d.comb += self.i_config.ready.eq(1)
        for listener in (table.config, areas.config):
            m.d.comb += [listener.valid.eq(self.i_config.valid),
                         listener.payload.eq(self.i_config.payload)]
        return table.read, areas.entries

    def elaborate(self, platform):
        m = Module()
        lanes = self._lanes
        reads, areas = self._registered_tables(m)

        m.submodules.packer = packer = BitPacker(
            chunk_width=MAX_CODE_LENGTH * lanes, word_width=self._word_width)
        wiring.connect(m, wiring.flipped(self.o), packer.o)
        step = packer.i.ready             # a register: every stage moves while it is high
        m.d.comb += self.i.ready.eq(step)

        def stage(name, shape, value):
            """A pipeline register loaded from ``value`` while the pipeline moves."""
            register = Signal(shape, name=name)
            with m.If(step):
                m.d.sync += register.eq(value)
            return register

        # 1: the table read; the beat's count (clamped) and last travel beside it.
        for lane in range(lanes):
            m.d.comb += [reads[lane].addr.eq(self.i.payload.symbols[lane]),
                         reads[lane].en.eq(step)]
        if lanes > 1:
            clamped = Mux(self.i.payload.count > lanes, lanes, self.i.payload.count)
        else:                   # a 1-bit count cannot exceed one lane
            clamped = self.i.payload.count
        valid = stage("read_valid", 1, self.i.valid)
        count = stage("read_count", range(lanes + 1), clamped)
        last = stage("read_last", 1, self.i.payload.last)
        # A block RAM's read data comes late in the cycle (about 6 ns): register it alone.
        ranks = [stage(f"rank{lane}", 8, reads[lane].data) for lane in range(lanes)]
        valid = stage("rank_valid", 1, valid)
        count = stage("rank_count", range(lanes + 1), count)
        last = stage("rank_last", 1, last)

        # 2: each lane's area, suffix, pad and length (0 past `count`). Areas take
        # consecutive ranks, so a rank's area is the last one whose base is at or below it
        # (an empty area shares its base with the next). What depends on the area
        # registers alone (k clamped to the longest suffix, the pad 8 - k, the length) is
        # worked out once for all lanes, beside the rank's subtractions.
        pads, lengths = [], []
        for index in range(8):
            bits = Signal(4, name=f"suffix_bits_{index}")
            m.d.comb += bits.eq(Mux(areas[index].suffix_bits > 8, 8, areas[index].suffix_bits))
            pad = Signal(4, name=f"pad_{index}")
            m.d.comb += pad.eq(8 - bits)
            pads.append(pad)
            lengths.append(3 + bits)
        fields = []
        for lane in range(lanes):
            rank = ranks[lane]
            differences = [Signal(10, name=f"difference{lane}_{index}") for index in range(8)]
            m.d.comb += [difference.eq(rank - areas[index].base)
                         for index, difference in enumerate(differences)]
            at_or_above = [~difference[9] for difference in differences]   # no borrow
            # Area 0 also takes a rank below every base, as the golden model does.
            selected = ([~at_or_above[1]]
                        + [at_or_above[index] & ~at_or_above[index + 1] for index in range(1, 7)]
                        + [at_or_above[7]])
            # One-hot selects, so each field is an AND-OR tree, not a chain of muxes.
            suffix = _one_hot(selected, [difference[:8] for difference in differences])
            length = Mux(lane < count, _one_hot(selected, lengths), 0)
            fields.append((stage(f"suffix{lane}", 8, suffix),
                           stage(f"pad{lane}", 4, _one_hot(selected, pads)),
                           stage(f"area{lane}", 3, _one_hot(selected, range(8))),
                           stage(f"length{lane}", range(MAX_CODE_LENGTH + 1), length)))
        valid = stage("area_valid", 1, valid)
        last = stage("area_last", 1, last)

        # 3: each code at the top of 11 bits; a lane past `count` (length 0) is empty.
        codes = []
        for lane, (suffix, pad, area, length) in enumerate(fields):
            aligned = (suffix << pad)[:8] | (area << 8)
            codes.append((stage(f"code{lane}", MAX_CODE_LENGTH, Mux(length != 0, aligned, 0)),
                          stage(f"code_length{lane}", range(MAX_CODE_LENGTH + 1), length)))
        valid = stage("code_valid", 1, valid)
        last = stage("code_last", 1, last)

        # 4: the concatenation tree; each level halves the lanes and doubles the width.
        level = 0
        while len(codes) > 1:
            level += 1
            width = 2 * len(codes[0][0])
            paired = []
            for pair in range(len(codes) // 2):
                (left, left_length), (right, right_length) = codes[2 * pair:2 * pair + 2]
                half = width // 2
                joined = (left << half) | ((right << half) >> left_length)
                paired.append((stage(f"chunk{level}_{pair}", width, joined),
                               stage(f"chunk_length{level}_{pair}", range(width + 1),
                                     left_length + right_length)))
            codes = paired
            valid = stage(f"chunk{level}_valid", 1, valid)
            last = stage(f"chunk{level}_last", 1, last)

        chunk, length = codes[0]
        m.d.comb += [
            packer.i.valid.eq(valid),
            packer.i.payload.bits.eq(chunk),
            packer.i.payload.length.eq(length),
            packer.i.payload.last.eq(last),
        ]
        return m


class QlcDecoder(_QlcBlock):
    """QLC decoder: ``word_width``-bit words in, up to ``lanes`` e4m3 symbols a cycle out.

    Parameters as :class:`QlcEncoder`. Ports: ``i`` (:func:`word_layout` words), ``o``
    (:func:`symbol_layout` beats with ``error``), ``i_config`` (table writes).

    Each cycle the decoder reads the 3-bit prefix of the next code, knows its length at
    once, and chains the lanes' offsets, so one beat carries ``lanes`` symbols. It emits a
    beat when all lanes are full or the frame ends; it never decodes pad bits.
    Latency 2 cycles from a word to the first beat it completes. Throughput ``lanes``
    symbols a cycle while codes average at most ``word_width / lanes`` bits. Under
    backpressure on ``o`` the output register holds and the bit buffer fills, then
    ``i.ready`` falls.

    Bad input (an invalid code, a frame that ends inside a code, or a word whose ``bits``
    exceeds ``word_width``): the decoder emits the symbols decoded before the fault, then
    a beat with ``error = 1, last = 1``, drops the rest of the input frame up to and
    including its ``last`` word, and decodes the next frame normally.
    """

    def __init__(self, *, lanes=1, word_width=None, code=None):
        super().__init__(lambda lanes, width: {
            "i": In(stream.Signature(word_layout(width))),
            "o": Out(stream.Signature(symbol_layout(lanes, error=True))),
            "i_config": In(stream.Signature(config_layout)),
        }, lanes=lanes, word_width=word_width, code=code)

    def elaborate(self, platform):
        m = Module()
        lanes = self._lanes
        window_width = MAX_CODE_LENGTH * lanes
        reads, areas = self._tables(m, self._code.rank_to_symbol)

        m.submodules.unpacker = unpacker = BitUnpacker(
            word_width=self._word_width, window_width=window_width)
        wiring.connect(m, wiring.flipped(self.i), unpacker.i)
        fill = unpacker.fill

        offset = 0
        in_run = 1              # every lane so far holds a valid, complete code
        count = 0
        consumed = 0
        invalid = 0             # the first lane that is not in the run has a bad code
        incomplete = 0          # ... or its code is not all in the buffer yet
        for lane in range(lanes):
            bits = Signal(MAX_CODE_LENGTH, name=f"bits{lane}")
            m.d.comb += bits.eq((unpacker.window << offset)[window_width - MAX_CODE_LENGTH:
                                                            window_width])
            prefix = bits[8:]
            entry = areas[prefix]
            suffix_bits = entry.suffix_bits[:4]
            pad = Signal(4, name=f"pad{lane}")
            m.d.comb += pad.eq(8 - suffix_bits)
            suffix = Signal(8, name=f"suffix{lane}")
            m.d.comb += suffix.eq(bits[:8] >> pad)
            length = Signal(range(MAX_CODE_LENGTH + 1), name=f"length{lane}")
            m.d.comb += length.eq(3 + suffix_bits)
            present = Signal(name=f"present{lane}")
            m.d.comb += present.eq(offset + length <= fill)
            valid_code = Signal(name=f"valid_code{lane}")
            m.d.comb += valid_code.eq(suffix < entry.size)
            m.d.comb += reads[lane].addr.eq((entry.base + suffix)[:8])

            first_out = Signal(name=f"first_out{lane}")
            m.d.comb += first_out.eq(in_run & ~(present & valid_code))
            invalid = invalid | (first_out & present)
            incomplete = incomplete | (first_out & ~present)
            next_run = Signal(name=f"run{lane}")
            m.d.comb += next_run.eq(in_run & present & valid_code)
            count = count + next_run
            consumed = consumed + Mux(next_run, length, 0)
            in_run = next_run
            next_offset = Signal(range(window_width + 1), name=f"offset{lane + 1}")
            m.d.comb += next_offset.eq(offset + length)
            offset = next_offset

        beat_count = Signal(range(lanes + 1))
        beat_bits = Signal(range(window_width + 1))
        m.d.comb += [beat_count.eq(count), beat_bits.eq(consumed)]
        frame_end = Signal()
        error = Signal()
        fire = Signal()
        m.d.comb += [
            frame_end.eq(unpacker.tail & (beat_bits == fill)),
            error.eq(unpacker.bad_word | invalid
                     | (unpacker.tail & incomplete & (beat_bits != fill))),
            fire.eq((beat_count == lanes) | frame_end | error),
        ]

        advance = Signal()
        m.d.comb += advance.eq(~self.o.valid | self.o.ready)
        with m.If(advance):
            m.d.sync += [
                self.o.valid.eq(fire),
                self.o.payload.count.eq(beat_count),
                self.o.payload.last.eq(frame_end | error),
                self.o.payload.error.eq(error),
            ]
            for lane in range(lanes):
                m.d.sync += self.o.payload.symbols[lane].eq(
                    Mux(lane < beat_count, reads[lane].data, 0))
        m.d.comb += [
            unpacker.consume.eq(Mux(advance & fire, beat_bits, 0)),
            unpacker.flush.eq(advance & fire & (frame_end | error)),
        ]
        return m
