"""Descriptions of the exponent-remap encoder and decoder for the harness.

The tables are an :class:`~linkcodec.golden.exponent.ExponentTable`; the default is
:data:`~linkcodec.rtl.exponent.DEFAULT_TABLE`. Fitted tables come from the exponent
histogram of all the frames together; :meth:`~linkcodec.rtl.blocks.description.BlockDescription.config_writes`
loads a table into the idle bank and switches to it. A frame is a ``uint16`` array of bf16
bit patterns; its coded form is the golden :func:`~linkcodec.golden.exponent.wire_encode`:
the values stream on ``o`` / ``i`` in full words, the escapes stream on ``o_escapes`` /
``i_escapes`` as the encoder sends it, a word of escape bytes a beat
(:func:`~linkcodec.golden.exponent.escape_words`).
"""

import numpy as np

from ...golden.exponent import (ExponentTable, escape_words, table_from_histogram,
                               table_from_tensor_sigma, wire_encode)
from ..exponent import (DEFAULT_TABLE, LANES, VALUE_BITS, ExponentRemapDecoder, ExponentRemapEncoder,
                            config_writes, default_word_width)
from .beats import decoder_beats, frame_words, symbol_beats
from .description import BlockDescription

__all__ = ["ExponentRemapEncoderBlock", "ExponentRemapDecoderBlock", "wire_words"]


def wire_words(frame, table, word_width, lanes=None):
    """``(values_words, escapes_words)``: the words of both streams of ``frame``'s wire
    frame under ``table``: the escapes as an encoder of ``lanes`` lanes sends them, a
    word a beat (:func:`~linkcodec.golden.exponent.escape_words`), or without ``lanes``
    in full words, which a decoder takes as well (any whole bytes a word)."""
    wire = wire_encode(frame, table)
    if lanes is None:
        escapes = frame_words(wire.escapes, wire.escapes_bits, word_width)
    else:
        escapes = escape_words(frame, table, lanes=lanes, word_width=word_width)
    return frame_words(wire.values, wire.values_bits, word_width), escapes


class _ExponentBlock(BlockDescription):
    ready_independent = True
    lanes = LANES
    symbol_dtype = np.uint16
    config_ports = ("i_config",)
    component = None          # ExponentRemapEncoder or ExponentRemapDecoder

    def default_word_width(self, lanes):
        return default_word_width(lanes)

    def min_word_width(self, lanes):
        """A beat's values, ``11 x lanes`` bits, in one word (rounded up to bytes)."""
        return -(-VALUE_BITS * lanes // 8) * 8

    def default_tables(self):
        return DEFAULT_TABLE

    sim_options = {
        "table": {"choices": ["sigma", "histogram"],
                  "help": "the 7 exponents from the sigma of all the FILEs' values "
                          "(default) or from their exponent histogram"},
    }

    def example_tables(self):
        """A table other than the reset-time one: exponents 0 and 1 (those of small bit
        patterns) and the five around 127, so that some values escape."""
        return ExponentTable((1, 0, 127, 126, 128, 125, 129))

    def fitted_tables(self, frames):
        """The table of the 7 most frequent exponents of all ``frames`` pooled."""
        return table_from_histogram(np.concatenate([self.prepare(frame) for frame in frames]))

    def sim_tables(self, frames, options):
        """The table from all the frames' values together, by their sigma
        (``table_from_tensor_sigma``, the default) or their exponent histogram; without
        frames, the reset table."""
        kind = options.get("table") or "sigma"
        if not frames:
            return self.default_tables(), {"table": "default"}
        table = (table_from_tensor_sigma(np.concatenate([self.prepare(f) for f in frames]))
                 if kind == "sigma" else self.fitted_tables(frames))
        return table, {"table": kind, "exponents": [int(e) for e in table.exponents]}

    def build(self, *, lanes, word_width=None, tables=None):
        return self.component(lanes=lanes, word_width=word_width, tables=tables)

    def config_writes(self, tables):
        return {"i_config": config_writes(tables)}


class ExponentRemapEncoderBlock(_ExponentBlock):
    name = "exponent-encoder"
    module = "linkcodec_exponent_encoder"
    component = ExponentRemapEncoder

    def frame_io(self, frame, *, lanes, word_width, tables):
        values, escapes = wire_words(frame, tables, word_width, lanes)
        return {"i": symbol_beats([frame], lanes)}, {"o": values, "o_escapes": escapes}


class ExponentRemapDecoderBlock(_ExponentBlock):
    name = "exponent-decoder"
    module = "linkcodec_exponent_decoder"
    component = ExponentRemapDecoder

    def latency_frame(self, lanes):
        """``4 x lanes`` values: the words follow the first back to back."""
        return np.random.default_rng(lanes).integers(0, 1 << 16, 4 * lanes, dtype=np.uint16)

    def frame_io(self, frame, *, lanes, word_width, tables):
        values, escapes = wire_words(frame, tables, word_width, lanes)
        return {"i": values, "i_escapes": escapes}, {"o": decoder_beats([frame], lanes)}
