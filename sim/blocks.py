"""The blocks the harness, ``linkcodec sim`` and ``linkcodec generate`` know, by name."""

from .exponent import ExponentRemapDecoderBlock, ExponentRemapEncoderBlock
from .huffman import HuffmanDecoderBlock, HuffmanEncoderBlock
from .qlc import QlcDecoderBlock, QlcEncoderBlock

__all__ = ["BLOCKS", "get_block"]

#: Every block description, by its command-line name.
BLOCKS = {block.name: block for block in (QlcEncoderBlock(), QlcDecoderBlock(),
                                          HuffmanEncoderBlock(), HuffmanDecoderBlock(),
                                          ExponentRemapEncoderBlock(),
                                          ExponentRemapDecoderBlock())}


def get_block(name):
    """The description of the block called ``name``; an unknown name is refused."""
    try:
        return BLOCKS[name]
    except KeyError:
        raise ValueError(f"unknown block {name!r}; expected one of {', '.join(BLOCKS)}") \
            from None
