"""The QLC encoder's pipeline: its stated latency, any word width, back-to-back frames, and
an ``i.ready`` that never looks at ``o.ready``.

Bit-exactness on the corner-case stimuli, at every lane count, is in ``test_rtl_qlc.py``;
these runs add what the pipelined packer could get wrong. Verilator runs have random idle
cycles and backpressure unless they measure timing; the seed is printed.
"""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from linkcodec.golden.qlc import QlcCode
from linkcodec.rtl.qlc import QlcEncoder
from linkcodec.sim.harness import run_frames

LANES = [1, 2, 4, 8]


def same_build(lanes, word_width=None):
    """Cases that share a Verilator build with ``test_rtl_qlc.py`` run on its worker."""
    group = f"qlc-encoder-{lanes}" if word_width is None else f"qlc-encoder-{lanes}-w{word_width}"
    return pytest.param(lanes, word_width, marks=pytest.mark.xdist_group(group),
                        id=group.removeprefix("qlc-encoder-"))


@pytest.mark.parametrize(("lanes", "word_width"), [same_build(lanes) for lanes in LANES])
def test_latency_is_as_documented(lanes, word_width):
    """From a one-beat frame's transfer to its word's transfer, with no stalls."""
    rng = np.random.default_rng(lanes)
    frames = [rng.integers(0, 256, lanes, dtype=np.uint8), np.zeros(0, np.uint8)]
    result = run_frames("qlc-encoder", frames, lanes=lanes, seed=1)
    assert result["bit_exact"]
    inputs, outputs = result["input_cycles"]["i"], result["output_cycles"]["o"]
    expected = QlcEncoder(lanes=lanes)
    expected._MustUse__silence = True
    assert outputs[0] - inputs[0] == expected.latency
    # The empty frame's beat follows at once and leaves as one word the next cycle.
    assert (inputs[1] - inputs[0], outputs[1] - outputs[0]) == (1, 1)


@pytest.mark.parametrize(("lanes", "word_width"), [
    same_build(1, 8), same_build(2, 24), same_build(4, 128), same_build(8, 40)])
def test_bit_exact_at_other_word_widths(lanes, word_width, seed):
    """Words narrower or wider than a beat's codes, and widths that are no power of two."""
    rng = np.random.default_rng(word_width)
    frames = [rng.integers(0, 256, size, dtype=np.uint8)
              for size in [0, 1, lanes, 3 * lanes + 1, 300]]
    frames.append(np.full(64, 255, np.uint8))         # the longest codes, back to back
    result = run_frames("qlc-encoder", frames, lanes=lanes, word_width=word_width,
                        idle=0.3, stall=0.3, seed=seed)
    assert result["bit_exact"], f"seed {seed}"


@pytest.mark.parametrize(("lanes", "word_width"), [same_build(lanes) for lanes in [1, 4]])
def test_frames_follow_without_idle_cycles(lanes, word_width):
    """Short frames back to back: one beat a cycle in, no cycle lost between frames."""
    rng = np.random.default_rng(3)
    symbols = np.clip(np.abs(rng.normal(0, 4, 4000)), 0, 255).astype(np.uint8)
    code = QlcCode.from_pmf(np.bincount(symbols, minlength=256) + 1)
    frames = [symbols[start:start + size] for start, size in
              zip(range(0, 4000, 40), rng.integers(1, 40, 100))]
    beats = sum(-(-frame.size // lanes) for frame in frames)
    result = run_frames("qlc-encoder", frames, lanes=lanes, tables=code, seed=1)
    assert result["bit_exact"]
    inputs = result["input_cycles"]["i"]
    assert inputs[-1] - inputs[0] + 1 == beats


@pytest.mark.parametrize("lanes", [1, 8])
def test_input_ready_never_depends_on_output_ready(lanes):
    """Within every cycle, ``i.ready`` reads the same with ``o.ready`` low and high; under
    long backpressure it falls, and the output word holds until it is taken."""
    dut = QlcEncoder(lanes=lanes)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    seen = {"stalled": 0, "words": 0}

    async def bench(ctx):
        rng = random.Random(lanes)
        held = None
        for cycle in range(600):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload.count, lanes)
            ctx.set(dut.i.payload.last, int(cycle % 37 == 36))
            for lane in range(lanes):
                ctx.set(dut.i.payload.symbols[lane], rng.randrange(256))
            ready = []
            for level in (0, 1):
                ctx.set(dut.o.ready, level)
                ready.append(ctx.get(dut.i.ready))
            assert ready[0] == ready[1], f"cycle {cycle}"
            taking = int(cycle % 100 > 60 and rng.random() < 0.7)
            ctx.set(dut.o.ready, taking)
            seen["stalled"] += not ready[0]
            if ctx.get(dut.o.valid):
                word = (ctx.get(dut.o.payload.data), ctx.get(dut.o.payload.bits),
                        ctx.get(dut.o.payload.last))
                assert held is None or word == held, f"cycle {cycle}: the word changed"
                held = None if taking else word
                seen["words"] += taking
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert seen["stalled"] > 100 and seen["words"] > 50


@pytest.mark.parametrize("lanes", LANES)
def test_latency_property(lanes):
    encoder = QlcEncoder(lanes=lanes)
    encoder._MustUse__silence = True
    assert encoder.latency == 6 + lanes.bit_length() - 1
    with pytest.raises(AttributeError):
        encoder.latency = 1
