"""Bit packing and unpacking between variable-length chunks and fixed-width words.

Both blocks keep their bits MSB-aligned in a shift register: the first bit of the stream
is always the register's most significant bit, which is the bit order of
``docs/bitstream.md``.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .payload import word_layout, check_word_width

__all__ = ["chunk_layout", "BitPacker", "BitUnpacker"]


def chunk_layout(chunk_width):
    """A chunk of up to ``chunk_width`` bits, MSB-aligned, with its length and a frame end."""
    return data.StructLayout({
        "bits": chunk_width,
        "length": unsigned(chunk_width.bit_length()),
        "last": 1,
    })


class BitPacker(wiring.Component):
    """Packs MSB-aligned chunks of 0..``chunk_width`` bits into ``word_width``-bit words.

    Takes one chunk per cycle and emits one word per cycle. A full word is only sent once
    at least one more bit (or the frame end) has arrived, so the word that ends a frame
    always carries ``last`` with ``bits`` in 1..``word_width`` (0 for an empty frame).
    After the chunk with ``last`` the packer drains the frame before it takes the next
    chunk, so every frame starts on a word boundary; zero bits pad the last word.

    Latency: a chunk's first bit leaves in the word sent no earlier than the cycle after
    the chunk is taken. Throughput: one chunk per cycle as long as chunks average at most
    ``word_width`` bits. Under backpressure on ``o`` the buffer (``2 * word_width +
    chunk_width`` bits) fills and ``i.ready`` falls; no bit is lost.
    """

    def __init__(self, *, chunk_width, word_width):
        if not isinstance(chunk_width, int) or chunk_width < 1:
            raise ValueError(f"chunk_width must be a positive integer, not {chunk_width!r}")
        self._chunk_width = chunk_width
        self._word_width = check_word_width(word_width)
        super().__init__({
            "i": In(stream.Signature(chunk_layout(chunk_width))),
            "o": Out(stream.Signature(word_layout(word_width))),
        })

    @property
    def chunk_width(self):
        return self._chunk_width

    @property
    def word_width(self):
        return self._word_width

    def elaborate(self, platform):
        m = Module()
        W, C = self._word_width, self._chunk_width
        depth = 2 * W + C

        buffer = Signal(depth)            # bit `depth - 1` is the oldest bit
        fill = Signal(range(depth + 1))
        flushing = Signal()               # the frame's last chunk is in the buffer

        m.d.comb += [
            self.o.payload.data.eq(buffer[depth - W:]),
            self.o.payload.last.eq(flushing & (fill <= W)),
            self.o.payload.bits.eq(Mux(flushing & (fill <= W), fill, W)),
            self.o.valid.eq((fill > W) | flushing),
            # Taking a chunk needs room for the widest one; counting on the word that may
            # leave this cycle would make i.ready depend on o.ready, which we avoid.
            self.i.ready.eq(~flushing & (fill <= 2 * W)),
        ]

        sent = Signal()
        m.d.comb += sent.eq(self.o.valid & self.o.ready)
        kept = Signal.like(buffer)
        kept_fill = Signal.like(fill)
        with m.If(sent & self.o.payload.last):
            m.d.comb += [kept.eq(0), kept_fill.eq(0)]
        with m.Elif(sent):
            m.d.comb += [kept.eq(buffer << W), kept_fill.eq(fill - W)]
        with m.Else():
            m.d.comb += [kept.eq(buffer), kept_fill.eq(fill)]

        with m.If(self.i.valid & self.i.ready):
            # Every bit of `aligned` is driven (zeros below the chunk), so the Verilog has
            # no partial assignment for an event-driven simulator to leave at X.
            aligned = Signal(depth)
            m.d.comb += aligned.eq(Cat(Const(0, depth - C), self.i.payload.bits))
            m.d.sync += [
                buffer.eq(kept | (aligned >> kept_fill)[:depth]),
                fill.eq(kept_fill + self.i.payload.length),
                flushing.eq(self.i.payload.last),
            ]
        with m.Else():
            m.d.sync += [buffer.eq(kept), fill.eq(kept_fill)]
            with m.If(sent & self.o.payload.last):
                m.d.sync += flushing.eq(0)

        return m


class BitUnpacker(wiring.Component):
    """Unpacks ``word_width``-bit words into a window of the next ``window_width`` bits.

    ``window`` shows the oldest unconsumed bits, MSB first; ``fill`` says how many of them
    (up to the buffer depth) are real; ``tail`` says the frame's last word is in the
    buffer, so no more bits of this frame will come. The user takes bits by setting
    ``consume`` (at most ``min(fill, window_width)``) for one cycle.

    ``flush`` ends the frame: the buffer is emptied and, unless the frame's last word had
    already arrived (the normal end), incoming words are dropped up to and including the
    next word with ``last`` (the recovery after an error). ``bad_word`` is set while the buffer holds bits of a word whose
    ``bits`` count exceeded ``word_width`` (such a word is read as ``word_width`` bits).

    A word is taken only while ``fill + word_width`` fits the buffer (``2 * word_width +
    window_width`` bits) and no tail is waiting, so ``i.ready`` never depends on
    ``consume``; at most one word per cycle enters.
    """

    def __init__(self, *, word_width, window_width):
        if not isinstance(window_width, int) or window_width < 1:
            raise ValueError(f"window_width must be a positive integer, not {window_width!r}")
        self._word_width = check_word_width(word_width)
        self._window_width = window_width
        self._depth = 2 * word_width + window_width
        super().__init__({
            "i": In(stream.Signature(word_layout(word_width))),
            "window": Out(window_width),
            "fill": Out(range(self._depth + 1)),
            "tail": Out(1),
            "bad_word": Out(1),
            "consume": In(range(window_width + 1)),
            "flush": In(1),
        })

    @property
    def word_width(self):
        return self._word_width

    @property
    def window_width(self):
        return self._window_width

    def elaborate(self, platform):
        m = Module()
        W, depth = self._word_width, self._depth

        buffer = Signal(depth)
        dropping = Signal()               # discarding the rest of an aborted frame

        m.d.comb += [
            self.window.eq(buffer[depth - self._window_width:]),
            self.i.ready.eq(dropping | (~self.tail & (self.fill <= depth - W))),
        ]

        kept = Signal.like(buffer)
        kept_fill = Signal.like(self.fill)
        m.d.comb += [
            kept.eq((buffer << self.consume)[:depth]),
            kept_fill.eq(self.fill - self.consume),
        ]

        bits = Signal(range(W + 1))
        m.d.comb += bits.eq(Mux(self.i.payload.bits > W, W, self.i.payload.bits))
        taken = Signal()
        m.d.comb += taken.eq(self.i.valid & self.i.ready)

        with m.If(self.flush):
            m.d.sync += [buffer.eq(0), self.fill.eq(0), self.tail.eq(0), self.bad_word.eq(0)]
            # Drop the rest of the frame unless its last word is already in (or arriving).
            with m.If(~self.tail & ~(taken & self.i.payload.last)):
                m.d.sync += dropping.eq(1)
        with m.Elif(dropping):
            m.d.sync += [buffer.eq(kept), self.fill.eq(kept_fill)]
            with m.If(taken & self.i.payload.last):
                m.d.sync += dropping.eq(0)
        with m.Elif(taken):
            aligned = Signal(depth)
            m.d.comb += aligned.eq(Cat(Const(0, depth - W), self.i.payload.data))
            # Bits past the word's count are pad: mask them so they never reach a decoder.
            m.d.sync += [
                buffer.eq(kept | (self._masked(m, aligned, bits, depth) >> kept_fill)[:depth]),
                self.fill.eq(kept_fill + bits),
                self.tail.eq(self.i.payload.last),
                self.bad_word.eq(self.bad_word | (self.i.payload.bits > W)),
            ]
        with m.Else():
            m.d.sync += [buffer.eq(kept), self.fill.eq(kept_fill)]

        return m

    @staticmethod
    def _masked(m, aligned, bits, depth):
        """``aligned`` with every bit after its first ``bits`` (from the MSB) cleared."""
        keep = Signal(depth)
        ones = Const((1 << depth) - 1, depth)
        m.d.comb += keep.eq(~(ones >> bits)[:depth])
        masked = Signal(depth)
        m.d.comb += masked.eq(aligned & keep)
        return masked
