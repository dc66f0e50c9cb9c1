"""The QLC encoder's pipeline: its latency formula, words much wider than a beat's codes
and words of no power of two at 8 lanes, the longest codes back to back, and frames that
follow one another without an idle cycle.

Round trips at every lane count and at the narrowest word (8 bits) and an odd number of
bytes, the measured latency, and ``i.ready`` free of ``o.ready`` are the contract's
(``test_contract.py``); these runs add what the pipelined packer could get wrong.
Verilator runs vary the pause pattern unless they measure timing; the seed is printed.
"""

import numpy as np
import pytest

from linkcodec.golden.qlc import QlcCode
from linkcodec.rtl.qlc import QlcEncoder
from linkcodec.sim.harness import run_frames

LANES = [1, 2, 4, 8]


def same_build(lanes, word_width=None, *values):
    """Cases that share a Verilator build (with the contract suite's, at the default
    width) run on one xdist worker."""
    group = f"qlc-encoder-{lanes}" if word_width is None else f"qlc-encoder-{lanes}-w{word_width}"
    return pytest.param(lanes, word_width, *values, marks=pytest.mark.xdist_group(group),
                        id="-".join([group.removeprefix("qlc-encoder-"), *values]))


@pytest.mark.parametrize(("lanes", "word_width", "pattern"), [
    same_build(4, 128, "hold"),
    pytest.param(*same_build(8, 40, "random").values,
                 marks=[*same_build(8, 40, "random").marks, pytest.mark.slow],
                 id="8-w40-random")])
def test_bit_exact_at_other_word_widths(lanes, word_width, pattern, seed):
    """A word holding several beats' codes (4 lanes, 128 bits), and a width of no power
    of two narrower than a beat's codes (8 lanes, 40 bits), the longest codes back to
    back (the contract has 8 bits and the default plus 8)."""
    rng = np.random.default_rng(word_width)
    frames = [rng.integers(0, 256, size, dtype=np.uint8)
              for size in [0, 1, lanes, 3 * lanes + 1, 300]]
    frames.append(np.full(64, 255, np.uint8))         # the longest codes, back to back
    result = run_frames("qlc-encoder", frames, lanes=lanes, word_width=word_width,
                        idle=pattern, stall=pattern, seed=seed)
    assert result["bit_exact"], f"seed {seed}"


@pytest.mark.parametrize(("lanes", "word_width"), [same_build(lanes) for lanes in [1, 4]])
def test_frames_follow_without_idle_cycles(lanes, word_width):
    """Short frames back to back: one beat a cycle in, no cycle lost between frames; an
    empty frame right behind a one-beat frame leaves as its own word the next cycle."""
    rng = np.random.default_rng(3)
    symbols = np.clip(np.abs(rng.normal(0, 4, 4000)), 0, 255).astype(np.uint8)
    code = QlcCode.from_pmf(np.bincount(symbols, minlength=256) + 1)
    frames = [symbols[:lanes], np.zeros(0, np.uint8)] + [
        symbols[start:start + size] for start, size in
        zip(range(0, 4000, 40), rng.integers(1, 40, 100))]
    beats = sum(max(1, -(-frame.size // lanes)) for frame in frames)
    result = run_frames("qlc-encoder", frames, lanes=lanes, tables=code, seed=1)
    assert result["bit_exact"]
    inputs, outputs = result["input_cycles"]["i"], result["output_cycles"]["o"]
    assert inputs[-1] - inputs[0] + 1 == beats
    assert (inputs[1] - inputs[0], outputs[1] - outputs[0]) == (1, 1)


@pytest.mark.parametrize("lanes", LANES)
def test_latency_property(lanes):
    encoder = QlcEncoder(lanes=lanes)
    encoder._MustUse__silence = True
    assert encoder.latency == 6 + lanes.bit_length() - 1
    with pytest.raises(AttributeError):
        encoder.latency = 1
