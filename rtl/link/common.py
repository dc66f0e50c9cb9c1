"""What every stage of the link shares: its constants, its checked parameters
(:class:`LinkParams`), the flit header's bits, and the row and byte helpers of its
flit buffers."""

from amaranth.hdl import Cat, Const, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ...golden.link import HEADER_BYTES, LinkFormat
from ..bitpack import RegisterSlice
from ..link_codec import link_hardware
from ..payload import flit_header_layout
from ..retry import RETRY_DEPTHS, check_ack_latency, check_link_shape
from ..table_loader import IMAGE_BYTES, TableLoader, image_byte_layout

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
TX_TABLE_STATES = ("idle", "wait", "write", "send", "lead", "report")
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


def sliced_loader(m, codec, block):
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


class LinkParams:
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


def checked_params(component, **params):
    """:class:`LinkParams` for ``component``; a component refused is not an unused one
    (Amaranth warns of those)."""
    try:
        return LinkParams(**params)
    except (TypeError, ValueError):
        component._MustUse__silence = True
        raise


def header_bits(*, codec, bank, last, stream, count, bits, table=0):
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


def header_fields(header):
    """The 32 header bits ``header`` read as :func:`flit_header_layout`'s fields."""
    return data.View(flit_header_layout(), header)


def byte_enables(position, size, link_bytes):
    """Write enables (one a byte, the row's first byte the top one) of ``size`` (1 or 2)
    bytes from flit byte ``position`` of a row of ``link_bytes`` (2 bytes start at an
    even byte): a decoder of the column, no comparator."""
    column = position[:(link_bytes - 1).bit_length()]
    at = [column == byte for byte in range(link_bytes)]
    if size == 2:
        at = [at[byte & ~1] for byte in range(link_bytes)]
    return Cat(*reversed(at))


def above_constant(value, constant):
    """``value > constant`` as and/or terms of ``value``'s bits (a carry chain for each of
    many such compares costs more than the LUTs): from the LSB up, the bits so far are
    above the constant's if this bit is above its bit, or equal and the lower ones above."""
    if constant >> len(value):
        return Const(0, 1)
    result = Const(0, 1)
    for bit in range(len(value)):
        result = value[bit] & result if constant >> bit & 1 else value[bit] | result
    return result


def index_of_one_hot(one_hot):
    """The index of the one set bit of ``one_hot``: an OR of the indices' bits."""
    width = max(1, (len(one_hot) - 1).bit_length())
    return Cat(*[Cat(*[one_hot[index] for index in range(len(one_hot))
                       if index >> bit & 1]).any() for bit in range(width)])


def byte_of_row(row, column, link_bytes):
    """Byte ``column`` (0 is the row's first byte, its top bits) of ``row``."""
    return row.word_select(link_bytes - 1 - column, 8)


def word_of_row(row, byte):
    """The 16 bits of ``row`` that hold its byte ``byte`` (a signal below the row's bytes,
    a power of two): bytes ``byte & ~1`` and ``byte | 1``, the first in the top bits. Byte
    c of a row is its (bytes - 1 - c)-th from the bottom: ~c."""
    return row.word_select((~byte)[1:], 16)


def byte_of_word(word, byte):
    """Byte ``byte`` (its lowest bit, as read by :func:`word_of_row`) of ``word``."""
    return Mux(byte[0], word[:8], word[8:])


# -- the transmitter ---------------------------------------------------------------------

def flit_source(params):
    """The ports by which LinkTx's link side reads a full flit (a stream's, or a table
    flit): ``flit_valid``, ``row`` in and ``row_data`` out a cycle later (the flit's row
    as it goes on the link: :func:`shaped_row`), and ``flit_taken`` after its last
    row."""
    return {
        "flit_valid": Out(1),
        "flit_taken": In(1),
        "row": In(range(params.pieces)),
        "row_data": Out(params.piece_bits),
    }


def shaped_row(m, params, *, read_data, row, header, end, number=None):
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
                                         & above_constant(end_column, column))
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
        kept = Mux(keep[column], byte_of_row(read_data, column, piece_bytes), 0)
        if column < HEADER_BYTES:
            kept = Mux(first, header.word_select(HEADER_BYTES - 1 - column, 8), kept)
        if column == number_column:
            kept = Mux(last, held, kept)
        out.append(kept)
    return Cat(*reversed(out))




class LinkBlock(wiring.Component):
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
