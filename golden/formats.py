"""Number formats: turning tensors into the symbols the codecs carry.

FP8 e4m3 (``float8_e4m3fn``: 4 exponent bits, 3 mantissa bits, no infinities, max 448)
is the byte format of the QLC and Huffman codecs. Casting goes through ``ml_dtypes`` so
that rounding and NaN handling match the reference semantics, not a hand-written cast.
"""

import math

import numpy as np
import ml_dtypes

__all__ = ["E4M3_MAX", "FormatError", "e4m3_scale", "check_scale", "to_e4m3_bits",
           "e4m3_bits_to_float", "e4m3_pmf_at_scale", "compressibility", "bf16_sigma",
           "check_sigma", "sigma_shift", "bf16_times_power_of_two"]

#: Largest finite e4m3 value; per-tensor amax scaling maps a tensor's amax onto it.
E4M3_MAX = 448.0


class FormatError(ValueError):
    """An input array cannot be read as the requested number format."""


def e4m3_scale(amax):
    """The per-tensor e4m3 scale for a tensor of absolute maximum ``amax``: ``448 / amax``,
    1 where ``amax`` is 0 (an all-zero tensor). Works elementwise on an array of amaxes.

    This is the one place the formula is written; every cast, the TACO front end and the
    capture use it, so they agree to the last bit of the float64 division.
    """
    amax = np.asarray(amax, dtype=np.float64)
    if np.any(~np.isfinite(amax) | (amax < 0)):
        raise FormatError(f"amax must be finite and >= 0, not {amax}")
    scale = np.ones_like(amax)
    np.divide(E4M3_MAX, amax, out=scale, where=amax > 0)
    return float(scale) if scale.ndim == 0 else scale


def compressibility(bits_per_symbol, raw_bits=8):
    """Fraction of the raw size saved: ``1 - bits_per_symbol / raw_bits``."""
    try:
        bits, raw = float(bits_per_symbol), float(raw_bits)
    except (TypeError, ValueError):
        raise TypeError("bits_per_symbol and raw_bits must be numbers") from None
    if not np.isfinite(bits) or bits < 0:
        raise ValueError(f"bits_per_symbol is {bits}; it must be a finite number >= 0")
    if not np.isfinite(raw) or raw <= 0:
        raise ValueError(f"raw_bits is {raw}; it must be a finite number > 0")
    return 1.0 - bits / raw


def to_e4m3_bits(values):
    """Cast a float array to e4m3 bit patterns (``uint8``) with per-tensor amax scaling.

    The tensor is multiplied by ``448 / amax`` (1 for an all-zero tensor) and rounded to
    nearest-even by ``ml_dtypes``. Non-finite inputs are refused: they would make the
    scale meaningless.
    """
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.floating) and values.dtype not in (
        ml_dtypes.bfloat16,
    ):
        raise FormatError(f"expected a floating-point array, not {values.dtype}")
    values = values.astype(np.float32)
    if not np.all(np.isfinite(values)):
        raise FormatError("tensor holds Inf or NaN; per-tensor amax scaling needs finite values")
    amax = float(np.max(np.abs(values))) if values.size else 0.0
    scale = e4m3_scale(amax)
    return (values * np.float32(scale)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8).reshape(-1)


def e4m3_bits_to_float(bits):
    """Interpret ``uint8`` bit patterns as e4m3 values (``float32``)."""
    bits = np.asarray(bits)
    if bits.dtype != np.uint8:
        raise FormatError(f"e4m3 bit patterns must be uint8, not {bits.dtype}")
    return bits.view(ml_dtypes.float8_e4m3fn).astype(np.float32)


# -- bf16 values and their sigma -------------------------------------------------------

def bf16_sigma(values):
    """The standard deviation (float64) of the finite values among ``values``, bf16 bit
    patterns (``uint16``). :class:`FormatError` if the array is not ``uint16``, if no
    value is finite, or if the finite values are all equal (sigma 0)."""
    array = np.asarray(values)
    if array.dtype != np.uint16:
        raise FormatError(f"bf16 values must be uint16 bit patterns, not {array.dtype}")
    floats = array.reshape(-1).view(ml_dtypes.bfloat16).astype(np.float64)
    finite = floats[np.isfinite(floats)]
    if finite.size == 0:
        raise FormatError(f"the tensor has no finite values (of {floats.size}); sigma "
                          f"needs at least two different ones")
    sigma = float(np.std(finite))
    if sigma == 0:
        raise FormatError(f"the {finite.size} finite values are all equal ({finite[0]}): "
                          f"their sigma is 0")
    return sigma


def check_sigma(sigma, name="sigma"):
    """``sigma`` as a float: finite and > 0, else :class:`FormatError` naming ``name``."""
    try:
        sigma = float(sigma)
    except (TypeError, ValueError):
        raise FormatError(f"{name} must be a number, not {type(sigma).__name__}") from None
    if not (math.isfinite(sigma) and sigma > 0):
        raise FormatError(f"{name} is {sigma}; a sigma must be finite and > 0")
    return sigma


def sigma_shift(sigma, target):
    """The power of two that brings ``sigma`` nearest ``target`` on a log scale: the
    integer ``k`` nearest ``log2(target / sigma)``, a half rounded up
    (``floor(log2(target / sigma) + 1/2)``). Both must be finite and > 0."""
    sigma, target = check_sigma(sigma), check_sigma(target, "the target sigma")
    return math.floor(math.log2(target / sigma) + 0.5)


def bf16_times_power_of_two(values, shift):
    """bf16 ``values`` (``uint16`` bit patterns) times ``2**shift``, rounded to bf16:
    exact for every value that stays normal; zeros, infinities and NaNs keep their
    class."""
    array = np.asarray(values)
    if array.dtype != np.uint16:
        raise FormatError(f"bf16 values must be uint16 bit patterns, not {array.dtype}")
    with np.errstate(over="ignore"):    # past bf16's range: infinity, as the cast gives
        floats = np.ldexp(array.view(ml_dtypes.bfloat16).astype(np.float64), int(shift))
        return floats.astype(ml_dtypes.bfloat16).view(np.uint16)


#: Expectation-maximisation steps of :func:`e4m3_pmf_at_scale`: a fixed count, so both
#: ends of a link compute the same PMF. 0 spreads each code's weight evenly over its
#: interval; the figures of ``docs/huffman.md`` ("Scale changes") use 50.
PMF_AT_SCALE_ITERATIONS = 50


def _e4m3_magnitude_edges():
    """Rounding intervals of the 127 non-negative finite codes 0x00..0x7E, in scaled
    units: code ``j`` holds ``[edges[j], edges[j + 1])``. The last code, 448, ends at 448:
    per-tensor amax scaling puts nothing above it (a larger value saturates to it)."""
    magnitudes = e4m3_bits_to_float(np.arange(0x7F, dtype=np.uint8)).astype(np.float64)
    return np.concatenate([[0.0], (magnitudes[:-1] + magnitudes[1:]) / 2, [E4M3_MAX]])


def check_scale(scale, name):
    """``scale`` (a factor a tensor was multiplied by before the e4m3 cast) as a float:
    > 0 and within float32's normal range, else :class:`FormatError` naming ``name``."""
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise FormatError(f"{name} must be a number, not {type(scale).__name__}") from None
    if not 2.0 ** -126 <= scale <= 2.0 ** 127:   # also refuses NaN
        raise FormatError(f"{name} is {scale}; a scale must be > 0, within float32's "
                          f"normal range (2**-126 .. 2**127)")
    return scale


def e4m3_pmf_at_scale(pmfs, scales, scale, iterations=PMF_AT_SCALE_ITERATIONS):
    """The average PMF of e4m3 batches cast at ``scales``, as it would be at ``scale``.

    Per-tensor amax scaling (``x * scale``, then e4m3) gives every batch its own scale, so
    the same value lands on different codes in different batches and a plain average of
    their PMFs is stale for a batch with a new scale. This estimates the density of the
    unscaled values that best explains all the batches at once and casts it at
    ``scale``:

    - the value axis is cut at every rounding boundary of every scale given (batches and
      target), so each cell falls in one code at each scale, and a density that is flat
      inside a cell is the only assumption;
    - the cells start from each batch's PMF spread over its codes' intervals (averaged);
    - ``iterations`` steps of expectation-maximisation (Richardson-Lucy) then fit the
      cells to every batch's PMF, each batch weighing the same. Because batches at
      different scales cut the axis at different places, the fit recovers detail finer
      than one code, such as a pile of values at GELU's minimum;
    - the cells are summed per code at ``scale``; anything above the target's 448 is
      counted on the largest code, where the cast would saturate it.

    Signs are fitted separately. NaN codes (0x7F, 0xFF) keep their weight. When every
    scale equals ``scale`` the result is the plain average. Only elementwise arithmetic
    and sequential sums are used, so both ends of a link get the same bits.

    ``pmfs``: a (batches, 256) array of probabilities or counts (each row is normalised);
    ``scales``: one per row; ``scale``: the target. Returns 256 float64 probabilities.
    """
    pmfs = np.asarray(pmfs, dtype=np.float64)
    if pmfs.ndim != 2 or pmfs.shape[1] != 256 or pmfs.shape[0] == 0:
        raise FormatError(f"pmfs must be a (batches, 256) array, not shape {pmfs.shape}")
    if not np.all(np.isfinite(pmfs)) or np.any(pmfs < 0) or not np.all(pmfs.any(axis=1)):
        raise FormatError("each PMF must be finite, >= 0 and not all zero")
    scales = [check_scale(s, "a batch scale") for s in np.asarray(scales, dtype=object).ravel()]
    if len(scales) != pmfs.shape[0]:
        raise FormatError(f"{len(scales)} scales for {pmfs.shape[0]} batches: give one "
                          f"scale per batch")
    scale = check_scale(scale, "the target scale")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) \
            or iterations < 0:
        raise FormatError(f"iterations must be an integer >= 0, not {iterations!r}")
    pmfs = pmfs / np.array([[math.fsum(row)] for row in pmfs.tolist()])
    if all(s == scale for s in scales):
        return np.array([math.fsum(column) for column in pmfs.T.tolist()]) / len(pmfs)

    edges = _e4m3_magnitude_edges()
    # Cells of the unscaled value axis: between consecutive cuts of any scale.
    cuts = np.unique(np.concatenate([edges / s for s in scales + [scale]]))
    cuts = cuts[cuts <= max(E4M3_MAX / s for s in scales)]
    low, high = cuts[:-1], cuts[1:]
    middle, width = (low + high) / 2, high - low

    def code_of(s):
        return np.minimum(np.searchsorted(edges, middle * s, side="right") - 1, 126)

    batch_codes = [code_of(s) for s in scales]
    result = np.zeros(256)
    for sign in (0x00, 0x80):
        observed = pmfs[:, sign:sign + 127]
        # Start: each batch's code weights spread over their cells by width, averaged.
        cells = np.zeros(middle.size)
        for codes, weights in zip(batch_codes, observed):
            code_width = np.bincount(codes, weights=width, minlength=127)
            cells += weights[codes] * width / np.where(code_width > 0, code_width, 1.0)[codes]
        cells /= len(scales)
        for _ in range(iterations):
            update = np.zeros(middle.size)
            for codes, weights in zip(batch_codes, observed):
                predicted = np.bincount(codes, weights=cells, minlength=127)
                update += np.divide(weights, predicted, out=np.zeros(127),
                                    where=predicted > 0)[codes]
            cells *= update / len(scales)
        result[sign:sign + 127] = np.bincount(code_of(scale), weights=cells, minlength=127)
    for nan in (0x7F, 0xFF):
        result[nan] = math.fsum(pmfs[:, nan].tolist()) / len(pmfs)
    return result
