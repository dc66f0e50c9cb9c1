"""Descriptions of an encoder driving its own decoder, for the harness.

:class:`PairDescription` runs an encoder and its decoder as one block
(:class:`~linkcodec.rtl.pair.EncoderDecoderPair`): symbols in, the same symbols out, with
the encoder's coded words going straight into the decoder. The pair holds the same
tables at both ends, loaded through both config ports. :func:`pairs` finds every pair of
the registry: a block ``X-encoder`` and a block ``X-decoder`` (or ``X-encoder-Y`` and
``X-decoder-Y``: the pair is ``X-pair-Y``).
"""

from ..rtl.pair import EncoderDecoderPair, pair_port_name
from ..rtl.blocks.description import BlockDescription
from ..rtl.blocks import BLOCKS

__all__ = ["PairDescription", "pairs"]


class PairDescription(BlockDescription):
    """``encoder`` (a description) driving ``decoder``, both holding the same tables."""

    def __init__(self, encoder, decoder):
        self.encoder, self.decoder = encoder, decoder
        self.name = encoder.name.replace("-encoder", "-pair", 1)
        self.module = encoder.module.removesuffix("_encoder") + "_pair"
        self.lanes = tuple(lanes for lanes in encoder.lanes if lanes in decoder.lanes)
        self.symbol_dtype = encoder.symbol_dtype
        self.config_ports = tuple(
            [pair_port_name(port, "encoder") for port in encoder.config_ports]
            + [pair_port_name(port, "decoder") for port in decoder.config_ports])
        self.sim_options = encoder.sim_options
        self.pair_limit = encoder.pair_limit

    def module_name(self, *, lanes, word_width=None):
        """The encoder's module name with ``_pair`` for ``_encoder``."""
        return self.encoder.module_name(lanes=lanes, word_width=word_width).replace(
            "_encoder", "_pair", 1)

    def default_word_width(self, lanes):
        return self.encoder.default_word_width(lanes)

    def default_tables(self):
        return self.encoder.default_tables()

    def example_tables(self):
        return self.encoder.example_tables()

    def fitted_tables(self, frames):
        return self.encoder.fitted_tables(frames)

    def sim_tables(self, frames, options):
        return self.encoder.sim_tables(frames, options)

    def build(self, *, lanes, word_width=None, tables=None):
        return EncoderDecoderPair(
            self.encoder.build(lanes=lanes, word_width=word_width, tables=tables),
            self.decoder.build(lanes=lanes, word_width=word_width, tables=tables))

    def frame_io(self, frame, *, lanes, word_width, tables):
        inputs, _ = self.encoder.frame_io(frame, lanes=lanes, word_width=word_width,
                                          tables=tables)
        _, expected = self.decoder.frame_io(frame, lanes=lanes, word_width=word_width,
                                            tables=tables)
        return inputs, expected

    def config_writes(self, tables):
        writes = {}
        for side, block in (("encoder", self.encoder), ("decoder", self.decoder)):
            for port, port_writes in block.config_writes(tables).items():
                writes[pair_port_name(port, side)] = port_writes
        return writes


def pairs():
    """Every encoder of the registry with its decoder, as :class:`PairDescription`\\ s by
    name (``"qlc-pair"``)."""
    found = {}
    for name, block in BLOCKS.items():
        if "-encoder" in name:
            decoder = BLOCKS.get(name.replace("-encoder", "-decoder", 1))
            if decoder is not None:
                pair = PairDescription(block, decoder)
                found[pair.name] = pair
    return found
