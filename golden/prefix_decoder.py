"""Decoding: a frame of a prefix code back into symbols, vectorised and speculative.

:class:`PrefixDecoder` decodes frames of one prefix code given a look-up table indexed
by a fixed-width window of the frame (:func:`decode_prefix` for one frame); how it cuts
its work is a :class:`DecoderTuning`. No Python loop runs once per symbol.

How it avoids a per-symbol loop: the frame is cut into chunks, every chunk is decoded
*speculatively* from its first bit, all chunks at once (one NumPy step per symbol index
within a chunk; in long frames a step takes two codes, read from one window of up to 20
bits through a table of pair lengths, or one code where the pair does not fit, so a step
lands on every other code start or so). The decoding path of a prefix code is a function
of the start position only, so as soon as the true path reaches a position that the
speculation of its chunk also visited, the rest of that chunk is known. Chunks whose
true entry was not visited by their speculation are re-decoded from the true entry (all
of them at once) until they meet it or leave the chunk, and this repeats while chunk
entries change. The chunk length is a multiple of the code lengths (as far as that stays
small), so a frame of one repeated symbol is in step from the start. A periodic frame
whose period does not divide the chunk length defeats speculation; when resyncing does
not settle quickly, the rest of the segment is decoded from every possible entry of
every chunk instead (about ``longest code`` times the work, never a per-symbol loop).

Two codes per step keep resyncing exact: the positions a step lands on are a function
of where the walk started, so a resync walk goes one code at a time and is in sync once
it reaches a position the speculation landed on (at most one code after the paths meet).
The listed positions then skip at most one code between two of them, and the final pass
reads that code from the window of the position before it.

Errors are those of :mod:`~linkcodec.golden.bitstream`, naming the bit position.
"""

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .bitstream import (MAX_CODE_LENGTH, BitstreamError, InvalidCodeError,
                        TruncatedStreamError, as_frame_bytes, as_index)

__all__ = ["DecoderTuning", "WalkSteps", "PrefixDecoder", "decode_prefix"]


@dataclass(frozen=True, kw_only=True)
class DecoderTuning:
    """How a :class:`PrefixDecoder` cuts its work.

    Every tuning decodes the same symbols and raises the same errors: it only moves time
    and memory between NumPy steps, resyncs and tables. The defaults suit the frames of
    ``linkcodec bench --golden`` (a few Mbit); tests take tiny chunks and segments so
    that short frames go the ways of long ones. Checked on construction: integers, at
    least 1 (``max_rounds`` and ``pairs_from`` at least 0), ``pair_window_bits`` at most
    :data:`~linkcodec.golden.bitstream.MAX_CODE_LENGTH`.
    """

    #: Speculation walks about this many bits per chunk (rounded up to a multiple of the
    #: code lengths and to a whole window); more chunks mean fewer NumPy steps but more
    #: resyncs.
    target_chunk_bits: int = 2048
    #: The chunk length is a multiple of the lcm of the code lengths while that lcm stays
    #: at most this (longest lengths dropped first when it does not).
    max_length_lcm: int = 4096
    #: Chunks speculated at a time (a segment): bounds the walk tables.
    segment_chunks: int = 4096
    #: Resync rounds before the rest of a segment is decoded from every entry of every
    #: chunk: a round settles one more chunk of a run whose speculation misses the path.
    max_rounds: int = 2
    #: Walk steps between two checks of whether every chunk is done.
    check_every: int = 16
    #: Long frames are walked two codes per step through a table over windows this wide
    #: (2**20 entries by default), where the two codes fit; at most the code window
    #: itself means one code per step.
    pair_window_bits: int = 20
    #: Frames shorter than this many bits are walked one code per step: they do not repay
    #: building the pair table.
    pairs_from: int = 1 << 20
    #: About this many walk-table entries are turned into positions at a time (the
    #: temporaries stay in cache).
    emit_block: int = 1 << 16

    def __post_init__(self):
        lowest = {"max_rounds": 0, "pairs_from": 0}
        for name in self.__dataclass_fields__:
            value = as_index(getattr(self, name), name)
            if value < lowest.get(name, 1):
                raise ValueError(f"{name} is {value}; it must be at least "
                                 f"{lowest.get(name, 1)}")
            object.__setattr__(self, name, value)
        if self.pair_window_bits > MAX_CODE_LENGTH:
            raise ValueError(f"pair_window_bits is {self.pair_window_bits}; it must be "
                             f"1..{MAX_CODE_LENGTH}")


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


def _chunk_bits(lengths, window_bits, tuning):
    """Chunk length: about ``tuning.target_chunk_bits``, a multiple of the code lengths if
    cheap."""
    present = np.flatnonzero(np.bincount(lengths, minlength=window_bits + 1)[1:]) + 1
    step = 1
    for length in present:  # shortest first: those are the likeliest code words
        joined = math.lcm(step, int(length))
        if joined > tuning.max_length_lcm:
            break
        step = joined
    chunk = step * -(-tuning.target_chunk_bits // step)
    # A chunk must hold a whole window so that a chunk's entry lies inside it.
    return max(chunk, step * -(-MAX_CODE_LENGTH // step))


class WalkSteps(NamedTuple):
    """How a decoding walk steps (one code or two): ``advance[w]`` is how far a step goes
    from the ``bits``-wide window ``w`` (an invalid window advances one bit, so that every
    walk ends); ``shortest`` is the least advance from a window that starts a code word.
    """

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
    return WalkSteps(pair_bits, advance, int(advance[first > 0].min()))


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


def decode_prefix(data, nbits, window_bits, lut_length, lut_symbol, *, tuning=None):
    """Decode a frame of ``nbits`` bits of a prefix code; return its symbols.

    ``data`` is bytes-like or a ``uint8`` array holding at least ``nbits`` bits, MSB
    first; bits past ``nbits`` are ignored (read as zero). ``window_bits`` (1..24) is the
    longest code length. For every ``window_bits``-wide value ``w``, ``lut_length[w]`` is
    the length of the code word that ``w`` starts with (0: no code word starts so) and
    ``lut_symbol[w]`` its symbol; the result has ``lut_symbol``'s dtype.

    Raises :class:`InvalidCodeError` at the first window on the decoding path that is no
    code word, :class:`TruncatedStreamError` if the last code word runs past ``nbits``,
    :class:`BitstreamError` if ``nbits`` is negative or past the end of ``data``, and
    :class:`ValueError` / :class:`TypeError` for malformed tables. ``tuning`` (a
    :class:`DecoderTuning`, the defaults if None) changes how, never what, it decodes.

    This checks the tables on every call; a codec decoding many frames keeps a
    :class:`PrefixDecoder` instead.
    """
    frame_bytes = as_frame_bytes(data)
    nbits = as_index(nbits, "nbits")
    return PrefixDecoder(window_bits, lut_length, lut_symbol,
                         tuning=tuning).decode(frame_bytes, nbits)


class PrefixDecoder:
    """Decodes frames of one prefix code, its tables checked once.

    ``PrefixDecoder(window_bits, lut_length, lut_symbol).decode(data, nbits)`` is
    :func:`decode_prefix` (same arguments, result and exceptions); the constructor
    raises what :func:`decode_prefix` raises for malformed tables, and ``tuning`` (a
    :class:`DecoderTuning`, keyword-only, the defaults if None) says how to cut the work.
    The table of code pairs that long frames are walked with (:attr:`pair_steps`) is
    built on the first frame of at least ``tuning.pairs_from`` bits and kept.
    """

    def __init__(self, window_bits, lut_length, lut_symbol, *, tuning=None):
        window_bits = as_index(window_bits, "window_bits")
        if not 1 <= window_bits <= MAX_CODE_LENGTH:
            raise ValueError(f"window_bits is {window_bits}; it must be 1..{MAX_CODE_LENGTH}")
        if tuning is None:
            tuning = DecoderTuning()
        elif not isinstance(tuning, DecoderTuning):
            raise TypeError(f"tuning must be a DecoderTuning, not {type(tuning).__name__}")
        lengths, symbols = _check_tables(window_bits, lut_length, lut_symbol)
        self._window_bits = window_bits
        self._tuning = tuning
        self._longest = int(lengths.max())
        self._symbols = symbols.copy()
        self._code_length = lengths.astype(np.uint8)
        self._chunk = _chunk_bits(lengths, window_bits, tuning)
        # An invalid window advances one bit, so that every walk ends.
        self._single_steps = WalkSteps(window_bits,
                                       np.where(lengths > 0, lengths, 1).astype(np.uint8),
                                       int(lengths[lengths > 0].min()))
        self._pair_bits = min(2 * window_bits, tuning.pair_window_bits)
        self._pair_steps = None
        self._exact_segments = 0

    @property
    def window_bits(self):
        """Width of the decode window: the longest code length the tables allow."""
        return self._window_bits

    @property
    def tuning(self):
        """The :class:`DecoderTuning`."""
        return self._tuning

    @property
    def chunk_bits(self):
        """Length of the chunks that speculation decodes from their first bit."""
        return self._chunk

    @property
    def pair_steps(self):
        """The :class:`WalkSteps` of two codes per step, once a frame of at least
        ``tuning.pairs_from`` bits needed them (None before, and always None when the
        pair window is no wider than the code window)."""
        return self._pair_steps

    @property
    def exact_segments(self):
        """How many segments were decoded from every entry of every chunk because
        resyncing did not settle (periodic frames), over all frames so far."""
        return self._exact_segments

    def _steps(self, nbits):
        """How the walk over a frame of ``nbits`` bits steps: :class:`WalkSteps`."""
        if self._pair_bits <= self._window_bits or nbits < self._tuning.pairs_from:
            return self._single_steps
        if self._pair_steps is None:
            self._pair_steps = _pair_steps(self._code_length, self._window_bits,
                                           self._pair_bits)
        return self._pair_steps

    def decode(self, data, nbits):
        """The symbols of the frame of ``nbits`` bits held in ``data``; see
        :func:`decode_prefix`."""
        frame_bytes = as_frame_bytes(data)
        nbits = as_index(nbits, "nbits")
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
        tables = _DecodeTables(frame, self._single_steps, steps, self._longest, self._tuning)
        decoded = []
        listed = None  # the previous block of listed positions, decoded once the next is known
        for block in self._decoding_path(tables, nbits):
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

    def _decoding_path(self, tables, nbits):
        """Positions on the decoding path from bit 0, in blocks: at least every other code.

        A generator of sorted arrays which, concatenated, list the path: every code start,
        except that a code may be left out where a walk step took it together with the
        code before (``_DecodeTables.walk``); :meth:`_decode_listed` puts those back. On
        this path an invalid window advances one bit; up to the first invalid window it
        is the true decoding, and the caller reports that window.

        The frame is decoded a segment of chunks at a time, each segment from a true
        position: speculatively (:func:`_speculative_segment`), and where that fails to
        settle (a periodic stream whose period does not divide the chunk length makes
        every chunk miss the true path), exactly from every possible entry of every chunk
        (:func:`_exact_segment`, about ``max code length`` times the work, but bounded).
        """
        chunk, tuning = self._chunk, self._tuning
        begin = 0
        while begin < nbits:
            end = min(nbits, begin + tuning.segment_chunks * chunk)
            begin, settled = yield from _speculative_segment(tables, begin, end, chunk)
            if not settled:
                self._exact_segments += 1
                begin = yield from _exact_segment(tables, begin, end, chunk)


class _DecodeTables:
    """What the decoding loops share: the frame, how far a code or a walk step advances
    from each window, and the tuning."""

    def __init__(self, frame, single, steps, longest, tuning):
        self.frame = frame
        self.words, self.dtype = frame.words, frame.dtype
        self.single = single      # :class:`WalkSteps` of one code
        self.steps = steps        # :class:`WalkSteps` of a walk step: ``single`` or pairs
        self.longest = longest    # the longest code length
        self.tuning = tuning      # :class:`DecoderTuning`

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

        The walk keeps its last ``tuning.check_every`` steps in a step-major buffer (each step
        writes one contiguous row, with no fresh temporaries) and copies them into the
        start-major table a block at a time: writing the table one column per step
        touches a cache line per start at every step, which cost a third of the walk.
        """
        dtype = self.dtype
        check_every = self.tuning.check_every
        count = starts.size
        table = np.empty((count, int(np.max(ends - starts, initial=0)) // self.steps.shortest
                          + 2 * check_every + 1), dtype=dtype)
        recent = np.empty((check_every + 1, count), dtype=dtype)
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
            for row in range(check_every):
                position = recent[row]
                np.right_shift(position, dtype(3), out=byte)
                np.take(words, byte, out=window, mode="clip")
                np.bitwise_and(position, dtype(7), out=bit)
                window <<= bit
                window >>= shift
                np.take(advance_of, window, out=advance, mode="clip")
                np.add(position, advance, out=recent[row + 1])
            if step + 2 * check_every >= table.shape[1]:  # only invalid windows get here
                table = np.concatenate([table, np.empty_like(table)], axis=1)
            table[:, step:step + check_every] = recent[:check_every].T
            recent[0] = recent[check_every]
            past = recent[0] >= ends
            if clip_from is None and past.any():
                clip_from = step
            step += check_every
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


def _emit(table, first_kept, ends, starts, extra, block):
    """Yield, a block of rows (about ``block`` entries) at a time, each row's positions
    from ``first_kept[row]`` to ``ends[row]``, merged with the sorted ``extra`` positions
    of those rows."""
    rows = max(1, block // table.shape[1])
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
    ``tuning.max_rounds`` rounds: then the blocks cover the path up to ``position``, a true
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
    while todo.size and round_ < tables.tuning.max_rounds:
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
                     walk_positions, tables.tuning.emit_block)
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
    check_every = tables.tuning.check_every
    step = 0
    while True:
        moving = position < limit
        if step % check_every == 0 and not moving.any():
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
    yield from _emit(table, entries, ends, starts, np.empty(0, dtype=dtype),
                     tables.tuning.emit_block)
    return at
