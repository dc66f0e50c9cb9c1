"""Tests of the generic prefix-code machinery: ``golden/bitstream.py`` (frame rules,
errors), ``golden/prefix_encoder.py`` and ``golden/prefix_decoder.py``.

Known answers worked out by hand, then both directions checked against a bit-string
reference (a per-symbol Python loop, fine for test sizes) on random codes and streams,
including corrupted and truncated ones and the paths that only long or periodic frames
take (chunk resync, segments, the exact fallback): a :class:`DecoderTuning` of tiny
chunks and segments sends short frames down those paths.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkcodec.golden.bitstream import (BitstreamError, DecodeErrors, InvalidCodeError,
                                        TruncatedStreamError)
from linkcodec.golden.prefix_decoder import DecoderTuning, PrefixDecoder, decode_prefix
from linkcodec.golden.prefix_encoder import SymbolEncoder, pack_codes

# Tiny chunks and segments, so that short frames take the long-frame paths.
SMALL_CHUNKS = DecoderTuning(target_chunk_bits=40, segment_chunks=3)


# -- references ------------------------------------------------------------------------

def reference_pack(codes, lengths):
    bits = "".join(format(int(code), f"0{int(length)}b") for code, length in zip(codes, lengths))
    padded = bits + "0" * (-len(bits) % 8)
    return bytes(int(padded[i:i + 8], 2) for i in range(0, len(padded), 8)), len(bits)


def reference_decode(data, nbits, window_bits, lut_length, lut_symbol):
    """("ok", symbols) or ("invalid" | "truncated", bit), one code at a time."""
    bits = "".join(format(byte, "08b") for byte in data)[:nbits] + "0" * window_bits
    position, symbols = 0, []
    while position < nbits:
        window = int(bits[position:position + window_bits], 2)
        length = int(lut_length[window])
        if length == 0:
            return "invalid", position
        if position + length > nbits:
            return "truncated", position
        symbols.append(int(lut_symbol[window]))
        position += length
    return "ok", symbols


def outcome(data, nbits, window_bits, lut_length, lut_symbol, tuning=None):
    try:
        return "ok", decode_prefix(data, nbits, window_bits, lut_length, lut_symbol,
                                   tuning=tuning).tolist()
    except InvalidCodeError as error:
        return "invalid", error.bit
    except TruncatedStreamError as error:
        return "truncated", error.bit


def prefix_code(lengths, window_bits):
    """Canonical codes for ``lengths`` (Kraft sum <= 1) and their decode tables."""
    order = sorted(range(len(lengths)), key=lambda index: (lengths[index], index))
    codes, code, previous = [0] * len(lengths), 0, 0
    for index in order:
        code <<= lengths[index] - previous
        previous = lengths[index]
        codes[index] = code
        code += 1
    lut_length = np.zeros(1 << window_bits, dtype=np.int64)
    lut_symbol = np.zeros(1 << window_bits, dtype=np.int64)
    for symbol, (code, length) in enumerate(zip(codes, lengths)):
        low = code << (window_bits - length)
        lut_length[low:low + (1 << (window_bits - length))] = length
        lut_symbol[low:low + (1 << (window_bits - length))] = symbol
    return np.array(codes), np.array(lengths), lut_length, lut_symbol


@st.composite
def prefix_codes(draw, max_window=12):
    """A random prefix code, complete or not: split leaves of a binary tree at random."""
    window_bits = draw(st.integers(1, max_window))
    leaves = [0]
    for _ in range(draw(st.integers(1, 40))):
        splittable = [index for index, depth in enumerate(leaves) if depth < window_bits]
        if not splittable:
            break
        depth = leaves.pop(splittable[draw(st.integers(0, len(splittable) - 1))])
        leaves += [depth + 1, depth + 1]
    leaves = [depth for depth in leaves if depth > 0]
    if draw(st.booleans()) and len(leaves) > 1:  # drop code words: invalid windows exist
        leaves = leaves[:draw(st.integers(1, len(leaves) - 1))]
    return (window_bits, *prefix_code(leaves, window_bits))


# A small complete code: 0 -> "0", 1 -> "10", 2 -> "110", 3 -> "111".
SMALL = (3, *prefix_code([1, 2, 3, 3], 3))  # window_bits, codes, lengths, tables


# -- pack_codes ------------------------------------------------------------------------

def test_pack_known_answers():
    assert pack_codes([0b101, 0b1, 0b0000, 0b11111111], [3, 1, 4, 8]) == (b"\xb0\xff", 16)
    assert pack_codes([0b11], [2]) == (b"\xc0", 2)
    assert pack_codes(np.array([1, 0, 1], np.uint8), [1, 1, 1]) == (b"\xa0", 3)
    assert pack_codes([0xABCDEF], [24]) == (b"\xab\xcd\xef", 24)
    assert pack_codes([], []) == (b"", 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 24), max_size=300), st.randoms(use_true_random=False))
def test_pack_matches_reference(lengths, random):
    codes = [random.getrandbits(length) for length in lengths]
    assert pack_codes(np.array(codes, dtype=np.int64), lengths) == reference_pack(codes, lengths)


def test_pack_long_random_matches_reference():
    # Long enough for several blocks of the writer, with and without joined pairs.
    rng = np.random.default_rng(1)
    for top in (6, 24):
        lengths = rng.integers(1, top + 1, 150_001)
        codes = rng.integers(0, 1 << 24, lengths.size) & ((1 << lengths) - 1)
        assert pack_codes(codes, lengths) == reference_pack(codes, lengths)


@pytest.mark.parametrize("codes, lengths, error, message", [
    ([1, 2], [3], ValueError, "codes and lengths differ in size: 2 codes, 1 lengths"),
    ([0, 0], [3, 0], ValueError, "code 1 has length 0; lengths must be 1..24"),
    ([0], [25], ValueError, "code 0 has length 25; lengths must be 1..24"),
    ([5], [2], ValueError, "code 0 is 0x5, which does not fit in 2 bits"),
    ([-1], [4], ValueError, "code 0 is negative"),
    ([1.0], [4], TypeError, "codes must hold integers, not float64"),
    ([[1]], [[4]], ValueError, "codes must be one-dimensional"),
    ([True], [1], TypeError, "codes must hold integers, not bool"),
])
def test_pack_refuses_bad_input(codes, lengths, error, message):
    with pytest.raises(error, match=message):
        pack_codes(codes, lengths)


# -- decode_prefix ---------------------------------------------------------------------

def test_decode_known_answer():
    window_bits, codes, lengths, lut_length, lut_symbol = SMALL
    # "110" "0" "111" "10" "0" = 1100 1111 0000 0000: symbols 2 0 3 1 0, 10 bits.
    data, nbits = pack_codes(codes[[2, 0, 3, 1, 0]], lengths[[2, 0, 3, 1, 0]])
    assert (data, nbits) == (b"\xcf\x00", 10)
    assert decode_prefix(data, nbits, 3, lut_length, lut_symbol).tolist() == [2, 0, 3, 1, 0]
    # Bits past nbits are ignored, and data may be longer than the frame.
    assert decode_prefix(b"\xcf\x3f\xff", 10, 3, lut_length, lut_symbol).tolist() == [2, 0, 3, 1, 0]


def test_decode_empty_frame():
    result = decode_prefix(b"", 0, 3, SMALL[3], SMALL[4])
    assert result.size == 0 and result.dtype == SMALL[4].dtype
    assert decode_prefix(b"\xff", 0, 3, SMALL[3], SMALL[4]).size == 0


def test_decode_accepts_uint8_arrays_and_bytearrays():
    data = np.frombuffer(b"\xcf\x00", dtype=np.uint8)
    assert decode_prefix(data, 10, 3, SMALL[3], SMALL[4]).tolist() == [2, 0, 3, 1, 0]
    decoded = decode_prefix(bytearray(b"\xcf\x00"), 10, 3, SMALL[3], SMALL[4])
    assert decoded.tolist() == [2, 0, 3, 1, 0]


def test_decode_truncated():
    # "110" "111": the second code needs 3 bits, the frame ends after 5.
    with pytest.raises(TruncatedStreamError, match="truncated stream: code at bit 3 needs 3 bits "
                                                   "but the frame ends at bit 5") as caught:
        decode_prefix(b"\xdc", 5, 3, SMALL[3], SMALL[4])
    assert (caught.value.bit, caught.value.length, caught.value.nbits) == (3, 3, 5)
    assert isinstance(caught.value, BitstreamError) and isinstance(caught.value, ValueError)


def test_decode_invalid_code():
    # Code 0 -> "0", 1 -> "10"; windows starting "11" are no code word.
    _, _, lut_length, lut_symbol = prefix_code([1, 2], 2)
    with pytest.raises(InvalidCodeError, match="invalid code at bit 3: the 2 bits from there, "
                                               "0b11, start no code word") as caught:
        decode_prefix(b"\x58", 6, 2, lut_length, lut_symbol)  # "0" "10" "11" "0"
    assert (caught.value.bit, caught.value.window) == (3, 0b11)


@pytest.mark.parametrize("data, nbits, error, message", [
    (b"\x00", 9, BitstreamError, "nbits is 9 but the data holds only 8 bits \\(1 bytes\\)"),
    (b"\x00", -1, BitstreamError, "nbits is -1; a frame length cannot be negative"),
    (b"\x00", 2.0, TypeError, "nbits must be an integer, not float"),
    ("ab", 2, TypeError, "frame data must be bytes or a uint8 array, not str"),
    (np.zeros(2, np.int16), 2, TypeError, "not a int16 array"),
])
def test_decode_refuses_bad_frames(data, nbits, error, message):
    with pytest.raises(error, match=message):
        decode_prefix(data, nbits, 3, SMALL[3], SMALL[4])


def test_decode_refuses_bad_tables():
    lut_length, lut_symbol = SMALL[3], SMALL[4]
    with pytest.raises(ValueError, match="lut_length must have 2\\*\\*window_bits = 16 entries"):
        decode_prefix(b"", 0, 4, lut_length, lut_symbol)
    with pytest.raises(ValueError, match="window_bits is 25; it must be 1..24"):
        decode_prefix(b"", 0, 25, lut_length, lut_symbol)
    with pytest.raises(ValueError, match="code lengths must be 0 \\(invalid\\) .. window_bits = 3"):
        decode_prefix(b"", 0, 3, lut_length + 1, lut_symbol)
    with pytest.raises(ValueError, match="lut_length holds no code word"):
        decode_prefix(b"", 0, 3, np.zeros(8, int), lut_symbol)
    broken = lut_length.copy()
    broken[2:4] = 2  # windows 0b01x claim a 2-bit code, but 0b0xx start the 1-bit "0"
    with pytest.raises(ValueError, match="not a prefix code: window 0x0 starts a 1-bit code "
                                         "word, but the windows 0x0 .. 0x3 that share those "
                                         "bits do not all decode the same"):
        decode_prefix(b"", 0, 3, broken, lut_symbol)
    broken = lut_symbol.copy()
    broken[3] = 1  # window 0b011 decodes to another symbol than the rest of "0"
    with pytest.raises(ValueError, match="not a prefix code"):
        decode_prefix(b"", 0, 3, lut_length, broken)
    with pytest.raises(TypeError, match="lut_symbol must hold integers"):
        decode_prefix(b"", 0, 3, lut_length, lut_symbol.astype(float))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix_codes(), st.data())
def test_decode_matches_reference(code, data):
    window_bits, codes, lengths, lut_length, lut_symbol = code
    symbols = data.draw(st.lists(st.integers(0, len(codes) - 1), max_size=200))
    frame, nbits = pack_codes(codes[symbols], lengths[symbols]) if symbols else (b"", 0)
    damage = data.draw(st.sampled_from(["none", "flip", "cut", "garbage"]))
    if damage == "flip" and frame:
        frame = bytearray(frame)
        frame[data.draw(st.integers(0, len(frame) - 1))] ^= data.draw(st.integers(1, 255))
        frame = bytes(frame)
    elif damage == "cut":
        nbits = data.draw(st.integers(0, nbits))
    elif damage == "garbage":
        frame = data.draw(st.binary(max_size=60))
        nbits = data.draw(st.integers(0, 8 * len(frame)))
    expected = reference_decode(frame, nbits, window_bits, lut_length, lut_symbol)
    assert outcome(frame, nbits, window_bits, lut_length, lut_symbol) == expected
    if damage == "none":
        assert expected == ("ok", symbols)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix_codes(max_window=9), st.data())
def test_decode_small_chunks_match_reference(code, data):
    window_bits, codes, lengths, lut_length, lut_symbol = code
    pattern = data.draw(st.lists(st.integers(0, len(codes) - 1), min_size=1, max_size=4))
    if data.draw(st.booleans()):  # a periodic stream: speculation may never meet it
        symbols = (pattern * 200)[:data.draw(st.integers(0, 800))]
    else:
        symbols = data.draw(st.lists(st.integers(0, len(codes) - 1), max_size=800))
    frame, nbits = pack_codes(codes[symbols], lengths[symbols]) if symbols else (b"", 0)
    if data.draw(st.booleans()) and nbits:
        nbits = data.draw(st.integers(0, nbits))
    expected = reference_decode(frame, nbits, window_bits, lut_length, lut_symbol)
    assert outcome(frame, nbits, window_bits, lut_length, lut_symbol,
                   SMALL_CHUNKS) == expected


def test_periodic_frame_takes_the_exact_path():
    # Codes of 3 and 5 bits alternating: an 8-bit period, chunks a multiple of 15 bits.
    window_bits, codes, lengths, lut_length, lut_symbol = 5, *prefix_code([3, 5, 5, 5], 5)
    symbols = [0, 1] * 300
    frame, nbits = pack_codes(codes[symbols], lengths[symbols])
    decoder = PrefixDecoder(window_bits, lut_length, lut_symbol, tuning=SMALL_CHUNKS)
    assert decoder.chunk_bits == 45
    assert decoder.decode(frame, nbits).tolist() == symbols
    assert decoder.exact_segments > 0, "the speculative decoder should have given up"
    # Without resync rounds every segment is decoded exactly, with the same result.
    exact = PrefixDecoder(window_bits, lut_length, lut_symbol,
                          tuning=DecoderTuning(target_chunk_bits=40, segment_chunks=3,
                                               max_rounds=0))
    assert exact.decode(frame, nbits).tolist() == symbols
    assert exact.exact_segments == -(-nbits // (3 * 45))


def test_long_frames_round_trip():
    # Default chunking, long frames: random, constant and periodic streams.
    rng = np.random.default_rng(7)
    window_bits, codes, lengths, lut_length, lut_symbol = 11, *prefix_code(
        [3, 4, 5, 6, 7, 8, 9, 10, 11, 11], 11)
    streams = [rng.integers(0, 10, 200_000), np.full(100_000, 8),
               np.resize([0, 9, 9, 4], 100_000), np.minimum(rng.geometric(0.3, 200_000) - 1, 9)]
    for symbols in streams:
        frame, nbits = pack_codes(codes[symbols], lengths[symbols])
        decoded = decode_prefix(frame, nbits, window_bits, lut_length, lut_symbol)
        assert np.array_equal(decoded, symbols)
        # Cut inside the last code: truncated, at the last code's start.
        with pytest.raises(TruncatedStreamError) as caught:
            decode_prefix(frame, nbits - 1, window_bits, lut_length, lut_symbol)
        assert caught.value.bit == nbits - lengths[symbols[-1]]


def test_invalid_code_deep_in_a_long_frame():
    window_bits, codes, lengths, lut_length, lut_symbol = 4, *prefix_code([2, 2, 3, 4], 4)
    # "1111" is no code word; put it after 100000 valid codes.
    rng = np.random.default_rng(3)
    symbols = rng.integers(0, 4, 100_000)
    head_bits = int(lengths[symbols].sum())
    frame, nbits = pack_codes(np.append(codes[symbols], 0b1111), np.append(lengths[symbols], 4))
    with pytest.raises(InvalidCodeError, match=f"invalid code at bit {head_bits}:"):
        decode_prefix(frame, nbits, window_bits, lut_length, lut_symbol)


def test_long_invalid_run_grows_the_walk():
    # Codes of 6..8 bits, then many bytes of ones (no code word): chunks there step one bit
    # at a time, far more steps than a chunk of shortest codes, so the walk table grows.
    window_bits, codes, lengths, lut_length, lut_symbol = 8, *prefix_code([6, 6, 7, 8], 8)
    rng = np.random.default_rng(5)
    symbols = rng.integers(0, 4, 20_000)
    head, head_bits = pack_codes(codes[symbols], lengths[symbols])
    frame = head + b"\xff" * 40_000
    for nbits in (head_bits, head_bits + 1, 8 * len(frame)):
        expected = reference_decode(frame, nbits, window_bits, lut_length, lut_symbol)
        assert outcome(frame, nbits, window_bits, lut_length, lut_symbol) == expected


@pytest.mark.parametrize("count", [0, 1, 7, 4095, 4096, 4097, 70001])
def test_symbol_encoder_matches_pack_codes(count):
    """The pair-table encoder makes exactly the frame pack_codes makes, odd tails included."""
    rng = np.random.default_rng(count)
    lengths = rng.integers(1, 17, 256)
    codes = rng.integers(0, 1 << 16, 256) & ((1 << lengths) - 1)
    symbols = rng.integers(0, 256, count).astype(np.uint8)
    assert SymbolEncoder(codes, lengths).encode(symbols) == pack_codes(codes[symbols],
                                                                       lengths[symbols])


def test_symbol_encoder_refuses_bad_tables():
    with pytest.raises(ValueError, match="1..16"):
        SymbolEncoder(np.zeros(256, int), np.full(256, 17))
    with pytest.raises(ValueError, match="does not fit"):
        SymbolEncoder(np.full(256, 4), np.full(256, 2))


# -- two codes per walk step -----------------------------------------------------------

def detailed_reference(data, nbits, window_bits, lut_length, lut_symbol):
    """reference_decode, with the window (and length) an error reports."""
    kind, value = reference_decode(data, nbits, window_bits, lut_length, lut_symbol)
    if kind == "ok":
        return kind, value
    bits = "".join(format(byte, "08b") for byte in data)[:nbits] + "0" * window_bits
    window = int(bits[value:value + window_bits], 2)
    return kind, value, window, int(lut_length[window]) if kind == "truncated" else None


def detailed_outcome(decode):
    try:
        return "ok", decode().tolist()
    except InvalidCodeError as error:
        return "invalid", error.bit, error.window, None
    except TruncatedStreamError as error:
        return "truncated", error.bit, error.window, error.length


def pair_advance_reference(window_bits, lut_length, pair_bits, window):
    """How far a walk step goes from a pair_bits-wide window, one code at a time."""
    bits = format(window, f"0{pair_bits}b") + "0" * window_bits
    first = int(lut_length[int(bits[:window_bits], 2)])
    if first == 0:
        return 1
    second = int(lut_length[int(bits[first:first + window_bits], 2)])
    return first + second if second and first + second <= pair_bits else first


@pytest.mark.parametrize("lengths, window_bits, pair_bits", [
    ([1, 2, 3, 3], 3, 6), ([1, 2, 3, 3], 3, 4), ([1, 2], 2, 3), ([2, 2, 3, 4], 4, 5),
    ([3, 5, 5, 5], 5, 9)])
def test_pair_steps_match_reference(lengths, window_bits, pair_bits):
    # Pairs that fit the window, pairs that do not, invalid first and second codes.
    codes, code_lengths, lut_length, lut_symbol = prefix_code(lengths, window_bits)
    decoder = PrefixDecoder(window_bits, lut_length, lut_symbol,
                            tuning=DecoderTuning(pairs_from=0, pair_window_bits=pair_bits))
    assert decoder.pair_steps is None  # built for the first frame that needs it
    frame, nbits = pack_codes(codes[:1], code_lengths[:1])
    assert decoder.decode(frame, nbits).tolist() == [0]
    steps = decoder.pair_steps
    expected = [pair_advance_reference(window_bits, lut_length, pair_bits, window)
                for window in range(1 << pair_bits)]
    assert steps.bits == pair_bits and steps.advance.tolist() == expected
    assert steps.shortest == min(advance for window, advance in enumerate(expected)
                                 if lut_length[window >> (pair_bits - window_bits)])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix_codes(max_window=9), st.data())
def test_decode_in_pairs_matches_reference(code, data):
    # Every frame walked two codes per step, with tiny chunks and segments. Narrow pair
    # windows leave some pairs unfit (one code per step); periodic streams take the
    # resync and exact paths; cuts and flips end the frame mid-pair or at invalid codes.
    window_bits, codes, lengths, lut_length, lut_symbol = code
    tuning = DecoderTuning(target_chunk_bits=40, segment_chunks=3, pairs_from=0,
                           pair_window_bits=data.draw(st.integers(window_bits + 1,
                                                                  2 * window_bits)))
    pattern = data.draw(st.lists(st.integers(0, len(codes) - 1), min_size=1, max_size=4))
    if data.draw(st.booleans()):
        symbols = (pattern * 200)[:data.draw(st.integers(0, 800))]
    else:
        symbols = data.draw(st.lists(st.integers(0, len(codes) - 1), max_size=800))
    frame, nbits = pack_codes(codes[symbols], lengths[symbols]) if symbols else (b"", 0)
    damage = data.draw(st.sampled_from(["none", "cut", "flip"]))
    if damage == "cut" and nbits:
        nbits = data.draw(st.integers(0, nbits))
    elif damage == "flip" and frame:
        frame = bytearray(frame)
        frame[data.draw(st.integers(0, len(frame) - 1))] ^= data.draw(st.integers(1, 255))
    expected = detailed_reference(frame, nbits, window_bits, lut_length, lut_symbol)
    assert detailed_outcome(lambda: decode_prefix(
        frame, nbits, window_bits, lut_length, lut_symbol, tuning=tuning)) == expected


def test_prefix_decoder_reuses_its_pair_table():
    window_bits, codes, lengths, lut_length, lut_symbol = 11, *prefix_code(
        [3, 4, 5, 6, 7, 8, 9, 10, 11, 11], 11)
    decoder = PrefixDecoder(window_bits, lut_length, lut_symbol)
    rng = np.random.default_rng(11)
    short = rng.integers(0, 10, 1000)
    frame, nbits = pack_codes(codes[short], lengths[short])
    assert np.array_equal(decoder.decode(frame, nbits), short)
    assert decoder.pair_steps is None  # a short frame does not repay the pair table
    long = rng.integers(0, 10, 400_000)
    frame, nbits = pack_codes(codes[long], lengths[long])
    assert nbits >= decoder.tuning.pairs_from == DecoderTuning().pairs_from
    assert np.array_equal(decoder.decode(frame, nbits), long)
    built = decoder.pair_steps
    assert built is not None and built.bits == min(2 * window_bits,
                                                   DecoderTuning().pair_window_bits)
    assert np.array_equal(decoder.decode(frame, nbits), long) and decoder.pair_steps is built
    for cut in (nbits - 1, nbits - 2):  # the last code or the one before cut
        assert detailed_outcome(lambda: decoder.decode(frame, cut)) == detailed_reference(
            frame, cut, window_bits, lut_length, lut_symbol)


def test_prefix_decoder_checks_tables_like_decode_prefix():
    with pytest.raises(ValueError, match="window_bits is 25; it must be 1..24"):
        PrefixDecoder(25, SMALL[3], SMALL[4])
    with pytest.raises(ValueError, match="lut_length holds no code word"):
        PrefixDecoder(3, np.zeros(8, int), SMALL[4])
    decoder = PrefixDecoder(3, SMALL[3], SMALL[4])
    assert decoder.decode(b"\xcf\x00", 10).tolist() == [2, 0, 3, 1, 0]
    with pytest.raises(BitstreamError, match="nbits is 9 but the data holds only 8 bits"):
        decoder.decode(b"\x00", 9)


# -- decoder tuning and codec errors ---------------------------------------------------

def test_decoder_tuning_defaults_and_checks():
    tuning = DecoderTuning()
    assert (tuning.target_chunk_bits, tuning.segment_chunks, tuning.max_rounds,
            tuning.pair_window_bits, tuning.pairs_from) == (2048, 4096, 2, 20, 1 << 20)
    assert PrefixDecoder(3, SMALL[3], SMALL[4]).tuning == tuning
    with pytest.raises(TypeError):
        DecoderTuning(40)  # keyword-only
    with pytest.raises(ValueError, match="target_chunk_bits is 0; it must be at least 1"):
        DecoderTuning(target_chunk_bits=0)
    with pytest.raises(ValueError, match="max_rounds is -1; it must be at least 0"):
        DecoderTuning(max_rounds=-1)
    with pytest.raises(ValueError, match="pair_window_bits is 25; it must be 1..24"):
        DecoderTuning(pair_window_bits=25)
    with pytest.raises(TypeError, match="check_every must be an integer, not float"):
        DecoderTuning(check_every=1.5)
    with pytest.raises(TypeError, match="tuning must be a DecoderTuning, not dict"):
        PrefixDecoder(3, SMALL[3], SMALL[4], tuning={"max_rounds": 0})


@pytest.mark.parametrize("tuning", [
    DecoderTuning(check_every=1, emit_block=1),
    DecoderTuning(target_chunk_bits=1, max_length_lcm=1, segment_chunks=1),
    DecoderTuning(max_rounds=0, pairs_from=0),
])
def test_extreme_tunings_decode_the_same(tuning):
    window_bits, codes, lengths, lut_length, lut_symbol = 11, *prefix_code(
        [3, 4, 5, 6, 7, 8, 9, 10, 11, 11], 11)
    rng = np.random.default_rng(13)
    symbols = np.minimum(rng.geometric(0.3, 3000) - 1, 9)
    frame, nbits = pack_codes(codes[symbols], lengths[symbols])
    decoder = PrefixDecoder(window_bits, lut_length, lut_symbol, tuning=tuning)
    assert np.array_equal(decoder.decode(frame, nbits), symbols)
    for cut in (nbits - 1, nbits // 2):
        assert detailed_outcome(lambda: decoder.decode(frame, cut)) == detailed_reference(
            frame, cut, window_bits, lut_length, lut_symbol)


class CodecError(BitstreamError):
    pass


class CodecInvalidCodeError(CodecError, InvalidCodeError):
    pass


class CodecTruncatedStreamError(CodecError, TruncatedStreamError):
    pass


def test_decode_errors_convert_keeping_the_fields():
    errors = DecodeErrors(CodecError, CodecInvalidCodeError, CodecTruncatedStreamError)
    invalid = errors.convert(InvalidCodeError("shared", bit=3, window=5),
                             invalid_message=lambda error: f"own {error.bit}")
    assert type(invalid) is CodecInvalidCodeError and str(invalid) == "own 3"
    assert (invalid.bit, invalid.window) == (3, 5)
    truncated = errors.convert(TruncatedStreamError("shared", bit=1, length=4, nbits=3,
                                                    window=2))
    assert type(truncated) is CodecTruncatedStreamError and str(truncated) == "shared"
    assert (truncated.bit, truncated.length, truncated.nbits, truncated.window) == (1, 4, 3, 2)
    other = errors.convert(BitstreamError("nbits is -1", bit=None))
    assert type(other) is CodecError and str(other) == "nbits is -1"
    with pytest.raises(TypeError, match="invalid_code must be a subclass of InvalidCodeError"):
        DecodeErrors(CodecError, CodecError, CodecTruncatedStreamError)
    with pytest.raises(TypeError, match="decode must be a subclass of BitstreamError"):
        DecodeErrors(ValueError, CodecInvalidCodeError, CodecTruncatedStreamError)
    with pytest.raises(TypeError, match="truncated_stream must be a subclass of CodecError"):
        DecodeErrors(CodecError, CodecInvalidCodeError, TruncatedStreamError)
