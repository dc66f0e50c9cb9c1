"""Golden model of ZipCCL's exponent remap for bf16.

A bf16 value is ``sign(1) | exponent(8) | mantissa(7)``. Tensor values cluster in a few
binades, so the exponent carries far less than its 8 bits; sign and mantissa look close
to random. The remap keeps the sign and mantissa as they are and shrinks the exponent:

- :func:`split` cuts each value into a *sign+mantissa byte* ``sm = sign << 7 | mantissa``
  and the *exponent byte*; :func:`join` puts them back together.
- An :class:`ExponentTable` names 7 distinct exponents; ``exponents[i]`` travels as the
  3-bit code ``i + 1``. Any other exponent travels as code 0, the *escape*, and its full
  8-bit exponent goes to a separate escape array, in element order.
- :func:`encode` turns bf16 values into a :class:`RemapFrame`: one 3-bit code and one
  sign+mantissa byte per element, and the escape array. :func:`decode` inverts it,
  exactly, for every one of the 65,536 bf16 bit patterns (zeros, subnormals, Inf and NaN
  payloads included: they are exponents 0 and 255, escaped unless in the table).

Bits per value: each element costs 3 bits of code and 8 bits of sign+mantissa, and each
escape 8 more bits, so a frame of ``n`` values with ``k`` escapes costs
``3 n + 8 n + 8 k`` bits, that is ``3 + 8 + 8 * escape_rate`` bits per value against 16
raw (:meth:`RemapFrame.compressed_bits`, :meth:`RemapFrame.bits_per_value`). On the wire
the codes are packed 3 bits each, most significant bit first, zero-padded to a whole byte
(:meth:`RemapFrame.packed_codes`, :func:`unpack_codes`).

On a link the frame is a :class:`WireFrame` (``docs/bitstream.md``, "Exponent-remap
frames"): a values stream of a fixed 11 bits a value (code, then the sign+mantissa
byte) and, on a port of its own, the escaped exponents, a byte each. A decoder knows
where every value starts without reading a code, and a beat's escapes are a popcount of
its codes. :func:`wire_encode` and :func:`wire_decode` are the golden model of exactly
that format; :func:`wire_decode` refuses, naming the stream and bit, what no valid
encoder makes (:class:`ExponentWireError`), an escape that carries a table exponent
included.

Tables come from data or from theory:

- :func:`table_from_histogram` -- the 7 most frequent exponents of a tensor (ties: the
  smaller exponent first);
- :func:`table_from_sigma` -- the 7 most probable exponents of a zero-mean Gaussian
  ``N(0, sigma**2)``, from :func:`gaussian_exponent_pmf` alone (no histogram);
  :func:`table_from_tensor_sigma` takes sigma as the standard deviation of a tensor's
  finite values.

The exponent byte stream is also the input of a Huffman code on exponents (DFloat11
style): :func:`split` exposes it and :func:`exponent_histogram` counts it.

Errors: :class:`ExponentFormatError` (input that is not bf16), :class:`ExponentTableError`
(a table, histogram or sigma that cannot define a table) and :class:`ExponentDecodeError`
(a frame that is inconsistent). All three are :class:`ValueError`.
"""

import math
import numbers
import operator
from dataclasses import dataclass
from typing import NamedTuple

import ml_dtypes
import numpy as np

from .bitstream import BitstreamError, as_index
from .formats import FormatError, bf16_sigma
from .link_codec import LinkCodec
from .prefix_encoder import pack_codes
from .words import WordFrame, check_word_width, frames_from_words

__all__ = [
    "ExponentLinkCodec",
    "TABLE_SIZE",
    "CODE_BITS",
    "ESCAPE",
    "ExponentFormatError",
    "ExponentTableError",
    "ExponentDecodeError",
    "split",
    "join",
    "exponent_histogram",
    "ExponentTable",
    "table_from_histogram",
    "gaussian_exponent_pmf",
    "table_from_sigma",
    "table_from_tensor_sigma",
    "RemapFrame",
    "encode",
    "decode",
    "unpack_codes",
    "HuffmanExponentFrame",
    "huffman_encode",
    "huffman_decode",
    "VALUE_BITS",
    "WireFrame",
    "ExponentWireError",
    "wire_encode",
    "wire_decode",
    "wire_decode_prefix",
    "escape_words",
    "escape_word_faults",
    "escape_frames",
    "wire_decode_words",
]

#: Exponents a table maps to codes 1..7.
TABLE_SIZE = 7
#: Width of a code on the wire.
CODE_BITS = 3
#: The code of an exponent outside the table; the exponent goes to the escape array.
ESCAPE = 0

_EXPONENTS = 256        # values of the 8-bit exponent
_EXPONENT_BIAS = 127
_MANTISSA_BITS = 7
# Below this argument erf(z) is computed directly, above it through erfc(z): each side
# avoids subtracting two numbers close to 1.
_ERF_SPLIT = 0.5


class ExponentFormatError(ValueError):
    """An input array is not bf16 (``uint16`` bit patterns or ``ml_dtypes.bfloat16``)."""


class ExponentTableError(ValueError):
    """Exponents, a histogram or a sigma cannot define an exponent table."""


class ExponentDecodeError(ValueError):
    """A :class:`RemapFrame` (or its packed codes) is inconsistent and cannot be decoded."""


class ExponentWireError(ExponentDecodeError):
    """A :class:`WireFrame` cannot come from a valid encoder. ``stream`` is ``"values"``
    or ``"escapes"``, ``bit`` the position in that stream where the fault begins."""

    def __init__(self, message, *, stream, bit):
        super().__init__(message)
        self.stream = stream
        self.bit = bit


# -- bf16 fields -----------------------------------------------------------------------

def _as_bf16_bits(values, name="bf16 input"):
    """``values`` as a ``uint16`` array of bf16 bit patterns (same shape, no copy if able)."""
    array = np.asarray(values)
    if array.dtype == ml_dtypes.bfloat16:
        return array.view(np.uint16)
    if array.dtype.kind == "u" and array.dtype.itemsize == 2:
        return array.astype(np.uint16, copy=False)  # native byte order
    raise ExponentFormatError(
        f"{name} must be uint16 bf16 bit patterns or an ml_dtypes.bfloat16 array, not "
        f"{array.dtype}; cast floats with .astype(ml_dtypes.bfloat16)")


def _as_byte_field(values, name):
    array = np.asarray(values)
    if array.dtype != np.uint8:
        raise ExponentFormatError(f"{name} must be a uint8 array, not {array.dtype}")
    return array


def split(bits):
    """Split bf16 values into ``(sign_mantissa, exponent)``, two ``uint8`` arrays.

    ``bits``: ``uint16`` bit patterns or an ``ml_dtypes.bfloat16`` array, any shape; the
    results have its shape. ``sign_mantissa = sign << 7 | mantissa``.
    """
    bits = _as_bf16_bits(bits)
    exponent = (bits >> _MANTISSA_BITS).astype(np.uint8)  # drops the sign above bit 7
    sign_mantissa = ((bits >> 8) & 0x80) | (bits & 0x7F)
    return sign_mantissa.astype(np.uint8), exponent


def join(sign_mantissa, exponent):
    """Join ``uint8`` sign+mantissa bytes and exponents (same shape) into ``uint16`` bf16
    bit patterns: the inverse of :func:`split`."""
    sign_mantissa = _as_byte_field(sign_mantissa, "sign_mantissa")
    exponent = _as_byte_field(exponent, "exponent")
    if sign_mantissa.shape != exponent.shape:
        raise ExponentFormatError(f"sign_mantissa and exponent differ in shape: "
                                  f"{sign_mantissa.shape} and {exponent.shape}")
    sign_mantissa = sign_mantissa.astype(np.uint16)
    bits = (sign_mantissa & 0x80) << 8
    bits |= exponent.astype(np.uint16) << _MANTISSA_BITS
    bits |= sign_mantissa & 0x7F
    return bits


def exponent_histogram(bits):
    """Count of each exponent 0..255 among bf16 values (``int64`` array of 256)."""
    _, exponent = split(bits)
    return np.bincount(exponent.reshape(-1), minlength=_EXPONENTS).astype(np.int64)


# -- tables ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ExponentTable:
    """The 7 exponents that travel as codes: ``exponents[i]`` has code ``i + 1``.

    Checked on construction: exactly 7 distinct integers 0..255. Code 0 is the escape.
    """

    exponents: tuple

    def __post_init__(self):
        if isinstance(self.exponents, (str, bytes)):
            raise TypeError(f"exponents must be a sequence of {TABLE_SIZE} integers, not "
                            f"{type(self.exponents).__name__}")
        items = self.exponents
        if isinstance(items, np.ndarray):
            if items.ndim != 1:
                raise ExponentTableError(f"exponents must be one-dimensional, not of shape "
                                         f"{items.shape}")
            items = items.tolist()
        try:
            items = tuple(items)
        except TypeError:
            raise TypeError(f"exponents must be a sequence of {TABLE_SIZE} integers, not "
                            f"{type(self.exponents).__name__}") from None
        exponents = tuple(as_index(item, f"exponents[{index}]")
                          for index, item in enumerate(items))
        if len(exponents) != TABLE_SIZE:
            raise ExponentTableError(f"an exponent table holds exactly {TABLE_SIZE} "
                                     f"exponents (codes 1..{TABLE_SIZE}), not {len(exponents)}")
        for index, exponent in enumerate(exponents):
            if not 0 <= exponent < _EXPONENTS:
                raise ExponentTableError(f"exponents[{index}] is {exponent}; bf16 exponents "
                                         f"are 0..{_EXPONENTS - 1}")
        for index, exponent in enumerate(exponents):
            first = exponents.index(exponent)
            if first != index:
                raise ExponentTableError(f"exponent {exponent} appears twice in the table "
                                         f"(exponents[{first}] and exponents[{index}]); "
                                         f"the {TABLE_SIZE} exponents must be distinct")
        object.__setattr__(self, "exponents", exponents)
        code_of = np.full(_EXPONENTS, ESCAPE, dtype=np.uint8)
        code_of[list(exponents)] = np.arange(1, TABLE_SIZE + 1, dtype=np.uint8)
        code_of.setflags(write=False)
        exponent_of_code = np.array((0,) + exponents, dtype=np.uint8)
        exponent_of_code.setflags(write=False)
        object.__setattr__(self, "_code_of", code_of)
        object.__setattr__(self, "_exponent_of_code", exponent_of_code)

    @property
    def code_of(self):
        """Code of each exponent 0..255 (read-only ``uint8`` array; 0 = escape)."""
        return self._code_of

    @property
    def exponent_of_code(self):
        """Exponent of each code 0..7 (read-only ``uint8`` array; entry 0 is unused)."""
        return self._exponent_of_code


def _top_exponents(weights):
    """Table of the 7 heaviest exponents, heaviest first, ties by the smaller exponent."""
    order = np.argsort(-weights, kind="stable")
    return ExponentTable(order[:TABLE_SIZE])


def table_from_histogram(exponents_or_values):
    """The table of the 7 most frequent exponents (most frequent gets code 1).

    ``exponents_or_values``: a ``uint8`` array of exponent bytes (as from :func:`split`),
    or bf16 values (``uint16`` bit patterns or ``ml_dtypes.bfloat16``). Ties go to the
    smaller exponent, also among exponents that never occur (when fewer than 7 do).
    """
    array = np.asarray(exponents_or_values)
    if array.dtype == np.uint8:
        exponents = array
    else:
        try:
            _, exponents = split(array)
        except ExponentFormatError:
            raise ExponentFormatError(
                f"a histogram is taken of uint8 exponent bytes or of bf16 values (uint16 bit "
                f"patterns or ml_dtypes.bfloat16), not of {array.dtype}") from None
    if exponents.size == 0:
        raise ExponentTableError("no values to count: a table from a histogram needs at "
                                 "least one value")
    return _top_exponents(np.bincount(exponents.reshape(-1), minlength=_EXPONENTS))


def _check_sigma(sigma):
    if isinstance(sigma, (bool, np.bool_)) or not isinstance(sigma, numbers.Real):
        raise TypeError(f"sigma must be a real number, not {type(sigma).__name__}")
    value = float(sigma)
    if not math.isfinite(value) or value <= 0:
        raise ExponentTableError(f"sigma is {value}; a Gaussian needs a finite sigma > 0")
    return value


def gaussian_exponent_pmf(sigma):
    """Probability of each bf16 exponent 0..255 for ``x ~ N(0, sigma**2)`` (float64, 256).

    Exponent ``e`` in 1..254 holds ``2**(e-127) <= |x| < 2**(e-126)``, exponent 0 holds
    ``|x| < 2**-126`` and 255 holds ``|x| >= 2**128``. Rounding to bf16 is ignored (it
    moves each boundary by a relative 2**-9). With ``z(t) = t / (sigma * sqrt(2))``,
    ``P(|x| < t) = erf(z)``; bins far out in the tail use ``erfc`` instead, so that no
    probability comes from subtracting two numbers close to 1.
    """
    sigma = _check_sigma(sigma)
    # Python floats: a boundary far past sigma becomes z = inf, where erf is 1, erfc 0.
    width = sigma * math.sqrt(2.0)
    bounds = [0.0] + [2.0 ** (k - _EXPONENT_BIAS) / width for k in range(1, _EXPONENTS)]
    bounds.append(math.inf)
    pmf = np.empty(_EXPONENTS)
    for exponent in range(_EXPONENTS):
        low, high = bounds[exponent], bounds[exponent + 1]
        if low < _ERF_SPLIT:
            pmf[exponent] = math.erf(high) - math.erf(low)
        else:
            pmf[exponent] = math.erfc(low) - math.erfc(high)
    return pmf


def table_from_sigma(sigma):
    """The table of the 7 most probable exponents of ``N(0, sigma**2)`` (most probable
    gets code 1; ties by the smaller exponent), from :func:`gaussian_exponent_pmf`.

    Raises :class:`ExponentTableError` unless sigma is finite and > 0.
    """
    return _top_exponents(gaussian_exponent_pmf(sigma))


def table_from_tensor_sigma(values):
    """:func:`table_from_sigma` of the standard deviation of the finite bf16 ``values``.

    Raises :class:`ExponentTableError` if no value is finite or all finite values are
    equal (sigma 0).
    """
    try:
        sigma = bf16_sigma(_as_bf16_bits(values).reshape(-1))
    except FormatError as error:
        raise ExponentTableError(str(error)) from None
    return table_from_sigma(sigma)


# -- frames ----------------------------------------------------------------------------

def _check_codes(codes, what="frame codes"):
    """``codes`` as a 1-D ``uint8`` array of values 0..7, else ExponentDecodeError."""
    codes = np.asarray(codes)
    if codes.dtype != np.uint8 or codes.ndim != 1:
        raise ExponentDecodeError(f"{what} must be a 1-D uint8 array, not {codes.dtype} of "
                                  f"shape {codes.shape}")
    bad = np.flatnonzero(codes >> CODE_BITS)
    if bad.size:
        raise ExponentDecodeError(f"{what}: code {bad[0]} is {codes[bad[0]]}; codes are "
                                  f"{CODE_BITS} bits (0..{(1 << CODE_BITS) - 1})")
    return codes


# Codes pack in groups of 8 codes = 24 bits = 3 bytes; code j of a group sits at this
# shift of the group's big-endian 24-bit word.
_GROUP_SHIFTS = np.arange(7 * CODE_BITS, -1, -CODE_BITS, dtype=np.uint32)


@dataclass(frozen=True, eq=False)
class RemapFrame:
    """An encoded tensor: per element a 3-bit code and a sign+mantissa byte, plus the
    escaped exponents in element order, and the tensor's shape.

    ``codes`` and ``sign_mantissa`` are flat ``uint8`` arrays (one entry per element,
    C order), ``escapes`` a ``uint8`` array with one exponent per code 0.
    """

    codes: np.ndarray
    sign_mantissa: np.ndarray
    escapes: np.ndarray
    shape: tuple

    @property
    def size(self):
        """Number of values in the frame."""
        return int(np.asarray(self.codes).size)

    def packed_codes(self):
        """The codes as sent: 3 bits each, MSB first, zero-padded to a whole byte.

        Code ``i`` is bits ``3i .. 3i+2`` of the result, bit ``b`` being bit ``7 - b % 8``
        of byte ``b // 8``. Raises :class:`ExponentDecodeError` for codes past 7.
        """
        codes = _check_codes(self.codes)
        groups = np.zeros((-(-codes.size // 8), 8), dtype=np.uint32)
        groups.reshape(-1)[:codes.size] = codes
        words = (groups << _GROUP_SHIFTS).sum(axis=1, dtype=np.uint32)  # disjoint bits: OR
        packed = np.empty((words.size, 3), dtype=np.uint8)
        packed[:, 0] = words >> 16
        packed[:, 1] = (words >> 8) & 0xFF
        packed[:, 2] = words & 0xFF
        return packed.reshape(-1)[:-(-CODE_BITS * codes.size // 8)].tobytes()

    def compressed_bits(self):
        """``3 n + 8 n + 8 * len(escapes)``: codes, sign+mantissa bytes and escapes
        (without the pad bits of the packed codes)."""
        n = self.size
        return CODE_BITS * n + 8 * n + 8 * int(np.asarray(self.escapes).size)

    def bits_per_value(self):
        """``compressed_bits() / n`` = ``3 + 8 + 8 * escape_rate`` (16 raw).

        Raises :class:`ValueError` for an empty frame, which has no bits per value.
        """
        if self.size == 0:
            raise ValueError("an empty frame has no bits per value")
        return self.compressed_bits() / self.size


def unpack_codes(data, count):
    """Read ``count`` 3-bit codes back from their packed form (``uint8`` array).

    ``data``: bytes-like or a ``uint8`` array of exactly ``ceil(3 * count / 8)`` bytes
    whose pad bits are zero, as :meth:`RemapFrame.packed_codes` makes them. Raises
    :class:`ExponentDecodeError` otherwise.
    """
    count = as_index(count, "count")
    if count < 0:
        raise ExponentDecodeError(f"count is {count}; a number of codes cannot be negative")
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise ExponentDecodeError(f"packed codes must be bytes or a uint8 array, not "
                                      f"{data.dtype}")
        packed = data.reshape(-1)
    else:
        try:
            packed = np.frombuffer(bytes(memoryview(data)), dtype=np.uint8)
        except TypeError:
            raise ExponentDecodeError(f"packed codes must be bytes or a uint8 array, not "
                                      f"{type(data).__name__}") from None
    nbytes = -(-CODE_BITS * count // 8)
    if packed.size != nbytes:
        raise ExponentDecodeError(f"{count} codes of {CODE_BITS} bits pack into {nbytes} "
                                  f"bytes, not {packed.size}")
    pad_bits = 8 * nbytes - CODE_BITS * count
    if pad_bits and packed[-1] & ((1 << pad_bits) - 1):
        raise ExponentDecodeError(f"the {pad_bits} pad bits after the last code are "
                                  f"{packed[-1] & ((1 << pad_bits) - 1):#b}, not zero")
    groups = np.zeros((-(-nbytes // 3), 3), dtype=np.uint32)
    groups.reshape(-1)[:nbytes] = packed
    words = (groups[:, 0] << 16) | (groups[:, 1] << 8) | groups[:, 2]
    codes = (words[:, None] >> _GROUP_SHIFTS) & 0x7
    return codes.astype(np.uint8).reshape(-1)[:count]


def _check_table(table):
    if not isinstance(table, ExponentTable):
        raise TypeError(f"table must be an ExponentTable, not {type(table).__name__}")


def encode(bits_or_bf16, table):
    """Encode bf16 values (``uint16`` bit patterns or ``ml_dtypes.bfloat16``, any shape,
    read in C order) with ``table``; returns a :class:`RemapFrame`."""
    _check_table(table)
    bits = _as_bf16_bits(bits_or_bf16)
    sign_mantissa, exponent = split(bits.reshape(-1))
    codes = np.take(table.code_of, exponent)
    escapes = exponent[codes == ESCAPE]
    return RemapFrame(codes=codes, sign_mantissa=sign_mantissa, escapes=escapes,
                      shape=tuple(bits.shape))


def _check_shape(shape):
    try:
        dims = tuple(shape)
    except TypeError:
        raise ExponentDecodeError(f"frame shape must be a tuple of sizes, not "
                                  f"{type(shape).__name__}") from None
    try:
        dims = tuple(as_index(dim, "frame shape entry") for dim in dims)
    except TypeError as error:
        raise ExponentDecodeError(f"frame shape {shape!r}: {error}") from None
    if any(dim < 0 for dim in dims):
        raise ExponentDecodeError(f"frame shape {dims} has a negative size")
    return dims


def decode(frame, table):
    """Decode a :class:`RemapFrame` with ``table``: ``uint16`` bf16 bit patterns of shape
    ``frame.shape``.

    Raises :class:`ExponentDecodeError` if the frame is inconsistent: fields that are not
    1-D ``uint8`` arrays, ``codes`` or ``sign_mantissa`` not one per element of
    ``frame.shape``, a code past 7, or a number of escapes other than the number of code
    0 entries. An escape may name an exponent that is also in the table (an encoder
    never does so); it decodes to that exponent.
    """
    _check_table(table)
    if not isinstance(frame, RemapFrame):
        raise TypeError(f"frame must be a RemapFrame, not {type(frame).__name__}")
    shape = _check_shape(frame.shape)
    count = math.prod(shape)
    codes = _check_codes(frame.codes)
    fields = {"sign_mantissa": np.asarray(frame.sign_mantissa),
              "escapes": np.asarray(frame.escapes)}
    for name, field in fields.items():
        if field.dtype != np.uint8 or field.ndim != 1:
            raise ExponentDecodeError(f"frame {name} must be a 1-D uint8 array, not "
                                      f"{field.dtype} of shape {field.shape}")
    sign_mantissa, escapes = fields["sign_mantissa"], fields["escapes"]
    for name, field in (("codes", codes), ("sign_mantissa", sign_mantissa)):
        if field.size != count:
            raise ExponentDecodeError(f"frame shape {shape} holds {count} values but "
                                      f"{name} has {field.size} entries")
    escaped = codes == ESCAPE
    escape_count = int(np.count_nonzero(escaped))
    if escapes.size != escape_count:
        raise ExponentDecodeError(f"frame has {escape_count} escape codes (code 0) but "
                                  f"{escapes.size} escaped exponents")
    exponent = np.take(table.exponent_of_code, codes)
    exponent[escaped] = escapes
    return join(sign_mantissa, exponent).reshape(shape)


# -- DFloat11-style alternative: Huffman on the exponent byte ------------------------------

@dataclass(frozen=True)
class HuffmanExponentFrame:
    """bf16 values with the exponent byte Huffman-coded (DFloat11 style).

    ``sign_mantissa`` is one raw byte a value; ``exponent_data`` / ``exponent_nbits`` is
    the Huffman frame of the exponent bytes (``docs/bitstream.md`` bit order) under
    ``codebook`` (a :class:`~linkcodec.golden.huffman.HuffmanCodebook`), which both ends
    hold; it never travels in the frame.
    """

    sign_mantissa: np.ndarray
    exponent_data: bytes
    exponent_nbits: int
    codebook: object
    shape: tuple

    def compressed_bits(self):
        return 8 * int(self.sign_mantissa.size) + int(self.exponent_nbits)

    def bits_per_value(self):
        if self.sign_mantissa.size == 0:
            raise ValueError("an empty frame has no bits per value")
        return self.compressed_bits() / self.sign_mantissa.size


def huffman_encode(bits_or_bf16, codebook=None):
    """Split bf16 values and Huffman-code their exponent bytes.

    ``codebook`` codes exponent bytes (e.g. built with ``HuffmanCodebook.from_batches``
    over earlier tensors' exponents: single-stage); ``None`` builds one from this
    tensor's own exponent histogram (the two-pass baseline).
    """
    from .huffman import HuffmanCodebook

    values = _as_bf16_bits(bits_or_bf16)
    sign_mantissa, exponent = split(values)
    sign_mantissa, exponent = sign_mantissa.reshape(-1), exponent.reshape(-1)
    if codebook is None:
        if exponent.size == 0:
            raise ExponentTableError("cannot build an exponent codebook from no values")
        codebook = HuffmanCodebook.from_pmf(exponent_histogram(values))
    data, nbits = codebook.encode(exponent)
    return HuffmanExponentFrame(sign_mantissa, data, nbits, codebook, tuple(values.shape))


def huffman_decode(frame):
    """The ``uint16`` bf16 bit patterns of a :class:`HuffmanExponentFrame`; a corrupt
    exponent frame raises the Huffman model's ``HuffmanDecodeError``."""
    if not isinstance(frame, HuffmanExponentFrame):
        raise TypeError(f"frame must be a HuffmanExponentFrame, not {type(frame).__name__}")
    shape = _check_shape(frame.shape)
    count = math.prod(shape)
    sign_mantissa = np.asarray(frame.sign_mantissa)
    if sign_mantissa.dtype != np.uint8 or sign_mantissa.size != count:
        raise ExponentDecodeError(f"frame shape {shape} holds {count} values but "
                                  f"sign_mantissa has {sign_mantissa.size} uint8 entries")
    exponent = frame.codebook.decode(frame.exponent_data, frame.exponent_nbits)
    if exponent.size != count:
        raise ExponentDecodeError(f"the exponent frame decodes to {exponent.size} values, "
                                  f"not {count}")
    return join(sign_mantissa.reshape(-1), exponent).reshape(shape)


# -- the wire format -------------------------------------------------------------------

#: Bits a value takes in the values stream: its code, then its sign+mantissa byte.
VALUE_BITS = CODE_BITS + 8


class WireFrame(NamedTuple):
    """A frame as a link carries it (``docs/bitstream.md``, "Exponent-remap frames"): two
    bit streams, each MSB first in ``bytes``, each with its exact bit count.

    - ``values``, ``values_bits``: per value, in element order, ``code(3) | sign(1) |
      mantissa(7)``: a fixed 11 bits, so value ``i`` is bits ``11 i .. 11 i + 10``;
    - ``escapes``, ``escapes_bits``: the exponent byte of every value whose code is 0,
      in element order: the ``j``-th escape is bits ``8 j .. 8 j + 7``.
    """

    values: bytes
    values_bits: int
    escapes: bytes
    escapes_bits: int

    def compressed_bits(self):
        """``values_bits + escapes_bits``: 11 bits a value and 8 an escape."""
        return self.values_bits + self.escapes_bits


def _unpack_bits(data, nbits, width, stream):
    """``nbits // width`` fields of ``width`` bits read MSB first from ``data``."""
    raw = np.frombuffer(bytes(data), dtype=np.uint8)
    if 8 * raw.size < nbits:
        raise ExponentWireError(f"the {stream} stream claims {nbits} bits but holds "
                                f"{8 * raw.size}", stream=stream, bit=8 * raw.size)
    bits = np.unpackbits(raw)[:nbits].reshape(-1, width).astype(np.uint16)
    return (bits << np.arange(width - 1, -1, -1, dtype=np.uint16)).sum(
        axis=1, dtype=np.uint16)


def wire_encode(bits_or_bf16, table):
    """Encode bf16 values (as :func:`encode` takes them) into a :class:`WireFrame`."""
    frame = encode(bits_or_bf16, table)
    fields = (frame.codes.astype(np.uint16) << 8) | frame.sign_mantissa
    values, values_bits = pack_codes(fields, np.full(frame.size, VALUE_BITS))
    return WireFrame(values=values, values_bits=values_bits,
                     escapes=frame.escapes.tobytes(),
                     escapes_bits=8 * int(frame.escapes.size))


def wire_decode(wire, table):
    """Decode a :class:`WireFrame` with ``table``: a flat ``uint16`` array of bf16 bit
    patterns, one per value.

    Raises :class:`ExponentWireError`, naming the stream and the bit position, for what no
    valid encoder makes: a values stream whose bit count is not a whole number of 11-bit
    values (at the start of the cut-off value); fewer escape bytes than escape codes (at
    the end of the escapes stream: the first missing escape) or more (at the first one too
    many), or an escapes bit count that is not whole bytes; an escape that carries an
    exponent of the table (at that escape: an encoder would have sent the table's code).
    """
    _check_table(table)
    if not isinstance(wire, WireFrame):
        raise TypeError(f"wire must be a WireFrame, not {type(wire).__name__}")
    values_bits = as_index(wire.values_bits, "values_bits")
    escapes_bits = as_index(wire.escapes_bits, "escapes_bits")
    for stream, nbits in (("values", values_bits), ("escapes", escapes_bits)):
        if nbits < 0:
            raise ExponentWireError(f"the {stream} stream's bit count is {nbits}; it "
                                    f"cannot be negative", stream=stream, bit=0)
    count, cut = divmod(values_bits, VALUE_BITS)
    if cut:
        raise ExponentWireError(
            f"truncated value at bit {VALUE_BITS * count} of the values stream: "
            f"{values_bits} bits hold {count} values of {VALUE_BITS} bits and {cut} bits "
            f"more", stream="values", bit=VALUE_BITS * count)
    if escapes_bits % 8:
        raise ExponentWireError(
            f"truncated escape at bit {escapes_bits - escapes_bits % 8} of the escapes "
            f"stream: {escapes_bits} bits are not whole exponent bytes",
            stream="escapes", bit=escapes_bits - escapes_bits % 8)
    fields = _unpack_bits(wire.values, values_bits, VALUE_BITS, "values")
    escapes = _unpack_bits(wire.escapes, escapes_bits, 8, "escapes").astype(np.uint8)
    codes = (fields >> 8).astype(np.uint8)
    escaped = np.flatnonzero(codes == ESCAPE)
    if escaped.size > escapes.size:
        value = int(escaped[escapes.size])
        raise ExponentWireError(
            f"missing escape at bit {escapes_bits} of the escapes stream: value {value} "
            f"(values bit {VALUE_BITS * value}) is escape number {escapes.size} but the "
            f"stream holds {escapes.size} escapes", stream="escapes", bit=escapes_bits)
    if escapes.size > escaped.size:
        raise ExponentWireError(
            f"extra escape at bit {8 * escaped.size} of the escapes stream: "
            f"{escapes.size} escapes for {escaped.size} escape codes",
            stream="escapes", bit=8 * escaped.size)
    in_table = np.flatnonzero(table.code_of[escapes] != ESCAPE)
    if in_table.size:
        index = int(in_table[0])
        exponent = int(escapes[index])
        raise ExponentWireError(
            f"invalid escape at bit {8 * index} of the escapes stream: value "
            f"{int(escaped[index])} escapes exponent {exponent}, which the table sends as "
            f"code {int(table.code_of[exponent])}", stream="escapes", bit=8 * index)
    exponent = np.take(table.exponent_of_code, codes)
    exponent[escaped] = escapes
    return join((fields & 0xFF).astype(np.uint8), exponent)


def wire_decode_prefix(wire, table):
    """What a decoder emits for one :class:`WireFrame`, whatever it holds:
    ``(values, error)``, the ``uint16`` bf16 patterns of the values before the first fault
    and whether the frame ends with the error beat.

    Faults, each at a value: a value whose 11 bits are not all in the values stream; a
    code-0 value with no whole escape byte left; an escape that carries an exponent of
    the table. The values before the first of them are emitted, then the error. If there
    is none, every value is emitted, and the frame still ends in error if the escapes
    stream holds bits no value took (extra escapes, or a cut-off byte). A frame
    :func:`wire_decode` accepts gives its values and no error.
    """
    _check_table(table)
    if not isinstance(wire, WireFrame):
        raise TypeError(f"wire must be a WireFrame, not {type(wire).__name__}")
    values_bits = as_index(wire.values_bits, "values_bits")
    escapes_bits = as_index(wire.escapes_bits, "escapes_bits")
    if values_bits < 0 or escapes_bits < 0:
        raise ExponentWireError("a stream's bit count cannot be negative",
                                stream="values" if values_bits < 0 else "escapes", bit=0)
    count = values_bits // VALUE_BITS
    fields = _unpack_bits(wire.values, VALUE_BITS * count, VALUE_BITS, "values")
    available = escapes_bits // 8
    escapes = _unpack_bits(wire.escapes, 8 * available, 8, "escapes").astype(np.uint8)
    codes = (fields >> 8).astype(np.uint8)
    escaped = np.flatnonzero(codes == ESCAPE)
    used = min(escaped.size, available)
    faults = []
    if escaped.size > available:
        faults.append(int(escaped[available]))          # the first value with no escape
    in_table = np.flatnonzero(table.code_of[escapes[:used]] != ESCAPE)
    if in_table.size:
        faults.append(int(escaped[in_table[0]]))
    if faults:
        stop = min(faults)
        error = True
    else:
        stop = count
        error = values_bits % VALUE_BITS != 0 or escapes_bits != 8 * escaped.size
    exponent = np.take(table.exponent_of_code, codes[:stop])
    taken = escaped[escaped < stop]
    exponent[taken] = escapes[:taken.size]
    return join((fields[:stop] & 0xFF).astype(np.uint8), exponent), bool(error)


def escape_words(bits_or_bf16, table, *, lanes, word_width):
    """The escapes port's words for one frame, as the encoder sends them
    (``docs/bitstream.md``, "Escape words"): one word for each beat of ``lanes`` values
    (the last beat may hold fewer) that holds an escape, carrying that beat's escape
    bytes, ``bits = 8 x`` their number, MSB first; the frame's last beat's word has
    ``last = 1``, and if that beat holds no escape (or the frame is empty) the frame ends
    with a word of ``bits = 0, last = 1``. ``word_width`` must hold a beat's escapes
    (``8 * lanes`` bits at least). Words are dicts of ``data``, ``bits``, ``last``."""
    lanes = as_index(lanes, "lanes")
    word_width = check_word_width(word_width)
    if lanes < 1 or 8 * lanes > word_width:
        raise ValueError(f"a beat of {lanes} values needs up to {8 * lanes} escape bits; "
                         f"a word of {word_width} bits cannot hold them")
    frame = encode(bits_or_bf16, table)
    beats = -(-frame.size // lanes)
    beat_of = np.flatnonzero(frame.codes == ESCAPE) // lanes
    counts = np.bincount(beat_of, minlength=beats)
    ends = np.cumsum(counts)
    escapes = frame.escapes.tobytes()
    width_bytes = word_width // 8
    words = []
    for beat in np.flatnonzero(counts).tolist():
        count = int(counts[beat])
        chunk = escapes[int(ends[beat]) - count:int(ends[beat])]
        words.append({"data": int.from_bytes(chunk + bytes(width_bytes - count), "big"),
                      "bits": 8 * count, "last": int(beat == beats - 1)})
    if not words or not words[-1]["last"]:
        words.append({"data": 0, "bits": 0, "last": 1})
    return words


def escape_word_faults(bits, last, word_width):
    """Which escapes-port words are faults (bool array): ``bits`` above ``W`` or not a
    multiple of 8 anywhere, or 0 on a word without ``last``."""
    bits = np.asarray(bits)
    last = np.asarray(last, dtype=bool)
    return (bits > word_width) | (bits % 8 != 0) | (~last & (bits == 0))


def escape_frames(words, word_width, *, unterminated="raise"):
    """Cut escapes-port ``words`` into frames by the escapes port's rules: per frame a
    :class:`~linkcodec.golden.words.WordFrame` ``(data, nbits, fault, words)``.

    Frames end at a word with ``last = 1`` and words are checked as
    :func:`~linkcodec.golden.words.frames_from_words` checks them (same arguments, same
    errors). A word may carry any whole number of bytes, from the MSB: ``bits`` a
    multiple of 8, at most ``W``, and more than 0 on every word but a frame's last. The
    first word that is not (:func:`escape_word_faults`) is a fault where its bits begin,
    the bits of the frame's words before it; ``data`` is the bytes of the words before
    the fault (all of the frame's words without one), joined.
    """
    word_width = check_word_width(word_width)
    frames = frames_from_words(words, word_width, unterminated=unterminated)
    taken = sum(frame.words for frame in frames)
    width_bytes = word_width // 8
    bits = np.array([operator.index(words[index]["bits"]) for index in range(taken)],
                    dtype=np.int64)
    last = np.array([bool(words[index]["last"]) for index in range(taken)], dtype=bool)
    faulty = escape_word_faults(bits, last, word_width)
    result, start = [], 0
    for frame in frames:
        stop = start + frame.words
        faults = np.flatnonzero(faulty[start:stop])
        kept = int(faults[0]) if faults.size else frame.words
        data = b"".join(
            operator.index(words[index]["data"]).to_bytes(width_bytes, "big")[
                :int(bits[index]) // 8]
            for index in range(start, start + kept))
        nbits = 8 * len(data)
        result.append(WordFrame(data, nbits, nbits if faults.size else None, frame.words))
        start = stop
    return result


def wire_decode_words(value_words, escape_words, word_width, table):
    """What a decoder emits for the words of both ports: per frame, ``(values, error)``.

    ``value_words`` and ``escape_words`` are word sequences as
    :func:`linkcodec.golden.words.frames_from_words` takes them (``data``, ``bits``,
    ``last``), both ``word_width`` bits wide; frame ``n`` of one port goes with frame
    ``n`` of the other, so both must hold the same number of frames (a
    :class:`ValueError` says otherwise). The values port keeps the word rules of
    ``docs/bitstream.md``, "Faults in words" (:func:`frames_from_words`); the escapes
    port's words carry whole bytes (:func:`escape_frames`). A word fault on either port
    cuts that stream where the faulty word's bits begin; the frame is then decoded as
    :func:`wire_decode_prefix` decodes the streams so cut, and ends in error.
    """
    values = frames_from_words(value_words, word_width)
    escapes = escape_frames(escape_words, word_width)
    if len(values) != len(escapes):
        raise ValueError(f"the values port holds {len(values)} frames and the escapes port "
                         f"{len(escapes)}; each frame has one of each")
    decoded = []
    for frame, escape in zip(values, escapes):
        wire = WireFrame(frame.data, frame.nbits, escape.data, escape.nbits)
        out, error = wire_decode_prefix(wire, table)
        decoded.append((out, error or frame.fault is not None or escape.fault is not None))
    return decoded


# -- on the link ------------------------------------------------------------------------

def _whole_bytes(bits):
    return (bits + 7) // 8


class ExponentLinkCodec(LinkCodec):
    """bf16 values on the link, exponents remapped: a flit's body is the values stream (11
    bits a value), then, from the next byte, the escapes stream (a byte an escape); its
    table image is the 7 exponents of codes 1..7."""

    name, codec_id, table_type, symbol_bytes = "exponent", 3, ExponentTable, 2
    decode_errors = (ExponentWireError, BitstreamError)

    def flit_bits(self, tables, symbols):
        escapes = tables.code_of[(symbols >> 7) & 0xFF] == ESCAPE
        m = np.arange(symbols.size + 1, dtype=np.int64)
        escaped = np.concatenate(([0], np.cumsum(escapes, dtype=np.int64)))
        return 8 * _whole_bytes(VALUE_BITS * m) + 8 * escaped

    def frame_bits(self, tables, symbols):
        wire = wire_encode(symbols, tables)
        return 8 * _whole_bytes(wire.values_bits) + wire.escapes_bits

    def encode(self, tables, symbols):
        wire = wire_encode(symbols, tables)
        values = wire.values[:_whole_bytes(wire.values_bits)]
        return values + wire.escapes, 8 * len(values) + wire.escapes_bits

    def decode(self, tables, body, nbits, count):
        split = _whole_bytes(VALUE_BITS * count)
        if 8 * split > nbits:
            raise ExponentWireError(f"{count} values take {VALUE_BITS * count} bits but "
                                    f"the flit holds {nbits}", stream="values", bit=nbits)
        wire = WireFrame(bytes(body[:split]), VALUE_BITS * count,
                         bytes(body[split:_whole_bytes(nbits)]), nbits - 8 * split)
        try:
            return wire_decode(wire, tables)
        except ExponentWireError as error:
            offset = 0 if error.stream == "values" else 8 * split
            raise ExponentWireError(str(error), stream=error.stream,
                                    bit=offset + error.bit) from None

    def image(self, table):
        return bytes(table.exponents)

    def image_bytes(self):
        return 7

    def from_image(self, image):
        return ExponentTable(tuple(image))
