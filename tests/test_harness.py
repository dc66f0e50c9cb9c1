"""The harness is codec-agnostic: made-up blocks, kept only here, run through it with
nothing added but their descriptions.

- ``SymbolInverter``: one input, one output, no config port, 8- or 16-bit symbols;
- ``NibbleSplitter``: one input, two outputs backpressured independently, and a config
  port that loads an XOR mask through the shared :class:`ConfigRegisters` piece.

Random idle and backpressure are on; the seed is printed (``LINKCODEC_SEED`` replays).
"""

import os
from pathlib import Path

import numpy as np
import pytest
from amaranth.hdl import Fragment, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from linkcodec.rtl.payload import config_write_layout, symbol_layout
from linkcodec.rtl.table import ConfigRegisters
from linkcodec.rtl.blocks.beats import symbol_beats
from linkcodec.rtl.blocks.description import BlockDescription
from linkcodec.sim.harness import (ProtocolError, first_mismatch, run_beats, run_frames,
                                   stream_ports)
from linkcodec.sim.stream import PROTOCOL_RULES

IDLE, STALL = 0.3, 0.3


class SymbolInverter(wiring.Component):
    """Inverts every symbol (lanes past ``count`` are 0, as in every block); one
    register stage."""

    def __init__(self, *, lanes, width):
        self.width = width
        layout = symbol_layout(lanes, width=width)
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.eq(self.i.payload)]
            for lane, symbol in enumerate(self.i.payload.symbols):
                m.d.sync += self.o.payload.symbols[lane].eq(
                    Mux(lane < self.i.payload.count, ~symbol, 0))
        return m


class InverterBlock(BlockDescription):
    name = "test-inverter"
    module = "test_inverter"

    def __init__(self, width):
        self.width = width
        self.symbol_dtype = np.uint8 if width == 8 else np.uint16

    def build(self, *, lanes, word_width=None, tables=None):
        return SymbolInverter(lanes=lanes, width=self.width)

    def module_name(self, *, lanes, word_width=None):
        return f"{self.module}_{self.width}_l{lanes}"

    def frame_io(self, frame, *, lanes, word_width, tables):
        return {"i": symbol_beats([frame], lanes)}, {"o": symbol_beats([~frame], lanes)}


config = config_write_layout(addr_width=2, data_width=8)


class NibbleSplitter(wiring.Component):
    """Sends each symbol's high nibble to ``o_high`` and its low nibble, XORed with a mask
    from the config port (address 1), to ``o_low``."""

    def __init__(self, *, lanes, mask):
        self.lanes, self.mask = lanes, mask
        layout = symbol_layout(lanes)
        super().__init__({
            "i": In(stream.Signature(layout)),
            "o_high": Out(stream.Signature(layout)),
            "o_low": Out(stream.Signature(layout)),
            "i_config": In(stream.Signature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.mask = mask = ConfigRegisters(shape=8, depth=1, init=[self.mask],
                                                   config_layout=config, base=1)
        m.d.comb += [self.i_config.ready.eq(1), mask.config.valid.eq(self.i_config.valid),
                     mask.config.payload.eq(self.i_config.payload)]
        m.d.comb += self.i.ready.eq((~self.o_high.valid | self.o_high.ready)
                                    & (~self.o_low.valid | self.o_low.ready))
        with m.If(self.i.valid & self.i.ready):
            for port in (self.o_high, self.o_low):
                m.d.sync += [port.valid.eq(1), port.payload.eq(self.i.payload)]
            for lane, symbol in enumerate(self.i.payload.symbols):
                m.d.sync += [self.o_high.payload.symbols[lane].eq(symbol[4:]),
                             self.o_low.payload.symbols[lane].eq(Mux(
                                 lane < self.i.payload.count, (symbol ^ mask.entries[0])[:4],
                                 0))]
        with m.Else():
            for port in (self.o_high, self.o_low):
                with m.If(port.ready):
                    m.d.sync += port.valid.eq(0)
        return m


class SplitterBlock(BlockDescription):
    name = "test-splitter"
    module = "test_splitter"
    config_ports = ("i_config",)

    def default_tables(self):
        return 0                                    # the mask

    def build(self, *, lanes, word_width=None, tables=None):
        return NibbleSplitter(lanes=lanes, mask=tables or 0)

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": symbol_beats([frame], lanes)},
                {"o_high": symbol_beats([frame >> 4], lanes),
                 "o_low": symbol_beats([(frame ^ tables) & 15], lanes)})

    def config_writes(self, tables):
        return {"i_config": [{"addr": 1, "data": tables}, {"addr": 2, "data": 0xFF}]}


def frames(dtype, lanes):
    rng = np.random.default_rng(lanes)
    top = np.iinfo(dtype).max
    return [np.arange(0, top + 1, max(1, (top + 1) // 300), dtype=dtype),
            np.zeros(0, dtype), np.array([top], dtype),
            rng.integers(0, top + 1, 3 * lanes + 1, dtype=dtype)]


@pytest.mark.parametrize("width", [8, 16])
@pytest.mark.parametrize("lanes", [1, 4])
def test_inverter_runs_through_the_harness(width, lanes, seed):
    block = InverterBlock(width)
    stimulus = frames(block.symbol_dtype, lanes)
    result = run_frames(block, stimulus, lanes=lanes, idle=IDLE, stall=STALL, seed=seed)
    assert result["bit_exact"], f"seed {seed}"
    assert result["symbols"] == sum(frame.size for frame in stimulus)
    assert [frame["symbols"] for frame in result["frames"]] == [f.size for f in stimulus]
    assert result["output"]["o"][0]["symbols"][0] == (1 << width) - 1 - int(stimulus[0][0])


@pytest.mark.parametrize("idle,low,high", [(0.3, 0.22, 0.38), ("none", 0.0, 0.0)])
def test_idle_cycles_fall_between_beats(idle, low, high, seed):
    """A driver's idle pattern pauses before every beat, not only before the first: with
    no backpressure, the share of idle cycles among the input's cycles is the pattern's
    chance (0.3 for 1,000 beats: within 0.08 at more than 5 sigma)."""
    component = SymbolInverter(lanes=1, width=8)
    symbols = np.arange(1000, dtype=np.uint16).astype(np.uint8)
    beats = symbol_beats([symbols], 1)
    result = run_beats(component, inputs={"i": beats},
                       expected={"o": symbol_beats([~symbols], 1)},
                       idle=idle, stall="none", seed=seed, name="test_inverter_8_l1")
    assert result["bit_exact"], f"seed {seed}"
    cycles = result["input_cycles"]["i"]
    idle_share = 1 - len(cycles) / (cycles[-1] - cycles[0] + 1)
    assert low <= idle_share <= high, (idle_share, f"seed {seed}")



class TwoInverters(wiring.Component):
    """Two :class:`SymbolInverter` stages in a row: the stream between them is ``mid``
    in the top module (its signals ``mid__valid``, ``mid__ready``, ``mid__payload``)."""

    def __init__(self):
        self.first = SymbolInverter(lanes=1, width=8)
        self.second = SymbolInverter(lanes=1, width=8)
        super().__init__({"i": In(stream.Signature(self.first.i.payload.shape())),
                          "o": Out(stream.Signature(self.second.o.payload.shape()))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.first, m.submodules.second = self.first, self.second
        mid = stream.Signature(self.first.o.payload.shape()).create(path=("mid",))
        wiring.connect(m, wiring.flipped(self.i), self.first.i)
        wiring.connect(m, self.first.o, wiring.flipped(mid))
        wiring.connect(m, mid, self.second.i)
        wiring.connect(m, self.second.o, wiring.flipped(self.o))
        return m


def test_a_stream_inside_the_design_is_watched(seed):
    """``watch``: the payloads that crossed an inner stream, in order, under idle cycles
    and backpressure (the inverted symbols, which no port carries)."""
    component = TwoInverters()
    symbols = np.arange(300, dtype=np.uint16).astype(np.uint8)
    layout = component.first.o.payload.shape()
    result = run_beats(component, inputs={"i": symbol_beats([symbols], 1)},
                       expected={"o": symbol_beats([symbols], 1)}, idle=IDLE,
                       stall=STALL, seed=seed, name="test_two_inverters",
                       watch={"mid": layout})
    assert result["bit_exact"], f"seed {seed}"
    assert result["watched"]["mid"] == symbol_beats([~symbols], 1), f"seed {seed}"


def test_the_scoreboard_catches_a_wrong_beat(seed):
    """A harness that could not fail would prove nothing: one wrong expected symbol."""
    component = SymbolInverter(lanes=1, width=8)
    beats = symbol_beats([np.arange(10, dtype=np.uint8)], 1)
    expected = symbol_beats([~np.arange(10, dtype=np.uint8)], 1)
    expected[6]["symbols"] = [0]
    result = run_beats(component, inputs={"i": beats}, expected={"o": expected},
                       idle=IDLE, stall=STALL, seed=seed, name="test_inverter_8_l1")
    assert not result["bit_exact"]
    assert result["output"]["o"][6]["symbols"] == [255 - 6]
    assert first_mismatch(result).startswith("o: first mismatch at beat 6: got {'symbols': [249]")


@pytest.mark.parametrize("runtime_config", [True, False])
def test_two_outputs_and_a_config_port(runtime_config, seed):
    block = SplitterBlock()
    lanes = 2
    stimulus = frames(np.uint8, lanes)
    result = run_frames(block, stimulus, lanes=lanes, tables=0x5A,
                        runtime_config=runtime_config, idle=IDLE, stall=STALL, seed=seed)
    assert result["bit_exact"], f"seed {seed}"
    assert set(result["output"]) == {"o_high", "o_low"}
    assert result["output"]["o_low"][0]["symbols"][0] == 0xA


def test_ports_come_from_the_signature():
    splitter = NibbleSplitter(lanes=2, mask=0)
    Fragment.get(splitter, None)
    inputs, outputs = stream_ports(splitter)
    assert list(inputs) == ["i", "i_config"]
    assert list(outputs) == ["o_high", "o_low"]
    assert inputs["i_config"] == config


def test_unknown_ports_are_refused():
    inverter = SymbolInverter(lanes=1, width=8)
    Fragment.get(inverter, None)           # a block refused by the harness is still used
    with pytest.raises(ValueError, match="has no input stream port 'x'; it has i"):
        run_beats(inverter, inputs={"x": []}, expected={})
    with pytest.raises(ValueError, match="has no output stream port 'o_low'; it has o"):
        run_beats(inverter, inputs={}, expected={"o_low": []})


def test_frames_of_the_wrong_dtype_are_refused():
    with pytest.raises(ValueError, match="takes frames of uint16 symbols, not uint8"):
        run_frames(InverterBlock(16), [np.zeros(3, np.uint8)], lanes=1)


def test_build_lock_makes_a_second_process_wait(tmp_path):
    """Two runs of the same block share a build folder; the second waits for the first
    instead of rebuilding the model under it (flock: a second open of the lock file, as
    another process's would be, blocks)."""
    import threading

    from linkcodec.sim.runner import build_lock

    entered = threading.Event()

    def second():
        with build_lock(tmp_path / "block"):
            entered.set()

    with build_lock(tmp_path / "block") as folder:
        assert folder.is_dir()
        waiter = threading.Thread(target=second)
        waiter.start()
        assert not entered.wait(0.3)
    assert entered.wait(5)
    waiter.join()


def test_verilator_makeflags_keep_a_users_optimisation(monkeypatch):
    """Models compile at -O1 unless the user's MAKEFLAGS says otherwise; the PCH flag is
    always there."""
    from linkcodec.sim.runner import verilator_environment

    monkeypatch.delenv("MAKEFLAGS", raising=False)
    verilator_environment()
    flags = os.environ["MAKEFLAGS"].split()
    assert "OPT_FAST=-O1" in flags and "CFG_CXXFLAGS_PCH_I=-include" in flags
    monkeypatch.setenv("MAKEFLAGS", "OPT_FAST=-O3")
    verilator_environment()
    flags = os.environ["MAKEFLAGS"].split()
    assert "OPT_FAST=-O3" in flags and "OPT_FAST=-O1" not in flags


class PlantedBug(wiring.Component):
    """``inner`` with one break of the stream rules planted on its output ``o``; every
    other port passes straight through. The beats ``o`` carries stay right, so only the
    protocol monitor can tell:

    - ``"valid-fell"``: ``valid`` drops every other cycle that ``ready`` holds it back;
    - ``"payload-changed"``: the payload reads inverted while ``ready`` is low;
    - ``"early-output"``: after reset, a beat (count 0) comes before any input.
    """

    BUGS = ("valid-fell", "payload-changed", "early-output")

    def __init__(self, inner, bug):
        assert bug in self.BUGS
        self.inner, self.bug = inner, bug
        super().__init__(wiring.Signature(dict(inner.signature.members.items())))

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        for name, member in self.signature.members.items():
            outer, port = getattr(self, name), getattr(inner, name)
            if name == "o":
                continue
            if member.flow == In:
                m.d.comb += [port.valid.eq(outer.valid), port.payload.eq(outer.payload),
                             outer.ready.eq(port.ready)]
            else:
                m.d.comb += [outer.valid.eq(port.valid), outer.payload.eq(port.payload),
                             port.ready.eq(outer.ready)]
        o = self.o
        m.d.comb += [o.valid.eq(inner.o.valid), o.payload.eq(inner.o.payload),
                     inner.o.ready.eq(o.ready & o.valid)]
        if self.bug == "valid-fell":
            blink, held = Signal(), Signal()
            m.d.sync += [blink.eq(~blink), held.eq(o.valid & ~o.ready)]
            m.d.comb += o.valid.eq(inner.o.valid & ~(held & blink))
        elif self.bug == "payload-changed":
            with m.If(~o.ready):
                m.d.comb += o.payload.eq(~inner.o.payload.as_value())
        else:
            ghost = Signal(init=1)
            m.d.comb += [o.valid.eq(inner.o.valid | ghost), inner.o.ready.eq(o.ready & ~ghost)]
            with m.If(ghost):
                m.d.comb += o.payload.eq(0)
                with m.If(o.ready):
                    m.d.sync += ghost.eq(0)
        return m


@pytest.mark.parametrize("bug", PlantedBug.BUGS)
def test_the_protocol_monitor_catches_a_planted_bug(bug, seed):
    """Each rule the monitor checks, broken on purpose, fails the run by that rule; the
    same traffic through the unbroken block passes (test_inverter_runs_through_the_harness)."""
    block = InverterBlock(8)
    stimulus = frames(np.uint8, 1)
    inputs, expected = block.frame_io(np.concatenate(stimulus), lanes=1, word_width=None,
                                      tables=None)
    component = PlantedBug(SymbolInverter(lanes=1, width=8), bug)
    with pytest.raises(ProtocolError) as caught:
        run_beats(component, inputs=inputs, expected=expected, idle=IDLE, stall=STALL,
                  seed=seed, name=f"test_inverter_bug_{bug.replace('-', '_')}")
    rules = {event["rule"] for event in caught.value.events}
    assert rules == {bug}, f"seed {seed}: {caught.value.events[:3]}"
    assert caught.value.events[0]["what"].startswith(PROTOCOL_RULES[bug])


def test_the_protocol_monitor_catches_a_planted_bug_in_a_real_block(seed):
    """The QLC encoder's own output with ``valid`` dropping under backpressure."""
    from linkcodec.rtl.blocks import get_block

    block = get_block("qlc-encoder")
    tables = block.default_tables()
    frame = np.arange(256, dtype=np.uint8)
    inputs, expected = block.frame_io(frame, lanes=1, word_width=block.default_word_width(1),
                                      tables=tables)
    component = PlantedBug(block.build(lanes=1), "valid-fell")
    with pytest.raises(ProtocolError, match="valid fell without a transfer"):
        run_beats(component, inputs=inputs, expected=expected, idle=IDLE, stall=STALL,
                  seed=seed, name="qlc_encoder_l1_bug_valid_fell")


def test_verilog_text_converts_a_component_once(monkeypatch):
    """A component run several times is converted once per top name; another object of
    the same block is converted again."""
    from amaranth.back import rtlil

    from linkcodec.rtl.qlc import QlcDecoder
    from linkcodec.rtl.verilog import verilog_text

    calls = []
    convert = rtlil.convert
    monkeypatch.setattr(rtlil, "convert",
                        lambda *args, **kwargs: calls.append(1) or convert(*args, **kwargs))
    block = QlcDecoder(lanes=1)
    first = verilog_text(block, name="top")
    assert verilog_text(block, name="top") == first and len(calls) == 1
    assert "module other" in verilog_text(block, name="other") and len(calls) == 2
    assert verilog_text(QlcDecoder(lanes=1), name="top") == first
    assert len(calls) == 3


def test_one_build_serves_every_name_of_the_same_verilog(tmp_path, seed):
    """Two runs of the same Verilog under two names build one model, in one folder whose
    ``names`` lists both; other Verilog gets a folder of its own."""
    symbols = np.arange(40, dtype=np.uint8)
    results = [run_beats(SymbolInverter(lanes=1, width=8),
                         inputs={"i": symbol_beats([symbols], 1)},
                         expected={"o": symbol_beats([~symbols], 1)}, seed=seed,
                         build_root=tmp_path, name=name)
               for name in ("first_name", "second_name")]
    assert all(result["bit_exact"] for result in results), f"seed {seed}"
    folder = results[0]["build_dir"]
    assert results[1]["build_dir"] == folder
    assert Path(folder, "names").read_text().split() == ["first_name", "second_name"]
    other = run_beats(SymbolInverter(lanes=2, width=8),
                      inputs={"i": symbol_beats([symbols], 2)},
                      expected={"o": symbol_beats([~symbols], 2)}, seed=seed,
                      build_root=tmp_path, name="first_name")
    assert other["bit_exact"] and other["build_dir"] != folder
    # the top module's signals alone are public to VPI (sim/runner.py), not every module's
    command = Path(folder, "Vtop__verFiles.dat").read_text().splitlines()[1]
    assert " --public-depth 1 " in command and "--public-flat-rw" not in command
