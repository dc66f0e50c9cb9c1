"""Descriptions of the Huffman encoder and decoder for the harness.

The tables are a canonical :class:`~linkcodec.golden.huffman.HuffmanCodebook`; the default
is :func:`~linkcodec.rtl.huffman.default_codebook` (every code 8 bits long). Fitted
tables are built from the frames as ``linkcodec codebook build`` builds a codebook from
its files: the average of the frames' PMFs, one batch a frame.

A description is made for one code length limit, ``max_length`` (default 15, the one the
registry holds): ``HuffmanDecoderBlock(max_length=11)`` builds blocks of that limit, fits
codebooks to it, and names its modules with an ``_m11`` suffix, so the harness, ``linkcodec
generate``'s :func:`~linkcodec.generate.generate` and synthesis take it as any block.

A description is made for one split too: ``HuffmanEncoderBlock(value_bits=16,
coded_bits=11)`` (registered as ``huffman-encoder-bf16``, and the decoder as
``huffman-decoder-bf16``) takes bf16 values, codes their top 11 bits with codebooks of
that split (``docs/huffman.md``, "bf16 values") and names its modules with a ``_v16k11``
suffix (``_v16`` at the default split, 11, under its own name). ``linkcodec sim
huffman-encoder|huffman-decoder --codebook book.json`` with a codebook of 16-bit values
runs the block of that codebook's split (:meth:`variant`).
"""

import numpy as np

from ...golden.huffman import DEFAULT_CODED_BITS, HuffmanCodebook, check_split
from ..huffman import (BF16_DECODER_LANES, BF16_ENCODER_LANES, MAX_CODE_LENGTH,
                           MIN_DECODER_WORD_WIDTH, HuffmanDecoder, HuffmanEncoder,
                           check_codebook, check_max_length, config_writes, default_codebook,
                           default_word_width)
from .beats import decoder_beats, frame_words, symbol_beats
from .description import BlockDescription

__all__ = ["HuffmanEncoderBlock", "HuffmanDecoderBlock"]


class _HuffmanBlock(BlockDescription):
    ready_independent = True
    config_ports = ("i_config",)
    component = None          # HuffmanEncoder or HuffmanDecoder
    table = None              # "encoder" or "decoder": which tables config_writes loads
    e4m3_lanes = bf16_lanes = ()

    def __init__(self, *, max_length=MAX_CODE_LENGTH, value_bits=8, coded_bits=None):
        self._max_length = check_max_length(max_length)
        self._split = check_split(value_bits, coded_bits)

    @property
    def max_length(self):
        """The longest code of the blocks this description builds."""
        return self._max_length

    @property
    def symbol_dtype(self):
        return np.uint8 if self._split[0] == 8 else np.uint16

    @property
    def coded_bits(self):
        """How many top bits of a value the code covers (8 for e4m3)."""
        return self._split[1]

    def _split_options(self):
        return {"value_bits": self._split[0], "coded_bits": self._split[1]}

    @property
    def name(self):
        """``huffman-encoder`` or ``huffman-decoder``; with ``-bf16`` for 16-bit values."""
        return f"huffman-{self.table}" + ("" if self._split[0] == 8 else "-bf16")

    @property
    def lanes(self):
        """The lane counts of the e4m3 block, or of the block of 16-bit values."""
        return self.e4m3_lanes if self._split[0] == 8 else self.bf16_lanes

    def smallest_variant(self):
        """For 16-bit values, the block of the smallest split (8 coded bits: a table of
        256 entries a bank, as the e4m3 block's); the same logic as at every split."""
        if self._split[0] == 8:
            return self
        return type(self)(max_length=self._max_length, value_bits=self._split[0],
                          coded_bits=8)

    def variant(self, options):
        """The block that ``options`` (``sim``'s) ask for: with a ``codebook`` file of
        16-bit values, the block of its split; else this one."""
        if not options.get("codebook"):
            return self
        book = HuffmanCodebook.load(options["codebook"])
        if (book.value_bits, book.coded_bits) == self._split:
            return self
        return type(self)(max_length=self._max_length, value_bits=book.value_bits,
                          coded_bits=book.coded_bits)

    def module_name(self, *, lanes, word_width=None):
        """As every block's, with ``_m<max_length>`` where the limit is not 15 and, for
        16-bit values, ``_v16`` and ``k<coded_bits>`` where the split is not 11."""
        name = super().module_name(lanes=lanes, word_width=word_width)
        if self._split[0] != 8:
            name += f"_v{self._split[0]}"
            if self._split[1] != DEFAULT_CODED_BITS[self._split[0]]:
                name += f"k{self._split[1]}"
        return name if self._max_length == MAX_CODE_LENGTH else f"{name}_m{self._max_length}"

    def default_word_width(self, lanes):
        return default_word_width(lanes, self._split[0])

    def default_tables(self):
        return default_codebook(**self._split_options())

    sim_options = {
        "codebook": {"metavar": "JSON",
                     "help": "code with this codebook (from `linkcodec codebook build`) "
                             "instead of the one built from the FILEs"},
    }

    def example_tables(self):
        """The codebook of a skewed made-up source over shuffled symbols (long and short
        codes); for 16-bit values, over shuffled top parts with random tails, so that
        most parts are unseen and go by the escape."""
        rng = np.random.default_rng(7)
        value_bits, coded_bits = self._split
        order = rng.permutation(1 << coded_bits)
        ranks = np.minimum(rng.geometric(0.12, 20000) - 1, (1 << coded_bits) - 1)
        if value_bits == 8:
            return HuffmanCodebook.from_batches([order[ranks].astype(np.uint8)],
                                                max_length=self._max_length)
        tails = rng.integers(0, 1 << (value_bits - coded_bits), ranks.size)
        values = ((order[ranks] << (value_bits - coded_bits)) | tails).astype(np.uint16)
        return HuffmanCodebook.from_batches([values], max_length=self._max_length,
                                            **self._split_options())

    def fitted_tables(self, frames):
        """The codebook ``linkcodec codebook build`` makes from ``frames``, one batch each."""
        return HuffmanCodebook.from_batches([self.prepare(frame) for frame in frames],
                                            max_length=self._max_length,
                                            **self._split_options())

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
        if self._split[0] == 8:          # the e4m3 blocks, as they always were built
            return self.component(lanes=lanes, word_width=word_width, tables=tables,
                                  max_length=self._max_length)
        return self.component(lanes=lanes, word_width=word_width, tables=tables,
                              max_length=self._max_length, **self._split_options())

    def config_writes(self, tables):
        """The writes that load ``tables``, a codebook of this block's split (another is
        refused by :func:`~linkcodec.rtl.huffman.check_codebook`)."""
        check_codebook(tables, self._max_length, **self._split_options())
        return {"i_config": config_writes(tables, block=self.table,
                                          max_length=self._max_length)}


class HuffmanEncoderBlock(_HuffmanBlock):
    module = "linkcodec_huffman_encoder"
    component = HuffmanEncoder
    table = "encoder"
    e4m3_lanes = (1, 2, 4, 8)
    bf16_lanes = BF16_ENCODER_LANES

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": symbol_beats([frame], lanes)},
                {"o": frame_words(*tables.encode(frame), word_width)})


class HuffmanDecoderBlock(_HuffmanBlock):
    module = "linkcodec_huffman_decoder"
    e4m3_lanes = (1, 2, 4)
    bf16_lanes = BF16_DECODER_LANES
    component = HuffmanDecoder
    table = "decoder"
    fuzzable = True

    def min_word_width(self, lanes):
        return MIN_DECODER_WORD_WIDTH

    def latency_frame(self, lanes):
        """``4 x lanes`` symbols: the words follow the first back to back."""
        return np.random.default_rng(lanes).integers(0, 1 << self._split[0], 4 * lanes,
                                                     dtype=self.symbol_dtype)

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": frame_words(*tables.encode(frame), word_width)},
                {"o": decoder_beats([frame], lanes)})
