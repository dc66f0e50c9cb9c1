"""Link codecs: the flit format finds a codec through its :class:`LinkCodec` alone.

A made-up codec, kept only here, crosses the golden link (tables in band, coded and raw
flits, every stream) with nothing added but its adapter and one registration; and the
registry refuses what the flit header cannot tell apart."""

from dataclasses import dataclass

import numpy as np
import pytest

from linkcodec.golden.bitstream import BitstreamError
from linkcodec.golden.link import (FlitError, FlitHeader, LinkFormat, flits_from_frames,
                                   frames_from_flits, table_from_image, table_image)
from linkcodec.golden.link_codec import (MAX_CODEC_ID, LinkCodec, codec_name, link_codec,
                                         link_codecs, register_link_codec,
                                         unregister_link_codec)


@dataclass(frozen=True)
class NibbleKey:
    """The made-up codec's table: a byte XORed into every symbol before it is coded."""
    key: int


class NibbleCodec(LinkCodec):
    """Symbols XOR ``key`` below 15 take 4 bits; the others take the escape nibble 15
    and their 8 bits."""

    name, codec_id, table_type = "nibble", 3, NibbleKey

    def lengths(self, tables, symbols):
        return np.where((np.asarray(symbols) ^ tables.key) < 15, 4, 12)

    def encode(self, tables, symbols):
        bits = []
        for value in (np.asarray(symbols, dtype=np.int64) ^ tables.key):
            nibbles = [int(value)] if value < 15 else [15, int(value) >> 4, int(value) & 15]
            bits += [(nibble >> shift) & 1 for nibble in nibbles for shift in (3, 2, 1, 0)]
        return np.packbits(np.array(bits, dtype=np.uint8)).tobytes(), len(bits)

    def decode(self, tables, body, nbits, count):
        bits = np.unpackbits(np.frombuffer(bytes(body), dtype=np.uint8))[:nbits]
        out, at = [], 0

        def nibble():
            nonlocal at
            if at + 4 > nbits:
                raise BitstreamError(f"a code runs past bit {nbits}", bit=at)
            value = int(bits[at]) << 3 | int(bits[at + 1]) << 2 | int(bits[at + 2]) << 1 \
                | int(bits[at + 3])
            at += 4
            return value

        while at < nbits:
            first = nibble()
            out.append(first if first < 15 else nibble() << 4 | nibble())
        return np.array(out, dtype=np.uint8) ^ tables.key

    def image(self, tables):
        return bytes([tables.key])

    def image_bytes(self):
        return 1

    def from_image(self, image):
        return NibbleKey(image[0])


@pytest.fixture
def nibble():
    """The made-up codec in the exponent remap's place (the header's 2-bit codec field
    holds three codecs, all taken)."""
    exponent = link_codec("exponent")
    unregister_link_codec("exponent")
    try:
        yield register_link_codec(NibbleCodec())
    finally:
        if "nibble" in link_codecs():
            unregister_link_codec("nibble")
        register_link_codec(exponent)


def test_the_package_codecs_are_registered_by_header_value():
    assert link_codecs() == ("qlc", "huffman", "exponent")
    assert [link_codec(name).codec_id for name in link_codecs()] == [1, 2, 3]
    assert [codec_name(value) for value in range(4)] == ["raw", "qlc", "huffman", "exponent"]


def test_a_made_up_codec_crosses_the_golden_link(nibble):
    """Its tables in band and its flits coded where that carries more symbols than raw;
    the reader gives every stream's frames back exactly and names a bad body's bit."""
    fmt = LinkFormat("nibble", streams=2, flit_bytes=64)
    assert fmt.codec_id == 3 and codec_name(3) == "nibble"
    rng = np.random.default_rng(5)
    small = (rng.integers(0, 15, 300) ^ 0x5A).astype(np.uint8)   # 4 bits a symbol
    large = rng.integers(0, 256, 120).astype(np.uint8)            # mostly escapes
    frames = [(0, small), (1, large), (0, small[:0]), (1, small[:7])]
    flits = flits_from_frames(fmt, frames, tables=NibbleKey(0x5A))
    headers = [FlitHeader.unpack(flit) for flit in flits]
    assert headers[0].table and headers[0].codec == 3
    assert any(not h.table and h.codec == 3 for h in headers)      # coded
    assert any(not h.table and h.codec == 0 and h.count for h in headers)   # raw
    back = frames_from_flits(fmt, flits)
    assert [(stream, list(symbols)) for stream, symbols in back] \
        == [(stream, list(symbols)) for stream, symbols in frames]
    assert table_from_image("nibble", table_image("nibble", NibbleKey(7))) == NibbleKey(7)
    # an escape nibble and one nibble of its symbol's two: bad from bit 8
    bad = fmt.flit(FlitHeader(codec=3, table=False, bank=headers[0].bank, last=True, stream=0,
                              count=1, bits=8), bytes([0xF0]))
    with pytest.raises(FlitError, match="body") as caught:
        frames_from_flits(fmt, flits[:1] + [bad])
    assert (caught.value.field, caught.value.bit) == ("body", 8)


def test_the_registry_refuses_what_the_header_cannot_tell_apart():
    """A taken name, a taken header value, and a header value at and past the field's
    ends (0 is raw; MAX_CODEC_ID is the last the 2-bit field holds)."""
    class Other(NibbleCodec):
        name = "other"

    for codec_id, message in [(0, r"codec_id must be 1\.\.3"),
                              (MAX_CODEC_ID + 1, r"codec_id must be 1\.\.3"),
                              (MAX_CODEC_ID, "codec_id 3 is 'exponent''s")]:
        made_up = Other()
        made_up.codec_id = codec_id
        with pytest.raises(ValueError, match=message):
            register_link_codec(made_up)
    made_up = Other()
    made_up.name = "qlc"
    with pytest.raises(ValueError, match="'qlc' is already registered"):
        register_link_codec(made_up)
    with pytest.raises(ValueError, match="codec must be one of 'qlc', 'huffman', 'exponent'"):
        LinkFormat("other")
    assert codec_name(MAX_CODEC_ID + 1) == "unassigned codec 4"


def test_the_link_hardware_finds_each_codec_through_its_adapter():
    """Each codec the hardware carries has a golden link codec of the same name; the
    link's parameters refuse a codec with no adapter, naming those it has, and a second
    adapter of a name is refused."""
    from linkcodec.rtl.huffman import HuffmanLinkHardware
    from linkcodec.rtl.link import LinkRx, LinkTx
    from linkcodec.rtl.link_codec import (link_hardware, link_hardware_codecs,
                                          register_link_hardware)

    assert set(link_hardware_codecs()) <= set(link_codecs())
    assert link_hardware("exponent").two_streams and not link_hardware("qlc").two_streams
    assert link_hardware("qlc").tx_loader_block == "codes"
    for block in (LinkTx, LinkRx):
        with pytest.raises(ValueError, match="codec must be one of 'qlc', 'huffman', "
                                             "'exponent' in hardware, not 'nibble'"):
            block(codec="nibble")
    with pytest.raises(ValueError, match="'huffman' is already registered"):
        register_link_hardware(HuffmanLinkHardware())


def test_the_registry_mechanism():
    """The one mechanism behind every registry: the package's own registered once, at the
    first lookup; an empty or taken name refused; an unknown one refused naming the
    known; a removed name unknown again."""
    from linkcodec.golden.registry import Registry

    calls = []
    things = Registry("thing", unknown="no thing {name!r}; there are {known}",
                      builtin=lambda: calls.append(1) or things.add("own", 1))
    assert calls == [] and things.names() == ("own",) and calls == [1]
    assert things.add("other", 2) == 2 and things.lookup("other") == 2 and calls == [1]
    for name, message in [("", "a thing needs a name, not ''"),
                          ("own", "a thing called 'own' is already registered")]:
        with pytest.raises(ValueError, match=message):
            things.add(name, 3)
    things.remove("other")
    with pytest.raises(ValueError, match="no thing 'other'; there are 'own'"):
        things.lookup("other")
