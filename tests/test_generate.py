"""``linkcodec generate``: module names, default lanes, Verilator lint of every block, the
AXI4-Stream port names. The AXI wrapper's behaviour is tested in ``tests/test_axi.py``.
"""

import subprocess

import pytest

from linkcodec.cli import main
from linkcodec.generate import generate
from linkcodec.rtl.blocks import BLOCKS
from linkcodec.sim.runner import verilator_environment


def lint(paths):
    verilator_environment()
    return subprocess.run(["verilator", "--lint-only", "-Wall", *map(str, paths)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("axi_stream", [False, True])
@pytest.mark.parametrize("block", list(BLOCKS))
def test_every_block_lints_clean(block, axi_stream, tmp_path):
    lanes = 4 if 4 in BLOCKS[block].lanes else max(BLOCKS[block].lanes)
    paths = generate(block, lanes=lanes, axi_stream=axi_stream, output=tmp_path)
    result = lint(paths)
    assert result.returncode == 0 and not result.stderr, result.stderr[:2000]
    if axi_stream:
        # docs/axi.md: every block's cfg_ready follows its bank switch; none is tied high.
        assert "assign cfg_ready = 1'h1;" not in paths[0].read_text(), block


def test_lint_finds_what_the_waivers_do_not_cover(tmp_path):
    """The waivers are for one file and a few rules: without them the same file warns,
    and a real fault in a file beside it is still reported."""
    verilog, waivers = generate("qlc-decoder", lanes=1, output=tmp_path)
    assert "UNUSEDSIGNAL" in lint([verilog]).stderr
    broken = tmp_path / "broken.v"
    broken.write_text("module broken(input wire [3:0] a, output wire [3:0] y);\n"
                      "  assign y[1:0] = a[1:0];\nendmodule\n")
    assert "UNDRIVEN" in lint([waivers, verilog, broken]).stderr


def test_module_names_say_what_the_module_is(tmp_path, capsys):
    assert main(["generate", "qlc-decoder", "--lanes", "4", "-o", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(tmp_path / "linkcodec_qlc_decoder_l4.v"),
                       str(tmp_path / "linkcodec_qlc_decoder_l4.vlt")]
    assert "module linkcodec_qlc_decoder_l4(" in (tmp_path / printed[0]).read_text()
    paths = generate("qlc-encoder", lanes=2, word_width=32, axi_stream=True, output=tmp_path)
    assert paths[0].name == "linkcodec_qlc_encoder_l2_w32_axis.v"
    assert generate("qlc-encoder", lanes=2, word_width=16,
                    output=tmp_path)[0].name == "linkcodec_qlc_encoder_l2.v"


def test_bad_lanes_are_refused(tmp_path, capsys):
    assert main(["generate", "qlc-encoder", "--lanes", "3", "-o", str(tmp_path)]) == 2
    assert "lanes must be 1, 2, 4, 8 or 16, not 3" in capsys.readouterr().err


def test_axi_names_clock_and_reset(tmp_path):
    text = generate("qlc-decoder", lanes=2, axi_stream=True, output=tmp_path)[0].read_text()
    for port in ["input aclk", "input aresetn", "input s_axis_tvalid", "output s_axis_tready",
                 "input [15:0] s_axis_tdata", "input s_axis_tlast", "input [4:0] s_axis_tuser",
                 "output [15:0] m_axis_tdata", "output [1:0] m_axis_tkeep",
                 "output [1:0] m_axis_tuser", "input cfg_we", "input [8:0] cfg_addr",
                 "input [21:0] cfg_data", "output cfg_ready"]:
        direction, *width, name = port.split()
        assert any(line.split() == [direction, *width, name + ";"]
                   for line in text.splitlines()), port


@pytest.mark.parametrize("kind", ["link-tx", "link-rx"])
def test_link_with_retry_under_axi_names_lints_clean(kind, tmp_path, capsys):
    """``generate link-tx|link-rx --retry-depth D --axi-stream``: the return channel is a
    pair of AXI4-Stream value ports (``docs/axi.md``, "The link's blocks"), ``m_axis_ack``
    out of ``LinkRx`` and ``s_axis_ack`` into ``LinkTx``, ``tdata`` 16 bits (``next``,
    ``naks``); the Verilog lints clean."""
    assert main(["generate", kind, "--retry-depth", "16", "--axi-stream", "--streams", "2",
                 "--flit-bytes", "64", "--link-bytes", "32", "-o", str(tmp_path)]) == 0
    module = f"linkcodec_{kind.replace('-', '_')}_qlc_s2_l1_f64_w32_r16_axis"
    verilog, waivers = tmp_path / f"{module}.v", tmp_path / f"{module}.vlt"
    assert capsys.readouterr().out.split() == [str(verilog), str(waivers)]
    result = lint([waivers, verilog])
    assert result.returncode == 0 and not result.stderr, result.stderr[:2000]
    text = verilog.read_text()
    source, sink = ("input", "output") if kind == "link-tx" else ("output", "input")
    prefix = "s_axis_ack" if kind == "link-tx" else "m_axis_ack"
    for port in [f"{source} {prefix}_tvalid", f"{sink} {prefix}_tready",
                 f"{source} [15:0] {prefix}_tdata", f"{source} [1:0] {prefix}_tkeep",
                 f"{source} {prefix}_tlast"]:
        direction, *width, name = port.split()
        assert any(line.split() == [direction, *width, name + ";"]
                   for line in text.splitlines()), port
    # The plain return-channel port (i_ack, o_ack) is the wrapped block's, not the module's.
    top = text.split("endmodule")[0].splitlines()
    assert not any(line.split()[-1:] in (["i_ack;"], ["o_ack;"]) and line.split()[0] in
                   ("input", "output") for line in top)


@pytest.mark.parametrize("block", list(BLOCKS))
def test_lanes_default_to_the_blocks_fewest(block, tmp_path, capsys):
    """Without ``--lanes`` every block is generated at its fewest lanes (as ``linkcodec
    sim`` runs it): 1, and 4 for the exponent blocks, whose 1 is refused."""
    description = BLOCKS[block]
    assert main(["generate", block, "-o", str(tmp_path)]) == 0
    fewest = min(description.lanes)
    module = description.module_name(lanes=fewest)
    assert capsys.readouterr().out.split()[0] == str(tmp_path / f"{module}.v")
    assert f"module {module}(" in (tmp_path / f"{module}.v").read_text()
    assert generate(block, output=tmp_path)[0].name == f"{module}.v"


def test_exponent_encoder_default_is_four_lanes(tmp_path, capsys):
    assert main(["generate", "exponent-encoder", "-o", str(tmp_path)]) == 0
    path = capsys.readouterr().out.split()[0]
    assert path.endswith("linkcodec_exponent_encoder_l4.v")
    assert main(["generate", "exponent-encoder", "--lanes", "1", "-o", str(tmp_path)]) == 2
    assert "exponent-encoder takes lanes 4, 8, 16, not 1" in capsys.readouterr().err


def test_block_choices_come_from_the_registry(tmp_path, capsys, monkeypatch):
    """The block names are read from ``rtl.blocks.BLOCKS`` when the parser is built."""
    from linkcodec.rtl import blocks

    monkeypatch.setitem(blocks.BLOCKS, "made-up-encoder", BLOCKS["qlc-encoder"])
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    assert "made-up-encoder" in capsys.readouterr().out
