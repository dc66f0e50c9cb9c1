"""Single-stage Huffman encoder and decoder for FP8 e4m3 symbols, and for bf16 values.

The bitstream is the golden model's (:mod:`linkcodec.golden.huffman`; ``docs/huffman.md``
and ``docs/bitstream.md``, "Huffman frames"): a frame is its symbols' code words,
MSB first, carried in the same words as QLC's, with the same frame end and the same word
faults. Both blocks hold a *canonical* codebook (codes up to ``max_length`` bits, a
parameter of :data:`MAX_LENGTHS`, default :data:`MAX_CODE_LENGTH` = 15) in two banks, so
a new codebook loads while the other one works. A shorter limit makes the blocks smaller
(fewer bits a code, fewer positions and comparisons in the decoder) and costs compression
(``docs/huffman.md``, "What each limit costs"); the config writes are the same at every
limit (codes and limits MSB-aligned in 15 bits), so only the check of a codebook's
longest code depends on it.

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
(decoder) of the next frame, at once if the block is between frames. The next frame is
the first that starts at ``i`` after the switch write (a beat or word taken in the same
cycle as the write is before it): a decoder's frame that came in whole before the write
keeps the bank it came in under, even while its words still wait in the decoder's queue
(:class:`~.bitpack.WordQueue` marks the write among them). So a codebook swap
costs no idle cycle (in the decoder, 16 at most when the switch comes just before a frame
boundary: see :class:`HuffmanDecoder` on its length tables). While a switch is pending
(and, in the decoder, while frames of the bank that became idle are still in flight, or
while the working bank's length tables are still being derived from its limits)
``i_config.ready`` is low, so the next codebook's writes cannot reach a bank in use.
:func:`config_writes` makes the writes that load a codebook and switch to it.

**16-bit values** (``value_bits=16, coded_bits=K``, ``docs/huffman.md``, "bf16 values"):
a value's top K bits (its *part*) are coded, its low ``16 - K`` sent raw after the code;
a part without a code of its own goes as the escape code and the whole value. Their
config writes have ``K + 1`` address bits: the encoder's part entries at ``0 .. 2**K -
1``, the decoder's parts by rank there (:func:`split_decoder_config_layout`); the
escape's entry at :func:`split_escape_addr`; the decoder's per-length entries above it
(:func:`split_length_base`); the switch at :func:`split_switch_addr`.

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
from amaranth.lib.memory import Memory

from ..golden.huffman import HuffmanCodebook, canonical_codes, check_split
from ..golden.qlc import QlcCode
from .bitpack import (BitPacker, WordQueue, bits_at, concatenation_tree, frame_order,
                      pipeline_stage)
from .block import LanedBlock, decoder_signature, encoder_signature
from .link_codec import LINK_WORD_WIDTH, LinkHardware
from .payload import check_lanes, config_write_layout
from .table import ConfigRegisters, ConfigTable, bank_switch, two_bank_table
from .window import beat_end, jump_loop, pick, window_geometry

__all__ = ["HuffmanLinkHardware", 
    "MAX_CODE_LENGTH", "MAX_LENGTHS", "MIN_DECODER_WORD_WIDTH", "SWITCH_ADDR", "LENGTH_BASE",
    "code_entry_layout", "length_entry_layout", "config_layout", "default_word_width",
    "default_codebook", "check_codebook", "check_encoder_code", "check_max_length",
    "config_writes", "switch_write",
    "HuffmanEncoder", "HuffmanDecoder", "split_config_layout", "split_escape_addr",
    "split_switch_addr", "split_length_base", "split_length_entry_layout",
    "split_decoder_config_layout", "BF16_ENCODER_LANES", "BF16_DECODER_LANES",
]

#: The longest code the hardware takes (the golden model's default limit), and the blocks'
#: default ``max_length``.
MAX_CODE_LENGTH = 15

#: The code length limits (``max_length``) the blocks take: 15 at most (a length is a
#: 4-bit field, the config writes hold codes and limits MSB-aligned in 15 bits), 10 at
#: least (the decoder splits a code's first ``max_length - 1`` bits into an 8-bit prefix
#: and a tail of one bit or more; 9 bits would cost 3 points of compression anyway).
MAX_LENGTHS = range(10, MAX_CODE_LENGTH + 1)


def check_max_length(max_length):
    """``max_length`` if the blocks take it (one of :data:`MAX_LENGTHS`), else a
    ``ValueError`` (``TypeError`` if it is not an integer) naming it."""
    if not isinstance(max_length, int) or isinstance(max_length, bool):
        raise TypeError(f"max_length must be an integer, not {max_length!r}")
    if max_length not in MAX_LENGTHS:
        raise ValueError(f"max_length must be {MAX_LENGTHS[0]}..{MAX_LENGTHS[-1]}, not "
                         f"{max_length}")
    return max_length

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


#: The lane counts of the encoder of 16-bit values: up to 4 (64 bits of values a beat;
#: at 8 its table would be read by 8 ports, 40 block RAMs at the default split).
BF16_ENCODER_LANES = (1, 2, 4)


#: The lane counts of the decoder of 16-bit values: 1 and 2 (a jump of one code a lane:
#: the escape and its value, up to 31 bits, stretch a jump of two codes past what the
#: window's targets can reach from two words).
BF16_DECODER_LANES = (1, 2)


def split_config_layout(coded_bits):
    """The config writes of an encoder of 16-bit values coding their top ``coded_bits``:
    addresses ``0 .. 2**coded_bits - 1`` for the parts' entries,
    :func:`split_escape_addr` for the escape's, :func:`split_switch_addr` for the switch;
    data as :data:`config_layout`'s."""
    return config_write_layout(addr_width=coded_bits + 1,
                               data_width=length_entry_layout.size)


def split_escape_addr(coded_bits):
    """Config address of the escape's :data:`code_entry_layout` entry (length 0: the
    codebook has no escape) in an encoder of 16-bit values."""
    return 1 << coded_bits


def split_switch_addr(coded_bits):
    """Config address of the bank switch in an encoder or decoder of 16-bit values."""
    return (2 << coded_bits) - 1


def split_length_base(coded_bits):
    """Config address of a decoder of 16-bit values' per-length entry of length 0 (entry
    ``l``, 1..15, is at ``split_length_base + l``; entry 0's address is the escape's,
    :func:`split_escape_addr`)."""
    return 1 << coded_bits


def split_length_entry_layout(coded_bits):
    """A per-length entry of a decoder of 16-bit values: ``limit`` as
    :data:`length_entry_layout`'s, ``offset`` the rank among the parts (the escape left
    out) of the first code of the length, less that code, mod ``2**coded_bits``."""
    return data.StructLayout({"limit": MAX_CODE_LENGTH + 1, "offset": coded_bits})


def split_decoder_config_layout(coded_bits):
    """The config writes of a decoder of 16-bit values coding their top ``coded_bits``:
    addresses ``0 .. 2**coded_bits - 1`` for the part at each rank (codes in canonical
    order, the escape left out), :func:`split_escape_addr` for the escape's
    :data:`code_entry_layout` entry (length 0: no escape), ``split_length_base + l`` for
    the per-length entries (:func:`split_length_entry_layout`), :func:`split_switch_addr`
    for the switch."""
    return config_write_layout(addr_width=coded_bits + 1,
                               data_width=split_length_entry_layout(coded_bits).size)


#: The narrowest word the decoder takes: its prepare stage reads the ``max_length``
#: bits at every bit position of the head word from that word and the next one alone.
MIN_DECODER_WORD_WIDTH = 16



def default_word_width(lanes, value_bits=8):
    """The word width a block gets unless told otherwise: ``value_bits * lanes`` (8 for
    e4m3, 16 for bf16 values), at least 16 (as QLC's blocks)."""
    return max(16, value_bits * check_lanes(lanes))


def default_codebook(value_bits=8, coded_bits=None):
    """The codebook both blocks hold at reset: every part's code is its own value (every
    length ``coded_bits``, canonical, complete, no escape), so a value goes out as it
    came in."""
    if value_bits == 8 and coded_bits in (None, 8):
        return HuffmanCodebook(np.full(256, 8, dtype=np.uint8), id="hc-identity8")
    value_bits, coded_bits = check_split(value_bits, coded_bits)
    return HuffmanCodebook(np.full(1 << coded_bits, coded_bits, dtype=np.uint8),
                           value_bits=value_bits, coded_bits=coded_bits,
                           id=f"hc-identity{value_bits}k{coded_bits}")


def check_codebook(codebook, max_length=MAX_CODE_LENGTH, *, value_bits=8, coded_bits=None):
    """``codebook`` if blocks of ``max_length`` and this split (``value_bits`` 8: e4m3;
    16: bf16 values by their top ``coded_bits``) can hold it: a
    :class:`HuffmanCodebook` of that split, whose codes are canonical for its lengths
    (the escape last), none longer than ``max_length``; else a ``TypeError`` or
    ``ValueError`` saying why."""
    max_length = check_max_length(max_length)
    if not isinstance(codebook, HuffmanCodebook):
        raise TypeError(f"codebook must be a HuffmanCodebook, not {type(codebook).__name__}")
    value_bits, coded_bits = check_split(value_bits, coded_bits)
    if value_bits == 8 and not codebook.is_e4m3:
        raise ValueError(f"codebook {codebook.id} codes {codebook.value_bits}-bit values by "
                         f"their top {codebook.coded_bits} bits"
                         f"{' with an escape' if codebook.escape_length else ''}; the "
                         f"hardware blocks take e4m3 codebooks (8 / 8, no escape)")
    if (codebook.value_bits, codebook.coded_bits) != (value_bits, coded_bits):
        raise ValueError(f"codebook {codebook.id} codes {codebook.value_bits}-bit values by "
                         f"their top {codebook.coded_bits} bits; this block codes "
                         f"{value_bits}-bit values by {coded_bits} (`linkcodec codebook "
                         f"build --value-bits {value_bits} --coded-bits {coded_bits}`)")
    longest = int(max(codebook.lengths.max(), codebook.escape_length))
    if longest > max_length:
        raise ValueError(f"codebook {codebook.id} has a {longest}-bit code; the hardware "
                         f"takes codes of at most {max_length} bits (max_length; "
                         f"`linkcodec codebook build --max-length {max_length}` builds one)")
    every = codebook.lengths
    if codebook.escape_length:
        every = np.append(every, codebook.escape_length)
    canonical = canonical_codes(every)[:codebook.lengths.size]
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


def _encoder_entries(codebook, max_length=MAX_CODE_LENGTH):
    """The encoder table's entries, each code MSB-aligned in ``max_length`` bits (the
    config writes': 15); a part without code (escaped) has length 0 and code 0.
    ``codebook`` may be a :class:`~linkcodec.golden.qlc.QlcCode` (see
    :func:`check_encoder_code`)."""
    if isinstance(codebook, QlcCode):
        lengths, codes = codebook.length_of.astype(int), codebook.code_of.astype(int)
    else:
        lengths, codes = codebook.lengths.astype(int), codebook.codes.astype(int)
    return [{"code": int(code) << (max_length - int(length)) if length else 0,
             "length": int(length)} for code, length in zip(codes, lengths)]


def _escape_entry(codebook, max_length=MAX_CODE_LENGTH):
    """The escape's entry, as :func:`_encoder_entries`' (length 0: no escape)."""
    length = codebook.escape_length
    return {"code": codebook.escape_code << (max_length - length) if length else 0,
            "length": length}


def _decoder_tables(codebook):
    """``(symbols, entries)``: the symbols (parts) that have codes, in canonical order,
    and the per-length entries (a ``dict`` per length 0..15; entry 0 unused). The escape
    counts in the limits, not in the ranks: it is the last code of its length (canonical
    order puts it after every part), so an offset need only skip it for longer lengths,
    and a part's index, its rank among the parts, fits ``coded_bits``."""
    lengths = codebook.lengths.astype(int)
    every = np.append(lengths, codebook.escape_length) if codebook.escape_length else lengths
    order = np.lexsort((np.arange(lengths.size), lengths))
    order = order[lengths[order] > 0]
    counts = np.bincount(every, minlength=MAX_CODE_LENGTH + 1)
    part_counts = np.bincount(lengths, minlength=MAX_CODE_LENGTH + 1)
    modulus = 1 << codebook.coded_bits
    entries, limit, base = [{"limit": 0, "offset": 0}], 0, 0
    for length in range(1, MAX_CODE_LENGTH + 1):
        first = limit >> (MAX_CODE_LENGTH - length)
        limit += int(counts[length]) << (MAX_CODE_LENGTH - length)
        entries.append({"limit": limit, "offset": (base - first) % modulus})
        base += int(part_counts[length])
    return [int(symbol) for symbol in order], entries


def switch_write():
    """The config write that asks for a bank switch."""
    return {"addr": SWITCH_ADDR, "data": 0}


def check_encoder_code(code, max_length=MAX_CODE_LENGTH):
    """``code`` if an e4m3 :class:`HuffmanEncoder` of ``max_length`` can hold it as a
    code table: a :class:`~linkcodec.golden.qlc.QlcCode`, none of its codes longer than
    ``max_length`` (a QLC code's longest is 11 bits); else a ``ValueError``. An encoder
    looks each symbol's code up and needs no canonical order, so any prefix code given
    symbol by symbol codes through it, bit for bit: :class:`~linkcodec.rtl.link.LinkTx`'s
    QLC streams code so (their tables loaded by
    :class:`~linkcodec.rtl.table_loader.TableLoader`'s ``"codes"`` writes). The decoder
    takes canonical codebooks only."""
    max_length = check_max_length(max_length)
    longest = int(code.length_of.max())
    if longest > max_length:
        raise ValueError(f"the QLC code has a {longest}-bit code; this encoder takes codes "
                         f"of at most {max_length} bits (max_length)")
    return code


def config_writes(codebook, *, block, switch=True, max_length=MAX_CODE_LENGTH):
    """The ``i_config`` writes (``dict`` of ``addr``, ``data``) that load ``codebook``
    into the idle bank, then (``switch``) the switch write that makes it the working
    one at the next frame boundary.

    ``block`` is ``"encoder"`` or ``"decoder"``, ``max_length`` the block's. The writes
    are the same at every limit; a codebook that is not canonical, or has a code longer
    than ``max_length`` bits, is refused (:func:`check_codebook`). A codebook of 16-bit
    values loads, in an encoder, its parts' entries, then the escape's at
    :func:`split_escape_addr`; in a decoder, the per-length entries, the escape's and
    the parts by rank (:func:`split_decoder_config_layout`); both switch at
    :func:`split_switch_addr`.
    """
    if block not in ("encoder", "decoder"):
        raise ValueError(f"block must be 'encoder' or 'decoder', not {block!r}")
    if isinstance(codebook, QlcCode) and block == "encoder":
        check_encoder_code(codebook, max_length)
        writes = [{"addr": symbol, "data": code_entry_layout.const(entry).as_bits()}
                  for symbol, entry in enumerate(_encoder_entries(codebook))]
        return writes + [switch_write()] if switch else writes
    if not isinstance(codebook, HuffmanCodebook):
        raise TypeError(f"codebook must be a HuffmanCodebook, not {type(codebook).__name__}")
    if codebook.value_bits != 8:
        check_codebook(codebook, max_length, value_bits=codebook.value_bits,
                       coded_bits=codebook.coded_bits)
        coded_bits = codebook.coded_bits
        escape = {"addr": split_escape_addr(coded_bits),
                  "data": code_entry_layout.const(_escape_entry(codebook)).as_bits()}
        if block == "encoder":
            writes = [{"addr": part, "data": code_entry_layout.const(entry).as_bits()}
                      for part, entry in enumerate(_encoder_entries(codebook))]
            writes.append(escape)
        else:
            parts, entries = _decoder_tables(codebook)
            layout = split_length_entry_layout(coded_bits)
            writes = [{"addr": split_length_base(coded_bits) + length,
                       "data": layout.const(entry).as_bits()}
                      for length, entry in enumerate(entries) if length]
            writes.append(escape)
            writes += [{"addr": rank, "data": part} for rank, part in enumerate(parts)]
        if switch:
            writes.append({"addr": split_switch_addr(coded_bits), "data": 0})
        return writes
    check_codebook(codebook, max_length)
    if block == "encoder":
        writes = [{"addr": symbol, "data": code_entry_layout.const(entry).as_bits()}
                  for symbol, entry in enumerate(_encoder_entries(codebook))]
    else:
        # The per-length entries first: the decoder derives its length tables from the
        # limits in a sweep of 273 cycles at most, which the symbol writes then overlap.
        symbols, entries = _decoder_tables(codebook)
        writes = [{"addr": LENGTH_BASE + length,
                   "data": length_entry_layout.const(entry).as_bits()}
                  for length, entry in enumerate(entries) if length]
        writes += [{"addr": index, "data": symbol} for index, symbol in enumerate(symbols)]
    if switch:
        writes.append(switch_write())
    return writes


class _HuffmanBlock(LanedBlock):
    #: Whether ``tables`` may be a QlcCode (an e4m3 encoder's: :func:`check_encoder_code`).
    _takes_qlc_code = False

    def __init__(self, signature, *, lanes, word_width, tables, max_length, allowed,
                 min_word_width=8, value_bits=8, coded_bits=None):
        self._value_bits, self._coded_bits = self._split_of(value_bits, coded_bits)

        def check(lanes, word_width):
            self._max_length = check_max_length(max_length)
            if word_width < min_word_width:
                raise ValueError(f"word_width must be at least {min_word_width}, not "
                                 f"{word_width}: {type(self).__name__} reads a code's "
                                 f"{max_length} bits from a word and the one behind it")
            if (isinstance(tables, QlcCode) and self._takes_qlc_code
                    and self._value_bits == 8):
                return check_encoder_code(tables, max_length)
            if tables is not None and not isinstance(tables, HuffmanCodebook):
                raise TypeError(f"tables must be a HuffmanCodebook, not "
                                f"{type(tables).__name__}")
            split = {"value_bits": self._value_bits, "coded_bits": self._coded_bits}
            return check_codebook(default_codebook(**split) if tables is None else tables,
                                  max_length, **split)

        super().__init__(signature, lanes=lanes, word_width=word_width,
                         default_word_width=lambda lanes: default_word_width(
                             lanes, self._value_bits),
                         allowed_lanes=allowed, check=check)

    def _split_of(self, value_bits, coded_bits):
        """``check_split(value_bits, coded_bits)``; a block refused here is not reported
        later as unused."""
        try:
            return check_split(value_bits, coded_bits)
        except (TypeError, ValueError):
            self._MustUse__silence = True     # refused at construction: not unused
            raise

    @property
    def value_bits(self):
        """Width of the values: 8 (e4m3 symbols) or 16 (bf16 values)."""
        return self._value_bits

    @property
    def coded_bits(self):
        """How many top bits of a value the code covers (8 for e4m3)."""
        return self._coded_bits

    @property
    def max_length(self):
        """The longest code the block takes (one of :data:`MAX_LENGTHS`)."""
        return self._max_length

    @property
    def codebook(self):
        """The codebook both banks hold from elaboration (at power-up on an FPGA) until
        one is loaded through ``i_config``; a reset does not bring it back."""
        return self.tables

    def _table(self, m, name, *, shape, init, read_ports, idle_bank, hit, index, data=None):
        """A two-bank table (:func:`~.table.two_bank_table`) on ``i_config``."""
        return two_bank_table(m, name, self.i_config, shape=shape, init=init,
                              read_ports=read_ports, idle_bank=idle_bank, hit=hit,
                              index=index, data=data)

    def _escape_registers(self, m, active, written, entry):
        """The escape's entry (code MSB-aligned in ``max_length`` bits, and length; 0: no
        escape), a register a bank (reset-less: a reset keeps tables), which a config write
        at :func:`split_escape_addr` sets to ``entry`` in the idle bank. Returns
        ``bank_escape(bank)``: the entry of that bank."""
        L = self._max_length
        layout = data.StructLayout({"code": L, "length": 4})
        escapes = [Signal(layout, name=f"escape{which}",
                          init=_escape_entry(self.codebook, L), reset_less=True)
                   for which in range(2)]
        config = self.i_config.payload
        with m.If(written & (config.addr == split_escape_addr(self._coded_bits))):
            with m.If(active):
                m.d.sync += escapes[0].eq(entry)
            with m.Else():
                m.d.sync += escapes[1].eq(entry)
        return lambda bank: layout(Mux(bank, escapes[1], escapes[0]))

    def _switch(self, m, boundary):
        """The bank logic (:class:`~.table.BankSwitch`) on ``i_config``: a pending switch
        takes effect when ``boundary``."""
        switch_addr = (SWITCH_ADDR if self._value_bits == 8
                       else split_switch_addr(self._coded_bits))
        return bank_switch(m, self.i_config, boundary=boundary, switch_addr=switch_addr)


class HuffmanEncoder(_HuffmanBlock):
    """Huffman encoder: ``lanes`` e4m3 symbols a cycle in, ``word_width``-bit words out.

    Parameters (keyword-only): ``lanes`` (1, 2, 4 or 8), ``word_width`` (a multiple of 8;
    default :func:`default_word_width`), ``tables`` (the canonical
    :class:`~linkcodec.golden.huffman.HuffmanCodebook` both banks hold until loaded; default
    :func:`default_codebook`; for e4m3 symbols also a
    :class:`~linkcodec.golden.qlc.QlcCode`, whose bitstream the encoder then makes, as it
    makes any code it is loaded with: :func:`check_encoder_code`), ``max_length`` (the
    longest code, one of
    :data:`MAX_LENGTHS`, default 15: a codebook with a longer code is refused, here and
    by :func:`config_writes`).

    Ports: ``i`` (:func:`~.payload.symbol_layout` beats; a frame ends with the beat whose ``last``
    is set, and may be empty: one beat with ``count = 0, last = 1``), ``o``
    (:func:`~.payload.word_layout` words, see ``docs/bitstream.md``), ``i_config`` (table writes
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

    _takes_qlc_code = True

    def __init__(self, *, lanes=1, word_width=None, tables=None, max_length=MAX_CODE_LENGTH,
                 value_bits=8, coded_bits=None):
        value_bits, coded_bits = self._split_of(value_bits, coded_bits)
        layout = config_layout if value_bits == 8 else split_config_layout(coded_bits)
        super().__init__(encoder_signature(layout, value_bits), lanes=lanes,
                         word_width=word_width, tables=tables, max_length=max_length,
                         allowed=(1, 2, 4, 8) if value_bits == 8 else BF16_ENCODER_LANES,
                         value_bits=value_bits, coded_bits=coded_bits)

    @property
    def latency(self):
        """Cycles from a beat that completes a word (or ends its frame) to that word."""
        # read, read data, mask, one per tree level, the packer's two stages; a value's
        # code and its raw bits are two pieces, so 16-bit values take a level more
        pieces = self._lanes if self._value_bits == 8 else 2 * self._lanes
        return 5 + pieces.bit_length() - 1

    def _front(self, m, *, chunk_width):
        """The packer on ``o``, the stage enable (``step``: the packer's registered
        ``i.ready``, also ``i.ready``), and the bank logic, a pending switch taking effect
        at a frame boundary: ``(packer, step, active, bank)``."""
        m.submodules.packer = packer = BitPacker(
            chunk_width=chunk_width, word_width=self._word_width)
        wiring.connect(m, wiring.flipped(self.o), packer.o)
        step = packer.i.ready             # a register: every stage moves while it is high
        m.d.comb += self.i.ready.eq(step)

        # Frame boundary: no beat of a frame taken yet since the last frame's end.
        in_frame = Signal()
        with m.If(self.i.valid & step):
            m.d.sync += in_frame.eq(~self.i.payload.last)
        banks = self._switch(m, ~in_frame)
        m.d.comb += self.i_config.ready.eq(~banks.pending)
        return packer, step, banks.active, banks.bank

    def _read(self, m, stage, reads, step, addresses):
        """Stage 1: the table reads at ``addresses`` (one a lane); the beat's valid, its
        count (clamped to the lanes) and last registered beside them."""
        lanes = self._lanes
        for lane, address in enumerate(addresses):
            m.d.comb += [reads[lane].addr.eq(address), reads[lane].en.eq(step)]
        if lanes > 1:
            clamped = Mux(self.i.payload.count > lanes, lanes, self.i.payload.count)
        else:
            clamped = self.i.payload.count
        return (stage("read_valid", 1, self.i.valid),
                stage("read_count", range(lanes + 1), clamped),
                stage("read_last", 1, self.i.payload.last))

    def _entries(self, stage, reads, entry_layout, valid, count, last):
        """Stage 2: the read data registered alone, and the beat's valid, count and last
        beside it."""
        lanes = self._lanes
        return ([stage(f"entry{lane}", entry_layout, reads[lane].data)
                 for lane in range(lanes)],
                stage("entry_valid", 1, valid),
                stage("entry_count", range(lanes + 1), count),
                stage("entry_last", 1, last))

    @staticmethod
    def _to_packer(m, packer, stage, pieces, valid, last):
        """The concatenation tree of ``pieces`` (``(code, length)``, MSB-aligned) into the
        packer, ``valid`` and ``last`` beside it."""
        chunk, length, beside = concatenation_tree(pieces, stage,
                                                   {"valid": valid, "last": last})
        m.d.comb += [
            packer.i.valid.eq(beside["valid"]),
            packer.i.payload.bits.eq(chunk),
            packer.i.payload.length.eq(length),
            packer.i.payload.last.eq(beside["last"]),
        ]

    def elaborate(self, platform):
        if self._value_bits != 8:
            return self._elaborate_split()
        m = Module()
        lanes, L = self._lanes, self._max_length
        packer, step, active, bank = self._front(m, chunk_width=L * lanes)
        config = self.i_config.payload
        # A write's code is MSB-aligned in 15 bits; the table keeps its first L.
        entry_layout, written = code_entry_layout, None
        if L < MAX_CODE_LENGTH:
            entry_layout = data.StructLayout({"code": L, "length": 4})
            write = code_entry_layout(config.data[:code_entry_layout.size])
            written = Cat(write.code[MAX_CODE_LENGTH - L:], write.length)
        reads = self._table(m, "table", shape=entry_layout,
                            init=_encoder_entries(self.codebook, L), read_ports=lanes,
                            idle_bank=~active, hit=config.addr < 256, index=config.addr,
                            data=written)

        stage = pipeline_stage(m, step)

        # 1: the table read; the beat's count (clamped) and last travel beside it.
        valid, count, last = self._read(m, stage, reads, step, [
            Cat(self.i.payload.symbols[lane], bank) for lane in range(lanes)])

        # 2: the read data, registered alone.
        entries, valid, count, last = self._entries(stage, reads, entry_layout,
                                                    valid, count, last)

        # 3: lanes past `count` are empty.
        codes = []
        for lane, entry in enumerate(entries):
            used = lane < count
            codes.append((stage(f"code{lane}", L, Mux(used, entry.code, 0)),
                          stage(f"code_length{lane}", range(L + 1),
                                Mux(used, entry.length, 0))))
        valid = stage("code_valid", 1, valid)
        last = stage("code_last", 1, last)

        # 4: the concatenation tree.
        self._to_packer(m, packer, stage, codes, valid, last)
        return m


    def _elaborate_split(self):
        """16-bit values: as for e4m3, with the table read at each value's top
        ``coded_bits`` and two pieces a lane into the tree (the code, and the tail or the
        whole value after the escape)."""
        m = Module()
        lanes, L = self._lanes, self._max_length
        K, V = self._coded_bits, self._value_bits
        R = V - K                                  # the tail's bits
        piece = max(L, V)                          # every piece MSB-aligned in this width

        packer, step, active, bank = self._front(m, chunk_width=piece * 2 * lanes)
        config = self.i_config.payload
        written = self.i_config.valid & self.i_config.ready
        entry_layout = data.StructLayout({"code": L, "length": 4})
        write = code_entry_layout(config.data[:code_entry_layout.size])
        write_entry = Cat(write.code[MAX_CODE_LENGTH - L:], write.length)
        reads = self._table(m, "table", shape=entry_layout,
                            init=_encoder_entries(self.codebook, L), read_ports=lanes,
                            idle_bank=~active, hit=config.addr < (1 << K),
                            index=config.addr, data=write_entry)
        bank_escape = self._escape_registers(m, active, written, write_entry)

        stage = pipeline_stage(m, step)

        # 1: the table read at each value's top bits; the value and the bank's escape
        # travel beside it.
        valid, count, last = self._read(m, stage, reads, step, [
            Cat(self.i.payload.symbols[lane][R:], bank) for lane in range(lanes)])
        escape = stage("read_escape", entry_layout, bank_escape(bank))
        values = [stage(f"read_value{lane}", V, self.i.payload.symbols[lane])
                  for lane in range(lanes)]

        # 2: the read data, registered alone.
        entries, valid, count, last = self._entries(stage, reads, entry_layout,
                                                    valid, count, last)
        escape = stage("entry_escape", entry_layout, escape)
        values = [stage(f"entry_value{lane}", V, value) for lane, value in enumerate(values)]

        # 3: a lane's two pieces: its code and tail, or the escape and the whole value;
        # lanes past `count` are empty.
        pieces = []
        for lane, (entry, value) in enumerate(zip(entries, values)):
            used = lane < count
            escaped = entry.length == 0
            code = Mux(escaped, escape.code, entry.code)
            code_length = Mux(escaped, escape.length, entry.length)
            raw = Mux(escaped, value, value[:R] << K) if R else value
            raw_length = Mux(escaped, V, R)
            pieces.append((stage(f"code{lane}", piece, Mux(used, code << (piece - L), 0)),
                           stage(f"code_length{lane}", range(piece + 1),
                                 Mux(used, code_length, 0))))
            pieces.append((stage(f"raw{lane}", piece, Mux(used, raw << (piece - V), 0)),
                           stage(f"raw_length{lane}", range(piece + 1),
                                 Mux(used, raw_length, 0))))
        valid = stage("code_valid", 1, valid)
        last = stage("code_last", 1, last)

        # 4: the concatenation tree, 5: the packer.
        self._to_packer(m, packer, stage, pieces, valid, last)
        return m


def _thermometer_count(ones):
    """The number of ones in ``ones``, a thermometer (``ones[i]`` set means every
    ``ones[j]``, ``j < i``, is set too), as a binary value: a few gates a bit, no adder."""
    def at_least(count):
        return Const(1) if count <= 0 else ones[count - 1] if count <= len(ones) else Const(0)
    width = len(ones).bit_length()
    bits = []
    for bit in range(width):
        period, half = 2 << bit, 1 << bit
        bits.append(Cat(*[at_least(start + half) & ~at_least(start + period)
                          for start in range(0, len(ones) + 1, period)]).any())
    return Cat(*bits)


def _code_excess(window, limits, L):
    """A code's length less 1 (0 .. L - 1) from the first L - 1 bits of ``window`` (frame
    order) and ``limits`` (``limits[l]``, ``l`` = 1..L - 1, where the codes of length at
    most ``l`` end, MSB-aligned in L bits; entry 0 unused): how many ``limit[l]`` the
    L-bit number the window starts is at or above. Bits that start no code give L - 1
    (length L), as long as they are at or above ``limit[L - 1]``; nothing here tells them
    apart. (L is the block's ``max_length``, 15 by default.)"""
    # A limit of length l is a multiple of 2**(L - l), so comparing with it needs only
    # the window's first l bits; the comparisons fall as l rises (a thermometer).
    ones = [~(window[:length][::-1] < limits[length][L - length:])
            for length in range(1, L)]
    return _thermometer_count(ones)


#: The bits at a position that address the decoder's prefix table.
_PREFIX_BITS = 8

def _long_lengths(L):
    """The lengths past the prefix whose comparisons the prefix table splits: 9 .. L - 1
    (the bits that decide a code's length are its first L - 1: a code of L bits is one
    that no shorter length takes)."""
    return range(_PREFIX_BITS + 1, L)


def _prefix_entry_layout(L):
    """A prefix table entry, for the 8 bits ``q`` at a position: ``short``, how many
    ``limit[l]``, ``l`` = 1..8, the window is at or above (its first ``l`` bits decide
    it); for ``l`` = 9..L - 1, whether ``q`` is above (``above``) or equal to (``equal``)
    the first 8 bits of ``limit[l]``."""
    long = len(_long_lengths(L))
    return data.StructLayout({"short": 4, "above": long, "equal": long})


def _prefix_entries(limits, L):
    """The prefix table of one bank (256 entries, as integers) for ``limits`` (16
    integers, MSB-aligned in L bits, entry 0 unused)."""
    long = _long_lengths(L)
    entries = []
    for prefix in range(1 << _PREFIX_BITS):
        short = sum(prefix >> (_PREFIX_BITS - length)
                    >= limits[length] >> (L - length)
                    for length in range(1, _PREFIX_BITS + 1))
        high = [limits[length] >> (L - _PREFIX_BITS) for length in long]
        above = sum(int(prefix > value) << index for index, value in enumerate(high))
        equal = sum(int(prefix == value) << index for index, value in enumerate(high))
        entries.append(short | above << 4 | equal << (4 + len(long)))
    return entries


def _tail_entries(limits, L):
    """The tail table of one bank (``2**(L - 9)`` entries of ``L - 9`` bits, as integers;
    64 of 6 at L = 15) for ``limits``: entry ``r`` is :func:`_tail_entry` of ``r``."""
    length_bits = L - 1
    return [sum(int(rest >> (length_bits - length)
                    >= (limits[length] >> (L - length)) & ((1 << (length - _PREFIX_BITS)) - 1))
                << index for index, length in enumerate(_long_lengths(L)))
            for rest in range(1 << (length_bits - _PREFIX_BITS))]


def _tail_entry(rest, tail_limits, L):
    """What settles a code's length when its first 8 bits equal a limit's: for the ``L -
    9`` bits ``rest`` after a prefix and each length ``l`` = 9..L - 1, whether ``rest``'s
    first ``l - 8`` bits are at least ``limit[l]``'s bits 9..l. ``tail_limits`` holds those
    bits of each limit, length 9's first (1 + 2 + ... + (L - 9) bits)."""
    ones, offset = [], 0
    for length in _long_lengths(L):
        width = length - _PREFIX_BITS
        ones.append(rest[L - 1 - length:] >= tail_limits[offset:offset + width])
        offset += width
    return Cat(*ones)


def _prefix_excess(entry, at_least, L):
    """A code's length less 1 (0 .. L - 1) from its prefix table ``entry`` and its tail
    compares ``at_least`` (:func:`_tail_entry`): for each length 9..L - 1 the prefix table
    says above, below or equal, and where equal, the tail compare decides."""
    ones = [entry.above[index] | (entry.equal[index] & at_least[index])
            for index in range(len(_long_lengths(L)))]
    # at or above limit[9] means at or above limit[1..8]: 8 and more (the count in 3 bits)
    count = _thermometer_count(ones)
    if len(count) < 3:
        count = Cat(count, Const(0, 3 - len(count)))
    return Mux(ones[0], Cat(count, Const(1, 1)), entry.short)


class HuffmanDecoder(_HuffmanBlock):
    """Canonical Huffman decoder: ``word_width``-bit words in, up to ``lanes`` e4m3
    symbols a cycle out.

    Parameters as :class:`HuffmanEncoder` (``max_length`` too), lanes 1, 2 or 4, and
    ``word_width`` at least :data:`MIN_DECODER_WORD_WIDTH` (16: the bits that decide a
    code's length at any position of a word lie within it and the next word). Below, the
    lengths and widths are those of the default ``max_length`` = 15; a shorter limit ``L``
    compares ``L`` bits, splits the first ``L - 1`` into the prefix's 8 and a tail of
    ``L - 9``, and needs fewer positions and a narrower window. Ports: ``i``
    (:func:`~.payload.word_layout` words), ``o`` (:func:`~.payload.symbol_layout` beats
    with ``error``), ``i_config`` (table writes and the bank switch, see the module
    docstring).

    How it works. Canonical decoding, no tree walk: the 15 bits at a bit position, read
    as a number ``w``, start a code of length ``l``, the least with ``w < limit[l]``
    (``limit[l]``: where the codes of length at most ``l`` end, MSB-aligned); ``w >=
    limit[15]`` starts no code (an incomplete codebook). The code is ``w >> (15 - l)``
    and its canonical index ``code + offset[l]`` (mod 256) addresses the symbol table.

    The only recurrence is where the next group of ``lanes`` codes starts, and it is a
    mux, as in :class:`~.qlc.QlcDecoder`:

    1. Words pass word faults and wait in a :class:`~.bitpack.WordQueue`; the bank is
       chosen as a word leaves it, per frame.
    2. At every bit position of the head word (with the next word behind it), the code
       length, from one block RAM read a position and a few compares, registered
       twice: the *prefix table* (2 banks of 256 entries), read at the position's first
       8 bits, gives the length if it is at most 8 and, for each length 9..14, whether
       those bits are above, below or equal to the limit's first 8; where equal, the
       *tail* decides: whether the next 6 bits are at least the limit's bits 9..l.
       At 1 lane of e4m3 the tail is a compare against those bits, held in a register a
       bank (21 bits), registered with the word and compared a stage later; otherwise
       it is a second block RAM read a position, the *tail table* (2 banks of 64
       entries), read at the 6 bits (:attr:`tail_compare`). The length stage has a skid
       register, so the reads' enables, like every stage before it, follow registers
       alone.
    3. A *jump target* at each position: where the code ``M`` codes on starts (``M``,
       :attr:`jump`, is 1 for 1 and 2 lanes, 2 for 4 lanes when the word is wide enough:
       ``t2[x] = t1[t1[x]]``), registered with the word.
    4. A window of word slots; the loop holds a binary bit position in it and takes
       ``lanes / M`` jumps a cycle, each a mux of precomputed targets: no adder, no
       comparison, no shift. The window drops its oldest word when the position passes it.
    5. After the loop, a pipeline: each jump's bits are cut from the window; the codes
       inside a jump found (for ``M = 2``, the first one's length from comparisons); each
       lane's length (a difference of positions), presence, completeness and whether it
       starts a code at all (``w < limit[15]``) checked; its code's low 8 bits and
       ``offset[l]`` (a small LUT RAM) registered, added, and the symbol table (two banks,
       a block RAM) read with a registered read, which the output beat takes.

    Latency: :attr:`latency` cycles from the transfer of a frame's first word to the
    first output transfer, with the next word right behind it and no stalls: 12 at 1
    lane, 13 at 2 lanes and 15 at 4 lanes with the default word widths.
    Throughput: ``lanes`` symbols a cycle while codes average at most ``word_width /
    lanes`` bits (less a few cycles at each frame end). A beat is sent when all lanes
    are full or the frame ends; an empty frame gives one beat with ``count = 0, last =
    1``. Under backpressure on ``o`` every stage after the loop holds, the loop and the
    window stop, and the input queue fills; ``i.ready`` is a register, so it never
    depends on ``o.ready``.

    Bad input, as :class:`~.qlc.QlcDecoder` (``docs/bitstream.md``, "Faults in words"):
    a non-final word whose ``bits`` is not ``word_width``, or any word whose ``bits``
    exceeds it, is a fault where the word's bits begin. Codes are decoded up to the first
    word fault, bits that start no code (an incomplete codebook) or code that does not end
    within the frame's bits; then the frame ends with ``error = 1, last = 1`` in the beat
    that would have held the next symbol (a full beat of good symbols is followed by a
    beat of ``count = 0``). The rest of the frame, up to and including its ``last`` word,
    is dropped; the next frame decodes normally.

    The prefix and tail tables and the tail limits are not written through ``i_config``:
    they follow the limits. A write to a bank's limits starts a *sweep* that writes that bank's
    entries again, done 273 cycles at most after the last such write (2 to start, 256 +
    14 steps, 1 to write the last entries; one copy of
    each table a position, all written at once; the bank's tail limits at every
    step). A frame of that bank waits at the queue's
    head until the sweep is done (a sweep starts the cycle after its limit write, so send
    no config write in the cycle before a reset, as none while it is high); ``i.ready`` is
    low while the bank being swept is the
    working one or a switch to it is pending (``i.ready`` is then an AND of registers,
    still never ``o.ready``), and so is ``i_config.ready`` while it is the working one.
    :func:`config_writes` writes the limits first, so the sweep runs while the 256 symbol
    writes go in: a swap whose switch takes effect at once waits 16 cycles at most (at a
    write a cycle; longer for a codebook of 16-bit values with fewer parts), and one that
    takes effect later waits none.

    16-bit values (``value_bits=16, coded_bits=K``; lanes 1 and 2, one code a jump): at
    each position, besides the length, whether the escape starts there (its code and
    length are a register a bank: an L-bit masked compare, no table); a jump is a part's
    code and its ``16 - K``-bit tail, or the escape and the 16-bit value, so targets
    reach ``L + 16`` bits on and the window holds a word more. After the loop, a stage
    more finds whether each code is the escape and its length; then the raw bits after
    the code are cut out beside the symbol table's read, which holds the parts by rank
    (the escape left out of the ranks, so they fit K bits: 2 banks of ``2**K``
    entries); the output is the part and the tail, or the escaped value. Latency 14 at
    1 lane (16-bit words) and 2 lanes (32-bit words). A code whose tail or escaped
    value runs past the frame's end is incomplete (the error beat). Everything else as
    for e4m3.

    Reset: clears stream state (the queue, the window, the loop and the pipeline: a frame
    in flight is lost, and the next word starts a frame) and never touches a table: both
    banks of the symbol table, of the limits and of the offsets, the prefix and tail
    tables and tail limits, a sweep under way (it runs on through a reset), and the
    active-bank select, keep what was last loaded. A bank switch still pending at reset takes effect
    at the reset (a reset is a frame boundary), in the encoder and decoder alike. On an
    FPGA the tables come up with their elaboration-time contents; on an ASIC a memory or
    reset-less flop has no defined power-up contents, so load every table after power-up
    there.
    """

    def __init__(self, *, lanes=1, word_width=None, tables=None, max_length=MAX_CODE_LENGTH,
                 value_bits=8, coded_bits=None):
        value_bits, coded_bits = self._split_of(value_bits, coded_bits)
        layout = config_layout if value_bits == 8 else split_decoder_config_layout(coded_bits)
        super().__init__(decoder_signature(layout, value_bits), lanes=lanes,
                         word_width=word_width, tables=tables, max_length=max_length,
                         allowed=(1, 2, 4) if value_bits == 8 else BF16_DECODER_LANES,
                         min_word_width=MIN_DECODER_WORD_WIDTH, value_bits=value_bits,
                         coded_bits=coded_bits)

    @property
    def _jump_bits(self):
        """The most bits one code's jump takes: its code, or for 16-bit values the escape
        and the whole value (a part's code and tail take fewer)."""
        if self._value_bits == 8:
            return self._max_length
        return self._max_length + self._value_bits

    @property
    def jump(self):
        """Codes per precomputed jump (``M``); the loop takes ``lanes / jump`` a cycle."""
        lanes, width = self._lanes, self._word_width
        jump = 1 if lanes <= 2 or self._value_bits != 8 else lanes // 2
        # A word's targets come from that word and the next one: the lengths at positions
        # up to W - 1 + L * (M - 1), each decided by L - 1 bits.
        L = self._max_length
        while jump > 1 and width + L * (jump - 1) + (L - 1) - 1 > 2 * width:
            jump //= 2
        return jump

    @property
    def tail_compare(self):
        """Whether the tail of a length is settled by compares (1 lane of e4m3) rather
        than by a tail table, a block RAM a position: at 1 lane a block RAM's data into
        its register set the clock, and fewer block RAMs placed closer; elsewhere the loop
        sets the clock and the tables cost fewer LUTs (``docs/huffman.md``)."""
        return self._lanes == 1 and self._value_bits == 8

    @property
    def touched_words(self):
        """Window words a group of ``lanes`` codes can touch (it starts in the first)."""
        return self._geometry()[-1]

    @property
    def latency(self):
        """Cycles from the transfer of a frame's first word to the first output transfer,
        with the next words right behind it and no stalls."""
        # Word to queue (1), queue to the prefix and tail tables' reads (1, once the next
        # word is in: +1), the read data, twice (2), lengths (1), targets (1), window (1),
        # loop (1), cut (1), the second code of a jump (2), the lanes' checks (1) and the
        # table read with the index before it (1); plus a word for each further window
        # slot the first group touches.
        # 16-bit values: a stage more after the loop (whether a code is the escape, its
        # length, then the raw bits after it).
        span = self._jump_bits * self._lanes
        split = int(self._value_bits != 8)
        return 12 + split + 2 * (self.jump - 1) + (span - 1) // self._word_width

    def _geometry(self):
        return window_geometry(self._word_width, self._lanes, self.jump, self._jump_bits)

    def elaborate(self, platform):
        m = Module()
        W, N, M, S, span, last_start, Q = self._geometry()
        L = self._max_length
        # 16-bit values (``split``): a jump is a part's code and its R-bit tail, or the
        # escape and the whole value: J bits at most, 1 + R at least.
        split = self._value_bits != 8
        K, V, J = self._coded_bits, self._value_bits, self._jump_bits
        R = V - K
        length_bits = L - 1          # the bits that decide a code's length
        long_lengths = _long_lengths(L)
        prefix_entry_layout = _prefix_entry_layout(L)
        assert M in (1, 2) and (M == 1 or not split)
        pos_width = (Q * W).bit_length()            # a bit position in the window
        target_width = (W - 1 + J * M).bit_length()     # a target in a word
        symbols, entries = _decoder_tables(self.codebook)
        symbols += [0] * ((1 << K) - len(symbols))     # (ranks past the parts' unused)
        # The config writes' limits are MSB-aligned in 15 bits; the block's, in L.
        align = MAX_CODE_LENGTH - L
        limits_init = [entry_["limit"] >> align for entry_ in entries]

        # -- banks, config -------------------------------------------------------------
        in_frame = Signal()          # the queue's head is inside a frame
        # A switch takes effect where the queue's head starts a frame that came in after
        # it was asked for (so a frame whose words all wait in the queue keeps its bank).
        m.submodules.queue = queue = WordQueue(word_width=W)
        banks = self._switch(m, ~in_frame & ~queue.before_mark)
        m.d.comb += queue.mark.eq(banks.requested)
        active, bank, pending = banks.active, banks.bank, banks.pending
        old_in_use = Signal()
        sweeping_active = Signal()   # the length tables of the working bank are being swept
        m.d.comb += self.i_config.ready.eq(~pending & ~old_in_use & ~sweeping_active)
        config = self.i_config.payload
        written = self.i_config.valid & self.i_config.ready
        table_reads = self._table(m, "table", shape=K, init=symbols, read_ports=N,
                                  idle_bank=~active, hit=config.addr < (1 << K),
                                  index=config.addr)
        if split:
            base = split_length_base(K)
            length_hit = (config.addr > base) & (config.addr < base + 16)
            entry = split_length_entry_layout(K)(config.data)
        else:
            length_hit = (config.addr >= LENGTH_BASE) & (config.addr < LENGTH_BASE + 16)
            entry = length_entry_layout(config.data)
        # The limits, all visible at once (the lengths at every position compare with
        # them), in reset-less registers; the offsets, read once a lane, in LUT RAM.
        m.submodules.limits = limit_regs = ConfigRegisters(
            shape=L + 1, depth=32, init=limits_init * 2, config_layout=config_layout)
        m.submodules.offsets = offset_table = ConfigTable(
            shape=K, depth=32, init=[entry_["offset"] for entry_ in entries] * 2,
            read_ports=N, config_layout=config_layout)
        for table, value in ((limit_regs, entry.limit[align:] if align else entry.limit),
                             (offset_table, entry.offset)):
            m.d.comb += [table.config.valid.eq(written & length_hit),
                         table.config.payload.addr.eq(Cat(config.addr[:4], ~active)),
                         table.config.payload.data.eq(value)]

        if split:
            # The escape's code (MSB-aligned in L bits) and length, a register a bank
            # (reset-less: a reset keeps tables), written as the encoder's; a code is the
            # escape if its first ``length`` bits are the escape's (``length`` 0: none).
            write = code_entry_layout(config.data[:code_entry_layout.size])
            bank_escape = self._escape_registers(
                m, active, written, Cat(write.code[MAX_CODE_LENGTH - L:], write.length))

            def is_escape(number, escape):
                """Whether the L-bit ``number`` starts with ``escape``'s code."""
                ones = Const((1 << L) - 1, L)
                mask = Signal(L)
                m.d.comb += mask.eq(~(ones >> escape.length))
                return (escape.length != 0) & (((number ^ escape.code) & mask) == 0)

        def bank_limits(which, name):
            """The 15 limits of bank ``which`` (entry 0 unused)."""
            chosen = [Signal(L + 1, name=f"{name}{length}") for length in range(16)]
            m.d.comb += [signal.eq(Mux(which, limit_regs.entries[16 + length],
                                       limit_regs.entries[length]))
                         for length, signal in enumerate(chosen)]
            return chosen

        # -- input: word faults, then the queue ------------------------------------------
        # Words wait outside while the bank of the frame they will start is being swept
        # (the working bank, or the one a pending switch goes to): the queue is for
        # words that can go on, and the wait then shows as ``i.ready`` low, not as latency.
        input_held = Signal()
        m.d.comb += [queue.i.valid.eq(self.i.valid & ~input_held),
                     queue.i.payload.eq(self.i.payload),
                     self.i.ready.eq(queue.i.ready & ~input_held)]
        head = queue.head
        with m.If(queue.take):
            m.d.sync += in_frame.eq(~head.end)

        # -- the prefix table: 2 banks of 256 entries, a copy (a block RAM) a position ---
        # Derived from the limits: any write to a bank's limits sweeps that bank's 256
        # entries again. Every field of an entry compares the prefix q with one threshold
        # a length, h[l] = limit[l] >> 7 (non-decreasing in l), so the sweep walks q up
        # and a pointer k up the thresholds (a cycle for each, from a copy of the
        # thresholds in LUT RAM): entry q is written once k counts the thresholds at or
        # below q, with ``k_below``, the count below q (k at q - 1). At most 256 + 14
        # cycles, a register between the entry and the write. A word of that bank waits at
        # the queue's head until the sweep is done; the sweep is table state, so a reset
        # neither stops nor restarts it.
        positions = W + L * (M - 1)
        prefix_init = _prefix_entries(limits_init, L)
        threshold_shift = MAX_CODE_LENGTH - _PREFIX_BITS     # (of a config write's limit)
        m.submodules.thresholds = thresholds = ConfigTable(
            shape=MAX_CODE_LENGTH + 1 - threshold_shift, depth=32,
            init=[entry_["limit"] >> threshold_shift for entry_ in entries] * 2,
            read_ports=1, config_layout=config_layout)
        m.d.comb += [thresholds.config.valid.eq(written & length_hit),
                     thresholds.config.payload.addr.eq(Cat(config.addr[:4], ~active)),
                     thresholds.config.payload.data.eq(entry.limit[threshold_shift:])]
        fill_busy = Signal(reset_less=True)
        fill_prefix = Signal(_PREFIX_BITS, reset_less=True)
        fill_at = Signal(4, reset_less=True)         # thresholds at or below the prefix
        fill_below = Signal(4, reset_less=True)      # thresholds below it
        fill_bank = Signal(reset_less=True)
        # A limit write starts the sweep a cycle later, through registers that a reset
        # clears: the sweep's own registers, which no reset clears, then see only
        # registers and ``rst``, never an input that a 4-state simulator may show X
        # before the first reset (they would keep the X).
        sweep_start = Signal()
        sweep_bank = Signal()
        m.d.sync += [sweep_start.eq(written & length_hit), sweep_bank.eq(~active)]
        limit_write = Signal()       # (named for what started it)
        m.d.comb += limit_write.eq(sweep_start & ~ResetSignal())
        threshold = thresholds.read[0]
        fill_next = Signal(4, reset_less=True, init=1)     # fill_at + 1
        m.d.comb += threshold.addr.eq(Cat(fill_next, fill_bank))
        count_up = Signal()          # the next threshold is at or below the prefix
        fill_step = Signal()         # write this prefix's entry, go to the next
        m.d.comb += [count_up.eq(fill_busy & (fill_at != L - 1)
                                 & (threshold.data <= fill_prefix)),
                     fill_step.eq(fill_busy & ~count_up)]
        last_prefix = (1 << _PREFIX_BITS) - 1
        # (assigned every cycle, not under an If: see ``_switch``)
        m.d.sync += [
            fill_busy.eq(limit_write | (fill_busy & ~(fill_step & (fill_prefix == last_prefix)))),
            fill_prefix.eq(Mux(limit_write, 0, Mux(fill_step, fill_prefix + 1, fill_prefix))),
            fill_at.eq(Mux(limit_write, 0, Mux(count_up, fill_next, fill_at))),
            fill_next.eq(Mux(limit_write, 1, Mux(count_up, fill_next + 1, fill_next))),
            fill_below.eq(Mux(limit_write, 0, Mux(fill_step, fill_at, fill_below))),
            fill_bank.eq(Mux(limit_write, sweep_bank, fill_bank)),
        ]
        fill_en = Signal(reset_less=True)
        fill_addr = Signal(_PREFIX_BITS + 1, reset_less=True)
        fill_data = Signal(prefix_entry_layout.size, reset_less=True)
        fill_entry = Cat(Mux(fill_at > _PREFIX_BITS, _PREFIX_BITS, fill_at),
                         Cat(*[length <= fill_below for length in long_lengths]),
                         Cat(*[(fill_below < length) & (length <= fill_at)
                               for length in long_lengths]))
        m.d.sync += [fill_en.eq(fill_step & ~limit_write),
                     fill_addr.eq(Cat(fill_prefix, fill_bank)), fill_data.eq(fill_entry)]
        # The tail's limit bits (``limit[l]``'s bits 9..l for each long length, 21 bits at
        # L = 15) of the bank being swept. With ``tail_compare`` a register a bank holds
        # them, copied at every step of the sweep: table state, like the prefix tables, so
        # a word reads the copy its bank's prefix table was swept with (a word of the bank
        # being swept waits), and a reset keeps it. Otherwise the tail tables (64 entries
        # a bank) are written from them in the sweep's first 64 steps.
        rest_bits = length_bits - _PREFIX_BITS

        def tail_limits(limits):
            return Cat(*[limits[length][L - length:L - _PREFIX_BITS] for length in long_lengths])

        fill_tail = tail_limits(bank_limits(fill_bank, "fill_tail_limit"))
        if self.tail_compare:
            init = Const.cast(tail_limits([Const(limit, L + 1) for limit in limits_init])).value
            tail_copies = [Signal(len(fill_tail), init=init, reset_less=True,
                                  name=f"tail_limits{which}") for which in range(2)]
            for which, copy in enumerate(tail_copies):
                with m.If(fill_step & ~limit_write & (fill_bank == which)):
                    m.d.sync += copy.eq(fill_tail)
        else:
            tail_en = Signal(reset_less=True)
            tail_addr = Signal(rest_bits + 1, reset_less=True)
            tail_data = Signal(len(long_lengths), reset_less=True)
            m.d.sync += [
                tail_en.eq(fill_step & ~limit_write & (fill_prefix < (1 << rest_bits))),
                tail_addr.eq(Cat(fill_prefix[:rest_bits], fill_bank)),
                tail_data.eq(_tail_entry(fill_prefix[:rest_bits], fill_tail, L)),
            ]
        hold = Signal()              # the head's bank is being swept
        m.d.comb += hold.eq((fill_busy | fill_en) & (bank == fill_bank))
        # A switch (or a reset with one pending) can make the bank being swept the working
        # one; a limit write then, to the other bank, would restart the sweep there.
        m.d.comb += [sweeping_active.eq((fill_busy | fill_en) & (fill_bank == active)),
                     input_held.eq(sweeping_active | ((fill_busy | fill_en) & pending))]

        # -- code lengths at every bit position the targets need --------------------------
        # Stage 1 reads the prefix and tail tables at each position (or registers the
        # bank's tail limits) and registers the word; stage 2 registers the read data (and
        # the tail compares); stage 3 finishes each length. Stage 3 has a second register
        # (a skid), so the stages before it, and the block RAMs' read enables, move on
        # registers alone, never on whether the window takes a word this cycle.
        bits = Cat(frame_order(head.data), frame_order(queue.after.data))
        word = {"end": head.end, "fault": head.fault, "bits": head.bits, "data": head.data,
                "bank": bank}
        if split:
            # Where the escape starts, at each position (its code and length are the
            # bank's registers, so this needs no table).
            head_escape = bank_escape(bank)
            word["escape"] = Cat(*[is_escape(bits[position:position + L][::-1], head_escape)
                                   for position in range(positions)])
        loads = []                                   # (load, valid, bank) of each stage

        def register_stage(name, valid, word):
            here = Signal(name=f"{name}_valid")
            load = Signal(name=f"{name}_load")
            registered = {key: Signal.like(value, name=f"{name}_{key}")
                          if isinstance(value, Signal) else
                          Signal(len(Value.cast(value)), name=f"{name}_{key}")
                          for key, value in word.items()}
            with m.If(load):
                m.d.sync += here.eq(valid)
                m.d.sync += [registered[key].eq(value) for key, value in word.items()]
            loads.append((load, here, registered["bank"]))
            return here, registered, load

        if self.tail_compare:
            # The tail is settled in logic a stage later, from the bits and the bank's
            # tail limits registered here.
            word["window"] = bits[:positions - 1 + length_bits]
            word["tail_limits"] = Mux(bank, tail_copies[1], tail_copies[0])
        valid, word, prefix_load = register_stage("prefix", queue.head_ready & ~hold, word)
        if self.tail_compare:
            window, limits_kept = word.pop("window"), word.pop("tail_limits")
        else:
            tail_init = _tail_entries(limits_init, L)
        reads, tail_reads = [], []
        for position in range(positions):
            # A copy of the table a position (one write port and one read port, a block
            # RAM each), all written alike.
            # (``no_rw_check``: a read never uses what it reads at the address being
            # written, which is in the bank being swept, so no logic need settle it)
            copy = Memory(shape=prefix_entry_layout.size, depth=512, init=prefix_init * 2,
                          attrs={"no_rw_check": 1})
            m.submodules[f"prefix_table{position}"] = copy
            fill_write = copy.write_port()
            m.d.comb += [fill_write.en.eq(fill_en), fill_write.addr.eq(fill_addr),
                         fill_write.data.eq(fill_data)]
            read = copy.read_port(domain="sync", transparent_for=())
            m.d.comb += [read.addr.eq(Cat(bits[position:position + _PREFIX_BITS][::-1], bank)),
                         read.en.eq(prefix_load)]
            reads.append(read.data)
            if self.tail_compare:
                # and the tail: for each long length, the 6 bits after the prefix against
                # the limit's bits 9..l
                rest = window[position + _PREFIX_BITS:position + length_bits][::-1]
                tail_reads.append(_tail_entry(rest, limits_kept, L))
                continue
            # and of the tail table, read at the 6 bits after the prefix
            # (a block RAM too, not LUT RAM, which would cost ~16 LUTs a position)
            copy = Memory(shape=len(long_lengths), depth=2 << rest_bits, init=tail_init * 2,
                          attrs={"ram_style": "block", "no_rw_check": 1})
            m.submodules[f"tail_table{position}"] = copy
            tail_write = copy.write_port()
            m.d.comb += [tail_write.en.eq(tail_en), tail_write.addr.eq(tail_addr),
                         tail_write.data.eq(tail_data)]
            read = copy.read_port(domain="sync", transparent_for=())
            rest = bits[position + _PREFIX_BITS:position + length_bits][::-1]
            m.d.comb += [read.addr.eq(Cat(rest, bank)), read.en.eq(prefix_load)]
            tail_reads.append(read.data)
        # The reads and tail compares registered alone: a block RAM's data comes late in
        # the cycle. (Their registers have no reset, so nothing but a flip-flop follows
        # the block RAM; they are assigned every cycle, so a 4-state simulator never sees
        # them X.)
        valid, word, entry_load = register_stage("entry", valid, word)
        kept = [Signal(len(read), name=f"entry_read{position}", reset_less=True)
                for position, read in enumerate(reads)]
        tail_kept = [Signal(len(read), name=f"entry_tail{position}", reset_less=True)
                     for position, read in enumerate(tail_reads)]
        m.d.sync += [register.eq(Mux(entry_load, read, register))
                     for register, read in zip(kept + tail_kept, reads + tail_reads)]
        # ... and registered again, so that the first registers, which only feed the
        # second, can sit by the block RAMs (their data comes out late, and the logic
        # the second feed spreads wide).
        valid, word, copied_load = register_stage("copied", valid, word)
        copied = [Signal(len(read), name=f"copied_read{position}", reset_less=True)
                  for position, read in enumerate(kept + tail_kept)]
        m.d.sync += [register.eq(Mux(copied_load, read, register))
                     for register, read in zip(copied, kept + tail_kept)]
        kept, tail_kept = copied[:positions], copied[positions:]
        excess = [_prefix_excess(prefix_entry_layout(read), tail, L)
                  for read, tail in zip(kept, tail_kept)]

        # Stage 3: the lengths, with a skid register. ``main`` is what the targets come
        # from; a word that arrives while ``main`` holds one the next stage does not take
        # waits in ``skid``, and while it does, the stages before hold.
        lengths_layout = data.StructLayout({
            "valid": 1, "bank": 1, "end": 1, "fault": 1, "bits": head.bits.shape(),
            "data": W, "excess": data.ArrayLayout(len(excess[0]), positions),
            **({"escape": positions} if split else {})})
        arriving = Signal(lengths_layout)
        m.d.comb += [arriving.valid.eq(valid), arriving.bank.eq(word["bank"]),
                     arriving.end.eq(word["end"]), arriving.fault.eq(word["fault"]),
                     arriving.bits.eq(word["bits"]), arriving.data.eq(word["data"])]
        if split:
            m.d.comb += arriving.escape.eq(word["escape"])
        m.d.comb += [arriving.excess[position].eq(value) for position, value in enumerate(excess)]
        main = Signal(lengths_layout, name="lengths_main")
        skid = Signal(lengths_layout, name="lengths_skid")
        lengths_load = Signal()                      # the stages before move
        m.d.comb += lengths_load.eq(~skid.valid)
        take_main = Signal()                         # the next stage takes ``main``
        with m.If(skid.valid):
            with m.If(take_main):
                m.d.sync += [main.eq(skid), skid.valid.eq(0)]
        with m.Elif(~main.valid | take_main):
            m.d.sync += main.eq(arriving)
        with m.Else():
            m.d.sync += skid.eq(arriving)
        loads.append((None, main.valid, main.bank))
        loads.append((None, skid.valid, skid.bank))
        m.d.comb += [copied_load.eq(~loads[2][1] | lengths_load),
                     entry_load.eq(~loads[1][1] | copied_load),
                     prefix_load.eq(~loads[0][1] | entry_load),
                     queue.take.eq(queue.head_ready & ~hold & prefix_load)]
        valid = main.valid
        word = {key: main[key] for key in ("bank", "end", "fault", "bits", "data")}
        excess = [main.excess[position] for position in range(positions)]

        # -- jump targets ------------------------------------------------------------------
        # The code ``level`` codes after the one at x starts at x + level + excess[x],
        # excess 0 .. 14 * level; level 2: excess[x] + excess[x + 1 + excess[x]] (a mux
        # the excess selects). The targets are relative to the word's first bit.
        level = 1
        while level < M:
            spread = (L - 1) * level
            further = [
                pick(m, excess[position + level:][:spread + 1], excess[position],
                        len(excess[position]), f"further{level}_{position}")
                for position in range(W + L * (M - 2 * level))]
            excess = [Value.cast(own + more) for own, more in zip(excess, further)]
            level *= 2
        if split:
            # A part's jump takes its tail too; the escape's, the whole value.
            escape_excess = bank_escape(word["bank"]).length + (V - 1)
            excess = [Mux(main.escape[position], escape_excess, own + R)
                      for position, own in enumerate(excess)]
        targets = [position + M + own for position, own in zip(range(W), excess)]

        slot_layout = data.StructLayout({
            "valid": 1, "bank": 1, "end": 1, "fault": 1, "bits": head.bits.shape(),
            "data": W, "targets": data.ArrayLayout(target_width, W)})
        prepared = Signal(slot_layout)
        take = Signal()                              # the window takes the prepared word
        load = Signal()
        m.d.comb += [load.eq(~prepared.valid | take), take_main.eq(main.valid & load)]
        with m.If(load):
            m.d.sync += [prepared.valid.eq(valid), prepared.end.eq(word["end"]),
                         prepared.fault.eq(word["fault"]), prepared.bits.eq(word["bits"]),
                         prepared.data.eq(word["data"]), prepared.bank.eq(word["bank"])]
            m.d.sync += [prepared.targets[position].eq(targets[position])
                         for position in range(W)]

        # -- the window and the loop (:func:`~.window.jump_loop`) ---------------------------
        loop = jump_loop(m, prepared=prepared, take=take, output=self.o, word_width=W,
                         depth=Q, groups=S, jump=M, min_length=1 + (R if split else 0),
                         max_length=J, last_start=last_start, span=span,
                         pos_width=pos_width)
        slots, jumps, group_end, step, done, advance = (
            loop.slots, loop.jumps, loop.group_end, loop.step, loop.done, loop.advance)
        end_known, end_pos, end_fault = loop.end_known, loop.end_pos, loop.end_fault

        # -- after the loop: one pipeline, every stage moves on ``advance`` ------------------
        in_flight = []               # (valid, bank) of every stage after the loop

        def stage(name, value):
            register = Signal.like(value, name=name) if isinstance(value, Signal) \
                else Signal(len(Value.cast(value)), name=name)
            with m.If(advance):
                m.d.sync += register.eq(value)
            return register

        def stage_ctrl(prefix, ctrl):
            ctrl = {key: stage(f"{prefix}_{key}", value) for key, value in ctrl.items()}
            in_flight.append((ctrl["valid"], ctrl["bank"]))
            return ctrl

        def forward(name, values):
            return [stage(f"{name}{index}", value) for index, value in enumerate(values)]

        # Frame facts that travel with a group.
        ctrl = stage_ctrl("group", {
            "valid": step | done, "done": done, "end_known": end_known, "end_pos": end_pos,
            "fault": end_fault, "group_end": group_end, "bank": slots[0].bank})
        window_bits = stage("group_bits", Cat(*[frame_order(slot.data) for slot in slots]))
        subs = forward("group_jump", jumps)

        # Each jump's codes, aligned to its first code; each jump's length in bits.
        segment_width = J * M
        segments = forward("segment", [
            bits_at(window_bits, at, segment_width, last_start + J * M * index)
            for index, at in enumerate(subs[:S])])
        spans = forward("segment_span", [(after - at)[:(J * M).bit_length()]
                                        for at, after in zip(subs, subs[1:])])
        subs = forward("segment_at", subs[:S])
        ctrl = stage_ctrl("segment", ctrl)

        # The codes of each jump: (bits in frame order, start, length).
        if split:
            # Whether each jump is the escape (its first bits, compared with the bank's
            # escape), and so its code's length: the escape's, or the jump less the tail.
            group_escape = bank_escape(ctrl["bank"])
            escaped = [is_escape(segment[:L][::-1], group_escape) for segment in segments]
            lengths_ = forward("split_length", [
                Mux(escape, group_escape.length, span_ - R)[:4]
                for escape, span_ in zip(escaped, spans)])
            escaped = forward("split_escape", escaped)
            segments = forward("split_segment", segments)
            spans = forward("split_span", spans)
            subs = forward("split_at", subs)
            ctrl = stage_ctrl("split", ctrl)
            codes = [(segment[:L], at, length)
                     for segment, at, length in zip(segments, subs, lengths_)]
        elif M == 1:
            codes = [(segment[:L], at, span_[:4])
                     for segment, at, span_ in zip(segments, subs, spans)]
        else:
            # The first code's length from comparisons, as at every position before the
            # loop (with this group's bank); the second code follows it.
            group_limits = bank_limits(ctrl["bank"], "group_limit")
            firsts = forward("first_length", [
                _code_excess(segment[:length_bits], group_limits, L) + 1
                for segment in segments])
            segments = forward("first_segment", segments)
            spans = forward("first_span", spans)
            subs = forward("first_at", subs)
            ctrl = stage_ctrl("first", ctrl)
            seconds = forward("second_code", [
                bits_at(segment, first, L, L) for segment, first in zip(segments, firsts)])
            codes = []
            for index in range(S):
                codes.append((stage(f"second_first{index}", segments[index][:L]),
                              stage(f"second_at{index}a", subs[index]),
                              stage(f"second_length{index}a", firsts[index][:4])))
                codes.append((seconds[index],
                              stage(f"second_at{index}b", subs[index] + firsts[index]),
                              stage(f"second_length{index}b",
                                    (spans[index] - firsts[index])[:4])))
            ctrl = stage_ctrl("second", ctrl)

        # Each lane: in the frame, complete, a code at all; its code's low 8 bits and the
        # offset of its length, for the index.
        lane_limits = bank_limits(ctrl["bank"], "lane_limit")
        lanes = []
        for lane, ((code_bits, at, length), read) in enumerate(zip(codes, offset_table.read)):
            number = code_bits[::-1]                 # the 15 bits as a number, MSB first
            room = Signal(range(-(1 << pos_width) - 1, 1 << pos_width), name=f"room{lane}")
            m.d.comb += room.eq(ctrl["end_pos"] - at)
            present = ~ctrl["end_known"] | (room > 0)
            # (a value's whole jump, its tail or escaped value too, within the frame)
            needed = spans[lane] if split else length
            complete = ~ctrl["end_known"] | (room >= needed)
            starts = number < lane_limits[L]
            m.d.comb += read.addr.eq(Cat(length, ctrl["bank"]))
            lanes.append({
                "present": stage(f"lane{lane}_present", present),
                "good": stage(f"lane{lane}_good", present & complete & starts),
                "code": stage(f"lane{lane}_code", (number >> (L - length)[:4])[:K]),
                "offset": stage(f"lane{lane}_offset", read.data)})
            if split:
                # The V bits after the code, as a number: the tail in its top R bits, or
                # the escaped value.
                lanes[-1]["raw"] = stage(f"lane{lane}_raw",
                                         bits_at(segments[lane], length, V, L)[::-1])
                lanes[-1]["escape"] = stage(f"lane{lane}_escape", escaped[lane])
        ctrl = stage_ctrl("lanes", ctrl)

        # The beat: symbols up to the first lane that is not good; the frame ends there,
        # with an error unless that lane is past the frame's end in a frame with no fault.
        beat_count, beat_last, beat_error, dropping = beat_end(m, lanes, ctrl, advance)
        for lane, read in zip(lanes, table_reads):
            m.d.comb += [read.addr.eq(Cat((lane["code"] + lane["offset"])[:K], ctrl["bank"])),
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
            value = read.data
            if split:
                # A part and its tail, or the escaped value.
                raw = stage(f"out_raw{index}", lanes[index]["raw"])
                escaped = stage(f"out_escape{index}", lanes[index]["escape"])
                value = Mux(escaped, raw, Cat(raw[V - R:], read.data))
            m.d.comb += self.o.payload.symbols[index].eq(
                Mux(index < self.o.payload.count, value, 0))

        # Frames of the bank that became idle are still in flight: hold config writes.
        in_flight += [(stage_valid, stage_bank) for _, stage_valid, stage_bank in loads]
        in_flight += [(prepared.valid, prepared.bank)]
        in_flight += [(slot.valid, slot.bank) for slot in slots]
        in_flight += [(self.o.valid, out_bank)]
        m.d.comb += old_in_use.eq(banks.idle_in_use(in_flight))
        return m


# -- on the link ------------------------------------------------------------------------

class HuffmanLinkHardware(LinkHardware):
    """e4m3 Huffman in a link stream: a 1-lane :class:`HuffmanEncoder` and
    :class:`HuffmanDecoder`, holding a canonical codebook (:func:`check_codebook`)."""

    name = "huffman"
    encoder_config_layout = decoder_config_layout = config_layout
    encoder_switch = decoder_switch = SWITCH_ADDR

    def tables(self, tables=None):
        return check_codebook(default_codebook() if tables is None else tables)

    def code_lengths(self, tables):
        return [int(length) for length in tables.lengths]

    def block(self, kind, tables):
        block = {"encoder": HuffmanEncoder, "decoder": HuffmanDecoder}[kind]
        return block(lanes=1, word_width=LINK_WORD_WIDTH, tables=tables)
