"""Stream payload layouts shared by ``rtl/``, ``sim/`` and ``golden/``.

Every codec block moves two kinds of beats:

* **symbol beats**: ``lanes`` symbols of ``width`` bits per beat (8 for e4m3, 16 for
  bf16), a ``count`` of how many lanes hold a
  symbol (lanes ``0 .. count-1``, in stream order), and ``last`` on the beat that ends a
  frame; a decoder's output beats also carry ``error``;
* **word beats**: ``width`` bits of a coded frame (first bit in the MSB), a ``bits`` count of
  how many of them belong to the frame, and ``last`` on the word that ends the frame. See
  ``docs/bitstream.md``.

The same layout objects pack and unpack beats in the testbenches (:func:`pack`,
:func:`unpack`), so the bit positions are written down exactly once.
"""

from amaranth.hdl import unsigned
from amaranth.lib import data

__all__ = ["symbol_layout", "word_layout", "config_write_layout", "pack", "unpack", "check_lanes",
           "check_word_width", "LANES", "SYMBOL_WIDTHS"]

#: Symbol widths a symbol beat carries: e4m3 bytes and bf16 values.
SYMBOL_WIDTHS = (8, 16)


#: Lane counts a symbol beat can have.
LANES = (1, 2, 4, 8, 16)


def check_lanes(lanes, allowed=LANES):
    """``lanes`` if it is one of ``allowed`` (a subset of :data:`LANES`, the lane counts
    of a block), else a ``ValueError`` that lists them."""
    if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes not in allowed:
        raise ValueError(f"lanes must be {', '.join(map(str, allowed[:-1]))} or "
                         f"{allowed[-1]}, not {lanes!r}")
    return lanes


def check_word_width(word_width):
    if (not isinstance(word_width, int) or isinstance(word_width, bool)
            or word_width < 8 or word_width % 8):
        raise ValueError(f"word_width must be a positive multiple of 8, not {word_width!r}")
    return word_width


def symbol_layout(lanes, *, width=8, error=False):
    """Layout of a beat of ``lanes`` symbols of ``width`` bits (8 or 16; ``error`` adds the
    decoder's error flag)."""
    check_lanes(lanes)
    if width not in SYMBOL_WIDTHS:
        raise ValueError(f"symbol width must be 8 or 16, not {width!r}")
    fields = {
        "symbols": data.ArrayLayout(width, lanes),
        "count": unsigned((lanes + 1).bit_length() if lanes > 1 else 1),
        "last": 1,
    }
    if error:
        fields["error"] = 1
    return data.StructLayout(fields)


def word_layout(width):
    """Layout of a ``width``-bit word of a coded frame."""
    check_word_width(width)
    return data.StructLayout({
        "data": width,
        "bits": unsigned(width.bit_length()),
        "last": 1,
    })


def config_write_layout(*, addr_width, data_width):
    """Layout of a config write: a table entry or register at ``addr`` takes ``data``."""
    return data.StructLayout({"addr": addr_width, "data": data_width})


def pack(layout, value):
    """Pack a ``dict`` (nested ``dict``/``list`` for nested layouts) into an ``int``."""
    return layout.const(value).as_bits()


def unpack(layout, bits):
    """Unpack an ``int`` into a ``dict`` of plain Python values (lists for arrays)."""
    return _plain(layout, layout.from_bits(bits))


def _plain(layout, const):
    if isinstance(layout, data.ArrayLayout):
        return [_field(layout.elem_shape, const[index]) for index in range(layout.length)]
    return {name: _field(field.shape, getattr(const, name)) for name, field in layout}


def _field(shape, value):
    if isinstance(shape, data.Layout):
        return _plain(shape, value)
    return value
