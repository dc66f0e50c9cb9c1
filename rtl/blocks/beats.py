"""Frames as stream beats: what the golden model's frames look like on a block's ports.

Beats are ``dict`` values of the layouts in :mod:`linkcodec.rtl.payload`; the harness
packs them with the layout it reads from the component's signature.
"""

import numpy as np

__all__ = ["decoder_beats", "frame_words", "split_frames", "symbol_beats"]


def symbol_beats(frames, lanes):
    """Symbol beats that carry ``frames`` (arrays of symbols) through ``lanes`` lanes.

    Every frame ends with a beat whose ``last`` is set; an empty frame is one beat with
    ``count = 0, last = 1``; unused lanes of a frame's last beat hold 0.
    """
    beats = []
    for frame in frames:
        frame = np.asarray(frame).reshape(-1)
        if frame.size == 0:
            beats.append({"symbols": [0] * lanes, "count": 0, "last": 1})
            continue
        padded = np.zeros(-(-frame.size // lanes) * lanes, dtype=frame.dtype)
        padded[:frame.size] = frame
        rows = padded.reshape(-1, lanes).tolist()
        for index, row in enumerate(rows):
            final = index == len(rows) - 1
            count = frame.size - index * lanes if final else lanes
            beats.append({"symbols": row[:count] + [0] * (lanes - count), "count": count,
                          "last": int(final)})
    return beats


def decoder_beats(frames, lanes, *, error_after=None):
    """The beats a decoder emits for ``frames``: :func:`symbol_beats` with ``error = 0``.

    With ``error_after`` the last frame holds a fault after that many good symbols: the
    decoder emits those, then ends the frame with ``error = 1, last = 1`` in the beat
    that would have held the next symbol (see ``QlcDecoder``).
    """
    frames = list(frames)
    if error_after is None:
        return [dict(beat, error=0) for beat in symbol_beats(frames, lanes)]
    head = [dict(beat, error=0) for beat in symbol_beats(frames[:-1], lanes)]
    good = np.asarray(frames[-1])[:error_after]
    body = [dict(beat, error=0) for beat in symbol_beats([good], lanes)] if good.size else []
    if good.size % lanes:
        body[-1]["error"] = 1
    else:
        if body:
            body[-1]["last"] = 0
        body.append({"symbols": [0] * lanes, "count": 0, "last": 1, "error": 1})
    return head + body


def frame_words(data, nbits, word_width):
    """The words (dicts) that carry a coded frame, as ``docs/bitstream.md`` defines them."""
    width_bytes = word_width // 8
    count = max(1, -(-nbits // word_width))
    buffer = bytes(data) + bytes(count * width_bytes - len(data))
    words = []
    for index in range(count):
        chunk = buffer[index * width_bytes:(index + 1) * width_bytes]
        final = index == count - 1
        words.append({"data": int.from_bytes(chunk, "big"),
                      "bits": nbits - index * word_width if final else word_width,
                      "last": int(final)})
    return words


def split_frames(beats):
    """``(frames, rest)``: ``beats`` cut after every beat with ``last`` set, one list of
    beats a frame, and the beats after the last such beat (a frame not ended yet)."""
    frames, current = [], []
    for beat in beats:
        current.append(beat)
        if beat["last"]:
            frames.append(current)
            current = []
    return frames, current
