"""Tests of the bf16 exponent remap golden model (``golden/exponent.py``)."""

import dataclasses
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from linkcodec.golden.exponent import (ExponentDecodeError, ExponentFormatError, ExponentTable,
                                       ExponentTableError, RemapFrame, decode, encode,
                                       exponent_histogram, gaussian_exponent_pmf, join, split,
                                       table_from_histogram, table_from_sigma,
                                       table_from_tensor_sigma, unpack_codes)

ALL_PATTERNS = np.arange(1 << 16, dtype=np.uint16)

# A hand-built table around 1.0 that leaves exponents 0 and 255 to the escape.
TABLE = ExponentTable((127, 128, 126, 125, 124, 123, 122))

# (bf16 bits, code, sign+mantissa byte, escaped exponent or None)
KNOWN = [
    (0x3F80, 1, 0x00, None),  # 1.0: exponent 127
    (0xC000, 2, 0x80, None),  # -2.0: exponent 128, sign set
    (0x0000, 0, 0x00, 0),     # +0.0
    (0x8000, 0, 0x80, 0),     # -0.0
    (0x7F80, 0, 0x00, 255),   # +inf
    (0x7FC5, 0, 0x45, 255),   # quiet NaN with payload 0x45
    (0xFFAB, 0, 0xAB, 255),   # negative NaN with payload 0x2B
    (0x0001, 0, 0x01, 0),     # smallest subnormal, 2**-133
    (0xBFC0, 1, 0xC0, None),  # -1.5
    (0x3F40, 3, 0x40, None),  # 0.75: exponent 126
]


def gaussian_bf16(count, sigma=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return (sigma * rng.standard_normal(count)).astype(ml_dtypes.bfloat16)


def slow_gaussian_top7(sigma):
    """The 7 most probable exponents of N(0, sigma**2), one exponent at a time."""
    probability = {0: math.erf(2.0 ** -126 / (sigma * math.sqrt(2)))}
    for exponent in range(1, 255):
        low = 2.0 ** (exponent - 127) / (sigma * math.sqrt(2))
        high = 2.0 ** (exponent - 126) / (sigma * math.sqrt(2))
        probability[exponent] = math.erf(high) - math.erf(low)
    probability[255] = 1.0 - math.erf(2.0 ** 128 / (sigma * math.sqrt(2)))
    ranked = sorted(probability, key=lambda exponent: (-probability[exponent], exponent))
    return tuple(ranked[:7])


# -- round trips -----------------------------------------------------------------------

@pytest.mark.parametrize("table", [table_from_sigma(1.0), table_from_histogram(ALL_PATTERNS),
                                   TABLE, ExponentTable((0, 255, 1, 254, 127, 2, 3))],
                         ids=["sigma", "histogram", "hand", "edges"])
def test_round_trip_all_patterns(table):
    frame = encode(ALL_PATTERNS, table)
    assert frame.codes.dtype == frame.sign_mantissa.dtype == frame.escapes.dtype == np.uint8
    assert frame.codes.shape == frame.sign_mantissa.shape == (1 << 16,)
    # Every exponent occurs 256 times, 7 of them get codes.
    assert frame.escapes.size == 256 * (256 - 7)
    decoded = decode(frame, table)
    assert decoded.dtype == np.uint16
    np.testing.assert_array_equal(decoded, ALL_PATTERNS)


def test_round_trip_bf16_input_keeps_shape():
    values = gaussian_bf16(4 * 5 * 6).reshape(4, 5, 6)
    values[0, 0, 0] = np.nan
    values[1, 2, 3] = -np.inf
    table = table_from_tensor_sigma(values)
    frame = encode(values, table)
    assert frame.shape == (4, 5, 6)
    decoded = decode(frame, table)
    assert decoded.shape == (4, 5, 6)
    np.testing.assert_array_equal(decoded, values.view(np.uint16))
    # The same tensor given as bit patterns encodes to the same frame.
    again = encode(values.view(np.uint16), table)
    for field in ("codes", "sign_mantissa", "escapes"):
        np.testing.assert_array_equal(getattr(again, field), getattr(frame, field))


def test_big_endian_uint16_is_read_by_value():
    table = table_from_sigma(1.0)
    swapped = ALL_PATTERNS.astype(">u2")
    np.testing.assert_array_equal(decode(encode(swapped, table), table), ALL_PATTERNS)


def test_empty_tensor():
    frame = encode(np.zeros((0, 3), dtype=np.uint16), TABLE)
    assert frame.packed_codes() == b""
    assert frame.compressed_bits() == 0
    assert decode(frame, TABLE).shape == (0, 3)
    with pytest.raises(ValueError, match="empty frame has no bits per value"):
        frame.bits_per_value()


@settings(max_examples=150, deadline=None, database=None)
@given(bits=hnp.arrays(np.uint16, hnp.array_shapes(min_dims=0, max_dims=3, max_side=24)),
       exponents=st.lists(st.integers(0, 255), min_size=7, max_size=7, unique=True))
def test_round_trip_property(bits, exponents):
    table = ExponentTable(exponents)
    frame = encode(bits, table)
    assert frame.shape == bits.shape
    assert frame.escapes.size == np.count_nonzero(frame.codes == 0)
    assert int(frame.codes.max(initial=0)) <= 7
    np.testing.assert_array_equal(decode(frame, table), bits)
    np.testing.assert_array_equal(unpack_codes(frame.packed_codes(), frame.size), frame.codes)
    assert frame.compressed_bits() == 11 * bits.size + 8 * frame.escapes.size


@settings(max_examples=100, deadline=None, database=None)
@given(codes=st.lists(st.integers(0, 7), max_size=50))
def test_packed_codes_match_a_bit_string(codes):
    codes = np.array(codes, dtype=np.uint8)
    frame = RemapFrame(codes=codes, sign_mantissa=np.zeros_like(codes),
                       escapes=np.zeros(0, dtype=np.uint8), shape=codes.shape)
    text = "".join(format(int(code), "03b") for code in codes)
    text += "0" * (-len(text) % 8)
    expected = bytes(int(text[i:i + 8], 2) for i in range(0, len(text), 8))
    assert frame.packed_codes() == expected
    np.testing.assert_array_equal(unpack_codes(expected, codes.size), codes)


# -- known answers ---------------------------------------------------------------------

def test_known_bit_patterns_are_what_ml_dtypes_makes():
    values = np.array([1.0, -2.0, 0.0, -0.0, np.inf, np.nan, np.nan, 2.0 ** -133, -1.5, 0.75],
                      dtype=ml_dtypes.bfloat16)
    bits = values.view(np.uint16)
    expected = np.array([pattern for pattern, *_ in KNOWN], dtype=np.uint16)
    nan = np.isnan(values.astype(np.float32))
    np.testing.assert_array_equal(bits[~nan], expected[~nan])
    assert np.isnan(expected.view(ml_dtypes.bfloat16).astype(np.float32)[nan]).all()


def test_known_codes_and_escapes():
    bits = np.array([pattern for pattern, *_ in KNOWN], dtype=np.uint16)
    frame = encode(bits, TABLE)
    assert frame.codes.tolist() == [code for _, code, _, _ in KNOWN]
    assert frame.sign_mantissa.tolist() == [sm for _, _, sm, _ in KNOWN]
    assert frame.escapes.tolist() == [e for *_, e in KNOWN if e is not None]
    assert frame.escapes.tolist() == [0, 0, 255, 255, 255, 0]
    # 001 010 000 000 000 000 000 000 001 011 + 2 pad bits
    assert frame.packed_codes() == bytes([0x28, 0x00, 0x00, 0x2C])
    assert frame.compressed_bits() == 3 * 10 + 8 * 10 + 8 * 6
    assert frame.bits_per_value() == pytest.approx(15.8)
    np.testing.assert_array_equal(decode(frame, TABLE), bits)


def test_split_and_join():
    sign_mantissa, exponent = split(np.array([[0xBFC0, 0x7FC5], [0x0001, 0x8000]],
                                             dtype=np.uint16))
    assert sign_mantissa.dtype == exponent.dtype == np.uint8
    assert sign_mantissa.tolist() == [[0xC0, 0x45], [0x01, 0x80]]
    assert exponent.tolist() == [[127, 255], [0, 0]]
    sign_mantissa, exponent = split(ALL_PATTERNS)
    np.testing.assert_array_equal(join(sign_mantissa, exponent), ALL_PATTERNS)
    np.testing.assert_array_equal(exponent, (ALL_PATTERNS >> 7) & 0xFF)


def test_exponent_histogram():
    histogram = exponent_histogram(ALL_PATTERNS)
    assert histogram.shape == (256,)
    assert (histogram == 256).all()
    values = np.array([1.0, 1.5, -1.0, 2.0, 0.0, np.inf], dtype=ml_dtypes.bfloat16)
    histogram = exponent_histogram(values)
    assert histogram.sum() == 6
    assert (histogram[127], histogram[128], histogram[0], histogram[255]) == (3, 1, 1, 1)


def test_table_codes():
    assert TABLE.code_of[127] == 1 and TABLE.code_of[122] == 7
    assert TABLE.code_of[0] == TABLE.code_of[255] == 0
    assert TABLE.exponent_of_code.tolist() == [0, 127, 128, 126, 125, 124, 123, 122]
    assert ExponentTable(np.array(TABLE.exponents, dtype=np.uint8)) == TABLE
    with pytest.raises(ValueError):
        TABLE.code_of[0] = 1  # read-only


# -- tables ----------------------------------------------------------------------------

def test_table_from_sigma_one():
    expected = slow_gaussian_top7(1.0)
    assert set(expected) == {122, 123, 124, 125, 126, 127, 128}
    assert table_from_sigma(1.0).exponents == expected


@pytest.mark.parametrize("sigma", [1e-3, 0.02, 0.3, 7.0, 1e4])
def test_table_from_sigma_matches_slow_computation(sigma):
    assert table_from_sigma(sigma).exponents == slow_gaussian_top7(sigma)


def test_table_from_sigma_shifts_with_a_power_of_two():
    base = table_from_sigma(1.0).exponents
    assert table_from_sigma(2.0 ** 10).exponents == tuple(e + 10 for e in base)
    assert table_from_sigma(2.0 ** -20).exponents == tuple(e - 20 for e in base)


def test_table_from_sigma_at_the_edges():
    # Almost all mass below the normal range: exponent 0, then ties by the smaller value.
    assert table_from_sigma(1e-40).exponents == (0, 1, 2, 3, 4, 5, 6)
    assert table_from_sigma(1e300).exponents[0] == 255
    pmf = gaussian_exponent_pmf(1.0)
    assert pmf.shape == (256,) and (pmf >= 0).all()
    assert pmf.sum() == pytest.approx(1.0)


def test_table_from_histogram_ranks_by_count():
    exponents = np.repeat(np.arange(10, dtype=np.uint8), [5, 9, 9, 1, 0, 7, 3, 3, 2, 8])
    assert table_from_histogram(exponents).exponents == (1, 2, 9, 5, 0, 6, 7)
    # Fewer than 7 exponents present: the rest by smaller exponent value.
    values = np.array([1.0, 1.0, 2.0], dtype=ml_dtypes.bfloat16)
    assert table_from_histogram(values).exponents == (127, 128, 0, 1, 2, 3, 4)
    assert table_from_histogram(values.view(np.uint16)) == table_from_histogram(values)


def test_table_from_sigma_close_to_histogram():
    values = gaussian_bf16(1 << 20, sigma=0.05, seed=1)
    from_theory = table_from_tensor_sigma(values)
    from_data = table_from_histogram(values)
    assert len(set(from_theory.exponents) & set(from_data.exponents)) >= 6
    assert from_theory == table_from_sigma(float(np.std(values.astype(np.float64))))


def test_gaussian_bits_per_value():
    values = gaussian_bf16(1 << 18, seed=2)
    table = table_from_sigma(1.0)
    frame = encode(values, table)
    pmf = gaussian_exponent_pmf(1.0)
    escape_rate = 1.0 - pmf[list(table.exponents)].sum()
    assert 0.02 < escape_rate < 0.03
    assert frame.bits_per_value() == pytest.approx(11 + 8 * escape_rate, abs=0.02)
    assert 11.0 < frame.bits_per_value() < 11.3
    assert frame.bits_per_value() == pytest.approx(
        encode(values, table_from_histogram(values)).bits_per_value(), abs=0.01)


# -- errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("values, dtype", [(np.zeros(3, np.float32), "float32"),
                                           (np.zeros(3, np.int16), "int16"),
                                           ([1, 2, 3], "int64"),
                                           (np.zeros(3, ml_dtypes.float8_e4m3fn),
                                            "float8_e4m3fn")])
def test_non_bf16_input_is_refused(values, dtype):
    with pytest.raises(ExponentFormatError, match=f"not {dtype}"):
        encode(values, TABLE)
    with pytest.raises(ExponentFormatError, match=f"not {dtype}"):
        split(values)
    with pytest.raises(ExponentFormatError, match=f"not {dtype}"):
        table_from_tensor_sigma(values)
    with pytest.raises(ExponentFormatError, match=f"not of {dtype}"):
        table_from_histogram(values)


def test_join_checks_its_fields():
    with pytest.raises(ExponentFormatError, match="exponent must be a uint8 array, not int64"):
        join(np.zeros(2, np.uint8), np.zeros(2, np.int64))
    with pytest.raises(ExponentFormatError, match=r"differ in shape: \(2,\) and \(3,\)"):
        join(np.zeros(2, np.uint8), np.zeros(3, np.uint8))


@pytest.mark.parametrize("exponents, error, message", [
    ((1, 2, 3, 4, 5, 6), ExponentTableError, "exactly 7 exponents .* not 6"),
    (tuple(range(8)), ExponentTableError, "exactly 7 exponents .* not 8"),
    ((1, 2, 3, 4, 5, 6, 3), ExponentTableError,
     r"exponent 3 appears twice in the table \(exponents\[2\] and exponents\[6\]\)"),
    ((1, 2, 3, 4, 5, 6, 256), ExponentTableError, r"exponents\[6\] is 256; .* 0\.\.255"),
    ((-1, 2, 3, 4, 5, 6, 7), ExponentTableError, r"exponents\[0\] is -1"),
    ((1, 2, 3, 4.0, 5, 6, 7), TypeError, r"exponents\[3\] must be an integer, not float"),
    ((True, 2, 3, 4, 5, 6, 7), TypeError, r"exponents\[0\] must be an integer, not a bool"),
    (np.arange(14).reshape(2, 7), ExponentTableError, "one-dimensional"),
    (127, TypeError, "sequence of 7 integers, not int"),
])
def test_bad_tables(exponents, error, message):
    with pytest.raises(error, match=message):
        ExponentTable(exponents)


@pytest.mark.parametrize("sigma", [0, 0.0, -1.0, math.nan, math.inf])
def test_bad_sigma(sigma):
    with pytest.raises(ExponentTableError, match="finite sigma > 0"):
        table_from_sigma(sigma)


@pytest.mark.parametrize("sigma", ["1.0", None, True])
def test_sigma_must_be_a_number(sigma):
    with pytest.raises(TypeError, match="sigma must be a real number"):
        table_from_sigma(sigma)


def test_tensor_sigma_needs_spread():
    nans = np.full(4, np.nan, dtype=ml_dtypes.bfloat16)
    with pytest.raises(ExponentTableError, match="no finite values"):
        table_from_tensor_sigma(nans)
    constant = np.array([2.0, 2.0, np.inf], dtype=ml_dtypes.bfloat16)
    with pytest.raises(ExponentTableError, match="all equal"):
        table_from_tensor_sigma(constant)


def test_histogram_needs_values():
    with pytest.raises(ExponentTableError, match="no values to count"):
        table_from_histogram(np.zeros(0, dtype=np.uint16))


def test_encode_and_decode_need_a_table():
    with pytest.raises(TypeError, match="table must be an ExponentTable, not tuple"):
        encode(ALL_PATTERNS, TABLE.exponents)
    with pytest.raises(TypeError, match="frame must be a RemapFrame, not ndarray"):
        decode(ALL_PATTERNS, TABLE)


@pytest.fixture
def frame():
    return encode(np.array([pattern for pattern, *_ in KNOWN], dtype=np.uint16), TABLE)


def test_bad_frames(frame):
    def bad(message, **changes):
        with pytest.raises(ExponentDecodeError, match=message):
            decode(dataclasses.replace(frame, **changes), TABLE)

    bad(r"frame shape \(10,\) holds 10 values but codes has 9 entries", codes=frame.codes[:-1])
    bad(r"frame shape \(11,\) holds 11 values but codes has 10 entries", shape=(11,))
    bad(r"holds 10 values but sign_mantissa has 11 entries",
        sign_mantissa=np.append(frame.sign_mantissa, np.uint8(0)))
    bad(r"6 escape codes \(code 0\) but 5 escaped exponents", escapes=frame.escapes[:-1])
    bad(r"6 escape codes \(code 0\) but 7 escaped exponents",
        escapes=np.append(frame.escapes, np.uint8(3)))
    codes = frame.codes.copy()
    codes[4] = 8
    bad(r"code 4 is 8; codes are 3 bits \(0\.\.7\)", codes=codes)
    bad("frame codes must be a 1-D uint8 array, not int64", codes=frame.codes.astype(np.int64))
    bad("frame escapes must be a 1-D uint8 array, not uint16",
        escapes=frame.escapes.astype(np.uint16))
    bad(r"frame sign_mantissa must be a 1-D uint8 array, not uint8 of shape \(2, 5\)",
        sign_mantissa=frame.sign_mantissa.reshape(2, 5))
    bad("negative size", shape=(-10,))
    bad("frame shape must be a tuple of sizes, not NoneType", shape=None)
    with pytest.raises(ExponentDecodeError, match="code 4 is 8"):
        dataclasses.replace(frame, codes=codes).packed_codes()


def test_escape_of_a_table_exponent_decodes_to_it(frame):
    # Not what an encoder makes, but well defined: the escape carries the full exponent.
    escapes = frame.escapes.copy()
    escapes[0] = 127
    decoded = decode(dataclasses.replace(frame, escapes=escapes), TABLE)
    assert decoded[2] == 0x3F80


def test_bad_packed_codes():
    with pytest.raises(ExponentDecodeError, match="10 codes of 3 bits pack into 4 bytes, not 3"):
        unpack_codes(bytes(3), 10)
    with pytest.raises(ExponentDecodeError, match="pack into 4 bytes, not 5"):
        unpack_codes(bytes(5), 10)
    with pytest.raises(ExponentDecodeError, match="the 2 pad bits .* are 0b1, not zero"):
        unpack_codes(bytes([0, 0, 0, 1]), 10)
    with pytest.raises(ExponentDecodeError, match="not uint16"):
        unpack_codes(np.zeros(4, np.uint16), 10)
    with pytest.raises(ExponentDecodeError, match="count is -1"):
        unpack_codes(b"", -1)


# -- DFloat11-style: Huffman on the exponent byte -------------------------------------------

def test_huffman_exponent_round_trips_every_pattern():
    from linkcodec.golden.exponent import huffman_decode, huffman_encode

    every = np.arange(1 << 16, dtype=np.uint16).reshape(256, 256)
    frame = huffman_encode(every)
    assert np.array_equal(huffman_decode(frame), every)
    # All 256 exponents equally often: the code is 8 bits, so 16 bits a value.
    assert frame.bits_per_value() == 16


def test_huffman_exponent_beats_remap_on_gaussian_and_takes_a_fixed_codebook():
    from linkcodec.golden.exponent import huffman_decode, huffman_encode
    from linkcodec.golden.huffman import HuffmanCodebook

    rng = np.random.default_rng(5)
    earlier = rng.standard_normal(50_000).astype(ml_dtypes.bfloat16).view(np.uint16)
    later = rng.standard_normal(50_000).astype(ml_dtypes.bfloat16).view(np.uint16)
    book = HuffmanCodebook.from_batches([split(earlier)[1]])
    frame = huffman_encode(later, book)
    assert frame.codebook is book and np.array_equal(huffman_decode(frame), later)
    remap = encode(later, table_from_histogram(later)).bits_per_value()
    assert 10.0 < frame.bits_per_value() < remap       # entropy-coded exponents win
    own = huffman_encode(later).bits_per_value()
    assert own <= frame.bits_per_value() < own + 0.05   # earlier batches' code: near


def test_huffman_exponent_refuses_bad_frames():
    from linkcodec.golden.exponent import (HuffmanExponentFrame, huffman_decode,
                                           huffman_encode)
    from linkcodec.golden.huffman import HuffmanDecodeError

    frame = huffman_encode(np.arange(100, dtype=np.uint16) + 16000)
    with pytest.raises(ExponentDecodeError, match="holds 100 values"):
        huffman_decode(HuffmanExponentFrame(frame.sign_mantissa[:50], frame.exponent_data,
                                            frame.exponent_nbits, frame.codebook, (100,)))
    # One exponent, a 1-bit code: a bit short is a value short.
    with pytest.raises(ExponentDecodeError, match="decodes to 99 values, not 100"):
        huffman_decode(HuffmanExponentFrame(frame.sign_mantissa, frame.exponent_data,
                                            frame.exponent_nbits - 1, frame.codebook, (100,)))
    spread = np.random.default_rng(1).integers(0, 1 << 16, 100).astype(np.uint16)
    frame = huffman_encode(spread)
    with pytest.raises(HuffmanDecodeError):            # the last code cut in half
        huffman_decode(HuffmanExponentFrame(frame.sign_mantissa, frame.exponent_data,
                                            frame.exponent_nbits - 1, frame.codebook, (100,)))
    with pytest.raises(TypeError, match="HuffmanExponentFrame"):
        huffman_decode("frame")
