"""The word window of the QLC and Huffman decoders: the pieces both write alike.

Both decoders hold words in a window of word-aligned slots, slot 0 the oldest, each slot
a struct with at least ``valid``, ``end`` (the frame's last word), ``fault`` and ``bits``
(:func:`~.bitpack.word_entry_layout`). Around their loop they find the frame's end in
the window (:func:`frame_end`), wait until a group's words are in (:func:`window_ready`),
cut a beat at the first lane that is not good (:func:`beat_run`) and drop the groups
that run on past an early frame end (:func:`drop_after_last`). Their loop itself, the
window with it, is one: :func:`jump_loop` (each decoder brings the jump targets of its
code), with :func:`pick`, the named mux both build their targets with.

Combinational logic here is plain expressions, never under ``m.If``: an event-driven
simulator then evaluates it at time 0 too, and no X lingers in it.
"""

from typing import NamedTuple

from amaranth.hdl import Const, Mux, Signal, Value

from .bitpack import mux_tree

__all__ = ["frame_end", "window_ready", "beat_run", "drop_after_last", "beat_end", "JumpLoop",
           "jump_loop", "pick", "window_geometry"]


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


def beat_end(m, lanes, ctrl, advance):
    """A decoder's beat after its loop: ``(count, last, error, dropping)``. The beat holds
    the symbols up to the first lane that is not good (:func:`beat_run`); the frame ends
    there, with an error unless that lane is past the frame's end in a frame with no
    fault; ``ctrl`` holds the stage's ``end_known``, ``group_end``, ``end_pos``,
    ``fault``, ``done`` (the loop ended the frame; with no beat sent yet, it was empty)
    and ``valid``; ``dropping`` (:func:`drop_after_last`) drops the groups after the
    frame's last beat."""
    run, count, error = beat_run(lanes)
    frame_over = ctrl["end_known"] & (ctrl["group_end"] >= ctrl["end_pos"])
    beat_count = Signal(range(len(lanes) + 1))
    beat_last = Signal()
    beat_error = Signal()
    m.d.comb += [
        beat_count.eq(Mux(ctrl["done"], 0, count)),
        beat_last.eq(ctrl["done"] | ~run | (frame_over & ~ctrl["fault"])),
        beat_error.eq(Mux(ctrl["done"], ctrl["fault"], ~run & (error | ctrl["fault"]))),
    ]
    dropping = drop_after_last(m, advance, ctrl["valid"], ctrl["done"], beat_last)
    return beat_count, beat_last, beat_error, dropping


class JumpLoop(NamedTuple):
    """What :func:`jump_loop` gives its decoder: the window's ``slots`` (slot 0 the
    oldest), where the frame ends in them (``end_known``, ``end_slot``, ``end_pos``,
    ``end_fault``, as :func:`frame_end`), where each jump of this cycle's group starts
    (``jumps``; the last, ``group_end``, is where the group ends), whether the loop runs a
    group (``step``) or ends the frame (``done``) this cycle, and whether the stages after
    the loop move (``advance``)."""
    slots: list
    end_known: Value
    end_slot: Value
    end_pos: Value
    end_fault: Value
    jumps: list
    group_end: Value
    step: Value
    done: Value
    advance: Value


def jump_loop(m, *, prepared, take, output, word_width, depth, groups, jump, min_length,
              max_length, last_start, span, pos_width):
    """The window of ``depth`` word slots and the decoders' loop, whose one recurrence is
    the bit position where the next group of codes starts: ``groups`` jumps a cycle, each
    a mux of the slots' precomputed ``targets`` (where the code ``jump`` codes on starts,
    relative to its word's first bit, for codes of ``min_length`` to ``max_length``
    bits), no adder, no comparison, no shift.

    ``prepared`` is the next word (a slot: ``valid``, ``end``, ``fault``, ``bits``,
    ``data``, ``targets``); ``take``, a signal this drives, says the window takes it;
    ``output`` is the decoder's output stream: the stages after the loop move
    (``advance``) when its register is free. A group starts at window bits
    ``0 .. last_start`` and takes ``span`` bits at most. Returns a :class:`JumpLoop`."""
    W, Q, S, M = word_width, depth, groups, jump
    slot_layout = prepared.shape()
    # A slot never written yet jumps by the shortest codes, so the loop only ever
    # moves forward, even through a frame's end into slots of no frame.
    idle = {"targets": [position + min_length * M for position in range(W)]}
    slots = [Signal(slot_layout, name=f"slot{index}", init=idle) for index in range(Q)]

    # The first slot that ends a frame, and where the frame's bits end.
    end_known, end_slot, end_pos, end_fault = frame_end(m, slots, W, pos_width)

    # -- the loop: the bit position where the next group starts -------------------------
    start = Signal(pos_width)
    past_end = Signal()          # the position went past a frame end in slot 0
    passed = Signal()            # ... or past one elsewhere (a cycle late)
    skip = Signal(range(Q))      # slots of an ended frame still to drop
    advance = Signal()           # every stage after the loop moves
    m.d.comb += advance.eq(~output.valid | output.ready)

    # The slots the group touches (bits start .. start + span - 1) hold their words,
    # or the frame ends before the first that does not.
    ready = Signal()
    m.d.comb += ready.eq(window_ready(slots, start, span, W))

    def target(position):
        slot, offset = divmod(position, W)
        return slot * W + slots[slot].targets[offset]

    jumps = [start]                              # where each jump of the group starts
    low, high = 0, last_start
    for index in range(S):
        # (indexed by the position itself, from 0, so that no subtraction comes first)
        candidates = [None] * low + [target(position) for position in range(low, high + 1)]
        jumps.append(pick(m, candidates, jumps[-1], pos_width, f"jump{index + 1}"))
        low += min_length * M
        high += max_length * M
    group_end = jumps[-1]
    crosses = Signal()
    m.d.comb += crosses.eq(group_end >= W)

    # What the loop does this cycle, one of: drop a slot of an ended frame (skip); end
    # the frame (done: tell the pipeline, go to the next frame); run a group (step);
    # note that the position is past a frame end in slot 0; drop slot 0 (slide) when
    # the position is beyond it and too far on for a group.
    skipping = Signal()
    at_end = Signal()
    in_reach = Signal()
    done = Signal()
    step = Signal()
    slide = Signal()
    shift = Signal()             # drop slot 0
    m.d.comb += [
        skipping.eq(skip != 0),
        at_end.eq(~skipping & (past_end | passed)),
        in_reach.eq(~skipping & ~at_end & (start <= last_start)),
        done.eq(at_end & advance),
        step.eq(in_reach & advance & ready),
        slide.eq(~skipping & ~at_end & ~in_reach & ~slots[0].end),
        shift.eq(skipping | done | (step & crosses & ~slots[0].end) | slide),
    ]
    # Whether the position passed the frame's end is worked out a cycle late, off the
    # loop's path: one more group may run past it, and the pipeline drops its beat,
    # as the frame's last beat has gone. (Not across a jump to the next frame.)
    m.d.sync += passed.eq(end_known & (start >= end_pos + end_fault) & ~done & ~skipping)
    with m.If(skipping):
        m.d.sync += skip.eq(skip - 1)
    with m.If(done):
        m.d.sync += [skip.eq(end_slot), past_end.eq(0), start.eq(0)]
    with m.If(step):
        m.d.sync += [start.eq(Mux(crosses, group_end - W, group_end)),
                     past_end.eq(crosses & slots[0].end)]
    with m.If(~skipping & ~at_end & ~in_reach & slots[0].end):
        m.d.sync += past_end.eq(1)
    with m.If(slide):
        m.d.sync += start.eq(start - W)

    # Window update. ``shift`` is late, so it only enables registers: a slot loads the
    # slot above if that holds a word, else the prepared word.
    occupied = Signal(range(Q + 1))
    m.d.comb += [occupied.eq(sum(slot.valid for slot in slots)),
                 take.eq(prepared.valid & (~slots[Q - 1].valid | shift))]
    for index in range(Q):
        arrives = take & (occupied - shift == index)
        if index == Q - 1:
            with m.If(arrives):
                m.d.sync += slots[index].eq(prepared)
            with m.Elif(shift):
                m.d.sync += slots[index].valid.eq(0)
        else:
            above = slots[index + 1]
            with m.If(arrives | shift):
                m.d.sync += slots[index].eq(Mux(above.valid, above, prepared))
                with m.If(~above.valid & ~arrives):
                    m.d.sync += slots[index].valid.eq(0)


    return JumpLoop(slots, end_known, end_slot, end_pos, end_fault, jumps, group_end, step,
                    done, advance)


def pick(m, candidates, index, width, name):
    """``candidates[index]`` as a ``width``-bit mux tree (:func:`~.bitpack.mux_tree`) on
    the low bits of ``index``, in a signal named ``name``; ``None`` candidates, and any
    past the list, are 0. Where it matters ``index`` is in range; elsewhere (a loop that
    does not step) it gives 0, never X."""
    picked = Signal(width, name=name)
    m.d.comb += picked.eq(mux_tree(
        [None if candidate is None else Value.cast(candidate)[:width]
         for candidate in candidates], index, width))
    return picked


def window_geometry(word_width, lanes, jump, max_length):
    """The shape of a decoder's window for codes of ``max_length`` bits at most, ``lanes``
    codes a cycle in jumps of ``jump`` codes: ``(W, N, M, S, span, last_start, slots)``,
    the word width, lanes, the jump, jumps a cycle, the most bits a group takes, the last
    window bit a group may start at and the window words a group can touch."""
    W, N, M = word_width, lanes, jump
    span = max_length * N                       # most bits a group of codes takes
    # A group may start at 0..last_start of the window; the loop drops one word a cycle
    # at most, so groups that take more than a word need some slack.
    last_start = W - 1 + (0 if span <= W else 8)
    slots = -(-(last_start + span) // W)        # window words a group can touch
    return W, N, M, N // M, span, last_start, slots
