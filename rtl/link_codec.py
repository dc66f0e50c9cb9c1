"""How a codec's blocks sit in the link's streams: one :class:`LinkHardware` per codec,
kept beside the codec's RTL (``rtl/qlc.py``, ``rtl/huffman.py``, ``rtl/exponent.py``)
and found by name through :func:`link_hardware`; the golden half is the codec's
:class:`~linkcodec.golden.link_codec.LinkCodec`, of the same name.

:class:`~linkcodec.rtl.link.LinkTx` and :class:`~linkcodec.rtl.link.LinkRx` ask a codec's
adapter for a stream's encoder and decoder, the config layout and switch address of
each, the writes its table loader makes for the transmitter, the code lengths the
cutter reads, and whether the codec sends its values and escapes as two streams (the
exponent remap); they test no codec's name. The table loader
(:class:`~linkcodec.rtl.table_loader.TableLoader`) still holds an image decoder for each
of this package's codecs.

A codec joins with :func:`register_link_hardware`; this package's are registered by
:mod:`linkcodec.rtl.codecs`, one line each.
"""

from ..golden.registry import Registry

__all__ = ["LINK_WORD_WIDTH", "LinkHardware", "register_link_hardware", "link_hardware",
           "link_hardware_codecs"]

#: Width of the coded words between a stream's codec block and its flit buffer.
LINK_WORD_WIDTH = 16


class LinkHardware:
    """Base class of a codec's link hardware adapter; a subclass sets the attributes and
    implements :meth:`tables`, :meth:`code_lengths` and :meth:`block`."""

    #: The codec's name (its golden :class:`~linkcodec.golden.link_codec.LinkCodec`'s).
    name = None
    #: The module of a stream's encoder and of its decoder: each has ``config_layout``
    #: and ``SWITCH_ADDR`` (the config write that switches banks).
    encoder_module = None
    decoder_module = None
    #: The ``block`` of the transmitter's :class:`~linkcodec.rtl.table_loader.TableLoader`
    #: (the receiver's is ``"decoder"``).
    tx_loader_block = "encoder"
    #: Whether a flit's body is a values stream and an escapes stream (the exponent
    #: remap's bf16 values), not one stream of prefix codes.
    two_streams = False

    def tables(self, tables=None):
        """``tables`` as the link holds them (checked, made canonical where the link's
        image needs it), or the codec's default for ``None``."""
        raise NotImplementedError

    def code_lengths(self, tables):
        """Each symbol's code length (a list of 256), for the transmitter's cutter."""
        raise NotImplementedError

    def block(self, kind, tables):
        """A stream's ``kind`` (``"encoder"`` or ``"decoder"``), holding ``tables``."""
        raise NotImplementedError


def _builtin():
    """Register this package's adapters (:mod:`linkcodec.rtl.codecs`)."""
    from . import codecs  # noqa: F401  (registers on import)


#: Every registered adapter, by codec name.
_REGISTRY = Registry("codec's link hardware",
                     unknown="codec must be one of {known} in hardware, not {name!r}",
                     builtin=_builtin)


def register_link_hardware(adapter):
    """Add ``adapter`` (a :class:`LinkHardware`); a codec name already taken is refused.
    Returns it."""
    if not isinstance(adapter, LinkHardware):
        raise TypeError(f"link hardware is a LinkHardware, not {type(adapter).__name__}")
    return _REGISTRY.add(adapter.name, adapter)


def link_hardware_codecs():
    """The names of the codecs the link hardware carries, in registration order."""
    return _REGISTRY.names()


def link_hardware(name):
    """The adapter of codec ``name``; an unknown name is refused, naming the known."""
    return _REGISTRY.lookup(name)
