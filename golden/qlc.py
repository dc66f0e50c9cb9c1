"""Golden model of the Quad Length Code (QLC) for FP8 e4m3 symbols.

The bitstream is ``docs/bitstream.md``: 8 *areas* picked by a 3-bit prefix, area ``a``
holding ``sizes[a]`` consecutive ranks behind a ``suffix_bits[a]``-bit suffix, so every
code of the area is ``3 + suffix_bits[a]`` bits long; symbols map to ranks by descending
probability (ties: smaller symbol first).

- :class:`QlcLayout` -- the areas (validated), with the base layout and expected bits;
- :func:`rank_table` -- symbol to rank from a PMF or a histogram;
- :class:`QlcCode` -- a layout and a rank table: ``encode`` / ``decode`` frames;
- :func:`optimal_layout` -- the layout with the fewest expected bits for a PMF, found by
  an exact search (:func:`optimal_areas`).

PMFs are checked by :func:`~linkcodec.golden.pmf.check_pmf`; the compressibility
``1 - bits / 8`` is :func:`~linkcodec.golden.formats.compressibility`.

Errors: :class:`QlcLayoutError` (a layout breaks the rules), :class:`QlcCodeError` (an
unusable PMF or rank table) and :class:`QlcDecodeError` (a frame cannot be decoded).
``QlcDecodeError`` derives from :class:`~linkcodec.golden.bitstream.BitstreamError`;
its subclasses :class:`QlcInvalidCodeError` and :class:`QlcTruncatedStreamError` also
derive from the matching :mod:`~linkcodec.golden.bitstream` errors, so a caller may catch
either family.
"""

import itertools
from dataclasses import dataclass

import numpy as np

from .bitstream import BitstreamError, DecodeErrors, InvalidCodeError, TruncatedStreamError
from .bitstream import as_index, as_symbols
from .pmf import check_pmf
from .prefix_decoder import PrefixDecoder
from .link_codec import LinkCodec
from .prefix_encoder import SymbolEncoder

__all__ = [
    "canonical_qlc",
    "QlcLinkCodec",
    "AREAS",
    "PREFIX_BITS",
    "MAX_SUFFIX_BITS",
    "SYMBOLS",
    "QlcLayoutError",
    "QlcCodeError",
    "QlcDecodeError",
    "QlcInvalidCodeError",
    "QlcTruncatedStreamError",
    "QlcLayout",
    "QlcCode",
    "rank_table",
    "optimal_layout",
    "optimal_areas",
]

#: Number of areas, picked by a PREFIX_BITS-bit prefix.
AREAS = 8
PREFIX_BITS = 3
#: Widest suffix: an area holds at most 2**8 symbols.
MAX_SUFFIX_BITS = 8
#: Number of symbols (e4m3 bit patterns).
SYMBOLS = 256


class QlcLayoutError(ValueError):
    """A QLC layout breaks the rules of ``docs/bitstream.md``."""


class QlcCodeError(ValueError):
    """A PMF or rank table cannot define a QLC code."""


class QlcDecodeError(BitstreamError):
    """A QLC frame cannot be decoded; ``bit`` is where, when known."""


class QlcInvalidCodeError(QlcDecodeError, InvalidCodeError):
    """A QLC code word names an empty area or a suffix past its area's size."""


class QlcTruncatedStreamError(QlcDecodeError, TruncatedStreamError):
    """The last QLC code word of a frame runs past the frame's end."""


_DECODE_ERRORS = DecodeErrors(QlcDecodeError, QlcInvalidCodeError, QlcTruncatedStreamError)


# -- input checks ----------------------------------------------------------------------

def _check_pmf(pmf):
    """``pmf`` (:func:`~linkcodec.golden.pmf.check_pmf`, 256 entries) as float64.

    The weights are not normalised: a histogram of counts stays integral, so that sums
    over it (and the optimiser's comparisons) are exact.
    """
    weights = check_pmf(pmf, SYMBOLS, error=QlcCodeError).astype(np.float64)
    if not np.isfinite(weights.sum()):
        raise QlcCodeError("PMF entries are too large: their sum overflows")
    return weights


def _check_ranks(symbol_to_rank):
    """``symbol_to_rank`` as a read-only uint8 permutation of 0..255."""
    array = np.asarray(symbol_to_rank)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise QlcCodeError(f"a rank table holds integer ranks, not {array.dtype}")
    if array.shape != (SYMBOLS,):
        raise QlcCodeError(f"a rank table has {SYMBOLS} entries, one per symbol, not shape "
                           f"{array.shape}")
    bad = np.flatnonzero((array < 0) | (array >= SYMBOLS))
    if bad.size:
        raise QlcCodeError(f"symbol {bad[0]} has rank {array[bad[0]]}; ranks are 0..255")
    counts = np.bincount(array.astype(np.int64), minlength=SYMBOLS)
    if (counts != 1).any():
        rank = int(np.flatnonzero(counts > 1)[0])
        symbols = np.flatnonzero(array == rank)
        raise QlcCodeError(f"a rank table is a permutation of 0..255, but rank {rank} is given "
                           f"to symbols {symbols[0]} and {symbols[1]}")
    ranks = array.astype(np.uint8)
    ranks.setflags(write=False)
    return ranks


# -- layout ----------------------------------------------------------------------------

def _area_tuple(values, name):
    try:
        items = tuple(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of {AREAS} integers, not "
                        f"{type(values).__name__}") from None
    if len(items) != AREAS:
        raise QlcLayoutError(f"a QLC layout has {AREAS} areas, not {len(items)} ({name} "
                             f"has {len(items)} entries)")
    return tuple(as_index(item, f"{name}[{index}]") for index, item in enumerate(items))


@dataclass(frozen=True)
class QlcLayout:
    """The 8 areas of a QLC code: suffix widths ``suffix_bits`` and ``sizes``.

    Area ``a`` holds ranks ``bases[a] .. bases[a] + sizes[a] - 1`` behind codes of
    ``code_lengths[a] = 3 + suffix_bits[a]`` bits. Checked on construction: 8 areas,
    widths 0..8, ``0 <= sizes[a] <= 2**suffix_bits[a]``, sizes adding up to 256.
    """

    suffix_bits: tuple
    sizes: tuple

    def __post_init__(self):
        suffix_bits = _area_tuple(self.suffix_bits, "suffix_bits")
        sizes = _area_tuple(self.sizes, "sizes")
        for area, (width, size) in enumerate(zip(suffix_bits, sizes)):
            if not 0 <= width <= MAX_SUFFIX_BITS:
                raise QlcLayoutError(f"suffix width of area {area} is {width}; it must be "
                                     f"0..{MAX_SUFFIX_BITS}")
            if size < 0:
                raise QlcLayoutError(f"area {area} holds {size} symbols; a size cannot be "
                                     f"negative")
            if size > 1 << width:
                raise QlcLayoutError(f"area {area} holds {size} symbols but a {width}-bit "
                                     f"suffix has room for {1 << width}")
        if sum(sizes) != SYMBOLS:
            raise QlcLayoutError(f"area sizes add up to {sum(sizes)}, not {SYMBOLS}")
        object.__setattr__(self, "suffix_bits", suffix_bits)
        object.__setattr__(self, "sizes", sizes)

    @classmethod
    def base(cls):
        """The base layout: widths 3,3,3,3,3,4,5,8, sizes 8,8,8,8,8,16,32,168."""
        return cls((3, 3, 3, 3, 3, 4, 5, 8), (8, 8, 8, 8, 8, 16, 32, 168))

    @property
    def code_lengths(self):
        """Code length of each area, ``3 + suffix_bits[a]`` (empty areas included)."""
        return tuple(PREFIX_BITS + width for width in self.suffix_bits)

    @property
    def bases(self):
        """First rank of each area."""
        return tuple(int(base) for base in np.cumsum((0,) + self.sizes[:-1]))

    @property
    def distinct_lengths(self):
        """Number of distinct code lengths among the non-empty areas."""
        return len({length for length, size in zip(self.code_lengths, self.sizes) if size})

    @property
    def max_code_length(self):
        """Longest code of a non-empty area."""
        return max(length for length, size in zip(self.code_lengths, self.sizes) if size)

    def rank_lengths(self):
        """Code length of each rank 0..255 (uint8 array)."""
        return np.repeat(np.array(self.code_lengths, dtype=np.uint8), self.sizes)

    def expected_bits(self, pmf, rank=None):
        """Expected bits per symbol for ``pmf`` (probabilities or counts).

        ``rank`` is the symbol-to-rank table, by default :func:`rank_table` of ``pmf``.
        """
        weights = _check_pmf(pmf)
        ranks = rank_table(weights) if rank is None else _check_ranks(rank)
        lengths = self.rank_lengths()[ranks].astype(np.float64)
        return float(weights @ lengths / weights.sum())


# -- ranks -----------------------------------------------------------------------------

def rank_table(pmf):
    """Symbol-to-rank table (uint8, 256 entries) of a PMF or a histogram.

    Symbols are ranked by descending weight, ties broken by the smaller symbol first.
    """
    weights = _check_pmf(pmf)
    rank_to_symbol = np.argsort(-weights, kind="stable")
    ranks = np.empty(SYMBOLS, dtype=np.uint8)
    ranks[rank_to_symbol] = np.arange(SYMBOLS, dtype=np.uint8)
    return ranks


# -- code ------------------------------------------------------------------------------

class QlcCode:
    """A QLC code: a :class:`QlcLayout` and a symbol-to-rank table.

    ``encode`` turns uint8 symbols into a frame ``(data, nbits)``; ``decode`` turns a
    frame back, raising :class:`QlcDecodeError` (with the bit position) on an invalid
    code, a truncated frame, or ``nbits`` past the data.
    """

    def __init__(self, layout, symbol_to_rank):
        if not isinstance(layout, QlcLayout):
            raise TypeError(f"layout must be a QlcLayout, not {type(layout).__name__}")
        self._layout = layout
        self._symbol_to_rank = _check_ranks(symbol_to_rank)
        rank_to_symbol = np.empty(SYMBOLS, dtype=np.uint8)
        rank_to_symbol[self._symbol_to_rank] = np.arange(SYMBOLS, dtype=np.uint8)
        rank_to_symbol.setflags(write=False)
        self._rank_to_symbol = rank_to_symbol

        # Per rank: area, code and length; then per symbol.
        area = np.repeat(np.arange(AREAS), layout.sizes)
        widths = np.array(layout.suffix_bits, dtype=np.int64)[area]
        offset = np.arange(SYMBOLS) - np.array(layout.bases)[area]
        rank_code = (area << widths) | offset
        rank_length = PREFIX_BITS + widths
        code_of = rank_code[self._symbol_to_rank].astype(np.uint32)
        length_of = rank_length[self._symbol_to_rank].astype(np.uint8)
        code_of.setflags(write=False)
        length_of.setflags(write=False)
        self._code_of, self._length_of = code_of, length_of
        self._encoder = SymbolEncoder(code_of, length_of)

        # Decode tables over windows of the longest code: length 0 marks invalid codes.
        window_bits = layout.max_code_length
        window = np.arange(1 << window_bits)
        area = window >> (window_bits - PREFIX_BITS)
        widths = np.array(layout.suffix_bits)[area]
        # (An empty area may be wider than the window: its codes are invalid anyway.)
        suffix = window >> np.maximum(window_bits - PREFIX_BITS - widths, 0)
        suffix &= (1 << widths) - 1
        valid = suffix < np.array(layout.sizes)[area]
        rank = np.where(valid, np.array(layout.bases)[area] + suffix, 0)
        self._window_bits = window_bits
        self._lut_length = np.where(valid, PREFIX_BITS + widths, 0).astype(np.uint8)
        self._lut_symbol = np.where(valid, rank_to_symbol[rank], 0).astype(np.uint8)
        self._decoder = None          # the PrefixDecoder, built on first use

    @classmethod
    def base(cls):
        """The base layout with rank = symbol value."""
        return cls(QlcLayout.base(), np.arange(SYMBOLS))

    @classmethod
    def from_pmf(cls, pmf, layout=None):
        """The code for ``pmf`` (probabilities or counts): ranks from :func:`rank_table`,
        ``layout`` or else :func:`optimal_layout`."""
        ranks = rank_table(pmf)
        if layout is None:
            layout, _ = optimal_layout(pmf)
        return cls(layout, ranks)

    @property
    def layout(self):
        """The :class:`QlcLayout`."""
        return self._layout

    @property
    def symbol_to_rank(self):
        """Rank of each symbol (read-only uint8 array)."""
        return self._symbol_to_rank

    @property
    def rank_to_symbol(self):
        """Symbol of each rank (read-only uint8 array)."""
        return self._rank_to_symbol

    @property
    def code_of(self):
        """Code word of each symbol (read-only uint32 array), ``length_of`` bits long."""
        return self._code_of

    @property
    def length_of(self):
        """Code length of each symbol (read-only uint8 array)."""
        return self._length_of

    def __repr__(self):
        return (f"QlcCode(layout={self._layout!r}, symbol_to_rank="
                f"[{', '.join(map(str, self._symbol_to_rank[:8]))}, ...])")

    def expected_bits(self, pmf):
        """Expected bits per symbol of this code for ``pmf`` (probabilities or counts)."""
        weights = _check_pmf(pmf)
        return float(weights @ self._length_of.astype(np.float64) / weights.sum())

    def encode(self, symbols):
        """Encode ``symbols`` (uint8 array, any shape, read in C order, or bytes).

        Returns ``(data, nbits)``: the frame's ``ceil(nbits / 8)`` bytes, zero-padded.
        """
        symbols = as_symbols(symbols)
        if symbols.size == 0:
            return b"", 0
        return self._encoder.encode(symbols)

    def decode(self, data, nbits):
        """Decode a frame of ``nbits`` bits held in ``data`` (bytes-like or uint8 array).

        Bits of ``data`` past ``nbits`` are ignored. Returns the symbols (uint8 array).
        Raises :class:`QlcInvalidCodeError`, :class:`QlcTruncatedStreamError` or
        :class:`QlcDecodeError` (all :class:`QlcDecodeError`), naming the bit position.
        """
        try:
            return self.decoder.decode(data, nbits)
        except BitstreamError as error:
            raise _DECODE_ERRORS.convert(error, invalid_message=self._invalid_message,
                                         truncated_message=self._truncated_message) from None

    @property
    def decoder(self):
        """The :class:`~linkcodec.golden.prefix_decoder.PrefixDecoder` of this code over
        windows of the longest code (raising the shared errors), built on first use."""
        if self._decoder is None:
            self._decoder = PrefixDecoder(self._window_bits, self._lut_length,
                                          self._lut_symbol)
        return self._decoder

    def _truncated_message(self, error):
        area = error.window >> (self._window_bits - PREFIX_BITS)
        return (f"truncated stream: code at bit {error.bit} (area {area}) needs "
                f"{error.length} bits but the frame ends at bit {error.nbits}")

    def _invalid_message(self, error):
        window_bits = self._window_bits
        area = error.window >> (window_bits - PREFIX_BITS)
        width, size = self._layout.suffix_bits[area], self._layout.sizes[area]
        if size == 0:
            why = f"area {area} is empty"
        else:
            suffix = (error.window >> (window_bits - PREFIX_BITS - width)) & ((1 << width) - 1)
            why = (f"area {area} holds {size} symbols, so its suffix {suffix} "
                   f"({width} bits) is no code")
        return f"invalid code at bit {error.bit}: {why}"


# -- optimal layout --------------------------------------------------------------------

def _window_min(values, span):
    """``out[:, j] = min(values[:, max(0, j - span) : j + 1])``, span a power of two."""
    out = values.copy()
    width = 1  # out[:, j] is the minimum over values[:, j - width + 1 : j + 1]
    while width < span:
        np.minimum(out[:, width:], out[:, :-width].copy(), out=out[:, width:])
        width *= 2
    np.minimum(out[:, 1:], out[:, :-1].copy(), out=out[:, 1:])  # width span + 1
    return out


def optimal_areas(weights, *, areas, prefix_bits, max_suffix_bits, max_lengths):
    """Exact search for the cheapest layout of ranked ``weights`` (descending): the search
    behind :func:`optimal_layout`, for any number of areas, prefix and suffix widths
    (small cases can be checked against enumeration).

    Returns ``(suffix_bits, sizes, cost)`` with ``cost = sum(weight * length)``. For
    every set of allowed suffix widths (at most ``max_lengths`` of them), a dynamic
    programme over (areas used, ranks covered) finds the cheapest way to cover the
    ranks with areas of those widths (or empty areas); the best set wins, fewer widths
    first on a tie. Areas need not be in any order: the search makes no structural
    assumption.
    """
    count = weights.size
    prefix = np.concatenate([[0.0], np.cumsum(weights)])  # prefix[i]: weight of ranks < i
    widths = range(max_suffix_bits + 1)
    sets = [subset for size in range(1, min(max_lengths, len(widths)) + 1)
            for subset in itertools.combinations(widths, size)]
    allowed = np.zeros((len(sets), len(widths)), dtype=bool)
    for row, subset in enumerate(sets):
        allowed[row, list(subset)] = True

    # cost[s, i]: cheapest cover of ranks 0..i-1 by the areas so far, widths from set s.
    cost = np.full((len(sets), count + 1), np.inf)
    cost[:, 0] = 0.0
    history = [cost]
    for _ in range(areas):
        new = cost.copy()  # this area empty
        for width in widths:
            rows = allowed[:, width]
            length = prefix_bits + width
            # An area of this width covering ranks i..j-1 (j - i <= 2**width) costs
            # length * (prefix[j] - prefix[i]).
            reach = _window_min(cost[rows] - length * prefix, 1 << width) + length * prefix
            new[rows] = np.minimum(new[rows], reach)
        cost = new
        history.append(cost)

    totals = cost[:, count]
    best = totals.min()
    if not np.isfinite(best):
        raise QlcLayoutError(f"{areas} areas of at most {max_lengths} distinct suffix widths "
                             f"<= {max_suffix_bits} cannot hold {count} symbols")
    candidates = np.flatnonzero(totals <= best)
    chosen = min(candidates, key=lambda row: (len(sets[row]), row))

    # Walk back through the programme of the chosen set. Using the fewest areas that
    # reach the optimum leaves the empty areas at the end (an empty area in the middle
    # would mean fewer areas suffice); among equal choices, prefer the fullest area,
    # then the narrowest.
    used = next(area for area in range(areas + 1) if history[area][chosen, count] == best)
    suffix_bits, sizes = [0] * areas, [0] * areas
    covered = count
    for area in range(used - 1, -1, -1):
        target = history[area + 1][chosen, covered]
        before = history[area][chosen]
        options = []
        for width in sets[chosen]:
            length = prefix_bits + width
            first = max(0, covered - (1 << width))
            reach = (before[first:covered] - length * prefix[first:covered]
                     + length * prefix[covered])
            match = np.flatnonzero(reach == target)
            if match.size:
                options.append((first + int(match[0]), width))
        if not options:
            raise AssertionError("optimal layout: no step back matches the programme")
        start, width = min(options)
        suffix_bits[area], sizes[area] = width, covered - start
        covered = start
    if covered != 0:
        raise AssertionError("optimal layout: the walk back did not reach rank 0")
    return tuple(suffix_bits), tuple(sizes), float(best)


def optimal_layout(pmf, max_lengths=4):
    """The layout with the fewest expected bits per symbol for ``pmf``.

    ``pmf``: 256 probabilities or counts; symbols are ranked by :func:`rank_table`. The
    layout has 8 areas with suffix widths 0..8 and at most ``max_lengths`` distinct code
    lengths among its non-empty areas. The search is exact (and so are its sums for
    counts, which stay integral). Among equally good layouts it takes the fewest distinct
    widths, then the fewest areas (empty areas come last, with width 0), then the
    fullest and narrowest areas from the last one back. Returns
    ``(layout, expected_bits_per_symbol)``.
    """
    weights = _check_pmf(pmf)
    max_lengths = as_index(max_lengths, "max_lengths")
    if max_lengths < 1:
        raise QlcLayoutError(f"max_lengths is {max_lengths}; a layout has at least one code "
                             f"length")
    ranks = rank_table(weights)
    ranked = np.empty(SYMBOLS)
    ranked[ranks] = weights
    suffix_bits, sizes, _ = optimal_areas(ranked, areas=AREAS, prefix_bits=PREFIX_BITS,
                                          max_suffix_bits=MAX_SUFFIX_BITS,
                                          max_lengths=max_lengths)
    layout = QlcLayout(suffix_bits, sizes)
    return layout, layout.expected_bits(weights, ranks)


# -- on the link ------------------------------------------------------------------------

def canonical_qlc(code):
    """``code`` with the symbols of each area in increasing order: the same code length
    for every symbol, so the same compression, and a table image of 3 bits a symbol
    (its area) instead of a rank permutation."""
    if not isinstance(code, QlcCode):
        raise TypeError(f"tables must be a QlcCode, not {type(code).__name__}")
    layout = code.layout
    area_of_rank = np.repeat(np.arange(AREAS), layout.sizes)
    area = area_of_rank[code.symbol_to_rank]
    order = np.lexsort((np.arange(SYMBOLS), area))       # by area, then by symbol value
    ranks = np.empty(SYMBOLS, dtype=np.int64)
    ranks[order] = np.arange(SYMBOLS)
    return QlcCode(layout, ranks)


class QlcLinkCodec(LinkCodec):
    """QLC on the link: the code made canonical (:func:`canonical_qlc`); its table image
    is the 8 areas (``suffix_bits << 12 | size``, 2 bytes each), then each symbol's area
    (3 bits a symbol, symbol 0 first)."""

    name, codec_id, table_type = "qlc", 1, QlcCode

    def check_tables(self, tables):
        return canonical_qlc(super().check_tables(tables))

    def lengths(self, tables, symbols):
        return tables.length_of[symbols]

    def image(self, code):
        layout = code.layout
        head = bytes(b for width, size in zip(layout.suffix_bits, layout.sizes)
                     for b in ((width << 4) | (size >> 8), size & 0xFF))
        area = np.repeat(np.arange(AREAS), layout.sizes)[code.symbol_to_rank]
        packed = np.packbits(((area[:, None] >> np.arange(2, -1, -1)) & 1).astype(np.uint8))
        return head + packed.tobytes()

    def image_bytes(self):
        return 2 * AREAS + 3 * SYMBOLS // 8

    def from_image(self, image):
        head = image[:2 * AREAS]
        widths = tuple(head[2 * a] >> 4 for a in range(AREAS))
        sizes = tuple(((head[2 * a] & 1) << 8) | head[2 * a + 1] for a in range(AREAS))
        if any(head[2 * a] & 0x0E for a in range(AREAS)):
            raise ValueError("reserved bits of an area entry are set")
        layout = QlcLayout(widths, sizes)
        bits = np.unpackbits(np.frombuffer(image[2 * AREAS:], dtype=np.uint8))
        area = (bits.reshape(SYMBOLS, 3) * np.array([4, 2, 1])).sum(axis=1)
        counts = np.bincount(area, minlength=AREAS)
        if tuple(counts) != sizes:
            raise ValueError(f"the symbols' areas hold {tuple(int(c) for c in counts)} "
                             f"symbols where the layout says {sizes}")
        ranks = np.empty(SYMBOLS, dtype=np.int64)
        ranks[np.lexsort((np.arange(SYMBOLS), area))] = np.arange(SYMBOLS)
        return QlcCode(layout, ranks)
