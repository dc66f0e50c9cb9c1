"""Tests of the QLC golden model (``golden/qlc.py``) against ``docs/bitstream.md``.

Known answers are worked out by hand from the document; round trips cover random,
skewed, constant and all-symbol inputs under the base, optimal and random layouts; the
optimiser is checked against exhaustive searches; every refusal is checked by message.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkcodec.golden.bitstream import BitstreamError, InvalidCodeError, TruncatedStreamError
from linkcodec.golden.qlc import (QlcCode, QlcCodeError, QlcDecodeError, QlcInvalidCodeError,
                                  QlcLayout, QlcLayoutError, QlcTruncatedStreamError,
                                  optimal_areas, optimal_layout, rank_table)
from linkcodec.golden.formats import compressibility

BASE = QlcLayout.base()


def bit_string(data, nbits):
    return "".join(format(byte, "08b") for byte in data)[:nbits]


def skewed_counts(seed, p=0.05):
    rng = np.random.default_rng(seed)
    return np.bincount(np.minimum(rng.geometric(p, 50_000) - 1, 255), minlength=256)


@st.composite
def layouts(draw):
    """A random valid layout: fill areas of random widths, the last one takes the rest."""
    widths = [draw(st.integers(0, 8)) for _ in range(8)]
    if sum(1 << width for width in widths) < 256:
        widths[draw(st.integers(0, 7))] = 8  # room for all 256 symbols
    sizes, left = [], 256
    for area, width in enumerate(widths):
        size = left if area == 7 else draw(st.integers(max(0, left - sum(
            1 << later for later in widths[area + 1:])), min(left, 1 << width)))
        sizes.append(size)
        left -= size
    return QlcLayout(tuple(widths), tuple(sizes))


# -- layout ----------------------------------------------------------------------------

def test_base_layout():
    assert BASE.suffix_bits == (3, 3, 3, 3, 3, 4, 5, 8)
    assert BASE.sizes == (8, 8, 8, 8, 8, 16, 32, 168)
    assert BASE.code_lengths == (6, 6, 6, 6, 6, 7, 8, 11)
    assert BASE.bases == (0, 8, 16, 24, 32, 40, 56, 88)
    assert BASE.distinct_lengths == 4
    assert BASE.max_code_length == 11


def test_layout_is_a_frozen_value():
    layout = QlcLayout([3, 3, 3, 3, 3, 4, 5, 8], np.array([8, 8, 8, 8, 8, 16, 32, 168]))
    assert layout == BASE and hash(layout) == hash(BASE)
    assert type(layout.sizes) is tuple and type(layout.sizes[0]) is int
    with pytest.raises(AttributeError):
        layout.sizes = (32,) * 8


def test_layout_counts_lengths_of_non_empty_areas_only():
    layout = QlcLayout((0, 6, 6, 6, 6, 8, 2, 1), (1, 63, 64, 64, 64, 0, 0, 0))
    assert layout.distinct_lengths == 2
    assert layout.max_code_length == 9
    assert layout.bases == (0, 1, 64, 128, 192, 256, 256, 256)


@pytest.mark.parametrize("suffix_bits, sizes, message", [
    ((3,) * 7, (8,) * 7, "a QLC layout has 8 areas, not 7"),
    ((3, 3, 3, 3, 3, 4, 5, 8), (8,) * 9, "a QLC layout has 8 areas, not 9"),
    ((3, 3, 3, 3, 3, 4, 5, 8), (8, 8, 8, 8, 8, 40, 32, 144),
     "area 5 holds 40 symbols but a 4-bit suffix has room for 16"),
    ((3, 3, 3, 3, 3, 4, 5, 8), (8, 8, 8, 8, 8, 16, 32, 162), "area sizes add up to 250, not 256"),
    ((3, 3, 9, 3, 3, 4, 5, 8), (8, 8, 8, 8, 8, 16, 32, 168),
     "suffix width of area 2 is 9; it must be 0..8"),
    ((3, 3, -1, 3, 3, 4, 5, 8), (8, 8, 8, 8, 8, 16, 32, 168),
     "suffix width of area 2 is -1; it must be 0..8"),
    ((3, 3, 3, 3, 3, 4, 5, 8), (8, 8, 8, 8, 8, 16, 48, -8),
     "area 6 holds 48 symbols but a 5-bit suffix has room for 32"),
    ((0, 0, 0, 0, 0, 0, 0, 0), (1, 1, 1, 1, 1, 1, 1, 1),
     "area sizes add up to 8, not 256"),
    ((8, 0, 0, 0, 0, 0, 0, 0), (256, 0, 0, 0, 0, 0, 0, -1),
     "area 7 holds -1 symbols; a size cannot be negative"),
])
def test_layout_refusals(suffix_bits, sizes, message):
    with pytest.raises(QlcLayoutError, match=message):
        QlcLayout(suffix_bits, sizes)


def test_layout_refuses_non_integers():
    with pytest.raises(TypeError, match="suffix_bits\\[7\\] must be an integer, not float"):
        QlcLayout((3, 3, 3, 3, 3, 4, 5, 8.0), BASE.sizes)
    with pytest.raises(TypeError, match="sizes must be a sequence of 8 integers, not int"):
        QlcLayout(BASE.suffix_bits, 256)
    with pytest.raises(TypeError, match="must be an integer, not a bool"):
        QlcLayout((True,) + BASE.suffix_bits[1:], BASE.sizes)


def test_expected_bits():
    uniform = np.ones(256)
    # (5 * 8 * 6 + 16 * 7 + 32 * 8 + 168 * 11) / 256 bits.
    assert BASE.expected_bits(uniform) == pytest.approx(2456 / 256)
    assert BASE.expected_bits(uniform / 256) == pytest.approx(2456 / 256)
    only_255 = np.zeros(256)
    only_255[255] = 3
    assert BASE.expected_bits(only_255) == 6.0  # ranked first
    assert BASE.expected_bits(only_255, rank=np.arange(256)) == 11.0  # identity ranks


# -- ranks -----------------------------------------------------------------------------

def test_rank_table_orders_by_descending_weight_ties_by_symbol():
    counts = np.zeros(256, dtype=np.int64)
    counts[[200, 7, 9, 3]] = [5, 5, 9, 1]
    ranks = rank_table(counts)
    assert ranks.dtype == np.uint8
    assert [ranks[9], ranks[7], ranks[200], ranks[3]] == [0, 1, 2, 3]
    zero_weight = [symbol for symbol in range(256) if symbol not in (200, 7, 9, 3)]
    assert ranks[zero_weight].tolist() == list(range(4, 256))  # ties: smaller symbol first
    assert np.array_equal(rank_table(counts / counts.sum()), ranks)
    assert np.array_equal(rank_table(np.ones(256)), np.arange(256))


@pytest.mark.parametrize("pmf, message", [
    (np.ones(255), "a PMF has 256 entries, one per symbol, not shape \\(255,\\)"),
    (np.ones((16, 16)), "a PMF has 256 entries, one per symbol, not shape \\(16, 16\\)"),
    (np.r_[np.ones(255), np.nan], "PMF entry of symbol 255 is nan; entries must be finite"),
    (np.r_[np.ones(3), np.inf, np.ones(252)], "PMF entry of symbol 3 is inf"),
    (np.r_[np.ones(9), -0.5, np.ones(246)], "PMF entry of symbol 9 is -0.5; entries must be >= 0"),
    (np.zeros(256), "PMF is all zero"),
    (np.ones(256, dtype=bool), "a PMF holds numbers \\(probabilities or counts\\), not bool"),
    (np.full(256, "a"), "a PMF holds numbers"),
])
def test_pmf_refusals(pmf, message):
    with pytest.raises(QlcCodeError, match=message):
        rank_table(pmf)
    with pytest.raises(QlcCodeError, match=message):
        optimal_layout(pmf)


# -- code tables -----------------------------------------------------------------------

@pytest.mark.parametrize("symbol, code, length", [
    (0, 0b000_000, 6),         # area 0, suffix 0
    (9, 0b001_001, 6),         # area 1 holds ranks 8..15
    (39, 0b100_111, 6),        # area 4, last rank
    (40, 0b101_0000, 7),       # area 5 (k = 4) holds ranks 40..55
    (56, 0b110_00000, 8),      # area 6 (k = 5) holds ranks 56..87
    (88, 0b111_00000000, 11),  # area 7 (k = 8) holds ranks 88..255
    (255, 0b111_10100111, 11),  # suffix 167, the last of 168
])
def test_base_code_known_answers(symbol, code, length):
    base = QlcCode.base()
    assert int(base.code_of[symbol]) == code
    assert int(base.length_of[symbol]) == length


def test_code_tables_follow_the_ranks():
    ranks = (np.arange(256) + 1) % 256  # symbol s has rank s + 1; symbol 255 rank 0
    code = QlcCode(BASE, ranks)
    assert (int(code.code_of[255]), int(code.length_of[255])) == (0, 6)
    assert (int(code.code_of[87]), int(code.length_of[87])) == (0b111_00000000, 11)
    assert code.rank_to_symbol[0] == 255 and code.symbol_to_rank[255] == 0
    assert code.code_of.dtype == np.uint32 and code.length_of.dtype == np.uint8
    for table in (code.code_of, code.length_of, code.symbol_to_rank, code.rank_to_symbol):
        with pytest.raises(ValueError, match="read-only"):
            table[0] = 1


def test_frame_known_answers():
    base = QlcCode.base()
    # "000000" "1010000" "11100000000": 24 bits, no padding.
    assert base.encode(np.array([0, 40, 88], np.uint8)) == (b"\x02\x87\x00", 24)
    # "001001" "11110100111" = 00100111 11010011 1(0000000): 17 bits.
    assert base.encode(np.array([9, 255], np.uint8)) == (b"\x27\xd3\x80", 17)
    assert base.decode(b"\x27\xd3\x80", 17).tolist() == [9, 255]
    assert base.encode(np.array([], np.uint8)) == (b"", 0)
    assert base.decode(b"", 0).dtype == np.uint8


def test_encode_matches_code_tables_bit_for_bit():
    rng = np.random.default_rng(11)
    code = QlcCode.from_pmf(skewed_counts(11))
    for size in (1, 2, 3, 1000, 4095, 4096, 70_001):
        symbols = rng.integers(0, 256, size).astype(np.uint8)
        data, nbits = code.encode(symbols)
        expected = "".join(format(int(code.code_of[s]), f"0{int(code.length_of[s])}b")
                           for s in symbols)
        assert nbits == len(expected) and len(data) == (nbits + 7) // 8
        assert bit_string(data, 8 * len(data)) == expected + "0" * (8 * len(data) - nbits)


@pytest.mark.parametrize("symbols", [
    np.array([1, 2, 3]), np.array([1.0]), [1, 2], np.array([1], dtype=np.int8),
])
def test_encode_refuses_other_dtypes(symbols):
    with pytest.raises(TypeError, match="symbols must be a uint8 array of e4m3 bit patterns"):
        QlcCode.base().encode(symbols)


def test_encode_takes_bytes_and_any_shape():
    base = QlcCode.base()
    symbols = np.arange(256, dtype=np.uint8)
    assert base.encode(bytes(symbols)) == base.encode(symbols)
    assert base.encode(symbols.reshape(16, 16)) == base.encode(symbols)


@pytest.mark.parametrize("ranks, error, message", [
    (np.arange(255), QlcCodeError, "a rank table has 256 entries, one per symbol"),
    (np.r_[0, np.arange(255)], QlcCodeError,
     "a rank table is a permutation of 0..255, but rank 0 is given to symbols 0 and 1"),
    (np.arange(1, 257), QlcCodeError, "symbol 255 has rank 256; ranks are 0..255"),
    (np.arange(-1, 255), QlcCodeError, "symbol 0 has rank -1"),
    (np.arange(256.0), QlcCodeError, "a rank table holds integer ranks, not float64"),
])
def test_rank_table_refusals(ranks, error, message):
    with pytest.raises(error, match=message):
        QlcCode(BASE, ranks)


def test_code_refuses_a_non_layout():
    with pytest.raises(TypeError, match="layout must be a QlcLayout, not tuple"):
        QlcCode((BASE.suffix_bits, BASE.sizes), np.arange(256))


# -- round trips -----------------------------------------------------------------------

OPTIMAL = QlcCode.from_pmf(skewed_counts(3))
# Empty areas, so that some prefixes are invalid in themselves.
SPARSE = QlcCode(QlcLayout((0, 6, 6, 6, 6, 0, 0, 0), (1, 63, 64, 64, 64, 0, 0, 0)),
                 np.arange(256))



def streams(rng, size):
    yield "uniform", rng.integers(0, 256, size).astype(np.uint8)
    yield "geometric", np.minimum(rng.geometric(0.05, size) - 1, 255).astype(np.uint8)
    yield "sharp", np.minimum(rng.geometric(0.6, size) - 1, 255).astype(np.uint8)
    yield "all symbols", np.arange(256, dtype=np.uint8)
    yield "constant 0", np.zeros(size, dtype=np.uint8)
    yield "constant 255", np.full(size, 255, dtype=np.uint8)
    yield "alternating", np.resize(np.array([0, 255], np.uint8), size)
    yield "single", np.array([77], np.uint8)


@pytest.mark.parametrize("code", [
    QlcCode.base(),
    QlcCode.from_pmf(skewed_counts(1)),
    QlcCode.from_pmf(skewed_counts(2, p=0.5), layout=BASE),
    QlcCode(QlcLayout((0, 1, 2, 3, 4, 5, 6, 8), (1, 2, 4, 8, 16, 32, 64, 129)), np.arange(256)),
    QlcCode(QlcLayout((8, 0, 0, 0, 0, 0, 0, 0), (256, 0, 0, 0, 0, 0, 0, 0)), np.arange(256)),
], ids=["base", "optimal", "base-ranked", "eight-lengths", "one-area"])
def test_round_trips(code):
    rng = np.random.default_rng(5)
    for name, symbols in streams(rng, 60_001):
        data, nbits = code.encode(symbols)
        assert nbits == int(code.length_of[symbols].astype(np.int64).sum()), name
        assert np.array_equal(code.decode(data, nbits), symbols), name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts(), st.integers(0, 2**32 - 1), st.binary(max_size=300))
def test_random_layouts_round_trip(layout, seed, payload):
    code = QlcCode(layout, np.random.default_rng(seed).permutation(256))
    symbols = np.frombuffer(payload, dtype=np.uint8)
    data, nbits = code.encode(symbols)
    assert np.array_equal(code.decode(data, nbits), symbols)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["base", "optimal", "sparse"]), st.binary(max_size=120), st.data())
def test_random_bytes_decode_consistently_or_fail_cleanly(which, data, draw):
    code = {"base": QlcCode.base(), "optimal": OPTIMAL, "sparse": SPARSE}[which]
    nbits = draw.draw(st.integers(0, 8 * len(data)))
    try:
        symbols = code.decode(data, nbits)
    except QlcDecodeError as error:
        assert isinstance(error, (QlcInvalidCodeError, QlcTruncatedStreamError))
        assert 0 <= error.bit < nbits and f"at bit {error.bit}" in str(error)
        return
    again, again_nbits = code.encode(symbols)
    assert again_nbits == nbits
    assert bit_string(again, nbits) == bit_string(data, nbits)


# -- decode errors ---------------------------------------------------------------------

def test_invalid_suffix():
    # "000000" then "111" + 10101000 (suffix 168 of the 168-symbol area 7).
    data = bytes([0b00000011, 0b11010100, 0b00000000])
    with pytest.raises(QlcDecodeError, match="invalid code at bit 6: area 7 holds 168 symbols, "
                                             "so its suffix 168 \\(8 bits\\) is no code") as caught:
        QlcCode.base().decode(data, 17)
    assert isinstance(caught.value, QlcInvalidCodeError)
    assert isinstance(caught.value, InvalidCodeError) and isinstance(caught.value, BitstreamError)
    assert caught.value.bit == 6


def test_invalid_empty_area():
    with pytest.raises(QlcInvalidCodeError, match="invalid code at bit 0: area 5 is empty"):
        SPARSE.decode(b"\xa0", 3)  # "101"


def test_truncated_frame():
    data, nbits = QlcCode.base().encode(np.array([3, 88], np.uint8))  # 6 + 11 bits
    with pytest.raises(QlcDecodeError, match="truncated stream: code at bit 6 \\(area 7\\) needs "
                                             "11 bits but the frame ends at bit 16") as caught:
        QlcCode.base().decode(data, nbits - 1)
    assert isinstance(caught.value, QlcTruncatedStreamError)
    assert isinstance(caught.value, TruncatedStreamError)
    assert (caught.value.bit, caught.value.length, caught.value.nbits) == (6, 11, 16)
    # A prefix cut short reads as zeros: "11" then the end is a truncated area-6 code.
    with pytest.raises(QlcTruncatedStreamError, match="code at bit 0 \\(area 6\\) needs 8 bits"):
        QlcCode.base().decode(b"\xc0", 2)


def test_nbits_past_the_data():
    with pytest.raises(QlcDecodeError, match="nbits is 17 but the data holds only 16 bits"):
        QlcCode.base().decode(b"\x00\x00", 17)
    with pytest.raises(QlcDecodeError, match="nbits is -1"):
        QlcCode.base().decode(b"\x00", -1)


def test_pad_bits_and_extra_bytes_are_ignored():
    data, nbits = QlcCode.base().encode(np.array([9, 255], np.uint8))  # 17 bits
    noisy = data[:2] + bytes([data[2] | 0x7F]) + b"\xff\xff"
    assert QlcCode.base().decode(noisy, nbits).tolist() == [9, 255]


def test_long_frame_errors_name_the_right_bit():
    base = QlcCode.base()
    rng = np.random.default_rng(9)
    symbols = np.minimum(rng.geometric(0.1, 200_000) - 1, 255).astype(np.uint8)
    symbols[150_000] = 200  # an 11-bit area-7 code ...
    data, nbits = base.encode(symbols)
    start = int(base.length_of[symbols[:150_000]].astype(np.int64).sum())
    bits = np.unpackbits(np.frombuffer(data, np.uint8))
    bits[start:start + 11] = 1  # ... turned into suffix 255, past the area's 168
    with pytest.raises(QlcInvalidCodeError, match=f"invalid code at bit {start}: area 7 holds "
                                                  f"168 symbols, so its suffix 255"):
        base.decode(np.packbits(bits), nbits)


# -- optimal layout --------------------------------------------------------------------

def brute_force(weights, areas, prefix_bits, max_suffix_bits, max_lengths):
    """Cheapest cost over every (widths, sizes) assignment, by enumeration."""
    count = weights.size
    prefix = np.concatenate([[0.0], np.cumsum(weights)])
    best = np.inf
    for widths in itertools.product(range(max_suffix_bits + 1), repeat=areas):
        grids = np.indices([(1 << width) + 1 for width in widths]).reshape(areas, -1)
        grids = grids[:, grids.sum(axis=0) == count]
        if grids.size == 0:
            continue
        lengths = prefix_bits + np.array(widths)[:, None]
        # At most max_lengths distinct lengths among non-empty areas.
        used = (grids > 0)[:, None, :] & (lengths[:, None, :] == np.arange(
            prefix_bits, prefix_bits + max_suffix_bits + 1)[None, :, None])
        fits = used.any(axis=0).sum(axis=0) <= max_lengths
        bounds = np.vstack([np.zeros(grids.shape[1], int), np.cumsum(grids, axis=0)])
        costs = (lengths * (prefix[bounds[1:]] - prefix[bounds[:-1]])).sum(axis=0)
        if fits.any():
            best = min(best, costs[fits].min())
    return best


@pytest.mark.parametrize("seed, count, areas, max_suffix_bits, max_lengths", [
    (0, 9, 3, 3, 1), (1, 9, 3, 3, 2), (2, 12, 3, 3, 3), (3, 10, 4, 2, 1), (4, 10, 4, 2, 2),
    (5, 7, 4, 2, 3), (6, 12, 3, 3, 2), (7, 11, 4, 2, 2),
])
def test_optimiser_matches_brute_force(seed, count, areas, max_suffix_bits, max_lengths):
    rng = np.random.default_rng(seed)
    weights = np.sort(rng.choice([0, 1, 2, 3, 5, 8, 13, 40], count))[::-1].astype(float)
    widths, sizes, cost = optimal_areas(weights, areas=areas, prefix_bits=2,
                                        max_suffix_bits=max_suffix_bits,
                                        max_lengths=max_lengths)
    assert cost == pytest.approx(brute_force(weights, areas, 2, max_suffix_bits, max_lengths))
    # The layout it returns is legal and costs what it says.
    assert sum(sizes) == count and all(size <= 1 << width for width, size in zip(widths, sizes))
    assert len({width for width, size in zip(widths, sizes) if size}) <= max_lengths
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    prefix = np.concatenate([[0.0], np.cumsum(weights)])
    assert cost == pytest.approx(sum((2 + width) * (prefix[b] - prefix[a])
                                     for width, a, b in zip(widths, bounds[:-1], bounds[1:])))


def sorted_fill_optimum(weights, max_lengths):
    """Cheapest layout with non-decreasing widths, each area full but the last: an
    optimum by an exchange argument, found here by enumerating all such layouts."""
    prefix = np.concatenate([[0.0], np.cumsum(weights)])
    widths = np.array(list(itertools.combinations_with_replacement(range(9), 8)))
    bounds = np.minimum(np.cumsum(1 << widths, axis=1), 256)
    bounds = np.hstack([np.zeros((len(widths), 1), int), bounds])
    sizes = np.diff(bounds, axis=1)
    used = np.zeros(len(widths), dtype=np.int64)
    for area in range(8):
        used |= np.where(sizes[:, area] > 0, 1 << widths[:, area], 0)
    distinct = np.array([bin(mask).count("1") for mask in used])
    feasible = (bounds[:, -1] == 256) & (distinct <= max_lengths)
    costs = ((3 + widths) * (prefix[bounds[:, 1:]] - prefix[bounds[:, :-1]])).sum(axis=1)
    return costs[feasible].min() / weights.sum()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_lengths", [1, 2, 4, 8])
def test_optimal_layout_full_size(seed, max_lengths):
    rng = np.random.default_rng(seed)
    pmf = [skewed_counts(seed), rng.random(256) ** 8, np.ones(256),
           np.r_[np.full(20, 1000.0), np.zeros(236)]][seed]
    layout, bits = optimal_layout(pmf, max_lengths=max_lengths)
    assert layout.distinct_lengths <= max_lengths
    assert bits == pytest.approx(layout.expected_bits(pmf))
    ranked = np.sort(pmf.astype(float))[::-1]
    assert bits == pytest.approx(sorted_fill_optimum(ranked, max_lengths), rel=1e-12)
    if max_lengths >= 4:
        assert bits <= BASE.expected_bits(pmf) + 1e-12


def test_optimal_layout_single_length_is_fixed_8_bits():
    layout, bits = optimal_layout(skewed_counts(4), max_lengths=1)
    assert layout == QlcLayout((5,) * 8, (32,) * 8)
    assert bits == 8.0


def test_optimal_layout_adapts_to_a_frequent_zero():
    pmf = np.ones(256)
    pmf[0] = 2000.0  # zero is most of the traffic
    layout, bits = optimal_layout(pmf)
    assert layout.suffix_bits[0] == 0 and layout.sizes[0] == 1  # a 3-bit code for zero
    code = QlcCode.from_pmf(pmf)
    assert (int(code.code_of[0]), int(code.length_of[0])) == (0, 3)
    assert bits < BASE.expected_bits(pmf)
    assert code.expected_bits(pmf) == pytest.approx(bits)


def test_optimal_layout_empty_areas_trail():
    one_symbol = np.zeros(256)
    one_symbol[7] = 1
    layout, bits = optimal_layout(one_symbol)
    assert bits == 3.0 and layout.sizes[0] == 1
    used = [size > 0 for size in layout.sizes]
    assert used == sorted(used, reverse=True)


def test_optimal_layout_refusals():
    with pytest.raises(QlcLayoutError, match="max_lengths is 0; a layout has at least one code "
                                             "length"):
        optimal_layout(np.ones(256), max_lengths=0)
    with pytest.raises(TypeError, match="max_lengths must be an integer"):
        optimal_layout(np.ones(256), max_lengths=2.5)


def test_from_pmf_uses_the_optimal_layout_unless_given_one():
    counts = skewed_counts(8)
    assert QlcCode.from_pmf(counts).layout == optimal_layout(counts)[0]
    code = QlcCode.from_pmf(counts, layout=BASE)
    assert code.layout == BASE and np.array_equal(code.symbol_to_rank, rank_table(counts))


def test_expected_bits_match_encoded_frames():
    counts = skewed_counts(10)
    code = QlcCode.from_pmf(counts)
    symbols = np.repeat(np.arange(256, dtype=np.uint8), counts)
    _, nbits = code.encode(symbols)
    assert nbits / symbols.size == pytest.approx(code.expected_bits(counts), rel=1e-12)


# -- compressibility -------------------------------------------------------------------

def test_compressibility():
    assert compressibility(6.0) == 0.25
    assert compressibility(8) == 0.0
    assert compressibility(12, raw_bits=16) == 0.25
    assert compressibility(9.59375) == pytest.approx(-0.19921875)
    with pytest.raises(ValueError, match="bits_per_symbol is -1.0; it must be a finite number "
                                         ">= 0"):
        compressibility(-1)
    with pytest.raises(ValueError, match="raw_bits is 0.0; it must be a finite number > 0"):
        compressibility(6, raw_bits=0)
    with pytest.raises(TypeError, match="must be numbers"):
        compressibility("six")
