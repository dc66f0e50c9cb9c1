"""The golden word-level front end (``linkcodec.golden.words``) against the rules of
``docs/bitstream.md``, "Faults in words": boundaries one by one, then any word sequence
against a bit-by-bit reference written straight from the rules."""

import numpy as np
import pytest
from linkcodec.golden.qlc import QlcCode
from linkcodec.golden.words import (
    DecodedFrame,
    UnterminatedFrameError,
    WordFrame,
    decode_longest_prefix,
    decode_words,
    frames_from_words,
    word_faults,
)
from linkcodec.rtl.blocks.beats import frame_words

from linkcodec.bundled import bundled_files

BASE = QlcCode.base()


def adapted_code():
    symbols = np.load(bundled_files("ffn2_act", layers=[0])[0]).reshape(-1)
    return QlcCode.from_pmf(np.bincount(symbols, minlength=256))


def word(data, bits, last=0):
    return {"data": data, "bits": bits, "last": last}


def code_bits(code, symbols):
    """The frame bits of ``symbols`` as a string of '0'/'1'."""
    return "".join(format(int(code.code_of[s]), f"0{int(code.length_of[s])}b")
                   for s in symbols)


def words_of(bits, width, counts=None):
    """Words that carry the bit string ``bits``: full words, the last with what is left
    (``counts`` overrides each word's ``bits``)."""
    count = max(1, -(-len(bits) // width))
    padded = bits.ljust(count * width, "0")
    words = [word(int(padded[i * width:(i + 1) * width], 2),
                  width if i < count - 1 else len(bits) - i * width, int(i == count - 1))
             for i in range(count)]
    for index, value in enumerate(counts or []):
        if value is not None:
            words[index]["bits"] = value
    return words


def symbols_of(decoded):
    return [(frame.symbols.tolist(), frame.error) for frame in decoded]


# -- a reference, bit by bit, straight from the rules ----------------------------------

def reference(code, words, width):
    """Per frame ``(symbols, error)`` by the rules of docs/bitstream.md, one bit at a time."""
    layout = code.layout
    frames, current = [], []
    for item in words:
        current.append(item)
        if item["last"]:
            frames.append(current)
            current = []
    results = []
    for frame in frames:
        bits, fault = "", False
        for index, item in enumerate(frame):
            final = index == len(frame) - 1
            if item["bits"] > width or (not final and item["bits"] != width):
                fault = True
                break
            bits += format(item["data"], f"0{width}b")[:item["bits"]]
        symbols, position, error = [], 0, fault
        while position < len(bits):
            if len(bits) - position < 3:
                error = True
                break
            area = int(bits[position:position + 3], 2)
            width_k = layout.suffix_bits[area]
            if position + 3 + width_k > len(bits):
                error = True
                break
            suffix = int(bits[position + 3:position + 3 + width_k] or "0", 2)
            if suffix >= layout.sizes[area]:
                error = True
                break
            symbols.append(int(code.rank_to_symbol[layout.bases[area] + suffix]))
            position += 3 + width_k
        results.append((symbols, error))
    return results


def random_sequence(rng, code, width):
    """Frames of every sort: coded, cut, flipped, random, with bad bits counts."""
    words = []
    most = (1 << width.bit_length()) - 1
    for _ in range(int(rng.integers(1, 6))):
        symbols = rng.integers(0, 256, int(rng.integers(0, 12)), dtype=np.uint8)
        data, nbits = code.encode(symbols)
        frame = frame_words(data, nbits, width)
        draw = rng.random()
        if draw < 0.25 and nbits:                          # cut short
            cut = int(rng.integers(0, nbits))
            keep = max(1, -(-cut // width)) * (width // 8)
            frame = frame_words(data[:keep], cut, width)
        elif draw < 0.5:                                   # flipped bits
            for position in rng.integers(0, len(frame) * width, 2).tolist():
                frame[position // width]["data"] ^= 1 << (width - 1 - position % width)
        elif draw < 0.75:                                  # a bad bits count
            index = int(rng.integers(0, len(frame)))
            frame[index]["bits"] = int(rng.integers(0, most + 1))
        elif draw < 0.85:                                  # random words
            frame = [word(int.from_bytes(rng.bytes(width // 8), "big"), width)
                     for _ in range(int(rng.integers(1, 4)))]
            frame[-1].update(bits=int(rng.integers(0, width + 1)), last=1)
        words += frame
    return words


@pytest.mark.parametrize("width", [8, 16, 24, 32, 64, 128])
@pytest.mark.parametrize("which", ["base", "adapted"])
def test_any_words_decode_as_the_rules_say(width, which):
    code = BASE if which == "base" else adapted_code()
    rng = np.random.default_rng(width)
    for _ in range(150):
        words = random_sequence(rng, code, width)
        assert symbols_of(decode_words(code, words, width)) == reference(code, words, width)


def test_a_prefix_decoder_gives_the_same():
    rng = np.random.default_rng(3)
    for _ in range(50):
        words = random_sequence(rng, BASE, 16)
        assert (symbols_of(decode_words(BASE.decoder, words, 16))
                == symbols_of(decode_words(BASE, words, 16)))


# -- boundaries ------------------------------------------------------------------------

# Symbols 0..7 of the base code are 6-bit codes (area 0); 0b000000 + n.
SIX = [0, 1, 2, 3, 4, 5, 6, 7]


def test_good_frames_round_trip_and_an_empty_frame_is_fine():
    rng = np.random.default_rng(1)
    symbols = rng.integers(0, 256, 300, dtype=np.uint8)
    words = frame_words(*BASE.encode(symbols), 32) + frame_words(b"", 0, 32)
    (first, error), (empty, empty_error) = decode_words(BASE, words, 32)
    assert first.tolist() == symbols.tolist() and not error
    assert empty.size == 0 and not empty_error and empty.dtype == np.uint8
    assert frames_from_words(words[-1:], 32) == [WordFrame(b"", 0, None, 1)]


def test_final_word_with_bits_w_is_fine_and_w_plus_1_is_a_fault_where_it_begins():
    words = words_of(code_bits(BASE, SIX[:4]), 8)  # 24 bits: 3 full words of 8
    assert [w["bits"] for w in words] == [8, 8, 8]
    assert symbols_of(decode_words(BASE, words, 8)) == [(SIX[:4], False)]
    words[-1]["bits"] = 9                          # final word bits W + 1: fault at 16
    frame, = frames_from_words(words, 8)
    assert (frame.nbits, frame.fault, frame.words) == (16, 16, 3)
    # Codes 0 and 1 (bits 0..11) are whole within the first 16 bits; code 2 is not.
    assert symbols_of(decode_words(BASE, words, 8)) == [(SIX[:2], True)]


def test_a_short_non_final_word_is_a_fault_where_its_bits_begin():
    words = words_of(code_bits(BASE, SIX), 16)     # 48 bits: words of 16, 16, 16
    words[1]["bits"] = 8
    frame, = frames_from_words(words, 16)
    assert (frame.nbits, frame.fault) == (16, 16)
    assert symbols_of(decode_words(BASE, words, 16)) == [(SIX[:2], True)]
    words[1]["bits"] = 0                           # 0 bits on a non-final word: the same
    assert symbols_of(decode_words(BASE, words, 16)) == [(SIX[:2], True)]
    words[0]["bits"] = 15                          # the first fault counts: bit 0
    assert frames_from_words(words, 16)[0].fault == 0
    assert symbols_of(decode_words(BASE, words, 16)) == [([], True)]


def test_an_overlong_non_final_word_is_a_fault_where_its_bits_begin():
    words = words_of(code_bits(BASE, SIX), 16)
    words[2]["bits"] = 17
    assert frames_from_words(words, 16)[0].fault == 32
    assert symbols_of(decode_words(BASE, words, 16)) == [(SIX[:5], True)]


def test_bits_0_on_a_final_word_is_fine():
    words = words_of(code_bits(BASE, SIX[:4]), 8) + [word(0xFF, 0, 1)]
    words[2]["last"] = 0
    frame, = frames_from_words(words, 8)
    assert (frame.nbits, frame.fault, frame.words) == (24, None, 4)
    assert symbols_of(decode_words(BASE, words, 8)) == [(SIX[:4], False)]


def test_a_code_ending_exactly_at_the_fault_is_decoded_and_one_across_it_is_not():
    # 6-bit codes, W = 24: four codes end exactly at bit 24 where word 1 is a fault.
    words = words_of(code_bits(BASE, SIX), 24)     # 48 bits: 24 + 24
    words[1]["bits"] = 25
    assert symbols_of(decode_words(BASE, words, 24)) == [(SIX[:4], True)]
    # An 11-bit code (symbol 255, area 7) across bit 16 is not complete within B.
    words = words_of(code_bits(BASE, [0, 1, 255, 2]), 16)   # 6 + 6 + 11 + 6 = 29 bits
    words[1]["bits"] = 17
    assert symbols_of(decode_words(BASE, words, 16)) == [([0, 1], True)]


def test_pad_bits_of_the_final_word_are_never_decoded():
    bits = code_bits(BASE, [5, 6])                 # 12 bits in a 16-bit word
    clean = words_of(bits, 16)
    dirty = [dict(clean[0], data=clean[0]["data"] | 0xF)]  # the 4 pad bits set
    assert symbols_of(decode_words(BASE, dirty, 16)) == [([5, 6], False)]
    assert frames_from_words(dirty, 16)[0].data == frames_from_words(clean, 16)[0].data


def test_invalid_and_incomplete_codes_end_the_frame_and_the_next_one_decodes():
    invalid = code_bits(BASE, [1, 2]) + "111" + format(200, "08b") + code_bits(BASE, [3])
    incomplete = code_bits(BASE, [1, 2]) + "11"    # 2 bits: not even a prefix
    inside = code_bits(BASE, [4]) + "1110000"      # area 7 needs 11 bits, 7 are there
    words = (words_of(invalid, 16) + words_of(incomplete, 16) + words_of(inside, 16)
             + words_of(code_bits(BASE, [9, 10]), 16))
    assert symbols_of(decode_words(BASE, words, 16)) == [
        ([1, 2], True), ([1, 2], True), ([4], True), ([9, 10], False)]


def test_after_a_word_fault_the_next_frame_decodes():
    words = words_of(code_bits(BASE, SIX), 16, counts=[31]) + words_of(
        code_bits(BASE, [100, 101]), 16)
    assert symbols_of(decode_words(BASE, words, 16)) == [([], True), ([100, 101], False)]


def test_word_faults():
    bits = np.array([16, 16, 8, 17, 0, 16])
    last = np.array([0, 1, 0, 1, 1, 0])
    assert word_faults(bits, last, 16).tolist() == [False, False, True, True, False, False]


def test_unterminated_words_are_refused_or_dropped():
    words = frame_words(*BASE.encode(np.arange(20, dtype=np.uint8)), 16)
    with pytest.raises(UnterminatedFrameError, match="the last 3 word") as info:
        frames_from_words(words + words[:3], 16)
    assert info.value.words == 3
    assert len(frames_from_words(words + words[:3], 16, unterminated="drop")) == 1
    assert decode_words(BASE, words[:3], 16, unterminated="drop") == []
    with pytest.raises(ValueError, match="unterminated must be one of 'raise', 'drop'"):
        frames_from_words(words, 16, unterminated="keep")


def test_long_frames_decode_to_the_fault_without_a_loop_per_symbol():
    rng = np.random.default_rng(5)
    symbols = rng.integers(0, 256, 400_000, dtype=np.uint8)
    data, nbits = BASE.encode(symbols)
    words = frame_words(data, nbits, 64)
    fault = len(words) - 10
    words[fault]["bits"] = 3
    (decoded, error), = decode_words(BASE, words, 64)
    ends = np.cumsum(BASE.length_of[symbols].astype(np.int64))
    assert error and decoded.size == np.searchsorted(ends, fault * 64, side="right")
    assert np.array_equal(decoded, symbols[:decoded.size])


def test_decode_longest_prefix():
    data, nbits = BASE.encode(np.array([7, 8, 9], dtype=np.uint8))
    assert symbols_of([decode_longest_prefix(BASE, data, nbits)]) == [([7, 8, 9], False)]
    assert symbols_of([decode_longest_prefix(BASE, data, nbits - 1)]) == [([7, 8], True)]
    assert isinstance(decode_longest_prefix(BASE, data, 0), DecodedFrame)
    with pytest.raises(ValueError, match="nbits is 99 but the data holds only"):
        decode_longest_prefix(BASE, data, 99)


# -- bad arguments ---------------------------------------------------------------------

@pytest.mark.parametrize(("words", "error", "message"), [
    (3, TypeError, "words must be a sequence of word mappings, not int"),
    ([3], TypeError, "word 0 must be a mapping of data, bits and last, not int"),
    ([word(0, 16), {"data": 0, "last": 1}], ValueError, "word 1 has no 'bits' field"),
    ([word(1 << 16, 1, 1)], ValueError, "word 0: data 0x10000 does not fit in 16 bits"),
    ([word(-1, 1, 1)], ValueError, "word 0: data -0x1 does not fit in 16 bits"),
    ([word(1, 2.0, 1)], TypeError, "word 0: bits must be an integer, not float"),
    ([word(1, True, 1)], TypeError, "word 0: bits must be an integer, not a bool"),
    ([word(1, -1, 1)], ValueError, ("word 0: bits is -1; the bits field of a 16-bit word "
                                    "holds 0..31")),
    ([word(1, 32, 1)], ValueError, "word 0: bits is 32; the bits field"),
    ([word(1, 3, 2)], ValueError, "word 0: last is 2, not 0 or 1"),
    ([word("1", 3, 1)], TypeError, "word 0: data must be an integer, not str"),
])
def test_bad_words_are_named(words, error, message):
    with pytest.raises(error, match=message):
        frames_from_words(words, 16)


@pytest.mark.parametrize(("width", "error", "message"), [
    (12, ValueError, "word_width must be a positive multiple of 8, not 12"),
    (0, ValueError, "word_width must be a positive multiple of 8, not 0"),
    (True, TypeError, "word_width must be an integer, not a bool"),
    (16.0, TypeError, "word_width must be an integer, not float"),
])
def test_bad_word_widths_are_named(width, error, message):
    with pytest.raises(error, match=message):
        frames_from_words([word(0, 0, 1)], width)


def test_a_decoder_without_decode_is_refused():
    with pytest.raises(TypeError, match="decoder must have a decode"):
        decode_words("base", [word(0, 0, 1)], 16)
    with pytest.raises(TypeError, match="decoder must have a decode"):
        decode_longest_prefix(None, b"", 0)


def test_numpy_integers_are_fine():
    words = [{"data": np.uint16(0x0410), "bits": np.int64(12), "last": np.bool_(True)}]
    assert symbols_of(decode_words(BASE, words, 16)) == [([1, 1], False)]
