"""A channel that spoils flits, and what a receiver without retry should make of them.

:func:`inject` puts ``count`` faults on a sequence of flits as a die-to-die channel
would: a flipped bit (``"flip"``), a burst of 2 to 16 bits whose ends are flipped
(``"burst"``), a lost flit (``"drop"``), a flit that arrives twice (``"duplicate"``) and
a flit replaced by random bytes (``"garbage"``). The kinds take turns, each fault on a
flit of its own, chosen by a seeded generator (the seed is printed, as for every random
pattern here). :func:`lossy_beats` is what ``LinkRx`` without retry gives for the
spoilt sequence (``rtl/link.py``): a flit whose CRC fails gives its stream the error
beat (the stream its header names, if any), the others decode as sent.
:func:`score` counts what the user lost against what went in.

This is the channel of a link without retry, which does not number its flits: a lost or
a duplicated flit passes unseen (its frame's symbols are short or repeated), and
:func:`score` counts what that costs. A link with retry runs through
:mod:`linkcodec.sim.channel` instead, which injects the faults in hardware, a stalled
return channel among them.
"""

from typing import NamedTuple

import numpy as np

from ..golden.link import FlitHeader, FlitReader, FlitWriter, seal
from .beats import decoder_beats

__all__ = ["FAULT_KINDS", "Fault", "crc_good", "inject", "lossy_beats", "score"]

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


def inject(flits, count, *, seed, kinds=FAULT_KINDS):
    """``(received, faults)``: ``flits`` (bytes, in the order sent) as the channel gives
    them with ``count`` faults, one a flit, the kinds of ``kinds`` in turn."""
    flits = [bytes(flit) for flit in flits]
    if not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be a whole number of faults, not {count!r}")
    if count > len(flits):
        raise ValueError(f"{count} faults need as many flits; the channel carries "
                         f"{len(flits)}")
    unknown = [kind for kind in kinds if kind not in FAULT_KINDS]
    if unknown or not kinds:
        raise ValueError(f"fault kinds are {', '.join(FAULT_KINDS)}, not {unknown or kinds}")
    rng = np.random.default_rng(seed)
    hit = sorted(int(index) for index in rng.choice(len(flits), count, replace=False))
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
    received = []
    for index, flit in enumerate(flits):
        fault = faults.get(index)
        if fault is None:
            received.append(flit)
        elif fault.kind == "drop":
            continue
        elif fault.kind == "duplicate":
            received += [flit, flit]
        else:
            received.append(fault.spoilt)
    return received, [faults[index] for index in hit]


def crc_good(flit):
    """Whether ``flit``'s CRC field holds its halves' CRCs."""
    return seal(flit) == bytes(flit)


def lossy_beats(fmt, tables, flits):
    """``({port: beats}, spoilt)``: what each output ``o_sK`` of ``LinkRx`` without retry
    gives for ``flits`` (data flits, in the order received; both ends hold ``tables``),
    and how many flits failed their CRC. A flit that fails gives the error beat to the
    stream its header names (none if it names none or says it is a table flit); the
    others give their symbols, ``last`` on a flit that ends its frame."""
    reader = FlitReader(fmt)
    for flit in FlitWriter(fmt).load(tables):
        reader.read(flit)
    beats = {f"o_s{index}": [] for index in range(fmt.streams)}
    spoilt = 0
    empty = np.zeros(0, dtype=np.uint16 if fmt.symbol_bytes == 2 else np.uint8)
    for flit in flits:
        header = FlitHeader.unpack(flit)
        if not crc_good(flit):
            spoilt += 1
            if not header.table and header.stream < fmt.streams:
                beats[f"o_s{header.stream}"] += decoder_beats([empty], 1, error_after=0)
            continue
        if header.table or header.stream >= fmt.streams:
            continue
        # (an empty flit gives one beat of no symbol: kept only if it ends the frame)
        mine = decoder_beats([reader.symbols(flit)], 1)
        if not header.last:
            mine[-1] = {**mine[-1], "last": 0}
        beats[f"o_s{header.stream}"] += [beat for beat in mine
                                         if beat["count"] or beat["last"]]
    return beats, spoilt


def _frames_of(beats):
    """A stream's output beats as frames: ``(symbols tuple, error)`` per ``last``."""
    frames, symbols = [], []
    for beat in beats:
        symbols += beat["symbols"][:beat["count"]]
        if beat["last"]:
            frames.append((tuple(symbols), bool(beat["error"])))
            symbols = []
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
