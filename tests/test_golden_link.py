"""The link's flits (golden/link.py): exact round trips, raw bypass, tables in band, and
the error of every bad flit."""

import numpy as np
import pytest

from linkcodec.bundled import bundled_bf16_files, bundled_files
from linkcodec.golden.exponent import table_from_histogram
from linkcodec.golden.huffman import HuffmanCodebook
from linkcodec.golden.link import (
    HEADER_BYTES,
    HEADER_FIELDS,
    FlitError,
    FlitHeader,
    FlitReader,
    FlitWriter,
    LinkFormat,
    canonical_qlc,
    deal,
    flits_from_frames,
    frames_from_flits,
    link_stats,
    reheadered,
    seal,
    table_from_image,
    table_image,
)
from linkcodec.golden.qlc import QlcCode, QlcLayout


def _sample(kind, codec):
    """(earlier steps, step 3) of one tensor class of the bundled sample."""
    files = bundled_bf16_files(kind=kind) if codec == "exponent" else bundled_files(kind=kind)
    frames = [np.load(path).reshape(-1) for path in files]
    earlier = [f for f, p in zip(frames, files) if not p.stem.endswith("_s3")]
    return earlier, [f for f, p in zip(frames, files) if p.stem.endswith("_s3")]


def _tables(codec, earlier):
    joined = np.concatenate(earlier)
    if codec == "exponent":
        return table_from_histogram(joined)
    counts = np.bincount(joined, minlength=256)
    return QlcCode.from_pmf(counts) if codec == "qlc" else HuffmanCodebook.from_pmf(counts)


def _same(frames, back):
    """``back`` (``(stream, symbols)`` from the reader) holds ``frames`` (arrays on stream
    0, or ``(stream, symbols)``), each stream's in order."""
    frames = [f if isinstance(f, tuple) else (0, f) for f in frames]
    assert len(frames) == len(back)
    for stream in {s for s, _ in frames}:
        mine = [f for s, f in frames if s == stream]
        got = [f for s, f in back if s == stream]
        assert len(mine) == len(got)
        for frame, symbols in zip(mine, got):
            np.testing.assert_array_equal(np.asarray(frame).reshape(-1), symbols)


@pytest.mark.parametrize("codec", ["qlc", "huffman", "exponent"])
@pytest.mark.parametrize("streams,flit_bytes", [(1, 256), (4, 64), (16, 128)])
def test_round_trip_on_the_sample(codec, streams, flit_bytes):
    earlier, later = _sample("ffn1_act", codec)
    tables = _tables(codec, earlier)
    frames = deal([later[0][:0], later[0][:1], later[0][:5000], later[1], later[0][5000:]],
                  streams)
    fmt = LinkFormat(codec, streams=streams, flit_bytes=flit_bytes)
    flits = flits_from_frames(fmt, frames, tables)
    _same(frames, frames_from_flits(fmt, flits))
    headers = [FlitHeader.unpack(flit) for flit in flits]
    data = [h for h in headers if not h.table]
    assert sum(h.last for h in data) == len(frames)
    assert {h.stream for h in data} == {s for s, _ in frames}
    assert any(h.codec == fmt.codec_id for h in data)       # coded flits, not only raw


@pytest.mark.parametrize("codec", ["qlc", "huffman", "exponent"])
def test_overhead_on_the_sample(codec):
    """Step 3 of every class with the tables of steps 0-2: over the whole sample the flits
    cost at most 1.04 x the codec's own frame bytes (headers, CRC fields, the end of each
    frame's last flit and the table flits), and so does each class of large tensors
    (ffn2, 96 KB a tensor). The small ffn1 tensors (24 KB) cost up to 1.047 x: 8 bytes
    a 256-byte flit are fixed (3.1 %) and each frame leaves part of its last flit
    empty (``linkcodec bench --link`` prints every figure). No class takes more flits
    than raw."""
    link = coded = 0
    for kind in ("ffn1_act", "ffn2_act", "ffn1_grad", "ffn2_grad"):
        earlier, later = _sample(kind, codec)
        tables = _tables(codec, earlier)
        fmt = LinkFormat(codec, streams=4)
        flits = flits_from_frames(fmt, deal(later, 4), tables)
        stats = link_stats(fmt, flits, later, tables)
        if kind.startswith("ffn2"):
            assert stats.link_bytes <= 1.04 * stats.coded_bytes, (kind, stats)
        assert stats.link_bytes <= 1.05 * stats.coded_bytes, (kind, stats)
        raw = sum(fmt.raw_flits(f.size) for f in later) + stats.table_flits
        assert stats.flits <= raw
        link, coded = link + stats.link_bytes, coded + stats.coded_bytes
    assert link <= 1.04 * coded


@pytest.mark.parametrize("codec", ["qlc", "huffman", "exponent"])
def test_incompressible_data_goes_raw(codec):
    rng = np.random.default_rng(7)
    earlier, _ = _sample("ffn2_act", codec)
    tables = _tables(codec, earlier)
    dtype = np.uint16 if codec == "exponent" else np.uint8
    frame = rng.integers(0, np.iinfo(dtype).max + 1, 60000, dtype=dtype)
    fmt = LinkFormat(codec)
    flits = flits_from_frames(fmt, [frame], tables)
    _same([frame], frames_from_flits(fmt, flits))
    stats = link_stats(fmt, flits, [frame], tables)
    assert stats.link_bytes <= 1.04 * stats.raw_bytes
    assert stats.flits - stats.table_flits == fmt.raw_flits(frame.size)


def test_a_flit_is_coded_only_when_it_carries_more_than_raw():
    """Base QLC: symbols 0..39 take 6 bits, so 1,984 body bits hold 330 of them coded
    against 248 raw; symbols 88..255 take 11 bits, 180 coded: raw wins."""
    code = QlcCode.base()
    fmt = LinkFormat("qlc")
    assert fmt.body_bits == 1984 and fmt.raw_symbols == 248
    writer = FlitWriter(fmt)
    writer.load(code)
    short = writer.frame(np.zeros(331, dtype=np.uint8))
    assert [FlitHeader.unpack(f).count for f in short] == [330, 1]
    assert FlitHeader.unpack(short[0]).bits == 1980
    assert FlitHeader.unpack(short[0]).codec == fmt.codec_id
    long = writer.frame(np.full(300, 200, dtype=np.uint8))
    headers = [FlitHeader.unpack(f) for f in long]
    assert [(h.codec, h.count) for h in headers] == [(0, 248), (0, 52)]


def test_raw_until_a_table_is_loaded_and_empty_frames():
    fmt = LinkFormat("huffman", streams=2)
    frames = [np.zeros(0, dtype=np.uint8), np.arange(256, dtype=np.uint8),
              np.zeros(0, dtype=np.uint8)]
    flits = flits_from_frames(fmt, frames)
    assert [FlitHeader.unpack(f).codec for f in flits] == [0, 0, 0, 0]
    assert [FlitHeader.unpack(f).count for f in flits] == [0, 248, 8, 0]
    _same(frames, frames_from_flits(fmt, flits))


def test_tables_switch_banks_between_frames():
    fmt = LinkFormat("qlc")
    rng = np.random.default_rng(3)
    first = QlcCode.base()
    second = QlcCode.from_pmf(np.bincount(rng.integers(0, 8, 1000), minlength=256) + 1)
    writer = FlitWriter(fmt)
    flits = writer.load(first)
    frame = np.zeros(700, dtype=np.uint8)
    flits += writer.frame(frame)
    flits += writer.load(second)               # into the idle bank while bank 1 is used
    flits += writer.frame(frame)
    flits += writer.load(first)                # two loads with no frame between: each
    flits += writer.load(second)               # into the other bank, as LinkTx's
    flits += writer.frame(frame)
    headers = [FlitHeader.unpack(f) for f in flits]
    # The first table goes into bank 1, as LinkTx loads it (bank 0 holds the tables of
    # its elaboration, which its first flits name).
    assert [(h.table, h.bank) for h in headers] == [
        (True, 1), (False, 1), (False, 1), (False, 1), (True, 0), (False, 0), (False, 0),
        (True, 1), (True, 0), (False, 0), (False, 0)]
    _same([frame, frame, frame], frames_from_flits(fmt, flits))


def test_a_writer_and_a_reader_may_start_with_tables_in_both_banks():
    """``FlitWriter(fmt, tables)`` starts as LinkTx does: its flits name bank 0, which
    holds ``tables``, and a reader that holds them too reads them with no table flit."""
    fmt = LinkFormat("qlc")
    tables = QlcCode.base()
    frame = np.arange(700, dtype=np.uint64).astype(np.uint8) % 8
    writer = FlitWriter(fmt, tables)
    flits = writer.frame(frame)
    headers = [FlitHeader.unpack(f) for f in flits]
    assert [(h.table, h.bank) for h in headers] == [(False, 0)] * len(flits)
    assert headers[0].codec == 1                    # coded with the tables held
    reader = FlitReader(fmt, tables)
    assert [reader.read(flit) for flit in flits][-1][0] == 0
    with pytest.raises(FlitError, match="bank 0, which holds no complete table"):
        FlitReader(fmt).read(flits[0])
    assert [FlitHeader.unpack(f).bank for f in writer.load(tables)] == [1]


def test_each_flit_decodes_on_its_own():
    """A lost flit costs its own symbols and no others."""
    earlier, later = _sample("ffn1_act", "huffman")
    tables = _tables("huffman", earlier)
    fmt = LinkFormat("huffman", streams=3)
    flits = flits_from_frames(fmt, [later[0]], tables)
    reader = FlitReader(fmt)
    reader.read(flits[0])                                  # the table
    position = 0
    for flit in flits[1:]:
        symbols = reader.symbols(flit)
        np.testing.assert_array_equal(symbols, later[0][position:position + symbols.size])
        position += symbols.size
    assert position == later[0].size
    # A spoilt flit (its first body byte flipped) is wrong or refused; the flits after it
    # decode as before. (Spotting every spoilt flit is the CRC's job, not the codes'.)
    broken = bytearray(flits[3])
    broken[HEADER_BYTES] ^= 0xFF
    start = sum(_count_of(f) for f in flits[1:4])
    try:
        spoilt = reader.symbols(bytes(broken))
    except FlitError:
        pass
    else:
        assert not np.array_equal(spoilt, later[0][start - _count_of(flits[3]):start])
    np.testing.assert_array_equal(reader.symbols(flits[4]),
                                  later[0][start:start + _count_of(flits[4])])


def test_canonical_qlc_keeps_every_length_and_tables_travel_exactly():
    rng = np.random.default_rng(5)
    code = QlcCode.from_pmf(rng.random(256))
    canonical = canonical_qlc(code)
    np.testing.assert_array_equal(canonical.length_of, code.length_of)
    book = HuffmanCodebook.from_pmf(rng.random(256))
    table = table_from_histogram(rng.integers(0, 1 << 16, 5000, dtype=np.uint16))
    for codec, tables, size in (("qlc", code, 112), ("huffman", book, 128),
                                ("exponent", table, 7)):
        image = table_image(codec, tables)
        assert len(image) == size
        back = table_from_image(codec, image)
        if codec == "qlc":
            np.testing.assert_array_equal(back.symbol_to_rank, canonical.symbol_to_rank)
        elif codec == "huffman":
            np.testing.assert_array_equal(back.codes, book.codes)
        else:
            assert back == table


def test_tables_the_link_cannot_carry():
    lengths = np.full(256, 8)
    with pytest.raises(ValueError, match="not canonical"):
        table_image("huffman", HuffmanCodebook(lengths, np.arange(256)[::-1]))
    skewed = 0.5 ** np.arange(256)
    with pytest.raises(ValueError, match="at most 15 bits"):
        table_image("huffman", HuffmanCodebook.from_pmf(skewed, max_length=16))
    assert len(table_image("huffman", HuffmanCodebook.from_pmf(skewed, max_length=15))) == 128
    with pytest.raises(TypeError, match="QlcCode"):
        table_image("qlc", HuffmanCodebook(lengths))
    with pytest.raises(ValueError, match="codec must be"):
        LinkFormat("zip")
    with pytest.raises(ValueError, match="streams must be 1..16"):
        LinkFormat("qlc", streams=17)
    with pytest.raises(ValueError, match="flit_bytes"):
        LinkFormat("qlc", flit_bytes=512)
    LinkFormat("qlc", streams=16)


def _flits():
    fmt = LinkFormat("qlc", streams=2)
    frame = np.arange(600, dtype=np.uint8) % 40
    return fmt, flits_from_frames(fmt, [frame], QlcCode.base())


def test_reheadered_changes_the_header_alone_and_seals():
    """The fields asked for change, every other header field and byte stays (a stream
    number too), and the CRC field is the new flit's."""
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64, sequence="stream")
    flit = FlitWriter(fmt).frame(np.arange(5, dtype=np.uint8), 1)[0]
    changed = reheadered(flit, count=7, last=False)
    header = FlitHeader.unpack(changed)
    assert (header.count, header.last) == (7, False)
    assert header == FlitHeader(**{**FlitHeader.unpack(flit).__dict__, "count": 7,
                                   "last": False})
    end = fmt.flit_bytes - fmt.crc_bytes
    assert changed[HEADER_BYTES:end] == flit[HEADER_BYTES:end]      # number included
    assert changed == seal(changed) and changed[end:] != flit[end:]


def _bits_of(flit):
    return FlitHeader.unpack(flit).bits


def _count_of(flit):
    return FlitHeader.unpack(flit).count


# (flit to spoil: 0 is the table flit, 1 the first data flit; how; the field named)
BAD_FLITS = [
    (0, lambda f: f[:-1], "size"),
    (1, lambda f: f[:-1] + b"\x01", "crc"),
    (1, lambda f: reheadered(f, bits=1985), "bits"),
    (1, lambda f: reheadered(f, bits=_bits_of(f) - 1), "pad"),
    (1, lambda f: reheadered(f, stream=2), "stream"),
    (1, lambda f: reheadered(f, codec=2), "codec"),
    (1, lambda f: reheadered(f, bank=0), "bank"),
    (1, lambda f: reheadered(f, count=_count_of(f) + 1), "count"),
    (1, lambda f: reheadered(f, count=_count_of(f) - 1), "count"),
    (0, lambda f: reheadered(f, count=1), "count"),
    (0, lambda f: reheadered(f, codec=2), "codec"),
    (0, lambda f: reheadered(f, bits=8 * 113), "table"),
    (0, lambda f: reheadered(f, bits=8 * 112 + 4), "bits"),
]


@pytest.mark.parametrize("index,fault,field", BAD_FLITS)
def test_bad_flits_are_named(index, fault, field):
    fmt, flits = _flits()
    flits[index] = fault(flits[index])
    with pytest.raises(FlitError) as error:
        frames_from_flits(fmt, flits)
    assert error.value.field == field
    assert error.value.flit == index
    assert str(error.value).startswith(f"flit {index}: ")


def test_bits_at_the_body_boundary():
    """``bits`` = the body's bits is a flit a writer makes; one more is refused."""
    fmt = LinkFormat("qlc")
    writer = FlitWriter(fmt)
    flits = writer.load(QlcCode(QlcLayout.base(), np.arange(256)))
    frame = np.full(248, 200, dtype=np.uint8)
    data = writer.frame(frame)                       # raw: 248 bytes = 1984 bits
    assert FlitHeader.unpack(data[0]).bits == fmt.body_bits
    _same([frame], frames_from_flits(fmt, flits + data))
    with pytest.raises(FlitError) as error:
        frames_from_flits(fmt, flits + [reheadered(data[0], bits=fmt.body_bits + 1)])
    assert error.value.field == "bits"


def test_an_invalid_code_names_its_body_bit():
    """Base QLC has no empty area, so make one: layout with area 0 half full."""
    layout = QlcLayout((3, 3, 3, 3, 3, 4, 5, 8), (4, 8, 8, 8, 8, 16, 32, 172))
    fmt = LinkFormat("qlc")
    writer = FlitWriter(fmt)
    flits = writer.load(QlcCode(layout, np.arange(256)))
    flits += writer.frame(np.zeros(400, dtype=np.uint8))
    body = bytearray(flits[1])
    # Code 10 of 6 bits (000 101: area 0, suffix 5 >= size 4) is invalid.
    body[HEADER_BYTES] = 0b00010100
    with pytest.raises(FlitError) as error:
        frames_from_flits(fmt, [flits[0], seal(body)] + flits[2:])
    assert error.value.field == "body" and error.value.bit == 0


def test_flits_that_end_inside_a_frame():
    fmt, flits = _flits()
    with pytest.raises(FlitError) as error:
        frames_from_flits(fmt, flits[:-1])
    assert error.value.field == "end"


def test_raw_flit_with_wrong_bits_and_a_bad_table_image():
    fmt = LinkFormat("exponent")
    frame = np.arange(10, dtype=np.uint16)
    flits = flits_from_frames(fmt, [frame])
    with pytest.raises(FlitError, match="raw") as error:
        frames_from_flits(fmt, [reheadered(flits[0], count=9)])
    assert error.value.field == "bits"
    table = table_image("exponent", table_from_histogram(np.arange(5000, dtype=np.uint16)))
    repeated = table[:6] + table[:1]                    # an exponent twice
    piece = FlitHeader(codec=fmt.codec_id, table=True, bank=0, last=True, stream=0,
                       count=0, bits=56)
    with pytest.raises(FlitError, match="holds no exponent table") as error:
        frames_from_flits(fmt, [fmt.flit(piece, repeated)])
    assert error.value.field == "table"


def test_header_fields_fill_the_header_and_pack_where_bitstream_md_says():
    """HEADER_FIELDS is the one field table: its widths fill the 4 bytes, and each field
    lands at its documented bits (codec 31-30 ... bits 10-0)."""
    assert sum(width for _, width in HEADER_FIELDS) == 8 * HEADER_BYTES
    ones = {"codec": 3, "table": True, "bank": 1, "last": True, "stream": 15,
            "count": 4095, "bits": 2047}
    places = {"codec": (30, 2), "table": (29, 1), "bank": (28, 1), "last": (27, 1),
              "stream": (23, 4), "count": (11, 12), "bits": (0, 11)}
    for name, (low, width) in places.items():
        fields = {key: 0 for key in ones} | {name: ones[name]}
        word = int.from_bytes(FlitHeader(**fields).pack(), "big")
        assert word == ((1 << width) - 1) << low, name
        assert FlitHeader.unpack(word.to_bytes(4, "big")) == FlitHeader(**fields)


@pytest.mark.parametrize("name,top", [("codec", 3), ("stream", 15), ("count", 4095),
                                      ("bits", 2047), ("bank", 1)])
def test_a_header_field_past_its_bits_is_refused_by_name(name, top):
    """The last value a field holds packs; the first past it is refused, naming the field
    and its bits (it would spill into the next field)."""
    fields = {"codec": 1, "table": False, "bank": 0, "last": False, "stream": 0,
              "count": 0, "bits": 0}
    assert FlitHeader.unpack(FlitHeader(**fields | {name: top}).pack()) \
        == FlitHeader(**fields | {name: top})
    with pytest.raises(ValueError, match=rf"header field '{name}' \(bits \d+-\d+\) holds "
                                         rf"0..{top}, not {top + 1}"):
        FlitHeader(**fields | {name: top + 1}).pack()
