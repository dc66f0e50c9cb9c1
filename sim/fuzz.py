"""Differential fuzzing of a decoder block against the golden word-level model.

Any block of :data:`~linkcodec.rtl.blocks.BLOCKS` that says it is ``fuzzable``: a
decoder of words whose tables are a golden decoder (``encode`` and ``decode``), today
``qlc-decoder`` (a :class:`~linkcodec.golden.qlc.QlcCode`, the default everywhere),
``huffman-decoder`` and ``huffman-decoder-bf16`` (a
:class:`~linkcodec.golden.huffman.HuffmanCodebook` of e4m3 symbols, or of bf16 values
with its split and escape). The functions take ``block=``, its name, and ``code``, its
tables.

The golden model's word front end (:mod:`linkcodec.golden.words`) states what a decoder
emits for *any* word sequence (``docs/bitstream.md``, "Faults in words"); this module
makes word sequences that a decoder must survive, runs them through the block under
the harness with random idle cycles and backpressure, and counts the frames where the
block and the golden model disagree.

Frames (:class:`FuzzFrame`), one *kind* each (:data:`KINDS`):

- ``good``: symbols coded with the code, untouched;
- ``random``: random words, well-formed (``bits = W`` on every word but the last);
- ``flip``: a coded frame with 1 to 3 flipped data bits (pad bits included);
- ``cut``: a coded frame cut short at a random bit, sent as a well-formed shorter frame;
- ``bits``: a coded frame with a bad ``bits`` count: a non-final word with ``bits < W``
  or ``bits > W``, or a final word with ``bits > W`` (a *word fault*).

Symbols come from a pool (the symbols of real tensors, mutated: a run of them at a random
place, a few replaced by random symbols) or, without a pool, are random (uniform or
skewed towards small values so that short codes show up; for 16-bit values, uniform
(mostly escaped) or parts that have codes with random tails).

:func:`fuzz_frames` makes frames (:func:`code_space_frames`: one per pattern as wide as
the longest code, 11 bits for QLC);
:func:`check_frames` runs frames through the decoder (one build, thousands of frames a
simulation) and :func:`run_fuzz` does both; the report says ``frames``, ``faults_injected``,
``mismatches`` and ``hangs``. A run that hangs (the testbench's cycle limit: the block
stopped taking words or never ended a frame) is counted, and the frames after the one
it hung on run again in a fresh simulation. Every seed is in the report, so a failure
replays.
"""

import operator
from collections import Counter
from typing import NamedTuple

import numpy as np

from ..golden.qlc import QlcCode
from ..golden.words import check_word_width, decode_words
from ..rtl.blocks.beats import decoder_beats, frame_words, split_frames
from ..rtl.blocks import BLOCKS, get_block
from .harness import run_beats, shared_build

__all__ = [
    "DEFAULT_MIX",
    "KINDS",
    "WORD_FAULT_KINDS",
    "FuzzFrame",
    "bad_bits",
    "check_frames",
    "code_space_frames",
    "cut_short",
    "expected_beats",
    "flip_bits",
    "fuzz_frames",
    "pool_symbols",
    "random_symbols",
    "random_words",
    "run_fuzz",
]

#: The kinds of fuzzed frame, in the order :data:`DEFAULT_MIX` weighs them.
KINDS = ("good", "random", "flip", "cut", "bits")
#: The kinds whose frames carry word faults (bad ``bits`` counts).
WORD_FAULT_KINDS = ("bits",)
#: How often each kind comes up unless told otherwise (relative weights).
DEFAULT_MIX = {"good": 2, "random": 2, "flip": 3, "cut": 2, "bits": 2}


class FuzzFrame(NamedTuple):
    """One fuzzed frame: its ``words`` (dicts of ``data``, ``bits``, ``last``), its
    ``kind`` (:data:`KINDS`) and the ``symbols`` it was coded from (empty for
    ``random``)."""

    words: list
    kind: str
    symbols: np.ndarray


def _frame_length(rng, longest):
    """A frame length: a few empty or tiny frames, mostly short ones, some long ones."""
    draw = rng.random()
    if draw < 0.08:
        return int(rng.integers(0, 3))
    if draw < 0.9:
        return int(rng.integers(1, min(40, longest) + 1))
    return int(rng.integers(1, longest + 1))


def _value_bits(code):
    """The width of the values ``code`` codes: 16 for a codebook of bf16 values, else 8."""
    return getattr(code, "value_bits", 8)


def _dtype(code):
    return np.uint8 if _value_bits(code) == 8 else np.uint16


def random_symbols(rng, count, code=None):
    """``count`` random symbols: uniform, or skewed towards small values (short codes of
    the base code) half of the time. For ``code`` of 16-bit values: uniform (most of them
    escaped), or half of the time parts that have codes, with random tails."""
    if _value_bits(code) == 16:
        if rng.random() < 0.5:
            return rng.integers(0, 1 << 16, count, dtype=np.uint16)
        coded = np.flatnonzero(code.lengths)
        parts = coded[rng.integers(0, coded.size, count)]
        tails = rng.integers(0, 1 << code.tail_bits, count)
        return ((parts << code.tail_bits) | tails).astype(np.uint16)
    if rng.random() < 0.5:
        return rng.integers(0, 256, count, dtype=np.uint8)
    return np.minimum(rng.geometric(rng.uniform(0.03, 0.3), count) - 1, 255).astype(np.uint8)


def pool_symbols(rng, pool, count):
    """``count`` symbols from ``pool`` (real symbols, uint8 or uint16): a run of them at
    a random place, a few (0 to 3) replaced by random symbols."""
    count = min(count, pool.size)
    start = int(rng.integers(0, pool.size - count + 1))
    symbols = pool[start:start + count].copy()
    if count:
        where = rng.integers(0, count, int(rng.integers(0, 4)))
        symbols[where] = rng.integers(0, np.iinfo(pool.dtype).max + 1, where.size,
                                      dtype=pool.dtype)
    return symbols


def random_words(rng, word_width, *, max_words=8):
    """A well-formed frame of 1..``max_words`` random words: ``bits = W`` on every word
    but the last, ``0..W`` on the last."""
    word_width = check_word_width(word_width)
    count = int(rng.integers(1, max_words + 1))
    words = []
    for index in range(count):
        final = index == count - 1
        words.append({"data": int.from_bytes(rng.bytes(word_width // 8), "big"),
                      "bits": int(rng.integers(0, word_width + 1)) if final else word_width,
                      "last": int(final)})
    return words


def flip_bits(rng, words, word_width, *, flips=None):
    """``words`` with ``flips`` (default 1..3) random data bits flipped, pad bits after a
    final word's ``bits`` included. Returns new word dicts."""
    word_width = check_word_width(word_width)
    words = [dict(word) for word in words]
    if flips is None:
        flips = int(rng.integers(1, 4))
    for position in rng.integers(0, len(words) * word_width, flips).tolist():
        index, bit = divmod(position, word_width)
        words[index]["data"] ^= 1 << (word_width - 1 - bit)
    return words


def cut_short(rng, data, nbits, word_width):
    """The frame ``(data, nbits)`` cut at a random bit ``0 .. nbits - 1`` and sent as a
    well-formed frame of that many bits (the rest of its last word, as pad, still holds
    the frame's later bits)."""
    word_width = check_word_width(word_width)
    if nbits < 1:
        raise ValueError("cut_short needs a frame of at least one bit to cut")
    cut = int(rng.integers(0, nbits))
    # The words that hold the cut frame; what follows the cut in the last one is pad.
    keep = max(1, -(-cut // word_width)) * (word_width // 8)
    return frame_words(bytes(data)[:keep], cut, word_width)


def bad_bits(rng, words, word_width, *, faults=None):
    """``words`` with ``faults`` (default 1, sometimes 2) bad ``bits`` counts: a non-final
    word gets ``0 .. W - 1`` or more than ``W``, the final word more than ``W`` (up to
    what the ``bits`` field holds). Returns new word dicts."""
    word_width = check_word_width(word_width)
    words = [dict(word) for word in words]
    most = (1 << word_width.bit_length()) - 1
    if faults is None:
        faults = 1 + int(rng.random() < 0.2)
    for index in rng.integers(0, len(words), faults).tolist():
        if words[index]["last"] or rng.random() < 0.3:
            words[index]["bits"] = int(rng.integers(word_width + 1, most + 1))
        else:
            words[index]["bits"] = int(rng.integers(0, word_width))
    return words


def _decoder_block(block):
    """The description of decoder ``block`` (a name, or a description: a variant the
    registry does not hold, such as another split), whose tables fuzzing can use."""
    description = get_block(block) if isinstance(block, str) else block
    if not description.fuzzable:
        fuzzable = ", ".join(name for name, other in BLOCKS.items() if other.fuzzable)
        raise ValueError(f"{description.name} is not a decoder block that can be fuzzed; "
                         f"these are: {fuzzable}")
    return description


def _check_code(code, block):
    """``code`` (None: the block's default tables) if it is the kind of tables the block
    holds."""
    default = block.default_tables()
    if code is None:
        return default
    if not isinstance(code, type(default)):
        raise TypeError(f"code must be a {type(default).__name__}, not {type(code).__name__}")
    return code


def fuzz_frames(code, count, *, word_width, rng, pool=None, mix=None, longest=160,
                block="qlc-decoder"):
    """``count`` fuzzed frames (:class:`FuzzFrame`) for decoder ``block`` holding ``code``.

    ``rng`` is a :class:`numpy.random.Generator`; ``pool`` (a uint8 array, uint16 for a
    code of 16-bit values; optional) the
    real symbols that frames are mutated from (random symbols without it); ``mix`` the
    weight of each kind (:data:`DEFAULT_MIX` if None; a kind left out never comes up);
    ``longest`` the most symbols a frame is coded from.
    """
    code = _check_code(code, _decoder_block(block))
    word_width = check_word_width(word_width)
    mix = dict(DEFAULT_MIX if mix is None else mix)
    unknown = sorted(set(mix) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown frame kind {unknown[0]!r}; the kinds are "
                         f"{', '.join(KINDS)}")
    if any(weight < 0 for weight in mix.values()) or sum(mix.values()) <= 0:
        raise ValueError(f"mix weights must be non-negative with a positive sum, not {mix}")
    if pool is not None:
        pool = np.asarray(pool).reshape(-1)
        if pool.dtype != _dtype(code) or pool.size == 0:
            raise ValueError(f"pool must be a non-empty {np.dtype(_dtype(code))} array of "
                             f"symbols")
    kinds = list(mix)
    weights = np.array([mix[kind] for kind in kinds], dtype=np.float64)
    frames = []
    for kind in rng.choice(kinds, size=count, p=weights / weights.sum()).tolist():
        if kind == "random":
            frames.append(FuzzFrame(random_words(rng, word_width), kind,
                                    np.zeros(0, _dtype(code))))
            continue
        length = _frame_length(rng, longest)
        if kind == "cut":
            length = max(length, 1)
        symbols = (random_symbols(rng, length, code) if pool is None
                   else pool_symbols(rng, pool, length))
        data, nbits = code.encode(symbols)
        if kind == "cut":
            words = cut_short(rng, data, nbits, word_width)
        else:
            words = frame_words(data, nbits, word_width)
            if kind == "flip":
                words = flip_bits(rng, words, word_width)
            elif kind == "bits":
                words = bad_bits(rng, words, word_width)
        frames.append(FuzzFrame(words, kind, symbols))
    return frames


def expected_beats(code, frames, *, lanes, word_width):
    """Per frame, the beats the golden model says a decoder with ``lanes`` lanes emits,
    and whether the frame ends with the error beat: ``(beats, error)`` lists."""
    words = [word for frame in frames for word in frame.words]
    beats, errors = [], []
    for symbols, error in decode_words(code, words, word_width):
        beats.append(decoder_beats([symbols], lanes,
                                   error_after=symbols.size if error else None))
        errors.append(error)
    return beats, errors


def _code_space(code):
    """``(width, head, raw, follow, codes, lengths)`` of a code for
    :func:`code_space_frames`: the window width (the longest code), the length of the
    code each pattern starts (``width`` if none), the raw bits that code takes after it
    (16-bit values: a part's tail, or the escaped value; else 0), the symbol that follows
    each pattern, and every symbol's code and length (16-bit values: its whole
    encoding)."""
    if isinstance(code, QlcCode):
        width = 11
        patterns = np.arange(1 << width)
        head = np.asarray(code.layout.code_lengths)[patterns >> 8]
        follow = code.rank_to_symbol[patterns & 0xFF]
        return width, head, np.zeros_like(head), follow, code.code_of, code.length_of
    lengths, codes = code.lengths.tolist(), code.codes.tolist()
    if code.escape_length:
        lengths.append(code.escape_length)
        codes.append(code.escape_code)
    width = max(lengths)
    patterns = np.arange(1 << width)
    head = np.full(1 << width, width, dtype=np.int64)   # a pattern that starts no code
    raw = np.zeros(1 << width, dtype=np.int64)
    for symbol, (length, value) in enumerate(zip(lengths, codes)):
        if length:
            span = 1 << (width - length)
            head[value * span:(value + 1) * span] = length
            if _value_bits(code) == 16:
                raw[value * span:(value + 1) * span] = (
                    16 if symbol == code.lengths.size else code.tail_bits)
    if _value_bits(code) == 8:
        return width, head, raw, patterns & 0xFF, code.codes, code.lengths
    # 16-bit values: the value that follows is the pattern's low bits as a part (coded
    # or escaped) with the pattern's lowest bits as its tail; its codes and lengths are
    # its whole encoding (code and tail, or escape and value).
    parts = (1 << code.coded_bits) - 1
    tail = (1 << code.tail_bits) - 1
    follow = ((patterns & parts) << code.tail_bits) | (patterns & tail)
    values = np.arange(1 << 16, dtype=np.int64)
    part = values >> code.tail_bits
    own = code.lengths[part].astype(np.int64)
    value_lengths = np.where(own > 0, own + code.tail_bits, code.escape_length + 16)
    value_codes = np.where(own > 0, (code.codes[part].astype(np.int64) << code.tail_bits)
                           | (values & tail), (code.escape_code << 16) | values)
    return width, head, raw, follow, value_codes, value_lengths


def code_space_frames(code, *, word_width, block="qlc-decoder", kinds=("pattern",
                                                                         "pattern-code")):
    """Frames that start with every pattern as wide as the longest code (2,048 11-bit
    patterns for QLC; ``2**15`` for a Huffman codebook with 15-bit codes), each followed
    by a valid code, as well-formed words.

    QLC: the code of the symbol whose rank is the pattern's low byte; Huffman: the code
    of the symbol that is the pattern's low byte (for 16-bit values, the pattern's low
    bits as a part, and as its tail; the escape's code is a pattern too). Two kinds of
    frame (``kinds``): kind
    ``pattern`` starts with all the bits of the pattern; kind ``pattern-code`` with only
    as many of them as the code it starts is long (all of them if it starts none), and
    for 16-bit values that code's raw bits (the following value's lowest ones), so
    that a valid first code is followed at once by the valid one. Every window a decoder
    can see first, valid or not, starts a frame; golden says what comes out (the
    pattern's symbol and the next ones, or the error beat).
    """
    code = _check_code(code, _decoder_block(block))
    word_width = check_word_width(word_width)
    unknown = sorted(set(kinds) - {"pattern", "pattern-code"})
    if unknown:
        raise ValueError(f"unknown code-space kind {unknown[0]!r}; the kinds are "
                         f"'pattern' and 'pattern-code'")
    width, heads, raws, follow, codes, lengths = _code_space(code)
    frames = []
    for kind in kinds:
        for pattern in range(1 << width):
            head = width if kind == "pattern" else int(heads[pattern])
            raw = 0 if kind == "pattern" else int(raws[pattern])
            symbol = int(follow[pattern])
            length = int(lengths[symbol])
            nbits = head + raw + length
            value = (((((pattern >> (width - head)) << raw) | (symbol & ((1 << raw) - 1)))
                      << length) | int(codes[symbol]))
            nbytes = -(-nbits // 8)
            data = (value << (8 * nbytes - nbits)).to_bytes(nbytes, "big")
            frames.append(FuzzFrame(frame_words(data, nbits, word_width), kind,
                                    np.array([symbol], dtype=_dtype(code))))
    return frames


def _run(component, block, code, frames, wanted, *, idle, stall, seed, build_root, name):
    """One simulation of ``frames``: ``(ended, rest, hung_on, result)``, the beats of each
    frame that came out (cut after each ``last``), the beats after the last ``last``,
    the index of the frame the run hung on (None if it did not) and the run's result."""
    words = [word for frame in frames for word in frame.words]
    expected = [beat for beats in wanted for beat in beats]
    result = run_beats(component, inputs={"i": words}, expected={"o": expected},
                       config=block.config_writes(code), idle=idle, stall=stall, seed=seed,
                       build_root=build_root, name=name)
    got = result["output"]["o"]
    # The testbench stops at its cycle limit unless every word was taken and as many
    # beats came out as expected (run_beats does not pass on ``timed_out``; this is it).
    taken = len(result["input_cycles"].get("i", []))
    timed_out = taken < len(words) or len(got) < len(expected)
    ended, rest = split_frames(got)
    # Timed out with frames not ended: the block stopped on the first of them. (Timed
    # out with every frame ended means too few beats: mismatches, not a hang.)
    hung_on = len(ended) if timed_out and len(ended) < len(frames) else None
    return ended, rest, hung_on, result


def check_frames(frames, *, lanes, word_width=None, code=None, seed=None, idle=0.3,
                 stall=0.3, frames_per_run=2500, build_root=None, max_hangs=10, examples=3,
                 block="qlc-decoder"):
    """Run ``frames`` (:class:`FuzzFrame`) through decoder ``block``, compare with golden.

    The decoder (``lanes``, ``word_width``: the block's default if None) is built once
    with its default tables, and ``code`` (default: the block's default tables, the base
    code for QLC) is loaded through
    ``i_config``. The frames go through simulations of ``frames_per_run`` frames each,
    with ``idle`` and ``stall`` probabilities; simulation ``n`` gets the idle/stall seed
    ``seed + n`` (``seed`` random if None). After a hang the frames that follow the one
    it hung on run in a new simulation, until ``max_hangs`` hangs, when the rest are left
    unchecked. The testbench stops once as many beats came out as golden expects, so a
    block that gives extra beats in one frame may be stopped before the last frames
    ended: those run again in a new simulation, so that each frame is judged on its own.

    Returns a ``dict``: ``block``, ``lanes``, ``word_width``, ``seed``, ``idle``,
    ``stall``, ``frames`` (checked), ``faults_injected`` (frames of a kind other than
    ``good``), ``word_faults`` (frames of :data:`WORD_FAULT_KINDS`), ``golden_errors``
    (frames golden ends with the error beat), ``mismatches`` (frames whose beats differ
    from golden's), ``hangs`` and ``hung_frames``, ``unchecked``, ``kinds`` and
    ``mismatches_by_kind``, ``mismatched_frames``, ``symbols`` (golden's), ``cycles``
    (over all runs), ``runs`` (each simulation's ``seed``, ``frames``, ``cycles``,
    ``hung_on`` and ``resumed_at``, the frame the next one starts from if not the next
    batch) and up to ``examples`` ``examples`` of mismatching frames (index, kind,
    words, expected and received beats).
    """
    block = _decoder_block(block)
    block.check_lanes(lanes)
    if word_width is None:
        word_width = block.default_word_width(lanes)
    word_width = check_word_width(word_width)
    code = _check_code(code, block)
    if not isinstance(frames_per_run, int) or frames_per_run < 1:
        raise ValueError(f"frames_per_run must be a positive integer, not {frames_per_run!r}")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (1 << 31))
    frames = list(frames)
    count = len(frames)
    wanted, errors = expected_beats(code, frames, lanes=lanes, word_width=word_width)
    component = shared_build(block, lanes=lanes, word_width=word_width, tables=None)
    name = block.module_name(lanes=lanes, word_width=word_width)

    mismatched, hung, runs, shown = [], [], [], []
    start = 0
    while start < count and len(hung) < max_hangs:
        stop = min(count, start + frames_per_run)
        run_seed = (seed + len(runs)) % (1 << 31)
        ended, rest, hung_on, result = _run(
            component, block, code, frames[start:stop], wanted[start:stop], idle=idle,
            stall=stall, seed=run_seed, build_root=build_root, name=name)
        ran = stop - start
        if hung_on is not None:
            checked, resume = hung_on, start + hung_on + 1
        elif len(ended) < ran:
            # The testbench stops once as many beats came out as golden expects; extra
            # beats in earlier frames (mismatches) stop it before the last frames ended.
            # Those frames are not judged here: they run again from the first of them.
            checked = max(1, len(ended))
            resume = start + checked
        else:
            checked, resume = ran, stop
        for offset in range(checked):
            index = start + offset
            got = ended[offset] if offset < len(ended) else rest
            if got != wanted[index]:
                mismatched.append(index)
                if len(shown) < examples:
                    shown.append({"frame": index, "kind": frames[index].kind,
                                  "words": frames[index].words, "expected": wanted[index],
                                  "got": got})
        if checked == ran and hung_on is None and (len(ended) > ran or rest) and (
                not mismatched or mismatched[-1] != stop - 1):
            mismatched.append(stop - 1)   # beats beyond the last frame's end
        runs.append({"seed": run_seed, "frames": ran, "cycles": result["cycles"],
                     "hung_on": None if hung_on is None else start + hung_on,
                     "resumed_at": resume if resume < stop else None})
        if hung_on is not None:
            hung.append(start + hung_on)
        start = resume
    checked_frames = min(count, start)
    kinds = Counter(frame.kind for frame in frames[:checked_frames])
    return {
        "block": block.name,
        "lanes": lanes,
        "word_width": word_width,
        "seed": seed,
        "idle": idle,
        "stall": stall,
        "frames": checked_frames,
        "faults_injected": sum(n for kind, n in kinds.items() if kind != "good"),
        "word_faults": sum(kinds[kind] for kind in WORD_FAULT_KINDS),
        "golden_errors": int(sum(errors[:checked_frames])),
        "mismatches": len(mismatched),
        "hangs": len(hung),
        "hung_frames": hung,
        "unchecked": count - checked_frames,
        "kinds": dict(sorted(kinds.items())),
        "mismatches_by_kind": dict(Counter(frames[index].kind for index in mismatched)),
        "mismatched_frames": mismatched,
        "symbols": sum(beat["count"] for beats in wanted[:checked_frames] for beat in beats),
        "cycles": sum(run["cycles"] for run in runs),
        "runs": runs,
        "examples": shown,
    }


def run_fuzz(count, *, lanes, word_width=None, code=None, pool=None, mix=None, seed=None,
             longest=160, block="qlc-decoder", **options):
    """Fuzz decoder ``block`` (default the QLC decoder) with ``count`` frames of
    :func:`fuzz_frames` and compare with golden: :func:`check_frames`, whose report it
    returns (``options`` are its ``idle``, ``stall``, ``frames_per_run``, ``build_root``,
    ``max_hangs``, ``examples``).

    ``code`` (default: the block's default tables, the base code for QLC) codes the
    frames and is loaded into the decoder;
    ``pool``, ``mix`` and ``longest`` are as for :func:`fuzz_frames`. ``seed`` (random
    if None, always in the report) seeds the frames and the idle/stall patterns, so a
    run replays from it.
    """
    count = operator.index(count)
    if count < 0:
        raise ValueError(f"count is {count}; a fuzz run has 0 frames or more")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (1 << 31))
    description = _decoder_block(block)
    description.check_lanes(lanes)
    if word_width is None:
        word_width = description.default_word_width(lanes)
    code = _check_code(code, description)
    frames = fuzz_frames(code, count, word_width=word_width, rng=np.random.default_rng(seed),
                         pool=pool, mix=mix, longest=longest, block=block)
    return check_frames(frames, lanes=lanes, word_width=word_width, code=code, seed=seed,
                        block=block, **options)
