"""The frame rules shared by the golden codec models: bit order, errors and input checks.

A *frame* is a sequence of code words concatenated most significant bit first: bit ``i``
of the frame is bit ``7 - i % 8`` of byte ``i // 8`` (``docs/bitstream.md``, "Frame"),
the last byte zero-padded. A frame travels as ``(data, nbits)``.

- :mod:`~linkcodec.golden.prefix_encoder` builds frames from code words
  (:func:`~linkcodec.golden.prefix_encoder.pack_codes`,
  :class:`~linkcodec.golden.prefix_encoder.SymbolEncoder`);
- :mod:`~linkcodec.golden.prefix_decoder` reads them back through a look-up table
  indexed by a fixed-width window of the frame
  (:class:`~linkcodec.golden.prefix_decoder.PrefixDecoder`).

This module holds what both sides and the codecs agree on: :data:`MAX_CODE_LENGTH`, the
decode errors, :class:`DecodeErrors` (a codec's own subclasses of them) and the checks of
frame bytes, symbols and integer arguments.

Decode errors derive from :class:`BitstreamError` (a :class:`ValueError`) and name the
bit position: :class:`InvalidCodeError` for a window that is no code word,
:class:`TruncatedStreamError` for a code word that runs past the end of the frame.
"""

import operator
from dataclasses import dataclass

import numpy as np

__all__ = [
    "MAX_CODE_LENGTH",
    "BitstreamError",
    "TruncatedStreamError",
    "InvalidCodeError",
    "DecodeErrors",
    "as_index",
    "as_int_array",
    "as_frame_bytes",
    "as_symbols",
]

#: Longest code word (and widest decode window) the machinery handles.
MAX_CODE_LENGTH = 24


class BitstreamError(ValueError):
    """A frame cannot be decoded. ``bit`` is the frame bit position concerned, if any."""

    def __init__(self, message, *, bit=None):
        super().__init__(message)
        self.bit = bit


class TruncatedStreamError(BitstreamError):
    """A code word starts before the end of the frame but ends after it.

    ``bit`` is where the code word starts, ``length`` its length, ``nbits`` the length
    of the frame and ``window`` the decode window at ``bit`` (zeros past the frame).
    """

    def __init__(self, message, *, bit=None, length=None, nbits=None, window=None):
        super().__init__(message, bit=bit)
        self.length = length
        self.nbits = nbits
        self.window = window


class InvalidCodeError(BitstreamError):
    """The bits at ``bit`` are no code word.

    ``window`` is the decode window there (``window_bits`` wide, frame bits past the end
    of the frame read as zero).
    """

    def __init__(self, message, *, bit=None, window=None):
        super().__init__(message, bit=bit)
        self.window = window


@dataclass(frozen=True)
class DecodeErrors:
    """A codec's own decode errors, and the conversion of the shared ones into them.

    ``decode`` derives from :class:`BitstreamError`; ``invalid_code`` derives from it and
    from :class:`InvalidCodeError`, ``truncated_stream`` from it and from
    :class:`TruncatedStreamError`, so that a caller may catch either family. Checked on
    construction (:class:`TypeError`).
    """

    decode: type
    invalid_code: type
    truncated_stream: type

    def __post_init__(self):
        # ``decode`` is checked first, so it is a class when the others are checked.
        for name, bases in (("decode", (BitstreamError,)),
                            ("invalid_code", (self.decode, InvalidCodeError)),
                            ("truncated_stream", (self.decode, TruncatedStreamError))):
            cls = getattr(self, name)
            for base in bases:
                if not (isinstance(cls, type) and issubclass(cls, base)):
                    raise TypeError(f"{name} must be a subclass of {base.__name__}, "
                                    f"not {cls!r}")

    def convert(self, error, *, invalid_message=None, truncated_message=None):
        """``error`` (a :class:`BitstreamError` of the shared decoder) as the codec's
        class, with the same fields (``bit``, ``window``, ``length``, ``nbits``).

        ``invalid_message`` / ``truncated_message``: functions of the error that give the
        codec's own message for an invalid code / a truncated stream (by default the
        shared message). Returns the new error; the caller raises it ``from None``.
        """
        if isinstance(error, InvalidCodeError):
            message = invalid_message(error) if invalid_message else str(error)
            return self.invalid_code(message, bit=error.bit, window=error.window)
        if isinstance(error, TruncatedStreamError):
            message = truncated_message(error) if truncated_message else str(error)
            return self.truncated_stream(message, bit=error.bit, length=error.length,
                                         nbits=error.nbits, window=error.window)
        return self.decode(str(error), bit=error.bit)


# -- input checks ----------------------------------------------------------------------

def as_index(value, name):
    """``value`` as a Python int; bools and non-integers raise :class:`TypeError` naming
    ``name``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


def as_int_array(values, name):
    """``values`` as a 1-D integer array (no copy when already one); an empty list is
    fine. Raises :class:`ValueError` for another shape, :class:`TypeError` for other
    element types, both naming ``name``."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, not of shape {array.shape}")
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        if array.size == 0 and array.dtype == np.float64:
            # np.asarray([]) is float64: an empty list is a fine empty input.
            return array.astype(np.int64)
        raise TypeError(f"{name} must hold integers, not {array.dtype}")
    return array


def as_frame_bytes(data):
    """The frame bytes (bytes-like or a ``uint8`` array) as a flat ``uint8`` array view;
    anything else raises :class:`TypeError`."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise TypeError(f"frame data must be bytes or a uint8 array, not a {data.dtype} array")
        return data.reshape(-1)
    if isinstance(data, str):
        raise TypeError("frame data must be bytes or a uint8 array, not str")
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError(
            f"frame data must be bytes or a uint8 array, not {type(data).__name__}") from None
    return np.frombuffer(view.cast("B") if view.format != "B" else view, dtype=np.uint8)


def as_symbols(symbols):
    """``symbols`` as a flat uint8 array (bytes-like objects are taken as they are)."""
    if isinstance(symbols, (bytes, bytearray, memoryview)):
        return np.frombuffer(symbols, dtype=np.uint8)
    array = np.asarray(symbols)
    if array.dtype != np.uint8:
        raise TypeError(f"symbols must be a uint8 array of e4m3 bit patterns, not "
                        f"{array.dtype}; cast tensors with "
                        f"linkcodec.golden.formats.to_e4m3_bits")
    return array.reshape(-1)
