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

import numpy as np
from amaranth.hdl import Shape, unsigned
from amaranth.lib import data

from ..golden.link import HEADER_FIELDS

__all__ = ["symbol_layout", "word_layout", "config_write_layout", "flit_header_layout", "pack", "unpack", "check_lanes",
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


def flit_header_layout():
    """The flit header's 32 bits (:data:`linkcodec.golden.link.HEADER_FIELDS`, least
    significant first; bit 31 is the flit's first bit), as the golden
    :class:`~linkcodec.golden.link.FlitHeader` packs them."""
    return data.StructLayout({name: unsigned(width) for name, width in HEADER_FIELDS})


def pack(layout, value):
    """Pack a ``dict`` (nested ``dict``/``list`` for nested layouts) into an ``int``.

    As ``layout.const(value).as_bits()``: a field's value is cut to its width, a field not
    given is 0, a key the layout lacks is a ``ValueError``. Layouts of plain (unsigned or
    signed) fields pack by shifts from a plan kept per layout, 7 to 18 times faster than
    through Amaranth's constants (a 512-bit word beat, a 1-lane symbol beat; unpacking 10
    times), which matters because a testbench packs every beat; other layouts, and values
    of other types, go through Amaranth.
    """
    plan = _plan(layout)
    if plan is not None:
        try:
            return _pack(plan, value)
        except _Unusual:
            pass
    return layout.const(value).as_bits()


def unpack(layout, bits):
    """Unpack an ``int`` into a ``dict`` of plain Python values (lists for arrays; signed
    fields as negative numbers), as ``layout.from_bits(bits)`` reads it: bits that do not
    fit the layout are a ``ValueError``."""
    plan = _plan(layout)
    if plan is not None and isinstance(bits, (int, np.integer)) and not isinstance(bits, bool):
        bits = int(bits)
        if not 0 <= bits < 1 << plan[1]:
            raise ValueError(f"Target of a constant does not fit in {plan[1]} bit(s)")
        return _unpack(plan, bits)
    return _plain(layout, layout.from_bits(bits))


class _Unusual(Exception):
    """A value the fast packer leaves to Amaranth (which packs it or names the error)."""


_PLANS = {}
#: Plans by the layout object's identity, first: equal layouts are often distinct objects
#: (each call of a layout function makes one), and Amaranth compares layouts field by
#: field, which took longer than the packing (29 s of a 71 s ``sim link`` run). The
#: layout is kept with its plan, so its ``id`` is not reused.
_PLANS_BY_ID = {}


def _plan(layout):
    """The packing plan of ``layout``, or ``None`` if a field is not plain (an enum, a
    union, a shape-castable of its own): ``("int", width, signed)``, ``("struct",
    width, [(name, offset, plan), ...])`` or ``("array", width, length, stride, plan)``."""
    kept = _PLANS_BY_ID.get(id(layout))
    if kept is not None and kept[0] is layout:
        return kept[1]
    try:
        plan = _PLANS[layout]
    except KeyError:
        plan = _PLANS[layout] = _shape_plan(layout)
    except TypeError:               # not hashable
        return None
    if len(_PLANS_BY_ID) < 4096:
        _PLANS_BY_ID[id(layout)] = (layout, plan)
    return plan


def _shape_plan(shape):
    if isinstance(shape, data.StructLayout):
        fields = []
        for name, field in shape:
            sub = _shape_plan(field.shape)
            if sub is None:
                return None
            fields.append((name, field.offset, sub))
        return ("struct", shape.size, fields)
    if isinstance(shape, data.ArrayLayout):
        sub = _shape_plan(shape.elem_shape)
        if sub is None:
            return None
        return ("array", shape.size, shape.length, sub[1], sub)
    if isinstance(shape, (Shape, int)) and not isinstance(shape, bool):
        shape = Shape.cast(shape)
        return ("int", shape.width, shape.signed)
    return None


def _pack(plan, value):
    kind = plan[0]
    if kind == "int":
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise _Unusual
        return int(value) & ((1 << plan[1]) - 1)
    if kind == "struct":
        if not isinstance(value, dict):
            raise _Unusual
        bits, seen = 0, 0
        for name, offset, sub in plan[2]:
            if name in value:
                bits |= _pack(sub, value[name]) << offset
                seen += 1
        if seen != len(value):
            raise _Unusual          # a key the layout lacks: Amaranth names it
        return bits
    _, _, length, stride, sub = plan
    if not isinstance(value, (list, tuple)) or len(value) > length:
        raise _Unusual
    bits = 0
    for index, element in enumerate(value):
        bits |= _pack(sub, element) << (index * stride)
    return bits


def _unpack(plan, bits):
    kind = plan[0]
    if kind == "int":
        width = plan[1]
        bits &= (1 << width) - 1
        if plan[2] and width and bits >> (width - 1):
            bits -= 1 << width
        return bits
    if kind == "struct":
        return {name: _unpack(sub, bits >> offset) for name, offset, sub in plan[2]}
    _, _, length, stride, sub = plan
    return [_unpack(sub, bits >> (index * stride)) for index in range(length)]


def _plain(layout, const):
    if isinstance(layout, data.ArrayLayout):
        return [_field(layout.elem_shape, const[index]) for index in range(layout.length)]
    return {name: _field(field.shape, getattr(const, name)) for name, field in layout}


def _field(shape, value):
    if isinstance(shape, data.Layout):
        return _plain(shape, value)
    return value
