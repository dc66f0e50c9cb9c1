"""QLC encoder and decoder under Verilator, bit-exact against the golden model.

Every run has random idle cycles on the input and random backpressure on the output;
the seed is printed (replay with ``LINKCODEC_SEED``). Tests that share a Verilator
build run on the same xdist worker (``xdist_group``), so builds never race.
"""

import numpy as np
import pytest
from amaranth.hdl import Fragment

from linkcodec.bundled import bundled_files
from linkcodec.golden.qlc import QlcCode, QlcLayout
from linkcodec.rtl.qlc import QlcDecoder, QlcEncoder, config_writes
from linkcodec.sim.beats import decoder_beats, frame_words, symbol_beats
from linkcodec.sim.blocks import get_block
from linkcodec.sim.harness import first_mismatch, run_beats, run_frames

LANES = [1, 2, 4, 8]
IDLE, STALL = 0.3, 0.3


def real_symbols(kind="ffn2_act", layer=3, count=None):
    symbols = np.load(bundled_files(kind, layers=[layer])[0]).reshape(-1)
    return symbols if count is None else symbols[:count]


def stimulus_frames(lanes):
    """Frames covering the corners: every symbol, several distributions, odd lengths."""
    rng = np.random.default_rng(lanes)
    peaked = np.clip(np.abs(rng.normal(0, 6, 700)), 0, 255).astype(np.uint8)
    geometric = np.minimum(rng.geometric(0.05, 600), 255).astype(np.uint8)
    return [
        np.arange(256, dtype=np.uint8),                       # all 256 symbols
        rng.integers(0, 256, 500, dtype=np.uint8),            # uniform
        peaked,                                               # zero-heavy
        geometric,
        np.zeros(0, dtype=np.uint8),                          # an empty frame
        np.array([255], dtype=np.uint8),                      # one symbol
        rng.integers(0, 256, lanes + 1, dtype=np.uint8),      # a partial last beat
        real_symbols("ffn1_grad", layer=1, count=1500),
        real_symbols("ffn2_act", layer=3, count=2000),
    ]


def adapted_code():
    """A code from a real activation PMF with the optimiser's layout (not the base one)."""
    counts = np.bincount(real_symbols("ffn2_act", layer=0), minlength=256)
    code = QlcCode.from_pmf(counts)
    assert code.layout != QlcLayout.base()
    return code


def same_build(block, lanes):
    """Cases that share a Verilator build run on one xdist worker, one after another."""
    return pytest.param(block, lanes, marks=pytest.mark.xdist_group(f"{block}-{lanes}"),
                        id=f"{block}-{lanes}")


BLOCK_LANES = [same_build(block, lanes)
               for block in ["qlc-encoder", "qlc-decoder"] for lanes in LANES]


@pytest.mark.parametrize(("block", "lanes"), BLOCK_LANES)
def test_bit_exact_with_runtime_tables(block, lanes, seed):
    """Every stimulus, with an adapted code loaded through ``i_config`` at run time."""
    result = run_frames(block, stimulus_frames(lanes), lanes=lanes, tables=adapted_code(),
                     idle=IDLE, stall=STALL, seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


@pytest.mark.parametrize("block", ["qlc-encoder", "qlc-decoder"])
def test_bit_exact_with_elaborated_tables(block, seed):
    """The same stimuli with the code set at elaboration, no config writes."""
    lanes = 4
    counts = np.bincount(real_symbols("ffn1_act", layer=2), minlength=256)
    code = QlcCode.from_pmf(counts, layout=QlcLayout.base())
    result = run_frames(block, stimulus_frames(lanes), lanes=lanes, tables=code,
                        runtime_config=False, idle=IDLE, stall=STALL, seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


@pytest.mark.parametrize(("block", "lanes"), BLOCK_LANES)
def test_throughput_on_real_activations(block, lanes):
    """With neither side stalling, a block keeps up ``lanes`` symbols a cycle (>= 0.95)."""
    symbols = real_symbols("ffn2_act", layer=3, count=1000 * lanes)
    code = QlcCode.from_pmf(np.bincount(symbols, minlength=256))
    result = run_frames(block, [symbols], lanes=lanes, tables=code, seed=1)
    assert result["bit_exact"]
    assert result["symbols_per_cycle"] >= 0.95 * lanes, result["symbols_per_cycle"]


def corrupt_frames(code):
    """A good frame, then a frame whose 40th code is invalid, then a good frame.

    Returns the words for the decoder and the beats it must emit.
    """
    rng = np.random.default_rng(7)
    good = rng.integers(0, 256, 90, dtype=np.uint8)
    data, nbits = code.encode(good)
    # Replace symbol 40's code by an unused code of the base layout's last area: prefix
    # 0b111 and suffix 200 (only 168 of its 256 suffixes are symbols).
    start = int(code.length_of[good[:40]].sum())
    bits = np.unpackbits(np.frombuffer(data, np.uint8))[:nbits]
    bad_code = np.array([int(b) for b in format((7 << 8) | 200, "011b")], np.uint8)
    width = int(code.length_of[good[40]])
    bits = np.concatenate([bits[:start], bad_code, bits[start + width:]])
    bad = np.packbits(bits).tobytes(), bits.size
    return good, bad


@pytest.mark.parametrize(("block", "lanes"), BLOCK_LANES[len(LANES):])
def test_decoder_recovers_from_bad_frames(block, lanes, seed):
    """An invalid code and a truncated frame each end their frame with ``error``; the
    rest of the bad frame is dropped and the next frame decodes bit-exact."""
    code = QlcCode.base()
    width = 8 * max(2, lanes)
    good, (bad_data, bad_nbits) = corrupt_frames(code)
    follow = np.random.default_rng(8).integers(0, 256, 50, dtype=np.uint8)
    truncated_symbols = np.random.default_rng(9).integers(0, 256, 30, dtype=np.uint8)
    data, nbits = code.encode(truncated_symbols)
    cut = nbits - 3                     # the frame ends 3 bits into its last code

    words = (frame_words(bad_data, bad_nbits, width)
             + frame_words(*code.encode(follow), width)
             + frame_words(data, cut, width)
             + frame_words(*code.encode(good), width))
    expected = (decoder_beats([good], lanes, error_after=40)
                + decoder_beats([follow], lanes)
                + decoder_beats([truncated_symbols], lanes, error_after=29)
                + decoder_beats([good], lanes))
    result = run_beats(QlcDecoder(lanes=lanes, word_width=width),
                       config={"i_config": config_writes(code, block="decoder")},
                       inputs={"i": words}, expected={"o": expected}, idle=IDLE,
                       stall=STALL, seed=seed,
                       name=get_block("qlc-decoder").module_name(lanes=lanes, word_width=width))
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


@pytest.mark.xdist_group("qlc-decoder-1")
def test_decoder_flags_an_overlong_word(seed):
    """A word claiming more bits than it has is an error; the next frame still decodes."""
    code = QlcCode.base()
    symbols = np.arange(40, dtype=np.uint8)
    words = frame_words(*code.encode(symbols), 16)
    words[0]["bits"] = 31
    follow = np.arange(100, 120, dtype=np.uint8)
    words += frame_words(*code.encode(follow), 16)
    result = run_beats(QlcDecoder(lanes=1, word_width=16), inputs={"i": words},
                       expected={}, settle=600, idle=IDLE, stall=STALL, seed=seed,
                       name=get_block("qlc-decoder").module_name(lanes=1, word_width=16))
    beats = result["output"]["o"]
    errors = [index for index, beat in enumerate(beats) if beat["error"]]
    assert len(errors) == 1 and beats[errors[0]]["last"] == 1
    tail = [beat["symbols"][0] for beat in beats[errors[0] + 1:] if beat["count"]]
    assert tail == follow.tolist()


def test_symbol_beats_cover_frames():
    beats = symbol_beats([np.arange(5, dtype=np.uint8), np.zeros(0, np.uint8)], 4)
    assert [(beat["count"], beat["last"]) for beat in beats] == [(4, 0), (1, 1), (0, 1)]


@pytest.mark.parametrize("cls", [QlcEncoder, QlcDecoder])
def test_parameters_are_checked(cls):
    with pytest.raises(ValueError, match="lanes must be 1, 2, 4, 8 or 16, not 3"):
        cls(lanes=3)
    with pytest.raises(ValueError, match="word_width must be a positive multiple of 8, not 12"):
        cls(lanes=1, word_width=12)
    with pytest.raises(TypeError, match="code must be a QlcCode"):
        cls(lanes=1, code="base")
    block = cls(lanes=2)
    Fragment.get(block, None)      # elaborates: a block that is built, not just made
    assert (block.lanes, block.word_width) == (2, 16)
    with pytest.raises(AttributeError):
        block.lanes = 4
