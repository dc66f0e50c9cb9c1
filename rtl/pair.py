"""An encoder driving its own decoder directly, with nothing between them.

:class:`EncoderDecoderPair` connects every output stream of an encoder (``o``,
``o_<what>``) to the decoder's input stream of the same name (``i``, ``i_<what>``): the
exponent remap's two streams, values and escapes, travel side by side. No register, no
buffer: the pair is how blocks are used, and what it proves is that an encoder's output
timing and backpressure suit its decoder's input.

Ports: the encoder's ``i`` and the decoder's ``o`` keep their names; every other port
is renamed with the side it comes from, ``i_config`` to ``i_encoder_config`` and
``i_decoder_config`` (:func:`pair_port_name`). Latency is the encoder's plus the
decoder's; reset resets both.
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In

__all__ = ["EncoderDecoderPair", "pair_port_name"]


def pair_port_name(name, side):
    """The pair's name for port ``name`` of the ``side`` (``"encoder"`` or
    ``"decoder"``) block: ``i`` and ``o`` as they are, ``i_x`` as ``i_<side>_x``."""
    if name in ("i", "o"):
        return name
    direction, rest = name.split("_", 1)
    return f"{direction}_{side}_{rest}"


def _streams(component):
    return {name: member for name, member in component.signature.members.items()
            if not member.is_port and isinstance(member.signature, stream.Signature)}


class EncoderDecoderPair(wiring.Component):
    """``encoder`` driving ``decoder`` (see the module's docstring). Each output stream
    of the encoder must meet a decoder input of the same name and payload layout."""

    def __init__(self, encoder, decoder):
        self.encoder, self.decoder = encoder, decoder
        outputs = {name: member for name, member in _streams(encoder).items()
                   if member.flow != In}
        inputs = _streams(decoder)
        self._links = []
        for name, member in outputs.items():
            target = "i" + name[1:]
            if target not in inputs or inputs[target].flow != In:
                raise ValueError(f"the decoder has no input stream {target!r} for the "
                                 f"encoder's {name!r}")
            theirs = inputs[target].signature.members["payload"].shape
            if theirs != member.signature.members["payload"].shape:
                raise ValueError(f"the encoder's {name!r} and the decoder's {target!r} "
                                 "carry different payloads")
            self._links.append((name, target))
        linked = {target for _, target in self._links}
        self._outer = []              # (pair's name, block, block's name)
        members = {}
        for side, block, skip in (("encoder", encoder, set(outputs)),
                                  ("decoder", decoder, linked)):
            for name, member in block.signature.members.items():
                if name in skip:
                    continue
                outer = pair_port_name(name, side)
                members[outer] = member
                self._outer.append((outer, block, name))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.encoder = self.encoder
        m.submodules.decoder = self.decoder
        for source, target in self._links:
            wiring.connect(m, getattr(self.encoder, source), getattr(self.decoder, target))
        for outer, block, name in self._outer:
            wiring.connect(m, wiring.flipped(getattr(self, outer)), getattr(block, name))
        return m
