"""How a codec rides the link, in the golden model: one :class:`LinkCodec` per codec, kept
beside the codec's own model (``golden/qlc.py``, ``golden/huffman.py``,
``golden/exponent.py``) and found by name through :func:`link_codec`.

A link codec says what the flit format (:mod:`linkcodec.golden.link`) needs of a codec
and nothing more: its name and the value of the flit header's ``codec`` field for its
flits (:attr:`~LinkCodec.codec_id`; 0 is raw), the bytes of one raw symbol, the tables it
takes, how many body bits each prefix of a flit's symbols takes (where a flit may be
cut), how it codes and decodes one flit's symbols, and its table image (the bytes of its
table flits). The flit writer and reader hold no codec's name.

A codec joins with :func:`register_link_codec`; the codecs of this package are
registered by :mod:`linkcodec.golden.codecs`, one line each.
"""

import numpy as np

from .bitstream import BitstreamError
from .registry import Registry

__all__ = ["LinkCodec", "register_link_codec", "unregister_link_codec", "link_codec",
           "link_codecs", "codec_name", "MAX_CODEC_ID"]

#: The largest value of the flit header's ``codec`` field (2 bits; 0 is raw).
MAX_CODEC_ID = 3


class LinkCodec:
    """Base class of a codec's link adapter. A subclass sets :attr:`name`,
    :attr:`codec_id`, :attr:`table_type` (and :attr:`symbol_bytes` if not 1) and
    implements :meth:`lengths` (or :meth:`flit_bits`), :meth:`image`,
    :meth:`image_bytes` and :meth:`from_image`; :meth:`encode` and :meth:`decode` call the
    tables' own ``encode`` and ``decode`` unless overridden."""

    #: The codec's name, as ``--codec`` takes it.
    name = None
    #: The flit header's ``codec`` value of its coded data flits and table flits (1 to
    #: :data:`MAX_CODEC_ID`).
    codec_id = None
    #: Bytes of one raw symbol (a raw flit's body): 1 for e4m3, 2 for bf16.
    symbol_bytes = 1
    #: The type of the tables it takes.
    table_type = None
    #: The errors :meth:`decode` raises for a body no encoder makes (each with ``bit``,
    #: the body bit at fault): the flit reader turns them into a ``FlitError``.
    decode_errors = (BitstreamError,)

    def check_tables(self, tables):
        """``tables`` as the link carries them; a ``TypeError`` or ``ValueError`` naming
        what the link cannot carry."""
        if not isinstance(tables, self.table_type):
            raise TypeError(f"the {self.name} link takes a {self.table_type.__name__}, not "
                            f"{type(tables).__name__}")
        return tables

    def lengths(self, tables, symbols):
        """The coded bits of each of ``symbols``."""
        raise NotImplementedError

    def flit_bits(self, tables, symbols):
        """Body bits that a flit of ``symbols[:m]`` takes, for ``m = 0 .. len``."""
        lengths = self.lengths(tables, symbols)
        return np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))

    def frame_bits(self, tables, symbols):
        """Bits of ``symbols`` coded as one frame by the codec's own blocks."""
        return int(self.flit_bits(tables, symbols)[-1])

    def encode(self, tables, symbols):
        """A flit's body for ``symbols``: ``(bytes, bits)``."""
        return tables.encode(symbols)

    def decode(self, tables, body, nbits, count):
        """The ``count`` symbols of a body of ``nbits`` bits; the codec's own error
        (naming the bit) for a body no encoder makes."""
        return tables.decode(body, nbits)

    def image(self, tables):
        """The table image: the bytes of the table flits that load ``tables``."""
        raise NotImplementedError

    def image_bytes(self):
        """Bytes of every table image of the codec."""
        raise NotImplementedError

    def from_image(self, image):
        """The tables of ``image`` (:meth:`image_bytes` long); a ``ValueError`` if no
        tables have that image."""
        raise NotImplementedError


def _builtin():
    """Register this package's codecs (:mod:`linkcodec.golden.codecs`)."""
    from . import codecs  # noqa: F401  (registers on import)


#: Every registered link codec, by name.
_REGISTRY = Registry("link codec", unknown="codec must be one of {known}, not {name!r}",
                     builtin=_builtin)


def register_link_codec(codec):
    """Add ``codec`` (a :class:`LinkCodec`) to the link codecs; a name or a header value
    already taken, or a header value the field cannot hold, is refused. Returns it."""
    if not isinstance(codec, LinkCodec):
        raise TypeError(f"a link codec is a LinkCodec, not {type(codec).__name__}")
    if codec.name == "raw":
        raise ValueError("'raw' is the header's codec 0, not a link codec")
    if not isinstance(codec.codec_id, int) or not 1 <= codec.codec_id <= MAX_CODEC_ID:
        raise ValueError(f"link codec {codec.name!r}: codec_id must be 1..{MAX_CODEC_ID} "
                         f"(the header's 2-bit codec field; 0 is raw), not "
                         f"{codec.codec_id!r}")
    taken = _REGISTRY.names()
    for other in map(_REGISTRY.get, taken):
        if other.codec_id == codec.codec_id and codec.name not in taken:
            raise ValueError(f"link codec {codec.name!r}: codec_id {codec.codec_id} is "
                             f"{other.name!r}'s")
    return _REGISTRY.add(codec.name, codec)


def unregister_link_codec(name):
    """Remove the link codec called ``name`` (a test's made-up codec, when it is done)."""
    _REGISTRY.remove(name)


def link_codecs():
    """The names of the registered link codecs, by their header value."""
    return tuple(sorted(_REGISTRY.names(), key=lambda name: _REGISTRY[name].codec_id))


def link_codec(name):
    """The link codec called ``name``; an unknown name is refused, naming the known."""
    return _REGISTRY.lookup(name)


def codec_name(codec_id):
    """The name a flit header's ``codec`` value stands for: ``"raw"`` for 0, a codec's
    name, or ``"unassigned codec N"``."""
    if codec_id == 0:
        return "raw"
    for name in _REGISTRY.names():
        if _REGISTRY[name].codec_id == codec_id:
            return name
    return f"unassigned codec {codec_id}"
