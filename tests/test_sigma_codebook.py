"""bf16 codebooks that follow the sigma (docs/huffman.md, "bf16 values"): the earlier
batches brought to the sigma of the values to come by a power of two before the codebook
is built. `golden/formats.py` (bf16_sigma, sigma_shift, bf16_times_power_of_two),
`HuffmanCodebook.from_batches(..., sigma=...)` and `codebook build --sigma/--sigma-of`."""

import math

import ml_dtypes
import numpy as np
import pytest

from linkcodec.bundled import bundled_bf16_files
from linkcodec.cli import main
from linkcodec.golden.formats import (FormatError, bf16_sigma, bf16_times_power_of_two,
                                      check_sigma, sigma_shift)
from linkcodec.golden.huffman import HuffmanCodebook, HuffmanCodebookError, batches_at_sigma


def bf16(values):
    return np.asarray(values, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)


def floats(bits):
    return bits.view(ml_dtypes.bfloat16).astype(np.float64)


def test_bf16_sigma_is_the_std_of_the_finite_values():
    values = bf16([1.0, -3.0, 0.5, np.inf, -np.inf, np.nan, 2.0])
    assert bf16_sigma(values) == float(np.std([1.0, -3.0, 0.5, 2.0]))
    # Two different finite values are the fewest that have a sigma; one is not enough.
    assert bf16_sigma(bf16([1.0, 2.0, np.nan])) == 0.5
    with pytest.raises(FormatError, match="all equal .* their sigma is 0"):
        bf16_sigma(bf16([2.0, 2.0, np.inf]))
    with pytest.raises(FormatError, match="no finite values"):
        bf16_sigma(bf16([np.nan, np.inf]))
    with pytest.raises(FormatError, match="no finite values"):
        bf16_sigma(np.zeros(0, np.uint16))
    with pytest.raises(FormatError, match="uint16 bit patterns, not uint8"):
        bf16_sigma(np.zeros(4, np.uint8))


def test_check_sigma_takes_finite_positive_numbers_only():
    assert check_sigma(5e-324) == 5e-324          # the smallest positive float
    assert check_sigma(np.float32(2.5)) == 2.5
    for bad in (0.0, -0.0, -1e-300, math.inf, math.nan):
        with pytest.raises(FormatError, match="must be finite and > 0"):
            check_sigma(bad)
    with pytest.raises(FormatError, match="sigma must be a number, not str"):
        check_sigma("wide")


@pytest.mark.parametrize("ratio, shift", [
    (1.0, 0), (8.0, 3), (0.125, -3),
    # A half power of two is the boundary: just below it rounds down, just above up.
    (2 ** 0.5 * (1 - 1e-12), 0), (2 ** 0.5 * (1 + 1e-12), 1),
    (2 ** -0.5 * (1 + 1e-12), 0), (2 ** -0.5 * (1 - 1e-12), -1),
    (2 ** 2.5 * (1 - 1e-12), 2), (2 ** 2.5 * (1 + 1e-12), 3),
])
def test_sigma_shift_is_the_nearest_power_of_two_on_a_log_scale(ratio, shift):
    assert sigma_shift(1e-3, 1e-3 * ratio) == shift


def test_sigma_shift_refuses_a_bad_sigma():
    with pytest.raises(FormatError, match="the target sigma is 0.0"):
        sigma_shift(1.0, 0.0)
    with pytest.raises(FormatError, match="sigma is nan"):
        sigma_shift(math.nan, 1.0)


def test_a_power_of_two_moves_the_exponent_and_nothing_else():
    rng = np.random.default_rng(3)
    values = bf16(rng.normal(0, 1e-3, 4096))
    for shift in (-5, -1, 0, 1, 7):
        out = bf16_times_power_of_two(values, shift)
        assert np.array_equal(floats(out), floats(values) * 2.0 ** shift)
        normal = (values & 0x7F80) != 0
        # Sign and mantissa bits unchanged; the exponent field moved by the shift.
        assert np.array_equal(out[normal] & 0x807F, values[normal] & 0x807F)
        assert np.array_equal((out[normal] >> 7 & 0xFF).astype(int),
                              (values[normal] >> 7 & 0xFF).astype(int) + shift)
    # At bf16's edges: the largest finite value doubled is infinity, the smallest normal
    # halved is a subnormal, and zero, infinity and NaN keep their class.
    edges = np.array([0x7F7F, 0xFF7F, 0x0080, 0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0],
                     np.uint16)
    doubled = bf16_times_power_of_two(edges, 1)
    assert list(doubled[:2]) == [0x7F80, 0xFF80]
    assert list(bf16_times_power_of_two(edges[:3], 0)) == [0x7F7F, 0xFF7F, 0x0080]
    assert bf16_times_power_of_two(edges[2:3], -1)[0] == 0x0040
    assert list(doubled[3:7]) == [0x0000, 0x8000, 0x7F80, 0xFF80]
    assert np.isnan(floats(doubled[7:]))[0]
    assert list(bf16_times_power_of_two(edges[:2], 10_000)) == [0x7F80, 0xFF80]
    assert list(bf16_times_power_of_two(edges[:3], -10_000)) == [0x0000, 0x8000, 0x0000]
    with pytest.raises(FormatError, match="not float32"):
        bf16_times_power_of_two(np.ones(2, np.float32), 1)


def test_batches_are_brought_to_the_sigma_by_a_power_of_two():
    rng = np.random.default_rng(5)
    narrow, wide = bf16(rng.normal(0, 1e-3, 8192)), bf16(rng.normal(0, 3.5e-3, 8192))
    zeros = np.zeros(64, np.uint16)
    scaled, shifts = batches_at_sigma([narrow, wide, zeros, np.zeros(0, np.uint16)],
                                      2.1e-3)
    # 2.1 / 1 is nearest 2 (shift 1), 2.1 / 3.5 nearest 1/2 (shift -1); a batch with no
    # sigma (all zero, or empty) is taken as it is.
    assert shifts == [1, -1, 0, 0]
    assert np.array_equal(floats(scaled[0]), 2 * floats(narrow))
    assert np.array_equal(floats(scaled[1]), floats(wide) / 2)
    assert np.array_equal(scaled[2], zeros) and scaled[3].size == 0
    with pytest.raises(HuffmanCodebookError, match="sigma is -1.0"):
        batches_at_sigma([narrow], -1.0)
    with pytest.raises(TypeError, match="uint16 array of bf16 bit patterns, not uint8"):
        batches_at_sigma([np.zeros(3, np.uint8)], 1.0)


def test_a_codebook_that_follows_the_sigma_codes_a_wider_tensor_better():
    """History at sigma 1e-3, the tensor to code at 2e-3: the codebook that follows the
    sigma is the history's doubled, and it codes the new tensor within a hair of its own
    codebook and well below the plain one."""
    rng = np.random.default_rng(11)
    history = [bf16(rng.normal(0, 1e-3, 20_000)) for _ in range(3)]
    late = bf16(rng.normal(0, 2e-3, 20_000))
    plain = HuffmanCodebook.from_batches(history, value_bits=16)
    follows = HuffmanCodebook.from_batches(history, value_bits=16, sigma=bf16_sigma(late))
    doubled = HuffmanCodebook.from_batches(
        [bf16_times_power_of_two(batch, 1) for batch in history], value_bits=16)
    assert np.array_equal(follows.lengths, doubled.lengths)
    assert follows.escape_length == doubled.escape_length
    assert not np.array_equal(follows.lengths, plain.lengths)
    own = HuffmanCodebook.from_batches([late], value_bits=16)
    bits = {name: book.encode(late)[1] for name, book in
            (("plain", plain), ("follows", follows), ("own", own))}
    data, nbits = follows.encode(late)
    assert np.array_equal(follows.decode(data, nbits), late)
    assert bits["follows"] < 0.97 * bits["plain"]
    assert bits["follows"] < 1.01 * bits["own"]
    # The source says what was done, and a saved codebook keeps it.
    assert follows.source["sigma"] == bf16_sigma(late)
    assert follows.source["shifts"] == [1, 1, 1]
    assert "at one sigma" in follows.source["built_by"]
    again = HuffmanCodebook.from_json(follows.to_json())
    assert again == follows and again.source["shifts"] == [1, 1, 1]


def test_sigma_is_refused_where_it_means_nothing():
    batch = bf16([1.0, 2.0, 3.0])
    with pytest.raises(HuffmanCodebookError, match="sigma is for bf16 values"):
        HuffmanCodebook.from_batches([np.arange(8, dtype=np.uint8)], sigma=1.0)
    with pytest.raises(HuffmanCodebookError, match="scales .* or sigma .*, not both"):
        HuffmanCodebook.from_batches([batch], value_bits=16, sigma=1.0, scales=[1.0],
                                     scale=1.0)
    with pytest.raises(HuffmanCodebookError, match="sigma is 0.0"):
        HuffmanCodebook.from_batches([batch], value_bits=16, sigma=0.0)


def test_codebook_build_follows_the_sigma_of_a_tensor(tmp_path, capsys):
    files = bundled_bf16_files("ffn1_grad", layers=[4])
    late = np.load(files[3]).reshape(-1)
    out = tmp_path / "book.json"
    earlier = [str(path) for path in files[:3]]
    assert main(["codebook", "build", "--value-bits", "16", "--from", *earlier,
                 "--sigma-of", str(files[3]), "-o", str(out)]) == 0
    book = HuffmanCodebook.load(out)
    steps = [np.load(path).reshape(-1) for path in files[:3]]
    assert book == HuffmanCodebook.from_batches(steps, value_bits=16,
                                                sigma=bf16_sigma(late))
    # Known answer: steps 0-2 of this layer have sigmas 0.53e-3 to 0.69e-3, step 3
    # 1.05e-3: each is doubled.
    assert book.source["shifts"] == [1, 1, 1]
    printed = capsys.readouterr().out
    assert "at sigma 0.00105" in printed and "(powers of two +1, +1, +1)" in printed
    assert main(["codebook", "build", "--value-bits", "16", "--from", *earlier,
                 "--sigma", str(bf16_sigma(late)), "-o", str(tmp_path / "same.json")]) == 0
    assert HuffmanCodebook.load(tmp_path / "same.json") == book
    capsys.readouterr()
    for args, message in [
            (["--sigma", "1e-3"], "give --value-bits 16"),
            (["--sigma-of", str(files[3])], "give --value-bits 16"),
            (["--value-bits", "16", "--sigma", "1e-3", "--sigma-of", str(files[3])],
             "--sigma or --sigma-of, not both"),
            (["--value-bits", "16", "--sigma", "0"], "sigma is 0.0"),
            (["--value-bits", "16", "--sigma", "nan"], "sigma is nan")]:
        assert main(["codebook", "build", "--from", *earlier, *args, "-o",
                     str(tmp_path / "bad.json")]) != 0
        assert message in capsys.readouterr().err, args
    assert not (tmp_path / "bad.json").exists()
