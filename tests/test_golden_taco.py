"""TACO front end golden model: Hadamard, known answers, error bounds, baselines, refusals."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from linkcodec.bundled import bundled_files
from linkcodec.golden.formats import e4m3_bits_to_float, to_e4m3_bits
from linkcodec.golden.taco import (
    TacoError, TacoFrame, compressibility_of_codes, dequantize, error_stats,
    fp8_per_tensor, int8_per_tensor, outlier_sweep, quantize, report_markdown,
    taco_error_table, walsh_hadamard,
)


def sylvester(n):
    """Reference Hadamard by Kronecker products, independent of the butterflies."""
    matrix = np.ones((1, 1))
    while matrix.shape[0] < n:
        matrix = np.kron(np.array([[1.0, 1.0], [1.0, -1.0]]), matrix)
    return matrix / np.sqrt(n)


def gaussian_with_outliers(factor=100.0, *, seed=0, shape=(64, 512), channels=4):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape).astype(np.float32)
    values[:, rng.choice(shape[1], size=channels, replace=False)] *= np.float32(factor)
    return values


# --- the rotation ------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 32, 64, 128, 256])
def test_hadamard_is_orthogonal_sylvester(n):
    rows = walsh_hadamard(np.eye(n))  # row i is H e_i, i.e. column i of H
    np.testing.assert_allclose(rows @ rows.T, np.eye(n), atol=1e-12)
    np.testing.assert_allclose(rows, sylvester(n), atol=1e-12)
    np.testing.assert_array_equal(rows, rows.T)


def test_hadamard_is_its_own_inverse_over_many_blocks():
    values = np.random.default_rng(1).standard_normal((3, 5, 7, 64))
    rotated = walsh_hadamard(values)
    np.testing.assert_allclose(walsh_hadamard(rotated), values, atol=1e-12)
    np.testing.assert_allclose(np.sum(rotated**2, axis=-1), np.sum(values**2, axis=-1))


def test_hadamard_refuses_other_lengths():
    with pytest.raises(TacoError, match="Hadamard length must be a power of two, not 12"):
        walsh_hadamard(np.zeros(12))


# --- known answers -----------------------------------------------------------------------

def test_block_of_two_by_hand():
    # x = (5, 1): mean x^2 = 13, alpha = 1/sqrt(13); z = alpha * (6, 4) / sqrt(2);
    # scale = 448 / z0, so scale * z = (448, 298.67) -> e4m3 (448, 288) = (0x7E, 0x79).
    frame = quantize(np.array([[5.0, 1.0]], dtype=np.float32), block=2)
    assert frame.codes.tolist() == [[0x7E, 0x79]]
    assert frame.alpha.dtype == np.float32 and frame.scale.dtype == np.float32
    assert frame.alpha.shape == frame.scale.shape == (1, 1)
    assert frame.alpha[0, 0] == np.float32(1 / np.sqrt(13))
    assert frame.scale[0, 0] == np.float32(448 * np.sqrt(26) / 6)
    assert frame.block == 2 and frame.shape == (1, 2)
    # z' is proportional to (448, 288) = 32 * (14, 9); H z' to (23, 5); x0 + x1 = 6 fixes
    # the factor: x' = (69/14, 15/14).
    np.testing.assert_allclose(dequantize(frame), [[69 / 14, 15 / 14]], rtol=1e-6)


def test_block_of_two_exact_on_the_grid():
    # (3, 4) rotates to (1.4, -0.2), scale 320: (448, -64) = (0x7E, 0xE8), no rounding.
    frame = quantize(np.array([3.0, 4.0], dtype=np.float32), block=2)
    assert frame.codes.tolist() == [0x7E, 0xE8]
    assert frame.scale.tolist() == [320.0]
    np.testing.assert_allclose(dequantize(frame), [3.0, 4.0], rtol=1e-6)


def test_rotation_spreads_a_spike_over_its_block():
    frame = quantize(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), block=4)
    assert frame.codes.tolist() == [0x7E] * 4  # all four at +448
    assert frame.alpha.tolist() == [2.0] and frame.scale.tolist() == [448.0]
    np.testing.assert_array_equal(dequantize(frame), [1.0, 0.0, 0.0, 0.0])


def test_all_zero_block_has_unit_scales():
    values = np.zeros((2, 8), dtype=np.float32)
    values[1, 4:] = [1, -2, 3, -4]
    frame = quantize(values, block=4)
    assert frame.alpha[0].tolist() == [1.0, 1.0] and frame.scale[0].tolist() == [1.0, 1.0]
    assert frame.alpha[1, 0] == 1.0 and frame.alpha[1, 1] != 1.0
    assert not np.any(frame.codes[0] & 0x7F)  # +-0
    np.testing.assert_array_equal(dequantize(frame)[0], 0.0)


def test_target_energy_moves_alpha_not_codes():
    values = gaussian_with_outliers(seed=2)
    unit = quantize(values, block=64)
    four = quantize(values, block=64, target_energy=4.0)
    np.testing.assert_allclose(four.alpha, 2 * unit.alpha, rtol=1e-6)
    np.testing.assert_allclose(four.scale, unit.scale / 2, rtol=1e-6)
    # Float32 rounding of the scales may move a code by one step, rarely.
    assert np.mean(four.codes == unit.codes) > 0.99


# --- error -------------------------------------------------------------------------------

def test_round_trip_error_is_small_on_gaussian_with_outliers():
    values = gaussian_with_outliers(100.0)
    frame = quantize(values)
    assert frame.codes.shape == values.shape and frame.codes.dtype == np.uint8
    assert frame.alpha.shape == (64, 4)
    restored = dequantize(frame)
    assert restored.dtype == np.float32 and restored.shape == values.shape
    assert error_stats(values, restored)["rel_rms"] < 0.05


def test_taco_beats_per_tensor_fp8_on_heavy_outliers():
    values = gaussian_with_outliers(100.0, shape=(256, 1024))
    taco = error_stats(values, dequantize(quantize(values)))["rel_rms"]
    fp8 = error_stats(values, fp8_per_tensor(values))["rel_rms"]
    assert taco < 0.95 * fp8


def test_outliers_leak_into_their_blocks():
    """The other side of the rotation: in a block with an outlier, every value's error
    grows to the outlier's scale. Over the non-outlier channels FP8 wins clearly."""
    row = outlier_sweep([100], shape=(64, 1024))[0]
    assert row["taco_rel_rms"] < row["fp8_rel_rms"]
    assert row["taco_bulk_rel_rms"] > 3 * row["fp8_bulk_rel_rms"]


magnitudes = st.one_of(st.just(0.0), st.floats(2.0**-10, 2.0**20, width=32))
signed = st.tuples(magnitudes, st.booleans()).map(lambda p: -p[0] if p[1] else p[0])


@settings(max_examples=60, deadline=None)
@given(log_block=st.integers(0, 6), rows=st.integers(1, 3), blocks=st.integers(1, 3),
       data=st.data())
def test_block_error_within_half_an_e4m3_step(log_block, rows, blocks, data):
    block = 1 << log_block
    values = data.draw(hnp.arrays(np.float32, (rows, blocks * block), elements=signed))
    frame = quantize(values, block=block)
    codes = frame.codes
    assert not np.any((codes & 0x7F) == 0x7F)  # no NaN patterns
    assert np.all(np.abs(e4m3_bits_to_float(codes)) <= 448)
    restored = dequantize(frame).astype(np.float64).reshape(rows, blocks, block)
    original = values.astype(np.float64).reshape(rows, blocks, block)
    error = np.sqrt(np.sum((restored - original) ** 2, axis=-1))
    norm = np.sqrt(np.sum(original**2, axis=-1))
    # Half an e4m3 step is at most 1/16 of a normal value; the rotation keeps L2 norms.
    # The margin covers subnormals (<= 2^-10 of 448 per value) and float32 rounding.
    assert np.all(error <= norm * (1 / 16 + 1e-4))


def test_codes_are_valid_e4m3_on_real_data():
    values = e4m3_bits_to_float(np.load(bundled_files("ffn2_grad", layers=[0])[0]))
    codes = quantize(values).codes
    assert not np.any((codes & 0x7F) == 0x7F)
    assert np.array_equal(codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32),
                          e4m3_bits_to_float(codes))
    assert np.max(np.abs(e4m3_bits_to_float(codes))) == 448
    # Every block that holds a non-zero value reaches 448; an all-zero block stays zero.
    block_max = np.max(np.abs(e4m3_bits_to_float(codes)).reshape(-1, 128), axis=1)
    input_max = np.max(np.abs(values).reshape(-1, 128), axis=1)
    assert np.all(block_max[input_max > 0] == 448) and np.all(block_max[input_max == 0] == 0)


# --- baselines and statistics ------------------------------------------------------------

def test_fp8_per_tensor_matches_the_capture_cast():
    values = np.random.default_rng(4).standard_normal((8, 16)).astype(np.float32)
    bits = to_e4m3_bits(values).reshape(values.shape)
    amax = np.max(np.abs(values))
    np.testing.assert_array_equal(
        fp8_per_tensor(values), e4m3_bits_to_float(bits) / np.float32(448 / amax))
    on_grid = e4m3_bits_to_float(bits)  # amax already 448: comes back unchanged
    np.testing.assert_array_equal(fp8_per_tensor(on_grid), on_grid)


def test_int8_per_tensor_rounds_half_to_even():
    values = np.array([127.0, 0.5, 1.5, 2.5, -2.5, -127.0], dtype=np.float32)
    assert int8_per_tensor(values).tolist() == [127, 0, 2, 2, -2, -127]
    np.testing.assert_array_equal(int8_per_tensor(np.zeros(3, np.float32)), 0.0)


def test_error_stats():
    stats = error_stats([3.0, -4.0], [3.0, -3.0])
    assert stats == {"rel_rms": pytest.approx(0.2), "max_abs": 1.0, "rel_max": 0.25}
    assert error_stats([0.0, 0.0], [0.0, 0.0]) == {"rel_rms": 0.0, "max_abs": 0.0,
                                                   "rel_max": 0.0}
    assert error_stats([0.0], [1.0])["rel_rms"] == float("inf")
    with pytest.raises(TacoError, match=r"shapes differ: \(2,\) and \(3,\)"):
        error_stats([1.0, 2.0], [1.0, 2.0, 3.0])


def test_compressibility_of_codes():
    assert compressibility_of_codes(np.arange(256, dtype=np.uint8)) == 8.0
    assert compressibility_of_codes(np.full(10, 0x7E, dtype=np.uint8)) == 0.0
    assert compressibility_of_codes(np.array([1, 2], dtype=np.uint8)) == 1.0
    with pytest.raises(TacoError, match="must be uint8"):
        compressibility_of_codes(np.zeros(4, dtype=np.int16))


# --- real tensors ------------------------------------------------------------------------

def test_error_table_on_bundled_tensors(tmp_path):
    files = (bundled_files("ffn1_act", layers=[0, 1]) + bundled_files("ffn1_grad", layers=[0]))
    floats = tmp_path / "minilm_l0_ffn9_act_s0.npy"
    np.save(floats, gaussian_with_outliers(10.0, shape=(4, 256)))
    groups = {"ffn1_act": files[:8], "ffn1_grad": files[8:], "ffn9_act": [floats]}
    rows = {row["kind"]: row for row in taco_error_table(groups)}
    assert list(rows) == ["ffn1_act", "ffn1_grad", "ffn9_act"]
    act = rows["ffn1_act"]
    assert act["files"] == 8 and act["values"] == 8 * 64 * 384   # 2 layers x 4 steps
    # The sample's values are e4m3 already: per-tensor FP8 loses little or nothing.
    assert 0.0 <= act["fp8_rel_rms"] < 0.05
    assert 0 < act["taco_rel_rms"] < 0.05 and 0 < act["int8_rel_rms"]
    assert 0 < act["taco_entropy"] < 8 and 0 < act["input_entropy"] < 8
    assert act["scale_bits_per_value"] == 0.5
    assert rows["ffn9_act"]["input_entropy"] is None


def test_report_markdown_renders_the_tables():
    text = report_markdown({"ffn2_act": bundled_files("ffn2_act", layers=[5])})
    assert "| ffn2_act | 4 | 393216 |" in text      # 4 steps x 64 tokens x 1536
    assert text.count("\n|---") == 3 and "Synthetic" in text


# --- refusals ----------------------------------------------------------------------------

@pytest.mark.parametrize("block", [0, 3, 96, -128, 2.0, True])
def test_refuses_block_that_is_no_power_of_two(block):
    with pytest.raises(TacoError, match=rf"block must be a power of two, not {block!r}"):
        quantize(np.zeros((2, 384), dtype=np.float32), block=block)


def test_refuses_shape_that_does_not_divide():
    with pytest.raises(TacoError, match="last dimension 100 is not a multiple of block 64"):
        quantize(np.zeros((2, 100), dtype=np.float32), block=64)
    with pytest.raises(TacoError, match="at least one axis"):
        quantize(np.float32(1.0))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_refuses_non_finite_input(bad):
    values = np.ones(128, dtype=np.float32)
    values[5] = bad
    with pytest.raises(TacoError, match="holds Inf or NaN"):
        quantize(values)
    with pytest.raises(TacoError, match="holds Inf or NaN"):
        fp8_per_tensor(values)


def test_refuses_other_bad_input():
    with pytest.raises(TacoError, match="must be floating point, not int32"):
        quantize(np.zeros(128, dtype=np.int32))
    with pytest.raises(TacoError, match="beyond the float32 range"):
        quantize(np.full(128, 1e300))
    with pytest.raises(TacoError, match="target_energy must be positive"):
        quantize(np.ones(128, np.float32), target_energy=0.0)
    tiny = np.zeros(128, dtype=np.float32)
    tiny[3] = 1e-44  # rms ~1e-45: alpha ~1e45 is beyond float32
    with pytest.raises(TacoError, match=r"block \(0,\): alpha = .* does not fit"):
        quantize(tiny)


def test_dequantize_refuses_inconsistent_frames():
    frame = quantize(np.arange(1, 9, dtype=np.float32), block=4)

    def changed(**fields):
        return TacoFrame(**{**frame.__dict__, **fields})

    with pytest.raises(TacoError, match=r"codes must be uint8 of shape \(8,\)"):
        dequantize(changed(codes=frame.codes[:4]))
    with pytest.raises(TacoError, match=r"alpha must have shape \(2,\)"):
        dequantize(changed(alpha=frame.alpha[:1]))
    with pytest.raises(TacoError, match="scale must be positive and finite"):
        dequantize(changed(scale=np.array([1.0, 0.0], dtype=np.float32)))
    codes = frame.codes.copy()
    codes[2] = 0xFF
    with pytest.raises(TacoError, match="NaN patterns"):
        dequantize(changed(codes=codes))
    with pytest.raises(TacoError, match="block must be a power of two, not 3"):
        dequantize(changed(block=3))
