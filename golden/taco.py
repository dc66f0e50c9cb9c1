"""TACO: a block-wise, Hadamard-rotated FP8 e4m3 front end for tensor-parallel activations.

TACO is *lossy*: it turns a real-valued tensor into e4m3 bytes (plus two scales per
block) that a lossless codec (QLC, Huffman) then carries. This module is its NumPy
reference model; ``docs/taco.md`` describes it and quotes the figures of
:func:`report_markdown` (``linkcodec bench --taco``).

The tensor is cut along its last axis into blocks of ``block`` contiguous values (a power
of two, default 128). For each block ``k``:

1. second-moment scaling to a target energy: ``alpha_k = sqrt(target_energy / mean(x**2))``
   (1 for an all-zero block), ``y = alpha_k * x``;
2. an orthonormal Sylvester Hadamard rotation ``z = H y`` with ``H = H_n / sqrt(n)``,
   computed by a fast Walsh-Hadamard transform (:func:`walsh_hadamard`);
3. post-rotation scaling into the e4m3 range: ``scale_k = 448 / max|z|`` (1 for an
   all-zero block);
4. ``q = e4m3(scale_k * z)``, rounded to nearest even by ``ml_dtypes``.

:func:`dequantize` runs the exact inverse path: ``z' = q / scale_k``, ``y' = H z'`` (the
orthonormal ``H`` is symmetric and its own inverse), ``x' = y' / alpha_k``.

Arithmetic, so that another implementation can match it bit for bit. The input is taken
as float32; everything else runs in float64 with these rounding points:

- ``mean(x**2)`` is an adder tree (halves added, ``log2(n)`` times) over the exact
  float64 squares of the float32 inputs, divided by ``n``;
- ``alpha_k`` and ``scale_k`` are computed in float64 and rounded to float32, which is
  what the frame stores and what both directions use;
- the Hadamard butterflies add and subtract in float64 in the order of
  :func:`walsh_hadamard`, then multiply by ``n ** -0.5``;
- ``scale_k * z`` is rounded to float32, saturated to +-448, then rounded to e4m3 (this
  is what ``ml_dtypes`` does to a float64 anyway: it goes through float32).

The two scales are redundant for the codes: ``scale_k`` cancels ``alpha_k``, so the
codes depend on ``alpha_k`` only through float32 rounding. What ``alpha_k`` buys is a
narrow range for ``scale_k``: the rotated block has energy ``n * target_energy``, so
``max|z|`` lies in ``[sqrt(target_energy), sqrt(n * target_energy)]`` and ``scale_k``
within a factor ``sqrt(n)``; the dynamic range of the data sits in ``alpha_k`` alone.
"""

from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from .formats import E4M3_MAX, e4m3_bits_to_float, e4m3_scale, to_e4m3_bits
from .huffman import entropy_bits

__all__ = [
    "DEFAULT_BLOCK",
    "TacoError",
    "TacoFrame",
    "walsh_hadamard",
    "quantize",
    "dequantize",
    "fp8_per_tensor",
    "int8_per_tensor",
    "error_stats",
    "compressibility_of_codes",
    "taco_error_table",
    "outlier_sweep",
    "report_markdown",
]

#: Block length along the last axis when none is given.
DEFAULT_BLOCK = 128

_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)  # smallest normal float32


class TacoError(ValueError):
    """Bad input to the TACO front end: block size, shape, non-finite values, bad frame."""


@dataclass(frozen=True)
class TacoFrame:
    """One quantised tensor: e4m3 codes and the two float32 scales of every block.

    ``codes`` is ``uint8`` e4m3 bit patterns of ``shape``; ``alpha`` (second-moment
    scale) and ``scale`` (post-rotation scale) have shape ``shape[:-1] + (shape[-1] //
    block,)``: entry ``[..., k]`` belongs to values ``[..., k * block:(k + 1) * block]``.
    """

    codes: np.ndarray
    alpha: np.ndarray
    scale: np.ndarray
    block: int
    shape: tuple


def _check_block(block):
    if (isinstance(block, bool) or not isinstance(block, (int, np.integer))
            or block < 1 or block & (block - 1)):
        raise TacoError(f"block must be a power of two, not {block!r}")
    return int(block)


def _float_array(values, what="tensor"):
    """``values`` as a finite float32 array, or a :class:`TacoError` naming the problem."""
    values = np.asarray(values)
    try:
        ml_dtypes.finfo(values.dtype)
    except ValueError:
        raise TacoError(f"{what} must be floating point, not {values.dtype}") from None
    values = values.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise TacoError(f"{what} holds Inf or NaN; TACO needs finite values")
    if values.size and np.max(np.abs(values)) > _FLOAT32_MAX:
        raise TacoError(f"{what} holds values beyond the float32 range")
    return values.astype(np.float32)


def _blocks(values, block):
    """Reshape to ``(..., blocks, block)``, refusing a last axis that does not divide."""
    if values.ndim == 0:
        raise TacoError("tensor must have at least one axis; TACO blocks the last one")
    if values.shape[-1] % block:
        raise TacoError(
            f"last dimension {values.shape[-1]} is not a multiple of block {block}")
    return values.reshape(values.shape[:-1] + (values.shape[-1] // block, block))


def _butterflies(values):
    """Unnormalised Sylvester Walsh-Hadamard transform of the last axis (float64).

    Stage ``h = 1, 2, 4, ...``: within every group of ``2h`` values, the first half ``a``
    and second half ``b`` become ``a + b`` and ``a - b``. This is ``H_n x`` with
    ``H_2n = [[H_n, H_n], [H_n, -H_n]]``; one NumPy step per stage, over all blocks.
    """
    n = values.shape[-1]
    lead = values.shape[:-1]
    half = 1
    while half < n:
        pairs = values.reshape(lead + (n // (2 * half), 2, half))
        first, second = pairs[..., 0, :], pairs[..., 1, :]
        values = np.stack((first + second, first - second), axis=-2).reshape(lead + (n,))
        half *= 2
    return values


def walsh_hadamard(values):
    """Orthonormal Sylvester Hadamard transform ``(H_n / sqrt(n)) x`` along the last axis.

    ``n`` (the last axis) must be a power of two. Computed in float64 by ``log2(n)``
    butterfly stages over the whole array, not by a matrix product. The transform is
    symmetric and orthogonal, so it is its own inverse.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 0:
        raise TacoError("walsh_hadamard needs at least one axis")
    n = values.shape[-1]
    if n < 1 or n & (n - 1):
        raise TacoError(f"Hadamard length must be a power of two, not {n}")
    return _butterflies(values) * (float(n) ** -0.5)


def _tree_sum(values):
    """Sum of the last axis (a power of two long) by an adder tree: a fixed order."""
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = values[..., :half] + values[..., half:]
    return values[..., 0]


def _float32_scale(values, name, target_energy):
    """Round positive float64 scales to float32, refusing those float32 cannot hold."""
    bad = ~((values >= _FLOAT32_TINY) & (values <= _FLOAT32_MAX))
    if np.any(bad):
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise TacoError(
            f"block {index}: {name} = {values[index]:.3g} does not fit a normal float32 "
            f"(block rms too small or too large for target_energy {target_energy:g})")
    return values.astype(np.float32)


def quantize(x, *, block=DEFAULT_BLOCK, target_energy=1.0):
    """Quantise ``x`` (float, any shape) to a :class:`TacoFrame` of e4m3 codes.

    The last dimension must be a multiple of ``block`` (a power of two). Non-finite
    values, values beyond float32 and blocks whose scales float32 cannot hold (rms below
    about 1e-38 or above 1e38) raise :class:`TacoError`.
    """
    block = _check_block(block)
    target_energy = float(target_energy)
    if not (np.isfinite(target_energy) and target_energy > 0):
        raise TacoError(f"target_energy must be positive and finite, not {target_energy}")
    values = _float_array(x)
    blocks = _blocks(values, block).astype(np.float64)

    mean_square = _tree_sum(blocks * blocks) / block  # float32 squares are exact in float64
    zero = mean_square == 0
    alpha = np.ones_like(mean_square)
    alpha[~zero] = np.sqrt(target_energy / mean_square[~zero])
    alpha = _float32_scale(alpha, "alpha", target_energy)

    rotated = walsh_hadamard(blocks * alpha[..., None].astype(np.float64))
    amax = np.max(np.abs(rotated), axis=-1)
    scale = _float32_scale(e4m3_scale(amax), "scale", target_energy)

    scaled = (rotated * scale[..., None].astype(np.float64)).astype(np.float32)
    # float32 rounding of the scale can lift the block maximum a hair past 448; e4m3fn
    # has no infinity, so saturate rather than let ml_dtypes make a NaN.
    np.clip(scaled, -E4M3_MAX, E4M3_MAX, out=scaled)
    codes = scaled.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).reshape(values.shape)
    return TacoFrame(codes=codes, alpha=alpha, scale=scale, block=block,
                     shape=tuple(values.shape))


def dequantize(frame):
    """Reconstruct the float32 tensor of a :class:`TacoFrame` (the inverse path).

    Within a block, the error is at most 1/16 of the block's L2 norm (half an e4m3 step
    of every rotated value; the rotation keeps norms) plus e4m3 subnormal rounding.

    A frame whose parts disagree in shape, whose scales are not positive and finite, or
    whose codes hold e4m3 NaN patterns (``0x7F``, ``0xFF``) raises :class:`TacoError`.
    """
    block = _check_block(frame.block)
    shape = tuple(frame.shape)
    codes = np.asarray(frame.codes)
    if codes.dtype != np.uint8 or codes.shape != shape:
        raise TacoError(f"codes must be uint8 of shape {shape}, not {codes.dtype} "
                        f"of shape {codes.shape}")
    blocks = _blocks(e4m3_bits_to_float(codes), block)
    scale_shape = blocks.shape[:-1]
    scales = []
    for name in ("alpha", "scale"):
        value = np.asarray(getattr(frame, name))
        if value.shape != scale_shape:
            raise TacoError(f"{name} must have shape {scale_shape}, not {value.shape}")
        value = value.astype(np.float64)
        if not np.all(np.isfinite(value) & (value > 0)):
            raise TacoError(f"{name} must be positive and finite in every block")
        scales.append(value[..., None])
    alpha, scale = scales
    if np.any((codes & 0x7F) == 0x7F):
        raise TacoError("codes hold e4m3 NaN patterns (0x7F or 0xFF)")
    rotated = blocks.astype(np.float64) / scale
    restored = (walsh_hadamard(rotated) / alpha).reshape(shape)
    # Only an input near the float32 limit can come back beyond it; saturate as a
    # float32 datapath would, rather than overflow to Inf.
    return np.clip(restored, -_FLOAT32_MAX, _FLOAT32_MAX).astype(np.float32)


def fp8_per_tensor(x):
    """Baseline: e4m3 with one per-tensor scale (amax to 448), back to float32.

    Uses :func:`linkcodec.golden.formats.to_e4m3_bits`, the cast that produced the
    bundled tensors, so a tensor of e4m3 values whose amax is 448 comes back unchanged.
    """
    values = _float_array(x)
    amax = float(np.max(np.abs(values))) if values.size else 0.0
    scale = np.float32(e4m3_scale(amax))
    decoded = e4m3_bits_to_float(to_e4m3_bits(values)) / scale
    return decoded.reshape(values.shape)


def int8_per_tensor(x):
    """Baseline: symmetric int8, scale ``amax / 127`` (float32), round half to even."""
    values = _float_array(x)
    amax = float(np.max(np.abs(values))) if values.size else 0.0
    scale = np.float64(np.float32(amax / 127.0 if amax > 0 else 1.0))
    levels = np.clip(np.rint(values / scale), -127, 127)
    return (levels * scale).astype(np.float32)


def error_stats(x, x_hat):
    """``rel_rms`` = ||x - x_hat|| / ||x||, ``max_abs`` = max |x - x_hat| and ``rel_max`` =
    ``max_abs`` / max |x|. A relative error of an all-zero ``x`` is 0 if ``x_hat`` is
    zero too and infinite otherwise."""
    x = np.asarray(x, dtype=np.float64)
    x_hat = np.asarray(x_hat, dtype=np.float64)
    if x.shape != x_hat.shape:
        raise TacoError(f"shapes differ: {x.shape} and {x_hat.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(x_hat))):
        raise TacoError("error_stats needs finite values")
    error = x - x_hat
    max_abs = float(np.max(np.abs(error))) if error.size else 0.0
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    # Norms of values divided by the largest magnitude, so squares cannot overflow.
    unit = max(max_abs, amax) or 1.0
    error_norm = float(np.sqrt(np.sum((error / unit) ** 2)))
    norm = float(np.sqrt(np.sum((x / unit) ** 2)))

    def ratio(top, bottom):
        if bottom > 0:
            return top / bottom
        return 0.0 if top == 0 else float("inf")

    return {"rel_rms": ratio(error_norm, norm), "max_abs": max_abs,
            "rel_max": ratio(max_abs, amax)}


def compressibility_of_codes(codes):
    """Order-0 Shannon entropy of ``uint8`` codes in bits/symbol (8 = incompressible)."""
    codes = np.asarray(codes)
    if codes.dtype != np.uint8:
        raise TacoError(f"codes must be uint8 e4m3 bit patterns, not {codes.dtype}")
    return entropy_bits(np.bincount(codes.reshape(-1), minlength=256))


def _load_tensor(path):
    """A bundled ``.npy``: ``uint8`` is e4m3 bit patterns (decoded), float is taken as is."""
    array = np.load(path, allow_pickle=False)
    if array.dtype == np.uint8:
        return array, e4m3_bits_to_float(array)
    values = _float_array(array, what=str(path))
    return None, values


def _mean_entropy(arrays):
    """Entropy of each array on its own, averaged with the arrays' sizes as weights."""
    sizes = np.array([array.size for array in arrays], dtype=np.float64)
    if sizes.sum() == 0:
        return 0.0
    entropies = np.array([compressibility_of_codes(array) for array in arrays])
    return float(np.sum(entropies * sizes) / sizes.sum())


def taco_error_table(groups, *, block=DEFAULT_BLOCK, target_energy=1.0):
    """Error and entropy of TACO against per-tensor FP8 and INT8, one row per tensor kind.

    ``groups`` maps a kind's name to its ``.npy`` files, in the order the rows come.

    Every file is quantised on its own (its own per-tensor amax, its own TACO blocks);
    the layers of a kind are then pooled: ``*_rel_rms`` is sqrt(sum of squared errors /
    sum of squared values) over all of them, ``*_max_abs`` and ``*_rel_max`` the largest
    over the files. A ``uint8`` file is decoded from e4m3 first and those values are the
    reference. ``input_entropy`` is the entropy of the files' own e4m3 bytes (``None`` if
    a file of the kind is float), ``taco_entropy`` that of the TACO codes, both of the
    pooled bytes; the ``*_per_file`` variants average each file's own entropy.
    ``scale_bits_per_value`` is the side information of the two float32 scales.
    """
    methods = {
        "taco": lambda v: dequantize(quantize(v, block=block, target_energy=target_energy)),
        "fp8": fp8_per_tensor,
        "int8": int8_per_tensor,
    }
    rows = []
    for kind, paths in groups.items():
        paths = [Path(path) for path in paths]
        squares = 0.0
        squared_errors = dict.fromkeys(methods, 0.0)
        worst = {name: {"max_abs": 0.0, "rel_max": 0.0} for name in methods}
        input_bytes, taco_codes, values_count = [], [], 0
        for path in paths:
            raw, values = _load_tensor(path)
            values_count += values.size
            reference = values.astype(np.float64)
            squares += float(np.sum(reference * reference))
            if raw is not None:
                input_bytes.append(raw.reshape(-1))
            taco_codes.append(quantize(values, block=block,
                                       target_energy=target_energy).codes.reshape(-1))
            for name, method in methods.items():
                restored = method(values)
                error = reference - restored.astype(np.float64)
                squared_errors[name] += float(np.sum(error * error))
                stats = error_stats(values, restored)
                for key in ("max_abs", "rel_max"):
                    worst[name][key] = max(worst[name][key], stats[key])
        row = {"kind": kind, "files": len(paths), "values": values_count}
        for name in methods:
            row[f"{name}_rel_rms"] = (squared_errors[name] / squares) ** 0.5 if squares else 0.0
            row[f"{name}_max_abs"] = worst[name]["max_abs"]
            row[f"{name}_rel_max"] = worst[name]["rel_max"]
        complete = len(input_bytes) == len(paths)
        row["input_entropy"] = (compressibility_of_codes(np.concatenate(input_bytes))
                                if complete else None)
        row["input_entropy_per_file"] = (_mean_entropy(input_bytes) if complete else None)
        row["taco_entropy"] = compressibility_of_codes(np.concatenate(taco_codes))
        row["taco_entropy_per_file"] = _mean_entropy(taco_codes)
        row["scale_bits_per_value"] = 2 * 32 / block
        rows.append(row)
    return rows


def outlier_sweep(factors=(1, 10, 100, 1000), *, seed=0, shape=(256, 1024),
                  outlier_channels=4, block=DEFAULT_BLOCK):
    """Synthetic case for the rotation: standard Gaussian ``shape`` (tokens x channels),
    ``outlier_channels`` random channels multiplied by each factor, one row per factor.

    ``*_rel_rms`` is over the whole tensor (dominated by the outliers' energy once the
    factor is large); ``*_bulk_rel_rms`` is over the other channels only.
    """
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(shape).astype(np.float32)
    channels = rng.choice(shape[-1], size=outlier_channels, replace=False)
    bulk = np.ones(shape[-1], dtype=bool)
    bulk[channels] = False
    methods = {
        "taco": lambda v: dequantize(quantize(v, block=block)),
        "fp8": fp8_per_tensor,
        "int8": int8_per_tensor,
    }
    rows = []
    for factor in factors:
        values = base.copy()
        values[..., channels] *= np.float32(factor)
        row = {"factor": factor}
        for name, method in methods.items():
            restored = method(values)
            row[f"{name}_rel_rms"] = error_stats(values, restored)["rel_rms"]
            row[f"{name}_bulk_rel_rms"] = error_stats(values[..., bulk],
                                                      restored[..., bulk])["rel_rms"]
        rows.append(row)
    return rows


def report_markdown(groups, *, block=DEFAULT_BLOCK, target_energy=1.0):
    """The TACO tables of ``docs/taco.md`` (``linkcodec bench --taco``) as Markdown:
    error and entropy on ``groups`` (kind to files, :func:`taco_error_table`), then
    :func:`outlier_sweep`.
    """
    rows = taco_error_table(groups, block=block, target_energy=target_energy)
    lines = [
        f"## TACO error against per-tensor FP8 and INT8 (block {block}, "
        f"target energy {target_energy:g})",
        "",
        "| kind | files | values | TACO rel RMS | TACO rel max | FP8 rel RMS | FP8 rel max "
        "| INT8 rel RMS | INT8 rel max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        cells = [f"{row[f'{name}_{stat}']:.3%}" for name in ("taco", "fp8", "int8")
                 for stat in ("rel_rms", "rel_max")]
        lines.append(f"| {row['kind']} | {row['files']} | {row['values']} | "
                     + " | ".join(cells) + " |")
    lines += [
        "",
        "## Entropy of TACO codes against the input's e4m3 bytes",
        "",
        "| kind | values | input e4m3, per file | input e4m3, pooled "
        "| TACO codes, per file | TACO codes, pooled | TACO scales (2 x float32) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]

    def bits(value):
        return "-" if value is None else f"{value:.3f}"

    for row in rows:
        lines.append(
            f"| {row['kind']} | {row['values']} | {bits(row['input_entropy_per_file'])} | "
            f"{bits(row['input_entropy'])} | {bits(row['taco_entropy_per_file'])} | "
            f"{bits(row['taco_entropy'])} | {row['scale_bits_per_value']:.3f} |")
    lines += [
        "",
        "Entropies in bit/symbol (scales in bit/value). Per file: the mean over the "
        "kind's files, each with its own histogram; pooled: one histogram over all of them.",
        "",
        "## Synthetic: standard Gaussian, 256 tokens x 1024 channels, 4 outlier channels "
        "x factor (seed 0)",
        "",
        "| outlier factor | TACO rel RMS | FP8 rel RMS | INT8 rel RMS "
        "| TACO bulk rel RMS | FP8 bulk rel RMS | INT8 bulk rel RMS |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in outlier_sweep(block=block):
        cells = [f"{row[f'{name}{part}_rel_rms']:.3%}" for part in ("", "_bulk")
                 for name in ("taco", "fp8", "int8")]
        lines.append(f"| {row['factor']:g} | " + " | ".join(cells) + " |")
    lines += ["", "Bulk: the 1020 channels that are not outliers (relative to their own norm)."]
    return "\n".join(lines) + "\n"
