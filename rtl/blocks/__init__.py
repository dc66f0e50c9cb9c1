"""The blocks the harness, ``linkcodec sim``, ``generate``, ``report``, ``bench``, the
fuzzer and the contract suite know, by name: the one registry.

A codec adds its blocks here with one line each; a block defined elsewhere (a test, a
user's own package) joins with :func:`register` and is then known to every command and
to the contract suite, with no shared file edited.
"""

from ...golden.registry import Registry
from .exponent import ExponentRemapDecoderBlock, ExponentRemapEncoderBlock
from .huffman import HuffmanDecoderBlock, HuffmanEncoderBlock
from .qlc import QlcDecoderBlock, QlcEncoderBlock

__all__ = ["BLOCKS", "get_block", "register", "unregister"]

#: Every block description, by its command-line name.
BLOCKS = Registry("block", unknown="unknown block {name!r}; expected one of {known}")


def register(description):
    """Add ``description`` (a :class:`~linkcodec.rtl.blocks.description.BlockDescription`) to
    :data:`BLOCKS` under its ``name``; a name already taken is refused. Returns it."""
    return BLOCKS.add(description.name, description)


def unregister(name):
    """Remove the block called ``name`` (a test's made-up block, when it is done)."""
    BLOCKS.remove(name)


def get_block(name):
    """The description of the block called ``name``; an unknown name is refused."""
    return BLOCKS.lookup(name)


for _block in (QlcEncoderBlock(), QlcDecoderBlock(),
               HuffmanEncoderBlock(), HuffmanDecoderBlock(),
               HuffmanEncoderBlock(value_bits=16, coded_bits=11),
               HuffmanDecoderBlock(value_bits=16, coded_bits=11),
               ExponentRemapEncoderBlock(), ExponentRemapDecoderBlock()):
    register(_block)
