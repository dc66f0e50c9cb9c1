"""The link's hardware (rtl/link/) against golden/link.py: LinkTx driving LinkRx under
Verilator, LinkTx's flits byte for byte, LinkRx on bad flits, parameters."""

import json
import re

import numpy as np
import pytest

from linkcodec.bundled import bundled_bf16_files, bundled_files
from linkcodec.cli import main
from linkcodec.golden.exponent import ExponentTable
from linkcodec.golden.huffman import HuffmanCodebook
from linkcodec.golden.link import (FlitError, FlitHeader, FlitReader, FlitWriter,
                                   LinkFormat, is_status, reheadered, seal,
                                   table_image)
from linkcodec.golden.qlc import QlcCode, QlcLayout
from linkcodec.rtl.link import LinkPair, LinkRx, LinkTx, link_tables
from linkcodec.rtl.blocks.beats import decoder_beats, symbol_beats
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.harness import first_mismatch, run_beats
from linkcodec.sim.link import flits_of_words, link_io, run_link, words_of_flits

FILES = [path for path in bundled_files(kind="ffn1_act", layers=[0])]
BF16_FILES = [path for path in bundled_bf16_files(kind="ffn1_act", layers=[1])]


def _files(codec):
    """The bundled files of the codec's format (bf16 for the exponent codec)."""
    return BF16_FILES if codec == "exponent" else FILES


def sample_tables(codec):
    """The tables ``linkcodec sim link`` fits on the codec's files (so the builds are
    shared)."""
    block = get_block(f"{codec}-encoder")
    arrays = [np.load(path).reshape(-1) for path in _files(codec)]
    tables, _ = block.sim_tables(arrays, {name: None for name in block.sim_options})
    return link_tables(codec, tables)


def link_frames(fmt, rng):
    """Frames of no symbols, one, many flits, incompressible ones, and the boundaries
    of the raw/coded choice: exactly a raw flit of symbols, and one more. For bf16 also
    a frame with one escape in 3,000 values (the last exponent of the table otherwise)
    and one of escapes only."""
    tensor = np.load(_files(fmt.codec)[0]).reshape(-1)
    frames = [tensor[:0], tensor[:1], tensor[:3000]]
    if fmt.codec == "exponent":
        table = sample_tables("exponent")
        one = (table.exponents[-1] << 7 | np.arange(3000) % 256).astype(np.uint16)
        escape = next(e for e in range(256) if e not in table.exponents)
        one[1234] = escape << 7
        frames += [rng.integers(0, 1 << 16, 700, dtype=np.uint16), one,
                   np.full(300, escape << 7, dtype=np.uint16)]
    else:
        frames += [rng.integers(0, 256, 700, dtype=np.uint8)]
    return frames + [tensor[:fmt.raw_symbols], tensor[:fmt.raw_symbols + 1],
                     tensor[5000:7000]]


# The link shapes the round trip and the tables-in-band test share (so do their builds:
# one worker each).
LINK_SHAPES = [
    pytest.param("qlc", 2, 256, 64, marks=pytest.mark.xdist_group("link-qlc")),
    # a table image in 3 table flits (two groups of streams at LinkTx's link side: 5
    # streams in tests/test_link_axi.py)
    pytest.param("huffman", 2, 64, 16, marks=pytest.mark.xdist_group("link-huffman")),
    # bf16: values and escapes in the same flits
    pytest.param("exponent", 2, 128, 32, marks=pytest.mark.xdist_group("link-exponent")),
]


def _slow_for(codec, shapes):
    """``shapes`` with ``codec``'s case under ``-m slow``."""
    return [pytest.param(*shape.values, marks=[*shape.marks, pytest.mark.slow])
            if shape.values[0] == codec else shape for shape in shapes]


# (Huffman under -m slow: test_link_loads_tables_in_band runs the same shape bit-exact,
# LinkTx's flits read back through the golden reader, in 2 minutes less of make test.)
@pytest.mark.parametrize("codec,streams,flit_bytes,link_bytes",
                         _slow_for("huffman", LINK_SHAPES))
def test_link_round_trip(codec, streams, flit_bytes, link_bytes, seed):
    """Bit-exact, in order, every stream, with random idle cycles at the inputs, random
    backpressure at the outputs and a pausing channel; LinkTx's flits are the golden
    writer's, byte for byte."""
    fmt = LinkFormat(codec, streams=streams, flit_bytes=flit_bytes)
    frames = link_frames(fmt, np.random.default_rng(streams))
    result = run_link(frames, codec=codec, streams=streams, flit_bytes=flit_bytes,
                      link_bytes=link_bytes, tables=sample_tables(codec), seed=seed)
    assert result["bit_exact"], (result["seed"], result.get("mismatch"))
    assert result["tx_bit_exact"], result["seed"]
    assert result["raw_flits"] > 0 and result["flits"] > result["raw_flits"] + 1
    assert result["link_bytes"] == result["flits"] * flit_bytes
    assert 0 < result["latency_cycles"] < 4 * fmt.body_bits


# Every codec's streams without retry and with the retry blocks (at the link side, the
# same for every codec, but joined to each codec's streams).
@pytest.mark.parametrize("codec,retry_depth", [
    ("qlc", 0), ("huffman", 0), ("exponent", 0), ("qlc", 16), ("huffman", 16),
    ("exponent", 16),
])
def test_ready_paths_are_as_documented(codec, retry_depth, tmp_path):
    """In every state (no combinational path in the netlist): a ``LinkTx`` stream's
    ``i.ready`` follows nothing (its input stage's skid flag), neither its payload nor
    any output's ``ready``, nor does the table input's; ``LinkRx``'s ``i.ready``
    follows neither ``i.payload`` nor any output's ``ready``."""
    from linkcodec.sim.formal import netlist_paths, stream_ports

    for block in (LinkTx(codec=codec, streams=2, retry_depth=retry_depth),
                  LinkRx(codec=codec, streams=2, retry_depth=retry_depth)):
        inputs, outputs = stream_ports(block)
        found = netlist_paths(block, tmp_path / type(block).__name__,
                              [f"{name}__ready" for name in outputs]
                              + [f"{name}__payload" for name in inputs],
                              [f"{name}__ready" for name in inputs])
        assert found == []


@pytest.mark.parametrize("codec,streams,flit_bytes,link_bytes,tables_in_band", [
    pytest.param("qlc", 2, 256, 64, True, marks=pytest.mark.xdist_group("link-qlc")),
    # the build test_sim_link_fixed_tables makes (the same tables and name)
    pytest.param("qlc", 2, 256, 64, False, marks=pytest.mark.xdist_group("link-qlc-fixed")),
    pytest.param("exponent", 2, 128, 32, True,
                 marks=pytest.mark.xdist_group("link-exponent")),
])
def test_link_survives_a_reset_in_mid_stream(codec, streams, flit_bytes, link_bytes,
                                             tables_in_band, seed):
    shape = {"flit_bytes": flit_bytes, "link_bytes": link_bytes}
    pair = LinkPair(codec=codec, streams=streams, tables=sample_tables(codec),
                    tables_in_band=tables_in_band, **shape)
    fmt = pair.tx.format
    rng = np.random.default_rng(9)
    frames = [(index % streams, frame) for index, frame in enumerate(link_frames(fmt, rng))]
    inputs, expected = link_io(fmt, frames)
    files = _files(codec)
    early, _ = link_io(fmt, [(0, np.load(files[1]).reshape(-1)[:5000]),
                             (1, np.load(files[2]).reshape(-1)[:5000])])
    fixed = "" if tables_in_band else "_fixed"
    result = run_beats(pair, inputs=inputs, expected=expected, idle="random",
                       stall="random",
                       name=f"link_pair_{codec}_s{streams}_f{flit_bytes}_w{link_bytes}{fixed}",
                       config={"i_config": [{"addr": 0, "data": 1}]}, seed=seed,
                       before_reset=(early, 1500))
    assert result["bit_exact"], (result["seed"], first_mismatch(result))
    assert sum(result["taken_before_reset"].values()) > 0


@pytest.mark.xdist_group("link-rx-qlc")
def test_rx_names_bad_flits(seed):
    """Flits for a stream the link lacks are dropped; a flit with an invalid code, or
    fewer symbols than its header says, ends its frame with the error beat; the flits
    after decode as before. (The table flits in front load the code the RX was built
    with, in two pieces.)"""
    layout = QlcLayout((3, 3, 3, 3, 3, 4, 5, 8), (4, 8, 8, 8, 8, 16, 32, 172))
    code = QlcCode(layout, np.arange(256))
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64)
    writer = FlitWriter(fmt)
    table = writer.load(code)
    assert len(table) == 2
    good = np.zeros(70, dtype=np.uint8)     # 70 codes of 6 bits: one coded flit
    [flit] = writer.frame(good, 1)
    assert FlitHeader.unpack(flit).codec == fmt.codec_id
    header = FlitHeader.unpack(flit)
    invalid = bytearray(flit)
    invalid[4] = 0b00010100                             # 000 101: area 0 holds 4
    short = reheadered(flit, count=header.count + 1)
    elsewhere = reheadered(flit, stream=3)
    # CRC errors: a body bit, the CRC field's last bit, a header bit (the count's lowest:
    # a flit that would decode, 69 symbols of the 70)
    spoilt = [bytearray(flit) for _ in range(3)]
    spoilt[0][30] ^= 0x10
    spoilt[1][-1] ^= 0x01
    spoilt[2][2] ^= 0x08
    # Table flits with a CRC error: the image's first piece (dropped: nothing changes),
    # its second (the image is cut short: the bank's flits give the error beat until
    # the table is loaded again).
    spoilt_table = [bytearray(piece) for piece in table]
    for piece in spoilt_table:
        piece[10] ^= 0x40
    flits = table + [flit, seal(invalid), short, elsewhere, flit,
                     *map(bytes, spoilt), flit,
                     bytes(spoilt_table[0]), flit, table[0], bytes(spoilt_table[1]), flit,
                     *table, flit]
    words = words_of_flits(flits, 16)
    miscounted = decoder_beats([good], 1)
    miscounted[-1] = {**miscounted[-1], "error": 1}      # 70 symbols, 71 said
    refused = decoder_beats([good], 1, error_after=0)    # the error beat alone
    expected = (decoder_beats([good], 1)
                + refused                                # the invalid first code
                + miscounted + decoder_beats([good], 1) + 3 * refused
                + decoder_beats([good], 1)
                + decoder_beats([good], 1) + refused + decoder_beats([good], 1))
    rx = LinkRx(codec="qlc", streams=2, flit_bytes=64, link_bytes=16, tables=code,
                stream_numbers=False)
    result = run_beats(rx, inputs={"i": words}, expected={"o_s1": expected},
                       idle="random", stall="random", name="link_rx_qlc_s2_f64_w16",
                       seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


@pytest.mark.xdist_group("link-rx-qlc")
def test_rx_refuses_flits_that_claim_more_than_they_hold(seed):
    """A flit with a good CRC whose header claims more than the flit holds gives the
    error beat alone, as the golden reader refuses it, at the boundaries: a coded flit
    of the body's bits decodes, one bit more is refused; a raw flit of a full body's
    symbols passes, one symbol more is refused, and so is a raw flit whose bits are one
    more or one fewer than its count's. The flits after each decode as before (the build
    of test_rx_names_bad_flits)."""
    layout = QlcLayout((3, 3, 3, 3, 3, 4, 5, 8), (4, 8, 8, 8, 8, 16, 32, 172))
    code = QlcCode(layout, np.arange(256))
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64)
    writer = FlitWriter(fmt)
    table = writer.load(code)
    # Area 6 (ranks 52 to 83) has 8-bit codes: a body's bytes of them fill its bits.
    full = (52 + np.arange(fmt.body_bytes) % 32).astype(np.uint8)
    body, bits = code.encode(full)
    assert bits == fmt.body_bits
    coded = fmt.flit(FlitHeader(codec=fmt.codec_id, table=False, bank=1, last=True,
                                stream=1, count=full.size, bits=bits), body)
    raw = fmt.flit(FlitHeader(codec=0, table=False, bank=1, last=True, stream=1,
                              count=fmt.raw_symbols, bits=8 * fmt.raw_symbols),
                   full[::-1].tobytes())
    five = np.arange(5, dtype=np.uint8)
    [small] = writer.frame(five, 1)
    assert FlitHeader.unpack(small).codec == 0
    bad = [reheadered(coded, bits=fmt.body_bits + 1),
           reheadered(raw, count=fmt.raw_symbols + 1, bits=8 * fmt.raw_symbols + 8),
           reheadered(small, bits=41), reheadered(small, bits=39)]
    reader = FlitReader(fmt)
    for flit in table:
        reader.read(flit)
    assert [reader.symbols(flit).size for flit in (coded, raw, small)] == [
        fmt.body_bytes, fmt.raw_symbols, 5]
    for flit in bad:
        with pytest.raises(FlitError, match="bits"):
            reader.symbols(flit)
    flits = table + [coded, raw]
    expected = decoder_beats([full], 1) + decoder_beats([full[::-1]], 1)
    refused = decoder_beats([five[:0]], 1, error_after=0)     # the error beat alone
    for flit in bad:
        flits += [flit, small]
        expected += refused + decoder_beats([five], 1)
    rx = LinkRx(codec="qlc", streams=2, flit_bytes=64, link_bytes=16, tables=code,
                stream_numbers=False)
    result = run_beats(rx, inputs={"i": words_of_flits(flits, 16)},
                       expected={"o_s1": expected}, idle="random", stall="random",
                       name="link_rx_qlc_s2_f64_w16", seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


@pytest.mark.xdist_group("link-rx-qlc")
@pytest.mark.parametrize("link_bytes", [16, 64])
def test_rx_takes_a_word_a_cycle(link_bytes):
    """As LinkRx's docstring says: with no idle cycle or backpressure it takes a word a
    cycle while the stream has room (two raw flits, for its two slots), and a raw flit's
    first symbol comes out 6 + flit_bytes / link_bytes cycles after the flit's first word
    is taken."""
    fmt = LinkFormat("qlc", streams=1, flit_bytes=256)
    symbols = np.random.default_rng(7).integers(0, 256, 2 * fmt.raw_symbols,
                                                dtype=np.uint8)
    flits = FlitWriter(fmt).frame(symbols, 0)
    assert [FlitHeader.unpack(flit).codec for flit in flits] == [0, 0]      # raw
    rx = LinkRx(codec="qlc", streams=1, flit_bytes=256, link_bytes=link_bytes,
                stream_numbers=False)
    result = run_beats(rx, inputs={"i": words_of_flits(flits, link_bytes)},
                       expected={"o_s0": decoder_beats([symbols], 1)},
                       name=f"link_rx_qlc_s1_f256_w{link_bytes}_raw")
    assert result["bit_exact"], first_mismatch(result)
    taken = result["input_cycles"]["i"]
    assert np.diff(taken).tolist() == [1] * (len(taken) - 1), taken
    first_out = result["output_cycles"]["o_s0"][0]
    assert first_out - taken[0] == 6 + 256 // link_bytes, (taken, first_out)


def _spoil(flit, rng):
    """``flit`` with one bit flipped, or a burst of 2 to 16 (the CRC catches every burst
    up to 16 bits), anywhere in it, its header included."""
    bits = np.unpackbits(np.frombuffer(flit, dtype=np.uint8))
    length = 1 if rng.random() < 0.5 else int(rng.integers(2, 17))
    start = int(rng.integers(0, bits.size - length + 1))
    flips = np.zeros_like(bits)
    flips[start] = flips[start + length - 1] = 1     # a burst: its ends flipped
    flips[start + 1:start + length - 1] = rng.integers(0, 2, max(0, length - 2))
    return np.packbits(bits ^ flips).tobytes()


@pytest.mark.xdist_group("link-rx-qlc")
def test_rx_passes_no_symbol_of_a_flit_that_fails_its_crc(seed):
    """Random frames on both streams, a third of their flits spoilt by a flipped bit or a
    burst: every good flit's symbols come out as sent, every spoilt flit gives the error
    beat instead of any symbol to the stream its spoilt header names (none if that is a
    table flit's, or a stream the link does not have: ``LinkRx``'s docstring), and
    nothing hangs (the build of test_rx_names_bad_flits)."""
    layout = QlcLayout((3, 3, 3, 3, 3, 4, 5, 8), (4, 8, 8, 8, 8, 16, 32, 172))
    code = QlcCode(layout, np.arange(256))
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64)
    writer = FlitWriter(fmt)
    flits = writer.load(code)
    reader = FlitReader(fmt)
    for flit in flits:
        reader.read(flit)
    rng = np.random.default_rng(seed)
    expected = {"o_s0": [], "o_s1": []}
    for index in range(16):
        frame = np.minimum(rng.geometric(0.3, int(rng.integers(1, 300))), 255
                           ).astype(np.uint8)
        for flit in writer.frame(frame, index % 2):
            header = FlitHeader.unpack(flit)
            beats = expected[f"o_s{header.stream}"]
            if rng.random() < 1 / 3:
                spoilt = _spoil(flit, rng)
                with pytest.raises(FlitError, match="CRC"):
                    reader.symbols(spoilt)
                flits.append(spoilt)
                named = FlitHeader.unpack(spoilt)
                if not named.table and named.stream < fmt.streams:
                    expected[f"o_s{named.stream}"] += decoder_beats(
                        [np.zeros(0, np.uint8)], 1, error_after=0)
                continue
            flits.append(flit)
            mine = decoder_beats([reader.symbols(flit)], 1)
            if not header.last:
                mine[-1] = {**mine[-1], "last": 0}
            beats += mine
    rx = LinkRx(codec="qlc", streams=2, flit_bytes=64, link_bytes=16, tables=code,
                stream_numbers=False)
    result = run_beats(rx, inputs={"i": words_of_flits(flits, 16)}, expected=expected,
                       idle="random", stall="random", name="link_rx_qlc_s2_f64_w16",
                       seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


def test_rx_checks_both_halves_of_a_flit_in_one_word(seed):
    """A 256-byte link word holds a whole 256-byte flit, both halves' CRCs computed side
    by side (the shape no pair test runs): good flits decode, and a flit spoilt in
    either half gives the error beat. (Found: the halves were swapped at the compare.)"""
    code = QlcCode(QlcLayout.base(), np.arange(256))
    fmt = LinkFormat("qlc", streams=1, flit_bytes=256)
    writer = FlitWriter(fmt)
    writer.load(code)
    frame = (np.arange(900) % 7).astype(np.uint8)
    flits = writer.frame(frame, 0)
    assert len(flits) >= 3
    reader = FlitReader(fmt)
    for flit in FlitWriter(fmt).load(code):
        reader.read(flit)
    spoilt = []
    for byte in (40, 200):                              # half 0, half 1
        flit = bytearray(flits[0])
        flit[byte] ^= 0x04
        spoilt.append(bytes(flit))
    refused = decoder_beats([np.zeros(0, np.uint8)], 1, error_after=0)
    expected = decoder_beats([frame], 1) + refused + refused
    rx = LinkRx(codec="qlc", streams=1, flit_bytes=256, link_bytes=256, tables=code,
                stream_numbers=False)
    result = run_beats(rx, inputs={"i": words_of_flits(flits + spoilt, 256)},
                       expected={"o_s0": expected}, idle="random", stall="random",
                       name="link_rx_qlc_s1_f256_w256", seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


@pytest.mark.xdist_group("link-rx-qlc")
def test_rx_short_coded_flits_keep_their_banks(seed):
    """Coded flits of one to three words (2 to 5 symbols: legal flits, which LinkTx
    never makes, as it codes a chunk only past a raw flit's symbols), two a bank in turn
    on each of two streams, random idle cycles on the link and bursts of backpressure on
    every output: each flit decodes with the bank it names, as the golden reader reads
    it. (A QLC decoder whose switch ignored the words in its queue, before c7ab305,
    passed this too in the seeds tried: the decoder's own test, tests/test_banks.py, is
    the one that catches it.)"""
    layout = QlcLayout((3, 3, 3, 3, 3, 4, 5, 8), (4, 8, 8, 8, 8, 16, 32, 172))
    code = QlcCode(layout, np.arange(256))               # the build of the tests above
    other = _swapped(code, 0, 1)                         # the codes of 0 and 1 swapped
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64)
    writer = FlitWriter(fmt)
    flits = writer.load(code)                            # bank 0
    flits += writer.frame(np.zeros(70, dtype=np.uint8), 1)   # a coded flit: bank 0 used
    flits += writer.load(other)                          # bank 1
    rng = np.random.default_rng(seed)
    for index in range(400):
        bank = (index // 4) % 2               # each stream: two flits a bank, in turn
        symbols = rng.integers(0, 4, size=int(rng.integers(2, 6))).astype(np.uint8)
        body, bits = (code, other)[bank].encode(symbols)
        header = FlitHeader(codec=fmt.codec_id, table=False, bank=bank, last=True,
                            stream=index % 2, count=symbols.size, bits=bits)
        flits.append(fmt.flit(header, body))
    expected, refused = _rx_expected(fmt, flits)
    assert refused == 0
    rx = LinkRx(codec="qlc", streams=2, flit_bytes=64, link_bytes=16, tables=code,
                stream_numbers=False)
    result = run_beats(rx, inputs={"i": words_of_flits(flits, 16)}, expected=expected,
                       idle="random", stall="bursty", name="link_rx_qlc_s2_f64_w16",
                       seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


@pytest.mark.xdist_group("link-rx-exponent")
def test_rx_names_bad_bf16_flits(seed):
    """A coded bf16 flit that no writer makes ends its frame with the error beat, after
    the values before the fault (each refused by the golden reader too): an escape that
    carries a table exponent, an escape byte past the values' needs, body bits that are
    not whole bytes, fewer than the values take or more than the body holds; the flits
    after decode as before."""
    table = ExponentTable((127, 126, 128, 125, 129, 124, 130))
    fmt = LinkFormat("exponent", streams=2, flit_bytes=64)
    writer = FlitWriter(fmt)
    loads = writer.load(table)
    good = (127 << 7 | np.arange(35) % 128).astype(np.uint16)
    good[20] = 3 << 7                       # an escape: exponent 3, at value 20
    [flit] = writer.frame(good, 1)
    header = FlitHeader.unpack(flit)
    assert header.codec == fmt.codec_id and header.bits == 8 * (49 + 1)

    def with_header(body=flit[4:], **fields):
        return seal(FlitHeader(**{**header.__dict__, **fields}).pack() + bytes(body))

    table_escape = bytearray(flit)
    table_escape[4 + 49] = 127               # the escape byte: a table exponent
    extra = bytearray(flit)
    extra[4 + 50] = 7                        # one escape byte more than the values need
    spoilt = bytearray(flit)
    spoilt[4 + 49] ^= 0x01                   # the escape byte: another exponent
    bad = {
        "table escape": (seal(table_escape), 20),
        "a CRC error": (bytes(spoilt), 0),
        "extra escape": (with_header(extra[4:], bits=header.bits + 8), 35),
        "not whole bytes": (with_header(bits=header.bits - 1), 0),
        "bits below the values'": (with_header(bits=8 * 48), 0),
        "bits past the body": (with_header(bits=8 * fmt.body_bytes + 8), 0),
    }
    flits = list(loads) + [flit]
    expected = decoder_beats([good], 1)
    for name, (bad_flit, good_values) in bad.items():
        reader = FlitReader(fmt)
        for load in loads:
            reader.read(load)
        with pytest.raises(ValueError):
            reader.read(bad_flit)
        flits += [bad_flit, flit]
        expected += decoder_beats([good], 1, error_after=good_values) + decoder_beats(
            [good], 1)
    rx = LinkRx(codec="exponent", streams=2, flit_bytes=64, link_bytes=16, tables=table,
                stream_numbers=False)
    result = run_beats(rx, inputs={"i": words_of_flits(flits, 16)},
                       expected={"o_s1": expected}, idle="random", stall="random",
                       name="link_rx_exponent_s2_f64_w16", seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


@pytest.mark.xdist_group("link-rx-exponent")
def test_rx_holds_a_raw_value_while_a_coded_bf16_flit_follows():
    """A raw bf16 flit's last value, held while the output waits, is not overwritten by
    the coded flit behind it, whose reads start as soon as the raw flit's slot is free.
    (The output held for the first cycles, so the raw flit's second value waits in hand
    while the coded flit is in the other slot.)"""
    table = ExponentTable((127, 126, 128, 125, 129, 124, 130))
    # (2 streams, the second idle: the build of test_rx_names_bad_bf16_flits)
    fmt = LinkFormat("exponent", streams=2, flit_bytes=64)
    writer = FlitWriter(fmt)
    loads = writer.load(table)
    short = np.array([0x3D82, 0x4000 | 5 << 7], dtype=np.uint16)   # 2 values: raw
    coded = (127 << 7 | np.arange(30) % 128).astype(np.uint16)
    flits = list(loads) + writer.frame(short) + writer.frame(coded)
    assert [FlitHeader.unpack(flit).codec for flit in flits[len(loads):]] == [
        0, fmt.codec_id]
    rx = LinkRx(codec="exponent", streams=2, flit_bytes=64, link_bytes=16, tables=table,
                stream_numbers=False)
    result = run_beats(rx, inputs={"i": words_of_flits(flits, 16)},
                       expected={"o_s0": decoder_beats([short, coded], 1), "o_s1": []},
                       idle="none", stall="hold", name="link_rx_exponent_s2_f64_w16")
    assert result["bit_exact"], first_mismatch(result)


def _swapped(tables, first, second):
    """``tables`` with the codes of two symbols swapped: as good on the data, but a flit
    decoded with the wrong one of the two gives other symbols."""
    if isinstance(tables, QlcCode):
        ranks = tables.symbol_to_rank.copy()
        ranks[[first, second]] = ranks[[second, first]]
        return link_tables("qlc", QlcCode(tables.layout, ranks))
    if isinstance(tables, ExponentTable):      # two exponents' codes
        exponents = list(tables.exponents)
        a, b = exponents.index(first), exponents.index(second)
        exponents[a], exponents[b] = exponents[b], exponents[a]
        return ExponentTable(tuple(exponents))
    lengths = tables.lengths.copy()
    lengths[[first, second]] = lengths[[second, first]]
    return link_tables("huffman", HuffmanCodebook(lengths))


def _rx_expected(fmt, flits):
    """Each stream's beats out of LinkRx for ``flits`` as the golden FlitReader reads
    them, and how many coded flits it refused for naming a bank whose table it refused
    (LinkRx gives the error beat for each of those)."""
    reader, beats, refused = FlitReader(fmt), {}, 0
    for flit in flits:
        header = FlitHeader.unpack(flit)
        if header.table:
            try:
                reader.read(flit)
            except FlitError as error:
                assert error.field == "table", error       # the refused table
            continue
        out = beats.setdefault(f"o_s{header.stream}", [])
        try:
            symbols = reader.symbols(flit)
        except FlitError:
            out.append({"symbols": [0], "count": 0, "last": 1, "error": 1})
            refused += 1
            continue
        out += [{"symbols": [int(symbol)], "count": 1,
                 "last": int(header.last and k == symbols.size - 1), "error": 0}
                for k, symbol in enumerate(symbols)]
        if header.last and not symbols.size:
            out.append({"symbols": [0], "count": 0, "last": 1, "error": 0})
    return beats, refused


@pytest.mark.parametrize("codec", [
    # slow: the receiver's loads are in test_link_loads_tables_in_band too (make test
    # took 24 minutes on 2 cores with the QLC case in it)
    pytest.param("qlc", marks=pytest.mark.slow),
    pytest.param("huffman", marks=pytest.mark.slow),
])
def test_rx_loads_tables_in_band(codec, seed):
    """Table flits load each new table into the bank the data flits do not use, as the
    golden writer sends them: the first into bank 0, which every decoder works on at
    power-up (so each is switched off it first), then the banks in turn, a table loaded
    twice into a bank no flit used yet, and a refused table, whose bank's coded flits
    give the error beat until a good table comes. Every stream's symbols, against the
    tables their flits name (each table differs from the others in two symbols' codes);
    random idle cycles on the link and backpressure on every stream."""
    fmt = LinkFormat(codec, streams=3, flit_bytes=256)
    tensor = np.load(FILES[0]).reshape(-1)
    base = sample_tables(codec)
    order = np.argsort(-np.bincount(tensor, minlength=256), kind="stable")
    tables = [_swapped(base, order[0], order[k]) for k in range(1, 8)]
    writer = FlitWriter(fmt)
    flits = []
    cursor = [0]

    def frames(*streams, size=400):
        for stream in streams:
            start = cursor[0] % (tensor.size - size)
            cursor[0] += size
            flits.extend(writer.frame(tensor[start:start + size], stream))

    flits += writer.load(tables[0])                     # bank 0, in use at power-up
    frames(0, 1, 2, 0)
    flits += writer.load(tables[1])                     # bank 1
    frames(1, 2)
    flits += writer.load(tables[2])                     # bank 0: stream 0 is still on it
    frames(0, 1, 2)
    flits += writer.load(tables[3]) + writer.load(tables[4])   # bank 1 twice
    frames(2, 0, 1)
    bad = writer.load(tables[5])                        # bank 0, refused
    assert FlitHeader.unpack(bad[0]).bank == 0
    # QLC: area 0's entry with a reserved bit set; Huffman: symbol 0 without a code
    spoilt = bad[0][4] | 0x02 if codec == "qlc" else bad[0][4] & 0x0F
    bad[0] = seal(bad[0][:4] + bytes([spoilt]) + bad[0][5:])     # its CRC holds
    flits += bad
    frames(0, 2)
    flits += writer.load(tables[6])                     # bank 1: good again
    frames(1, 0, 2)
    expected, refused = _rx_expected(fmt, flits)
    assert refused >= 2
    rx = LinkRx(codec=codec, streams=3, flit_bytes=256, link_bytes=64, tables=base,
                stream_numbers=False)
    result = run_beats(rx, inputs={"i": words_of_flits(flits, 64)}, expected=expected,
                       idle="random", stall="random", name=f"link_rx_{codec}_s3_f256_w64",
                       seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


@pytest.mark.slow     # a build of its own; test_link_round_trip checks each stream's flits
def test_tx_flits_with_one_stream_in_order():
    """With one stream the flits' order is fixed too: LinkTx's words are the golden
    writer's flits, in order, under backpressure."""
    code = sample_tables("qlc")
    # (Status flits after 65,536 idle cycles: none in this run, whose output is compared
    # word for word; test_stream_numbers.py tests them.)
    tx = LinkTx(codec="qlc", streams=1, flit_bytes=128, link_bytes=32, tables=code,
                status_cycles=1 << 16)
    fmt = tx.format
    frames = link_frames(fmt, np.random.default_rng(4))[:4]
    writer = FlitWriter(fmt, code)              # LinkTx's start: ``code`` in both banks
    want = [flit for frame in frames for flit in writer.frame(frame)]
    words = words_of_flits(want, 32)
    result = run_beats(tx, inputs={"i_s0": symbol_beats(frames, 1)}, expected={"o": words},
                       idle="bursty", stall="random", name="link_tx_qlc_s1_f128_w32")
    assert result["bit_exact"], (result["seed"], first_mismatch(result))
    assert flits_of_words(result["output"]["o"], 32, 128) == want


@pytest.mark.xdist_group("link-qlc")
def test_sim_link_command(capsys):
    code = main(["sim", "link", "--codec", "qlc", "--streams", "2", "--json",
                 *map(str, FILES)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    for key in ("flits", "raw_flits", "table_flits", "link_bytes", "raw_bytes",
                "link_bytes_per_symbol", "latency_cycles", "symbols", "cycles",
                "symbols_per_cycle", "bit_exact", "seed"):
        assert key in report, key
    assert report["bit_exact"] and report["tx_bit_exact"]
    assert report["symbols"] == sum(np.load(path).size for path in FILES)
    # (1.04 x the codec's own bytes, the flits were built to, and 0.4 % more: the
    # default link numbers its flits with a byte of each body.)
    assert report["link_bytes"] <= 1.044 * report["coded_bytes"] + 256
    assert report["stream_numbers"]
    assert report["link_bytes_per_symbol"] == round(report["link_bytes"] / report["symbols"], 4)


@pytest.mark.xdist_group("link-qlc-fixed")
def test_sim_link_fixed_tables(capsys, monkeypatch):
    """``--fixed-tables``: both ends hold the code from elaboration and no table goes on
    the link; the pair is bit-exact under idle cycles and backpressure, and LinkTx's
    flits are the golden writer's. (The tables come from all four FILEs, as for the
    other tests of this build; the run takes each file's first 3,000 symbols, which
    test_sim_link_command runs whole with the same data path: the whole run took 160 s.)
    Then the same pair with 25 faults, 5 of each kind, and no numbers
    (``run_link(faults=25, retry=False, stream_numbers=False)``; without that last, the
    flits are numbered, see
    tests/test_stream_numbers.py), LinkRx alone on LinkTx's flits (the build of
    test_rx_with_fixed_tables_drops_table_flits): every flip, burst and garbage flit is
    caught by the CRC, no lost or repeated flit is seen, and LinkRx gives what a
    receiver without retry should and does not hang."""
    from linkcodec.sim import link

    whole = link.run_link
    monkeypatch.setattr(link, "run_link", lambda frames, **options: whole(
        [frame[:3000] for frame in frames], **options))
    code = main(["sim", "link", "--fixed-tables", "--codec", "qlc", "--streams", "2",
                 "--json", *map(str, FILES)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["bit_exact"] and report["tx_bit_exact"], report["seed"]
    assert report["tables_in_band"] is False and report["table_flits"] == 0
    assert report["symbols"] == 3000 * len(FILES) and report["raw_flits"] < report["flits"]
    frames = [np.load(path).reshape(-1)[:3000] for path in FILES]
    report = whole(frames, codec="qlc", streams=2, tables=sample_tables("qlc"),
                   tables_in_band=False, faults=25, retry=False, stream_numbers=False,
                   seed=report["seed"])
    for key in ("faults_injected", "faults_detected", "retries", "hangs", "frames_lost",
                "frames_duplicated", "symbols_wrong"):
        assert key in report, key
    assert report["faults_injected"] == 25 and report["retries"] == 0
    assert all(kind["injected"] == 5 for kind in report["faults"].values())
    for kind in ("flip", "burst", "garbage"):
        assert report["faults"][kind]["detected"] == 5, (report["seed"], report["faults"])
    assert report["faults_detected"] == 15 and report["frames_flagged"] >= 1
    assert report["hangs"] == 0 and report["rx_bit_exact"], report["seed"]
    assert not report["stream_numbers"] and "only_hit_lost" not in report


@pytest.mark.xdist_group("link-qlc-fixed")
def test_rx_with_fixed_tables_drops_table_flits(seed):
    """A LinkRx without tables in band drops table flits (they change nothing: its code
    is the elaboration's) and decodes every data flit with its own code, a flit naming
    bank 1 included (both banks hold it)."""
    code = sample_tables("qlc")
    fmt = LinkFormat("qlc", streams=2, flit_bytes=256)
    tensor = np.load(FILES[0]).reshape(-1)
    writer = FlitWriter(fmt)
    writer.load(code)                                   # bank 0: the elaboration code
    other = FlitWriter(fmt)
    other.load(code)
    stray = other.load(_swapped(code, 0, 1))            # a table flit, for bank 1
    frames = [tensor[:3000], tensor[3000:3400], tensor[:0], tensor[5000:7000]]
    flits = writer.frame(frames[0], 0) + stray + writer.frame(frames[1], 1)
    flits += writer.frame(frames[2], 0)
    renamed = [reheadered(flit, bank=1) for flit in writer.frame(frames[3], 1)]
    flits += stray + renamed
    assert any(FlitHeader.unpack(flit).codec == fmt.codec_id for flit in renamed)
    expected = {"o_s0": decoder_beats([frames[0], frames[2]], 1),
                "o_s1": decoder_beats([frames[1], frames[3]], 1)}
    rx = LinkRx(codec="qlc", streams=2, tables=code, tables_in_band=False,
                stream_numbers=False)
    assert not hasattr(rx, "i_table")
    result = run_beats(rx, inputs={"i": words_of_flits(flits, 64)}, expected=expected,
                       idle="random", stall="random", name="link_rx_qlc_s2_f256_w64_fixed",
                       seed=seed)
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


@pytest.mark.parametrize("options,message", [
    ({"codec": "raw"}, "codec must be one of 'qlc', 'huffman', 'exponent' in hardware"),
    ({"lanes": 2}, "lanes must be 1"),
    ({"streams": 0}, "streams must be 1..16"),
    ({"streams": 17}, "streams must be 1..16"),
    ({"link_bytes": 4}, "link_bytes must be a power of two from 8 to flit_bytes"),
    ({"link_bytes": 512}, "link_bytes must be a power of two from 8 to flit_bytes"),
    ({"link_bytes": 48}, "link_bytes must be a power of two from 8 to flit_bytes"),
    ({"flit_bytes": 512}, "flit_bytes must be one of 64, 128, 256"),
])
def test_parameters(options, message):
    for block in (LinkTx, LinkRx):
        with pytest.raises(ValueError, match=message):
            block(**options)
        with pytest.raises(TypeError, match="tables_in_band must be True or False"):
            block(tables_in_band=1)
    for tables_in_band in (True, False):
        tx = LinkTx(tables_in_band=tables_in_band)
        tx._MustUse__silence = True
        assert ({"i_table", "o_table"} <= set(tx.signature.members)) is tables_in_band
    for block in (LinkTx(streams=16, link_bytes=8), LinkRx(flit_bytes=64, link_bytes=64)):
        block._MustUse__silence = True            # built to be checked, not elaborated


def test_sim_link_refuses_what_the_hardware_lacks(capsys, tmp_path):
    for argv, message in (
            (["--no-retry"], "--no-retry goes with --inject-faults N"),
            (["--inject-faults", "0", "--no-retry"], "1 or more, not 0")):
        assert main(["sim", "link", *argv, str(FILES[0])]) == 2
        assert re.search(message, capsys.readouterr().err), argv
    for option in (["--streams", "2"], ["--fixed-tables"], ["--inject-faults", "3"]):
        assert main(["sim", "qlc-encoder", *option, str(FILES[0])]) == 2
        assert f"{option[0]} is an option of `linkcodec sim link`" in capsys.readouterr().err
    assert main(["generate", "qlc-encoder", "--fixed-tables", "-o", str(tmp_path)]) == 2
    assert "--fixed-tables is an option of link-tx and link-rx only" in capsys.readouterr().err


def generates_clean(kind, options, module, tmp_path, capsys):
    """``linkcodec generate kind *options -o tmp_path`` writes ``module``'s Verilog and
    waivers (and prints their paths), and Verilator's lint passes them."""
    from test_generate import lint

    assert main(["generate", kind, *options, "-o", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / f"{module}.v"),
                                               str(tmp_path / f"{module}.vlt")]
    result = lint([tmp_path / f"{module}.vlt", tmp_path / f"{module}.v"])
    assert result.returncode == 0 and not result.stderr, result.stderr[:2000]


@pytest.mark.parametrize("kind", ["link-tx", "link-rx"])
def test_generate_link_lints_clean(kind, tmp_path, capsys):
    from test_generate import lint

    name = kind.replace("-", "_")
    generates_clean(kind, ["--codec", "huffman", "--streams", "3", "--link-bytes", "32"],
                    f"linkcodec_{name}_huffman_s3_l1_w32", tmp_path, capsys)
    module = f"linkcodec_{name}_qlc_s2_l1_axis"
    generates_clean(kind, ["--axi-stream", "--streams", "2"], module, tmp_path, capsys)
    text = (tmp_path / f"{module}.v").read_text()
    ports = ["s_axis_s1_tdata", "m_axis_tdata"] if kind == "link-tx" else [
        "s_axis_tdata", "m_axis_s1_tuser"]
    assert all(f" {port}" in text for port in ["aclk", "aresetn", *ports])
    # Tables fixed at elaboration: no table ports, and still clean.
    assert main(["generate", kind, "--fixed-tables", "--streams", "2", "-o",
                 str(tmp_path)]) == 0
    module = f"linkcodec_{kind.replace('-', '_')}_qlc_s2_l1_fixed"
    capsys.readouterr()
    result = lint([tmp_path / f"{module}.vlt", tmp_path / f"{module}.v"])
    assert result.returncode == 0 and not result.stderr, result.stderr[:2000]
    text = (tmp_path / f"{module}.v").read_text()
    assert ("i_table__valid" in text) is False and ("o_table__valid" in text) is False
    # bf16 streams (the exponent codec) as AXI ports: 16-bit tdata a stream.
    assert main(["generate", kind, "--codec", "exponent", "--axi-stream", "--streams", "2",
                 "-o", str(tmp_path)]) == 0
    module = f"linkcodec_{kind.replace('-', '_')}_exponent_s2_l1_axis"
    capsys.readouterr()
    result = lint([tmp_path / f"{module}.vlt", tmp_path / f"{module}.v"])
    assert result.returncode == 0 and not result.stderr, result.stderr[:2000]


def test_input_ready_does_not_follow_payload_or_output_ready():
    """Neither LinkRx's ``i.ready`` nor LinkTx's ``i_sK.ready`` depends on its input's
    payload or on any output's ``ready`` in the same cycle (Amaranth's simulator): with
    words and beats offered and flits flowing, each output's ``ready`` high or low, and
    any payload, reads the same ``ready``."""
    from amaranth.sim import Simulator

    rng = np.random.default_rng(3)
    followed_payload = {}
    for block in (LinkTx(codec="qlc", streams=2, flit_bytes=64, link_bytes=16),
                  LinkRx(codec="qlc", streams=2, flit_bytes=64, link_bytes=16)):
        inputs = [getattr(block, name) for name in block.signature.members
                  if name.startswith("i")]
        outputs = [getattr(block, name) for name in block.signature.members
                   if name.startswith("o")]

        def payload(port, full):
            layout = port.payload.shape()
            if "symbols" in layout.members:        # a symbol beat, inside a frame
                return layout.const({"symbols": [int(rng.integers(0, 256))],
                                     "count": int(full), "last": 0}).as_bits()
            return int(rng.integers(0, 1 << 62)) if full else 0

        by_ready, by_payload = [], []

        async def bench(ctx):
            for cycle in range(400):
                seen = {}
                for trial in range(4):
                    for port in inputs:
                        ctx.set(port.valid, 1)
                        ctx.set(port.payload.as_value(), payload(port, trial >> 1))
                    for port in outputs:
                        ctx.set(port.ready, trial & 1)
                    seen[trial] = tuple(ctx.get(port.ready) for port in inputs)
                # the same payload, output ready low and high
                by_ready.append(seen[0] != seen[1] or seen[2] != seen[3])
                by_payload.append(seen[0] != seen[2] or seen[1] != seen[3])
                for port in outputs:
                    ctx.set(port.ready, int(rng.random() < 0.7))
                await ctx.tick()

        sim = Simulator(block)
        sim.add_clock(1e-8)
        sim.add_testbench(bench)
        sim.run()
        name = type(block).__name__
        assert not any(by_ready), f"{name}: i.ready followed an output's ready"
        followed_payload[name] = any(by_payload)
    assert followed_payload == {"LinkTx": False, "LinkRx": False}


def _image_beats(image, *, abort_after=None):
    beats = [{"data": byte, "last": int(k == len(image) - 1), "abort": 0}
             for k, byte in enumerate(image)]
    if abort_after is not None:
        beats = beats[:abort_after] + [{"data": 0, "last": 0, "abort": 1}]
    return beats


@pytest.mark.parametrize("codec,streams,flit_bytes,link_bytes", [
    *LINK_SHAPES,
    # tables in band above LINK_GROUP streams: two groups at LinkTx's link side, and
    # the loader's writes and the streams' ready through registers (table_registers)
    pytest.param("qlc", 5, 64, 16, marks=pytest.mark.xdist_group("link-qlc-5")),
    pytest.param("huffman", 5, 64, 16, marks=pytest.mark.xdist_group("link-huffman-5")),
    pytest.param("exponent", 5, 128, 32, marks=pytest.mark.xdist_group("link-exponent-5")),
])
def test_link_loads_tables_in_band(codec, streams, flit_bytes, link_bytes, seed):
    """Tables given to LinkTx on ``i_table`` while every stream streams: each goes into
    the streams' idle banks, onto the link as table flits, into LinkRx's decoders, and
    each stream takes it at its next frame; a refused image changes nothing. The pair is
    bit-exact under random idle cycles and backpressure (each table differs from the
    others in two symbols' codes, so a flit decoded with another table fails), and
    LinkTx's flits on the channel read back through the golden FlitReader. (Huffman:
    each image in 3 table flits, other streams' flits between them.)"""
    tensor = np.load(_files(codec)[0]).reshape(-1)
    base = sample_tables(codec)
    shape = {"flit_bytes": flit_bytes, "link_bytes": link_bytes}
    pair = LinkPair(codec=codec, streams=streams, tables=base, **shape)
    fmt = pair.tx.format                        # (numbered stream by stream, the default)
    if codec == "exponent":
        order = list(base.exponents)        # the most frequent exponents first
    else:
        order = np.argsort(-np.bincount(tensor, minlength=256), kind="stable")
    tables = [_swapped(base, order[0], order[k]) for k in range(1, 5)]
    bad = bytearray(table_image(codec, tables[2]))
    bad[0] = {"qlc": bad[0] | 0x02, "huffman": bad[0] & 0x0F, "exponent": bad[1]}[codec]
    table_beats = (_image_beats(table_image(codec, tables[0]))
                   + _image_beats(table_image(codec, tables[1]))
                   + _image_beats(bytes(bad))
                   + _image_beats(table_image(codec, tables[1]),
                                  abort_after=min(40, len(table_image(codec, base)) - 1))
                   + _image_beats(table_image(codec, tables[3])))
    results = [{"data": bank, "error": error, "last": 1}
               for bank, error in ((1, 0), (0, 0), (1, 1), (1, 1), (1, 0))]
    frames = [(index % streams, tensor[start:start + 400])
              for index, start in enumerate(range(0, 400 * 24, 400))]
    inputs, expected = link_io(fmt, frames)
    inputs["i_table"] = table_beats
    expected["o_table"] = results
    name = f"{codec}_s{streams}_f{flit_bytes}_w{link_bytes}"
    result = run_beats(pair, inputs=inputs, expected=expected, idle="random",
                       stall="random", name=f"link_pair_{name}", seed=seed,
                       config={"i_config": [{"addr": 0, "data": 1}]},
                       watch={"o": pair.tx.o.payload.shape()})
    assert result["bit_exact"], (result["seed"], first_mismatch(result))
    # No idle cycle: with no pause anywhere, the loads cost the pair no more cycles
    # than their table flits take on LinkTx's link side (16 bytes a cycle), and the
    # at most 14 that a Huffman decoder's switch at a frame boundary may cost
    # (rtl/huffman.py).
    cycles = {}
    for loads in (False, True):
        quiet = run_beats(pair, inputs={k: v for k, v in inputs.items()
                                        if loads or k != "i_table"},
                          expected={k: v for k, v in expected.items()
                                    if loads or k != "o_table"},
                          idle="none", stall="none", name=f"link_pair_{name}")
        assert quiet["bit_exact"], first_mismatch(quiet)
        # (the symbols' cycles: o_table's last beat comes after the last load)
        cycles[loads] = max(max(quiet["output_cycles"][f"o_s{index}"])
                            for index in range(streams))
    table_flits = 3 * -(-len(table_image(codec, base)) // fmt.body_bytes)
    print(f"cycles without and with the loads: {cycles[False]}, {cycles[True]}")
    assert cycles[True] <= cycles[False] + table_flits * flit_bytes // 16 + 14, cycles

    # LinkTx's flits, as they crossed the channel in the first run
    sent = flits_of_words(result["watched"]["o"], link_bytes, flit_bytes)
    reader = FlitReader(fmt, base)              # both banks: what both ends hold at power-up
    got = {}
    coded_banks = set()
    for flit in sent:
        header = FlitHeader.unpack(flit)
        if header.codec and not header.table:
            coded_banks.add(header.bank)
        done = reader.read(flit)
        if done is not None:
            got.setdefault(done[0], []).append(done[1])
    assert sum(FlitHeader.unpack(flit).table for flit in sent) == table_flits
    assert coded_banks == {0, 1}, "the streams took the loaded tables"
    for index in range(streams):
        want = [frame for stream, frame in frames if stream == index]
        assert [list(frame) for frame in got[index]] == [list(frame) for frame in want]
    _same_flits_as_the_writer(fmt, sent, frames, base, [tables[0], tables[1], tables[3]])


def _same_flits_as_the_writer(fmt, sent, frames, base, loads):
    """``sent`` (LinkTx's flits in link order, with in-band ``loads`` of tables) are, byte
    for byte, each stream's golden writer's: a :class:`FlitWriter` a stream, holding
    ``base`` in both banks as LinkTx does at power-up, that loads each table (into the
    other bank: bank 1 first) before the first frame of that stream LinkTx coded with it
    (each stream takes every table, in order, between frames), its table flits those on
    the link. Status flits are passed over (test_stream_numbers.py checks them)."""
    per_load = -(-len(table_image(fmt.codec, base)) // fmt.body_bytes)
    writers = [FlitWriter(fmt, base) for _ in range(fmt.streams)]
    made = [0] * fmt.streams                   # loads each stream's writer has made
    latest = [0, 0]                            # per bank: the loads that reached it
    table_flits = []
    pending = {index: [] for index in range(fmt.streams)}
    left = {index: [frame for stream, frame in frames if stream == index]
            for index in range(fmt.streams)}
    for flit in sent:
        header = FlitHeader.unpack(flit)
        if header.table:
            table_flits.append(flit)
            if header.last:
                latest[header.bank] = len(table_flits) // per_load
            continue
        if is_status(header):
            continue
        mine = pending[header.stream]
        mine.append(flit)
        if not header.last:
            continue
        # The frame's table: the newest load into the bank its flits name.
        generation = latest[FlitHeader.unpack(mine[0]).bank]
        writer = writers[header.stream]
        while made[header.stream] < generation:
            load = made[header.stream]
            assert (writer.load(loads[load])
                    == table_flits[load * per_load:(load + 1) * per_load]), load
            made[header.stream] += 1
        assert writer.frame(left[header.stream].pop(0), header.stream) == mine, (
            header.stream, len(left[header.stream]))
        pending[header.stream] = []
    assert not any(left.values()) and not any(pending.values())
    assert latest == [2, 3], "LinkTx loaded bank 1 first, then 0, then 1"


def test_link_figures_take_the_sample_of_the_codecs_format():
    """``linkcodec report link-tx link-rx`` simulates the link on the bundled sample of
    its codec's format: e4m3 bytes, or bf16 values for the exponent codec, with tables
    fitted on steps 0-2 and the step-3 tensors as frames."""
    from linkcodec.link_hardware import link_sample

    for codec, dtype, files in (("qlc", np.uint8, bundled_files()),
                                ("exponent", np.uint16, bundled_bf16_files())):
        tables, frames = link_sample(codec)
        later = [path for path in files if path.stem.endswith("_s3")]
        assert isinstance(tables, ExponentTable if codec == "exponent" else QlcCode)
        assert [frame.dtype for frame in frames] == [dtype] * len(later)
        assert sum(frame.size for frame in frames) == sum(np.load(path).size
                                                          for path in later)
