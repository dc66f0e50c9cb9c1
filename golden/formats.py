"""Number formats: turning tensors into the symbols the codecs carry.

FP8 e4m3 (``float8_e4m3fn``: 4 exponent bits, 3 mantissa bits, no infinities, max 448)
is the byte format of the QLC and Huffman codecs. Casting goes through ``ml_dtypes`` so
that rounding and NaN handling match the reference semantics, not a hand-written cast.
"""

import numpy as np
import ml_dtypes

__all__ = ["E4M3_MAX", "FormatError", "to_e4m3_bits", "e4m3_bits_to_float"]

#: Largest finite e4m3 value; per-tensor amax scaling maps a tensor's amax onto it.
E4M3_MAX = 448.0


class FormatError(ValueError):
    """An input array cannot be read as the requested number format."""


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
    scale = E4M3_MAX / amax if amax > 0 else 1.0
    return (values * np.float32(scale)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8).reshape(-1)


def e4m3_bits_to_float(bits):
    """Interpret ``uint8`` bit patterns as e4m3 values (``float32``)."""
    bits = np.asarray(bits)
    if bits.dtype != np.uint8:
        raise FormatError(f"e4m3 bit patterns must be uint8, not {bits.dtype}")
    return bits.view(ml_dtypes.float8_e4m3fn).astype(np.float32)

