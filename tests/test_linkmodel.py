"""The link model (linkcodec/linkmodel.py): answers computed by hand, the measured figures,
and bad input refused with a message that names it."""

import argparse
import json

import pytest
from amaranth.hdl import Fragment

from linkcodec import linkmodel
from linkcodec.bundled import bundled_bf16_files, bundled_files
from linkcodec.golden.formats import FormatError
from linkcodec.linkmodel import (MEASURED, Part, StreamFigures, figures_for, format_answer,
                                 link_model,
                                 measure_link, stream_figures)
from linkcodec.rtl.blocks import BLOCKS


def _model(**given):
    base = {"raw_bytes_per_symbol": 1, "flit_bytes": 256}
    return link_model(**{**base, **given})


def test_wire_limited_by_hand():
    """8 Gb/s carries 1 GB/s of flits; at 0.5 link bytes a symbol that is 2 Gsymbols/s,
    16 Gb/s of raw e4m3; 4 streams of 1 symbol/cycle at 1 GHz could take 4 Gsymbols/s."""
    figures = StreamFigures(symbols_per_cycle=1.0, latency_cycles=10, fmax_mhz=200.0)
    answer = _model(gbps=8, clock_mhz=1000, link_bytes_per_symbol=0.5, streams=4,
                    figures=figures)
    assert answer["limited_by"] == "wire"
    assert answer["wire_msymbols_per_s"] == pytest.approx(2000)
    assert answer["codec_msymbols_per_s"] == pytest.approx(4000)
    assert answer["effective_raw_gbps"] == pytest.approx(16)
    assert answer["gain"] == pytest.approx(2)
    assert answer["streams_to_keep_up"] == 2
    # 247-byte bodies: the default link numbers its flits with a byte of the body
    assert answer["raw_flits_gbps"] == pytest.approx(8 * 247 / 256)
    # 256 bytes at 0.5 a symbol: 512 symbols a flit, 512 cycles to fill at 1 a cycle; the
    # flit is 2,048 bits, 256 ns on 8 Gb/s; 1 ns a cycle: 10 + 512 + 256.
    latency = answer["latency"]
    assert latency["fill_cycles"] == pytest.approx(512)
    assert latency["serialisation_ns"] == pytest.approx(256)
    assert latency["total_ns"] == pytest.approx(778)
    assert latency["total_cycles"] == pytest.approx(778)
    assert answer["above_fmax"]


def test_link_hardware_figures_replace_the_blocks_by_hand(monkeypatch):
    """With a LINK_HARDWARE entry for (codec, lanes, flit bytes), a stream's rate, the
    latency and Fmax are the link hardware's, and its measured latency already holds the
    flit's fill: 0.5 symbols/cycle at 100 MHz on 2 streams code 100 Msymbols/s; 300
    cycles at 10 ns and one 256-byte flit on 8 Gb/s (256 ns) are 3,256 ns."""
    entry = linkmodel.LinkHardware(streams=2, symbols_per_cycle=0.5, latency_cycles=300,
                                   fmax_mhz=80.0, luts=1000,
                                   commands={"latency_cycles": "a", "fmax_mhz": "b"})
    monkeypatch.setitem(linkmodel.LINK_HARDWARE, ("qlc", 1, 256), entry)
    answer = _model(gbps=8, clock_mhz=100, link_bytes_per_symbol=0.5, streams=2,
                    codec="qlc")
    assert answer["codec_msymbols_per_s"] == pytest.approx(100)
    assert answer["stream_fmax_mhz"] == 80.0 and answer["above_fmax"]
    assert answer["latency"]["fill_cycles"] == 0
    assert answer["latency"]["total_ns"] == pytest.approx(3256)
    assert answer["hardware"]["luts"] == 1000
    text = linkmodel.format_answer(answer)
    assert "LinkTx to LinkRx 300 cycles" in text and "for the link hardware, 80 MHz" in text
    # Another flit size has no entry: the blocks' figures and the fill estimate again.
    other = _model(gbps=8, clock_mhz=100, link_bytes_per_symbol=0.5, streams=2,
                   codec="qlc", flit_bytes=128)
    assert other["hardware"] is None and other["latency"]["fill_cycles"] > 0


@pytest.mark.parametrize("gbps,keeps_up", [(12.8, True), (12.9, False)])
def test_link_hardware_link_side_limits_by_hand(monkeypatch, gbps, keeps_up):
    """LinkTx's link side moves ``link_side_bytes`` of flits a cycle whatever the streams:
    16 bytes at 100 MHz are 12.8 Gb/s of flits, 3,200 Msymbols/s at 0.5 link bytes a
    symbol, under 16 streams' 16 x 2.5 x 100 = 4,000. On a wire of 12.8 Gb/s (the last
    that the link side keeps up with) 13 streams keep up; on 12.9 Gb/s none does, and the
    link side limits the link to 3,200 Msymbols/s."""
    entry = linkmodel.LinkHardware(streams=16, symbols_per_cycle=2.5, latency_cycles=300,
                                   fmax_mhz=80.0, luts=1000, link_side_bytes=16,
                                   commands={"latency_cycles": "a", "fmax_mhz": "b"})
    monkeypatch.setitem(linkmodel.LINK_HARDWARE, ("qlc", 1, 256), entry)
    answer = _model(gbps=gbps, clock_mhz=100, link_bytes_per_symbol=0.5, streams=16,
                    codec="qlc")
    assert answer["streams_msymbols_per_s"] == pytest.approx(4000)
    assert answer["link_side_msymbols_per_s"] == pytest.approx(3200)
    text = linkmodel.format_answer(answer)
    assert "LinkTx's link side: 16 bytes/cycle x 100 MHz / 0.5000 = 3,200.0" in text
    if keeps_up:
        assert answer["limited_by"] == "wire"
        assert answer["streams_to_keep_up"] == 13 and answer["keep_up_within_streams"]
        assert answer["effective_msymbols_per_s"] == pytest.approx(3200)
    else:
        assert answer["limited_by"] == "codecs"
        assert answer["effective_msymbols_per_s"] == pytest.approx(3200)
        assert answer["streams_to_keep_up"] is None
        assert not answer["keep_up_within_streams"]
        assert "the codecs limit (at LinkTx's link side)" in text
        assert ("keep up with the wire at 100 MHz: none (LinkTx's link side moves 16 bytes "
                "a cycle, 12.8 Gb/s of flits, against the wire's 12.9") in text
    # Fewer streams than the link side carries: the streams limit, not the link side.
    few = _model(gbps=gbps, clock_mhz=100, link_bytes_per_symbol=0.5, streams=4,
                 codec="qlc")
    assert few["codec_msymbols_per_s"] == pytest.approx(1000)
    assert few["limited_by"] == "codecs"
    assert "(at LinkTx's link side)" not in linkmodel.format_answer(few)


def test_codec_limited_by_hand():
    """100 Gb/s at 0.8 bytes a symbol: 15,625 Msymbols/s on the wire; 3 streams of 0.5
    symbols/cycle at 100 MHz code 150 Msymbols/s, 1.2 Gb/s of raw data; 313 streams
    (15,625 / 50 = 312.5) would keep up, more than a link carries."""
    figures = {"symbols_per_cycle": 0.5, "latency_cycles": 20, "fmax_mhz": 150.0}
    answer = _model(gbps=100, clock_mhz=100, link_bytes_per_symbol=0.8, streams=3,
                    flit_bytes=128, figures=figures)
    assert answer["limited_by"] == "codecs"
    assert answer["wire_msymbols_per_s"] == pytest.approx(15625)
    assert answer["effective_msymbols_per_s"] == pytest.approx(150)
    assert answer["effective_raw_gbps"] == pytest.approx(1.2)
    assert answer["gain"] == pytest.approx(0.012)
    assert answer["streams_to_keep_up"] == 313
    assert not answer["keep_up_within_streams"]
    assert answer["raw_flits_gbps"] == pytest.approx(100 * 121 / 128)   # numbered
    # 128 / 0.8 = 160 symbols a flit, 320 cycles at 0.5; 1,024 bits on 100 Gb/s: 10.24 ns;
    # 10 ns a cycle: (20 + 320) x 10 + 10.24.
    assert answer["latency"]["total_ns"] == pytest.approx(3410.24)
    assert not answer["above_fmax"]


@pytest.mark.parametrize("gbps,bytes_per_symbol,clock_mhz,spc,needed", [
    (24, 0.75, 500, 2.0, 4),      # 4,000 Msymbols/s against 1,000 a stream: exact
    (7.2, 0.9, 100, 1.0, 10),     # 1,000 against 100, through inexact floats
    (256, 1.5927, 1000, 3.9977, 6),   # UCIe-S x16 of bf16: 20,093 against 3,998 a stream
])
def test_streams_to_keep_up_at_the_boundary(gbps, bytes_per_symbol, clock_mhz, spc, needed):
    """The last stream count that does not keep up, and the first that does."""
    figures = StreamFigures(spc, 14, 120.0)
    common = {"gbps": gbps, "clock_mhz": clock_mhz,
              "link_bytes_per_symbol": bytes_per_symbol, "figures": figures}
    short = _model(streams=needed - 1, **common)
    enough = _model(streams=needed, **common)
    assert short["limited_by"] == "codecs"
    assert short["streams_to_keep_up"] == enough["streams_to_keep_up"] == needed
    assert enough["limited_by"] == "wire"
    assert enough["effective_msymbols_per_s"] == pytest.approx(enough["wire_msymbols_per_s"])


def test_a_stream_is_its_parts_in_series():
    parts = [Part("a", 1, 1.0, 6, 123.3, 671, {}), Part("b", 1, 0.98, 8, 120.5, 800, {})]
    figures = stream_figures(parts)
    assert figures.symbols_per_cycle == 0.98
    assert figures.latency_cycles == 14
    assert figures.fmax_mhz == 120.5
    answer = _model(gbps=10, clock_mhz=100, link_bytes_per_symbol=1, figures=parts)
    assert answer["codec_msymbols_per_s"] == pytest.approx(98)


def test_measured_stream_figures():
    """An encoder and its decoder, each as the results table has it (docs/results.md):
    the smaller symbols per cycle, the latencies summed, the smaller Fmax; every figure
    has the command that measured it."""
    from linkcodec.results import table_row

    for codec, lanes in (("qlc", 1), ("huffman", 1), ("exponent", 4)):
        rows = [table_row(block, lanes) for block in linkmodel.BLOCKS_OF[codec]]
        assert figures_for(codec)[:3] == (
            min(row["symbols_per_cycle"] for row in rows),
            sum(row["latency_cycles"] for row in rows),
            round(min(row["fmax_mhz"] for row in rows), 1))
        assert [part.luts for part in MEASURED[codec, lanes]] == [row["luts"] for row in rows]
    assert figures_for("exponent", 4) == figures_for("exponent")
    for (codec, lanes), parts in MEASURED.items():
        assert [part.block for part in parts] == list(linkmodel.BLOCKS_OF[codec])
        for part in parts:
            assert part.lanes == lanes
            for figure in ("symbols_per_cycle", "latency_cycles", "fmax_mhz"):
                assert part.block in part.commands[figure]
            assert part.symbols_per_cycle >= BLOCKS[part.block].min_symbols_per_lane * lanes


def test_measured_latency_is_the_blocks_own():
    for parts in MEASURED.values():
        for part in parts:
            component = BLOCKS[part.block].build(lanes=part.lanes)
            Fragment.get(component, None)
            assert part.latency_cycles == component.latency, part.block


def test_the_answer_follows_the_measured_figures():
    answer = _model(gbps=16, clock_mhz=100, link_bytes_per_symbol=0.9, codec="huffman")
    assert answer["codec_msymbols_per_s"] == pytest.approx(99.99)
    assert answer["stream_latency_cycles"] == 17
    fmax = figures_for("huffman").fmax_mhz
    assert not answer["above_fmax"] and answer["stream_fmax_mhz"] == fmax
    assert _model(gbps=16, clock_mhz=fmax + 0.1, link_bytes_per_symbol=0.9,
                  codec="huffman")["above_fmax"]
    assert not _model(gbps=16, clock_mhz=fmax, link_bytes_per_symbol=0.9,
                      codec="huffman")["above_fmax"]


@pytest.mark.parametrize("given,message", [
    ({"gbps": 0}, "--gbps must be a number more than 0, not 0"),
    ({"gbps": -25.0}, "--gbps must be a number more than 0, not -25.0"),
    ({"clock_mhz": 0}, "--clock-mhz must be a number more than 0, not 0"),
    ({"clock_mhz": -1}, "--clock-mhz must be a number more than 0, not -1"),
    ({"streams": 0}, "--streams must be 1..16 .*, not 0"),
    ({"streams": 17}, "--streams must be 1..16 .*, not 17"),
    ({"lanes": 4}, "no measured figures for qlc at 4 lanes"),
    ({"codec": "zip"}, "codec must be one of qlc, huffman, exponent"),
    ({"flit_bytes": 512}, "--flit-bytes must be one of 64, 128, 256, not 512"),
])
def test_bad_input_is_named(given, message):
    with pytest.raises(ValueError, match=message):
        _model(**{"gbps": 25, "clock_mhz": 100, "link_bytes_per_symbol": 0.9, **given})


def _args(*argv):
    parser = argparse.ArgumentParser()
    linkmodel.add_arguments(parser)
    return parser.parse_args(argv)


def test_options_and_defaults():
    args = _args("--gbps", "25", "--clock-mhz", "100")
    assert (args.codec, args.streams, args.lanes, args.flit_bytes, args.json, args.files) \
        == ("qlc", 1, None, 256, False, [])
    with pytest.raises(SystemExit):
        _args("--gbps", "25", "--clock-mhz", "100", "--codec", "zip")


@pytest.mark.parametrize("argv,message", [
    (["--gbps", "0", "--clock-mhz", "100"], "--gbps must be"),
    (["--gbps", "25", "--clock-mhz", "-5"], "--clock-mhz must be"),
    (["--gbps", "25", "--clock-mhz", "100", "--streams", "0"], "--streams must be 1..16"),
    (["--gbps", "25", "--clock-mhz", "100", "--streams", "17"], "--streams must be 1..16"),
])
def test_bad_options_are_refused_before_any_coding(argv, message):
    with pytest.raises(ValueError, match=message):
        linkmodel.run(_args(*argv))


def test_files_of_the_wrong_format():
    e4m3 = str(bundled_files(kind="ffn1_act", layers=[0], steps=[3])[0])
    bf16 = str(bundled_bf16_files(kind="ffn1_act", layers=[1], steps=[3])[0])
    with pytest.raises(FormatError, match="holds e4m3 bytes .* the exponent link carries "
                                          "bf16 values"):
        measure_link("exponent", [e4m3])
    with pytest.raises(FormatError, match="holds bf16 values .* the qlc link carries e4m3"):
        measure_link("qlc", [bf16])
    with pytest.raises(ValueError, match="holds e4m3 bytes"):
        linkmodel.run(_args("--gbps", "25", "--clock-mhz", "100", "--codec", "exponent", e4m3))


def test_run_on_files_prints_the_model_of_their_flits(capsys):
    files = [str(path) for path in bundled_files(kind="ffn1_act", layers=[0])]
    assert linkmodel.run(_args("--gbps", "40", "--clock-mhz", "100", "--streams", "4",
                               "--json", *files)) == 0
    answer = json.loads(capsys.readouterr().out)
    sample = measure_link("qlc", files, streams=4)
    stats = sample.stats
    assert answer["stats"] == stats._asdict()
    assert stats.symbols == 4 * 24576 and stats.table_flits == 1
    assert answer["link_bytes_per_symbol"] == stats.link_bytes / stats.symbols
    assert answer["limited_by"] == "codecs"
    # QLC with 256-byte flits answers from the link hardware's measured rate.
    rate = linkmodel.LINK_HARDWARE["qlc", 1, 256].symbols_per_cycle
    assert answer["hardware"]["symbols_per_cycle"] == rate
    assert answer["effective_raw_gbps"] == pytest.approx(4 * rate * 100e6 * 8 / 1e9)
    linkmodel.run(_args("--gbps", "40", "--clock-mhz", "100", *files))
    text = capsys.readouterr().out
    assert "the codecs limit" in text and "streams to keep up" in text


def test_the_bundled_default():
    """No FILEs: step 3 of every class, tables from steps 0-2; the flits cost less than
    raw and more than the codec's own frames."""
    sample = measure_link("exponent")
    assert sample.raw_bytes_per_symbol == 2
    assert sample.stats.table_flits == 4
    assert sample.stats.coded_bytes < sample.stats.link_bytes < sample.stats.raw_bytes
    assert "bundled bf16 sample" in sample.source


def test_retry_latency_is_counted():
    """``linkcodec link`` adds retry to the latency: RetryTx's 2 cycles and RetryRx's flit
    (its words at the 64-byte link word, and 1) to every flit, and the round trip (nak, notice,
    a flit finished, the read, the flit again on the wire) to a flit sent again."""
    figures = StreamFigures(symbols_per_cycle=1.0, latency_cycles=10, fmax_mhz=200.0)
    for flit_bytes, words in ((64, 1), (256, 4)):
        answer = link_model(gbps=512, clock_mhz=500, link_bytes_per_symbol=0.5,
                            raw_bytes_per_symbol=1, flit_bytes=flit_bytes, figures=figures)
        latency = answer["latency"]
        assert latency["retry_cycles"] == 3 + words
        assert latency["with_retry_ns"] == pytest.approx(latency["total_ns"]
                                                         + (3 + words) * 2)
        assert latency["retry_round_trip_cycles"] == 4 + words
        assert latency["retry_round_trip_ns"] == pytest.approx(
            (4 + words) * 2 + 8 * flit_bytes / 512)
        assert "a flit sent again pays the retry round trip" in format_answer(answer)
