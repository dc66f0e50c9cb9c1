"""The fault-injecting channel (sim/faults.py): what it does to flits, what a receiver
without retry makes of them, and what the score counts."""

import numpy as np
import pytest

from linkcodec.golden.link import FlitHeader, FlitWriter, LinkFormat
from linkcodec.golden.qlc import QlcCode, QlcLayout
from linkcodec.sim.faults import FAULT_KINDS, crc_good, inject, lossy_beats, score

CODE = QlcCode(QlcLayout.base(), np.arange(256))


def _flits(fmt, frames):
    writer = FlitWriter(fmt)
    writer.load(CODE)
    return [flit for stream, frame in frames for flit in writer.frame(frame, stream)]


def _frames():
    rng = np.random.default_rng(4)
    return [(k % 2, np.minimum(rng.geometric(0.3, 150 + 40 * k), 255).astype(np.uint8))
            for k in range(6)]


def test_each_kind_does_what_it_says_in_turn_and_the_seed_replays_it():
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64)
    flits = _flits(fmt, _frames())
    received, faults = inject(flits, 10, seed=3)
    assert inject(flits, 10, seed=3) == (received, faults)
    assert [fault.kind for fault in faults] == list(FAULT_KINDS) * 2
    assert len(received) == len(flits)            # two lost, two duplicated
    at = 0
    by_flit = {fault.flit: fault for fault in faults}
    for index, flit in enumerate(flits):
        fault = by_flit.get(index)
        kind = fault.kind if fault else None
        if kind == "drop":
            continue
        if kind == "duplicate":
            assert received[at] == received[at + 1] == flit
            at += 2
            continue
        got = received[at]
        at += 1
        flipped = np.flatnonzero(np.unpackbits(np.frombuffer(
            bytes(a ^ b for a, b in zip(got, flit)), dtype=np.uint8)))
        if kind == "flip":
            assert list(flipped) == list(fault.bits) and len(flipped) == 1
        elif kind == "burst":
            assert list(flipped) == list(fault.bits)
            assert 2 <= flipped[-1] - flipped[0] + 1 <= 16
        elif kind is None:
            assert got == flit
        if kind in ("flip", "burst", "garbage"):
            assert got == fault.spoilt and not crc_good(got)


def test_bad_counts_and_kinds_are_refused():
    flits = _flits(LinkFormat("qlc", flit_bytes=64), _frames()[:1])
    with pytest.raises(ValueError, match=f"{len(flits) + 1} faults need as many flits"):
        inject(flits, len(flits) + 1, seed=1)
    inject(flits, len(flits), seed=1)                  # one a flit: the most
    with pytest.raises(ValueError, match="whole number"):
        inject(flits, -1, seed=1)
    with pytest.raises(ValueError, match="fault kinds are"):
        inject(flits, 1, seed=1, kinds=("melt",))


def test_lossy_beats_and_the_score_of_each_kind():
    """A receiver without retry: a spoilt flit gives its stream the error beat and costs
    its frame; a lost flit cuts its frame short and a duplicated one lengthens it, with
    no error to say so (symbols_wrong); the other frames come out whole."""
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64)
    frames = _frames()
    flits = _flits(fmt, frames)
    output, spoilt, _ = lossy_beats(fmt, CODE, flits)
    assert spoilt == 0
    assert score(frames, output) == {"frames_lost": 0, "frames_duplicated": 0,
                                     "symbols_wrong": 0, "frames_flagged": 0}
    # the first flit of the last frame (stream 1, several flits), spoilt, lost or
    # duplicated
    ends = [k for k, flit in enumerate(flits) if FlitHeader.unpack(flit).last]
    start = ends[-2] + 1
    assert start < ends[-1] and FlitHeader.unpack(flits[start]).stream == 1
    spoilt_flit = bytearray(flits[start])
    spoilt_flit[9] ^= 1
    output, spoilt, verdicts = lossy_beats(fmt, CODE, flits[:start] + [bytes(spoilt_flit)]
                                           + flits[start + 1:])
    assert verdicts[start] == "spoilt" and set(verdicts) == {"taken", "spoilt"}
    assert spoilt == 1
    result = score(frames, output)
    assert result["frames_flagged"] == 1 and result["frames_lost"] == 1
    cut = FlitHeader.unpack(flits[start]).count
    output, _, _ = lossy_beats(fmt, CODE, flits[:start] + flits[start + 1:])
    assert score(frames, output) == {"frames_lost": 1, "frames_duplicated": 0,
                                     "symbols_wrong": frames[-1][1].size - cut,
                                     "frames_flagged": 0}
    output, _, _ = lossy_beats(fmt, CODE, flits[:start + 1] + flits[start:])
    assert score(frames, output)["symbols_wrong"] == frames[-1][1].size + cut
