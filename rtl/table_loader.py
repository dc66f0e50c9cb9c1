"""A table image in, a codec block's config writes out: how a link loads tables in band.

A link carries a table as its *image* (:func:`linkcodec.golden.link.table_image`, the
bytes of its table flits): QLC, the 8 areas (2 bytes each) then each symbol's area (3
bits a symbol); Huffman, the 256 code lengths as nibbles; exponent, the 7 exponents of
codes 1..7. A block is loaded by config writes (:func:`linkcodec.rtl.qlc.config_writes`,
:func:`linkcodec.rtl.huffman.config_writes`, :func:`linkcodec.rtl.exponent.config_writes`).
:class:`TableLoader` turns the one into the other in hardware, so both ends of a link
build their blocks' tables from the same bytes, and the tables are built off the
critical path, in the blocks' idle banks.

Parameters (keyword-only): ``codec`` (``"qlc"``, ``"huffman"`` or ``"exponent"``),
``block`` (``"encoder"`` or ``"decoder"``: whose writes to make; an exponent encoder and
decoder take the same writes; for QLC also ``"codes"``: the writes of a code table, a
:class:`~linkcodec.rtl.huffman.HuffmanEncoder` holding the QLC code, which
:class:`~linkcodec.rtl.link.LinkTx`'s QLC streams code with: each symbol's code, worked
out here once for every stream, instead of its rank and the areas).

Ports:

- ``i``: the image, a byte a transfer (:data:`image_byte_layout`: ``data``, and ``last``
  on its last byte); a beat with ``abort`` ends the image as a bad one (its ``data`` is
  not read), for a sender that learns the image will not be whole.
- ``o``: the writes (:func:`loader_write_layout`: the codec's ``addr`` and ``data``, the
  code ``length`` of symbol ``addr`` for an encoder's symbol write, else 0, and
  ``error``). For a good image, the writes of ``config_writes(tables, block=block)``
  (exponent: ``config_writes(table)``; QLC ``"codes"``: ``huffman.config_writes(tables,
  block="encoder")``, the same writes a Huffman encoder takes; each address once, not in
  that order) ending with
  the switch write
  (``addr = SWITCH_ADDR``): that write says the image was good and the idle bank is whole.
  For a bad image, no write that could reach a used address (QLC: none past the areas'
  ranks; Huffman and exponent: none) after the point the image is known bad, and instead
  of the switch write one beat with ``error = 1`` (``addr``, ``data`` 0).

Bad images (as :func:`~linkcodec.golden.link.table_from_image` refuses them): QLC, an area
entry with a reserved bit set, a suffix width above 8, a size above ``1 << width``, sizes
that do not add up to 256, a symbol in an area that is already full; Huffman, a length of
0 or lengths that break Kraft's inequality; exponent, two equal exponents (every byte
value is an exponent); all, an image whose ``last`` is not on its
last byte (shorter: ends there; longer: the bytes past it are dropped up to ``last``),
and an ``abort`` beat.
After the error beat (or the switch write) the loader takes the next image.

Throughput: QLC takes a head byte a cycle and a body byte every 8/3 cycles (a symbol's
write a cycle, 256 + 8 area writes + 1; ``"codes"``: no area writes), at most 300 cycles
an image; Huffman takes a
byte a cycle (128), then makes 15 length writes (decoder) and 256 symbol writes, at most
420 cycles; exponent takes its 7 bytes, a byte a cycle, and only then, the image checked,
makes its 7 writes and the switch write, a write a cycle: 16 cycles from the first byte
to the switch write, and the next image's first byte taken in the switch write's cycle
(15 cycles an image back to back; tests/test_table_loader.py measures all three).
Backpressure on ``o`` holds the loader where it is; it takes no byte while its output is
full. Latency: the first write a cycle after the byte that makes it (exponent: two
cycles after the image's last byte).

Reset (``rst``) drops the image in progress; the loader then waits for a new image.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..golden.exponent import TABLE_SIZE
from ..golden.qlc import AREAS, MAX_SUFFIX_BITS, SYMBOLS
from . import exponent, huffman, qlc

__all__ = ["TableLoader", "image_byte_layout", "loader_write_layout", "IMAGE_BYTES"]

#: A byte of a table image.
image_byte_layout = data.StructLayout({"data": 8, "last": 1, "abort": 1})

#: Bytes of each codec's table image.
IMAGE_BYTES = {"qlc": 2 * AREAS + 3 * SYMBOLS // 8, "huffman": SYMBOLS // 2,
               "exponent": TABLE_SIZE}

_CONFIG = {"qlc": qlc.config_layout, "huffman": huffman.config_layout,
           "exponent": exponent.config_layout}
_SWITCH = {"qlc": qlc.SWITCH_ADDR, "huffman": huffman.SWITCH_ADDR,
           "exponent": exponent.SWITCH_ADDR}
_LONGEST = huffman.MAX_CODE_LENGTH          # 15: a nibble's largest length


def loader_write_layout(codec, block="encoder"):
    """The layout of :class:`TableLoader`'s writes for ``codec`` and ``block``."""
    config = huffman.config_layout if block == "codes" else _CONFIG[codec]
    return data.StructLayout({"addr": config["addr"].shape, "data": config["data"].shape,
                              "length": 5, "error": 1})


class TableLoader(wiring.Component):
    __doc__ = __doc__.split("\n\n", 1)[1]

    def __init__(self, *, codec, block):
        blocks = ("encoder", "decoder", "codes") if codec == "qlc" else ("encoder", "decoder")
        if codec not in _CONFIG or block not in blocks:
            self._MustUse__silence = True   # refused, so not an unused elaboratable
            if codec not in _CONFIG:
                raise ValueError(f"codec must be 'qlc', 'huffman' or 'exponent', not "
                                 f"{codec!r}")
            raise ValueError(f"block must be {', '.join(map(repr, blocks[:-1]))} or "
                             f"{blocks[-1]!r} for {codec}, not {block!r}")
        self._codec, self._block = codec, block
        super().__init__({
            "i": In(stream.Signature(image_byte_layout)),
            "o": Out(stream.Signature(loader_write_layout(codec, block))),
        })

    @property
    def codec(self):
        return self._codec

    @property
    def block(self):
        return self._block

    @property
    def image_bytes(self):
        """Bytes of the image the loader takes."""
        return IMAGE_BYTES[self._codec]

    def elaborate(self, platform):
        m = Module()
        # The output register: a write is made when it is empty or being taken.
        free = ~self.o.valid | self.o.ready
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)

        def emit(addr, data_=0, length=0, error=0):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.addr.eq(addr),
                         self.o.payload.data.eq(data_), self.o.payload.length.eq(length),
                         self.o.payload.error.eq(error)]

        if self._codec == "qlc":
            self._qlc(m, free, emit)
        elif self._codec == "huffman":
            self._huffman(m, free, emit)
        else:
            self._exponent(m, free, emit)
        return m

    def _finish(self, emit, bad):
        """The last beat of an image (when the output is free): the switch write, or
        the error beat if ``bad``."""
        emit(Mux(bad, 0, _SWITCH[self._codec]), error=bad)

    def _intake(self, m, *, size, take):
        """Image bytes: ``offset`` (the byte taken next; it stops at ``size``, the bytes
        past the image are dropped), ``ended`` (``last`` or ``abort`` taken) and
        ``bad_length`` (``last`` not on the image's last byte, or an abort)."""
        offset = Signal(range(size + 1))
        ended = Signal()
        bad_length = Signal()
        with m.If(take & self.i.payload.abort):
            m.d.sync += [ended.eq(1), bad_length.eq(1)]
        with m.Elif(take):
            with m.If(offset != size):
                m.d.sync += offset.eq(offset + 1)
            with m.If(self.i.payload.last):
                m.d.sync += ended.eq(1)
                with m.If(offset != size - 1):
                    m.d.sync += bad_length.eq(1)
            with m.Elif(offset >= size - 1):
                m.d.sync += bad_length.eq(1)
        return offset, ended, bad_length

    # -- QLC -------------------------------------------------------------------------------

    def _qlc(self, m, free, emit):
        encoder = self._block == "encoder"
        codes = self._block == "codes"
        head_bytes = 2 * AREAS
        widths = [Signal(4, name=f"width{a}") for a in range(AREAS)]
        sizes = [Signal(9, name=f"size{a}") for a in range(AREAS)]
        ends = [Signal(9, name=f"end{a}") for a in range(AREAS)]     # past the last rank
        ranks = [Signal(9, name=f"rank{a}") for a in range(AREAS)]    # the next rank
        # ("codes") each area's next suffix, aligned to the top of 8 bits, and its step
        # there (``1 << (8 - width)``): a code is its area's 3 bits and this, no subtract.
        suffixes = [Signal(8, name=f"suffix{a}") for a in range(AREAS)]
        steps = [Signal(9, name=f"step{a}") for a in range(AREAS)]
        total = Signal(12)                # the sizes so far (8 areas of at most 256)
        bad = Signal()
        symbol = Signal(9)                # the symbol whose area comes next
        buf = Signal(10)                  # body bits, left-aligned
        nbits = Signal(range(11))
        area_write = Signal(range(AREAS + 1))
        done = Signal()                   # the image's end beat is out

        take = self.i.valid & self.i.ready
        offset, ended, bad_length = self._intake(m, size=IMAGE_BYTES["qlc"], take=take)
        take = take & ~self.i.payload.abort
        byte = self.i.payload.data
        in_head = offset < head_bytes
        in_body = ~in_head & (offset != IMAGE_BYTES["qlc"])

        # One symbol's area a cycle from the bit buffer, when the output is free. Each
        # area's ``fulls`` flag says it has all its symbols, a register (a rank counts up
        # from the area's base and meets the end exactly: the compare is made as the rank
        # is stepped, not behind the area's select).
        area = buf[7:10]
        fulls = Signal(AREAS)
        step = (nbits >= 3) & free & ~done
        left = Mux(step, nbits - 3, nbits)
        m.d.comb += self.i.ready.eq(~ended & ~done & (in_head | ~in_body | (left < 3)))
        with m.If(step):
            rank = Signal(9)
            full = Signal()               # the area already has all its symbols
            length = Signal(5)
            suffix = Signal(8)
            for a in range(AREAS):
                with m.If(area == a):
                    m.d.comb += [rank.eq(ranks[a]), full.eq(fulls[a]),
                                 length.eq(3 + widths[a]), suffix.eq(suffixes[a])]
                    m.d.sync += [ranks[a].eq(ranks[a] + 1),
                                 fulls[a].eq(fulls[a] | ((ranks[a] + 1)[:9] == ends[a]))]
                    if codes:
                        m.d.sync += suffixes[a].eq(suffixes[a] + steps[a])
            with m.If(full):
                m.d.sync += bad.eq(1)
            with m.Elif(~bad):
                if codes:
                    # the code MSB-aligned in 15 bits: the area, then the suffix
                    entry = Signal(huffman.code_entry_layout)
                    m.d.comb += [entry.code.eq(Cat(Const(0, 4), suffix, area)),
                                 entry.length.eq(length)]
                    emit(symbol, entry.as_value(), length=length)
                elif encoder:
                    emit(symbol, rank, length=length)
                else:
                    emit(rank, symbol)
            m.d.sync += symbol.eq(symbol + 1)
        shifted = Mux(step, buf << 3, buf)[:10]
        m.d.sync += [buf.eq(shifted), nbits.eq(left)]

        # A head byte is checked and kept a cycle after it is taken, from registers (the
        # sizes' add and compares were the receiver's longest path behind ``i.valid``); the
        # body's first symbol, which needs the ranks, comes a cycle later still. An area's
        # first byte (its width, and its size's top bit) is held apart (``width``,
        # ``top``, ``limit``: ``1 << width``), so its second is checked with no select by
        # area in front of the add and compares.
        head_byte = Signal(8)
        head_offset = Signal(4)
        head_valid = Signal()
        width, top, limit = Signal(4), Signal(), Signal(9)
        step_ = Signal(9)                 # ("codes") the area's suffix step
        size = Cat(head_byte, top)
        after = Signal(12)
        m.d.comb += after.eq(total + size)
        m.d.sync += head_valid.eq(take & in_head)
        with m.If(take & in_head):
            m.d.sync += [head_byte.eq(byte), head_offset.eq(offset[:4])]
        with m.If(head_valid):
            a = head_offset[1:4]
            with m.If(~head_offset[0]):
                m.d.sync += [width.eq(head_byte[4:8]), top.eq(head_byte[0]),
                             limit.eq(Mux(head_byte[4:8] > MAX_SUFFIX_BITS, 0,
                                          Const(1, 9) << head_byte[4:8]))]
                if codes:
                    m.d.sync += step_.eq(Const(1 << MAX_SUFFIX_BITS, 9) >> head_byte[4:8])
                with m.If((head_byte[1:4] != 0) | (head_byte[4:8] > MAX_SUFFIX_BITS)):
                    m.d.sync += bad.eq(1)
            with m.Else():
                m.d.sync += total.eq(after)
                # (after the last area, the sum: known before any symbol's write, so no
                # rank past 255)
                with m.If((size > limit)
                          | ((head_offset == 2 * AREAS - 1) & (after != SYMBOLS))):
                    m.d.sync += bad.eq(1)
            for index in range(AREAS):
                with m.If(head_offset[0] & (a == index)):
                    m.d.sync += [widths[index].eq(width), sizes[index].eq(size),
                                 ranks[index].eq(total), ends[index].eq(after),
                                 fulls[index].eq(size == 0)]
                    if codes:
                        m.d.sync += [suffixes[index].eq(0), steps[index].eq(step_)]
        with m.If(take & in_body):
            m.d.sync += [buf.eq(shifted | (Cat(Const(0, 2), byte) >> left[:2])),
                         nbits.eq(left + 8)]

        # After the body: the 8 area writes, then the end beat.
        symbols_done = ended & (nbits < 3)
        whole = symbol == SYMBOLS
        failed = bad | bad_length | ~whole
        with m.If(symbols_done & ~done & free):
            with m.If(failed | (area_write == AREAS) | codes):   # ("codes": no areas)
                self._finish(emit, failed)
                m.d.sync += done.eq(1)
            with m.Else():
                entry = Signal(qlc.area_layout)
                for a in range(AREAS):
                    with m.If(area_write == a):
                        m.d.comb += [entry.suffix_bits.eq(widths[a]),
                                     entry.base.eq(ends[a] - sizes[a]),
                                     entry.size.eq(sizes[a])]
                emit(qlc.AREA_BASE + area_write, entry.as_value())
                m.d.sync += area_write.eq(area_write + 1)
        with m.If(done):
            # Ready for the next image.
            m.d.sync += [done.eq(0), offset.eq(0), ended.eq(0), bad_length.eq(0), bad.eq(0),
                         symbol.eq(0), total.eq(0), area_write.eq(0), buf.eq(0), nbits.eq(0),
                         fulls.eq(0)]

    # -- Huffman ---------------------------------------------------------------------------

    def _huffman(self, m, free, emit):
        encoder = self._block == "encoder"
        size = IMAGE_BYTES["huffman"]
        m.submodules.image = image = Memory(shape=unsigned(8), depth=size, init=[])
        write = image.write_port()
        read = image.read_port(domain="comb")
        counts = [Signal(9, name=f"count{n}") for n in range(_LONGEST + 1)]
        codes = [Signal(_LONGEST + 1, name=f"code{n}") for n in range(_LONGEST + 1)]
        indexes = [Signal(9, name=f"index{n}") for n in range(_LONGEST + 1)]
        bad = Signal()
        phase = Signal(range(4))          # 0 intake, 1 lengths, 2 symbols, 3 end beat
        length = Signal(range(_LONGEST + 2))
        fill = Signal(17)                 # 2 F(l - 1): the first code of length l
        base = Signal(9)                  # the index of the first code of length l
        symbol = Signal(9)

        take = self.i.valid & self.i.ready
        offset, ended, bad_length = self._intake(m, size=size, take=take)
        take = take & ~self.i.payload.abort
        byte = self.i.payload.data
        m.d.comb += self.i.ready.eq((phase == 0) & ~ended)
        m.d.comb += [write.addr.eq(offset), write.data.eq(byte),
                     write.en.eq(take & (offset != size))]
        with m.If(take & (offset != size)):
            high, low = byte[4:8], byte[0:4]
            with m.If((high == 0) | (low == 0)):
                m.d.sync += bad.eq(1)
            for n in range(1, _LONGEST + 1):
                m.d.sync += counts[n].eq(counts[n] + (high == n) + (low == n))
        with m.If((phase == 0) & ended):
            m.d.sync += [phase.eq(1), length.eq(1), fill.eq(0), base.eq(0)]

        # 1. per length l: codes of length l run from fill (aligned: fill << (15 - l))
        with m.If((phase == 1) & free):
            count = Signal(9)
            after = Signal(18)
            m.d.comb += after.eq(fill + count)
            for n in range(1, _LONGEST + 1):
                with m.If(length == n):
                    m.d.comb += count.eq(counts[n])
                    m.d.sync += [codes[n].eq(fill << (_LONGEST - n)), indexes[n].eq(base)]
                    with m.If(after > (1 << n)):      # more codes than l bits have
                        m.d.sync += bad.eq(1)
                    if not encoder:
                        entry = Signal(huffman.length_entry_layout)
                        m.d.comb += [entry.limit.eq(after[:_LONGEST + 1] << (_LONGEST - n)),
                                     entry.offset.eq(base - fill)]
                        with m.If(~bad & (after <= (1 << n))):
                            emit(huffman.LENGTH_BASE + n, entry.as_value())
            m.d.sync += [fill.eq(after << 1),
                         base.eq(base + count), length.eq(length + 1)]
            with m.If(length == _LONGEST):
                m.d.sync += [phase.eq(2), symbol.eq(0)]

        # 2. a symbol a cycle: its code (encoder) or its canonical index (decoder)
        m.d.comb += read.addr.eq(symbol[1:8])
        nibble = Mux(symbol[0], read.data[0:4], read.data[4:8])
        with m.If((phase == 2) & free):
            with m.If(bad | bad_length | (symbol == SYMBOLS)):
                m.d.sync += phase.eq(3)
            with m.Else():
                for n in range(1, _LONGEST + 1):
                    with m.If(nibble == n):
                        if encoder:
                            entry = Signal(huffman.code_entry_layout, name=f"code_entry{n}")
                            m.d.comb += [entry.code.eq(codes[n]), entry.length.eq(n)]
                            emit(symbol, entry.as_value(), length=n)
                            m.d.sync += codes[n].eq(codes[n] + (1 << (_LONGEST - n)))
                        else:
                            emit(indexes[n], symbol)
                            m.d.sync += indexes[n].eq(indexes[n] + 1)
                m.d.sync += symbol.eq(symbol + 1)
        with m.If((phase == 3) & free):
            self._finish(emit, bad | bad_length)
            m.d.sync += [phase.eq(0), offset.eq(0), ended.eq(0), bad_length.eq(0),
                         bad.eq(0)] + [c.eq(0) for c in counts]

    # -- exponent --------------------------------------------------------------------------

    def _exponent(self, m, free, emit):
        # Encoder and decoder take the same writes. The whole image is held and checked
        # before the first write, so a bad one makes none.
        exponents = [Signal(8, name=f"exponent{k}") for k in range(TABLE_SIZE)]
        bad = Signal()                    # an exponent equal to one before it
        write = Signal(range(TABLE_SIZE + 1))     # the next write; TABLE_SIZE: the switch

        take = self.i.valid & self.i.ready
        offset, ended, bad_length = self._intake(m, size=TABLE_SIZE, take=take)
        take = take & ~self.i.payload.abort
        byte = self.i.payload.data
        m.d.comb += self.i.ready.eq(~ended)
        with m.If(take & (offset != TABLE_SIZE)):
            for k in range(TABLE_SIZE):
                with m.If(offset == k):
                    m.d.sync += exponents[k].eq(byte)
            # each byte against the ones before it in this image: 6 compares
            with m.If(Cat(*((byte == exponents[k]) & (offset > k)
                            for k in range(TABLE_SIZE - 1))).any()):
                m.d.sync += bad.eq(1)

        with m.If(ended & free):
            failed = bad | bad_length
            with m.If(failed | (write == TABLE_SIZE)):
                self._finish(emit, failed)
                # ready for the next image
                m.d.sync += [offset.eq(0), ended.eq(0), bad_length.eq(0), bad.eq(0),
                             write.eq(0)]
            with m.Else():
                value = Signal(8)
                for k in range(TABLE_SIZE):
                    with m.If(write == k):
                        m.d.comb += value.eq(exponents[k])
                emit(write, value)
                m.d.sync += write.eq(write + 1)
