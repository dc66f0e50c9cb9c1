"""One contract for every block of the registry (:mod:`linkcodec.sim.contract`).

Every block of ``rtl.blocks.BLOCKS`` at every lane count it takes, crossed with the pause
patterns (none, random, bursty, hold-then-release) on every port: round trips, latency
against the ``latency`` property, symbols per cycle against the floor the block declares,
parameter errors, the bad-input promises (counts beyond the lanes, fuzzed words), a reset
in mid-stream, and every encoder driving its own decoder. The protocol monitor watches
every output of every run. Per-codec test files keep only what is specific to a codec.

Verilator builds dominate the time: one build per block and lane count, shared by every
test that needs it (``xdist_group`` keeps them on one worker). Lane counts of 16
(``sim.contract.LARGE_LANES``) run under the ``slow`` marker, which ``make test`` leaves
out: ``pytest -m slow tests/test_contract.py`` runs them, and ``linkcodec bench
--contract`` runs the same checks there. ``make test`` runs each block at its smallest
lane count and at 4 lanes (:func:`middle_lanes`), at 4 under the random pattern only
(:func:`slow_case`), and leaves the other word widths and lane counts to ``-m slow``
too. Seeds are printed; ``LINKCODEC_SEED`` replays.
"""

import numpy as np
import pytest
from cases import block_case

from linkcodec.hardware import hardware_file, sample_frames
from linkcodec.sim import contract
from linkcodec.rtl.blocks import BLOCKS
from linkcodec.sim.pair import pairs

def middle_lanes(block, lanes):
    """Whether ``make test`` leaves ``lanes`` to ``-m slow``: it runs a block at its
    smallest lane count and at 4 lanes where the block takes them (the narrowest control,
    and a data path of several lanes), and leaves the others to ``-m slow`` with the
    large ones (2 and 8 lanes were 6 minutes of ``make test``'s 24 on 2 cores)."""
    return lanes not in {min(block.lanes), 4}


BLOCK_LANES = [block_case(name, lanes, slow=middle_lanes(block, lanes))
               for name, block in BLOCKS.items() for lanes in block.lanes]


def slow_case(block, lanes, pattern="random"):
    """Whether ``make test`` leaves a round trip to ``-m slow``: every pause pattern runs
    at a block's smallest lane count, where each block's control is the same as at more
    lanes, and the random one (idle cycles and backpressure both) at 4 lanes; the other
    lane counts go to ``-m slow`` (:func:`middle_lanes`). The rest were a
    fifth of ``make test``'s time."""
    return (lanes > min(block.lanes) and pattern != "random") or middle_lanes(block, lanes)


PATTERNED = [block_case(name, lanes, pattern, slow=slow_case(block, lanes, pattern))
             for name, block in BLOCKS.items()
             for lanes in block.lanes for pattern in contract.CONTRACT_PATTERNS]
SMALLEST = [block_case(name, min(block.lanes)) for name, block in BLOCKS.items()]
PAIRS = pairs()


@pytest.mark.parametrize(("name", "lanes", "pattern"), PATTERNED)
def test_round_trip(name, lanes, pattern, seed):
    block = BLOCKS[name]
    result = contract.check_round_trip(block, lanes, pattern=pattern, seed=seed,
                                       real=sample_frames(block))
    assert result["symbols"] == sum(frame["symbols"] for frame in result["frames"]) > 0


def other_word_widths(block):
    """``(lanes, width)`` cases other than the default word width: the narrowest word at
    the smallest lanes and at 8 lanes, and an odd number of bytes (the default plus 8)
    at the smallest lanes."""
    cases = set()
    for lanes in sorted({min(block.lanes), 8} & set(block.lanes)):
        cases.add((lanes, block.min_word_width(lanes)))
    lanes = min(block.lanes)
    cases.add((lanes, block.default_word_width(lanes) + 8))
    return sorted((lanes, width) for lanes, width in cases
                  if width != block.default_word_width(lanes))


def odd_width_is_slow(block, lanes, width):
    """Whether ``make test`` leaves the odd-bytes width (the default plus 8) to ``-m
    slow``: where the block also runs at its narrowest word, which spans codes across
    words as well (these were 50 seconds of a `make test` at its 20-minute limit)."""
    return (width == block.default_word_width(lanes) + 8
            and len(other_word_widths(block)) > 1)


@pytest.mark.parametrize(("name", "lanes", "width"), [
    block_case(name, lanes, width, slow=slow_case(block, lanes, "bursty")
               or odd_width_is_slow(block, lanes, width))
    for name, block in BLOCKS.items()
    if block.default_word_width(min(block.lanes)) is not None
    for lanes, width in other_word_widths(block)])
def test_round_trip_at_other_word_widths(name, lanes, width, seed):
    """Words of 8 bits (QLC, the Huffman encoder: a code spans words), of one beat's
    values (exponent remap: 11 x lanes bits, rounded up to bytes), and of an odd number
    of bytes (under ``-m slow`` where the block has a narrowest-word case too:
    :func:`odd_width_is_slow`)."""
    result = contract.check_round_trip(BLOCKS[name], lanes, pattern="bursty", seed=seed,
                                       word_width=width)
    assert result["word_width"] == width


@pytest.mark.parametrize(("name", "lanes"), BLOCK_LANES)
def test_latency_is_the_property(name, lanes):
    assert contract.check_latency(BLOCKS[name], lanes) > 0


@pytest.mark.parametrize(("name", "lanes"), BLOCK_LANES)
def test_symbols_per_cycle_meet_the_declared_floor(name, lanes):
    """On the tensor ``linkcodec bench --hardware`` measures (8,192 symbols a lane)."""
    block = BLOCKS[name]
    symbols = np.load(hardware_file(name)).reshape(-1)[:8192 * lanes]
    assert contract.check_throughput(block, lanes, [symbols]) <= lanes


@pytest.mark.parametrize("name", list(BLOCKS))
def test_parameters_are_checked(name):
    contract.check_parameters(BLOCKS[name])


@pytest.mark.parametrize(("name", "lanes"), [
    block_case(name, lanes, slow=middle_lanes(block, lanes))
    for name, block in BLOCKS.items() for lanes in block.lanes
    if lanes > 1 and "encoder" in name])
def test_counts_beyond_the_lanes_are_clamped(name, lanes, seed):
    assert contract.check_count_clamp(BLOCKS[name], lanes, pattern="random", seed=seed)


@pytest.mark.parametrize(("name", "lanes"), [
    block_case(name, lanes, slow=middle_lanes(block, lanes))
    for name, block in BLOCKS.items() for lanes in block.lanes if block.fuzzable])
def test_fuzzed_words_decode_as_golden_says(name, lanes, seed):
    report = contract.check_bad_words(BLOCKS[name], lanes, pattern="bursty", seed=seed)
    assert report["frames"] == 60 and report["faults_injected"] > 0


@pytest.mark.parametrize(("name", "lanes"), [
    pytest.param(name, lanes, marks=[pytest.mark.slow] if lanes > min(block.lanes) else [])
    for name, block in BLOCKS.items() if block.ready_independent
    for lanes in sorted({min(block.lanes), 4} & set(block.lanes))])
def test_input_ready_does_not_depend_on_output_ready(name, lanes, seed):
    """In Amaranth's simulator (no Verilator build); the outputs stall in long runs, so
    backpressure reaches the inputs. ``make test`` checks the smallest lane count, where
    tests/test_formal.py also proves it; 4 lanes under ``-m slow`` (the 4-lane Huffman
    decoder's check takes 40 s)."""
    assert contract.check_ready_independence(BLOCKS[name], lanes, seed=seed) > 0


@pytest.mark.parametrize(("name", "lanes"), SMALLEST)
def test_reset_in_mid_stream_keeps_the_tables(name, lanes, seed):
    result = contract.check_reset_mid_stream(BLOCKS[name], lanes, pattern="random",
                                             seed=seed)
    assert sum(result["taken_before_reset"].values()) > 0


def pair_case(name, *values):
    """A pair's case; a pair whose encoder declares a known limit (``pair_limit``) is
    expected to fail, strictly: once the limit is mended the case fails until the mark
    goes."""
    marks = [pytest.mark.xdist_group(name)]
    limit = PAIRS[name].pair_limit
    if limit:
        marks.append(pytest.mark.xfail(strict=True, raises=contract.ContractError,
                                       reason=limit))
    return pytest.param(name, *values, marks=marks, id="-".join((name, *values)))


@pytest.mark.parametrize(("name", "pattern"), [
    pair_case(name, pattern) for name in PAIRS for pattern in ("random", "hold")])
def test_encoder_drives_its_decoder(name, pattern, seed):
    """Nothing between them, real data included, under backpressure."""
    pair = PAIRS[name]
    lanes = min(pair.lanes)
    contract.check_round_trip(pair, lanes, pattern=pattern, seed=seed,
                              real=sample_frames(pair, 4000))


@pytest.mark.parametrize("name", [pair_case(name) for name in PAIRS])
def test_a_pair_reset_in_mid_stream_needs_no_reload(name, seed):
    pair = PAIRS[name]
    contract.check_reset_mid_stream(pair, min(pair.lanes), pattern="random", seed=seed)
