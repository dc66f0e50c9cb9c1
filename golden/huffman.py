"""Golden model of single-stage Huffman coding for FP8 e4m3 symbols.

*Single-stage*: no histogram, tree or codebook is built or sent per batch. The codebook
comes from the average PMF of **earlier** batches, is built off the critical path, is
loaded into both ends of the link beforehand and is never carried in the stream. A frame
is just the code words of its symbols (``docs/huffman.md``).

- :func:`code_lengths` -- optimal length-limited code lengths (package-merge, exact);
- :func:`canonical_codes` -- canonical code words for a vector of lengths;
- :func:`smooth_pmf` and :func:`average_pmf` -- the PMF a codebook is built from;
- :class:`HuffmanCodebook` -- 256 (code, length) pairs: ``encode`` / ``decode`` frames,
  ``expected_bits``, JSON ``save`` / ``load`` with validation;
- :func:`per_shard_huffman_bits` and :func:`shannon_bits` -- the two-pass baseline
  (a code built from the shard itself) and the order-0 entropy, in bits per symbol.

**Bit order.** As in ``docs/bitstream.md`` ("Frame"): code words are concatenated most
significant bit first, bit ``i`` of a frame is bit ``7 - i % 8`` of byte ``i // 8``, and
the last byte is zero-padded. :meth:`HuffmanCodebook.encode` returns ``(data, nbits)``.

**Smoothing.** Every one of the 256 symbols needs a code, also those that no earlier
batch held. A codebook is built from

    pmf_smoothed = (1 - smoothing) * pmf + smoothing / 256

with ``pmf`` normalised to sum 1 and ``smoothing`` = :data:`DEFAULT_SMOOTHING` = 2**-16.
An unseen symbol then weighs 2**-24, so under the default limit it gets a code of the
longest length, 15 bits, and takes 2**-15 of the code space from the seen symbols: with
``u`` unseen symbols that costs about ``u * 2**-15 / ln 2`` bits/symbol. On the bundled
tensors the cost stays below 0.005 bits/symbol (``docs/huffman.md``; a test checks it).
For an ideal code the mixture itself would cost at most ``-log2(1 - 2**-16)`` = 2.2e-5
bits/symbol.

**Tie-breaking.** Lengths are optimal; among optimal length vectors, a symbol never gets
a longer code than a symbol of the same weight with a larger value. Canonical codes are
assigned in (length, symbol) order.

Errors: :class:`HuffmanCodebookError` (unusable weights, bad lengths or codes, a bad
codebook file) and :class:`HuffmanDecodeError` (a frame cannot be decoded), which derives
from :class:`~linkcodec.golden.bitstream.BitstreamError`; its subclasses
:class:`HuffmanInvalidCodeError` and :class:`HuffmanTruncatedStreamError` also derive from
the matching :mod:`~linkcodec.golden.bitstream` errors.
"""

import copy
import hashlib
import json
import math

import numpy as np

from .bitstream import (MAX_CODE_LENGTH, BitstreamError, DecodeErrors, InvalidCodeError,
                        TruncatedStreamError, as_frame_bytes, as_index, as_symbols)
from .formats import (FormatError, bf16_sigma, bf16_times_power_of_two, check_scale,
                      check_sigma, e4m3_pmf_at_scale, sigma_shift)
from .link_codec import LinkCodec
from .pmf import check_pmf
from .prefix_decoder import PrefixDecoder
from .prefix_encoder import SymbolEncoder, pack_codes

__all__ = [
    "MAX_LINK_HUFFMAN_LENGTH",
    "HuffmanLinkCodec",
    "SYMBOLS",
    "DEFAULT_MAX_LENGTH",
    "DEFAULT_SMOOTHING",
    "VALUE_BITS",
    "CODED_BITS",
    "DEFAULT_CODED_BITS",
    "FORMAT",
    "VERSION",
    "HuffmanCodebookError",
    "HuffmanDecodeError",
    "HuffmanInvalidCodeError",
    "HuffmanTruncatedStreamError",
    "code_lengths",
    "canonical_codes",
    "smooth_pmf",
    "average_pmf",
    "batches_at_sigma",
    "check_split",
    "as_values",
    "coded_part",
    "HuffmanCodebook",
    "per_shard_huffman_bits",
    "shannon_bits",
    "entropy_bits",
]

#: Number of symbols (e4m3 bit patterns).
SYMBOLS = 256

#: Default code length limit. The encoder's table has 256 entries of (code, length); with
#: codes of at most 15 bits, the length 1..15 fits a 4-bit field as it is, so an entry is
#: 15 + 4 = 19 bits and a 256 x 19-bit memory holds the codebook. 15 is also DEFLATE's
#: limit, and a canonical decoder needs one first-code comparator per length. On the
#: bundled tensors (the smoothed average PMF of each kind, and of each layer over its
#: steps) it costs less than 0.005 bits/symbol against the widest limit, 24 bits
#: (``docs/huffman.md``): it mostly shortens the codes of symbols that only the
#: smoothing gives a code.
DEFAULT_MAX_LENGTH = 15

#: Weight of the uniform distribution mixed into a codebook's PMF (see the module doc).
DEFAULT_SMOOTHING = 2.0 ** -16

#: The widths of the values a codebook codes (``value_bits``): 8 (e4m3 symbols) or 16
#: (bf16 values, coded by their top ``coded_bits``, the rest sent raw after each code).
VALUE_BITS = (8, 16)

#: The widths of the coded part of a value (``coded_bits``): 8 to 12 bits, so the code's
#: alphabet is 256 to 4,096 symbols. e4m3 codebooks code all 8 bits.
CODED_BITS = range(8, 13)

#: The default ``coded_bits`` of each ``value_bits``: all of an e4m3 symbol; for bf16, the
#: sign, the exponent and the two highest mantissa bits (11), chosen by measurement
#: (``linkcodec bench --bf16``, ``docs/huffman.md`` "bf16 values").
DEFAULT_CODED_BITS = {8: 8, 16: 11}

#: ``format`` and ``version`` of a codebook file. Version 1 files are e4m3 codebooks
#: (8-bit values, every symbol coded, no escape); a codebook with wider values or an
#: escape is written as version 2, with ``value_bits``, ``coded_bits`` and
#: ``escape_length``; an e4m3 codebook without escape is still written as version 1.
FORMAT = "linkcodec-huffman-codebook"
VERSION = 1
VERSIONS = (1, 2)

# The smallest limit that holds every symbol: 2**8 codes.
_MIN_CODEBOOK_LENGTH = 8
_JSON_KEYS = ("format", "version", "id", "max_length", "lengths", "codes", "source")
_JSON_KEYS_2 = _JSON_KEYS[:4] + ("value_bits", "coded_bits", "escape_length",
                                 "escape_code") + _JSON_KEYS[4:]


class HuffmanCodebookError(ValueError):
    """Weights, code lengths, codes or a codebook file cannot make a Huffman codebook."""


class HuffmanDecodeError(BitstreamError):
    """A Huffman frame cannot be decoded; ``bit`` is where, when known."""


class HuffmanInvalidCodeError(HuffmanDecodeError, InvalidCodeError):
    """The bits at ``bit`` start no code word (only possible with an incomplete code)."""


class HuffmanTruncatedStreamError(HuffmanDecodeError, TruncatedStreamError):
    """The last code word of a frame runs past the frame's end."""


_DECODE_ERRORS = DecodeErrors(HuffmanDecodeError, HuffmanInvalidCodeError,
                              HuffmanTruncatedStreamError)


# -- input checks ----------------------------------------------------------------------

def _check_max_length(max_length, smallest=1):
    max_length = as_index(max_length, "max_length")
    if not smallest <= max_length <= MAX_CODE_LENGTH:
        why = (f"; {SYMBOLS} symbols need at least {smallest}" if smallest > 1 else "")
        raise HuffmanCodebookError(f"max_length is {max_length}; it must be "
                                   f"{smallest}..{MAX_CODE_LENGTH}{why}")
    return max_length


def _normalised(weights):
    """Float64 probabilities; the sum is exactly rounded so the result is reproducible."""
    weights = weights.astype(np.float64)
    total = math.fsum(weights.tolist())
    if not math.isfinite(total):
        raise HuffmanCodebookError("weights are too large: their sum overflows")
    return weights / total


# -- code lengths ----------------------------------------------------------------------

def _exact_integers(weights):
    """The weights as Python ints in an object array, in exact proportion to them.

    Integers are taken as they are; a float ``m * 2**e`` (53-bit ``m``) becomes
    ``m << (e - smallest e)``, so package sums and comparisons are exact.
    """
    if np.issubdtype(weights.dtype, np.integer):
        return weights.astype(object)
    mantissa, exponent = np.frexp(weights)
    mantissa = np.ldexp(mantissa, 53).astype(np.int64)
    exponent = exponent.astype(np.int64)
    return mantissa.astype(object) << (exponent - exponent.min()).astype(object)


def _package_merge(weights, limit):
    """Optimal lengths (<= limit) of ``weights``: ascending exact ints, 2 <= n <= 2**limit.

    Package-merge (Larmore & Hirschberg, 1990): the list of level ``limit`` is the
    leaves; the list of each shallower level merges the leaves with the pairs
    ("packages") of the deeper list. The cheapest ``2n - 2`` items of the level-1 list
    are the optimal choice; a chosen package stands for its two items one level deeper.
    As the leaves in a list are in ascending order, the leaves chosen at a level are the
    first ``k`` symbols, so only these counts are tracked: a symbol's length is the
    number of levels whose chosen leaves include it. Ties put leaves before packages.
    """
    count = weights.size
    items = weights
    is_leaf = [np.ones(count, dtype=bool)]          # per level, deepest first
    for _ in range(limit - 1):
        pairs = items.size // 2
        packages = items[0:2 * pairs:2] + items[1:2 * pairs:2]
        merged = np.concatenate([weights, packages])
        order = np.argsort(merged, kind="stable")
        items = merged[order]
        is_leaf.append(order < count)
    chosen = 2 * count - 2
    leaves_chosen = []
    for leaf in reversed(is_leaf):                  # level 1 first
        leaves = int(np.count_nonzero(leaf[:chosen]))
        leaves_chosen.append(leaves)
        chosen = 2 * (chosen - leaves)
    if chosen != 0:
        raise AssertionError("package-merge: the choice does not close (internal error)")
    return (np.arange(count)[:, None] < np.array(leaves_chosen)[None, :]).sum(axis=1)


def code_lengths(pmf_or_counts, max_length=DEFAULT_MAX_LENGTH):
    """Optimal code lengths of at most ``max_length`` bits for the given weights.

    ``pmf_or_counts`` is a 1-D array of non-negative finite weights (probabilities or
    counts, any number of symbols). Returns a ``uint8`` array of the same size: the
    lengths minimise ``sum(weight * length)`` over all prefix codes with lengths
    ``1..max_length`` for the symbols of nonzero weight, exactly (integer arithmetic,
    floats taken at their exact binary values); symbols of zero weight get length 0.
    A single symbol gets length 1. Ties: see the module doc.

    Raises :class:`HuffmanCodebookError` for unusable weights or when
    ``2**max_length`` codes cannot hold the symbols of nonzero weight.
    """
    weights = check_pmf(pmf_or_counts, error=HuffmanCodebookError)
    max_length = _check_max_length(max_length)
    present = np.flatnonzero(weights)
    lengths = np.zeros(weights.size, dtype=np.uint8)
    count = present.size
    if count > 1 << max_length:
        raise HuffmanCodebookError(f"{count} symbols have nonzero weight but max_length "
                                   f"{max_length} allows only {1 << max_length} codes")
    if count == 1:
        lengths[present] = 1
        return lengths
    # Ascending weight; among equal weights the larger symbol first, so that it gets
    # the longer code if one of them must.
    order = present[np.lexsort((-present, weights[present]))]
    # No optimal code is deeper than count - 1: a looser limit changes nothing.
    limit = min(max_length, count - 1)
    lengths[order] = _package_merge(_exact_integers(weights[order]), limit)
    return lengths


def _check_lengths(lengths, name="lengths"):
    array = np.asarray(lengths)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise HuffmanCodebookError(f"{name} must hold integers, not {array.dtype}")
    if array.ndim != 1:
        raise HuffmanCodebookError(f"{name} must be one-dimensional, not of shape "
                                   f"{array.shape}")
    bad = np.flatnonzero((array < 0) | (array > MAX_CODE_LENGTH))
    if bad.size:
        raise HuffmanCodebookError(f"symbol {bad[0]} has length {array[bad[0]]}; lengths "
                                   f"must be 0 (no code) .. {MAX_CODE_LENGTH}")
    return array.astype(np.int64)


def _kraft_units(lengths, width):
    """Kraft sum of the nonzero lengths in units of 2**-width (an exact integer)."""
    used = lengths[lengths > 0]
    return int(np.sum(np.left_shift(1, width - used, dtype=np.int64)))


def _kraft_text(units, width):
    return f"{units / (1 << width):.10g} (= {units}/2**{width})"


def canonical_codes(lengths):
    """Canonical code words (``uint32``) for code ``lengths`` (0: no code).

    Symbols with a code are taken in (length, symbol) order; the first gets the all-zero
    word, each next one the previous word plus one, shifted left by the length
    difference (as in DEFLATE). Symbols of length 0 get 0. Raises
    :class:`HuffmanCodebookError` if the lengths break the Kraft inequality.
    """
    lengths = _check_lengths(lengths)
    codes = np.zeros(lengths.size, dtype=np.uint32)
    present = np.flatnonzero(lengths)
    if not present.size:
        return codes
    width = int(lengths.max())
    units = _kraft_units(lengths, width)
    if units > 1 << width:
        raise HuffmanCodebookError(f"the lengths break the Kraft inequality: Kraft sum "
                                   f"{_kraft_text(units, width)} > 1")
    order = present[np.lexsort((present, lengths[present]))]
    spans = np.left_shift(1, width - lengths[order], dtype=np.int64)
    # Word k, left-aligned to `width` bits, is the sum of the spans before it; every such
    # span is a multiple of word k's own span, so the shift is exact.
    starts = np.cumsum(spans) - spans
    codes[order] = (starts >> (width - lengths[order])).astype(np.uint32)
    return codes


# -- PMFs ------------------------------------------------------------------------------

def _check_smoothing(smoothing):
    try:
        smoothing = float(smoothing)
    except (TypeError, ValueError):
        raise TypeError(f"smoothing must be a number, not {type(smoothing).__name__}") from None
    if not 0.0 <= smoothing <= 1.0:
        raise HuffmanCodebookError(f"smoothing is {smoothing}; it must be 0..1")
    return smoothing


def smooth_pmf(pmf, smoothing=DEFAULT_SMOOTHING, *, symbols=SYMBOLS):
    """``(1 - smoothing) * pmf / sum(pmf) + smoothing / symbols`` for ``symbols``
    weights (256 by default).

    ``smoothing`` is 0..1; 0 leaves the normalised PMF as it is.
    """
    weights = check_pmf(pmf, symbols, error=HuffmanCodebookError)
    smoothing = _check_smoothing(smoothing)
    return (1.0 - smoothing) * _normalised(weights) + smoothing / symbols


def check_split(value_bits, coded_bits=None):
    """``(value_bits, coded_bits)`` checked: ``value_bits`` one of :data:`VALUE_BITS`,
    ``coded_bits`` one of :data:`CODED_BITS` and at most ``value_bits`` (None: the
    default of :data:`DEFAULT_CODED_BITS`); else :class:`HuffmanCodebookError` naming
    the value."""
    value_bits = as_index(value_bits, "value_bits")
    if value_bits not in VALUE_BITS:
        raise HuffmanCodebookError(f"value_bits is {value_bits}; it must be 8 (e4m3) or "
                                   f"16 (bf16)")
    if coded_bits is None:
        coded_bits = DEFAULT_CODED_BITS[value_bits]
    coded_bits = as_index(coded_bits, "coded_bits")
    if coded_bits not in CODED_BITS or coded_bits > value_bits:
        raise HuffmanCodebookError(
            f"coded_bits is {coded_bits}; with value_bits {value_bits} it must be "
            f"{CODED_BITS[0]}..{min(CODED_BITS[-1], value_bits)}")
    return value_bits, coded_bits


def as_values(values, value_bits=8):
    """``values`` as a flat array of ``value_bits``-bit values: uint8 e4m3 symbols
    (:func:`~linkcodec.golden.bitstream.as_symbols`) or uint16 bf16 bit patterns; another
    type raises :class:`TypeError` naming it."""
    if value_bits == 8:
        return as_symbols(values)
    array = np.asarray(values)
    if array.dtype != np.uint16:
        raise TypeError(f"values must be a uint16 array of bf16 bit patterns, not "
                        f"{array.dtype}; view a bfloat16 array as uint16")
    return array.reshape(-1)


def coded_part(values, value_bits=8, coded_bits=None):
    """The symbols a codebook of this split codes: each value's top ``coded_bits``."""
    value_bits, coded_bits = check_split(value_bits, coded_bits)
    values = as_values(values, value_bits)
    return (values >> (value_bits - coded_bits)).astype(np.int64)


def average_pmf(batches, scales=None, *, scale=None, value_bits=8, coded_bits=None):
    """Average of the normalised PMFs of ``batches`` (uint8 symbol arrays); empty batches
    are skipped. Returns ``(pmf, batches_used, symbols)``.

    With ``value_bits=16`` the batches are bf16 values (uint16) and the PMF is that of
    their top ``coded_bits`` (:func:`coded_part`), ``2**coded_bits`` entries; scales are
    for e4m3 batches only.

    With ``scales`` (one per batch, the factor each was multiplied by before the e4m3
    cast) and the ``scale`` of the batch to come, the average is taken of the values, not
    the codes, and cast at ``scale``: :func:`~linkcodec.golden.formats.e4m3_pmf_at_scale`.
    Under per-tensor amax scaling that keeps the codebook of an activation tensor in step
    with its scale (``docs/huffman.md``)."""
    batches = list(batches)
    if (scales is None) != (scale is None):
        raise HuffmanCodebookError("give both scales (one per batch) and scale (the next "
                                   "batch's), or neither")
    if scales is not None:
        try:
            scales = [check_scale(s, "a batch scale") for s in scales]
        except FormatError as error:
            raise HuffmanCodebookError(str(error)) from None
        if len(scales) != len(batches):
            raise HuffmanCodebookError(f"{len(scales)} scales for {len(batches)} batches: "
                                       f"give one scale per batch")
    value_bits, coded_bits = check_split(value_bits, coded_bits)
    if scales is not None and value_bits != 8:
        raise HuffmanCodebookError("scales are for e4m3 batches: bf16 values carry their "
                                   "own scale")
    pmfs, kept, total = [], [], 0
    for index, batch in enumerate(batches):
        symbols = coded_part(batch, value_bits, coded_bits)
        if symbols.size:
            pmfs.append(np.bincount(symbols, minlength=1 << coded_bits) / symbols.size)
            kept.append(index)
            total += symbols.size
    if not pmfs:
        raise HuffmanCodebookError("no symbols: every batch is empty (or there are none)")
    if scales is not None:
        try:
            pmf = e4m3_pmf_at_scale(pmfs, [scales[i] for i in kept], scale)
        except FormatError as error:
            raise HuffmanCodebookError(str(error)) from None
        return pmf, len(pmfs), total
    # An exactly rounded sum per symbol: the same batches give the same codebook anywhere.
    pmf = np.array([math.fsum(column) for column in np.array(pmfs).T.tolist()]) / len(pmfs)
    return pmf, len(pmfs), total


def batches_at_sigma(batches, sigma):
    """bf16 ``batches`` (uint16 arrays) brought to the sigma of the values to come: each
    multiplied by the power of two that brings its own sigma (:func:`~linkcodec.golden.
    formats.bf16_sigma`) nearest ``sigma`` on a log scale (:func:`~linkcodec.golden.
    formats.sigma_shift`). A batch without a sigma (empty, no finite value, or all its
    finite values equal) is taken as it is. Returns ``(batches, shifts)``, a shift (the
    power of two) per batch.

    A power of two moves every normal value's exponent and nothing else, so the shape of
    each batch's distribution within an exponent is kept, where scaling by the exact
    ratio of the sigmas would round every value anew (``docs/huffman.md``, "bf16
    values")."""
    try:
        sigma = check_sigma(sigma)
    except FormatError as error:
        raise HuffmanCodebookError(str(error)) from None
    scaled, shifts = [], []
    for batch in batches:
        values = as_values(batch, 16)
        try:
            shift = sigma_shift(bf16_sigma(values), sigma)
        except FormatError:
            shift = 0
        scaled.append(bf16_times_power_of_two(values, shift) if shift else values)
        shifts.append(shift)
    return scaled, shifts


# -- codebook --------------------------------------------------------------------------

def _binary(code, length):
    return f"0b{int(code):0{int(length)}b}"


class HuffmanCodebook:
    """A single-stage Huffman codebook: a prefix code for the values of one split.

    A codebook codes values of ``value_bits`` (8: e4m3 symbols; 16: bf16 values) by their
    top ``coded_bits`` (8 to 12): each value is sent as the code of its coded part
    followed by its low ``value_bits - coded_bits`` bits raw (the *tail*). An e4m3
    codebook (8 / 8) has no tail. With an *escape* (``escape_length`` > 0), coded parts
    of length 0 have no code of their own: such a value is sent as the escape code
    followed by the whole value raw (``value_bits`` bits), so every value stays codable
    while the code space goes to the parts the earlier batches showed.

    ``lengths`` (``uint8[2**coded_bits]``, each ``0..max_length``, 0 only with an escape)
    and ``codes`` (``uint32``, canonical from the lengths unless given, the escape
    counted as symbol ``2**coded_bits``) are read-only arrays; ``max_length`` is the
    longest length allowed, ``id`` a name both ends of a link agree on (by default
    ``"hc-"`` and the first 12 hex digits of the SHA-256 of the length bytes followed
    by the codes as big-endian uint32, and for a codebook other than 8 / 8 without escape,
    the split and the escape's length and code as four more big-endian uint32),
    ``source`` a JSON-able dict saying how the codebook was made. The object is
    immutable.

    Checked on construction, raising :class:`HuffmanCodebookError`: every symbol has a
    code (or there is an escape), lengths are in range, codes fit their lengths, the
    Kraft sum is at most 1 and no code is a prefix of another. A code need not be
    complete (Kraft sum 1); a frame of an incomplete code can hold bits that start no
    code word.
    """

    def __init__(self, lengths, codes=None, *, max_length=DEFAULT_MAX_LENGTH, value_bits=8,
                 coded_bits=None, escape_length=0, escape_code=None, id=None, source=None):
        max_length = _check_max_length(max_length, _MIN_CODEBOOK_LENGTH)
        value_bits, coded_bits = check_split(value_bits, coded_bits)
        symbols = 1 << coded_bits
        escape_length = as_index(escape_length, "escape_length")
        if not 0 <= escape_length <= max_length:
            raise HuffmanCodebookError(f"escape_length is {escape_length}; it must be 0 (no "
                                       f"escape) .. max_length = {max_length}")
        lengths = _check_lengths(lengths)
        if lengths.size != symbols:
            raise HuffmanCodebookError(f"a codebook has {symbols} lengths, one per symbol, "
                                       f"not {lengths.size}")
        missing = np.flatnonzero(lengths == 0)
        if missing.size and not escape_length:
            raise HuffmanCodebookError(f"symbol {missing[0]} has no code (length 0); every "
                                       f"symbol needs one, or the codebook an escape")
        long = np.flatnonzero(lengths > max_length)
        if long.size:
            raise HuffmanCodebookError(f"symbol {long[0]} has length {lengths[long[0]]}, "
                                       f"more than max_length {max_length}")
        every = np.append(lengths, escape_length) if escape_length else lengths
        if codes is None:
            if escape_code is not None:
                raise HuffmanCodebookError("escape_code is given without codes: give both "
                                           "or neither")
            codes = canonical_codes(every).astype(np.int64)
        else:
            if escape_length:
                if escape_code is None:
                    raise HuffmanCodebookError("an escape needs escape_code when codes are "
                                               "given")
                codes = np.append(np.asarray(codes), as_index(escape_code, "escape_code"))
            elif escape_code is not None:
                raise HuffmanCodebookError("escape_code is given but escape_length is 0")
            codes = self._check_codes(codes, every, bool(escape_length))
        self._check_prefix_code(every, codes)

        self._value_bits, self._coded_bits = value_bits, coded_bits
        self._every_length = every.astype(np.uint8)
        self._every_code = codes.astype(np.uint32)
        self._lengths = self._every_length[:symbols]
        self._codes = self._every_code[:symbols]
        for array in (self._every_length, self._every_code, self._lengths, self._codes):
            array.setflags(write=False)
        self._escape_length = escape_length
        self._escape_code = int(codes[symbols]) if escape_length else 0
        self._max_length = max_length
        if id is None:
            digest = hashlib.sha256(self._hashed_bytes()).hexdigest()
            id = "hc-" + digest[:12]
        if not isinstance(id, str) or not id:
            raise HuffmanCodebookError(f"id must be a non-empty string, not {id!r}")
        self._id = id
        if source is None:
            source = {}
        if not isinstance(source, dict):
            raise HuffmanCodebookError(f"source must be a dict, not {type(source).__name__}")
        try:
            self._source_json = json.dumps(source, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise HuffmanCodebookError(f"source must be JSON-serialisable: {error}") from None
        self._source = json.loads(self._source_json)
        self._encoder = None          # the pair-table encoder, built on first use
        self._decoder = None          # the PrefixDecoder, built on first use
        self._split_tables = None     # the split decoder's window tables, on first use

    def _hashed_bytes(self):
        text = self._lengths.tobytes() + self._codes.astype(">u4").tobytes()
        if self.is_e4m3:
            return text
        extra = [self._value_bits, self._coded_bits, self._escape_length, self._escape_code]
        return text + np.array(extra, dtype=">u4").tobytes()

    @staticmethod
    def _check_codes(codes, lengths, escape=False):
        codes = np.asarray(codes)
        if codes.dtype == np.bool_ or not np.issubdtype(codes.dtype, np.integer):
            raise HuffmanCodebookError(f"codes must hold integers, not {codes.dtype}")
        if codes.shape != lengths.shape:
            raise HuffmanCodebookError(f"a codebook has {lengths.size} codes, one per "
                                       f"symbol{' and the escape' if escape else ''}, not "
                                       f"shape {codes.shape}")
        bad = np.flatnonzero(codes < 0)
        if bad.size:
            raise HuffmanCodebookError(f"symbol {bad[0]} has a negative code ({codes[bad[0]]})")
        codes = codes.astype(np.int64) if codes.dtype != np.uint64 else codes
        too_wide = np.flatnonzero((codes >> lengths.astype(codes.dtype)) != 0)
        if too_wide.size:
            symbol = too_wide[0]
            raise HuffmanCodebookError(f"symbol {symbol} has code {int(codes[symbol]):#x}, "
                                       f"which does not fit in its {lengths[symbol]} bits")
        return codes.astype(np.int64)

    @staticmethod
    def _check_prefix_code(lengths, codes):
        present = lengths > 0
        lengths, codes = lengths[present], codes[present]
        width = int(lengths.max())
        units = _kraft_units(lengths, width)
        if units > 1 << width:
            raise HuffmanCodebookError(f"the code breaks the Kraft inequality: Kraft sum "
                                       f"{_kraft_text(units, width)} > 1, so some code is "
                                       f"a prefix of another")
        # Each code covers the interval [start, start + span) of left-aligned windows;
        # two such intervals overlap only if one contains the other, i.e. one code is a
        # prefix of the other. Sorted by (start, length), an overlap shows up between
        # neighbours.
        names = np.flatnonzero(present)
        spans = np.left_shift(1, width - lengths)
        starts = codes << (width - lengths)
        order = np.lexsort((lengths, starts))
        overlap = starts[order][1:] < (starts + spans)[order][:-1]
        if overlap.any():
            index = int(np.flatnonzero(overlap)[0])
            one, two = int(order[index]), int(order[index + 1])
            first, second = int(names[one]), int(names[two])
            if lengths[one] == lengths[two]:
                raise HuffmanCodebookError(
                    f"prefix property violated: symbols {first} and {second} have the same "
                    f"code {_binary(codes[one], lengths[one])}")
            raise HuffmanCodebookError(
                f"prefix property violated: the code of symbol {first}, "
                f"{_binary(codes[one], lengths[one])}, is a prefix of the code of "
                f"symbol {second}, {_binary(codes[two], lengths[two])}")

    # -- building ----------------------------------------------------------------------

    @classmethod
    def from_pmf(cls, pmf, max_length=DEFAULT_MAX_LENGTH, smoothing=DEFAULT_SMOOTHING, *,
                 value_bits=8, coded_bits=None, escape=None, id=None, source=None):
        """The optimal codebook (lengths <= ``max_length``) for ``pmf`` after smoothing.

        ``pmf``: ``2**coded_bits`` probabilities or counts of the coded parts (256 for
        e4m3). Without escape, ``smoothing`` (0..1) mixes in the uniform distribution
        (:func:`smooth_pmf`) so that every symbol gets a code; with 0, every symbol must
        have a nonzero weight. With ``escape`` (the default for bf16 values, not for
        e4m3), symbols of weight 0 get no code and the escape weighs ``smoothing`` (which
        must then be above 0) against ``1 - smoothing`` for the rest. ``source`` entries
        are added to the recorded ``{"built_by", "smoothing"}`` (and ``escape``).
        """
        max_length = _check_max_length(max_length, _MIN_CODEBOOK_LENGTH)
        value_bits, coded_bits = check_split(value_bits, coded_bits)
        symbols = 1 << coded_bits
        if escape is None:
            escape = value_bits != 8
        info = {"built_by": "from_pmf", "smoothing": float(smoothing)}
        if escape:
            weights = _normalised(check_pmf(pmf, symbols, error=HuffmanCodebookError))
            smoothing = _check_smoothing(smoothing)
            if smoothing == 0:
                raise HuffmanCodebookError("an escape weighs smoothing, and smoothing is 0: "
                                           "give smoothing above 0")
            every = code_lengths(np.append((1.0 - smoothing) * weights, smoothing),
                                 max_length)
            info["escape"] = True
            info.update(source or {})
            return cls(every[:-1], max_length=max_length, value_bits=value_bits,
                       coded_bits=coded_bits, escape_length=int(every[-1]), id=id,
                       source=info)
        smoothed = smooth_pmf(pmf, smoothing, symbols=symbols)
        missing = np.flatnonzero(smoothed == 0)
        if missing.size:
            raise HuffmanCodebookError(f"symbol {missing[0]} has probability 0 and smoothing "
                                       f"is 0: every symbol needs a code")
        info.update(source or {})
        return cls(code_lengths(smoothed, max_length), max_length=max_length,
                   value_bits=value_bits, coded_bits=coded_bits, id=id, source=info)

    @classmethod
    def from_batches(cls, batches, max_length=DEFAULT_MAX_LENGTH,
                     smoothing=DEFAULT_SMOOTHING, *, scales=None, scale=None, sigma=None,
                     value_bits=8, coded_bits=None, escape=None, id=None, source=None):
        """The codebook for the average of the normalised PMFs of ``batches``.

        ``batches``: an iterable of uint8 symbol arrays (earlier traffic), or with
        ``value_bits=16`` of uint16 bf16 values; empty ones are skipped. Each batch weighs
        the same, whatever its size. ``scales`` and ``scale``: the batches' e4m3 scales
        and the scale of the batch to be coded, for a codebook that follows the scale
        (:func:`average_pmf`). ``sigma`` (bf16 only): the sigma of the values to be coded,
        for a codebook that follows it: each batch is first brought to it by a power of
        two (:func:`batches_at_sigma`). ``coded_bits`` and ``escape``: as
        :meth:`from_pmf`. ``source`` records ``built_by``, ``batches``, ``symbols``,
        ``smoothing`` and any scales, or the sigma and each batch's shift.
        """
        shifts = None
        if sigma is not None:
            if scales is not None or scale is not None:
                raise HuffmanCodebookError("give scales (e4m3) or sigma (bf16), not both")
            if check_split(value_bits, coded_bits)[0] != 16:
                raise HuffmanCodebookError("sigma is for bf16 values (value_bits=16); e4m3 "
                                           "codebooks follow the scale (scales and scale)")
            batches, shifts = batches_at_sigma(batches, sigma)
        pmf, used, total = average_pmf(batches, scales, scale=scale, value_bits=value_bits,
                                       coded_bits=coded_bits)
        info = {"built_by": "from_batches (average of per-batch PMFs)", "batches": used,
                "symbols": int(total)}
        if scales is not None:
            info.update(built_by="from_batches (average of per-batch PMFs at one scale)",
                        scales=[float(s) for s in scales], scale=float(scale))
        if shifts is not None:
            info.update(built_by="from_batches (average of per-batch PMFs at one sigma)",
                        sigma=float(sigma), shifts=shifts)
        info.update(source or {})
        return cls.from_pmf(pmf, max_length, smoothing, value_bits=value_bits,
                            coded_bits=coded_bits, escape=escape, id=id, source=info)

    # -- properties --------------------------------------------------------------------

    @property
    def lengths(self):
        """Code length of each symbol (read-only ``uint8`` array, ``2**coded_bits``
        entries; 0: no code of its own, sent by the escape)."""
        return self._lengths

    @property
    def codes(self):
        """Code word of each symbol (read-only ``uint32`` array), ``lengths`` bits long."""
        return self._codes

    @property
    def max_length(self):
        return self._max_length

    @property
    def value_bits(self):
        """Width of the values coded: 8 (e4m3) or 16 (bf16)."""
        return self._value_bits

    @property
    def coded_bits(self):
        """Width of the coded part of a value (its top bits); the rest goes raw."""
        return self._coded_bits

    @property
    def tail_bits(self):
        """The raw bits after each code: ``value_bits - coded_bits``."""
        return self._value_bits - self._coded_bits

    @property
    def escape_length(self):
        """Length of the escape code; 0 if the codebook has none."""
        return self._escape_length

    @property
    def escape_code(self):
        """The escape code word (0 if there is none)."""
        return self._escape_code

    @property
    def is_e4m3(self):
        """True for a codebook of e4m3 symbols (8 / 8) without escape: the codebooks the
        hardware blocks and the link's table flits take."""
        return self._value_bits == 8 and self._coded_bits == 8 and not self._escape_length

    @property
    def id(self):
        return self._id

    @property
    def source(self):
        """How the codebook was made (a copy: the codebook stays immutable)."""
        return copy.deepcopy(self._source)

    @property
    def kraft_sum(self):
        """``sum(2**-length)`` over the codes (the escape included): 1 for a complete
        code."""
        every = self._every_length.astype(np.int64)
        return _kraft_units(every, MAX_CODE_LENGTH) / (1 << MAX_CODE_LENGTH)

    def __eq__(self, other):
        """Equal when every field (lengths, codes, split, escape, max_length, id,
        source) is."""
        if not isinstance(other, HuffmanCodebook):
            return NotImplemented
        return (self._id == other._id and self._max_length == other._max_length
                and self._value_bits == other._value_bits
                and self._coded_bits == other._coded_bits
                and np.array_equal(self._every_length, other._every_length)
                and np.array_equal(self._every_code, other._every_code)
                and self._source_json == other._source_json)

    def __hash__(self):
        return hash((self._id, self._every_length.tobytes(), self._every_code.tobytes()))

    def __repr__(self):
        split = "" if self.is_e4m3 else (
            f", value_bits={self._value_bits}, coded_bits={self._coded_bits}, "
            f"escape_length={self._escape_length}")
        coded = self._lengths[self._lengths > 0]
        return (f"HuffmanCodebook(id={self._id!r}, max_length={self._max_length}{split}, "
                f"lengths {int(coded.min())}..{int(coded.max())})")

    def value_lengths(self):
        """Bits a value takes, per coded part (``int64``, ``2**coded_bits`` entries): its
        code and tail, or the escape and the whole value."""
        lengths = self._lengths.astype(np.int64)
        escaped = self._escape_length + self._value_bits
        return np.where(lengths > 0, lengths + self.tail_bits, escaped)

    def expected_bits(self, pmf):
        """Expected bits per value of this code for ``pmf`` (``2**coded_bits``
        probabilities or counts of the coded parts), tails and escapes included."""
        weights = _normalised(check_pmf(pmf, self._lengths.size, error=HuffmanCodebookError))
        return float(weights @ self.value_lengths().astype(np.float64))

    # -- frames ------------------------------------------------------------------------

    def encode(self, symbols):
        """Encode ``symbols`` (uint8 e4m3 array, any shape, read in C order, or bytes; a
        uint16 array of bf16 values for a codebook of 16-bit values).

        Returns ``(data, nbits)``: the frame's ``ceil(nbits / 8)`` bytes, MSB first,
        zero-padded (``docs/bitstream.md``). A value's code comes first, then its tail
        (MSB first); an escaped value is the escape code, then the value's
        ``value_bits`` bits.
        """
        if not self.is_e4m3:
            return self._encode_split(as_values(symbols, self._value_bits))
        symbols = as_symbols(symbols)
        if int(self._lengths.max()) <= 16 and int(self._lengths.min()) >= 1:
            if self._encoder is None:
                self._encoder = SymbolEncoder(self._codes, self._lengths)
            return self._encoder.encode(symbols)
        return pack_codes(np.take(self._codes, symbols), np.take(self._lengths, symbols))

    def _encode_split(self, values):
        tail_bits = self.tail_bits
        top = (values >> tail_bits).astype(np.int64)
        lengths = np.take(self._lengths, top).astype(np.int64)
        escaped = lengths == 0
        if escaped.any() and not self._escape_length:
            raise AssertionError("a symbol without code in a codebook without escape")
        values = values.astype(np.int64)
        tails = values & ((1 << tail_bits) - 1)
        first_codes = np.where(escaped, self._escape_code,
                               (np.take(self._codes, top).astype(np.int64) << tail_bits)
                               | tails)
        first_lengths = np.where(escaped, self._escape_length, lengths + tail_bits)
        # An escaped value takes two entries: the escape code, then the value raw.
        at = np.arange(values.size) + np.cumsum(escaped) - escaped
        codes = np.zeros(values.size + int(escaped.sum()), dtype=np.int64)
        entry_lengths = np.zeros_like(codes)
        codes[at], entry_lengths[at] = first_codes, first_lengths
        codes[at[escaped] + 1] = values[escaped]
        entry_lengths[at[escaped] + 1] = self._value_bits
        return pack_codes(codes, entry_lengths)

    @property
    def decoder(self):
        """The :class:`~linkcodec.golden.prefix_decoder.PrefixDecoder` of this codebook
        (raising the shared errors), built on first use: for every window as wide as
        the longest code, the length and symbol of the code word it starts with (length
        0: none). For e4m3 codebooks only (8 / 8, no escape); others decode by
        :meth:`decode`."""
        if not self.is_e4m3:
            raise HuffmanCodebookError(f"codebook {self._id} codes {self._value_bits}-bit "
                                       f"values by {self._coded_bits} bits: decode() reads "
                                       f"its frames, not the e4m3 PrefixDecoder")
        if self._decoder is None:
            window_bits, lut_length, lut_symbol = self._window_tables()
            self._decoder = PrefixDecoder(window_bits, lut_length,
                                          lut_symbol.astype(np.uint8))
        return self._decoder

    def _window_tables(self):
        """For every window as wide as the longest code: the length and symbol (the
        escape is ``2**coded_bits``) of the code word it starts with (length 0: none)."""
        present = np.flatnonzero(self._every_length)
        lengths = self._every_length[present].astype(np.int64)
        window_bits = int(lengths.max())
        spans = np.left_shift(1, window_bits - lengths)
        starts = self._every_code[present].astype(np.int64) << (window_bits - lengths)
        order = np.argsort(starts)
        spans, starts = spans[order], starts[order]
        # Windows of code k are starts[k] .. starts[k] + spans[k] - 1.
        covered = np.repeat(starts - (np.cumsum(spans) - spans), spans)
        covered += np.arange(covered.size)
        lut_length = np.zeros(1 << window_bits, dtype=np.uint8)
        lut_symbol = np.zeros(1 << window_bits, dtype=np.int64)
        lut_length[covered] = np.repeat(lengths[order], spans)
        lut_symbol[covered] = np.repeat(present[order], spans)
        return window_bits, lut_length, lut_symbol

    def decode(self, data, nbits):
        """Decode a frame of ``nbits`` bits held in ``data`` (bytes-like or uint8 array).

        Bits of ``data`` past ``nbits`` are ignored. Returns the symbols (uint8 array),
        or for a codebook of 16-bit values the values (uint16 array). Raises
        :class:`HuffmanInvalidCodeError` (bits that start no code word: only with an
        incomplete code), :class:`HuffmanTruncatedStreamError` (the last code word, with
        its tail or escaped value, runs past ``nbits``) or :class:`HuffmanDecodeError`
        (``nbits`` negative or past the data), all naming the bit position.
        """
        if not self.is_e4m3:
            return self._decode_split(data, nbits)
        try:
            return self.decoder.decode(data, nbits)
        except BitstreamError as error:
            raise _DECODE_ERRORS.convert(error, invalid_message=self._invalid_message,
                                         truncated_message=self._truncated_message) from None

    def _decode_split(self, data, nbits):
        data = as_frame_bytes(data)
        nbits = as_index(nbits, "nbits")
        if not 0 <= nbits <= 8 * data.size:
            raise HuffmanDecodeError(f"nbits is {nbits}; the frame's {data.size} bytes hold "
                                     f"0..{8 * data.size} bits", bit=nbits)
        if self._split_tables is None:
            self._split_tables = self._window_tables()
        window_bits, lut_length, lut_symbol = self._split_tables
        lut_length, lut_symbol = lut_length.tolist(), lut_symbol.tolist()
        # The 16 bits at every bit position (zeros past the frame), read as a number.
        bits = np.zeros(nbits + 16, dtype=np.int64)
        bits[:nbits] = np.unpackbits(data)[:nbits]
        windows = np.zeros(nbits + 1, dtype=np.int64)
        for offset in range(16):
            windows |= bits[offset:offset + nbits + 1] << (15 - offset)
        windows = windows.tolist()
        tail_bits, value_bits = self.tail_bits, self._value_bits
        escape = 1 << self._coded_bits
        values, position = [], 0
        while position < nbits:
            window = windows[position] >> (16 - window_bits)
            length = lut_length[window]
            if not length:
                raise HuffmanInvalidCodeError(
                    f"invalid code at bit {position}: the {window_bits} bits from there, "
                    f"{_binary(window, window_bits)}, start no code word of codebook "
                    f"{self._id}", bit=position, window=window)
            symbol = lut_symbol[window]
            raw = value_bits if symbol == escape else tail_bits
            if position + length + raw > nbits:
                what = "an escaped value" if symbol == escape else "a value"
                raise HuffmanTruncatedStreamError(
                    f"truncated stream: {what} at bit {position} needs {length + raw} bits "
                    f"(a {length}-bit code and {raw} raw) but the frame ends at bit {nbits} "
                    f"({nbits - position} bits left)", bit=position, length=length + raw,
                    nbits=nbits, window=window)
            rest = windows[position + length] >> (16 - raw) if raw else 0
            values.append(rest if symbol == escape else (symbol << tail_bits) | rest)
            position += length + raw
        return np.array(values, dtype=np.uint16 if value_bits == 16 else np.uint8)

    def _invalid_message(self, error):
        window_bits = self.decoder.window_bits
        return (f"invalid code at bit {error.bit}: the {window_bits} bits from there, "
                f"{_binary(error.window, window_bits)}, start no code word of codebook "
                f"{self._id}")

    def _truncated_message(self, error):
        left = error.nbits - error.bit
        window = error.window >> (self.decoder.window_bits - left)
        return (f"truncated stream: code at bit {error.bit} needs {error.length} bits but "
                f"the frame ends at bit {error.nbits} ({left} bits left: "
                f"{_binary(window, left)})")

    # -- files -------------------------------------------------------------------------

    def to_json(self):
        """The codebook file's text (``docs/huffman.md``): keys in a fixed order, the
        lengths and codes on one line each. An e4m3 codebook is a version 1 file; any
        other adds ``value_bits``, ``coded_bits``, ``escape_length`` and
        ``escape_code`` as version 2."""
        fields = {"format": FORMAT, "version": 1 if self.is_e4m3 else 2, "id": self._id,
                  "max_length": self._max_length}
        if not self.is_e4m3:
            fields.update(value_bits=self._value_bits, coded_bits=self._coded_bits,
                          escape_length=self._escape_length, escape_code=self._escape_code)
        fields.update(lengths=self._lengths.tolist(), codes=self._codes.tolist())
        lines = [f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in fields.items()]
        lines.append(f'  "source": {self._source_json}')
        return "{\n" + ",\n".join(lines) + "\n}\n"

    def save(self, path):
        """Write :meth:`to_json` to ``path``."""
        with open(path, "w", encoding="utf-8") as file:
            file.write(self.to_json())

    @classmethod
    def from_json(cls, text):
        """Read a codebook file's text; a bad file raises :class:`HuffmanCodebookError`
        naming the problem."""
        try:
            fields = json.loads(text)
        except (TypeError, ValueError) as error:
            raise HuffmanCodebookError(f"not a codebook file: not JSON ({error})") from None
        if not isinstance(fields, dict):
            raise HuffmanCodebookError(f"not a codebook file: a JSON object was expected, "
                                       f"not {type(fields).__name__}")
        if fields.get("format") != FORMAT:
            raise HuffmanCodebookError(f"not a codebook file: format is "
                                       f"{fields.get('format')!r}, not {FORMAT!r}")
        version = fields.get("version")
        if version not in VERSIONS or type(version) is not int:
            raise HuffmanCodebookError(f"unsupported codebook version {version!r}: this "
                                       f"reader knows versions "
                                       f"{', '.join(map(str, VERSIONS))}")
        keys = _JSON_KEYS if version == 1 else _JSON_KEYS_2
        missing = [key for key in keys if key not in fields]
        if missing:
            raise HuffmanCodebookError(f"codebook file lacks {', '.join(map(repr, missing))}")
        unknown = [key for key in fields if key not in keys]
        if unknown:
            raise HuffmanCodebookError(f"codebook file has unknown "
                                       f"{', '.join(map(repr, unknown))}")
        for key in keys[3:-3]:
            if type(fields[key]) is not int:
                raise HuffmanCodebookError(f"{key} must be an integer, not {fields[key]!r}")
        split = {}
        if version == 2:
            split = {key: fields[key] for key in keys[4:8]}
            check_split(split["value_bits"], split["coded_bits"])
        symbols = 1 << split.get("coded_bits", 8)
        for key in ("lengths", "codes"):
            values = fields[key]
            if not isinstance(values, list):
                raise HuffmanCodebookError(f"{key} must be a list of {symbols} integers, "
                                           f"not {type(values).__name__}")
            if len(values) != symbols:
                raise HuffmanCodebookError(f"{key} has {len(values)} entries, not {symbols}")
            wrong = [index for index, value in enumerate(values) if type(value) is not int]
            if wrong:
                raise HuffmanCodebookError(f"{key}[{wrong[0]}] is {values[wrong[0]]!r}, not "
                                           f"an integer")
        lengths = np.array(fields["lengths"], dtype=object)
        codes = np.array(fields["codes"], dtype=object)
        max_length = fields["max_length"]
        # Range checks before the arrays become int64 (and name the limits of the file).
        _check_max_length(max_length, _MIN_CODEBOOK_LENGTH)
        missing = np.flatnonzero(lengths == 0)
        if missing.size and not split.get("escape_length"):
            raise HuffmanCodebookError(f"symbol {missing[0]} has no code (length 0); every "
                                       f"symbol needs one, or the codebook an escape")
        shortest = 0 if split.get("escape_length") else 1
        bad = np.flatnonzero((lengths < shortest) | (lengths > max_length))
        if bad.size:
            raise HuffmanCodebookError(f"symbol {bad[0]} has length {lengths[bad[0]]}, "
                                       f"outside {shortest}..max_length = {max_length}")
        bad = np.flatnonzero((codes < 0) | (codes >= 1 << MAX_CODE_LENGTH))
        if bad.size:
            symbol = bad[0]
            raise HuffmanCodebookError(f"symbol {symbol} has code {codes[symbol]}, which "
                                       f"does not fit in its {lengths[symbol]} bits")
        if split:
            if not 0 <= split["escape_code"] < 1 << MAX_CODE_LENGTH:
                raise HuffmanCodebookError(f"escape_code {split['escape_code']} does not fit "
                                           f"in its {split['escape_length']} bits")
            if not split["escape_length"]:
                if split["escape_code"]:
                    raise HuffmanCodebookError("escape_code is not 0 but escape_length is "
                                               "0 (no escape)")
                split.pop("escape_code")
        return cls(lengths.astype(np.int64), codes.astype(np.int64), max_length=max_length,
                   id=fields["id"], source=fields["source"], **split)

    @classmethod
    def load(cls, path):
        """Read a codebook file; errors name the file."""
        with open(path, encoding="utf-8") as file:
            text = file.read()
        try:
            return cls.from_json(text)
        except HuffmanCodebookError as error:
            raise HuffmanCodebookError(f"{path}: {error}") from None


# -- baselines -------------------------------------------------------------------------

def _histogram(symbols):
    symbols = as_symbols(symbols)
    if not symbols.size:
        raise HuffmanCodebookError("no symbols: bits per symbol of an empty shard is "
                                   "undefined")
    return np.bincount(symbols, minlength=SYMBOLS), symbols.size


def per_shard_huffman_bits(symbols, max_length=DEFAULT_MAX_LENGTH):
    """Bits per symbol of an optimal code (lengths <= ``max_length``) built from the
    shard's own histogram: the two-pass baseline, codebook transfer not counted."""
    counts, size = _histogram(symbols)
    lengths = code_lengths(counts, max_length)
    return float(counts @ lengths.astype(np.int64)) / size


def entropy_bits(counts):
    """Shannon entropy, in bits per symbol, of a histogram (any non-negative weights);
    0 for an empty one."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(-(p * np.log2(p)).sum()) + 0.0   # + 0.0: one symbol's -0.0 reads 0.0


def shannon_bits(symbols):
    """Order-0 entropy of the shard's own PMF, in bits per symbol."""
    counts, _ = _histogram(symbols)
    return entropy_bits(counts)


# -- on the link ------------------------------------------------------------------------

#: Longest Huffman code a table image carries (a length is a 4-bit nibble).
MAX_LINK_HUFFMAN_LENGTH = 15


class HuffmanLinkCodec(LinkCodec):
    """e4m3 Huffman on the link: canonical codebooks of codes of at most
    :data:`MAX_LINK_HUFFMAN_LENGTH` bits; its table image is the 256 code lengths as
    nibbles (symbol 0 in the high nibble)."""

    name, codec_id, table_type = "huffman", 2, HuffmanCodebook

    def check_tables(self, tables):
        tables = super().check_tables(tables)
        if not tables.is_e4m3:
            raise ValueError(f"codebook {tables.id} codes {tables.value_bits}-bit values by "
                             f"{tables.coded_bits} bits"
                             f"{' with an escape' if tables.escape_length else ''}; the "
                             f"link's Huffman streams carry e4m3 codebooks (8 / 8, no escape)")
        longest = int(tables.lengths.max())
        if longest > MAX_LINK_HUFFMAN_LENGTH:
            raise ValueError(f"codebook {tables.id} has a {longest}-bit code; a link table "
                             f"carries codes of at most {MAX_LINK_HUFFMAN_LENGTH} bits")
        if not np.array_equal(canonical_codes(tables.lengths), tables.codes):
            raise ValueError(f"codebook {tables.id} is not canonical; a link table carries "
                             "code lengths only")
        return tables

    def lengths(self, tables, symbols):
        return tables.lengths[symbols]

    def image(self, codebook):
        lengths = codebook.lengths.astype(np.uint8)
        return ((lengths[0::2] << 4) | lengths[1::2]).astype(np.uint8).tobytes()

    def image_bytes(self):
        return SYMBOLS // 2

    def from_image(self, image):
        raw = np.frombuffer(image, dtype=np.uint8)
        lengths = np.empty(SYMBOLS, dtype=np.uint8)
        lengths[0::2], lengths[1::2] = raw >> 4, raw & 0xF
        return HuffmanCodebook(lengths, max_length=MAX_LINK_HUFFMAN_LENGTH)
