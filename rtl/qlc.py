"""Quad Length Code (QLC) encoder and decoder for FP8 e4m3 symbols.

The bitstream is defined in ``docs/bitstream.md``; the golden model is
:mod:`linkcodec.golden.qlc`. Both blocks hold their tables in two banks (memories and
registers), set at elaboration from a :class:`~linkcodec.golden.qlc.QlcCode` and
rewritable at run time through ``i_config``, so a new distribution needs no new synthesis,
and a new code loads while the other one works.

Config port (``i_config``, one write per transfer):

=====================  ======================================================
``addr``               meaning of ``data`` (written into the *idle* bank)
=====================  ======================================================
``0 .. 255``           table entry ``addr``: the encoder's rank of symbol ``addr``,
                       the decoder's symbol of rank ``addr`` (``data[0:8]``)
``256 .. 263``         area ``addr - 256``: ``data`` is an :data:`area_layout`
                       (``suffix_bits``, ``base``, ``size``)
:data:`SWITCH_ADDR`    any ``data``: switch banks at the next frame boundary
=====================  ======================================================

**Banks.** Writes go to the idle bank. A write to :data:`SWITCH_ADDR` asks for a switch;
it takes effect at the next frame boundary: before the first symbol (encoder) or word
(decoder) of the next frame, at once if the block is between frames. The next frame is
the first that starts at ``i`` after the switch write (a beat or word taken in the same
cycle as the write is before it): a decoder's frame that came in whole before the write
keeps the bank it came in under, even while its words still wait in the decoder's queue
(:class:`~.bitpack.WordQueue` marks the write among them). So a code swap
costs no idle cycle. While a switch is pending, and while a beat or word of the bank that
became idle is still where the idle bank's tables are read, ``i_config.ready`` is low, so
the next code's writes cannot reach a bank in use (the decoder's ``i_config.ready`` is a
register: it rises the cycle after the last such word or group has left).
:func:`config_writes` makes the writes that load a code and switch to it.

**Reset** (``rst``) clears stream state and never touches a table: both banks of every
table and the active-bank select keep what was last loaded, or their elaboration-time
contents (bank 0 active) if nothing was, so an encoder and its decoder reset together
need no reload. A bank switch still pending at reset takes effect at the reset: a reset
is a frame boundary, and so both ends of a link reset together end up on the same bank.
"""

from amaranth.hdl import Cat, Module, Signal, Mux
from amaranth.lib import data, wiring

from ..golden.qlc import QlcCode, canonical_qlc
from . import huffman
from .bitpack import BitPacker, bits_at, concatenation_tree, frame_order, pipeline_stage
from .block import LanedBlock, decoder_signature, encoder_signature
from .link_codec import LINK_WORD_WIDTH, LinkHardware
from .payload import check_lanes
from .payload import config_write_layout
from .table import ConfigRegisters, bank_switch, two_bank_table
from .window import beat_end, jump_loop, pick, window_geometry

__all__ = ["QlcLinkHardware", 
    "MAX_CODE_LENGTH", "AREA_BASE", "SWITCH_ADDR", "area_layout", "config_layout",
    "default_word_width", "config_writes", "switch_write",
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
#: A write here asks for a bank switch at the next frame boundary.
SWITCH_ADDR = 511


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


def switch_write():
    """The config write that asks for a bank switch."""
    return {"addr": SWITCH_ADDR, "data": 0}


def config_writes(code, *, block, switch=True):
    """The ``i_config`` writes (``dict`` of ``addr``, ``data``) that load ``code`` into
    the idle bank, then (``switch``) the switch write that makes it the working one at
    the next frame boundary.

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
    if switch:
        writes.append(switch_write())
    return writes


def _check_code(code):
    if code is None:
        return QlcCode.base()
    if not isinstance(code, QlcCode):
        raise TypeError(f"tables must be a QlcCode, not {type(code).__name__}")
    return code


class _QlcBlock(LanedBlock):
    def __init__(self, signature, *, lanes, word_width, tables):
        super().__init__(signature, lanes=lanes, word_width=word_width,
                         default_word_width=default_word_width,
                         check=lambda lanes, word_width: _check_code(tables))

    @property
    def code(self):
        """The code the tables hold from elaboration (at power-up on an FPGA) until one
        is loaded through ``i_config``; a reset does not bring it back."""
        return self.tables

    def _banks(self, m, boundary):
        """The bank logic (:func:`~.table.bank_switch`) on ``i_config``; a switch takes
        effect when ``boundary``."""
        return bank_switch(m, self.i_config, boundary=boundary, switch_addr=SWITCH_ADDR)

    def _area_write(self, active):
        """Whether a config write (made this cycle) is to an area, and the area's index
        in both banks (the idle bank's)."""
        config = self.i_config
        addr = config.payload.addr
        hit = (config.valid & config.ready & (addr >= AREA_BASE) & (addr < AREA_BASE + 8))
        return hit, Cat(addr[:3], ~active)


def _one_hot(selects, values):
    """The value whose select is high (``selects`` is one-hot), as an AND-OR tree."""
    chosen = 0
    for select, value in zip(selects, values):
        chosen |= Mux(select, value, 0)
    return chosen


class QlcEncoder(_QlcBlock):
    """QLC encoder: ``lanes`` e4m3 symbols a cycle in, ``word_width``-bit words out.

    Parameters (keyword-only): ``lanes`` (1, 2, 4, 8 or 16), ``word_width`` (a multiple
    of 8; default :func:`default_word_width`), ``tables`` (the :class:`QlcCode` the tables
    hold until one is loaded; default the base layout with rank = symbol value).

    Ports: ``i`` (:func:`symbol_layout` beats; a frame ends with the beat whose ``last``
    is set, and may be empty: one beat with ``count = 0, last = 1``), ``o``
    (:func:`word_layout` words, see ``docs/bitstream.md``), ``i_config`` (table writes
    and the bank switch, see the module docstring).

    A feed-forward pipeline in front of a :class:`~.bitpack.BitPacker`, every register
    moving while the packer's registered ``i.ready`` is high:

    1. the rank table is read at ``{bank, symbol}`` (a registered read, a block RAM per
       lane: two banks of 256 entries) and its data registered again, since a block RAM's
       data comes late in the cycle; the beat's bank's 8 areas are registered beside it;
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

    ``i_config.ready`` is low while a bank switch is pending, and for the cycles that a
    beat of the bank that became idle waits in the read stage (under backpressure).

    Reset: clears stream state (the pipeline, the packer's partial word and queue: a frame
    in flight is lost, and the next beat starts a frame) and never touches a table: both
    banks of the rank table and of the area registers, and the active-bank select, keep
    what was last loaded; a switch pending at reset takes effect at the reset. On an FPGA
    the tables come up with their elaboration-time contents; on an ASIC a memory or
    reset-less flop has no defined power-up contents, so load every table after power-up
    there.
    """

    def __init__(self, *, lanes=1, word_width=None, tables=None):
        super().__init__(encoder_signature(config_layout), lanes=lanes,
                         word_width=word_width, tables=tables)

    @property
    def latency(self):
        """Cycles from a beat that completes a word (or ends its frame) to that word."""
        # read, rank, area, code, one per tree level, and the packer's two stages
        return 6 + self._lanes.bit_length() - 1

    def elaborate(self, platform):
        m = Module()
        lanes = self._lanes

        m.submodules.packer = packer = BitPacker(
            chunk_width=MAX_CODE_LENGTH * lanes, word_width=self._word_width)
        wiring.connect(m, wiring.flipped(self.o), packer.o)
        step = packer.i.ready             # a register: every stage moves while it is high
        m.d.comb += self.i.ready.eq(step)

        # -- banks: the rank table (a block RAM) and the area registers, two of each ----
        # Frame boundary: no beat of a frame taken yet since the last frame's end.
        in_frame = Signal()
        with m.If(self.i.valid & step):
            m.d.sync += in_frame.eq(~self.i.payload.last)
        banks = self._banks(m, ~in_frame)
        config = self.i_config.payload
        reads = two_bank_table(
            m, "table", self.i_config, shape=8,
            init=[int(entry) for entry in self.code.symbol_to_rank], read_ports=lanes,
            idle_bank=~banks.active, hit=config.addr < 256, index=config.addr)
        m.submodules.areas = area_registers = ConfigRegisters(
            shape=area_layout, depth=16, init=_area_entries(self.code) * 2,
            config_layout=config_layout)
        area_hit, area_index = self._area_write(banks.active)
        m.d.comb += [area_registers.config.valid.eq(area_hit),
                     area_registers.config.payload.addr.eq(area_index),
                     area_registers.config.payload.data.eq(config.data)]

        stage = pipeline_stage(m, step)

        # 1: the table read, at the beat's bank; the beat's count (clamped), last and
        # bank travel beside it.
        for lane in range(lanes):
            m.d.comb += [reads[lane].addr.eq(Cat(self.i.payload.symbols[lane], banks.bank)),
                         reads[lane].en.eq(step)]
        if lanes > 1:
            clamped = Mux(self.i.payload.count > lanes, lanes, self.i.payload.count)
        else:                   # a 1-bit count cannot exceed one lane
            clamped = self.i.payload.count
        read_valid = valid = stage("read_valid", 1, self.i.valid)
        count = stage("read_count", range(lanes + 1), clamped)
        last = stage("read_last", 1, self.i.payload.last)
        read_bank = stage("read_bank", 1, banks.bank)
        # A block RAM's read data comes late in the cycle (about 6 ns): register it alone.
        ranks = [stage(f"rank{lane}", 8, reads[lane].data) for lane in range(lanes)]
        valid = stage("rank_valid", 1, valid)
        count = stage("rank_count", range(lanes + 1), count)
        last = stage("rank_last", 1, last)
        # The beat's bank's areas, taken into registers beside its ranks, so stage 2
        # reads flip-flops as with one bank. Writes wait while a beat of the bank that
        # became idle is still in the read stage (its areas not yet taken).
        areas = [{"suffix_bits": stage(f"rank_suffix_bits{index}", 4, Mux(
                      read_bank, area_registers.entries[8 + index].suffix_bits,
                      area_registers.entries[index].suffix_bits)),
                  "base": stage(f"rank_base{index}", 9, Mux(
                      read_bank, area_registers.entries[8 + index].base,
                      area_registers.entries[index].base))}
                 for index in range(8)]
        m.d.comb += self.i_config.ready.eq(
            ~banks.pending & ~(read_valid & (read_bank != banks.active)))

        # 2: each lane's area, suffix, pad and length (0 past `count`). Areas take
        # consecutive ranks, so a rank's area is the last one whose base is at or below it
        # (an empty area shares its base with the next). What depends on the area
        # registers alone (k clamped to the longest suffix, the pad 8 - k, the length) is
        # worked out once for all lanes, beside the rank's subtractions.
        pads, lengths = [], []
        for index in range(8):
            bits = Signal(4, name=f"suffix_bits_{index}")
            m.d.comb += bits.eq(Mux(areas[index]["suffix_bits"] > 8, 8,
                                    areas[index]["suffix_bits"]))
            pad = Signal(4, name=f"pad_{index}")
            m.d.comb += pad.eq(8 - bits)
            pads.append(pad)
            lengths.append(3 + bits)
        fields = []
        for lane in range(lanes):
            rank = ranks[lane]
            differences = [Signal(10, name=f"difference{lane}_{index}") for index in range(8)]
            m.d.comb += [difference.eq(rank - areas[index]["base"])
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
        chunk, length, beside = concatenation_tree(codes, stage, {"valid": valid, "last": last})
        valid, last = beside["valid"], beside["last"]
        m.d.comb += [
            packer.i.valid.eq(valid),
            packer.i.payload.bits.eq(chunk),
            packer.i.payload.length.eq(length),
            packer.i.payload.last.eq(last),
        ]
        return m


#: The shortest QLC code: a 3-bit prefix and no suffix.
_MIN_CODE_LENGTH = 3


class QlcDecoder(_QlcBlock):
    """QLC decoder: ``word_width``-bit words in, up to ``lanes`` e4m3 symbols a cycle out.

    Parameters as :class:`QlcEncoder`. Ports: ``i`` (:func:`word_layout` words), ``o``
    (:func:`symbol_layout` beats with ``error``), ``i_config`` (table writes).

    How it works. The only recurrence is where the next group of ``lanes`` codes starts.
    Before the loop, each word gets, at each of its bit positions ``x``, a precomputed
    *jump target*: where the code ``M`` codes after the one at ``x`` starts (``M``, the
    jump, is 1 for 1 and 2 lanes, else ``lanes / 2``; pointer jumping, ``t2[x] =
    t1[t1[x]]``, from code lengths that a per-position copy of the area table gives).
    Words wait in a window of word-aligned slots; the loop holds a binary bit position
    in it and takes ``lanes / M`` jumps a cycle, each a mux of precomputed targets, no
    adder and no shift; the window drops its oldest word when the position passes it.
    After the loop, a pipeline finds each lane's code (the lanes inside a jump, one
    code length at a time), reads its area, checks it, and reads the rank-to-symbol table
    (a block RAM with a registered read).

    Latency (cycles from a word's transfer to the first output transfer that carries
    something of it, no stalls): :attr:`latency`, for a word that starts a frame with the
    next word right behind it; 8, 9, 11, 16 and 25 cycles at 1, 2, 4, 8 and 16 lanes and the
    default word width (the queue and the jump targets want the next word; the lanes
    inside a jump take 2 cycles each). Throughput ``lanes`` symbols a cycle while codes
    average at most ``word_width / lanes`` bits (less a few cycles at each frame end). A
    beat is sent when all lanes are full or the frame ends; an empty frame gives one beat
    with ``count = 0, last = 1``. Under backpressure on ``o`` every
    stage after the loop holds, the loop and the window stop, and the input queue fills;
    ``i.ready`` is a register, so it never depends on ``o.ready``.

    Bad input (``docs/bitstream.md``, "Faults in words"): a non-final word whose
    ``bits`` is not ``word_width``, or a word whose ``bits`` exceeds it, is a fault at the
    frame position where the word's bits begin (:class:`~.bitpack.WordQueue`). Codes
    are decoded up to the first word fault, invalid code (a suffix past its area's size)
    or code that does not end within the frame's bits; then the frame ends with
    ``error = 1, last = 1`` in the beat that would have held the next symbol (a full
    beat of good symbols is followed by a beat of ``count = 0``). The rest of the frame,
    up to and including its ``last`` word, is dropped; the next frame decodes normally.

    Reset: clears stream state (the queue, the window, the loop and the pipeline: a frame
    in flight is lost, and the next word starts a frame) and never touches a table: the
    rank-to-symbol table and the area copies keep what was last loaded. On an FPGA the
    tables come up with their elaboration-time contents; on an ASIC a memory or reset-less
    flop has no defined power-up contents, so load every table after power-up there.
    """

    def __init__(self, *, lanes=1, word_width=None, tables=None):
        super().__init__(decoder_signature(config_layout), lanes=lanes,
                         word_width=word_width, tables=tables)

    @property
    def jump(self):
        """Codes per precomputed jump (``M``); the loop takes ``lanes / jump`` a cycle."""
        lanes, width = self._lanes, self._word_width
        jump = 1 if lanes <= 2 else lanes // 2
        # A word's jump targets come from that word and the next one.
        while jump > 1 and width + MAX_CODE_LENGTH * (jump - 1) + 2 > 2 * width:
            jump //= 2
        return jump

    @property
    def latency(self):
        """Cycles from the transfer of a frame's first word to the first output transfer,
        with the next word right behind it and no stalls."""
        # Word to queue (1), queue to targets (1, and 1 per doubling after the first),
        # window (1), loop (1), pipeline (2 per code of a jump, plus 1) and the table
        # read; plus a word for each further window slot the first group touches.
        span = MAX_CODE_LENGTH * self._lanes
        doublings = (self.jump - 1).bit_length()
        return (8 + max(0, doublings - 1) + 2 * (self.jump - 1)
                + (span - 1) // self._word_width)

    def _geometry(self):
        return window_geometry(self._word_width, self._lanes, self.jump, MAX_CODE_LENGTH)

    def elaborate(self, platform):
        from amaranth.hdl import Cat, Const, Value
        from amaranth.lib.memory import Memory

        from .bitpack import WordQueue

        m = Module()
        W, N, M, S, span, last_start, Q = self._geometry()
        pos_width = (Q * W).bit_length()            # a bit position in the window
        target_width = (W - 1 + MAX_CODE_LENGTH * M).bit_length()   # a target in a word

        # -- banks, the tables: the rank-to-symbol block RAM, copies of the areas in LUT RAM
        in_frame = Signal()          # the queue's head is inside a frame
        # A switch takes effect where the queue's head starts a frame that came in after
        # it was asked for (so a frame whose words all wait in the queue keeps its bank).
        m.submodules.queue = queue = WordQueue(word_width=W)
        banks = self._banks(m, ~in_frame & ~queue.before_mark)
        m.d.comb += queue.mark.eq(banks.requested)
        # ``i_config.ready`` is a register (the table writes then hang off no logic): high
        # next cycle when no switch will be pending and no stage now holds work of the
        # bank that will be idle (work that enters is of the active bank), so it rises a
        # cycle after the last such work leaves.
        ready = Signal(init=1)
        m.d.comb += self.i_config.ready.eq(ready)
        in_flight = []               # (valid, bank) of every stage after the queue
        config = self.i_config.payload
        table_reads = two_bank_table(
            m, "table", self.i_config, shape=8,
            init=[int(entry) for entry in self.code.rank_to_symbol], read_ports=N,
            idle_bank=~banks.active, hit=config.addr < 256, index=config.addr)
        areas = _area_entries(self.code)
        area_write, area_index = self._area_write(banks.active)
        # A suffix width over 8 (not a layout) is taken as 8, so every code has a length
        # of 3..11 and the loop moves on whatever the tables hold.
        written = area_layout(config.data)
        suffix_bits = Signal(4)
        m.d.comb += suffix_bits.eq(Mux(written.suffix_bits > 8, 8, written.suffix_bits))

        # A lane's copy holds, instead of the area's size, its *limit*: size << (8 - k).
        # A code's 8 bits after its prefix are below the limit exactly when its suffix is
        # below the size, so the check needs no shift first.
        lane_area_layout = data.StructLayout({"suffix_bits": 4, "base": 9, "limit": 9})
        limit = Signal(9)
        m.d.comb += limit.eq(written.size << (8 - suffix_bits)[:4])
        lane_area_value = Cat(suffix_bits, written.base, limit)

        def area_table(name, *, whole):
            """A copy of the 8 areas of both banks (the bank in the top address bit),
            loaded by the same config writes, with one asynchronous read port: a lane's
            entry, or only the suffix width."""
            if whole:
                init = [{"suffix_bits": entry["suffix_bits"], "base": entry["base"],
                         "limit": entry["size"] << (8 - entry["suffix_bits"])}
                        for entry in areas]
            else:
                init = [entry["suffix_bits"] for entry in areas]
            memory = Memory(shape=lane_area_layout if whole else 4, depth=16, init=init * 2)
            m.submodules[name] = memory
            write = memory.write_port()
            m.d.comb += [write.en.eq(area_write), write.addr.eq(area_index),
                         write.data.eq(lane_area_value if whole else suffix_bits)]
            return memory.read_port(domain="comb")

        def prefix_of(bits, bank):
            """The area a code's first 3 bits (frame order) name, in ``bank``."""
            return Cat(bits[2], bits[1], bits[0], bank)

        # -- input: word faults, then the queue ------------------------------------------
        wiring.connect(m, wiring.flipped(self.i), queue.i)
        head = queue.head
        with m.If(queue.take):
            m.d.sync += in_frame.eq(~head.end)

        # -- jump targets at every bit position of the head word ---------------------------
        # The code ``level`` codes after the one at x starts at x + 3 * level + excess[x],
        # excess 0 .. 8 * level. Level 1: the suffix width of the area x's prefix names;
        # level 2l: excess[x] + excess[x + 3l + excess[x]] (a mux the excess selects, no
        # subtraction). The targets are relative to the head word's first bit.
        bits = Cat(frame_order(head.data), frame_order(queue.after.data))
        excess = []
        for position in range(W + MAX_CODE_LENGTH * (M - 1)):
            read = area_table(f"length{position}", whole=False)
            m.d.comb += read.addr.eq(prefix_of(bits[position:position + 3], banks.bank))
            excess.append(read.data)
        # The word travels with its targets; from level 4 on, a register stage between
        # levels, so a cycle holds one pick and one add. ``ready`` flows back from the
        # window; a stage loads when it is empty or its word moves on.
        word = {"end": head.end, "fault": head.fault, "bits": head.bits, "data": head.data,
                "bank": banks.bank}
        valid = queue.head_ready
        loads = []                                   # each stage's load enable, in order
        level = 1
        while level < M:
            if level > 1:
                here = Signal(name=f"level{level}_valid")
                load = Signal(name=f"level{level}_load")
                registered = {key: Signal.like(value, name=f"level{level}_{key}")
                              for key, value in word.items()}
                kept = [Signal.like(value, name=f"level{level}_excess{position}")
                        for position, value in enumerate(excess)]
                with m.If(load):
                    m.d.sync += here.eq(valid)
                    m.d.sync += [registered[key].eq(value) for key, value in word.items()]
                    m.d.sync += [register.eq(value) for register, value in zip(kept, excess)]
                loads.append((load, here))
                in_flight.append((here, registered["bank"]))
                valid, word, excess = here, registered, kept
            spread = (MAX_CODE_LENGTH - _MIN_CODE_LENGTH) * level      # excess 0 .. spread
            further = [
                pick(m, excess[position + _MIN_CODE_LENGTH * level:][:spread + 1],
                      excess[position], len(excess[position]), f"further{level}_{position}")
                for position in range(W + MAX_CODE_LENGTH * (M - 2 * level))]
            excess = [Value.cast(own + more) for own, more in zip(excess, further)]
            level *= 2
        targets = [position + _MIN_CODE_LENGTH * M + own for position, own in
                   zip(range(W), excess)]

        # One register stage between the targets and the window: a slot loads from
        # flip-flops, so the targets' logic is not copied for each slot.
        slot_layout = data.StructLayout({
            "valid": 1, "bank": 1, "end": 1, "fault": 1, "bits": head.bits.shape(), "data": W,
            "targets": data.ArrayLayout(target_width, W)})
        prepared = Signal(slot_layout)
        take = Signal()                              # the window takes the prepared word
        load = prepared_load = Signal()
        with m.If(load):
            m.d.sync += [prepared.valid.eq(valid), prepared.bank.eq(word["bank"]),
                         prepared.end.eq(word["end"]),
                         prepared.fault.eq(word["fault"]), prepared.bits.eq(word["bits"]),
                         prepared.data.eq(word["data"])]
            m.d.sync += [prepared.targets[position].eq(targets[position])
                         for position in range(W)]
        with m.Elif(take):
            m.d.sync += prepared.valid.eq(0)
        for stage_load, stage_valid in reversed(loads):
            m.d.comb += stage_load.eq(~stage_valid | load)
            load = stage_load
        m.d.comb += queue.take.eq(queue.head_ready & load)

        # -- the window and the loop (:func:`~.window.jump_loop`) ---------------------------
        loop = jump_loop(m, prepared=prepared, take=take, output=self.o, word_width=W,
                         depth=Q, groups=S, jump=M, min_length=_MIN_CODE_LENGTH,
                         max_length=MAX_CODE_LENGTH, last_start=last_start, span=span,
                         pos_width=pos_width)
        slots, jumps, group_end, step, done, advance = (
            loop.slots, loop.jumps, loop.group_end, loop.step, loop.done, loop.advance)
        # Where a group takes at most a third of two words (1 lane at the default width),
        # the prepared word is replaced only when it is sure to go into the window (its
        # last slot is free) or there is none, from registers alone; ``take`` also follows
        # the loop (a full window that drops a slot), the longest path back to the queue.
        # A word taken that way leaves ``prepared`` empty for a cycle, and two slots
        # dropped in a row leave the position at most ``W - 1 + 2 * span - 2 * W``, so
        # the group after them needs no word that is not in: no cycle is lost.
        if 3 * span <= 2 * W + 1:
            m.d.comb += prepared_load.eq(~prepared.valid | ~slots[-1].valid)
        else:
            m.d.comb += prepared_load.eq(~prepared.valid | take)
        end_known, end_pos, end_fault = loop.end_known, loop.end_pos, loop.end_fault

        # -- after the loop: one pipeline, every stage moves on ``advance`` ------------------
        def stage(name, value):
            register = Signal.like(value, name=name) if isinstance(value, Signal) \
                else Signal(len(value), name=name)
            with m.If(advance):
                m.d.sync += register.eq(value)
            return register

        # Frame facts that travel with a group.
        ctrl = {"valid": step | done, "done": done, "end_known": end_known,
                "end_pos": end_pos, "fault": end_fault, "group_end": group_end,
                "bank": slots[0].bank}

        def restage(prefix, ctrl):
            """``ctrl`` in the next stage's registers, named ``prefix_<key>``; the stage's
            valid and bank are in flight."""
            ctrl = {key: stage(f"{prefix}_{key}", value) for key, value in ctrl.items()}
            in_flight.append((ctrl["valid"], ctrl["bank"]))
            return ctrl

        ctrl = restage("group", ctrl)
        window_bits = stage("group_bits", Cat(*[frame_order(slot.data) for slot in slots]))
        subs = [stage(f"group_jump{index}", at) for index, at in enumerate(jumps[:S])]

        def forward(name, values):
            return [stage(f"{name}{index}", value) for index, value in enumerate(values)]

        # Each jump's codes, aligned to its first code.
        segment_width = MAX_CODE_LENGTH * M
        segments = forward("segment", [
            bits_at(window_bits, at, segment_width, last_start + MAX_CODE_LENGTH * M * index)
            for index, at in enumerate(subs)])
        subs = forward("segment_at", subs)
        ctrl = restage("segment", ctrl)

        # Lane M * sub + i is code i of jump ``sub``: one code length at a time.
        lanes = [None] * N
        offsets = [Const(0, segment_width.bit_length()) for _ in range(S)]
        for i in range(M):
            if i == 0:
                codes = [segment[:MAX_CODE_LENGTH] for segment in segments]
            else:
                codes = forward(f"code{i}_", [
                    bits_at(segment, offset, MAX_CODE_LENGTH, MAX_CODE_LENGTH * i)
                    for segment, offset in zip(segments, offsets)])
                segments = forward(f"code{i}_segment", segments)
                subs = forward(f"code{i}_at", subs)
                offsets = forward(f"code{i}_offset", offsets)
                ctrl = restage(f"code{i}", ctrl)
                lanes = [None if lane is None else
                         {key: stage(f"code{i}_lane{index}_{key}", value)
                          for key, value in lane.items()}
                         for index, lane in enumerate(lanes)]
            for sub in range(S):
                lane = M * sub + i
                code = codes[sub]
                read = area_table(f"area{lane}", whole=True)
                m.d.comb += read.addr.eq(prefix_of(code, ctrl["bank"]))
                entry = read.data
                field = code[3:][::-1]            # the 8 bits after the prefix, MSB first
                at = Signal(pos_width + 1, name=f"lane{lane}_at")
                m.d.comb += at.eq(subs[sub] + offsets[sub])
                # the bits left in the frame from the code's start, beside the table read
                room = Signal(range(-(1 << pos_width) - 1, 1 << pos_width), name=f"room{lane}")
                m.d.comb += room.eq(ctrl["end_pos"] - at)
                present = ~ctrl["end_known"] | (room > 0)
                complete = ~ctrl["end_known"] | (room >= _MIN_CODE_LENGTH + entry.suffix_bits)
                # (the rank, base + suffix, is added in the beat's stage)
                lanes[lane] = {"present": present,
                               "good": present & complete & (field < entry.limit),
                               "base": entry.base,
                               "suffix": field >> (8 - entry.suffix_bits)[:4]}
                offsets[sub] = (offsets[sub] + _MIN_CODE_LENGTH
                                + entry.suffix_bits)[:len(offsets[sub])]
            ctrl = restage(f"lanes{i}", ctrl)
            segments = forward(f"lanes{i}_segment", segments)
            subs = forward(f"lanes{i}_at", subs)
            offsets = forward(f"lanes{i}_offset", offsets)
            lanes = [None if lane is None else
                     {key: stage(f"lanes{i}_lane{index}_{key}", value)
                      for key, value in lane.items()}
                     for index, lane in enumerate(lanes)]

        # The beat: symbols up to the first lane that is not good; the frame ends there,
        # with an error unless that lane is past the frame's end in a frame with no fault.
        beat_count, beat_last, beat_error, dropping = beat_end(m, lanes, ctrl, advance)
        for lane, read in zip(lanes, table_reads):
            m.d.comb += [read.addr.eq(Cat((lane["base"] + lane["suffix"])[:8], ctrl["bank"])),
                         read.en.eq(advance)]
        with m.If(advance):
            m.d.sync += [
                self.o.valid.eq(ctrl["valid"] & ~dropping),
                self.o.payload.count.eq(beat_count),
                self.o.payload.last.eq(beat_last),
                self.o.payload.error.eq(beat_error),
            ]
        for index, read in enumerate(table_reads):
            m.d.comb += self.o.payload.symbols[index].eq(
                Mux(index < self.o.payload.count, read.data, 0))

        # Words and groups of the bank that became idle are still in flight: hold config
        # writes (the beat in ``o`` has read its symbols already).
        in_flight += [(prepared.valid, prepared.bank)]
        in_flight += [(slot.valid, slot.bank) for slot in slots]
        flip = banks.bank != banks.active            # the switch is made this cycle
        pending = Mux(flip, 0, banks.pending | banks.requested)
        old_in_use = banks.idle_in_use(in_flight, active=banks.bank)
        m.d.sync += ready.eq(~pending & ~old_in_use)
        return m


# -- on the link ------------------------------------------------------------------------

class QlcLinkHardware(LinkHardware):
    """QLC in a link stream: a 1-lane :class:`QlcDecoder`, and for an encoder a code
    table, a 1-lane :class:`~linkcodec.rtl.huffman.HuffmanEncoder` holding the QLC code
    (its bitstream, bit for bit: :func:`~linkcodec.rtl.huffman.check_encoder_code`), with
    none of :class:`QlcEncoder`'s rank-to-code logic in each stream: the transmitter's
    loader works each symbol's code out once for every stream (``"codes"``). The link
    holds the code made canonical (:func:`~linkcodec.golden.qlc.canonical_qlc`)."""

    name, tx_loader_block = "qlc", "codes"
    encoder_config_layout, encoder_switch = huffman.config_layout, huffman.SWITCH_ADDR
    decoder_config_layout, decoder_switch = config_layout, SWITCH_ADDR

    def tables(self, tables=None):
        return canonical_qlc(QlcCode.base() if tables is None else tables)

    def code_lengths(self, tables):
        return [int(length) for length in tables.length_of]

    def block(self, kind, tables):
        if kind == "encoder":
            return huffman.HuffmanEncoder(lanes=1, word_width=LINK_WORD_WIDTH, tables=tables,
                                          max_length=MAX_CODE_LENGTH)
        return QlcDecoder(lanes=1, word_width=LINK_WORD_WIDTH, tables=tables)
