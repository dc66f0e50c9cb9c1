"""Descriptions of the Huffman encoder and decoder for the harness.

The tables are a canonical :class:`~linkcodec.golden.huffman.HuffmanCodebook`; the default
is :func:`~linkcodec.rtl.huffman.default_codebook` (every code 8 bits long). Fitted
tables are built from the frames as ``linkcodec codebook build`` builds a codebook from
its files: the average of the frames' PMFs, one batch a frame.

A description is made for one code length limit, ``max_length`` (default 15, the one the
registry holds): ``HuffmanDecoderBlock(max_length=11)`` builds blocks of that limit, fits
codebooks to it, and names its modules with an ``_m11`` suffix, so the harness, ``linkcodec
generate``'s :func:`~linkcodec.generate.generate` and synthesis take it as any block.
"""

import numpy as np

from ..golden.huffman import HuffmanCodebook
from ..rtl.huffman import (MAX_CODE_LENGTH, MIN_DECODER_WORD_WIDTH, HuffmanDecoder,
                           HuffmanEncoder, check_max_length, config_writes, default_codebook,
                           default_word_width)
from .beats import decoder_beats, frame_words, symbol_beats
from .block import BlockDescription

__all__ = ["HuffmanEncoderBlock", "HuffmanDecoderBlock"]


class _HuffmanBlock(BlockDescription):
    ready_independent = True
    config_ports = ("i_config",)
    component = None          # HuffmanEncoder or HuffmanDecoder
    table = None              # "encoder" or "decoder": which tables config_writes loads

    def __init__(self, *, max_length=MAX_CODE_LENGTH):
        self._max_length = check_max_length(max_length)

    @property
    def max_length(self):
        """The longest code of the blocks this description builds."""
        return self._max_length

    def module_name(self, *, lanes, word_width=None):
        """As every block's, with ``_m<max_length>`` where the limit is not 15."""
        name = super().module_name(lanes=lanes, word_width=word_width)
        return name if self._max_length == MAX_CODE_LENGTH else f"{name}_m{self._max_length}"

    def default_word_width(self, lanes):
        return default_word_width(lanes)

    def default_tables(self):
        return default_codebook()

    sim_options = {
        "codebook": {"metavar": "JSON",
                     "help": "code with this codebook (from `linkcodec codebook build`) "
                             "instead of the one built from the FILEs"},
    }

    def example_tables(self):
        """The codebook of a skewed made-up source over shuffled symbols (long and short
        codes)."""
        rng = np.random.default_rng(7)
        order = rng.permutation(256).astype(np.uint8)
        ranks = np.minimum(rng.geometric(0.12, 20000) - 1, 255)
        return HuffmanCodebook.from_batches([order[ranks]], max_length=self._max_length)

    def fitted_tables(self, frames):
        """The codebook ``linkcodec codebook build`` makes from ``frames``, one batch each."""
        return HuffmanCodebook.from_batches([self.prepare(frame) for frame in frames],
                                            max_length=self._max_length)

    def sim_tables(self, frames, options):
        """The ``codebook`` option's codebook, else the one built from the frames, else
        (no frames) the reset codebook."""
        if options.get("codebook"):
            book = HuffmanCodebook.load(options["codebook"])
        elif frames:
            book = self.fitted_tables(frames)
        else:
            book = self.default_tables()
        return book, {"codebook": book.id}

    def build(self, *, lanes, word_width=None, tables=None):
        return self.component(lanes=lanes, word_width=word_width, tables=tables,
                              max_length=self._max_length)

    def config_writes(self, tables):
        return {"i_config": config_writes(tables, block=self.table,
                                          max_length=self._max_length)}


class HuffmanEncoderBlock(_HuffmanBlock):
    name = "huffman-encoder"
    module = "linkcodec_huffman_encoder"
    lanes = (1, 2, 4, 8)
    component = HuffmanEncoder
    table = "encoder"

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": symbol_beats([frame], lanes)},
                {"o": frame_words(*tables.encode(frame), word_width)})


class HuffmanDecoderBlock(_HuffmanBlock):
    name = "huffman-decoder"
    module = "linkcodec_huffman_decoder"
    lanes = (1, 2, 4)
    component = HuffmanDecoder
    table = "decoder"
    fuzzable = True

    def min_word_width(self, lanes):
        return MIN_DECODER_WORD_WIDTH

    def latency_frame(self, lanes):
        """``4 x lanes`` symbols: the words follow the first back to back."""
        return np.random.default_rng(lanes).integers(0, 256, 4 * lanes, dtype=np.uint8)

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": frame_words(*tables.encode(frame), word_width)},
                {"o": decoder_beats([frame], lanes)})
