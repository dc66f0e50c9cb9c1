"""rtl/payload.py's pack and unpack: the same bits and values as Amaranth's layout
constants (the fast path), for every layout the blocks use and for random values,
out-of-range and negative ones included; what the fast path leaves to Amaranth."""

import numpy as np
import pytest
from amaranth.hdl import signed, unsigned
from amaranth.lib import data, enum
from hypothesis import given, settings
from hypothesis import strategies as st

from linkcodec.golden.link import FlitHeader
from linkcodec.rtl.payload import (config_write_layout, flit_header_layout, pack,
                                   symbol_layout, unpack, word_layout)

MIXED = data.StructLayout({"a": 4, "b": data.ArrayLayout(3, 2), "s": signed(5),
                           "n": data.StructLayout({"x": unsigned(1), "y": signed(9)})})
LAYOUTS = [symbol_layout(1), symbol_layout(4, error=True), symbol_layout(8, width=16),
           symbol_layout(16, error=True), word_layout(64), word_layout(512),
           config_write_layout(addr_width=9, data_width=12), MIXED]


def _values(layout, draw):
    """A value for ``layout``: every field drawn from well past its range on both sides,
    some fields left out, arrays sometimes short."""
    if isinstance(layout, data.StructLayout):
        return {name: _values(field.shape, draw) for name, field in layout
                if draw(st.booleans()) or draw(st.booleans())}
    if isinstance(layout, data.ArrayLayout):
        count = draw(st.integers(0, layout.length))
        return [_values(layout.elem_shape, draw) for _ in range(count)]
    width = unsigned(layout).width if isinstance(layout, int) else layout.width
    return draw(st.integers(-(1 << (width + 2)), 1 << (width + 2)))


def _reference_unpack(layout, bits):
    view = layout.from_bits(bits)

    def plain(shape, value):
        if isinstance(shape, data.ArrayLayout):
            return [plain(shape.elem_shape, value[i]) for i in range(shape.length)]
        if isinstance(shape, data.StructLayout):
            return {name: plain(field.shape, getattr(value, name)) for name, field in shape}
        return value
    return plain(layout, view)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: str(layout.size))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_pack_and_unpack_are_amaranths(layout, data):
    value = _values(layout, data.draw)
    bits = pack(layout, value)
    assert bits == layout.const(value).as_bits()
    assert 0 <= bits < 1 << layout.size
    raw = data.draw(st.integers(0, (1 << layout.size) - 1))
    assert unpack(layout, raw) == _reference_unpack(layout, raw)
    if layout.size <= 64:
        assert unpack(layout, np.uint64(raw)) == _reference_unpack(layout, raw)


def test_the_edges_of_a_field():
    layout = data.StructLayout({"u": 4, "s": signed(4)})
    assert pack(layout, {"u": 15, "s": 7}) == 15 | 7 << 4           # the last values in
    assert pack(layout, {"u": 16, "s": 8}) == 0 | 8 << 4            # the first out: cut
    assert pack(layout, {"s": -8}) == 8 << 4
    assert unpack(layout, 8 << 4) == {"u": 0, "s": -8}
    assert unpack(layout, 7 << 4) == {"u": 0, "s": 7}
    assert unpack(layout, 255) == {"u": 15, "s": -1}                 # the last bits in
    for bits in (256, -1):                                           # the first out
        with pytest.raises(ValueError, match="does not fit in 8 bit"):
            unpack(layout, bits)
        with pytest.raises(ValueError, match="does not fit in 8 bit"):
            layout.from_bits(bits)


def test_a_key_the_layout_lacks_is_named():
    with pytest.raises(ValueError, match="refers to key 'lanes'"):
        pack(symbol_layout(1), {"lanes": 1})
    with pytest.raises(ValueError, match="refers to key 2"):
        pack(data.ArrayLayout(3, 2), [1, 2, 3])


def test_layouts_the_fast_path_does_not_plan_go_through_amaranth():
    class Kind(enum.Enum, shape=2):
        A = 1
        B = 2
    layout = data.StructLayout({"kind": Kind, "n": 3})
    assert pack(layout, {"kind": Kind.B, "n": 5}) == 2 | 5 << 2
    assert unpack(layout, 2 | 5 << 2)["n"] == 5


@settings(max_examples=200, deadline=None)
@given(codec=st.integers(0, 3), table=st.booleans(), bank=st.integers(0, 1),
       last=st.booleans(), stream=st.integers(0, 15), count=st.integers(0, 4095),
       bits=st.integers(0, 2047))
def test_flit_header_layout_is_the_golden_header(**fields):
    """The RTL's header layout packs and unpacks a header exactly as the golden
    FlitHeader does (both from HEADER_FIELDS)."""
    word = int.from_bytes(FlitHeader(**fields).pack(), "big")
    layout = flit_header_layout()
    assert layout.size == 32
    assert pack(layout, fields) == word
    assert unpack(layout, word) == {name: int(value) for name, value in fields.items()}
