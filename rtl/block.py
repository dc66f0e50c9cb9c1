"""The base of the codec blocks: their parameters checked before a signature is built.

:class:`LanedBlock` holds what every block's constructor does alike: check ``lanes``
against the lane counts the block takes, default and check ``word_width``, check the
elaboration-time tables, and only then build the signature. A block refused there (``TypeError``
or ``ValueError``) never existed as far as Amaranth is concerned, so it is not reported
later as an unused elaboratable.
"""

from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .payload import LANES, check_lanes, check_word_width, symbol_layout, word_layout

__all__ = ["LanedBlock", "encoder_signature", "decoder_signature"]


def encoder_signature(config_layout, width=8):
    """The ports of an encoder of ``width``-bit symbols (8: e4m3), as :class:`LanedBlock`
    takes them: symbol beats in (``i``), words out (``o``), table writes in (``i_config``,
    ``config_layout``)."""
    return lambda lanes, word_width: {
        "i": In(stream.Signature(symbol_layout(lanes, width=width))),
        "o": Out(stream.Signature(word_layout(word_width))),
        "i_config": In(stream.Signature(config_layout)),
    }


def decoder_signature(config_layout, width=8):
    """The ports of a decoder of ``width``-bit symbols (8: e4m3): words in (``i``), symbol
    beats with the error flag out (``o``), table writes in (``i_config``)."""
    return lambda lanes, word_width: {
        "i": In(stream.Signature(word_layout(word_width))),
        "o": Out(stream.Signature(symbol_layout(lanes, width=width, error=True))),
        "i_config": In(stream.Signature(config_layout)),
    }


class LanedBlock(wiring.Component):
    """A stream block of ``lanes`` symbols a beat and ``word_width``-bit coded words.

    ``signature(lanes, word_width)`` builds the block's signature once ``lanes`` is one of
    ``allowed_lanes``, ``word_width`` (``default_word_width(lanes)`` when None) is a
    positive multiple of 8, and ``check(lanes, word_width)`` has returned the block's
    elaboration-time tables (:attr:`tables`); ``check`` raises ``TypeError`` or
    ``ValueError`` on anything else the block cannot take.
    """

    def __init__(self, signature, *, lanes, word_width, default_word_width, check,
                 allowed_lanes=LANES):
        try:
            self._lanes = check_lanes(lanes, allowed_lanes)
            self._word_width = check_word_width(
                default_word_width(lanes) if word_width is None else word_width)
            self._initial_tables = check(self._lanes, self._word_width)
        except (TypeError, ValueError):
            # A block refused at construction is not an unused block: no warning later.
            self._MustUse__silence = True
            raise
        super().__init__(signature(self._lanes, self._word_width))

    @property
    def lanes(self):
        return self._lanes

    @property
    def word_width(self):
        return self._word_width

    @property
    def tables(self):
        """The tables the block holds from elaboration (at power-up on an FPGA) until
        others are loaded through its config port: the ``tables=`` every block's
        constructor takes. A reset does not bring them back (tables keep what was last
        loaded)."""
        return self._initial_tables
