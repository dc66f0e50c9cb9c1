"""Single-stage Huffman encoder and decoder for FP8 e4m3 symbols.

The bitstream is the golden model's (:mod:`linkcodec.golden.huffman`; ``docs/huffman.md``
and ``docs/bitstream.md``, "Huffman frames"): a frame is its symbols' code words,
MSB first, carried in the same words as QLC's, with the same frame end and the same word
faults. Both blocks hold a *canonical* codebook (codes up to :data:`MAX_CODE_LENGTH` bits)
in two banks, so a new codebook loads while the other one works.

Config port (``i_config``, one write per transfer):

=====================  ===================================================================
``addr``               meaning of ``data`` (written into the *idle* bank)
=====================  ===================================================================
``0 .. 255``           encoder: symbol ``addr``'s :data:`code_entry_layout` (its code
                       MSB-aligned in 15 bits, and its length); decoder: the symbol at
                       canonical index ``addr`` (symbols in (length, symbol) order)
``256 + l``            decoder only, ``l`` = 1..15: :data:`length_entry_layout` of
                       length ``l`` (``limit``: where the codes of length at most ``l``
                       end, MSB-aligned in 15 bits; ``offset``: index of the first code
                       of length ``l`` minus that code, mod 256)
:data:`SWITCH_ADDR`    any ``data``: switch banks at the next frame boundary
=====================  ===================================================================

**Banks.** Writes go to the idle bank. A write to :data:`SWITCH_ADDR` asks for a switch;
it takes effect at the next frame boundary: before the first symbol (encoder) or word
(decoder) of the next frame, at once if the block is between frames. So a codebook swap
costs no idle cycle. While a switch is pending (and, in the decoder, while frames of the
bank that became idle are still in flight) ``i_config.ready`` is low, so the next
codebook's writes cannot reach a bank in use. :func:`config_writes` makes the writes
that load a codebook and switch to it.

**Reset** (``rst``) clears stream state and never touches a table: both banks of every
table and the active-bank select keep what was last loaded, or their elaboration-time
contents (bank 0 active) if nothing was, so an encoder and its decoder reset together
need no reload. A bank switch still pending at reset takes effect at the reset: a reset
is a frame boundary, and so both ends of a link reset together end up on the same bank
whether or not either had reached its frame end.
"""

import numpy as np
from amaranth.hdl import Cat, Const, Module, Mux, ResetSignal, Signal, Value
from amaranth.lib import data, wiring

from ..golden.huffman import HuffmanCodebook, canonical_codes
from .bitpack import (BitPacker, WordQueue, bits_at, concatenation_tree, frame_order,
                      mux_tree, pipeline_stage, word_entry_layout)
from .block import LanedBlock, decoder_signature, encoder_signature
from .payload import check_lanes, config_write_layout
from .table import ConfigRegisters, ConfigTable
from .window import beat_run, drop_after_last, frame_end, window_ready

__all__ = [
    "MAX_CODE_LENGTH", "MIN_DECODER_WORD_WIDTH", "SWITCH_ADDR", "LENGTH_BASE", "code_entry_layout",
    "length_entry_layout", "config_layout", "default_word_width", "default_codebook",
    "check_codebook", "config_writes", "switch_write", "HuffmanEncoder", "HuffmanDecoder",
]

#: The longest code the hardware takes (the golden model's default limit).
MAX_CODE_LENGTH = 15

#: An encoder table entry: the code MSB-aligned in 15 bits, and its length (1..15).
code_entry_layout = data.StructLayout({"code": MAX_CODE_LENGTH, "length": 4})

#: A decoder per-length entry (see the module docstring).
length_entry_layout = data.StructLayout({"limit": MAX_CODE_LENGTH + 1, "offset": 8})

#: A write to a block's tables.
config_layout = config_write_layout(addr_width=9, data_width=length_entry_layout.size)

#: Config address of the decoder's per-length entry of length 0 (entry ``l`` is at
#: ``LENGTH_BASE + l``; entry 0 is unused).
LENGTH_BASE = 256

#: A write here asks for a bank switch at the next frame boundary.
SWITCH_ADDR = 511


#: The narrowest word the decoder takes: its prepare stage reads the ``MAX_CODE_LENGTH``
#: bits at every bit position of the head word from that word and the next one alone.
MIN_DECODER_WORD_WIDTH = 16


def default_word_width(lanes):
    """The word width a block gets unless told otherwise: ``8 * lanes``, at least 16 (as
    QLC's blocks)."""
    return max(16, 8 * check_lanes(lanes))


def default_codebook():
    """The codebook both blocks hold at reset: every length 8, so a symbol's code is its
    own value (canonical, complete)."""
    return HuffmanCodebook(np.full(256, 8, dtype=np.uint8), id="hc-identity8")


def check_codebook(codebook):
    """``codebook`` if the hardware can hold it: a :class:`HuffmanCodebook` whose codes
    are canonical for its lengths, none longer than :data:`MAX_CODE_LENGTH`; else a
    ``TypeError`` or ``ValueError`` saying why."""
    if not isinstance(codebook, HuffmanCodebook):
        raise TypeError(f"codebook must be a HuffmanCodebook, not {type(codebook).__name__}")
    longest = int(codebook.lengths.max())
    if longest > MAX_CODE_LENGTH:
        raise ValueError(f"codebook {codebook.id} has a {longest}-bit code; the hardware "
                         f"takes codes of at most {MAX_CODE_LENGTH} bits")
    canonical = canonical_codes(codebook.lengths)
    differ = np.flatnonzero(canonical != codebook.codes)
    if differ.size:
        symbol = int(differ[0])
        length = int(codebook.lengths[symbol])
        raise ValueError(f"codebook {codebook.id} is not canonical: symbol {symbol} has code "
                         f"{int(codebook.codes[symbol]):0{length}b}, the canonical code for "
                         f"its lengths is {int(canonical[symbol]):0{length}b} (the "
                         f"hardware decodes canonical codebooks only; `linkcodec codebook "
                         f"build` writes them)")
    return codebook


def _encoder_entries(codebook):
    lengths = codebook.lengths.astype(int)
    codes = codebook.codes.astype(int)
    return [{"code": int(code) << (MAX_CODE_LENGTH - int(length)), "length": int(length)}
            for code, length in zip(codes, lengths)]


def _decoder_tables(codebook):
    """``(symbols, entries)``: the symbols in canonical order and the per-length entries
    (a ``dict`` per length 0..15; entry 0 unused)."""
    lengths = codebook.lengths.astype(int)
    order = np.lexsort((np.arange(256), lengths))
    counts = np.bincount(lengths, minlength=MAX_CODE_LENGTH + 1)
    entries, limit, base = [{"limit": 0, "offset": 0}], 0, 0
    for length in range(1, MAX_CODE_LENGTH + 1):
        first = limit >> (MAX_CODE_LENGTH - length)
        limit += int(counts[length]) << (MAX_CODE_LENGTH - length)
        entries.append({"limit": limit, "offset": (base - first) % 256})
        base += int(counts[length])
    return [int(symbol) for symbol in order], entries


def switch_write():
    """The config write that asks for a bank switch."""
    return {"addr": SWITCH_ADDR, "data": 0}


def config_writes(codebook, *, block, switch=True):
    """The ``i_config`` writes (``dict`` of ``addr``, ``data``) that load ``codebook``
    into the idle bank, then (``switch``) the switch write that makes it the working
    one at the next frame boundary.

    ``block`` is ``"encoder"`` or ``"decoder"``. A codebook that is not canonical, or has
    a code longer than 15 bits, is refused (:func:`check_codebook`).
    """
    if block not in ("encoder", "decoder"):
        raise ValueError(f"block must be 'encoder' or 'decoder', not {block!r}")
    check_codebook(codebook)
    if block == "encoder":
        writes = [{"addr": symbol, "data": code_entry_layout.const(entry).as_bits()}
                  for symbol, entry in enumerate(_encoder_entries(codebook))]
    else:
        symbols, entries = _decoder_tables(codebook)
        writes = [{"addr": index, "data": symbol} for index, symbol in enumerate(symbols)]
        writes += [{"addr": LENGTH_BASE + length,
                    "data": length_entry_layout.const(entry).as_bits()}
                   for length, entry in enumerate(entries) if length]
    if switch:
        writes.append(switch_write())
    return writes


class _HuffmanBlock(LanedBlock):
    def __init__(self, signature, *, lanes, word_width, tables, allowed, min_word_width=8):
        def check(lanes, word_width):
            if word_width < min_word_width:
                raise ValueError(f"word_width must be at least {min_word_width}, not "
                                 f"{word_width}: {type(self).__name__} reads a code's "
                                 f"{MAX_CODE_LENGTH} bits from a word and the one behind it")
            if tables is not None and not isinstance(tables, HuffmanCodebook):
                raise TypeError(f"tables must be a HuffmanCodebook, not "
                                f"{type(tables).__name__}")
            return check_codebook(default_codebook() if tables is None else tables)

        super().__init__(signature, lanes=lanes, word_width=word_width,
                         default_word_width=default_word_width, allowed_lanes=allowed,
                         check=check)

    @property
    def codebook(self):
        """The codebook both banks hold from elaboration (at power-up on an FPGA) until
        one is loaded through ``i_config``; a reset does not bring it back."""
        return self.tables

    def _table(self, m, name, *, shape, init, read_ports, idle_bank, hit, index):
        """A two-bank table (bank in the top address bit) with registered reads, whose
        config writes at ``index`` (when ``hit``) go to ``idle_bank``."""
        depth = len(init)
        table = ConfigTable(shape=shape, depth=2 * depth, init=list(init) * 2,
                            read_ports=read_ports, config_layout=config_layout,
                            registered=True)
        m.submodules[name] = table
        width = (depth - 1).bit_length()
        m.d.comb += [table.config.valid.eq(self.i_config.valid & self.i_config.ready & hit),
                     table.config.payload.addr.eq(Cat(index[:width], idle_bank)),
                     table.config.payload.data.eq(self.i_config.payload.data)]
        return table.read

    def _switch(self, m, boundary):
        """The bank logic: ``(active, bank, pending)``, the bank in use, the bank of work
        that starts this cycle (a pending switch takes effect when ``boundary``) and the
        pending flag.

        ``active`` is a table (it names the working codebook), so it is reset-less; a
        reset is a frame boundary, so a switch pending at reset takes effect there.
        ``pending`` is stream state and resets to 0, after that switch."""
        active = Signal(reset_less=True)
        pending = Signal()
        switch_now = Signal()
        bank = Signal()
        m.d.comb += [switch_now.eq(pending & boundary), bank.eq(active ^ switch_now)]
        requested = (self.i_config.valid & self.i_config.ready
                     & (self.i_config.payload.addr == SWITCH_ADDR))
        # (``bank`` leaves the reset out: nothing read in a reset cycle is used.)
        flip = Signal()
        m.d.comb += flip.eq(pending & (boundary | ResetSignal(allow_reset_less=True)))
        # Assigned every cycle, not under an If: Verilog then computes the next value
        # with a continuous assignment, which a 4-state simulator evaluates at time 0.
        # Under an If it is an `always @*` block, which nothing here ever wakes (the
        # register has no reset to change), so the register would latch X at its
        # first clock edge and keep it.
        m.d.sync += active.eq(active ^ flip)
        with m.If(flip):
            m.d.sync += pending.eq(0)
        with m.Elif(requested):
            m.d.sync += pending.eq(1)
        return active, bank, pending


class HuffmanEncoder(_HuffmanBlock):
    """Huffman encoder: ``lanes`` e4m3 symbols a cycle in, ``word_width``-bit words out.

    Parameters (keyword-only): ``lanes`` (1, 2, 4 or 8), ``word_width`` (a multiple of 8;
    default :func:`default_word_width`), ``tables`` (the canonical
    :class:`~linkcodec.golden.huffman.HuffmanCodebook` both banks hold until loaded; default
    :func:`default_codebook`).

    Ports: ``i`` (:func:`symbol_layout` beats; a frame ends with the beat whose ``last``
    is set, and may be empty: one beat with ``count = 0, last = 1``), ``o``
    (:func:`word_layout` words, see ``docs/bitstream.md``), ``i_config`` (table writes
    and the bank switch, see the module docstring).

    A feed-forward pipeline in front of a :class:`~.bitpack.BitPacker`, every register
    moving while the packer's registered ``i.ready`` is high:

    1. the (code, length) table is read, a registered read per lane at ``{bank,
       symbol}`` (two banks of 256 entries, a block RAM); the code is stored
       MSB-aligned, so no shift follows;
    2. the read data is registered alone (a block RAM's data comes late in the cycle);
    3. lanes past ``count`` get length 0 and code 0;
    4. the lanes' codes are concatenated in a tree, a register per level
       (:func:`~.bitpack.concatenation_tree`, shared with the QLC encoder);
    5. the packer aligns the chunk and queues the words it completes.

    Latency: :attr:`latency`, ``5 + log2(lanes)`` cycles from a beat that completes a word
    (or ends its frame) to that word, no stalls. Throughput ``lanes`` symbols a cycle
    while codes average at most ``word_width / lanes`` bits; frames, and codebook swaps
    between them, follow each other with no idle cycle. Under backpressure on ``o`` the
    packer's queue fills, then ``i.ready`` (a register) falls and the whole pipeline
    holds; ``i.ready`` never depends on ``o.ready``. Every byte is a valid symbol; a
    ``count`` above ``lanes`` is taken as ``lanes``.

    Reset: clears stream state (the pipeline, the packer's partial word and queue: a frame
    in flight is lost, and the next beat starts a frame) and never touches a table: both
    banks and the active-bank select keep what was last loaded. A bank switch still
    pending at reset takes effect at the reset (a reset is a frame boundary), in the
    encoder and decoder alike. On an FPGA the tables come up with their elaboration-time
    contents; on an ASIC a memory or reset-less flop has no defined power-up contents, so
    load every table after power-up there.
    """

    def __init__(self, *, lanes=1, word_width=None, tables=None):
        super().__init__(encoder_signature(config_layout), lanes=lanes,
                         word_width=word_width, tables=tables, allowed=(1, 2, 4, 8))

    @property
    def latency(self):
        """Cycles from a beat that completes a word (or ends its frame) to that word."""
        # read, read data, mask, one per tree level, the packer's two stages
        return 5 + self._lanes.bit_length() - 1

    def elaborate(self, platform):
        m = Module()
        lanes = self._lanes

        m.submodules.packer = packer = BitPacker(
            chunk_width=MAX_CODE_LENGTH * lanes, word_width=self._word_width)
        wiring.connect(m, wiring.flipped(self.o), packer.o)
        step = packer.i.ready             # a register: every stage moves while it is high
        m.d.comb += self.i.ready.eq(step)

        # Frame boundary: no beat of a frame taken yet since the last frame's end.
        in_frame = Signal()
        with m.If(self.i.valid & step):
            m.d.sync += in_frame.eq(~self.i.payload.last)
        active, bank, pending = self._switch(m, ~in_frame)
        m.d.comb += self.i_config.ready.eq(~pending)
        config = self.i_config.payload
        reads = self._table(m, "table", shape=code_entry_layout,
                            init=_encoder_entries(self.codebook), read_ports=lanes,
                            idle_bank=~active, hit=config.addr < 256, index=config.addr)

        stage = pipeline_stage(m, step)

        # 1: the table read; the beat's count (clamped) and last travel beside it.
        for lane in range(lanes):
            m.d.comb += [reads[lane].addr.eq(Cat(self.i.payload.symbols[lane], bank)),
                         reads[lane].en.eq(step)]
        if lanes > 1:
            clamped = Mux(self.i.payload.count > lanes, lanes, self.i.payload.count)
        else:
            clamped = self.i.payload.count
        valid = stage("read_valid", 1, self.i.valid)
        count = stage("read_count", range(lanes + 1), clamped)
        last = stage("read_last", 1, self.i.payload.last)

        # 2: the read data, registered alone.
        entries = [stage(f"entry{lane}", code_entry_layout, reads[lane].data)
                   for lane in range(lanes)]
        valid = stage("entry_valid", 1, valid)
        count = stage("entry_count", range(lanes + 1), count)
        last = stage("entry_last", 1, last)

        # 3: lanes past `count` are empty.
        codes = []
        for lane, entry in enumerate(entries):
            used = lane < count
            codes.append((stage(f"code{lane}", MAX_CODE_LENGTH, Mux(used, entry.code, 0)),
                          stage(f"code_length{lane}", range(MAX_CODE_LENGTH + 1),
                                Mux(used, entry.length, 0))))
        valid = stage("code_valid", 1, valid)
        last = stage("code_last", 1, last)

        # 4: the concatenation tree.
        chunk, length, beside = concatenation_tree(codes, stage, {"valid": valid, "last": last})
        m.d.comb += [
            packer.i.valid.eq(beside["valid"]),
            packer.i.payload.bits.eq(chunk),
            packer.i.payload.length.eq(length),
            packer.i.payload.last.eq(beside["last"]),
        ]
        return m


def _pick(candidates, index):
    """``candidates[index]`` as a tree of 2-way muxes on the bits of ``index``; an index
    past the candidates gives 0 (a plain ``Array`` lookup leaves such cases open)."""
    width = max(len(Value.cast(candidate)) for candidate in candidates)
    index = Value.cast(index)
    candidates = list(candidates)[:1 << len(index)]
    picked = mux_tree(candidates, index, width)
    select_width = max(1, (len(candidates) - 1).bit_length())
    if len(index) > select_width:
        picked = Mux(index[select_width:] == 0, picked, 0)
    return picked


class HuffmanDecoder(_HuffmanBlock):
    """Canonical Huffman decoder: ``word_width``-bit words in, up to ``lanes`` e4m3
    symbols a cycle out.

    Parameters as :class:`HuffmanEncoder`, lanes 1, 2 or 4, and ``word_width`` at least
    :data:`MIN_DECODER_WORD_WIDTH` (16: a code's 15 bits at any position of a word must
    lie within it and the next word). Ports: ``i``
    (:func:`word_layout` words), ``o`` (:func:`symbol_layout` beats with ``error``),
    ``i_config`` (table writes and the bank switch, see the module docstring).

    How it works. Canonical decoding, no tree walk: the 15 bits at a bit position, read
    as a number ``w``, start a code of length ``l``, the least with ``w < limit[l]``
    (``limit[l]``: where the codes of length at most ``l`` end, MSB-aligned); ``w >=
    limit[15]`` starts no code (an incomplete codebook). The code is ``w >> (15 - l)``
    and its canonical index ``code + offset[l]`` (mod 256) addresses the symbol table.

    1. Words pass word faults and wait in a :class:`~.bitpack.WordQueue`.
    2. *Prepare*: for every bit position of the head word (with the next word behind it)
       the code length and whether it starts a code at all, from the limits of the
       frame's bank (the bank is chosen here, per frame), registered with the word.
    3. A window of word slots; the only recurrence, the bit position ``start`` in it,
       steps by ``lanes`` chained lengths a cycle (each a mux of the precomputed lengths
       and an add), and the window drops the words the group has passed.
    4. After the loop, a pipeline: each lane's 15 bits are cut from the window, its
       presence and completeness checked against the frame's end; its index worked
       out; the symbol table (two banks, a block RAM) is read with a registered read,
       which the output beat takes.

    Latency: :attr:`latency` cycles from the transfer of a frame's first word to the
    first output transfer, with the next word right behind it and no stalls.
    Throughput: ``lanes`` symbols a cycle while the window keeps up (codes averaging
    at most ``word_width / lanes`` bits): a group waits until every word it may touch is
    in the window. A frame end costs a cycle or two. A beat is sent
    when all lanes are full or the frame ends; an empty frame gives one beat with
    ``count = 0, last = 1``. Under backpressure on ``o`` the pipeline after the loop
    holds, the loop stops and the queue fills; ``i.ready`` is a register, so it never
    depends on ``o.ready``.

    Bad input, as :class:`~.qlc.QlcDecoder` (``docs/bitstream.md``, "Faults in words"):
    a non-final word whose ``bits`` is not ``word_width``, or any word whose ``bits``
    exceeds it, is a fault where the word's bits begin. Codes are decoded up to the first
    word fault, bits that start no code (an incomplete codebook) or code that does not end
    within the frame's bits; then the frame ends with ``error = 1, last = 1`` in the beat
    that would have held the next symbol (a full beat of good symbols is followed by a
    beat of ``count = 0``). The rest of the frame, up to and including its ``last`` word,
    is dropped; the next frame decodes normally.

    Reset: clears stream state (the queue, the window, the loop and the pipeline: a frame
    in flight is lost, and the next word starts a frame) and never touches a table: both
    banks of the symbol table and of the per-length entries, and the active-bank select,
    keep what was last loaded. A bank switch still pending at reset takes effect at the
    reset (a reset is a frame boundary), in the encoder and decoder alike. On an FPGA the
    tables come up with their elaboration-time contents; on an ASIC a memory or reset-less
    flop has no defined power-up contents, so load every table after power-up there.
    """

    def __init__(self, *, lanes=1, word_width=None, tables=None):
        super().__init__(decoder_signature(config_layout), lanes=lanes,
                         word_width=word_width, tables=tables, allowed=(1, 2, 4),
                         min_word_width=MIN_DECODER_WORD_WIDTH)

    @property
    def touched_words(self):
        """Window words a group of ``lanes`` codes can touch (it starts in the first)."""
        W = self._word_width
        return -(-(W - 1 + MAX_CODE_LENGTH * self._lanes) // W)

    @property
    def latency(self):
        """Cycles from the transfer of a frame's first word to the first output transfer,
        with the next words right behind it and no stalls."""
        # queue (1), prepare (1, once the next word is in: +1), slot (1), group (1), cut
        # (1), index and table read (1), output; plus a word a further touched slot.
        return 7 + (self.touched_words - 2)

    def elaborate(self, platform):
        m = Module()
        W, N = self._word_width, self._lanes
        L = MAX_CODE_LENGTH
        T = self.touched_words
        Q = T + 1                                   # one spare slot, so a word waits in it
        pos_width = (Q * W + L * N).bit_length()    # a bit position in the window
        symbols, entries = _decoder_tables(self.codebook)

        # -- banks, config -------------------------------------------------------------
        in_frame = Signal()          # the prepare stage is inside a frame
        active, bank, pending = self._switch(m, ~in_frame)
        old_in_use = Signal()
        m.d.comb += self.i_config.ready.eq(~pending & ~old_in_use)
        config = self.i_config.payload
        table_reads = self._table(m, "table", shape=8, init=symbols, read_ports=N,
                                  idle_bank=~active, hit=config.addr < 256,
                                  index=config.addr)
        m.submodules.lengths = lengths_regs = ConfigRegisters(
            shape=length_entry_layout, depth=32, init=entries * 2, config_layout=config_layout)
        hit = ((config.addr >= LENGTH_BASE) & (config.addr < LENGTH_BASE + 16))
        m.d.comb += [
            lengths_regs.config.valid.eq(self.i_config.valid & self.i_config.ready & hit),
            lengths_regs.config.payload.addr.eq(Cat(config.addr[:4], ~active)),
            lengths_regs.config.payload.data.eq(config.data),
        ]

        def bank_entries(which):
            return [length_entry_layout(Mux(which, lengths_regs.entries[16 + length],
                                            lengths_regs.entries[length]))
                    for length in range(16)]

        # -- input queue and prepare ---------------------------------------------------
        m.submodules.queue = queue = WordQueue(word_width=W)
        wiring.connect(m, wiring.flipped(self.i), queue.i)
        head = queue.head
        bits = Cat(frame_order(head.data), frame_order(queue.after.data))
        limits = [Signal(L + 1, name=f"limit{length}") for length in range(16)]
        m.d.comb += [limit.eq(entry.limit) for limit, entry in zip(limits, bank_entries(bank))]
        slot_layout = data.StructLayout({
            "valid": 1, "bank": 1, "end": 1, "fault": 1,
            "bits": word_entry_layout(W)["bits"].shape, "data": W,
            "lengths": data.ArrayLayout(4, W), "bad": W})
        prepared = Signal(slot_layout)
        load = Signal()
        take = Signal()              # the window takes the prepared word
        m.d.comb += [load.eq(~prepared.valid | take), queue.take.eq(queue.head_ready & load)]
        with m.If(queue.take):
            m.d.sync += in_frame.eq(~head.end)
        with m.If(load):
            m.d.sync += [prepared.valid.eq(queue.head_ready), prepared.bank.eq(bank),
                         prepared.end.eq(head.end), prepared.fault.eq(head.fault),
                         prepared.bits.eq(head.bits), prepared.data.eq(head.data)]
            for position in range(W):
                # A limit of length l is a multiple of 2**(15 - l), so ``w < limit[l]``
                # needs only the first l bits of the window: an l-bit comparison.
                below = [None] + [
                    bits[position:position + code_length][::-1]
                    < limits[code_length][L - code_length:]
                    for code_length in range(1, L + 1)]
                length = Const(L, 4)
                for code_length in reversed(range(1, L + 1)):
                    length = Mux(below[code_length], code_length, length)
                m.d.sync += [prepared.lengths[position].eq(length),
                             prepared.bad[position].eq(~below[L])]

        # -- the window and the loop ---------------------------------------------------
        idle = {"lengths": [1] * W}
        slots = [Signal(slot_layout, name=f"slot{index}", init=idle) for index in range(Q)]
        advance = Signal()           # every stage after the loop moves
        m.d.comb += advance.eq(~self.o.valid | self.o.ready)

        # The first slot that ends a frame, and where the frame's bits end.
        end_known, end_slot, end_pos, end_fault = frame_end(m, slots, W, pos_width)

        start = Signal(range(W))
        ready = Signal()
        m.d.comb += ready.eq(slots[0].valid & window_ready(slots, start, L * N, W))
        step = Signal()
        m.d.comb += step.eq(ready & advance)

        positions = W + L * (N - 1)                 # where a group's codes can start
        lengths = [slots[p // W].lengths[p % W] for p in range(positions)]
        bads = [slots[p // W].bad[p % W] for p in range(positions)]
        chain = [start]
        code_lengths, code_bad = [], []
        for lane in range(N):
            at = Signal(pos_width, name=f"lane{lane}_start")
            m.d.comb += at.eq(chain[-1])
            length = Signal(4, name=f"lane{lane}_length")
            bad = Signal(name=f"lane{lane}_bad")
            m.d.comb += [length.eq(_pick(lengths, at)), bad.eq(_pick(bads, at))]
            chain[-1] = at
            code_lengths.append(length)
            code_bad.append(bad)
            chain.append(at + length)
        group_end = Signal(pos_width)
        m.d.comb += group_end.eq(chain[-1])
        done = Signal()              # this group ends the frame
        m.d.comb += done.eq(end_known & (group_end >= end_pos + end_fault))

        # Slots the group passed: all of them up to the frame's end, or whole words.
        passed_value = 0
        for words in range(1, T):
            passed_value = Mux(group_end >= words * W, words, passed_value)
        drop = Signal(range(Q + 1))
        m.d.comb += drop.eq(Mux(step, Mux(done, end_slot + 1, passed_value), 0))
        with m.If(step):
            m.d.sync += start.eq(Mux(done, 0, group_end - passed_value * W))

        occupied = Signal(range(Q + 1))
        m.d.comb += [occupied.eq(sum(slot.valid for slot in slots)),
                     take.eq(prepared.valid & ~slots[Q - 1].valid)]
        for index in range(Q):
            sources = [slots[index + shift] if index + shift < Q else None
                       for shift in range(Q + 1)]
            moved = Signal(slot_layout, name=f"moved{index}")
            value = Const(0, slot_layout.size)
            for shift, source in enumerate(sources):
                if source is not None:
                    value = Mux(drop == shift, source.as_value(), value)
            m.d.comb += moved.eq(value)
            arrives = take & (occupied - drop == index)
            with m.If(arrives):
                m.d.sync += slots[index].eq(prepared)
            with m.Elif(drop != 0):
                m.d.sync += slots[index].eq(moved)
                with m.If(~moved.valid):
                    m.d.sync += slots[index].valid.eq(0)

        # -- after the loop: every stage moves on ``advance`` -------------------------
        def stage(name, value):
            register = Signal(len(Value.cast(value)), name=name)
            with m.If(advance):
                m.d.sync += register.eq(value)
            return register

        ctrl = {"valid": step, "done": done, "end_known": end_known, "end_pos": end_pos,
                "fault": end_fault, "bank": slots[0].bank}
        ctrl = {key: stage(f"group_{key}", value) for key, value in ctrl.items()}
        window_bits = stage("group_bits", Cat(*[frame_order(slot.data) for slot in slots[:T]]))
        lanes = [{"at": stage(f"group_at{lane}", chain[lane]),
                  "length": stage(f"group_length{lane}", code_lengths[lane]),
                  "bad": stage(f"group_bad{lane}", code_bad[lane])} for lane in range(N)]

        # The bits of each lane's code; whether it is in the frame and complete.
        new_lanes = []
        for lane, fields in enumerate(lanes):
            at, length = fields["at"], fields["length"]
            room = Signal(range(-(1 << pos_width) - 1, 1 << pos_width), name=f"room{lane}")
            m.d.comb += room.eq(ctrl["end_pos"] - at)
            present = ~ctrl["end_known"] | (room > 0)
            good = present & ~fields["bad"] & (~ctrl["end_known"] | (room >= length))
            new_lanes.append({
                "window": stage(f"cut_window{lane}", bits_at(window_bits, at, L)[::-1]),
                "length": stage(f"cut_length{lane}", length),
                "present": stage(f"cut_present{lane}", present),
                "good": stage(f"cut_good{lane}", good)})
        lanes = new_lanes
        group_ctrl = ctrl
        ctrl = {key: stage(f"cut_{key}", value) for key, value in ctrl.items()
                if key in ("valid", "done", "fault", "bank")}

        # The beat: symbols up to the first lane that is not good; the frame ends there,
        # with an error unless that lane is past the frame's end in a frame with no fault.
        run, count, error = beat_run(lanes)
        beat_count = Signal(range(N + 1))
        beat_last = Signal()
        beat_error = Signal()
        m.d.comb += [
            beat_count.eq(count),
            beat_last.eq(ctrl["done"] | ~run),
            beat_error.eq(Mux(ctrl["done"], ctrl["fault"] | error, error)),
        ]
        # the frame's last beat has gone: drop the rest
        dropping = drop_after_last(m, advance, ctrl["valid"], ctrl["done"], beat_last)
        offsets = bank_entries(ctrl["bank"])
        for fields, read in zip(lanes, table_reads):
            code = fields["window"] >> (L - fields["length"])[:4]
            offset = _pick([entry.offset for entry in offsets], fields["length"])
            m.d.comb += [read.addr.eq(Cat((code[:8] + offset)[:8], ctrl["bank"])),
                         read.en.eq(advance)]
        out_bank = Signal()
        with m.If(advance):
            m.d.sync += [
                self.o.valid.eq(ctrl["valid"] & ~dropping),
                self.o.payload.count.eq(beat_count),
                self.o.payload.last.eq(beat_last),
                self.o.payload.error.eq(beat_error),
                out_bank.eq(ctrl["bank"]),
            ]
        for index, read in enumerate(table_reads):
            m.d.comb += self.o.payload.symbols[index].eq(
                Mux(index < self.o.payload.count, read.data, 0))

        # Frames of the bank that became idle are still in flight: hold config writes.
        in_flight = [(prepared.valid, prepared.bank)]
        in_flight += [(slot.valid, slot.bank) for slot in slots]
        in_flight += [(group_ctrl["valid"], group_ctrl["bank"]), (ctrl["valid"], ctrl["bank"]),
                      (self.o.valid, out_bank)]
        old = 0
        for valid, which in in_flight:
            old = old | (valid & (which != active))
        m.d.comb += old_in_use.eq(old)
        return m
