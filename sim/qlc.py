"""Descriptions of the QLC encoder and decoder for the harness.

The tables are a :class:`~linkcodec.golden.qlc.QlcCode` (layout and rank table); the
default is the base layout with rank = symbol value.
"""

import numpy as np

from ..golden.qlc import QlcCode
from ..rtl.qlc import QlcDecoder, QlcEncoder, config_writes, default_word_width
from .beats import decoder_beats, frame_words, symbol_beats
from .block import BlockDescription

__all__ = ["QlcEncoderBlock", "QlcDecoderBlock"]


class _QlcBlock(BlockDescription):
    config_ports = ("i_config",)
    component = None          # QlcEncoder or QlcDecoder
    table = None              # "encoder" or "decoder": which table config_writes loads

    def default_word_width(self, lanes):
        return default_word_width(lanes)

    def default_tables(self):
        return QlcCode.base()

    def fitted_tables(self, frames):
        """The optimal layout and ranks for the pooled PMF of ``frames``."""
        counts = sum(np.bincount(self.prepare(frame), minlength=256) for frame in frames)
        return QlcCode.from_pmf(counts)

    def build(self, *, lanes, word_width=None, tables=None):
        return self.component(lanes=lanes, word_width=word_width, code=tables)

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

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": frame_words(*tables.encode(frame), word_width)},
                {"o": decoder_beats([frame], lanes)})
