"""A channel that spoils flits, and what a receiver without retry should make of them.

:func:`inject` puts ``count`` faults on a sequence of flits as a die-to-die channel
would: a flipped bit (``"flip"``), a burst of 2 to 16 bits whose ends are flipped
(``"burst"``), a lost flit (``"drop"``), a flit that arrives twice (``"duplicate"``) and
a flit replaced by random bytes (``"garbage"``). The kinds take turns, each fault on a
flit of its own, chosen by a seeded generator (the seed is printed, as for every random
pattern here). :func:`lossy_beats` is what ``LinkRx`` without retry gives for the
spoilt sequence (``rtl/link/``): a flit whose CRC fails gives its stream the error
beat (the stream its header names, if any), the others decode as sent.
:func:`score` counts what the user lost against what went in.

This is the channel of a link without retry. If the link does not number its flits, a
lost or a duplicated flit passes unseen (its frame's symbols are short or repeated), and
:func:`score` counts what that costs. If it numbers them stream by stream
(``LinkFormat(..., sequence="stream")``, ``LinkRx(stream_numbers=True)``), a flit that
fails its CRC or repeats one is skipped, and the next good flit of its stream reports
what was lost before it (golden :class:`~linkcodec.golden.link.StreamCheck`): an error
beat for each frame end lost and one for flits lost inside a frame, where they were.
:func:`hit_beats` is the output a user should then get, from the flits sent and which
of them the channel hit alone, with no numbers: every stream's frames, each hit flit's
symbols replaced by an error beat. A link with retry runs through
:mod:`linkcodec.sim.channel` instead, which injects the faults in hardware, a stalled
return channel among them.
"""

from typing import NamedTuple

import numpy as np

from ..golden.link import FlitHeader, FlitReader, StreamCheck, is_status, seal
from ..rtl.blocks.beats import decoder_beats

__all__ = ["FAULT_KINDS", "Fault", "arrivals", "crc_good", "hit_beats", "inject",
           "lossy_beats", "score"]

#: The error beat that stands for lost symbols inside a frame, and one that ends a frame.
HOLE = {"symbols": [0], "count": 0, "last": 0, "error": 1}
LOST_END = {"symbols": [0], "count": 0, "last": 1, "error": 1}

#: The faults :func:`inject` puts on a channel, in the order they take turns.
FAULT_KINDS = ("flip", "burst", "drop", "duplicate", "garbage")


class Fault(NamedTuple):
    """A fault on the flit at ``flit`` (its index in the sequence sent): ``kind``, for a
    flip or a burst the flit's ``bits`` that flipped (bit 0: byte 0's top bit), and the
    flit as it arrived, if it was changed (``spoilt``: flip, burst, garbage)."""

    kind: str
    flit: int
    bits: tuple = ()
    spoilt: bytes = None


def inject(flits, count, *, seed, kinds=FAULT_KINDS, data_only=False):
    """``(received, faults)``: ``flits`` (bytes, in the order sent) as the channel gives
    them with ``count`` faults, one a flit, the kinds of ``kinds`` in turn; with
    ``data_only``, on data flits only (a table flit lost or spoilt costs, without
    retry, every coded flit of its bank until the next table: not the hit flit's
    symbols alone), and not on status flits (:func:`~linkcodec.golden.link.is_status`:
    they carry no symbols, and a sender repeats them while its stream is idle, so one
    lost is made good by the next)."""
    flits = [bytes(flit) for flit in flits]
    if not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be a whole number of faults, not {count!r}")

    def target(flit):
        header = FlitHeader.unpack(flit)
        return not (data_only and (header.table or is_status(header)))

    targets = [index for index, flit in enumerate(flits) if target(flit)]
    if count > len(targets):
        raise ValueError(f"{count} faults need as many {'data ' * data_only}flits; the "
                         f"channel carries {len(targets)}")
    unknown = [kind for kind in kinds if kind not in FAULT_KINDS]
    if unknown or not kinds:
        raise ValueError(f"fault kinds are {', '.join(FAULT_KINDS)}, not {unknown or kinds}")
    rng = np.random.default_rng(seed)
    hit = sorted(targets[int(k)] for k in rng.choice(len(targets), count, replace=False))
    faults = {}
    for turn, index in enumerate(hit):
        kind = kinds[turn % len(kinds)]
        bits = ()
        if kind in ("flip", "burst"):
            length = 1 if kind == "flip" else int(rng.integers(2, 17))
            start = int(rng.integers(0, 8 * len(flits[index]) - length + 1))
            inner = rng.integers(0, 2, max(0, length - 2))
            bits = tuple([start] + [start + 1 + k for k in np.flatnonzero(inner)]
                         + ([start + length - 1] if length > 1 else []))
        spoilt = None
        if kind == "garbage":
            spoilt = rng.integers(0, 256, len(flits[index]), dtype=np.uint8).tobytes()
        elif bits:
            changed = bytearray(flits[index])
            for bit in bits:
                changed[bit // 8] ^= 0x80 >> (bit % 8)
            spoilt = bytes(changed)
        faults[index] = Fault(kind, index, bits, spoilt)
    received = [flits[index] if index not in faults or faults[index].spoilt is None
                else faults[index].spoilt
                for index in arrivals(len(flits), faults.values())]
    return received, [faults[index] for index in hit]


def arrivals(sent, faults):
    """The index in the sequence sent of each flit the channel gives, in order, for
    ``faults`` (:func:`inject`'s) on ``sent`` flits (a count)."""
    kinds = {fault.flit: fault.kind for fault in faults}
    order = []
    for index in range(sent):
        kind = kinds.get(index)
        order += [] if kind == "drop" else [index, index] if kind == "duplicate" else [index]
    return order


def crc_good(flit):
    """Whether ``flit``'s CRC field holds its halves' CRCs."""
    return seal(flit) == bytes(flit)


def lossy_beats(fmt, tables, flits):
    """``({port: beats}, spoilt, verdicts)``: what each output ``o_sK`` of ``LinkRx``
    without retry gives for ``flits`` (data flits, in the order received; both ends hold
    ``tables``), how many flits failed their CRC, and for each flit received what the
    receiver made of it: ``"spoilt"`` (its CRC failed), ``"skipped"`` (numbered, a
    repeat), ``"reported"`` (numbered: it first gave error beats for flits lost before
    it), ``"taken"``, or ``"dropped"`` (a table flit, or one naming no stream of the
    link).

    Without stream numbers a flit that fails gives the error beat to the stream its
    header names (none if it names none or says it is a table flit); the others give
    their symbols, ``last`` on a flit that ends its frame. With them (``fmt.sequence ==
    "stream"``) a flit that fails gives nothing, and a good one is judged by its stream's
    :class:`~linkcodec.golden.link.StreamCheck` first."""
    numbered = fmt.sequence == "stream"
    reader = FlitReader(fmt, tables)
    beats = {f"o_s{index}": [] for index in range(fmt.streams)}
    checks = [StreamCheck() for _ in range(fmt.streams)]
    spoilt = 0
    verdicts = []
    empty = np.zeros(0, dtype=np.uint16 if fmt.symbol_bytes == 2 else np.uint8)
    for flit in flits:
        header = FlitHeader.unpack(flit)
        if not crc_good(flit):
            spoilt += 1
            verdicts.append("spoilt")
            if not numbered and not header.table and header.stream < fmt.streams:
                beats[f"o_s{header.stream}"] += decoder_beats([empty], 1, error_after=0)
            continue
        if header.table or header.stream >= fmt.streams:
            verdicts.append("dropped")
            continue
        port = f"o_s{header.stream}"
        verdict = "taken"
        if numbered:
            judged = checks[header.stream].take(flit[fmt.sequence_offset], header.last,
                                                status=is_status(header))
            if judged.skip:
                verdicts.append("skipped")
                continue
            beats[port] += [dict(LOST_END)] * judged.ends + [dict(HOLE)] * judged.hole
            verdict = "reported" if judged.ends or judged.hole else verdict
        verdicts.append(verdict)
        beats[port] += _flit_beats(reader, flit, header)
    return beats, spoilt, verdicts


def _flit_beats(reader, flit, header):
    """The beats a good data ``flit`` gives its stream: its symbols, ``last`` on the
    last if it ends its frame (an empty flit gives a beat only if it ends the frame)."""
    beats = decoder_beats([reader.symbols(flit)], 1)
    if not header.last:
        beats[-1] = {**beats[-1], "last": 0}
    return [beat for beat in beats if beat["count"] or beat["last"]]


def hit_beats(fmt, tables, flits, hit):
    """``{port: beats}``: what a user should get of ``flits`` (the data flits sent, in
    order; table flits are passed over; both ends hold ``tables``) when the channel
    spoils or loses those whose indices are in ``hit`` and the receiver loses nothing
    else: each stream's frames as sent, a run of hit flits inside
    a frame an error beat (``last = 0``) and each hit flit that ends a frame an error
    beat that ends it (``last = 1``), where they were. A stream's hit flits with no
    good flit of it after them give nothing: no receiver learns of them."""
    reader = FlitReader(fmt, tables)
    beats = {f"o_s{index}": [] for index in range(fmt.streams)}
    lost = {index: [] for index in range(fmt.streams)}   # each stream's run of hit flits
    for index, flit in enumerate(flits):
        header = FlitHeader.unpack(flit)
        port = f"o_s{header.stream}"
        if header.table:
            continue
        if index in hit:
            lost[header.stream].append(header.last)
            continue
        run = lost[header.stream]
        beats[port] += [dict(LOST_END)] * sum(run) + [dict(HOLE)] * bool(run and not run[-1])
        lost[header.stream] = []
        beats[port] += _flit_beats(reader, flit, header)
    return beats


def _frames_of(beats):
    """A stream's output beats as frames: ``(symbols tuple, error)`` per ``last``
    (``error``: any beat of the frame has it)."""
    frames, symbols, error = [], [], False
    for beat in beats:
        symbols += beat["symbols"][:beat["count"]]
        error = error or bool(beat["error"])
        if beat["last"]:
            frames.append((tuple(symbols), error))
            symbols, error = [], False
    return frames


def score(sent, output):
    """What a user lost: ``sent`` (``(stream, symbols)`` frames, in order) against
    ``output`` (``{o_sK: beats}``). ``frames_lost``: frames sent that do not come out
    whole and error-free; ``frames_duplicated``: error-free frames that come out more
    often than they went in; ``symbols_wrong``: the symbols of error-free frames that
    were never sent (a frame cut short or run together by a lost or repeated flit, with
    no error to say so); ``frames_flagged``: frames that end with the error beat."""
    lost = duplicated = wrong = flagged = 0
    for port, beats in output.items():
        stream = int(port[3:])
        want = {}
        for index, frame in sent:
            if index == stream:
                key = tuple(int(value) for value in np.asarray(frame).reshape(-1))
                want[key] = want.get(key, 0) + 1
        got = {}
        for symbols, error in _frames_of(beats):
            if error:
                flagged += 1
            else:
                got[symbols] = got.get(symbols, 0) + 1
        for key, times in want.items():
            lost += max(0, times - got.get(key, 0))
        for key, times in got.items():
            if key in want:
                duplicated += max(0, times - want[key])
            else:
                wrong += times * len(key)
    return {"frames_lost": lost, "frames_duplicated": duplicated, "symbols_wrong": wrong,
            "frames_flagged": flagged}
