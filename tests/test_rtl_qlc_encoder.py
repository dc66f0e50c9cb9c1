"""The QLC encoder's pipeline: its latency formula, word widths other than the default,
back-to-back frames, and an ``i.ready`` that never looks at ``o.ready``.

Round trips at every lane count and the measured latency are the contract's
(``test_contract.py``); these runs add what the pipelined packer could get wrong.
Verilator runs vary the pause pattern unless they measure timing; the seed is printed.
"""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

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
    same_build(1, 8, "random"), same_build(2, 24, "bursty"), same_build(4, 128, "hold"),
    same_build(8, 40, "random")])
def test_bit_exact_at_other_word_widths(lanes, word_width, pattern, seed):
    """Words narrower or wider than a beat's codes, and widths that are no power of two."""
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
