"""Link flits: the golden model of how a link carries coded frames (``docs/bitstream.md``,
"Link flits").

A link carries fixed-size *flits* (``flit_bytes``: 64, 128 or 256, the last as a UCIe
256-byte flit in raw streaming mode). Each flit is::

    header (4 bytes) | body | [sequence (1 byte)] | CRC field (2 bytes a 128-byte half)

The header (:class:`FlitHeader`, 32 bits, most significant first) names the flit's codec
(raw, QLC, Huffman, exponent remap), whether it carries a table, the table bank, whether
it ends a frame, its stream, its symbol count and how many body bits it uses. The CRC
field holds UCIe's CRC-16 (:mod:`linkcodec.golden.crc`) of each 128-byte half of the
flit, the CRC field itself read as zero (:func:`flit_crcs`); a 64-byte flit is one half,
zero-extended. A reader checks it before anything else. A link with retry
(``LinkFormat(..., sequence="link")``) gives up the body's last byte for a *sequence
number*: the flit's place in link order, modulo 256 (:func:`numbered`,
:func:`flit_sequence`). The writer leaves it 0; the link's retry layer (``rtl/retry.py``)
fills it as it sends each flit, so that the receiver can refuse a flit that is out of
order, lost or repeated, and ask for it again (go-back-N). A link without retry may
number its flits stream by stream instead (``sequence="stream"``): the same byte holds
the flit's frame on its stream and its place in that frame, each modulo 16
(:func:`stream_number`), which the writer fills; a receiver (:class:`StreamCheck`) then
tells a lost flit, a lost frame end and a repeated flit apart without asking for
anything again, and reports the lost symbols where they were. A stream's last flits,
lost, are told by a *status flit* (:meth:`FlitWriter.status`): a raw flit of no symbols
that does not end a frame, numbered as the stream's next flit will be, which a sender
puts on the link while the stream is idle; it carries nothing and moves no number on.

- **Data flits.** A frame is cut into flits at symbol boundaries; each flit's symbols are
  coded on their own (a flit is one frame for the codec), so a flit decodes without any
  other and a lost or corrupt flit costs its own symbols only. A flit is coded only if
  that carries more symbols than raw would: otherwise it goes **raw** (the symbols'
  bytes), so no frame takes more flits than its raw bytes need
  (:meth:`LinkFormat.raw_flits`). An empty frame is one raw flit of no symbols that ends
  the frame.
- **Streams.** A link carries ``streams`` independent symbol streams side by side, each
  with its own encoder and decoder; a flit names its stream, the flits of different
  streams may interleave in any order, and the receiver gives each stream's frames back
  in the order they were sent on it.
- **Tables travel in band.** A table flit carries part of a table image
  (:func:`table_image`) into a bank (0 or 1) at a byte offset (the header's count); the
  piece with ``last`` completes it. Data flits name the bank their symbols were coded
  with. :class:`FlitWriter` loads each new table into the bank the data flits do not use,
  and switches to it at the next frame; the receiver (:class:`FlitReader`) refuses a data
  flit whose bank holds no complete table.

:class:`FlitWriter` makes flits from frames and tables, :class:`FlitReader` gives the
frames back, exactly, and raises :class:`FlitError` (naming the flit, the field and,
for a bad code, the body bit) for a flit that no writer makes.
"""

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from .bitstream import as_index, as_symbols
from .crc import CRC_MESSAGE_BYTES, crc16
from .link_codec import codec_name, link_codec
from .qlc import canonical_qlc

__all__ = [
    "DEFAULT_FLIT_BYTES",
    "FLIT_BYTES",
    "HEADER_BYTES",
    "HEADER_FIELDS",
    "MAX_STREAMS",
    "FlitError",
    "FlitHeader",
    "FlitReader",
    "FlitWriter",
    "LinkFormat",
    "LinkStats",
    "SEQUENCES",
    "STREAM_AHEAD",
    "StreamCheck",
    "Verdict",
    "canonical_qlc",
    "deal",
    "flit_crcs",
    "flit_sequence",
    "flits_from_frames",
    "frames_from_flits",
    "is_status",
    "status_flit",
    "link_stats",
    "numbered",
    "reheadered",
    "seal",
    "stream_number",
    "table_from_image",
    "table_image",
]

#: Bytes of the sequence number in a numbered flit (before the CRC field).
SEQUENCE_BYTES = 1
#: How a link numbers its flits: not at all, in link order (retry) or stream by stream.
SEQUENCES = (None, "link", "stream")
#: A stream number's fields: the frame on its stream (top 4 bits) and the flit's place
#: in that frame (low 4 bits), each modulo 16.
STREAM_NUMBER_BITS = 4
#: How far ahead of the expected one a stream number may be and still count as ahead
#: (flits of a frame, or frame ends, lost in a row); 15 ahead is 1 behind: a flit
#: repeated.
STREAM_AHEAD = 14

#: Flit sizes a link can have, in bytes.
FLIT_BYTES = (64, 128, 256)
DEFAULT_FLIT_BYTES = 256
#: Bytes of the flit header.
HEADER_BYTES = 4
#: CRC bytes a 128-byte half of a flit reserves (a 64-byte flit counts as one half).
CRC_BYTES_PER_HALF = 2
#: Streams a link can deal flits to (the header's 4-bit stream field).
MAX_STREAMS = 16
#: Widths of the header's count and bits fields.
COUNT_BITS = 12
BITS_BITS = 11
class FlitError(ValueError):
    """A flit that no :class:`FlitWriter` makes. ``flit`` is its index in the sequence,
    ``field`` the header field or part at fault (``"size"``, ``"codec"``, ``"stream"``,
    ``"bank"``, ``"count"``, ``"bits"``, ``"body"``, ``"pad"``, ``"crc"``, ``"table"``,
    ``"end"``, ``"sequence"``: a stream number out of its stream's order) and ``bit``
    the body bit position concerned, if any."""

    def __init__(self, message, *, flit, field, bit=None):
        super().__init__(f"flit {flit}: {message}")
        self.flit, self.field, self.bit = flit, field, bit


#: The header's fields, least significant first, and their widths in bits: the one
#: definition of the header, which :class:`FlitHeader` packs and unpacks and
#: :func:`linkcodec.rtl.payload.flit_header_layout` makes a ``StructLayout`` of.
HEADER_FIELDS = (("bits", BITS_BITS), ("count", COUNT_BITS), ("stream", 4), ("last", 1),
                 ("bank", 1), ("table", 1), ("codec", 2))


@dataclass(frozen=True)
class FlitHeader:
    """The 4-byte header, big-endian, its fields as :data:`HEADER_FIELDS` places them:
    ``codec`` (bits 31-30: 0 raw, else a link codec's ``codec_id``), ``table`` (29), ``bank`` (28),
    ``last`` (27), ``stream`` (26-23), ``count`` (22-11: symbols of a data flit, byte
    offset of a table piece) and ``bits`` (10-0: body bits used, from the body's first
    bit)."""

    codec: int
    table: bool
    bank: int
    last: bool
    stream: int
    count: int
    bits: int

    def pack(self):
        """The header's 4 bytes; a field whose value does not fit its bits is refused,
        by name."""
        word, low = 0, 0
        for name, width in HEADER_FIELDS:
            value = int(getattr(self, name))
            if not 0 <= value < 1 << width:
                raise ValueError(f"header field {name!r} (bits {low}-{low + width - 1}) "
                                 f"holds 0..{(1 << width) - 1}, not {value}")
            word |= value << low
            low += width
        return word.to_bytes(HEADER_BYTES, "big")

    @classmethod
    def unpack(cls, data):
        """The header in the first 4 bytes of ``data``."""
        word = int.from_bytes(bytes(data[:HEADER_BYTES]), "big")
        fields, low = {}, 0
        for name, width in HEADER_FIELDS:
            fields[name] = word >> low & ((1 << width) - 1)
            low += width
        return cls(**{name: bool(value) if name in ("table", "last") else value
                      for name, value in fields.items()})


def _crc_field_bytes(flit_bytes):
    return CRC_BYTES_PER_HALF * max(1, flit_bytes // CRC_MESSAGE_BYTES)


def flit_crcs(flit):
    """The CRC of each 128-byte half of ``flit`` (a whole flit of :data:`FLIT_BYTES`),
    first half first, its CRC field read as zero: the values its CRC field holds, each as
    two bytes, low byte first (``docs/bitstream.md``, "CRC")."""
    flit = bytes(flit)
    if len(flit) not in FLIT_BYTES:
        raise ValueError(f"a flit is {', '.join(map(str, FLIT_BYTES))} bytes, not "
                         f"{len(flit)}")
    field = _crc_field_bytes(len(flit))
    message = flit[:-field] + bytes(field)
    return [crc16(message[start:start + CRC_MESSAGE_BYTES])
            for start in range(0, len(flit), CRC_MESSAGE_BYTES)]


def seal(flit):
    """``flit`` with its CRC field set to :func:`flit_crcs`."""
    flit = bytes(flit)
    crcs = flit_crcs(flit)
    return flit[:-_crc_field_bytes(len(flit))] + b"".join(
        crc.to_bytes(CRC_BYTES_PER_HALF, "little") for crc in crcs)


def _bits_to_bytes(bits):
    return (bits + 7) // 8


def table_image(codec, tables):
    """The bytes a table flit carries for ``tables`` of ``codec``: QLC, the 8 areas
    (``suffix_bits << 12 | size``, 2 bytes each) then each symbol's area (3 bits a
    symbol, symbol 0 first; the code is :func:`canonical_qlc`); Huffman, the 256 code
    lengths as nibbles (symbol 0 in the high nibble; canonical codes); exponent, the 7
    exponents of codes 1..7."""
    codec = link_codec(codec)
    return codec.image(codec.check_tables(tables))


def table_from_image(codec, image):
    """The tables :func:`table_image` wrote into ``image``; ``ValueError`` if no table
    has that image."""
    codec = link_codec(codec)
    image = bytes(image)
    if len(image) != codec.image_bytes():
        raise ValueError(f"a {codec.name} table image is {codec.image_bytes()} bytes, not "
                         f"{len(image)}")
    return codec.from_image(image)


# -- the format ------------------------------------------------------------------------

class LinkFormat:
    """A link's flit format: ``codec`` (``"qlc"``, ``"huffman"`` or ``"exponent"``),
    ``streams`` (1..16), ``flit_bytes`` (64, 128 or 256) and ``sequence`` (one of
    :data:`SEQUENCES`: ``"link"``, a link with retry, or ``"stream"``, numbered stream by
    stream: each flit's last byte before the CRC field is its number, and the body is a
    byte shorter)."""

    def __init__(self, codec, *, streams=1, flit_bytes=DEFAULT_FLIT_BYTES, sequence=None):
        self.codec = link_codec(codec).name
        streams = as_index(streams, "streams")
        if not 1 <= streams <= MAX_STREAMS:
            raise ValueError(f"streams must be 1..{MAX_STREAMS}, not {streams}")
        flit_bytes = as_index(flit_bytes, "flit_bytes")
        if flit_bytes not in FLIT_BYTES:
            raise ValueError(f"flit_bytes must be one of {', '.join(map(str, FLIT_BYTES))}, "
                             f"not {flit_bytes}")
        if sequence not in SEQUENCES:
            raise ValueError(f"sequence must be None, 'link' or 'stream', not {sequence!r}")
        self.streams, self.flit_bytes, self.sequence = streams, flit_bytes, sequence

    def __repr__(self):
        return (f"LinkFormat({self.codec!r}, streams={self.streams}, "
                f"flit_bytes={self.flit_bytes}"
                + (f", sequence={self.sequence!r})" if self.sequence else ")"))

    @property
    def codec_id(self):
        """The header's codec field for coded data flits and table flits."""
        return link_codec(self.codec).codec_id

    @property
    def symbol_bytes(self):
        """Bytes a raw symbol takes: 1 (e4m3) or 2 (bf16, the exponent codec)."""
        return link_codec(self.codec).symbol_bytes

    @property
    def crc_bytes(self):
        return _crc_field_bytes(self.flit_bytes)

    @property
    def sequence_bytes(self):
        """Bytes of the sequence number: 1 with a ``sequence``, else 0."""
        return SEQUENCE_BYTES if self.sequence else 0

    @property
    def sequence_offset(self):
        """The byte of the flit that holds its sequence number (with ``sequence``)."""
        if not self.sequence:
            raise ValueError(f"{self!r} has no sequence number")
        return self.flit_bytes - self.crc_bytes - SEQUENCE_BYTES

    @property
    def body_bytes(self):
        return self.flit_bytes - HEADER_BYTES - self.sequence_bytes - self.crc_bytes

    @property
    def body_bits(self):
        return 8 * self.body_bytes

    @property
    def raw_symbols(self):
        """Symbols a raw flit carries (a full one)."""
        return self.body_bytes // self.symbol_bytes

    @property
    def max_count(self):
        """Most symbols a data flit carries (the count field's range)."""
        return (1 << COUNT_BITS) - 1

    def raw_flits(self, symbols):
        """Flits a frame of ``symbols`` takes raw: the bound no frame exceeds."""
        return max(1, -(-symbols // self.raw_symbols))

    def flit(self, header, body=b""):
        """A whole flit: ``header``, then ``body`` zero-padded, then the CRC field
        (:func:`seal`)."""
        body = bytes(body)
        if len(body) > self.body_bytes:
            raise ValueError(f"a body of {len(body)} bytes does not fit {self.body_bytes}")
        return seal(header.pack() + body + bytes(self.body_bytes - len(body))
                    + bytes(self.sequence_bytes + self.crc_bytes))


def _check_format(fmt):
    if not isinstance(fmt, LinkFormat):
        raise TypeError(f"fmt must be a LinkFormat, not {type(fmt).__name__}")
    return fmt


# -- writer ----------------------------------------------------------------------------

def _numbered_flit(fmt, flit):
    """``(flit as bytes, its sequence byte's offset)``, checked: a flit of ``fmt``, a
    format with ``sequence``."""
    offset = _check_format(fmt).sequence_offset
    flit = bytes(flit)
    if len(flit) != fmt.flit_bytes:
        raise ValueError(f"a flit of {fmt!r} is {fmt.flit_bytes} bytes, not {len(flit)}")
    return flit, offset


def numbered(fmt, flit, sequence):
    """``flit`` of a link of ``fmt`` (with ``sequence``) as the retry layer sends it: its
    sequence byte set to ``sequence`` modulo 256, and sealed again (:func:`seal`)."""
    flit, offset = _numbered_flit(fmt, flit)
    sequence = as_index(sequence, "sequence")
    if sequence < 0:
        raise ValueError(f"a sequence number is 0 or more, not {sequence}")
    return seal(flit[:offset] + bytes([sequence & 0xFF]) + flit[offset + 1:])


def reheadered(flit, **fields):
    """``flit`` with its header's ``fields`` (:class:`FlitHeader`'s) changed, every other
    byte as it was (a sequence number too), and sealed again (:func:`seal`): a flit that
    claims what a test wants, with a good CRC."""
    header = replace(FlitHeader.unpack(flit), **fields)
    return seal(header.pack() + bytes(flit)[HEADER_BYTES:])


def flit_sequence(fmt, flit):
    """The sequence number ``flit`` (of a link of ``fmt``, with ``sequence``) carries."""
    flit, offset = _numbered_flit(fmt, flit)
    return flit[offset]


def stream_number(frame, place):
    """The sequence byte of a flit of a link numbered stream by stream: ``frame`` (the
    frame's number on its stream, from 0) in the top 4 bits and ``place`` (the flit's
    place in its frame, from 0) in the low 4, each modulo 16."""
    frame, place = as_index(frame, "frame"), as_index(place, "place")
    if frame < 0 or place < 0:
        raise ValueError(f"a frame and a place are 0 or more, not {frame} and {place}")
    mask = (1 << STREAM_NUMBER_BITS) - 1
    return (frame & mask) << STREAM_NUMBER_BITS | (place & mask)


def is_status(header):
    """Whether ``header`` (a :class:`FlitHeader`) is a status flit's: a raw data flit of
    no symbols that does not end a frame (no writer's data flit is one: a frame's flits
    carry a symbol each at least, and an empty frame's one flit ends it)."""
    return not header.table and header.codec == 0 and header.count == 0 and not header.last


def status_flit(fmt, stream, number, *, bank=0):
    """The status flit of ``stream`` on a link of ``fmt`` (numbered stream by stream)
    that tells the receiver its next flit is numbered ``number`` (:func:`stream_number`):
    a raw header of no symbols that does not end a frame, naming ``bank``."""
    if _check_format(fmt).sequence != "stream":
        raise ValueError(f"status flits are for a link numbered stream by stream "
                         f"(sequence='stream'), not {fmt!r}")
    header = FlitHeader(codec=0, table=False, bank=bank, last=False, stream=stream,
                        count=0, bits=0)
    return numbered(fmt, fmt.flit(header), number)


class Verdict(NamedTuple):
    """What a receiver of a link numbered stream by stream does with a good data flit
    (:meth:`StreamCheck.take`): ``skip`` it (a flit repeated, or older than the one
    expected: nothing of it goes out), or first give ``ends`` error beats that end a
    frame (each a frame end lost: the frame in progress, or a whole frame) and then, if
    ``hole``, one error beat inside a frame (flits of the flit's own frame lost before
    it), then its symbols."""

    skip: bool
    ends: int
    hole: bool


class StreamCheck:
    """The stream numbers a receiver without retry expects, one stream's: the frame in
    progress or next (``frame``) and the place of the flit it expects next in it
    (``place``), both modulo 16. :meth:`take` judges a good data flit by its number
    (:func:`stream_number`) and ``last`` flag; a flit that fails its CRC is not taken
    (it changes nothing: its loss shows at the stream's next good flit).

    A number ahead of the one expected by 1 to :data:`STREAM_AHEAD` (14; frames first,
    then places in the same frame) says what was lost: frame ends (``ends``, one a
    frame) and flits of this flit's frame before it (``hole``). One behind (15 ahead) it
    is a repeat: ``skip``. So a stream may lose up to 14 frame ends, or 14 flits of a
    frame, in a row and be told exactly. After 15 or more in a row the check loses its
    place: good flits are taken for repeats and skipped (after 15 frame ends, the whole
    next frame), and a loss of 16 shows nothing at all, so frames can go missing or run
    together with no error beat."""

    def __init__(self):
        self.frame = self.place = 0

    @property
    def expected(self):
        """The number of the flit expected next (:func:`stream_number`)."""
        return stream_number(self.frame, self.place)

    def take(self, number, last, *, status=False):
        """The :class:`Verdict` on a good data flit numbered ``number`` (its sequence
        byte) that ends a frame if ``last``; the expectation moves past it unless it is
        skipped. A ``status`` flit (:func:`is_status`) is numbered as the flit after it:
        its verdict tells what was lost before it, and the expectation moves to it, not
        past it (a status flit repeated changes nothing)."""
        number = as_index(number, "number")
        if not 0 <= number <= 0xFF:
            raise ValueError(f"a stream number is a byte, not {number}")
        mask = (1 << STREAM_NUMBER_BITS) - 1
        frame, place = number >> STREAM_NUMBER_BITS, number & mask
        frames = (frame - self.frame) & mask
        places = (place - self.place) & mask
        if frames > STREAM_AHEAD or (frames == 0 and places > STREAM_AHEAD):
            return Verdict(skip=True, ends=0, hole=False)
        verdict = Verdict(skip=False, ends=frames,
                          hole=place != 0 if frames else places != 0)
        if status:
            self.frame, self.place = frame, place
        elif last:
            self.frame, self.place = (frame + 1) & mask, 0
        else:
            self.frame, self.place = frame, (place + 1) & mask
        return verdict


class FlitWriter:
    """Makes flits: :meth:`load` a table, :meth:`frame` a frame, :meth:`status` a status
    flit. The data flits name bank 0 until a table is loaded; ``tables`` are the tables
    both banks hold from the start (as ``LinkTx``'s elaboration tables), else every flit
    goes raw until a table is loaded."""

    def __init__(self, fmt, tables=None):
        self.fmt = _check_format(fmt)
        self._codec = link_codec(fmt.codec)
        held = None if tables is None else self._codec.check_tables(tables)
        self._tables = [held, held]
        self._bank = 0              # the bank the next data flit codes with
        self._frames = [0] * fmt.streams    # each stream's frames so far (stream numbers)

    def load(self, tables):
        """Table flits that load ``tables`` into the bank the data flits do not use (bank
        1 first, as ``LinkTx`` loads it); the next frame is coded with it."""
        tables = self._codec.check_tables(tables)
        image = self._codec.image(tables)
        bank = 1 - self._bank
        flits = []
        step = self.fmt.body_bytes
        for offset in range(0, len(image), step):
            piece = image[offset:offset + step]
            header = FlitHeader(codec=self.fmt.codec_id, table=True, bank=bank,
                                last=offset + step >= len(image), stream=0, count=offset,
                                bits=8 * len(piece))
            flits.append(self.fmt.flit(header, piece))
        self._tables[bank] = tables
        self._bank = bank
        return flits

    def frame(self, symbols, stream=0):
        """Data flits that carry one frame of ``symbols`` (uint8 e4m3 bytes, or uint16
        bf16 patterns for the exponent codec) on ``stream``."""
        stream = as_index(stream, "stream")
        if not 0 <= stream < self.fmt.streams:
            raise ValueError(f"stream must be 0..{self.fmt.streams - 1}, not {stream}")
        symbols = self._symbols(symbols)
        tables = self._tables[self._bank]
        fmt = self.fmt
        flits = []
        position = 0
        most = min(fmt.max_count, fmt.body_bits)   # a code takes at least a bit
        while True:
            left = symbols.size - position
            raw = min(left, fmt.raw_symbols)
            fits = 0
            if tables is not None:
                ends = self._codec.flit_bits(tables, symbols[position:position + most])
                fits = int(np.searchsorted(ends, fmt.body_bits, side="right")) - 1
            take = max(fits, raw)
            chunk = symbols[position:position + take]
            position += take
            last = position == symbols.size
            if fits > raw:
                body, nbits = self._codec.encode(tables, chunk)
                codec = fmt.codec_id
            else:
                body = chunk.astype(">u2").tobytes() if fmt.symbol_bytes == 2 else chunk.tobytes()
                nbits, codec = 8 * len(body), 0
            header = FlitHeader(codec=codec, table=False, bank=self._bank, last=last,
                                stream=stream, count=take, bits=nbits)
            flit = fmt.flit(header, body)
            if fmt.sequence == "stream":
                flit = numbered(fmt, flit, stream_number(self._frames[stream], len(flits)))
            flits.append(flit)
            if last:
                self._frames[stream] += 1
                return flits

    def status(self, stream=0):
        """The status flit of ``stream`` between frames (a link numbered stream by stream
        only): numbered as the stream's next flit, the next frame's first."""
        stream = as_index(stream, "stream")
        if not 0 <= stream < self.fmt.streams:
            raise ValueError(f"stream must be 0..{self.fmt.streams - 1}, not {stream}")
        return status_flit(self.fmt, stream, stream_number(self._frames[stream], 0),
                           bank=self._bank)

    def _symbols(self, symbols):
        if self.fmt.symbol_bytes == 2:
            array = np.asarray(symbols)
            if array.dtype != np.uint16:
                raise TypeError(f"the exponent link carries uint16 bf16 patterns, not "
                                f"{array.dtype}")
            return array.reshape(-1)
        return as_symbols(symbols).reshape(-1)


# -- reader ----------------------------------------------------------------------------

class FlitReader:
    """Reads flits back into frames: :meth:`read` takes one flit and returns ``(stream,
    frame)`` for the frame it completes, or None. Raises :class:`FlitError` for a flit no
    writer makes. ``tables``: the tables both banks hold from the start (as ``LinkRx``'s
    elaboration tables), else none until a table flit loads one."""

    def __init__(self, fmt, tables=None):
        self.fmt = _check_format(fmt)
        self._codec = link_codec(fmt.codec)
        held = None if tables is None else self._codec.check_tables(tables)
        self._tables = [held, held]
        self._pieces = [b"", b""]
        self._frames = {}            # stream: the symbol arrays of its frame in progress
        self._checks = [StreamCheck() for _ in range(fmt.streams)]  # stream numbers
        self.index = 0               # flits read

    @property
    def in_frame(self):
        """The streams whose flits so far end inside a frame."""
        return sorted(self._frames)

    def read(self, flit):
        index = self.index
        self.index += 1
        header, body = self._check(flit, index)
        if header.table:
            self._read_table(header, body, index)
            return None
        return self._read_data(header, body, index, bytes(flit))

    def _check(self, flit, index):
        """The header and body of ``flit``, checked for what every flit must be."""
        fmt = self.fmt
        flit = bytes(flit)
        if len(flit) != fmt.flit_bytes:
            raise FlitError(f"is {len(flit)} bytes; the link's flits are {fmt.flit_bytes}",
                            flit=index, field="size")
        field = flit[fmt.flit_bytes - fmt.crc_bytes:]
        for half, crc in enumerate(flit_crcs(flit)):
            got = int.from_bytes(field[2 * half:2 * half + 2], "little")
            if got != crc:
                raise FlitError(f"the CRC of half {half} (bytes {128 * half} to "
                                f"{min(fmt.flit_bytes, 128 * half + 128) - 1}) is "
                                f"{crc:#06x}; its CRC field holds {got:#06x}", flit=index,
                                field="crc")
        header = FlitHeader.unpack(flit)
        body = flit[HEADER_BYTES:HEADER_BYTES + fmt.body_bytes]
        if header.bits > fmt.body_bits:
            raise FlitError(f"claims {header.bits} body bits; the body holds "
                            f"{fmt.body_bits}", flit=index, field="bits")
        self._check_pad(body, header.bits, index)
        return header, body

    def _check_pad(self, body, nbits, index):
        bits = np.unpackbits(np.frombuffer(body, dtype=np.uint8))
        pad = np.flatnonzero(bits[nbits:])
        if pad.size:
            bit = nbits + int(pad[0])
            raise FlitError(f"body bit {bit}, past the {nbits} bits the header claims, is "
                            f"set; pad bits are zero", flit=index, field="pad", bit=bit)

    def _read_table(self, header, body, index):
        fmt = self.fmt
        if header.codec != fmt.codec_id:
            raise FlitError(f"is a table flit of codec {codec_name(header.codec)!r} on a "
                            f"{fmt.codec} link", flit=index, field="codec")
        if header.bits % 8:
            raise FlitError(f"a table piece is whole bytes, not {header.bits} bits",
                            flit=index, field="bits")
        have = self._pieces[header.bank]
        if header.count != len(have):
            raise FlitError(f"loads bank {header.bank} at byte {header.count}; the table "
                            f"has {len(have)} bytes so far", flit=index, field="count")
        image = have + body[:header.bits // 8]
        size = self._codec.image_bytes()
        if len(image) > size or (header.last and len(image) != size):
            raise FlitError(f"makes a {fmt.codec} table image of {len(image)} bytes; it is "
                            f"{size}", flit=index, field="table")
        self._tables[header.bank] = None
        if header.last:
            try:
                self._tables[header.bank] = self._codec.from_image(image)
            except ValueError as error:
                raise FlitError(f"holds no {fmt.codec} table: {error}", flit=index,
                                field="table") from None
            image = b""
        self._pieces[header.bank] = image

    def symbols(self, flit):
        """The symbols of one data ``flit`` on its own, with the tables read so far: a
        flit needs no other data flit (the stream order is not checked)."""
        index = self.index
        header, body = self._check(flit, index)
        if header.table:
            raise FlitError("is a table flit, not a data flit", flit=index, field="table")
        return self._data_symbols(header, body, index)

    def _read_data(self, header, body, index, flit):
        symbols = self._data_symbols(header, body, index)
        status = self.fmt.sequence == "stream" and is_status(header)
        if self.fmt.sequence == "stream":
            # A writer's flits come in each stream's order: nothing lost, nothing again.
            check, number = self._checks[header.stream], flit[self.fmt.sequence_offset]
            want = check.expected
            if (check.take(number, header.last, status=status)
                    != Verdict(skip=False, ends=0, hole=False)):
                raise FlitError(f"is numbered {number:#04x} (frame {number >> 4}, place "
                                f"{number & 15}); stream {header.stream} is at "
                                f"{want:#04x}", flit=index, field="sequence")
        if status:
            return None                 # (it opens no frame)

        parts = self._frames.setdefault(header.stream, [])
        parts.append(symbols)
        if not header.last:
            return None
        del self._frames[header.stream]
        return header.stream, np.concatenate(parts)

    def _data_symbols(self, header, body, index):
        fmt = self.fmt
        if header.stream >= fmt.streams:
            raise FlitError(f"names stream {header.stream}; the link has {fmt.streams}",
                            flit=index, field="stream")
        if header.codec not in (0, fmt.codec_id):
            raise FlitError(f"is coded with {codec_name(header.codec)!r} on a {fmt.codec} link",
                            flit=index, field="codec")
        if header.codec == 0:
            return self._read_raw(header, body, index)
        return self._read_coded(header, body, index)

    def _read_raw(self, header, body, index):
        size = self.fmt.symbol_bytes
        if header.bits != 8 * size * header.count:
            raise FlitError(f"is raw with {header.count} symbols in {header.bits} bits; "
                            f"they take {8 * size * header.count}", flit=index, field="bits")
        data = body[:size * header.count]
        dtype = ">u2" if size == 2 else np.uint8
        return np.frombuffer(data, dtype=dtype).astype(np.uint16 if size == 2 else np.uint8)

    def _read_coded(self, header, body, index):
        tables = self._tables[header.bank]
        if tables is None:
            raise FlitError(f"is coded with bank {header.bank}, which holds no complete "
                            "table", flit=index, field="bank")
        try:
            symbols = self._codec.decode(tables, body, header.bits, header.count)
        except self._codec.decode_errors as error:
            raise FlitError(f"body: {error}", flit=index, field="body",
                            bit=getattr(error, "bit", None)) from None
        if symbols.size != header.count:
            raise FlitError(f"holds {symbols.size} symbols; its header says {header.count}",
                            flit=index, field="count")
        return symbols


# -- whole sequences -------------------------------------------------------------------

def deal(frames, streams):
    """``frames`` dealt to ``streams`` round robin: ``[(stream, frame)]``, frame ``n`` on
    stream ``n % streams``."""
    return [(index % streams, frame) for index, frame in enumerate(frames)]


def flits_from_frames(fmt, frames, tables=None):
    """The flits of ``frames`` (``(stream, symbols)`` pairs, or symbol arrays for stream
    0), one frame after another, after the table flits of ``tables`` if given (without,
    every flit goes raw)."""
    writer = FlitWriter(fmt)
    flits = [] if tables is None else writer.load(tables)
    for frame in frames:
        stream, symbols = frame if isinstance(frame, tuple) else (0, frame)
        flits += writer.frame(symbols, stream)
    return flits


def frames_from_flits(fmt, flits):
    """The frames that ``flits`` carry, as ``(stream, symbols)`` in the order they end;
    :class:`FlitError` for a bad flit, or for flits that end inside a frame
    (``field="end"``)."""
    reader = FlitReader(fmt)
    frames = []
    for flit in flits:
        frame = reader.read(flit)
        if frame is not None:
            frames.append(frame)
    if reader.in_frame:
        raise FlitError(f"the flits end inside a frame of stream {reader.in_frame[0]}",
                        flit=reader.index, field="end")
    return frames


class LinkStats(NamedTuple):
    """What a sequence of flits costs: ``flits`` (of which ``raw_flits`` data flits went
    raw and ``table_flits`` carry tables), ``link_bytes`` (``flits * flit_bytes``),
    ``symbols``, ``raw_bytes`` (the symbols' own bytes) and ``coded_bytes`` (the frames
    coded whole by the codec, each rounded up to a byte: the codec's own frame bytes)."""

    flits: int
    raw_flits: int
    table_flits: int
    link_bytes: int
    symbols: int
    raw_bytes: int
    coded_bytes: int


def link_stats(fmt, flits, frames, tables=None):
    """:class:`LinkStats` of ``flits`` that carry ``frames`` coded with ``tables``."""
    headers = [FlitHeader.unpack(flit) for flit in flits]
    frames = [frame[1] if isinstance(frame, tuple) else frame for frame in frames]
    symbols = sum(int(np.asarray(frame).size) for frame in frames)
    coded = 0
    if tables is not None:
        codec = link_codec(fmt.codec)
        checked = codec.check_tables(tables)
        for frame in frames:
            coded += _bits_to_bytes(codec.frame_bits(checked, np.asarray(frame).reshape(-1)))
    return LinkStats(
        flits=len(flits),
        raw_flits=sum(1 for h in headers if not h.table and h.codec == 0),
        table_flits=sum(1 for h in headers if h.table),
        link_bytes=len(flits) * fmt.flit_bytes,
        symbols=symbols,
        raw_bytes=symbols * fmt.symbol_bytes,
        coded_bytes=coded)
