"""Encoding: code words into a frame (``docs/bitstream.md``, "Frame"), vectorised.

- :func:`pack_codes` -- any code words of 1..24 bits, one per entry;
- :class:`SymbolEncoder` -- byte symbols through a 256-entry code table (codes of at
  most 16 bits), two symbols per piece on long inputs.

Both make the same frame for the same code words, and neither runs a Python loop per
symbol: pieces are placed by a running sum (:class:`_BitWriter`).
"""

import numpy as np

from .bitstream import MAX_CODE_LENGTH, as_int_array

__all__ = ["pack_codes", "SymbolEncoder"]

# Codes packed per block (temporaries stay in cache rather than in fresh pages).
_BLOCK = 1 << 16


def pack_codes(codes, lengths):
    """Concatenate code words into a frame.

    ``codes[i]`` is a code word of ``lengths[i]`` bits (1 .. 24), its first bit in its
    most significant position; both are 1-D integer arrays of the same length. Returns
    ``(data, nbits)``: ``nbits = sum(lengths)`` and ``data`` the ``ceil(nbits / 8)``
    bytes of the frame, MSB first, zero-padded to a whole byte.

    Raises :class:`ValueError` if a length is out of range or a code does not fit its
    length, :class:`TypeError` for non-integer input.
    """
    codes = as_int_array(codes, "codes")
    lengths = as_int_array(lengths, "lengths")
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
        lengths = as_int_array(lengths, "lengths").astype(np.uint64)
        codes = as_int_array(codes, "codes").astype(np.uint64)
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
