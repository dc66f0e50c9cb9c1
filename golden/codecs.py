"""The link codecs of this package, one line each (:mod:`linkcodec.golden.link_codec`):
a codec defined elsewhere joins with ``register_link_codec`` and needs no line here."""

from .exponent import ExponentLinkCodec
from .huffman import HuffmanLinkCodec
from .link_codec import register_link_codec
from .qlc import QlcLinkCodec

for _codec in (QlcLinkCodec(), HuffmanLinkCodec(), ExponentLinkCodec()):
    register_link_codec(_codec)
