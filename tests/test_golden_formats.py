"""Tests of ``golden/formats.py``: e4m3 casts and the PMF of e4m3 batches at a new scale."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from linkcodec.golden.formats import (E4M3_MAX, FormatError, e4m3_bits_to_float,
                                      e4m3_pmf_at_scale, to_e4m3_bits)
from linkcodec.golden.huffman import average_pmf, smooth_pmf


def gelu(x):
    return 0.5 * x * (1 + np.array([math.erf(v) for v in (x / math.sqrt(2)).tolist()]))


def cast(values, scale):
    """e4m3 bits of ``values * scale`` (the scale given, not the tensor's own)."""
    return (values * scale).astype(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)


def kl_bits(truth, model):
    """KL divergence of ``truth`` from ``model`` smoothed as a codebook smooths it."""
    model, seen = smooth_pmf(model), truth > 0
    return float(np.sum(truth[seen] * np.log2(truth[seen] / model[seen])))


def histogram(symbols):
    return np.bincount(symbols, minlength=256)


def test_to_e4m3_bits_maps_amax_to_448():
    values = np.array([-3.0, 0.5, 1.5, 0.0], dtype=np.float32)
    bits = to_e4m3_bits(values)
    np.testing.assert_array_equal(e4m3_bits_to_float(bits),
                                  np.array([-448, 74.666664, 224, 0], np.float32)
                                  .astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
    assert e4m3_bits_to_float(bits).max() == E4M3_MAX / 2 and bits[0] == 0xFE


def test_same_scale_is_the_plain_average():
    rng = np.random.default_rng(1)
    batches = [rng.integers(0, 256, 1000).astype(np.uint8) for _ in range(3)]
    plain, _, _ = average_pmf(batches)
    at_scale = e4m3_pmf_at_scale([histogram(b) for b in batches], [3.5] * 3, 3.5)
    np.testing.assert_array_equal(at_scale, plain)


def test_a_scale_change_is_followed():
    """Post-GELU values (a pile at GELU's minimum, -0.17) cast with a different amax per
    batch, as per-tensor amax scaling does. The PMF of the earlier batches, carried to the
    new batch's scale, is close to the new batch's own PMF; their plain average is not.
    The fit (50 iterations) beats spreading each code evenly over its interval (0)."""
    rng = np.random.default_rng(5)
    values = [gelu(rng.standard_normal(50_000)) for _ in range(4)]
    scales = [E4M3_MAX / amax for amax in (4.0, 4.6, 5.2, 3.7)]
    batches = [cast(v, s) for v, s in zip(values, scales)]
    truth = histogram(batches[3]) / batches[3].size
    earlier = [histogram(b) for b in batches[:3]]
    plain, _, _ = average_pmf(batches[:3])
    fitted = e4m3_pmf_at_scale(earlier, scales[:3], scales[3])
    spread = e4m3_pmf_at_scale(earlier, scales[:3], scales[3], iterations=0)
    assert fitted.sum() == pytest.approx(1) and fitted.min() >= 0
    assert kl_bits(truth, fitted) < 0.03 < 0.3 < kl_bits(truth, plain)
    assert kl_bits(truth, fitted) < kl_bits(truth, spread)


def test_values_move_to_the_code_of_the_new_scale():
    """One code's weight at scale 1 lands on the code of the same value at scale 2 (a
    code one binade up: +8), for each sign; weight above 448 saturates onto 448."""
    pmf = np.zeros(256)
    pmf[[0x30, 0xB0]] = 1                       # +-1.0
    moved = e4m3_pmf_at_scale([pmf], [1.0], 2.0)
    assert moved[0x38] + moved[0x37] + moved[0x39] == pytest.approx(0.5)
    assert moved[0xB8] + moved[0xB7] + moved[0xB9] == pytest.approx(0.5)
    top = np.zeros(256)
    top[0x7E] = 1                                # 448 at scale 1 is above 448 at scale 4
    assert e4m3_pmf_at_scale([top], [1.0], 4.0)[0x7E] == pytest.approx(1)


def test_extreme_scales_stay_finite():
    pmf = np.ones((2, 256))
    for scales, scale in [([2.0 ** -126, 1.0], 2.0 ** 127), ([2.0 ** 127, 1.0], 2.0 ** -126)]:
        moved = e4m3_pmf_at_scale(pmf, scales, scale)
        assert np.isfinite(moved).all() and moved.sum() == pytest.approx(1)


def test_nan_codes_keep_their_weight():
    pmf = np.zeros(256)
    pmf[[0x7F, 0x40, 0xFF]] = [1, 2, 1]
    moved = e4m3_pmf_at_scale([pmf], [1.0], 1.5)
    assert moved[0x7F] == moved[0xFF] == 0.25 and moved.sum() == pytest.approx(1)


@pytest.mark.parametrize("pmfs, scales, scale, iterations, message", [
    (np.ones((2, 256)), [1.0], 1.0, 5, "1 scales for 2 batches"),
    (np.ones((1, 255)), [1.0], 1.0, 5, r"\(batches, 256\) array, not shape \(1, 255\)"),
    (np.zeros((1, 256)), [1.0], 1.0, 5, "not all zero"),
    (-np.ones((1, 256)), [1.0], 1.0, 5, ">= 0"),
    (np.ones((1, 256)), [0.0], 1.0, 5, "a batch scale is 0.0; a scale must be > 0"),
    (np.ones((1, 256)), [1.0], 1e300, 5, r"target scale is 1e\+300; .* normal range"),
    (np.ones((1, 256)), [5e-324], 1.0, 5, "a batch scale is 5e-324"),
    (np.ones((1, 256)), [1.0], float("nan"), 5, "the target scale is nan"),
    (np.ones((1, 256)), [1.0], float("inf"), 5, "the target scale is inf"),
    (np.ones((1, 256)), ["x"], 1.0, 5, "a batch scale must be a number, not str"),
    (np.ones((1, 256)), [1.0], 2.0, -1, "iterations must be an integer >= 0"),
    (np.ones((1, 256)), [1.0], 2.0, 2.5, "iterations must be an integer >= 0"),
])
def test_bad_arguments_are_refused(pmfs, scales, scale, iterations, message):
    with pytest.raises(FormatError, match=message):
        e4m3_pmf_at_scale(pmfs, scales, scale, iterations)


@settings(max_examples=60, deadline=None)
@given(counts=hnp.arrays(np.int64, st.tuples(st.integers(1, 4), st.just(256)),
                         elements=st.integers(0, 1000)),
       exponents=st.lists(st.floats(-20, 20), min_size=5, max_size=5),
       iterations=st.integers(0, 30))
def test_any_history_gives_a_pmf(counts, exponents, iterations):
    """Whatever the histories and scales: a PMF (finite, >= 0, sum 1), and the same one
    when computed again."""
    assume(counts.any(axis=1).all())
    scales = [2.0 ** e for e in exponents[:counts.shape[0]]]
    pmf = e4m3_pmf_at_scale(counts, scales, 2.0 ** exponents[4], iterations)
    assert np.isfinite(pmf).all() and (pmf >= 0).all() and pmf.sum() == pytest.approx(1)
    np.testing.assert_array_equal(
        pmf, e4m3_pmf_at_scale(counts, scales, 2.0 ** exponents[4], iterations))
