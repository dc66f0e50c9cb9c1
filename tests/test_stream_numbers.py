"""A link without retry that tells what it lost (issue 17): stream numbers in golden
(the writer's numbers, the reader's check, StreamCheck's verdicts at their boundaries),
the model of the receiver against what the hit flits alone should cost, and LinkTx /
LinkRx with ``stream_numbers=True`` against both under Verilator."""

import json
import re

import numpy as np
import pytest

from linkcodec.cli import main
from linkcodec.golden.link import (STREAM_AHEAD, FlitError, FlitHeader, FlitReader,
                                   FlitWriter, LinkFormat, StreamCheck, Verdict, deal,
                                   flits_from_frames, frames_from_flits, is_status,
                                   numbered, reheadered, stream_number)
from linkcodec.rtl.link import LinkPair, LinkRx, LinkTx
from linkcodec.rtl.blocks.beats import decoder_beats
from linkcodec.sim.faults import (arrivals, crc_good, hit_beats, inject, lossy_beats,
                                  score)
from linkcodec.sim.harness import first_mismatch, run_beats
from linkcodec.sim.link import flits_of_words, link_io, run_link, words_of_flits

from test_rtl_link import BF16_FILES, FILES, generates_clean, link_frames, sample_tables


def _frames(seed, sizes=(0, 1, 700, 2600, 300, 4000, 9000, 5)):
    rng = np.random.default_rng(seed)
    return [np.minimum(rng.geometric(0.2, size), 255).astype(np.uint8) for size in sizes]


def _writer(fmt, tables=None):
    writer = FlitWriter(fmt)
    table_flits = writer.load(tables) if tables is not None else []
    return writer, table_flits


# -- golden ----------------------------------------------------------------------------

def test_the_writer_numbers_each_stream_by_frame_and_place():
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64, sequence="stream")
    plain = LinkFormat("qlc", streams=2, flit_bytes=64)
    assert fmt.body_bytes == plain.body_bytes - 1
    assert fmt.sequence_offset == 64 - fmt.crc_bytes - 1
    frames = deal(_frames(1, sizes=(0, 1500, 30, 1100, 3)), 2)
    flits = flits_from_frames(fmt, frames)
    places = {0: [0, 0], 1: [0, 0]}          # each stream's frame and place
    for flit in flits:
        header = FlitHeader.unpack(flit)
        frame, place = places[header.stream]
        assert flit[fmt.sequence_offset] == (frame % 16) << 4 | place % 16
        assert crc_good(flit)
        places[header.stream] = [frame + 1, 0] if header.last else [frame, place + 1]
    assert max(FlitHeader.unpack(flit).count for flit in flits) > 0
    assert sum(1 for flit in flits if flit[fmt.sequence_offset] & 15 == 15) > 0  # wraps
    got = frames_from_flits(fmt, flits)
    assert [(s, f.tolist()) for s, f in got] == [(s, f.tolist()) for s, f in frames]


def test_the_reader_refuses_a_flit_out_of_its_streams_order():
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64, sequence="stream")
    flits = flits_from_frames(fmt, deal(_frames(2, sizes=(200, 200, 5)), 2))
    reader = FlitReader(fmt)
    reader.read(flits[0])
    with pytest.raises(FlitError, match=r"flit 1: is numbered 0x02 \(frame 0, place 2\); "
                                        r"stream 0 is at 0x01") as error:
        reader.read(flits[2])
    assert error.value.field == "sequence"
    # A numbered flit of another format's order: the retry layer's number is refused.
    reader = FlitReader(fmt)
    with pytest.raises(FlitError, match="is numbered 0x07"):
        reader.read(numbered(fmt, flits[0], 7))


def test_stream_number_and_format_refusals():
    assert stream_number(0, 0) == 0 and stream_number(15, 15) == 0xFF
    assert stream_number(16, 17) == 0x01 and stream_number(3, 2) == 0x32
    with pytest.raises(ValueError, match="0 or more, not -1 and 0"):
        stream_number(-1, 0)
    with pytest.raises(TypeError):
        stream_number(1.5, 0)
    with pytest.raises(ValueError, match="sequence must be None, 'link' or 'stream'"):
        LinkFormat("qlc", sequence="streams")
    assert "sequence='stream'" in repr(LinkFormat("qlc", sequence="stream"))
    with pytest.raises(ValueError, match="a stream number is a byte, not 256"):
        StreamCheck().take(256, False)


def _check_at(frame, place):
    check = StreamCheck()
    check.frame, check.place = frame, place
    return check


@pytest.mark.parametrize("start", [(0, 0), (5, 9), (15, 14)])
def test_stream_check_at_its_boundaries(start):
    """Ahead by 1 to 14 places: one error beat inside the frame; 15 (one behind): a
    repeat, skipped (and the expectation stays). Ahead by 1 to 14 frames: that many frame
    ends; 15: skipped. Everything modulo 16."""
    frame, place = start
    assert _check_at(*start).take(stream_number(frame, place), False) == Verdict(False, 0,
                                                                                  False)
    for ahead in (1, STREAM_AHEAD):
        check = _check_at(*start)
        assert check.take(stream_number(frame, place + ahead), False) == Verdict(False, 0,
                                                                                  True)
        assert (check.frame, check.place) == (frame, (place + ahead + 1) % 16)
    for behind in (STREAM_AHEAD + 1, 15):
        check = _check_at(*start)
        assert check.take(stream_number(frame, place + behind), True).skip
        assert (check.frame, check.place) == start
    for ahead in (1, STREAM_AHEAD):
        # a frame's first flit after frame ends lost: no hole; a later one: a hole too
        assert _check_at(*start).take(stream_number(frame + ahead, 0), False) == Verdict(
            False, ahead, False)
        check = _check_at(*start)
        assert check.take(stream_number(frame + ahead, 3), True) == Verdict(False, ahead,
                                                                             True)
        assert (check.frame, check.place) == ((frame + ahead + 1) % 16, 0)
    for behind in (STREAM_AHEAD + 1, 15):
        assert _check_at(*start).take(stream_number(frame + behind, place), False).skip


@pytest.mark.parametrize("seed", range(6))
def test_the_receiver_model_loses_only_the_hit_flits(seed):
    """lossy_beats (the receiver, by its numbers) gives exactly hit_beats (each hit flit's
    symbols an error beat where they were, from the hit set alone) for every kind of
    fault, many frames of many flits and two streams, at up to 40 % of flits hit."""
    fmt = LinkFormat("qlc", streams=2, flit_bytes=64, sequence="stream")
    frames = deal(_frames(seed) + _frames(seed + 10, sizes=(5, 3, 80, 2)), 2)
    writer, table_flits = _writer(fmt, _code())
    data = [flit for stream, frame in frames for flit in writer.frame(frame, stream)]
    received, faults = inject(data, len(data) * 2 // 5, seed=seed)
    beats, spoilt, verdicts = lossy_beats(fmt, _code(), received)
    hit = {fault.flit for fault in faults if fault.kind != "duplicate"}
    assert beats == hit_beats(fmt, _code(), data, hit)
    assert spoilt == sum(1 for fault in faults if fault.spoilt is not None)
    # every repeat is skipped; the next good flit after a run of hit flits of its
    # stream reports them
    order = arrivals(len(data), faults)
    streams = [FlitHeader.unpack(flit).stream for flit in data]
    for fault in faults:
        if fault.kind == "duplicate":
            assert verdicts[order.index(fault.flit) + 1] == "skipped"
            continue
        later = [position for position, index in enumerate(order)
                 if index > fault.flit and streams[index] == streams[fault.flit]
                 and index not in hit]
        if later:
            assert verdicts[later[0]] == "reported", (seed, fault)
    result = score(frames, beats)
    assert result["symbols_wrong"] == 0 and result["frames_duplicated"] == 0
    lost = sum(FlitHeader.unpack(data[index]).count for index in hit)
    out = sum(beat["count"] for port in beats.values() for beat in port)
    assert out == sum(frame.size for _, frame in frames) - lost


def test_hit_beats_by_hand():
    """One stream, frames A (3 flits) and B (2 flits): the middle of A lost, then A's end
    and B's start lost together."""
    fmt = LinkFormat("qlc", flit_bytes=64, sequence="stream")
    writer, _ = _writer(fmt, _code())
    a = writer.frame(np.arange(150, dtype=np.uint8) + 100)   # raw: 57 a flit
    b = writer.frame(np.arange(100, dtype=np.uint8) + 100)
    assert (len(a), len(b)) == (3, 2)
    assert all(FlitHeader.unpack(flit).codec == 0 for flit in a + b)
    got = hit_beats(fmt, _code(), a + b, {1})["o_s0"]
    assert [beat["error"] for beat in got].count(1) == 1
    assert got[57] == {"symbols": [0], "count": 0, "last": 0, "error": 1}
    assert sum(beat["count"] for beat in got) == 150 + 100 - 57
    got = hit_beats(fmt, _code(), a + b, {2, 3})["o_s0"]
    errors = [beat for beat in got if beat["error"]]
    assert errors == [{"symbols": [0], "count": 0, "last": 1, "error": 1},
                      {"symbols": [0], "count": 0, "last": 0, "error": 1}]
    assert sum(beat["last"] for beat in got) == 2           # two frames, as sent
    # the model of the receiver agrees
    beats, _, _ = lossy_beats(fmt, _code(), [a[0], a[1], b[1]])
    assert beats["o_s0"] == got


@pytest.mark.parametrize("start", [(0, 0), (5, 9), (15, 14)])
def test_a_status_flit_at_its_boundaries(start):
    """A status flit is numbered as the flit after it: at the number expected it tells
    nothing and moves nothing; ahead, it tells what was lost as a data flit would, and
    the expectation moves to its number, not past it (so it repeated tells nothing
    more); one behind is a repeat, skipped."""
    frame, place = start
    check = _check_at(*start)
    for _ in range(2):
        assert check.take(stream_number(frame, place), False, status=True) == Verdict(
            False, 0, False)
        assert (check.frame, check.place) == start
    for ahead in (1, STREAM_AHEAD):
        check = _check_at(*start)
        assert check.take(stream_number(frame, place + ahead), False, status=True) == (
            Verdict(False, 0, True))
        assert (check.frame, check.place) == (frame, (place + ahead) % 16)
        assert check.take(stream_number(frame, place + ahead), False, status=True) == (
            Verdict(False, 0, False))
        check = _check_at(*start)
        assert check.take(stream_number(frame + ahead, 0), False, status=True) == Verdict(
            False, ahead, False)
        assert (check.frame, check.place) == ((frame + ahead) % 16, 0)
    check = _check_at(*start)
    assert check.take(stream_number(frame, place + 15), False, status=True).skip
    assert (check.frame, check.place) == start


def test_status_flits_tell_a_streams_last_flits_lost():
    """The writer's status flit between frames: the reader takes it (no frame opened,
    twice as well as once); the model of the receiver reports a stream's last flit lost
    at it (a frame end lost) and the flit of a frame lost before its last (both), and
    says nothing of a status flit after nothing lost."""
    fmt = LinkFormat("qlc", flit_bytes=64, sequence="stream")
    writer, _ = _writer(fmt, _code())
    a = writer.frame(np.arange(150, dtype=np.uint8) + 100)   # raw: 57 a flit, 3 flits
    status = writer.status(0)
    header = FlitHeader.unpack(status)
    assert (header.codec, header.table, header.last, header.count, header.bits) == (
        0, False, False, 0, 0)
    assert status[fmt.sequence_offset] == stream_number(1, 0) and crc_good(status)
    got = frames_from_flits(fmt, a + [status, status])
    assert [frame.tolist() for _, frame in got] == [list(range(100, 250))]
    reader = FlitReader(fmt)                    # a status flit before any frame: 0
    assert [reader.read(flit) for flit in [FlitWriter(fmt).status(0)] + a][0] is None
    with pytest.raises(FlitError, match=r"is numbered 0x10 \(frame 1, place 0\); stream "
                                        r"0 is at 0x00"):
        FlitReader(fmt).read(status)            # (one ahead of the stream: out of order)
    beats, _, verdicts = lossy_beats(fmt, _code(), a[:2] + [status])
    assert beats["o_s0"][-1] == {"symbols": [0], "count": 0, "last": 1, "error": 1}
    assert verdicts == ["taken", "taken", "reported"]
    assert beats["o_s0"] == hit_beats(fmt, _code(), a + [status], {2})["o_s0"]
    beats, _, verdicts = lossy_beats(fmt, _code(), [a[0], status])
    assert [beat for beat in beats["o_s0"] if beat["error"]] == [
        {"symbols": [0], "count": 0, "last": 1, "error": 1}]
    beats, _, verdicts = lossy_beats(fmt, _code(), a + [status])
    assert verdicts[-1] == "taken" and not any(b["error"] for b in beats["o_s0"])
    with pytest.raises(ValueError, match="status flits are for a link numbered stream"):
        FlitWriter(LinkFormat("qlc")).status(0)
    with pytest.raises(ValueError, match="stream must be 0..0, not 1"):
        writer.status(1)
    # The channel of the fault runs hits no status flit (a sender repeats them).
    _, faults = inject(a + [status], 3, seed=1, data_only=True)
    assert sorted(fault.flit for fault in faults) == [0, 1, 2]
    with pytest.raises(ValueError, match="4 faults need as many data flits; the channel "
                                         "carries 3"):
        inject(a + [status], 4, seed=1, data_only=True)


def _code():
    from linkcodec.golden.qlc import QlcCode, QlcLayout
    return QlcCode(QlcLayout.base(), np.arange(256))


# -- hardware --------------------------------------------------------------------------

def test_parameters():
    with pytest.raises(ValueError, match="stream_numbers is for a link without retry"):
        LinkTx(stream_numbers=True, retry_depth=16)
    with pytest.raises(TypeError, match="stream_numbers must be True, False or None"):
        LinkRx(stream_numbers=1)
    # Numbered by default without retry; not with it.
    tx, rx = LinkTx(), LinkRx()
    for block in (tx, rx):
        block._MustUse__silence = True
        assert block.stream_numbers and block.format.sequence == "stream"
    assert tx.status_cycles == 1024
    assert "i_ack" not in tx.signature.members
    for block in (LinkTx(retry_depth=16), LinkRx(retry_depth=16)):
        block._MustUse__silence = True
        assert not block.stream_numbers and block.format.sequence == "link"
    plain = LinkTx(stream_numbers=False)
    plain._MustUse__silence = True
    assert plain.format.sequence is None
    for cycles in (15, 65537, 16.0, True):
        with pytest.raises(ValueError, match="status_cycles must be a whole number of "
                                             "cycles from 16 to 65536"):
            LinkTx(status_cycles=cycles)
    for cycles in (16, 65536):
        LinkTx(status_cycles=cycles)._MustUse__silence = True
    with pytest.raises(ValueError, match="faults with stream_numbers need retry=False"):
        run_link([np.zeros(3, dtype=np.uint8)], faults=1, stream_numbers=True)


# One shape for every numbered hardware test of make test, so that they share two builds
# (the pair, and LinkRx alone as the fault run builds it): QLC, 2 streams, 64-byte flits
# on a 16-byte word (4 words a flit), the code ``linkcodec sim link`` fits on FILES.
SHAPE = {"codec": "qlc", "streams": 2, "flit_bytes": 64, "link_bytes": 16}


@pytest.mark.xdist_group("link-numbers")
def test_rx_boundaries_repeats_and_skipped_coded_flits(seed):
    """LinkRx with stream numbers on flits crafted at StreamCheck's boundaries, as the
    model says, under idle cycles and backpressure: 14 flits of a frame lost (one error
    beat) and 15 (the next taken for a repeat), 14 frame ends lost and 15; a repeated
    coded flit and a coded flit that fails its CRC, each followed by a coded flit (a
    skipped coded flit once left the next read as raw)."""
    rx = LinkRx(**SHAPE, tables=sample_tables("qlc"), stream_numbers=True)
    fmt, tables = rx.format, rx.tables
    writer, table_flits = _writer(fmt, tables)
    rng = np.random.default_rng(5)
    long = writer.frame(rng.integers(0, 256, 57 * 40, dtype=np.uint8))   # 40 raw flits
    assert len(long) == 40
    shorts = [writer.frame(np.full(5, k, dtype=np.uint8), 1) for k in range(34)]
    assert all(len(flits) == 1 for flits in shorts)
    coded = writer.frame(np.load(FILES[0]).reshape(-1)[:3000], 0)
    assert all(FlitHeader.unpack(flit).codec == 1 for flit in coded[:3])
    spoilt = bytearray(coded[1])
    spoilt[20] ^= 0x10
    sequence = (long[:2] + long[16:18]                 # 14 lost: a hole
                + long[33:34] + [f for s in shorts[:2] for f in s]   # 15 lost: skipped
                + shorts[16] + shorts[32]              # 14 ends lost, then 15
                + coded[:1] + coded[:1] + [bytes(spoilt)] + coded[2:])
    received = table_flits + sequence
    expected, _, verdicts = lossy_beats(fmt, tables, received)
    assert verdicts[len(table_flits):][:9] == ["taken", "taken", "reported", "taken",
                                                "skipped", "taken", "taken", "reported",
                                                "skipped"]
    assert "skipped" in verdicts[-len(coded) - 1:] and "spoilt" in verdicts[-len(coded):]
    errors = [beat for beat in expected["o_s1"] if beat["error"]]
    assert sum(beat["last"] for beat in errors) == 14
    result = run_beats(rx, inputs={"i": words_of_flits(received, 16)}, expected=expected,
                       idle="random", stall="random", seed=seed,
                       name="link_rx_qlc_s2_f64_w16_n")
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


def _flipped(flit, bits):
    """``flit`` with its ``bits`` flipped (bit 0: byte 0's top bit, as the channel's)."""
    changed = bytearray(flit)
    for bit in bits:
        changed[bit // 8] ^= 0x80 >> (bit % 8)
    return bytes(changed)


@pytest.mark.xdist_group("link-numbers")
def test_rx_tells_every_header_bit_flipped(seed):
    """The default link (numbered): each of a data flit's 32 header bits flipped in turn
    (the table, codec, stream, bank, last, count and bits fields among them; raw and
    coded flits), then bursts of 2 to 16 bits over the header, on both streams. On every
    stream every frame that lost symbols is flagged with an error beat and none ends
    short or long without one (the frames of the flits hit, and only those, are flagged;
    no symbol is wrong), the last flits of a stream are told by its status flit, and
    LinkRx gives exactly that, under random idle cycles and backpressure."""
    rx = LinkRx(**SHAPE, tables=sample_tables("qlc"))
    fmt, tables = rx.format, rx.tables
    assert fmt.sequence == "stream"                     # the default without retry
    writer = FlitWriter(fmt, tables)                    # both ends hold ``tables``
    rng = np.random.default_rng(11)
    coded = np.load(FILES[0]).reshape(-1)
    frames = deal([coded[:1500], rng.integers(0, 256, 600, dtype=np.uint8), coded[1500:2600],
                   coded[2600:2700], rng.integers(0, 256, 700, dtype=np.uint8),
                   coded[2700:4000], coded[4000:4100], coded[4100:5200]], 2)
    sent, owner = [], []
    for number, (stream, frame) in enumerate(frames):
        flits = writer.frame(frame, stream)
        sent += flits
        owner += [number] * len(flits)
    sent += [writer.status(0), writer.status(1)]
    data = list(range(len(sent) - 2))
    assert len(data) >= 2 * 48, len(data)
    codecs = {FlitHeader.unpack(flit).codec for flit in sent[:-2]}
    assert codecs == {0, 1}
    # Every other data flit hit: the first 32 one header bit each, the next 16 a burst
    # from a header bit, its ends flipped and the bits between at random; the stream's
    # last data flit among them.
    hits = data[0::2][:47] + [data[-1]]
    faults = {}
    for turn, index in enumerate(hits):
        if turn < 32:
            faults[index] = (turn,)
        else:
            length = int(rng.integers(2, 17))
            start = int(rng.integers(0, 32))
            inner = [start + 1 + k for k in np.flatnonzero(rng.integers(0, 2, length - 2))]
            faults[index] = (start, *inner, start + length - 1)
    received = [_flipped(flit, faults[index]) if index in faults else flit
                for index, flit in enumerate(sent)]
    assert not any(crc_good(received[index]) for index in faults)
    expected, spoilt, _ = lossy_beats(fmt, tables, received)
    assert spoilt == len(faults)
    assert expected == hit_beats(fmt, tables, sent, set(faults))
    # The property, on every stream: the frames hit come out flagged; no other does, and
    # no frame comes out wrong, short or long without its flag.
    scored = score(frames, expected)
    frames_hit = {owner[index] for index in faults}
    assert scored["frames_flagged"] == scored["frames_lost"] == len(frames_hit)
    assert scored["symbols_wrong"] == 0 and scored["frames_duplicated"] == 0
    result = run_beats(rx, inputs={"i": words_of_flits(received, 16)}, expected=expected,
                       idle="random", stall="random", seed=seed,
                       name="link_rx_qlc_s2_f64_w16_n")
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


@pytest.mark.xdist_group("link-numbers")
def test_rx_refuses_a_numbered_flit_that_claims_more_than_it_holds(seed):
    """With stream numbers a flit whose header claims more than it holds (a good CRC, so
    a sender's fault) is taken, its number counted, and gives the error beat that stands
    for its symbols (``last`` as its flit): one that ends its frame, and the first of a
    frame of two, whose second flit then gives its symbols and no beat for a loss."""
    rx = LinkRx(**SHAPE, tables=sample_tables("qlc"), stream_numbers=True)
    fmt, tables = rx.format, rx.tables
    writer, table_flits = _writer(fmt, tables)
    rng = np.random.default_rng(3)
    five = np.arange(5, dtype=np.uint8)
    wide = rng.integers(0, 256, fmt.raw_symbols + 9, dtype=np.uint8)
    [one] = writer.frame(five, 1)
    two = writer.frame(wide, 1)
    [after] = writer.frame(five, 1)
    assert [FlitHeader.unpack(flit).codec for flit in [one, *two, after]] == [0] * 4
    sequence = [reheadered(one, bits=39),
                reheadered(two[0], count=fmt.raw_symbols + 1, bits=8 * fmt.raw_symbols + 8),
                two[1], after]
    reader = FlitReader(fmt)
    for flit in table_flits:
        reader.read(flit)
    for flit in sequence[:2]:
        with pytest.raises(FlitError, match="bits"):
            reader.symbols(flit)
    refused = {"symbols": [0], "count": 0, "error": 1}
    expected = ([{**refused, "last": 1}, {**refused, "last": 0}]
                + decoder_beats([reader.symbols(two[1])], 1) + decoder_beats([five], 1))
    result = run_beats(rx, inputs={"i": words_of_flits(table_flits + sequence, 16)},
                       expected={"o_s1": expected}, idle="random", stall="random",
                       seed=seed, name="link_rx_qlc_s2_f64_w16_n")
    assert result["bit_exact"], (result["seed"], first_mismatch(result))


def _no_retry_run(monkeypatch, capsys, argv, files, size):
    """``linkcodec sim link --inject-faults 40 --no-retry --json`` on the first ``size``
    symbols of each of ``files``: its report."""
    from linkcodec.sim import link

    whole = link.run_link
    monkeypatch.setattr(link, "run_link", lambda frames, **options: whole(
        [frame[:size] for frame in frames], **options))
    code = main(["sim", "link", *argv, "--inject-faults", "40", "--no-retry", "--json",
                 *map(str, files)])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result["seed"]
    return result


def _check_no_retry(result):
    """LinkTx driving LinkRx, both numbered: bit-exact, LinkTx's flits the golden
    writer's (numbers included); LinkRx alone with 40 faults, 8 of each kind: what the
    model says, only the hit flits' symbols lost, every repeat skipped and every lost or
    spoilt flit reported, a stream's last ones by the status flit LinkTx sends once the
    stream is idle (``lost_at_end``: none is left untold)."""
    assert result["bit_exact"] and result["tx_bit_exact"], result["seed"]
    assert result["stream_numbers"] and result["faults_injected"] == 40
    assert result["rx_bit_exact"] and not result["hangs"], result["seed"]
    assert result["only_hit_lost"], result["seed"]
    assert result["symbols_lost"] == result["symbols_hit"] > 0
    assert result["symbols_wrong"] == 0 and result["frames_duplicated"] == 0
    assert result["faults"]["duplicate"]["detected"] == 8, result["seed"]
    assert result["faults_detected"] == 40, result["seed"]
    assert result["lost_at_end"] == 0, result["seed"]


@pytest.mark.xdist_group("link-numbers")
def test_sim_link_no_retry_numbers_and_loses_only_the_hit_flits(capsys, monkeypatch):
    """``linkcodec sim link --inject-faults 40 --no-retry`` (see _check_no_retry), at
    SHAPE: the builds of the tests beside it."""
    _check_no_retry(_no_retry_run(monkeypatch, capsys, [
        "--codec", "qlc", "--streams", "2", "--flit-bytes", "64", "--link-bytes", "16"],
        FILES, 5000))


@pytest.mark.xdist_group("link-numbers")
@pytest.mark.slow          # 46 s, under -m slow for make test's 20 minutes
def test_sim_link_stream_numbers_without_faults(capsys, monkeypatch):
    """``--stream-numbers`` alone runs the numbered pair (the build of SHAPE) and says
    so; its flits are the golden writer's, numbers included."""
    from linkcodec.sim import link

    whole = link.run_link
    monkeypatch.setattr(link, "run_link", lambda frames, **options: whole(
        [frame[:3000] for frame in frames], **options))
    argv = ["sim", "link", "--codec", "qlc", "--streams", "2", "--flit-bytes", "64",
            "--link-bytes", "16", "--stream-numbers", *map(str, FILES)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "stream numbers" in text.splitlines()[0] and "faults" not in text
    assert "bit-exact: yes (LinkTx's flits match the golden model's)" in text


@pytest.mark.xdist_group("link-numbers-bf16")
def test_sim_link_no_retry_on_bf16(capsys, monkeypatch):
    """The same on bf16 streams (the exponent codec's coded flits are skipped through
    their own header checks), two builds of its own."""
    _check_no_retry(_no_retry_run(monkeypatch, capsys, [
        "--codec", "exponent", "--streams", "2", "--flit-bytes", "128", "--link-bytes",
        "32"], BF16_FILES, 5000))


@pytest.mark.xdist_group("link-numbers")
def test_an_idle_stream_sends_a_status_flit_each_span(seed):
    """A stream of LinkTx that has sent its frames and then idles sends one status flit
    every ``status_cycles`` (1,024) cycles or so: numbered as its next flit (its next
    frame's first), sealed, and not two at a time; LinkRx gives no beat for them. (The
    pair of the test below, watched for 8 spans after its last symbol.)"""
    pair = LinkPair(**SHAPE, tables=sample_tables("qlc"), stream_numbers=True)
    fmt, span = pair.tx.format, pair.tx.status_cycles
    frames = deal([np.arange(30, dtype=np.uint8), np.arange(200, dtype=np.uint8),
                   np.arange(5, dtype=np.uint8)], 2)
    inputs, expected = link_io(fmt, frames)
    settle = 8 * span
    result = run_beats(pair, inputs=inputs, expected=expected, idle="random",
                       stall="random", name="link_pair_qlc_s2_f64_w16_n", seed=seed,
                       config={"i_config": [{"addr": 0, "data": 1}]}, settle=settle,
                       watch={"o": pair.tx.o.payload.shape()})
    assert result["bit_exact"], (result["seed"], first_mismatch(result))
    flits = flits_of_words(result["watched"]["o"], SHAPE["link_bytes"], fmt.flit_bytes)
    for stream in range(2):
        mine = [flit for flit in flits if FlitHeader.unpack(flit).stream == stream]
        data = [flit for flit in mine if not is_status(FlitHeader.unpack(flit))]
        status = mine[len(data):]            # (none comes before the frames are sent)
        assert data == mine[:len(data)]
        done = sum(1 for _, frame in frames if _ == stream)
        assert all(flit[fmt.sequence_offset] == stream_number(done, 0) and crc_good(flit)
                   for flit in status)
        # From its last flit to the end: at most (cycles + settle) / span + 1 spans, and
        # at least the settle's whole spans but one (a span and a flit's few cycles each).
        assert settle // (span + 16) - 1 <= len(status) <= (
            (result["cycles"] + settle) // span + 1), (stream, len(status))


@pytest.mark.xdist_group("link-numbers")
def test_link_with_stream_numbers_survives_a_reset_in_mid_stream(seed):
    """Both ends reset together in mid-stream start their numbers again at 0."""
    pair = LinkPair(**SHAPE, tables=sample_tables("qlc"), stream_numbers=True)
    fmt = pair.tx.format
    frames = deal(link_frames(fmt, np.random.default_rng(9)), 2)
    inputs, expected = link_io(fmt, frames)
    early, _ = link_io(fmt, [(0, frames[2][1][:2000]), (1, frames[-1][1][:2000])])
    result = run_beats(pair, inputs=inputs, expected=expected, idle="random",
                       stall="random", name="link_pair_qlc_s2_f64_w16_n",
                       config={"i_config": [{"addr": 0, "data": 1}]}, seed=seed,
                       before_reset=(early, 700))
    assert result["bit_exact"], (result["seed"], first_mismatch(result))
    assert sum(result["taken_before_reset"].values()) > 0


def test_sim_link_stream_numbers_refusals(capsys):
    for argv, message in (
            (["--stream-numbers", "--retry-depth", "16"],
             "--stream-numbers is for a link without retry"),
            (["--inject-faults", "3", "--stream-numbers"],
             "--stream-numbers with --inject-faults goes with --no-retry")):
        assert main(["sim", "link", *argv, str(FILES[0])]) == 2
        assert re.search(message, capsys.readouterr().err), argv


@pytest.mark.parametrize("kind", ["link-tx", "link-rx"])
def test_generate_without_stream_numbers_lints_clean(kind, tmp_path, capsys):
    """Stream numbers are the default (no suffix); ``--no-stream-numbers`` names its
    module ``_unnumbered``."""
    generates_clean(kind, ["--no-stream-numbers", "--streams", "3"],
                    f"linkcodec_{kind.replace('-', '_')}_qlc_s3_l1_unnumbered", tmp_path,
                    capsys)
