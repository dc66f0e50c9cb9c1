"""Reading tensor files into shards of symbols for ``analyze``, ``sim`` and ``codebook``.

A *shard* is one tensor: a ``.npy`` file is one shard, a ``.safetensors`` file gives one
shard per tensor. Each shard is read in one of two formats:

- ``e4m3``: ``uint8`` arrays are e4m3 bit patterns; float arrays are cast to e4m3 with
  per-tensor amax scaling (to 448) through ``ml_dtypes``;
- ``bf16``: ``uint16`` arrays are bf16 bit patterns; float arrays are cast to bf16
  (round to nearest even) through ``ml_dtypes``.

A ``uint8`` array is always e4m3 and a ``uint16`` array always bf16, whatever the
requested format; other integer types are refused.
"""

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from .golden.exponent import split
from .golden.formats import FormatError, to_e4m3_bits

__all__ = ["Shard", "read_shards", "read_e4m3_shards", "FORMATS"]

FORMATS = ("e4m3", "bf16")

_SAFETENSORS_DTYPES = {
    "U8": np.uint8, "U16": np.uint16, "I8": np.int8, "I16": np.int16, "I32": np.int32,
    "I64": np.int64, "F16": np.float16, "F32": np.float32, "F64": np.float64,
    "BF16": ml_dtypes.bfloat16, "F8_E4M3": ml_dtypes.float8_e4m3fn,
}


@dataclass(frozen=True)
class Shard:
    file: str
    tensor: str            # the tensor's name in a .safetensors file, else the file stem
    format: str            # "e4m3" (symbols are uint8) or "bf16" (symbols are uint16)
    symbols: np.ndarray    # flat bit patterns

    @property
    def byte_plane(self):
        """The byte symbols the entropy coders see: the e4m3 bytes themselves, or the
        exponent bytes of bf16 values (:func:`linkcodec.golden.exponent.split`)."""
        if self.format == "e4m3":
            return self.symbols
        return split(self.symbols)[1]


def _as_symbols(array, requested, where):
    if array.dtype == ml_dtypes.float8_e4m3fn or array.dtype == np.uint8:
        return "e4m3", array.view(np.uint8).reshape(-1)
    if array.dtype == ml_dtypes.bfloat16 or array.dtype == np.uint16:
        return "bf16", array.view(np.uint16).reshape(-1)
    if np.issubdtype(array.dtype, np.floating):
        if not np.all(np.isfinite(array)):
            raise FormatError(f"{where}: holds Inf or NaN; cannot scale it to {requested}")
        if requested == "bf16":
            return "bf16", array.astype(np.float32).astype(ml_dtypes.bfloat16).view(
                np.uint16).reshape(-1)
        return "e4m3", to_e4m3_bits(array)
    raise FormatError(
        f"{where}: dtype {array.dtype} is neither uint8 (e4m3 bits), uint16 (bf16 bits) "
        "nor floating point")


def _read_safetensors(path):
    raw = path.read_bytes()
    if len(raw) < 8:
        raise FormatError(f"{path}: too short to be a .safetensors file")
    (header_size,) = struct.unpack("<Q", raw[:8])
    if header_size > len(raw) - 8:
        raise FormatError(f"{path}: header of {header_size} bytes runs past the file's end")
    try:
        header = json.loads(raw[8:8 + header_size])
    except ValueError as error:
        raise FormatError(f"{path}: header is not JSON ({error})") from None
    body = raw[8 + header_size:]
    tensors = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(info.get("dtype"))
        if dtype is None:
            raise FormatError(f"{path}: tensor {name!r} has unsupported dtype "
                              f"{info.get('dtype')!r}")
        start, end = info["data_offsets"]
        if not 0 <= start <= end <= len(body):
            raise FormatError(f"{path}: tensor {name!r} lies outside the file")
        array = np.frombuffer(body[start:end], dtype=dtype)
        tensors.append((name, array.reshape(info["shape"])))
    return tensors


def read_shards(paths, *, format="e4m3"):
    """Read every file into :class:`Shard` objects, in order."""
    if format not in FORMATS:
        raise FormatError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    shards = []
    for path in map(Path, paths):
        if not path.exists():
            raise FormatError(f"{path}: no such file")
        if path.suffix == ".safetensors":
            tensors = _read_safetensors(path)
        elif path.suffix == ".npy":
            try:
                tensors = [(path.stem, np.load(path, allow_pickle=False))]
            except (OSError, ValueError) as error:
                raise FormatError(f"{path}: not a readable .npy file ({error})") from None
        else:
            raise FormatError(f"{path}: unknown file type; expected .npy or .safetensors")
        for name, array in tensors:
            kind, symbols = _as_symbols(array, format, f"{path}:{name}")
            shards.append(Shard(str(path), name, kind, symbols))
    return shards


def read_e4m3_shards(paths):
    """:func:`read_shards` in e4m3, refusing bf16 bit patterns (``uint16`` arrays): the
    QLC blocks carry e4m3 bytes."""
    shards = read_shards(paths, format="e4m3")
    for shard in shards:
        if shard.format != "e4m3":
            raise FormatError(f"{shard.file}:{shard.tensor} holds bf16 bit patterns; the "
                              "QLC blocks carry e4m3 bytes")
    return shards
