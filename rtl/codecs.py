"""The link hardware of this package's codecs, one line each
(:mod:`linkcodec.rtl.link_codec`): a codec defined elsewhere joins with
``register_link_hardware`` and needs no line here."""

from .exponent import ExponentLinkHardware
from .huffman import HuffmanLinkHardware
from .link_codec import register_link_hardware
from .qlc import QlcLinkHardware

for _adapter in (QlcLinkHardware(), HuffmanLinkHardware(), ExponentLinkHardware()):
    register_link_hardware(_adapter)
