"""Between variable-length chunks and fixed-width words.

:class:`BitPacker` packs an encoder's chunks into words, MSB first (the bit order of
``docs/bitstream.md``); :class:`WordQueue` takes a decoder's words, checks their ``bits``
counts and holds them word-aligned. Beside them, the small pieces every codec block uses
alike: :func:`frame_order` (a word's bits in wire order), :func:`pipeline_stage` (the
encoders' pipeline registers), :func:`mux_tree` and :func:`bits_at` (the decoders'
selects and shifters), and :class:`RegisterSlice` (a stream cut by registers).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .payload import word_layout, check_word_width

__all__ = ["chunk_layout", "word_entry_layout", "frame_order", "pipeline_stage", "mux_tree",
           "bits_at", "concatenation_tree", "BitPacker", "WordQueue", "RegisterSlice"]


def frame_order(word):
    """A word's bits in frame order: bit ``i`` is the word's ``i``-th bit on the wire (the
    wire sends the MSB first), so a window of words is one vector, first bit at 0."""
    return Value.cast(word)[::-1]


def pipeline_stage(m, enable):
    """``stage(name, shape, value)``: makes a pipeline register of ``shape``, named
    ``name``, loaded from ``value`` in each cycle that ``enable`` is high (an encoder's
    pipeline moves as one, on its packer's ``ready``)."""
    def stage(name, shape, value):
        register = Signal(shape, name=name)
        with m.If(enable):
            m.d.sync += register.eq(value)
        return register
    return stage


def mux_tree(candidates, index, width):
    """``candidates[index]`` as a tree of 2-way muxes, ``width`` bits, on the low bits of
    ``index`` (as many as the candidates need; higher bits are not looked at). A
    ``None`` candidate, and each one missing up to the next power of two, is 0."""
    select_width = max(1, (len(candidates) - 1).bit_length())
    candidates = list(candidates) + [None] * ((1 << select_width) - len(candidates))
    level = [Const(0, width) if candidate is None else candidate for candidate in candidates]
    for bit in range(select_width):
        level = [Mux(index[bit], high, low) for low, high in zip(level[0::2], level[1::2])]
    return level[0]


def bits_at(value, amount, width, reach=None):
    """``value[amount:amount + width]`` (0 past its end) for ``0 <= amount <= reach``
    (default: as far as ``value`` goes and ``amount`` can count): a shifter that takes its
    largest step first, so each stage keeps only the bits that the later ones can still
    reach (a ``>>`` would shift the whole vector at every stage)."""
    value = Value.cast(value)
    if reach is None:
        reach = min(len(value) - 1, (1 << len(Value.cast(amount))) - 1)
    steps = max(1, reach.bit_length())
    value = Cat(value, Const(0, max(0, width + (1 << steps) - 1 - len(value))))
    for bit in reversed(range(steps)):
        step = 1 << bit
        keep = width + step - 1
        value = Mux(amount[bit], value[step:step + keep], value[:keep])
    return value[:width]


def chunk_layout(chunk_width):
    """A chunk of up to ``chunk_width`` bits, MSB-aligned, with its length and a frame end."""
    return data.StructLayout({
        "bits": chunk_width,
        "length": unsigned(chunk_width.bit_length()),
        "last": 1,
    })


def concatenation_tree(codes, stage, beside):
    """Concatenate the lanes' codes into one chunk for :class:`BitPacker`, in a tree.

    ``codes`` is a list (a power of two long) of ``(code, length)``: each code
    MSB-aligned in its width, zero past its length (a lane with nothing has length 0 and
    code 0). Each level halves the lanes and doubles the width: a pair is the left code
    with the right one shifted right by the left's length. ``stage(name, shape, value)``
    makes a pipeline register, one per level, so ``log2(len(codes))`` levels add as many
    cycles; ``beside`` (``dict`` of name to value) travels with the chunks, as
    ``chunk{level}_{name}``. Returns ``(chunk, length, beside)`` after the last level.
    """
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
        beside = {name: stage(f"chunk{level}_{name}", len(value), value)
                  for name, value in beside.items()}
    chunk, length = codes[0]
    return chunk, length, beside


class BitPacker(wiring.Component):
    """Packs MSB-aligned chunks of 0..``chunk_width`` bits into ``word_width``-bit words.

    Takes one chunk per cycle and emits one word per cycle. A full word is only sent once
    at least one more bit (or the frame end) has arrived, so the word that ends a frame
    always carries ``last`` with ``bits`` in 1..``word_width`` (0 for an empty frame).
    Every frame starts on a word boundary; zero bits pad its last word. The next frame's
    chunks follow at once: no cycle is lost between frames.

    The one recurrence is ``fill``, the number of bits (0..``word_width``) in the open
    word, the word the next chunk starts in (a full word waits there until more bits or
    the frame end arrive). It follows the chunk lengths alone, never the backpressure, so
    each chunk's alignment is known when it is taken. Two register stages, which move
    together while ``i.ready`` is high:

    1. the chunk is shifted right by ``fill`` into a window of :attr:`window_words` words
       whose first word is the open word; how many words it completes is counted beside
       it, and ``fill`` steps on;
    2. the window's first word is ORed into the open word, and the words the chunk
       completes go, all at once, into a queue of :attr:`queue_depth` words whose head
       is ``o``.

    ``i.ready`` is a register. It stays high while the queue has room for the words of
    the chunk that stage 2 takes next, counting no word that may leave, so it never
    depends on ``o.ready``; under backpressure the queue fills, ``i.ready`` falls, both
    stages hold and nothing is lost.

    Latency: 2 cycles from a chunk to the first word that can hold it, with no stalls.
    Throughput: one chunk per cycle while chunks average at most ``word_width`` bits.
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

    @property
    def window_words(self):
        """Words a chunk can touch: it starts anywhere in (or just after) the open word."""
        return -(-(self._word_width + self._chunk_width) // self._word_width)

    @property
    def queue_depth(self):
        """Words the output queue holds: a frame's last chunk may complete
        :attr:`window_words` words at once, and one more keeps the stream moving."""
        return self.window_words + 1

    def elaborate(self, platform):
        m = Module()
        W, C = self._word_width, self._chunk_width
        K, N = self.window_words, self.queue_depth

        step = Signal(init=1)             # both stages move (a register, see docstring)
        m.d.comb += self.i.ready.eq(step)

        # Stage 1: align the chunk at `fill`; count the words it completes.
        fill = Signal(range(W + 1))
        end = Signal(range(W + C + 1))    # where the chunk ends, in bits from the open word
        m.d.comb += end.eq(fill + self.i.payload.length)
        # A word is complete once a bit after it exists: floor((end - 1) / W) words.
        full = Signal(range(K))
        rest = Signal(range(W + 1))       # bits left in the new open word (0 only if end is)
        full_value, rest_value = 0, end
        for words in range(1, K):
            beyond = end > words * W
            full_value = Mux(beyond, words, full_value)
            rest_value = Mux(beyond, end - words * W, rest_value)
        m.d.comb += [full.eq(full_value), rest.eq(rest_value)]
        taken = Signal(range(K + 1))      # words this chunk sends to the queue
        m.d.comb += taken.eq(Mux(self.i.valid, full + self.i.payload.last, 0))

        window = Signal(K * W)            # bit K*W - 1 is the open word's first bit
        window_valid = Signal()
        window_words = Signal(range(K + 1))
        window_last = Signal()
        window_rest = Signal(range(W + 1))
        with m.If(step):
            aligned = Cat(Const(0, K * W - C), self.i.payload.bits)
            m.d.sync += [
                window.eq(aligned >> fill),
                window_valid.eq(self.i.valid),
                window_words.eq(taken),
                window_last.eq(self.i.payload.last),
                window_rest.eq(rest),
            ]
            with m.If(self.i.valid):
                m.d.sync += fill.eq(Mux(self.i.payload.last, 0, rest))

        # Stage 2: OR into the open word; queue the completed words.
        open_word = Signal(W)
        words = []
        for index in range(K):
            word = Signal(W, name=f"window_word{index}")
            m.d.comb += word.eq(window[(K - 1 - index) * W:(K - index) * W])
            words.append(word)
        first = Signal(W)
        m.d.comb += first.eq(open_word | words[0])
        words[0] = first

        queue = [Signal(word_layout(W), name=f"queue{slot}") for slot in range(N)]
        count = Signal(range(N + 1))      # words in the queue
        sent = Signal()
        m.d.comb += [
            sent.eq(self.o.valid & self.o.ready),
            self.o.payload.eq(queue[0]),
        ]
        pushed = Signal(range(K + 1))
        m.d.comb += pushed.eq(Mux(step, window_words, 0))

        for slot in range(N):
            # Word `index` of the window lands in slot `count + index`, one lower if the
            # head leaves: both cases come from registers, and `sent` only picks one.
            for index in range(min(K, slot + 1)):
                pushes = step & (window_words > index)
                lands = pushes & Mux(sent, count == slot + 1 - index, count == slot - index)
                ends = window_last & (window_words == index + 1)
                with (m.If if index == 0 else m.Elif)(lands):
                    m.d.sync += [
                        queue[slot].data.eq(words[index]),
                        queue[slot].bits.eq(Mux(ends, window_rest, W)),
                        queue[slot].last.eq(ends),
                    ]
            if slot + 1 < N:
                with m.Elif(sent):
                    m.d.sync += queue[slot].eq(queue[slot + 1])

        # The open word is the first one the chunk leaves incomplete; a frame end closes it.
        next_open = 0
        for index in reversed(range(K)):
            next_open = Mux(window_words == index, words[index], next_open)
        with m.If(step & window_valid):
            m.d.sync += open_word.eq(Mux(window_last, 0, next_open))

        count_next = Signal(range(N + 1))
        m.d.comb += count_next.eq(Mux(sent, count - 1 + pushed, count + pushed))
        upcoming = Signal(range(K + 1))   # what stage 2 would take next cycle
        m.d.comb += upcoming.eq(Mux(step, taken, window_words))
        m.d.sync += [
            count.eq(count_next),
            self.o.valid.eq(count_next != 0),
            step.eq(count_next + upcoming <= N),
        ]
        return m


def word_entry_layout(word_width):
    """A word as :class:`WordQueue` holds it: ``data``, ``bits`` (0 after a word fault),
    ``end`` (the word ends its frame, normally or at a fault) and ``fault``."""
    return data.StructLayout({
        "data": word_width,
        "bits": word_layout(word_width)["bits"].shape,
        "end": 1,
        "fault": 1,
    })


class WordQueue(wiring.Component):
    """The words of coded frames, held for a decoder that reads a word and the first bits
    of the next one, with the word faults of ``docs/bitstream.md`` already applied.

    A non-final word whose ``bits`` is not ``word_width``, or any word whose ``bits``
    exceeds it, is a fault where the word's bits begin: it enters as an entry with
    ``bits = 0, end = 1, fault = 1`` in its place, and the rest of its frame, up to and
    including the word with ``last``, is dropped. Every other word enters as it came,
    with ``end`` set on the word with ``last``. So each frame ends with exactly one
    ``end`` entry, and the frame's bits end ``bits`` into it.

    Ports: ``i`` (:func:`~.payload.word_layout` words), ``head`` and ``after`` (the
    oldest entry and the one behind it, :func:`word_entry_layout`), ``head_ready`` (the
    head may leave: the entry behind it is in, or the head ends its frame) and ``take``
    (the user takes the head this cycle, while ``head_ready``).

    Three entries deep. ``i.ready`` is a register (the queue has room, or it is dropping
    the rest of a faulty frame), so it never depends on ``take``. A word taken at ``i``
    is the head, or behind it, the next cycle; one entry leaves per cycle.

    ``mark`` (in) and ``before_mark`` (out) place a decoder's bank switch in its input
    stream: ``before_mark`` is high while an entry that came in before the last cycle
    ``mark`` was high (or in that cycle) is still in the queue. A decoder that switches
    banks only where its head starts a frame and ``before_mark`` is low gives every frame
    whose last word came in before the switch was asked for the bank it came in under.
    """

    def __init__(self, *, word_width):
        self._word_width = check_word_width(word_width)
        entry = word_entry_layout(word_width)
        super().__init__({
            "i": In(stream.Signature(word_layout(word_width))),
            "head": Out(entry),
            "after": Out(entry),
            "head_ready": Out(1),
            "take": In(1),
            "mark": In(1),
            "before_mark": Out(1),
        })

    @property
    def word_width(self):
        return self._word_width

    def elaborate(self, platform):
        m = Module()
        W = self._word_width
        depth = 3
        entries = [Signal(word_entry_layout(W), name=f"entry{index}") for index in range(depth)]
        held = Signal(range(depth + 1))
        dropping = Signal()               # discarding the rest of a faulty frame
        m.d.comb += [
            self.i.ready.eq(dropping | (held < depth)),
            self.head.eq(entries[0]),
            self.after.eq(entries[1]),
            self.head_ready.eq((held > 1) | ((held == 1) & entries[0].end)),
        ]

        word = self.i.payload
        fault = Signal()
        m.d.comb += fault.eq((word.bits > W) | (~word.last & (word.bits != W)))
        incoming = Signal(word_entry_layout(W))
        m.d.comb += [
            incoming.data.eq(word.data),
            incoming.bits.eq(Mux(fault, 0, word.bits)),
            incoming.end.eq(word.last | fault),
            incoming.fault.eq(fault),
        ]
        taken = Signal()
        m.d.comb += taken.eq(self.i.valid & self.i.ready)
        push = Signal()
        m.d.comb += push.eq(taken & ~dropping)
        with m.If(taken & dropping & word.last):
            m.d.sync += dropping.eq(0)
        with m.If(push & fault & ~word.last):
            m.d.sync += dropping.eq(1)

        # ``take`` comes late in the user's cycle, so it only enables registers: what an
        # entry loads is picked by registers alone (the entry above, or the incoming word).
        pop = self.take
        for index in range(depth):
            loads = push & (held - pop == index)
            if index + 1 < depth:
                has_above = held > index + 1
                with m.If((pop & has_above) | loads):
                    m.d.sync += entries[index].eq(Mux(has_above, entries[index + 1], incoming))
            else:
                with m.If(loads):
                    m.d.sync += entries[index].eq(incoming)
        held_next = Signal.like(held)
        m.d.comb += held_next.eq(held - pop + push)
        m.d.sync += held.eq(held_next)

        # The entries that came in before the last mark: all of them at a mark, then
        # fewer as they leave (first in, first out). ``before_mark`` is a register of its
        # own, so a decoder's bank select gains no logic level from it.
        before = Signal.like(held)
        before_next = Signal.like(held)
        m.d.comb += before_next.eq(Mux(self.mark, held_next, before - (pop & (before != 0))))
        m.d.sync += [before.eq(before_next), self.before_mark.eq(before_next != 0)]
        return m


class RegisterSlice(wiring.Component):
    """A stream of ``shape`` payloads through two registers (a main one and a skid), so
    that no path runs through it in a cycle: ``o.valid`` and ``o.payload`` come from the
    main register and ``i.ready`` from the skid's valid flag.

    Ports: ``i`` (in) and ``o`` (out), :class:`~amaranth.lib.stream.Signature` of
    ``shape``. Latency 1 cycle; throughput a transfer a cycle, ``o.ready`` high or not
    (a transfer that meets a full main register waits in the skid, and ``i.ready`` falls
    only then). Payloads keep their order; reset empties both registers."""

    def __init__(self, shape):
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        skid = Signal.like(self.i.payload)
        skid_valid = Signal()
        m.d.comb += self.i.ready.eq(~skid_valid)
        with m.If(self.o.ready | ~self.o.valid):
            # The main register moves on: from the skid, else from the input.
            with m.If(skid_valid):
                m.d.sync += [self.o.payload.eq(skid), self.o.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(self.i.valid)]
        with m.Elif(self.i.valid & ~skid_valid):
            m.d.sync += [skid.eq(self.i.payload), skid_valid.eq(1)]
        return m
