"""Descriptions of the QLC encoder and decoder for the harness.

The tables are a :class:`~linkcodec.golden.qlc.QlcCode` (layout and rank table); the
default is the base layout with rank = symbol value.
"""

import numpy as np

from ...golden.huffman import HuffmanCodebook
from ...golden.qlc import QlcCode, QlcLayout
from ..qlc import QlcDecoder, QlcEncoder, config_writes, default_word_width
from .beats import decoder_beats, frame_words, symbol_beats
from .description import BlockDescription

__all__ = ["QlcEncoderBlock", "QlcDecoderBlock"]


class _QlcBlock(BlockDescription):
    ready_independent = True
    config_ports = ("i_config",)
    component = None          # QlcEncoder or QlcDecoder
    table = None              # "encoder" or "decoder": which table config_writes loads

    def default_word_width(self, lanes):
        return default_word_width(lanes)

    def default_tables(self):
        return QlcCode.base()

    sim_options = {
        "layout": {"choices": ["base", "optimal"],
                   "help": "the base layout or the optimal one for the FILEs (default "
                           "optimal)"},
        "codebook": {"metavar": "JSON",
                     "help": "rank symbols by this codebook's code lengths (shorter codes "
                             "first) instead of the FILEs' PMF"},
    }

    def example_tables(self):
        """The optimal code of a skewed PMF over shuffled symbols (an adapted layout)."""
        rng = np.random.default_rng(7)
        pmf = np.zeros(256)
        pmf[rng.permutation(256)] = 0.8 ** np.arange(256) + 1e-6
        return QlcCode.from_pmf(pmf)

    def _counts(self, frames):
        return sum(np.bincount(self.prepare(frame), minlength=256) for frame in frames)

    def fitted_tables(self, frames):
        """The optimal layout and ranks for the pooled PMF of ``frames``."""
        return QlcCode.from_pmf(self._counts(frames))

    def sim_tables(self, frames, options):
        """Ranks from the frames' pooled PMF or, with ``codebook``, from the codebook's
        model of the source (``2**-length``); the ``layout`` option's layout. Without
        either, the base code."""
        layout = options.get("layout") or "optimal"
        if options.get("codebook"):
            lengths = HuffmanCodebook.load(options["codebook"]).lengths
            pmf = 2.0 ** -lengths.astype(np.float64)
        elif frames:
            pmf = self._counts(frames)
        else:
            return QlcCode.base(), {"layout": "base"}
        code = QlcCode.from_pmf(pmf, layout=QlcLayout.base() if layout == "base" else None)
        return code, {"layout": layout}

    def build(self, *, lanes, word_width=None, tables=None):
        return self.component(lanes=lanes, word_width=word_width, tables=tables)

    def config_writes(self, tables):
        return {"i_config": config_writes(tables, block=self.table)}


class QlcEncoderBlock(_QlcBlock):
    name = "qlc-encoder"
    module = "linkcodec_qlc_encoder"
    component = QlcEncoder
    table = "encoder"

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": symbol_beats([frame], lanes)},
                {"o": frame_words(*tables.encode(frame), word_width)})


class QlcDecoderBlock(_QlcBlock):
    name = "qlc-decoder"
    module = "linkcodec_qlc_decoder"
    component = QlcDecoder
    table = "decoder"
    fuzzable = True

    def latency_frame(self, lanes):
        """64 symbols: the words follow the first back to back."""
        return np.arange(64, dtype=np.uint8)

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": frame_words(*tables.encode(frame), word_width)},
                {"o": decoder_beats([frame], lanes)})
