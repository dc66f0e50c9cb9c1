"""Coded frames as words on the wire: the golden model's word-level front end.

A decoder block takes a coded frame as ``W``-bit words (``docs/bitstream.md``, "Words on
the wire"): each word a ``dict`` (or any mapping) of ``data`` (``W`` bits, the first in
the MSB), ``bits`` and ``last``. This module states, for *any* word sequence, what a
decoder must emit, by the rules of ``docs/bitstream.md``, "Faults in words":

- :func:`frames_from_words` cuts the words into frames (each up to and including its
  ``last`` word) and, per frame, finds the first *word fault* and the bits a decoder may
  decode: :class:`WordFrame` ``(data, nbits, fault, words)``;
- :func:`decode_longest_prefix` decodes the codes of one frame up to the first invalid or
  incomplete code: :class:`DecodedFrame` ``(symbols, error)``;
- :func:`decode_words` is both: per frame, the symbols a decoder emits and whether the
  frame ends with the error beat.

The decoding itself is a golden decoder's: anything with ``decode(data, nbits)`` that
raises :class:`~linkcodec.golden.bitstream.InvalidCodeError` or
:class:`~linkcodec.golden.bitstream.TruncatedStreamError` with the bit position (a
:class:`~linkcodec.golden.qlc.QlcCode`, a
:class:`~linkcodec.golden.prefix_decoder.PrefixDecoder`). The symbols before a faulty
code are those of the frame cut at the fault's position, so a frame takes at most two
vectorised decodes: no Python loop runs per symbol; one runs per frame, and field
extraction visits each word once.

Bad arguments raise :class:`TypeError` or :class:`ValueError` naming the word and field;
a sequence that stops inside a frame raises :class:`UnterminatedFrameError` unless
``unterminated="drop"``.
"""

import operator
from typing import NamedTuple

import numpy as np

from .bitstream import InvalidCodeError, TruncatedStreamError, as_frame_bytes, as_index

__all__ = [
    "DecodedFrame",
    "UnterminatedFrameError",
    "WordFrame",
    "check_word_width",
    "decode_longest_prefix",
    "decode_words",
    "frames_from_words",
    "word_faults",
]

#: What to do with words after the last ``last = 1`` word.
UNTERMINATED = ("raise", "drop")


class UnterminatedFrameError(ValueError):
    """The words end inside a frame: no word with ``last = 1`` closes it.

    ``words`` is how many words the unterminated frame has.
    """

    def __init__(self, message, *, words):
        super().__init__(message)
        self.words = words


class WordFrame(NamedTuple):
    """One frame as a decoder may decode it.

    ``data`` holds the ``nbits`` bits a decoder decodes from (``ceil(nbits / 8)`` bytes,
    zero past ``nbits``): all the frame's bits, or, after a word fault, the bits before
    it. ``fault`` is the frame bit position of the first word fault (then ``nbits ==
    fault``), or None. ``words`` is how many words the frame had on the wire, its
    ``last`` word included.
    """

    data: bytes
    nbits: int
    fault: int | None
    words: int


class DecodedFrame(NamedTuple):
    """What a decoder emits for a frame: ``symbols`` (an array), then the frame's end,
    with the error beat if ``error``."""

    symbols: np.ndarray
    error: bool


def check_word_width(word_width):
    """``word_width`` as an int: a positive multiple of 8 (as the hardware's)."""
    word_width = as_index(word_width, "word_width")
    if word_width < 8 or word_width % 8:
        raise ValueError(f"word_width must be a positive multiple of 8, not {word_width}")
    return word_width


def _check_unterminated(unterminated):
    if unterminated not in UNTERMINATED:
        raise ValueError(f"unterminated must be one of {', '.join(map(repr, UNTERMINATED))}, "
                         f"not {unterminated!r}")


def _field(words, index, key):
    """``words[index][key]``, or an error naming the word and the field."""
    word = words[index]
    try:
        return word[key]
    except (KeyError, IndexError):
        raise ValueError(f"word {index} has no {key!r} field") from None
    except TypeError:
        raise TypeError(f"word {index} must be a mapping of data, bits and last, not "
                        f"{type(word).__name__}") from None


def _check_word(words, index, word_width):
    """Raise the error that names what is wrong with ``words[index]``, if anything."""
    field_bits = word_width.bit_length()
    for key in ("data", "bits", "last"):
        value = _field(words, index, key)
        if isinstance(value, (bool, np.bool_)):
            if key != "last":
                raise TypeError(f"word {index}: {key} must be an integer, not a bool")
            value = int(value)
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"word {index}: {key} must be an integer, not "
                            f"{type(value).__name__}") from None
        if key == "data" and not 0 <= value < 1 << word_width:
            raise ValueError(f"word {index}: data {value:#x} does not fit in "
                             f"{word_width} bits")
        if key == "bits" and not 0 <= value < 1 << field_bits:
            raise ValueError(f"word {index}: bits is {value}; the bits field of a "
                             f"{word_width}-bit word holds 0..{(1 << field_bits) - 1}")
        if key == "last" and value not in (0, 1):
            raise ValueError(f"word {index}: last is {value}, not 0 or 1")


def _fields(words, word_width):
    """``(buffer, bits, last)``: every word's data as ``W / 8`` big-endian bytes, one
    after another, and the ``bits`` (int64) and ``last`` (bool) arrays.

    The fast path visits each word once per field; if anything is off, a second pass
    finds the first bad word and names it.
    """
    try:
        count = len(words)
    except TypeError:
        raise TypeError(f"words must be a sequence of word mappings, not "
                        f"{type(words).__name__}") from None
    width_bytes = word_width // 8
    index = operator.index
    try:
        chunks = [index(word["data"]).to_bytes(width_bytes, "big") for word in words]
        bits = np.array([index(word["bits"]) for word in words], dtype=np.int64)
        last = np.array([word["last"] for word in words])
        if last.dtype != np.bool_ and not np.issubdtype(last.dtype, np.integer):
            raise TypeError("a last that is no integer")
        no_bools = not any(type(word["data"]) is bool or type(word["bits"]) is bool
                           or isinstance(word["data"], np.bool_)
                           or isinstance(word["bits"], np.bool_) for word in words)
        good = (no_bools and bits.min(initial=0) >= 0
                and bits.max(initial=0) < 1 << word_width.bit_length()
                and ((last == 0) | (last == 1)).all())
    except (TypeError, ValueError, KeyError, IndexError, OverflowError):
        good = False
    if not good:
        for position in range(count):
            _check_word(words, position, word_width)
        raise AssertionError("frames_from_words: a word failed a check that names no word")
    return b"".join(chunks), bits.reshape(count), last.reshape(count).astype(bool)


def word_faults(bits, last, word_width):
    """Which words are faults (bool array): ``bits > W`` anywhere, or ``bits != W`` on a
    word without ``last``."""
    bits = np.asarray(bits)
    last = np.asarray(last, dtype=bool)
    return (bits > word_width) | (~last & (bits != word_width))


def frames_from_words(words, word_width, *, unterminated="raise"):
    """Cut ``words`` into frames and find each frame's first word fault.

    ``words``: a sequence of mappings with integer ``data`` (``0 .. 2**W - 1``), ``bits``
    (``>= 0``) and ``last`` (0 or 1), as ``linkcodec.rtl.blocks.beats.frame_words`` makes them.
    ``word_width`` ``W`` is a positive multiple of 8. A frame is the words up to and
    including one with ``last = 1``. Words after the last such word form no frame: they
    raise :class:`UnterminatedFrameError` or, with ``unterminated="drop"``, are left out.

    Returns a list of :class:`WordFrame`, one per frame, in order.
    """
    word_width = check_word_width(word_width)
    _check_unterminated(unterminated)
    buffer, bits, last = _fields(words, word_width)
    width_bytes = word_width // 8
    ends = np.flatnonzero(last)
    trailing = bits.size - (int(ends[-1]) + 1 if ends.size else 0)
    if trailing and unterminated == "raise":
        raise UnterminatedFrameError(
            f"the last {trailing} word(s) form a frame with no word that has last = 1; pass "
            f"unterminated='drop' to leave them out", words=trailing)
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)[:ends.size]

    faulty = np.flatnonzero(word_faults(bits, last, word_width))
    first = np.searchsorted(faulty, starts)              # first faulty word at or after
    first_fault = np.append(faulty, bits.size)[first]    # (bits.size: none at all)
    has_fault = first_fault <= ends
    nbits = np.where(has_fault, (first_fault - starts) * word_width,
                     (ends - starts) * word_width + bits[ends])

    frames = []
    for start, end, length, faulted in zip(starts.tolist(), ends.tolist(), nbits.tolist(),
                                           has_fault.tolist()):
        offset = start * width_bytes
        data = bytearray(buffer[offset:offset + -(-length // 8)])
        if length % 8:
            data[-1] &= (0xFF << (8 - length % 8)) & 0xFF    # pad bits read as zero
        frames.append(WordFrame(bytes(data), length, length if faulted else None,
                                end - start + 1))
    return frames


def _check_decoder(decoder):
    if not callable(getattr(decoder, "decode", None)):
        raise TypeError(f"decoder must have a decode(data, nbits) method (a QlcCode or a "
                        f"PrefixDecoder), not {type(decoder).__name__}")


def decode_longest_prefix(decoder, data, nbits):
    """Decode the frame ``(data, nbits)`` up to its first invalid or incomplete code.

    ``decoder`` has ``decode(data, nbits)`` and raises
    :class:`~linkcodec.golden.bitstream.InvalidCodeError` or
    :class:`~linkcodec.golden.bitstream.TruncatedStreamError` naming the ``bit`` where
    the bad code starts (a :class:`~linkcodec.golden.qlc.QlcCode` does). Returns
    :class:`DecodedFrame`: the symbols of the complete, valid codes before that bit, and
    ``error`` True if there was such a code. Every code before it is complete and valid,
    so those symbols are the frame cut at ``bit``, decoded: two vectorised decodes, no
    loop per symbol. Other errors (``nbits`` past ``data``) propagate.
    """
    _check_decoder(decoder)
    try:
        return DecodedFrame(decoder.decode(data, nbits), False)
    except (InvalidCodeError, TruncatedStreamError) as error:
        if error.bit is None:
            raise
        return DecodedFrame(decoder.decode(data, error.bit), True)


def decode_words(decoder, words, word_width, *, unterminated="raise"):
    """What a decoder emits for ``words``: per frame, a :class:`DecodedFrame`.

    Frames and faults are those of :func:`frames_from_words` (same arguments); each
    frame's bits are decoded by :func:`decode_longest_prefix` with ``decoder``. A frame
    ends with the error beat (``error`` True) if it had a word fault, an invalid code or
    an incomplete code; its symbols are those decoded before the first of them.
    """
    _check_decoder(decoder)
    frames = frames_from_words(words, word_width, unterminated=unterminated)
    decoded = []
    for frame in frames:
        symbols, error = decode_longest_prefix(decoder, as_frame_bytes(frame.data),
                                               frame.nbits)
        decoded.append(DecodedFrame(symbols, error or frame.fault is not None))
    return decoded
