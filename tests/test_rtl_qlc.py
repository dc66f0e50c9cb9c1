"""What only the QLC blocks promise, under Verilator, bit-exact against the golden model.

The contract every block keeps (round trips with run-time tables at every lane count,
latency, symbols per cycle, parameter errors, counts beyond the lanes, fuzzed words, a
reset in mid-stream) is checked once for every block in ``test_contract.py``. Here: the
code set at elaboration instead of loaded, and the decoder's recovery from an invalid
QLC code, a truncated frame and an overlong word.

Runs vary the pause pattern (random, bursty, hold-then-release) on every port; the seed
is printed (replay with ``LINKCODEC_SEED``). Cases that share a Verilator build with the
contract suite run in its xdist group (``qlc-decoder-4`` and so on), so each build is
made once.
"""

import numpy as np
import pytest
from amaranth.hdl import Fragment

from linkcodec.bundled import bundled_files
from linkcodec.golden.qlc import QlcCode, QlcLayout
from linkcodec.rtl.qlc import QlcDecoder, QlcEncoder, config_writes
from linkcodec.rtl.blocks.beats import decoder_beats, frame_words, symbol_beats
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.contract import contract_frames
from linkcodec.sim.harness import first_mismatch, run_beats, run_frames


def real_symbols(kind="ffn2_act", layer=3, count=None):
    symbols = np.load(bundled_files(kind, layers=[layer])[0]).reshape(-1)
    return symbols if count is None else symbols[:count]


@pytest.mark.parametrize(("block", "pattern"), [("qlc-encoder", "random"),
                                                ("qlc-decoder", "bursty")])
def test_bit_exact_with_elaborated_tables(block, pattern, seed):
    """The contract's corner frames and a real tensor with the code set at elaboration
    (its own Verilator build), no config writes."""
    lanes = 4
    code = QlcCode.from_pmf(np.bincount(real_symbols("ffn1_act", layer=2), minlength=256),
                            layout=QlcLayout.base())
    description = get_block(block)
    frames = contract_frames(description, lanes, seed=seed,
                             real=[real_symbols("ffn1_grad", layer=1, count=1500)])
    result = run_frames(description, frames, lanes=lanes, tables=code, runtime_config=False,
                        idle=pattern, stall=pattern, seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


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


@pytest.mark.parametrize(("lanes", "pattern"), [
    # 2 and 8 lanes under -m slow (make test runs the contract at 1 and 4 lanes)
    pytest.param(lanes, pattern, marks=[pytest.mark.xdist_group(f"qlc-decoder-{lanes}")]
                 + [pytest.mark.slow] * (lanes in (2, 8)), id=f"{lanes}-{pattern}")
    for lanes, pattern in [(1, "random"), (2, "bursty"), (4, "hold"), (8, "random")]])
def test_decoder_recovers_from_bad_frames(lanes, pattern, seed):
    """An invalid code and a truncated frame each end their frame with ``error``; the
    rest of the bad frame is dropped and the next frame decodes bit-exact."""
    code = QlcCode.base()
    width = get_block("qlc-decoder").default_word_width(lanes)
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
                       inputs={"i": words}, expected={"o": expected}, idle=pattern,
                       stall=pattern, seed=seed,
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
                       expected={}, settle=600, idle="bursty", stall="bursty", seed=seed,
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
def test_tables_must_be_a_qlc_code(cls):
    """What the contract's parameter check does not say: the refusal of tables of the
    wrong type names the type they must be, ``code`` is the ``tables`` property, and
    the parameters read back but cannot be set."""
    with pytest.raises(TypeError, match="tables must be a QlcCode, not str"):
        cls(lanes=1, tables="base")
    block = cls(lanes=2)
    Fragment.get(block, None)      # elaborates: a block that is built, not just made
    assert (block.lanes, block.word_width, block.code.layout) == (2, 16, QlcLayout.base())
    assert block.code is block.tables
    with pytest.raises(AttributeError):
        block.lanes = 4
