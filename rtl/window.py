"""The word window of the QLC and Huffman decoders: the pieces both write alike.

Both decoders hold words in a window of word-aligned slots, slot 0 the oldest, each slot
a struct with at least ``valid``, ``end`` (the frame's last word), ``fault`` and ``bits``
(:func:`~.bitpack.word_entry_layout`). Around their loop they find the frame's end in
the window (:func:`frame_end`), wait until a group's words are in (:func:`window_ready`),
cut a beat at the first lane that is not good (:func:`beat_run`) and drop the groups
that run on past an early frame end (:func:`drop_after_last`).

Combinational logic here is plain expressions, never under ``m.If``: an event-driven
simulator then evaluates it at time 0 too, and no X lingers in it.
"""

from amaranth.hdl import Const, Mux, Signal

__all__ = ["frame_end", "window_ready", "beat_run", "drop_after_last"]


def frame_end(m, slots, word_width, pos_width):
    """The first slot that ends a frame: ``(end_known, end_slot, end_pos, end_fault)``,
    signals of whether one is in the window, its index, the window bit position where the
    frame's bits end, and whether they end at a word fault."""
    found, slot_index, position, fault = 0, 0, 0, 0
    for index in reversed(range(len(slots))):
        ends = slots[index].valid & slots[index].end
        found = ends | found
        slot_index = Mux(ends, index, slot_index)
        position = Mux(ends, index * word_width + slots[index].bits, position)
        fault = Mux(ends, slots[index].fault, fault)
    end_known = Signal(name="end_known")
    end_slot = Signal(range(len(slots)), name="end_slot")
    end_pos = Signal(pos_width, name="end_pos")
    end_fault = Signal(name="end_fault")
    m.d.comb += [end_known.eq(found), end_slot.eq(slot_index), end_pos.eq(position),
                 end_fault.eq(fault)]
    return end_known, end_slot, end_pos, end_fault


def window_ready(slots, start, span, word_width):
    """Whether the slots a group touches (window bits ``start .. start + span - 1``) hold
    their words, or the frame ends before the first that does not (an expression)."""
    ready = 1
    for index in reversed(range(len(slots))):
        touched = start + span > index * word_width if index else Const(1)
        ready = (~touched | slots[index].valid) & (slots[index].end | ready)
    return ready


def beat_run(lanes):
    """A beat's symbols are its lanes up to the first that is not ``good``: ``(run, count,
    error)`` for ``lanes`` (dicts with ``good`` and ``present``, the lane's code starts in
    the frame), where ``run`` is every lane good, ``count`` the good lanes before the first
    bad one and ``error`` that lane starting in the frame (expressions)."""
    run, count, error = 1, 0, 0
    for lane in lanes:
        error = error | (run & ~lane["good"] & lane["present"])
        run = run & lane["good"]
        count = count + run
    return run, count, error


def drop_after_last(m, advance, valid, done, last):
    """``dropping``, a register: set once a beat with ``last`` goes out before the loop
    has reached the frame's end (the frame ended early, at an error), cleared by the
    loop's frame end (``done``); while it is set the pipeline's groups are dropped. The
    pipeline stage moves on ``advance`` and holds a group while ``valid``."""
    dropping = Signal(name="dropping")
    with m.If(advance & valid):
        with m.If(done):
            m.d.sync += dropping.eq(0)
        with m.Elif(~dropping & last):
            m.d.sync += dropping.eq(1)
    return dropping
