"""The pipelined QLC decoder's own promises: word widths other than the default (its
latency there too), the jump geometry, and the word queue in front of it (word faults,
dropping, ``i.ready``).

The latency at the default widths, run-time tables and fuzzed words at every lane count,
and round trips at 8-bit words and an odd number of bytes, are the contract's
(``test_contract.py``); here the word widths take fuzzed frames, word faults included.
Simulations vary the pause pattern unless they measure latency; the seed is printed
(replay with ``LINKCODEC_SEED``).
"""

import numpy as np
import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from linkcodec.golden.qlc import QlcCode
from linkcodec.rtl.bitpack import WordQueue
from linkcodec.rtl.qlc import QlcDecoder
from linkcodec.rtl.blocks.beats import decoder_beats, frame_words
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.fuzz import check_frames, fuzz_frames
from linkcodec.sim.harness import run_beats


def on_decoder(lanes, *values, width=None, shared=False):
    """Cases that share a decoder build run on one xdist worker: the contract suite's
    (``qlc-decoder-LANES``, which also holds its round trips at other widths) when the
    build is ``shared`` with it, else one of their own."""
    group = f"qlc-decoder-{lanes}" if shared else f"qlc-decoder-{lanes}-w{width}"
    return pytest.param(lanes, *values, marks=pytest.mark.xdist_group(group))


def build_name(block):
    """The build folder's name, the one every test of this block and width uses."""
    return get_block("qlc-decoder").module_name(lanes=block.lanes, word_width=block.word_width)


@pytest.mark.parametrize(("lanes", "width"), [on_decoder(1, 8, width=8, shared=True)])
def test_latency_at_a_narrow_word_width(lanes, width):
    """From the transfer of a frame's first word to the first beat's transfer, with the
    words back to back and no stalls: ``QlcDecoder.latency`` cycles, at a width where a
    code spans words (the contract measures the default widths)."""
    block = QlcDecoder(lanes=lanes, word_width=width)
    code = QlcCode.base()
    symbols = np.arange(64, dtype=np.uint8)
    words = frame_words(*code.encode(symbols), block.word_width)
    result = run_beats(block, inputs={"i": words},
                       expected={"o": decoder_beats([symbols], lanes)}, seed=1,
                       name=build_name(block))
    assert result["bit_exact"]
    first_in = result["input_cycles"]["i"][0]
    first_out = result["output_cycles"]["o"][0]
    assert first_out - first_in == block.latency


@pytest.mark.parametrize(("lanes", "width", "pattern"), [
    on_decoder(1, 8, "random", width=8, shared=True), on_decoder(4, 16, "bursty", width=16),
    pytest.param(*on_decoder(2, 40, "hold", width=40).values,
                 marks=[*on_decoder(2, 40, "hold", width=40).marks, pytest.mark.slow])])
def test_word_widths_other_than_the_default(lanes, width, pattern, seed):
    """Narrow words (a code spans three 8-bit words; four lanes' codes span several
    16-bit words, so the jump shrinks) and a width that is not a power of two, against
    the golden word-level model, word faults included."""
    code = QlcCode.base()
    frames = fuzz_frames(code, 150, word_width=width, rng=np.random.default_rng(seed))
    report = check_frames(frames, lanes=lanes, word_width=width, code=code, seed=seed,
                          idle=pattern, stall=pattern)
    assert report["mismatches"] == 0 and report["hangs"] == 0, report["examples"]


def test_jump_and_latency_follow_lanes_and_width():
    """A jump's targets come from a word and the next: narrow words take shorter jumps."""
    def built(lanes, width=None):
        block = QlcDecoder(lanes=lanes, word_width=width)
        Fragment.get(block, None)         # elaborates: a block that is built, not just made
        return block

    assert [built(lanes).jump for lanes in (1, 2, 4, 8)] == [1, 1, 2, 4]
    assert (built(4, 16).jump, built(4, 8).jump, built(8, 32).jump) == (2, 1, 2)
    block = built(1)
    assert block.latency < built(8).latency
    with pytest.raises(AttributeError):
        block.latency = 3


# -- the word queue, in Amaranth's simulator ---------------------------------------------

def queue_entries(words, *, width=16, take_every=1):
    """Feed ``words`` (dicts) to a :class:`WordQueue` and take its head whenever it may
    leave (every ``take_every`` cycles); returns the entries taken and whether
    ``i.ready`` was ever low with the queue not full."""
    dut = WordQueue(word_width=width)
    taken = []

    async def bench(ctx):
        index = cycle = 0
        while cycle < 20 * (len(words) + 4):
            if index < len(words):
                word = words[index]
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload, {"data": word["data"], "bits": word["bits"],
                                        "last": word["last"]})
            else:
                ctx.set(dut.i.valid, 0)
            take = cycle % take_every == 0 and ctx.get(dut.head_ready)
            ctx.set(dut.take, take)
            if take:
                head = ctx.get(dut.head)
                taken.append({"data": head.data, "bits": head.bits, "end": head.end,
                              "fault": head.fault})
            if index < len(words) and ctx.get(dut.i.ready):
                index += 1
            await ctx.tick()
            cycle += 1

    simulator = Simulator(dut)
    simulator.add_clock(1e-8)
    simulator.add_testbench(bench)
    simulator.run()
    return taken


@pytest.mark.parametrize("take_every", [1, 3])
def test_word_queue_turns_word_faults_into_frame_ends(take_every):
    """A short non-final word and an overlong word each end their frame in their place
    (``bits = 0``, ``end``, ``fault``); the rest of that frame is dropped; final words of
    0..W bits are fine; a frame that ends cleanly loses nothing."""
    words = [
        {"data": 1, "bits": 16, "last": 0}, {"data": 2, "bits": 8, "last": 0},  # short
        {"data": 3, "bits": 16, "last": 0}, {"data": 4, "bits": 16, "last": 1},  # dropped
        {"data": 5, "bits": 17, "last": 0}, {"data": 6, "bits": 3, "last": 1},   # overlong
        {"data": 7, "bits": 16, "last": 0}, {"data": 8, "bits": 0, "last": 1},   # fine
        {"data": 9, "bits": 31, "last": 1},                                      # overlong
        {"data": 10, "bits": 16, "last": 1},                                     # fine
    ]
    expected = [(1, 16, 0, 0), (2, 0, 1, 1), (5, 0, 1, 1), (7, 16, 0, 0), (8, 0, 1, 0),
                (9, 0, 1, 1), (10, 16, 1, 0)]
    expected = [dict(zip(("data", "bits", "end", "fault"), entry)) for entry in expected]
    assert queue_entries(words, take_every=take_every) == expected
