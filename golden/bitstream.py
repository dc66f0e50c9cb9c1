"""Prefix-code bit machinery shared by the golden codec models.

A *frame* is a sequence of code words concatenated most significant bit first: bit ``i``
of the frame is bit ``7 - i % 8`` of byte ``i // 8`` (``docs/bitstream.md``, "Frame").
:func:`pack_codes` builds a frame from code words; :func:`decode_prefix` reads one back
given a look-up table indexed by a fixed-width window of the frame. Both are vectorised
NumPy: no Python loop runs once per symbol.

How :func:`decode_prefix` avoids a per-symbol loop: the frame is cut into chunks, every
chunk is decoded *speculatively* from its first bit, all chunks at once (one NumPy step
per symbol index within a chunk; in long frames a step takes two codes, read from one
window of up to 20 bits through a table of pair lengths, or one code where the pair
does not fit, so a step lands on every other code start or so). The decoding path of a
prefix code is a function of the start position only, so as soon as the true path
reaches a position that the speculation of its chunk also visited, the rest of that
chunk is known. Chunks whose true entry was
not visited by their speculation are re-decoded from the true entry (all of them at once)
until they meet it or leave the chunk, and this repeats while chunk entries change. The
chunk length is a multiple of the code lengths (as far as that stays small), so a frame
of one repeated symbol is in step from the start. A periodic frame whose period does not
divide the chunk length defeats speculation; when resyncing does not settle quickly, the
rest of the segment is decoded from every possible entry of every chunk instead (about
``longest code`` times the work, never a per-symbol loop).

Two codes per step keep resyncing exact: the positions a step lands on are a function
of where the walk started, so a resync walk goes one code at a time and is in sync once
it reaches a position the speculation landed on (at most one code after the paths meet).
The listed positions then skip at most one code between two of them, and the final pass
reads that code from the window of the position before it.

Decode errors derive from :class:`BitstreamError` (a :class:`ValueError`) and name the
bit position: :class:`InvalidCodeError` for a window that is no code word,
:class:`TruncatedStreamError` for a code word that runs past the end of the frame.
"""

import math
import operator
from typing import NamedTuple

import numpy as np

__all__ = [
    "MAX_CODE_LENGTH",
    "BitstreamError",
    "TruncatedStreamError",
    "InvalidCodeError",
    "pack_codes",
    "as_symbols",
    "SymbolEncoder",
    "decode_prefix",
    "PrefixDecoder",
]

#: Longest code word (and widest decode window) the machinery handles.
MAX_CODE_LENGTH = 24

# Long frames are walked two codes per step through a table over windows this wide
# (2**20 entries), where the two codes fit.
_PAIR_WINDOW_BITS = 20
# Decoder tuning. Speculation walks about this many bits per chunk (rounded up to a
# multiple of the code lengths); more chunks mean fewer NumPy steps but more resyncs.
_TARGET_CHUNK_BITS = 2048
# The chunk length is a multiple of the lcm of the code lengths while that lcm stays
# below this bound (longest lengths dropped first when it does not).
_MAX_LENGTH_LCM = 4096
# Speculating chunks are checked for completion every this many steps.
_CHECK_EVERY = 16
# Codes packed per block (temporaries stay in cache rather than in fresh pages).
_BLOCK = 1 << 16
# The decoder speculates this many chunks at a time.
_SEGMENT_CHUNKS = 4096
# Resync rounds before the decoder gives up speculating on the rest of a segment: a
# round settles one more chunk of a run of chunks whose speculation misses the true path.
_MAX_ROUNDS = 2


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


# -- helpers ---------------------------------------------------------------------------

def _as_index(value, name):
    """``value`` as a Python int; bools and non-integers are refused."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


def _as_int_array(values, name):
    """``values`` as a 1-D integer array (no copy when already one)."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, not of shape {array.shape}")
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        if array.size == 0 and array.dtype == np.float64:
            # np.asarray([]) is float64: an empty list is a fine empty input.
            return array.astype(np.int64)
        raise TypeError(f"{name} must hold integers, not {array.dtype}")
    return array


def _as_byte_array(data):
    """The frame bytes as a read-only ``uint8`` array view."""
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


# -- encoding --------------------------------------------------------------------------

def pack_codes(codes, lengths):
    """Concatenate code words into a frame.

    ``codes[i]`` is a code word of ``lengths[i]`` bits (1 .. 24), its first bit in its
    most significant position; both are 1-D integer arrays of the same length. Returns
    ``(data, nbits)``: ``nbits = sum(lengths)`` and ``data`` the ``ceil(nbits / 8)``
    bytes of the frame, MSB first, zero-padded to a whole byte.

    Raises :class:`ValueError` if a length is out of range or a code does not fit its
    length, :class:`TypeError` for non-integer input.
    """
    codes = _as_int_array(codes, "codes")
    lengths = _as_int_array(lengths, "lengths")
    if codes.shape != lengths.shape:
        raise ValueError(f"codes and lengths differ in size: {codes.size} codes, "
                         f"{lengths.size} lengths")
    if codes.size == 0:
        return b"", 0
    shortest, longest = int(lengths.min()), int(lengths.max())
    if shortest < 1 or longest > MAX_CODE_LENGTH:
        bad = int(np.flatnonzero((lengths < 1) | (lengths > MAX_CODE_LENGTH))[0])
        raise ValueError(f"code {bad} has length {int(lengths[bad])}; lengths must be "
                         f"1..{MAX_CODE_LENGTH}")
    if codes.dtype.kind == "i" and int(codes.min()) < 0:
        bad = int(np.flatnonzero(codes < 0)[0])
        raise ValueError(f"code {bad} is negative ({int(codes[bad])})")
    writer = _BitWriter(longest * codes.size)
    # Blocks keep the temporaries small: fresh large arrays cost more than the work.
    for first in range(0, codes.size, _BLOCK):
        block_codes = codes[first:first + _BLOCK].astype(np.uint64)
        block_lengths = lengths[first:first + _BLOCK].astype(np.uint64)
        overflow = (block_codes >> block_lengths) != 0
        if overflow.any():
            bad = first + int(np.flatnonzero(overflow)[0])
            raise ValueError(f"code {bad} is {int(codes[bad]):#x}, which does not fit in "
                             f"{int(lengths[bad])} bits")
        aligned = np.left_shift(block_codes, np.uint64(64) - block_lengths)
        piece_longest = longest
        # Halve the number of pieces while a joined pair still fits the writer.
        while 2 * piece_longest <= 32 and aligned.size > 1:
            aligned, block_lengths = _join_pairs(aligned, block_lengths)
            piece_longest *= 2
        writer.write(aligned, block_lengths)
    return writer.getvalue()


def _join_pairs(aligned, lengths):
    """Join pieces 2i and 2i+1 into one (an odd last piece stays alone)."""
    half, total = aligned.size // 2, (aligned.size + 1) // 2
    joined = np.empty(total, dtype=np.uint64)
    joined_lengths = np.empty(total, dtype=np.uint64)
    first_lengths = lengths[0:2 * half:2]
    np.right_shift(aligned[1::2], first_lengths, out=joined[:half])
    joined[:half] |= aligned[0:2 * half:2]
    np.add(first_lengths, lengths[1::2], out=joined_lengths[:half])
    joined[half:] = aligned[2 * half:]
    joined_lengths[half:] = lengths[2 * half:]
    return joined, joined_lengths


class _BitWriter:
    """Appends pieces of 1..32 bits to a frame, a block of pieces at a time.

    A piece is held in the top of a uint64 (its first bit in bit 63) and lands in the
    64-bit window over the 32-bit frame words ``start // 32`` and the next (offset <= 31
    plus length <= 32 fits). As no piece is longer than a word, every word from a
    block's first piece to its last has a piece starting in it, so the block's pieces
    group by first word in order, one group per word. Pieces of a group cover disjoint
    bits of its window, so their sum is their OR, and a group's window is a difference
    of a running sum (mod 2**64). A word shared by two blocks is ORed from both.
    """

    def __init__(self, max_bits):
        self.words = np.zeros(max_bits // 32 + 2, dtype=np.uint64)  # zero pages are lazy
        self.nbits = 0

    def write(self, aligned, lengths):
        """Append pieces: ``aligned`` and ``lengths`` are uint64 arrays."""
        if aligned.size == 0:
            return
        ends = np.cumsum(lengths)
        ends += np.uint64(self.nbits)
        starts = ends - lengths
        self.nbits = int(ends[-1])
        word = starts >> np.uint64(5)
        starts &= np.uint64(31)
        placed = np.right_shift(aligned, starts, out=starts)
        running = np.cumsum(placed, out=placed)
        first_word, last_word = int(word[0]), int(word[-1])
        group_ends = np.empty(last_word - first_word + 1, dtype=np.uint64)
        group_ends[:-1] = running[np.flatnonzero(word[1:] != word[:-1])]
        group_ends[-1] = running[-1]
        windows = np.diff(group_ends, prepend=np.uint64(0))
        self.words[first_word:last_word + 1] |= windows >> np.uint64(32)
        self.words[first_word + 1:last_word + 2] |= windows & np.uint64(0xFFFFFFFF)

    def getvalue(self):
        """``(data, nbits)`` of the frame written so far."""
        nbytes = (self.nbits + 7) // 8
        return self.words[: nbytes // 4 + 1].astype(">u4").tobytes()[:nbytes], self.nbits


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


class SymbolEncoder:
    """Encodes byte symbols through a 256-entry code table, two symbols at a time.

    ``codes[s]`` / ``lengths[s]`` are symbol ``s``'s code word and its length (1..16
    bits, so a pair of codes fits one :class:`_BitWriter` piece). Long inputs go through
    a 65,536-entry table of joined pairs, built on first use: half the pieces, and the
    look-up replaces the per-symbol shifts. The frame is the one :func:`pack_codes`
    makes from the same codes.
    """

    PAIRS_FROM = 4096      # shorter inputs do not repay building the pair table
    _BLOCK = 1 << 16       # even, so pairs stay whole within a block

    def __init__(self, codes, lengths):
        lengths = _as_int_array(lengths, "lengths").astype(np.uint64)
        codes = _as_int_array(codes, "codes").astype(np.uint64)
        if codes.shape != (256,) or lengths.shape != (256,):
            raise ValueError("a symbol encoder takes 256 codes and 256 lengths")
        if int(lengths.min()) < 1 or int(lengths.max()) > 16:
            raise ValueError("symbol encoder code lengths must be 1..16")
        if np.any(codes >> lengths):
            raise ValueError("a code does not fit its length")
        self._lengths = lengths
        self._aligned = codes << (np.uint64(64) - lengths)    # first bit in bit 63
        self._longest = int(lengths.max())
        self._pair_tables = None

    def _pairs(self):
        if self._pair_tables is None:
            aligned = (self._aligned[:, None]
                       | (self._aligned[None, :] >> self._lengths[:, None])).reshape(-1)
            self._pair_tables = (aligned, (self._lengths[:, None]
                                           + self._lengths[None, :]).reshape(-1))
        return self._pair_tables

    def encode(self, symbols):
        """``(data, nbits)`` of the frame of ``symbols`` (a flat uint8 array)."""
        if symbols.size == 0:
            return b"", 0
        writer = _BitWriter(int(symbols.size) * self._longest)
        if symbols.size < self.PAIRS_FROM:
            writer.write(self._aligned[symbols], self._lengths[symbols])
            return writer.getvalue()
        pair_aligned, pair_length = self._pairs()
        for first in range(0, symbols.size, self._BLOCK):
            block = symbols[first:first + self._BLOCK]
            pairs = block.size // 2
            index = block[0:2 * pairs:2].astype(np.uint16)
            index <<= 8
            index |= block[1::2]
            writer.write(np.take(pair_aligned, index), np.take(pair_length, index))
        if symbols.size % 2:
            last = symbols[-1:]
            writer.write(self._aligned[last], self._lengths[last])
        return writer.getvalue()


# -- decoding --------------------------------------------------------------------------

def _check_tables(window_bits, lut_length, lut_symbol):
    """Validate the decode tables; return the lengths (int64) and the symbols."""
    entries = 1 << window_bits
    lut_length = np.asarray(lut_length)
    lut_symbol = np.asarray(lut_symbol)
    for name, table in (("lut_length", lut_length), ("lut_symbol", lut_symbol)):
        if table.shape != (entries,):
            raise ValueError(f"{name} must have 2**window_bits = {entries} entries, not "
                             f"shape {table.shape}")
        if table.dtype == np.bool_ or not np.issubdtype(table.dtype, np.integer):
            raise TypeError(f"{name} must hold integers, not {table.dtype}")
    lengths = lut_length.astype(np.int64)
    if lengths.min() < 0 or lengths.max() > window_bits:
        bad = int(np.flatnonzero((lengths < 0) | (lengths > window_bits))[0])
        raise ValueError(f"lut_length[{bad:#x}] is {int(lengths[bad])}; code lengths must be "
                         f"0 (invalid) .. window_bits = {window_bits}")
    if not lengths.any():
        raise ValueError("lut_length holds no code word (every entry is 0)")
    # In a prefix-code table, all windows that start with a code word (its block, of
    # 2**(window_bits - L) windows) decode the same: each block lies in one run of equal
    # entries. Anything else would decode garbage.
    window = np.arange(entries, dtype=np.int64)
    drop = np.where(lengths > 0, window_bits - lengths, 0)
    head = (window >> drop) << drop
    differs = np.ones(entries, dtype=bool)
    differs[1:] = (lengths[1:] != lengths[:-1]) | (lut_symbol[1:] != lut_symbol[:-1])
    run_starts = np.flatnonzero(differs)
    run_ends = np.append(run_starts[1:], entries)
    run = np.cumsum(differs) - 1
    broken = (lengths > 0) & ((head < run_starts[run]) | (head + (1 << drop) > run_ends[run]))
    if broken.any():
        bad = int(np.flatnonzero(broken)[0])
        length, first = int(lengths[bad]), int(head[bad])
        last = first + (1 << int(drop[bad])) - 1
        raise ValueError(
            f"the tables are not a prefix code: window {bad:#x} starts a {length}-bit code "
            f"word, but the windows {first:#x} .. {last:#x} that share those bits do not all "
            f"decode the same")
    return lengths, lut_symbol


def _chunk_bits(lengths, window_bits):
    """Chunk length: about _TARGET_CHUNK_BITS, a multiple of the code lengths if cheap."""
    present = np.flatnonzero(np.bincount(lengths, minlength=window_bits + 1)[1:]) + 1
    step = 1
    for length in present:  # shortest first: those are the likeliest code words
        joined = math.lcm(step, int(length))
        if joined > _MAX_LENGTH_LCM:
            break
        step = joined
    chunk = step * -(-_TARGET_CHUNK_BITS // step)
    # A chunk must hold a whole window so that a chunk's entry lies inside it.
    return max(chunk, step * -(-MAX_CODE_LENGTH // step))


class _Steps(NamedTuple):
    """A walk step: ``advance[w]`` is how far it goes from a ``bits``-wide window ``w``;
    ``shortest`` is the least advance from a window that starts a code word."""

    bits: int
    advance: np.ndarray
    shortest: int


def _pair_steps(code_length, window_bits, pair_bits):
    """Walk steps of two codes: over ``pair_bits``-wide windows, the length of the first
    two code words when both are code words within the window, else of the first alone
    (1 if it is invalid, as for a single code)."""
    windows = np.arange(1 << pair_bits, dtype=np.uint32)
    drop = np.uint32(pair_bits - window_bits)
    first = np.take(code_length, windows >> drop)
    rest = np.left_shift(windows, first, out=windows)
    rest &= np.uint32((1 << pair_bits) - 1)
    rest >>= drop
    second = np.take(code_length, rest)  # read with zeros past the window: sure if it fits
    both = first + second
    pair = (first > 0) & (second > 0) & (both <= pair_bits)
    advance = np.where(pair, both, np.maximum(first, 1)).astype(np.uint8)
    return _Steps(pair_bits, advance, int(advance[first > 0].min()))


class _Frame:
    """Reads windows of up to 25 bits at bit positions of a frame (zero past nbits).

    Positions are of ``dtype``, uint32 (uint64 for frames of 2**30 bits or more); a
    position past the frame reads its last bytes, which only speculation does.
    """

    def __init__(self, data, nbits, dtype):
        nbytes = (nbits + 7) // 8
        padded = np.zeros(nbytes + 3, dtype=np.uint8)
        padded[:nbytes] = data[:nbytes]
        if nbits % 8:
            padded[nbytes - 1] &= (0xFF << (8 - nbits % 8)) & 0xFF  # pad bits read as 0
        # The big-endian 32-bit word at every byte, in the top of a dtype word: a window
        # is then a left shift (dropping the bits before it) and a right shift.
        unaligned = np.ndarray((nbytes,), dtype=">u4", buffer=padded, strides=(1,))
        self.words = unaligned.astype(dtype)
        self.width = 8 * self.words.itemsize
        if self.width > 32:
            self.words <<= self.width - 32
        self.nbits = nbits
        self.dtype = dtype

    def window(self, positions, bits):
        """The ``bits``-wide window at each position."""
        window = np.take(self.words, positions >> 3, mode="clip")
        window <<= positions & 7
        window >>= self.dtype(self.width - bits)
        return window


def decode_prefix(data, nbits, window_bits, lut_length, lut_symbol):
    """Decode a frame of ``nbits`` bits of a prefix code; return its symbols.

    ``data`` is bytes-like or a ``uint8`` array holding at least ``nbits`` bits, MSB
    first; bits past ``nbits`` are ignored (read as zero). ``window_bits`` (1..24) is the
    longest code length. For every ``window_bits``-wide value ``w``, ``lut_length[w]`` is
    the length of the code word that ``w`` starts with (0: no code word starts so) and
    ``lut_symbol[w]`` its symbol; the result has ``lut_symbol``'s dtype.

    Raises :class:`InvalidCodeError` at the first window on the decoding path that is no
    code word, :class:`TruncatedStreamError` if the last code word runs past ``nbits``,
    :class:`BitstreamError` if ``nbits`` is negative or past the end of ``data``, and
    :class:`ValueError` / :class:`TypeError` for malformed tables.

    This checks the tables on every call; a codec decoding many frames keeps a
    :class:`PrefixDecoder` instead.
    """
    frame_bytes = _as_byte_array(data)
    nbits = _as_index(nbits, "nbits")
    return PrefixDecoder(window_bits, lut_length, lut_symbol).decode(frame_bytes, nbits)


class PrefixDecoder:
    """Decodes frames of one prefix code, its tables checked once.

    ``PrefixDecoder(window_bits, lut_length, lut_symbol).decode(data, nbits)`` is
    :func:`decode_prefix` (same arguments, result and exceptions); the constructor
    raises what :func:`decode_prefix` raises for malformed tables. The table of code
    pairs that long frames are walked with (:func:`_pair_steps`) is built on the first
    frame of at least ``PAIRS_FROM`` bits and kept.
    """

    PAIRS_FROM = 1 << 20   # shorter frames do not repay building the pair table

    def __init__(self, window_bits, lut_length, lut_symbol):
        window_bits = _as_index(window_bits, "window_bits")
        if not 1 <= window_bits <= MAX_CODE_LENGTH:
            raise ValueError(f"window_bits is {window_bits}; it must be 1..{MAX_CODE_LENGTH}")
        lengths, symbols = _check_tables(window_bits, lut_length, lut_symbol)
        self._window_bits = window_bits
        self._longest = int(lengths.max())
        self._symbols = symbols.copy()
        self._code_length = lengths.astype(np.uint8)
        self._chunk = _chunk_bits(lengths, window_bits)
        # An invalid window advances one bit, so that every walk ends.
        self._single_steps = _Steps(window_bits,
                                    np.where(lengths > 0, lengths, 1).astype(np.uint8),
                                    int(lengths[lengths > 0].min()))
        self._pair_bits = min(2 * window_bits, _PAIR_WINDOW_BITS)
        self._pair_steps = None

    def _steps(self, nbits):
        """How the walk over a frame of ``nbits`` bits steps: :class:`_Steps`."""
        if self._pair_bits <= self._window_bits or nbits < self.PAIRS_FROM:
            return self._single_steps
        if self._pair_steps is None:
            self._pair_steps = _pair_steps(self._code_length, self._window_bits,
                                           self._pair_bits)
        return self._pair_steps

    def decode(self, data, nbits):
        """The symbols of the frame of ``nbits`` bits held in ``data``; see
        :func:`decode_prefix`."""
        frame_bytes = _as_byte_array(data)
        nbits = _as_index(nbits, "nbits")
        if nbits < 0:
            raise BitstreamError(f"nbits is {nbits}; a frame length cannot be negative")
        if nbits > 8 * frame_bytes.size:
            raise BitstreamError(f"nbits is {nbits} but the data holds only "
                                 f"{8 * frame_bytes.size} bits ({frame_bytes.size} bytes)")
        if nbits == 0:
            return self._symbols[:0].copy()

        # uint32 positions halve the memory traffic; speculation runs past nbits by less
        # than a chunk of longest codes.
        dtype = np.uint32 if nbits < 1 << 30 else np.uint64
        frame = _Frame(frame_bytes, nbits, dtype)
        steps = self._steps(nbits)
        tables = _DecodeTables(frame, self._single_steps, steps, self._longest)
        decoded = []
        listed = None  # the previous block of listed positions, decoded once the next is known
        for block in _decoding_path(tables, nbits, self._chunk):
            if block.size == 0:
                continue
            if listed is None:
                if block[0] != 0:
                    raise AssertionError("decode_prefix: inconsistent decoding path "
                                         "(internal error)")
            else:
                decoded.append(self._decode_listed(frame, steps.bits, listed, block[0])[0])
            listed = block
        symbols, last, length, window = self._decode_listed(frame, steps.bits, listed, nbits)
        decoded.append(symbols)
        if last + length > nbits:
            raise TruncatedStreamError(
                f"truncated stream: code at bit {last} needs {length} bits but the frame "
                f"ends at bit {nbits}", bit=last, length=length, nbits=nbits, window=window)
        return np.concatenate(decoded)

    def _decode_listed(self, frame, step_bits, listed, following):
        """Decode the codes from ``listed[0]`` up to ``following``, the next listed position.

        ``listed`` holds sorted positions of the decoding path; between two of them (and
        between the last and ``following``) the path may have one more code, which
        starts where the code at the first ends (a walk step took both). The second code
        lies within the ``step_bits`` window of the first, so one window read gives both.
        Returns the symbols and, of the last code, its position, length and window;
        raises :class:`InvalidCodeError` at the first invalid code.
        """
        window_bits = self._window_bits
        drop = frame.dtype(step_bits - window_bits)
        windows = frame.window(listed, step_bits)
        first = windows >> drop
        first_length = np.take(self._code_length, first)
        if first_length.min() == 0:
            index = int(np.flatnonzero(first_length == 0)[0])
            bit, window = int(listed[index]), int(first[index])
            raise InvalidCodeError(
                f"invalid code at bit {bit}: the {window_bits} bits from there, "
                f"{window:#0{window_bits + 2}b}, start no code word", bit=bit, window=window)
        middle = listed + first_length
        windows <<= first_length
        windows &= frame.dtype((1 << step_bits) - 1)
        second = np.right_shift(windows, drop, out=windows)  # zeros past the step window
        second_length = np.take(self._code_length, second)
        has_second = np.empty(listed.size, dtype=bool)
        np.less(middle[:-1], listed[1:], out=has_second[:-1])
        has_second[-1] = middle[-1] < following
        ends = middle + second_length * has_second
        # Each listed code (and the one it took along) ends where the next listed starts;
        # only the frame's last code may run past its end (a truncated stream).
        last_end = int(ends[-1])
        if not (np.array_equal(ends[:-1], listed[1:]) and (
                last_end == following or following == frame.nbits < last_end)):
            raise AssertionError("decode_prefix: inconsistent decoding path (internal error)")
        symbols = np.empty((listed.size, 2), dtype=self._symbols.dtype)
        symbols[:, 0] = np.take(self._symbols, first)  # a take into a strided out is slow
        symbols[:, 1] = np.take(self._symbols, second)
        keep = np.ones((listed.size, 2), dtype=bool)
        keep[:, 1] = has_second
        if has_second[-1]:
            last, length, window = middle[-1], second_length[-1], second[-1]
        else:
            last, length, window = listed[-1], first_length[-1], first[-1]
        return symbols[keep], int(last), int(length), int(window)


def _decoding_path(tables, nbits, chunk):
    """Positions on the decoding path from bit 0, in blocks: at least every other code.

    A generator of sorted arrays which, concatenated, list the path: every code start,
    except that a code may be left out where a walk step took it together with the code
    before (``_DecodeTables.walk``); :meth:`PrefixDecoder._decode_listed` puts those
    back. On this path an invalid window advances one bit; up to the first invalid
    window it is the true decoding, and the caller reports that window.

    The frame is decoded a segment of chunks at a time, each segment from a true
    position: speculatively (:func:`_speculative_segment`), and where that fails to
    settle (a periodic stream whose period does not divide the chunk length makes every
    chunk miss the true path), exactly from every possible entry of every chunk
    (:func:`_exact_segment`, about ``max code length`` times the work, but bounded).
    """
    begin = 0
    while begin < nbits:
        end = min(nbits, begin + _SEGMENT_CHUNKS * chunk)
        begin, settled = yield from _speculative_segment(tables, begin, end, chunk)
        if not settled:
            begin = yield from _exact_segment(tables, begin, end, chunk)


class _DecodeTables:
    """What the decoding loops share: the frame and how far a code or a walk step
    advances from each window."""

    def __init__(self, frame, single, steps, longest):
        self.frame = frame
        self.words, self.dtype = frame.words, frame.dtype
        self.single = single      # :class:`_Steps` of one code
        self.steps = steps        # :class:`_Steps` of a walk step: ``single`` or pairs
        self.longest = longest    # the longest code length

    def step(self, positions):
        """How far the code at each position advances."""
        return np.take(self.single.advance, self.frame.window(positions, self.single.bits))

    def walk_step(self, positions):
        """How far a walk step from each position advances (one code or two)."""
        return np.take(self.steps.advance, self.frame.window(positions, self.steps.bits))

    def walk(self, starts, ends):
        """Decode from each start until past its end: a table of positions, one row per
        start, its first column ``starts``, a step (``self.steps``) apart: one code or
        two. Entries from a row's end on are clipped to the end, so that the rows, if
        consecutive, form one sorted array.

        The walk keeps its last ``_CHECK_EVERY`` steps in a step-major buffer (each step
        writes one contiguous row, with no fresh temporaries) and copies them into the
        start-major table a block at a time: writing the table one column per step
        touches a cache line per start at every step, which cost a third of the walk.
        """
        dtype = self.dtype
        count = starts.size
        table = np.empty((count, int(np.max(ends - starts, initial=0)) // self.steps.shortest
                          + 2 * _CHECK_EVERY + 1), dtype=dtype)
        recent = np.empty((_CHECK_EVERY + 1, count), dtype=dtype)
        recent[0] = starts
        byte = np.empty(count, dtype=dtype)
        bit = np.empty(count, dtype=dtype)
        window = np.empty(count, dtype=dtype)
        advance = np.empty(count, dtype=np.uint8)
        words, advance_of = self.words, self.steps.advance
        shift = dtype(self.frame.width - self.steps.bits)
        step = 0
        clip_from = None  # the first column that may hold positions past their end
        while True:
            for row in range(_CHECK_EVERY):
                position = recent[row]
                np.right_shift(position, dtype(3), out=byte)
                np.take(words, byte, out=window, mode="clip")
                np.bitwise_and(position, dtype(7), out=bit)
                window <<= bit
                window >>= shift
                np.take(advance_of, window, out=advance, mode="clip")
                np.add(position, advance, out=recent[row + 1])
            if step + 2 * _CHECK_EVERY >= table.shape[1]:  # only invalid windows get here
                table = np.concatenate([table, np.empty_like(table)], axis=1)
            table[:, step:step + _CHECK_EVERY] = recent[:_CHECK_EVERY].T
            recent[0] = recent[_CHECK_EVERY]
            past = recent[0] >= ends
            if clip_from is None and past.any():
                clip_from = step
            step += _CHECK_EVERY
            if past.all():
                break
        table[:, step] = recent[0]
        if table.shape[1] > 2 * (step + 1):
            table = table[:, :step + 1].copy()
        table[:, step + 1:] = ends[:, None]
        # Positions only grow, so no row passed its end before the block where the first
        # one did: only the columns from there on need clipping.
        tail = table[:, clip_from:]
        np.minimum(tail, ends[:, None], out=tail)
        return table


def _emit(table, first_kept, ends, starts, extra):
    """Yield, a block of rows at a time, each row's positions from ``first_kept[row]``
    to ``ends[row]``, merged with the sorted ``extra`` positions of those rows."""
    rows = max(1, _BLOCK // table.shape[1])
    for first in range(0, table.shape[0], rows):
        block_rows = table[first:first + rows]
        keep = block_rows >= first_kept[first:first + rows, None]
        keep &= block_rows < ends[first:first + rows, None]
        positions = block_rows[keep]
        low, high = np.searchsorted(extra, (starts[first], ends[first:first + rows][-1]))
        if high > low:
            positions = np.concatenate([positions, extra[low:high]])
            positions.sort(kind="stable")  # two sorted runs: a linear merge
        if positions.size:
            yield positions


def _speculative_segment(tables, begin, end, chunk):
    """Decode ``begin .. end`` (``begin`` on the true path) speculatively.

    Yields position blocks; returns ``(position, True)`` with the true position after
    the segment, or ``(position, False)`` if resyncing did not settle within
    ``_MAX_ROUNDS`` rounds: then the blocks cover the path up to ``position``, a true
    position inside the segment.
    """
    dtype = tables.dtype
    nchunks = -(-(end - begin) // chunk)
    starts = dtype(begin) + np.arange(nchunks, dtype=dtype) * dtype(chunk)
    ends = np.minimum(starts + dtype(chunk), dtype(end))

    # 1. Speculation: every chunk from its first bit, all in step. Row c of ``spec`` is
    # chunk c's code starts, clipped to ends[c]; as ends[c] = starts[c + 1], the table
    # is one sorted array and membership is one searchsorted.
    spec = tables.walk(starts, ends)
    flat = spec.reshape(-1)
    last = flat[np.searchsorted(flat, ends) - 1]       # the last code inside each chunk
    spec_exit = last + tables.walk_step(last)          # where speculation left the chunk

    def visited(positions):  # meaningful for positions inside their chunk
        return np.take(flat, np.searchsorted(flat, positions), mode="clip") == positions

    # 2. Resync. sync[c]: chunk c's speculative codes from position sync[c] on are on
    # the true path; exit_[c]: where the true path leaves chunk c. A chunk whose entry
    # is no speculative position is walked from its entry until the walk meets one
    # (then it is in sync there) or leaves the chunk (then its exit moves, and so does
    # the next chunk's entry: rounds repeat while entries change).
    entry = np.empty(nchunks, dtype=dtype)
    entry[0] = begin
    entry[1:] = spec_exit[:-1]
    sync = np.empty(nchunks, dtype=dtype)
    exit_ = np.empty(nchunks, dtype=dtype)
    walk_round = np.full(nchunks, -1)          # the round whose walk holds chunk c's head
    walks = []                                 # (round, chunks, positions) per walk step
    todo = np.arange(nchunks)
    round_ = 0
    while todo.size and round_ < _MAX_ROUNDS:
        at, end_at = entry[todo], ends[todo]
        walk_round[todo] = -1
        left = at >= end_at                    # the previous code ran past the segment
        met = ~left & visited(at)
        sync[todo[met]] = at[met]
        exit_[todo[met]] = spec_exit[todo[met]]
        sync[todo[left]] = end_at[left]
        exit_[todo[left]] = at[left]
        walking = ~(met | left)
        chunks, at, end_at = todo[walking], at[walking], end_at[walking]
        walk_round[chunks] = round_
        finished = []                          # (chunks, positions, left) of ended walks
        while chunks.size:
            walks.append((round_, chunks, at))
            at = at + tables.step(at)
            left = at >= end_at
            done = left | visited(at)
            if done.any():
                finished.append((chunks[done], at[done], left[done]))
                walking = ~done
                chunks, at, end_at = chunks[walking], at[walking], end_at[walking]
        if finished:
            chunks, at, left = (np.concatenate(parts) for parts in zip(*finished))
            met = ~left
            sync[chunks[met]] = at[met]
            exit_[chunks[met]] = spec_exit[chunks[met]]
            sync[chunks[left]] = ends[chunks[left]]
            exit_[chunks[left]] = at[left]
        following = todo[todo + 1 < nchunks]
        changed = exit_[following] != entry[following + 1]
        todo = following[changed] + 1
        entry[todo] = exit_[following[changed]]
        round_ += 1
        if 4 * todo.size > nchunks:  # most chunks miss the true path: give up at once
            break

    # 3. The true path: each chunk's speculative codes from its sync point, after the
    # codes of the chunk's last walk (all before it). Chunks from todo[0] on are not
    # settled (their entries may still change): they are left to the caller.
    settled = nchunks if todo.size == 0 else int(todo[0])
    if walks:
        rounds = np.repeat([r for r, _, _ in walks], [chunks.size for _, chunks, _ in walks])
        walk_chunks = np.concatenate([chunks for _, chunks, _ in walks])
        walk_positions = np.concatenate([at for _, _, at in walks])
        current = (rounds == walk_round[walk_chunks]) & (walk_chunks < settled)
        walk_positions = np.sort(walk_positions[current])
    else:
        walk_positions = np.empty(0, dtype=dtype)
    yield from _emit(spec[:settled], sync[:settled], ends[:settled], starts[:settled],
                     walk_positions)
    if settled == nchunks:
        return int(exit_[-1]), True
    return int(entry[settled]), False


def _exact_segment(tables, begin, end, chunk):
    """Decode ``begin .. end`` (``begin`` on the true path) without speculation.

    A chunk's true entry lies within the longest code length of its start, so every
    chunk is decoded (without recording) from each of those entries; chaining the
    exits from ``begin`` gives the true entries, and the chunks are then decoded from
    those. Yields position blocks; returns the true position after the segment.
    """
    dtype = tables.dtype
    nchunks = -(-(end - begin) // chunk)
    starts = dtype(begin) + np.arange(nchunks, dtype=dtype) * dtype(chunk)
    ends = np.minimum(starts + dtype(chunk), dtype(end))
    span = tables.longest
    position = (starts[:, None] + np.arange(span, dtype=dtype)).reshape(-1)
    limit = np.repeat(ends, span)
    step = 0
    while True:
        moving = position < limit
        if step % _CHECK_EVERY == 0 and not moving.any():
            break
        position += tables.step(position) * moving  # a walk stops at its first exit
        step += 1
    exits = position.reshape(nchunks, span).tolist()
    entries = []
    at = begin
    for row, start in zip(exits, starts.tolist()):  # one step per chunk, not per code
        entries.append(at)
        at = row[at - start]
    entries = np.array(entries, dtype=dtype)
    table = tables.walk(entries, ends)
    yield from _emit(table, entries, ends, starts, np.empty(0, dtype=dtype))
    return at
