"""The Huffman decoder of bf16 values (``HuffmanDecoder(value_bits=16, coded_bits=K)``,
``huffman-decoder-bf16`` in the registry): bit-exact against the golden codebook under
random idle and backpressure, escapes included, at each split; on any input (every
code-space window, differential fuzzing, word faults, unused codes, a frame cut inside an
escaped value) as ``golden/words.py`` says; tables loaded at run time. (Its refusals and
``linkcodec sim`` are with the encoder's, in ``tests/test_rtl_huffman_bf16.py``.) The
contract suite runs it, and its pair with the encoder, as every registered block."""

import numpy as np
import pytest

from cases import bf16_steps, frames_with_escapes, fuzz_summary
from linkcodec.golden.huffman import HuffmanCodebook
from linkcodec.golden.words import decode_words
from linkcodec.rtl.huffman import (config_writes, default_codebook, split_escape_addr,
                                   split_length_base, split_switch_addr)
from linkcodec.rtl.blocks.beats import decoder_beats, frame_words, split_frames
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.fuzz import check_frames, code_space_frames, run_fuzz
from linkcodec.sim.harness import first_mismatch, run_beats, run_frames
from linkcodec.rtl.blocks.huffman import HuffmanDecoderBlock

BLOCK = "huffman-decoder-bf16"


@pytest.fixture(scope="module")
def steps():
    return bf16_steps()


# (1 lane under -m slow: the contract suite runs it with escapes, from its example tables)
@pytest.mark.xdist_group("huffman-decoder-bf16")
@pytest.mark.parametrize("lanes", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_bit_exact_with_escapes_under_pauses(lanes, steps, seed):
    rng = np.random.default_rng(16 + lanes)
    book = HuffmanCodebook.from_batches(steps[:3], value_bits=16)
    frames = frames_with_escapes(steps, rng)
    escaped = int(np.isin(np.concatenate(frames) >> 5, np.flatnonzero(book.lengths == 0)).sum())
    assert escaped > 400                   # the escape is exercised, not only the codes
    result = run_frames(BLOCK, frames, lanes=lanes, tables=book, idle=0.3, stall=0.3,
                        seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


# (8 coded bits under -m slow: the proofs run the decoder at 8, and the logic is the
# same at every split)
@pytest.mark.parametrize("coded_bits", [pytest.param(8, marks=pytest.mark.slow), 12])
def test_other_splits_bit_exact(coded_bits, steps, seed):
    block = HuffmanDecoderBlock(value_bits=16, coded_bits=coded_bits)
    assert block.module_name(lanes=1) == f"linkcodec_huffman_decoder_l1_v16k{coded_bits}"
    book = HuffmanCodebook.from_batches(steps[:3], value_bits=16, coded_bits=coded_bits)
    frames = [steps[3][:2000], np.arange(0, 1 << 16, 97, dtype=np.uint16)]
    result = run_frames(block, frames, lanes=1, tables=book, idle=0.2, stall=0.2, seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


def test_a_codebook_without_escape_and_the_reset_one(steps, seed):
    """Every part coded (escape length 0, so no code is taken for the escape) loaded at
    run time; and the reset codebook, elaborated in (every value 16 bits as it is)."""
    whole = HuffmanCodebook.from_batches(steps[:3], value_bits=16, escape=False)
    frames = [steps[3][:1500], np.arange(0, 1 << 16, 251, dtype=np.uint16)]
    result = run_frames(BLOCK, frames, lanes=1, tables=whole, idle=0.2, stall=0.2, seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))
    identity = default_codebook(16, 11)
    result = run_frames(BLOCK, frames, lanes=1, tables=identity, runtime_config=False,
                        seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


def test_config_writes_of_a_split_codebook(steps):
    """The per-length entries (limits, and offsets to each part's rank, the escape left
    out), the escape's entry, the parts by rank, then the switch; the ranks reach every
    coded part once, and decode each code to its part."""
    book = HuffmanCodebook.from_batches(steps[:3], value_bits=16, coded_bits=10)
    writes = config_writes(book, block="decoder")
    base = split_length_base(10)
    coded = int((book.lengths > 0).sum())
    assert [w["addr"] for w in writes] == [*range(base + 1, base + 16), split_escape_addr(10),
                                           *range(coded), split_switch_addr(10)]
    offsets = {length: writes[length - 1]["data"] >> 16 for length in range(1, 16)}
    parts = [w["data"] for w in writes[16:16 + coded]]
    assert sorted(parts) == np.flatnonzero(book.lengths).tolist()
    for part in parts:
        length, code = int(book.lengths[part]), int(book.codes[part])
        assert parts[(code + offsets[length]) % 1024] == part


@pytest.mark.xdist_group("huffman-decoder-bf16")
def test_every_code_space_window(steps, seed):
    """Every 12-bit window starts a frame (8,192 frames; the escape's code among them),
    with a real codebook limited to 12 bits (every window of 15-bit codes would be 65,536
    frames), followed by a value: its code and tail, or the escape and the value."""
    book = HuffmanCodebook.from_batches(steps[:3], value_bits=16, max_length=12)
    assert max(int(book.lengths.max()), book.escape_length) == 12 and book.escape_length
    frames = code_space_frames(book, word_width=16, block=BLOCK)
    assert len(frames) == 2 * 4096
    report = check_frames(frames, lanes=1, code=book, seed=seed, idle="random",
                          stall="random", block=BLOCK, frames_per_run=10_000)
    assert report["frames"] == len(frames) and report["golden_errors"] > 0
    assert (report["mismatches"], report["hangs"]) == (0, 0), fuzz_summary(report)


@pytest.mark.parametrize(("lanes", "pattern"), [(1, "hold"), (2, "bursty")])
def test_differential_fuzz(lanes, pattern, steps, seed):
    """Fuzzed frames (flipped bits, cut frames, bad ``bits`` counts, random words) of a
    real tensor's values mutated: 0 mismatches, 0 hangs against golden/words.py.
    ``linkcodec bench --fuzz`` runs 10,000."""
    book = HuffmanCodebook.from_batches(steps[:3], value_bits=16)
    report = run_fuzz(250, lanes=lanes, code=book, pool=steps[3], seed=seed, idle=pattern,
                      stall=pattern, block=BLOCK)
    assert report["frames"] == 250 and report["faults_injected"] > 0
    assert (report["mismatches"], report["hangs"]) == (0, 0), fuzz_summary(report)


def test_word_faults_bad_codes_and_a_cut_escape(steps, seed):
    """A word fault, an unused code of an incomplete codebook, a frame cut inside a
    part's tail and one cut inside an escaped value each end their frame with the error
    beat after the good values; the next frame decodes."""
    book = HuffmanCodebook.from_batches(steps[:3], value_bits=16)
    tail = book.tail_bits
    coded = np.flatnonzero(book.lengths)
    unseen = int(np.flatnonzero(book.lengths == 0)[0])
    good = np.array([coded[0] << tail | 0x1A, unseen << tail | 0x13, coded[-1] << tail],
                    dtype=np.uint16)
    data, nbits = book.encode(good)
    escape_at = int(book.value_lengths()[good[0] >> tail])

    def cut(bits):
        return frame_words(data[:-(-bits // 8)], bits, 16)

    cases = [
        [dict(frame_words(data, nbits, 16)[0], bits=8)] + frame_words(data, nbits, 16)[1:],
        cut(escape_at + book.escape_length + 9),                     # inside the value
        cut(escape_at - 2),                                          # inside the tail
        frame_words(data, nbits, 16),
    ]
    words, wanted = [], []
    for case in cases:
        words += case + frame_words(data, nbits, 16)                 # then a good frame
    decoded = decode_words(book, words, 16)
    for values, error in decoded:
        wanted += decoder_beats([values], 1, error_after=values.size if error else None)
    assert [error for _, error in decoded] == [True, False, True, False, True, False,
                                               False, False]
    assert [values.size for values, _ in decoded][:6] == [0, 3, 1, 3, 0, 3]
    block = get_block(BLOCK)
    result = run_beats(block.build(lanes=1), inputs={"i": words}, expected={"o": wanted},
                       config=block.config_writes(book), idle="hold", stall="hold",
                       seed=seed, name=block.module_name(lanes=1))
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    assert len(split_frames(result["output"]["o"])[0]) == 8


def test_an_unused_code_ends_the_frame(seed):
    """A codebook with room left in its code space (two 2-bit codes, the escape 3 bits:
    ``11`` starts no code): a value, then ``111``, ends the frame with the error beat
    after the value."""
    lengths = np.zeros(2048, dtype=np.uint8)
    lengths[[3, 9]] = 2
    book = HuffmanCodebook(lengths, value_bits=16, escape_length=3)
    assert book.kraft_sum < 1
    good = np.array([3 << 5 | 7, 0x1234, 9 << 5], dtype=np.uint16)
    data, nbits = book.encode(good)
    first = 0b00_00111                          # 3 << 5 | 7: code 00, tail 00111
    bad = (first << 3 | 0b111) << 6             # then 111: 10 bits, in a 16-bit word
    words = frame_words(bad.to_bytes(2, "big"), 10, 16) + frame_words(data, nbits, 16)
    decoded = decode_words(book, words, 16)
    assert [(values.tolist(), error) for values, error in decoded] == [
        ([3 << 5 | 7], True), (good.tolist(), False)]
    wanted = [beat for values, error in decoded
              for beat in decoder_beats([values], 1, error_after=values.size if error
                                        else None)]
    block = get_block(BLOCK)
    result = run_beats(block.build(lanes=1), inputs={"i": words}, expected={"o": wanted},
                       config=block.config_writes(book), idle="random", stall="random",
                       seed=seed, name=block.module_name(lanes=1))
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
