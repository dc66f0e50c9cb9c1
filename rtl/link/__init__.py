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

The package's modules: ``common`` (constants, the checked parameters, the header's bits,
the row and byte helpers), ``tx_stream`` (a transmit stream: cutter, chunk queue, encoder,
two-flit buffer), ``tx`` (:class:`LinkTx`: its table unit and link side), ``rx_stream`` (a
receive stream: two-flit buffer, reader, decoder), ``rx`` (:class:`LinkRx`: its router and
table unit) and ``pair`` (:class:`LinkPair`). A codec's blocks come from its
:class:`~linkcodec.rtl.link_codec.LinkHardware`.
"""

from ..link_codec import LINK_WORD_WIDTH
from .common import (DEFAULT_ACK_LATENCY, DEFAULT_LINK_BYTES, DEFAULT_RETRY_DEPTH,
                     LINK_GROUP, LINK_PIECE_BYTES, STATUS_CYCLES, link_tables)
from .pair import LinkPair, connect_pair, pair_blocks, pair_members
from .rx import LinkRx
from .tx import LinkTx

__all__ = ["DEFAULT_LINK_BYTES", "DEFAULT_RETRY_DEPTH", "STATUS_CYCLES",
           "DEFAULT_ACK_LATENCY", "LINK_WORD_WIDTH", "LINK_GROUP", "LINK_PIECE_BYTES",
           "LinkTx", "LinkRx", "LinkPair", "link_tables", "pair_blocks", "pair_members",
           "connect_pair"]
