"""A codec is one registry line away: a made-up codec, kept only in this file, runs
through ``linkcodec sim``, the contract suite and ``linkcodec generate`` with no shared
file edited.

The codec XORs every byte with a one-byte key (its table, loaded through ``i_config``),
so its golden model, its RTL and its description fit on a page: golden ``encode`` /
``decode``, an ``XorEncoder`` (symbol beats in, one word a beat out) and an
``XorDecoder`` (words in, symbol beats out), each one register stage. Both are built on
the shared pieces (``LanedBlock``, the payload layouts, ``ConfigRegisters``); the test
registers their descriptions with :func:`linkcodec.rtl.blocks.register`.
"""

import json

import numpy as np
import pytest
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from linkcodec.cli import main
from linkcodec.rtl.block import LanedBlock
from linkcodec.rtl.payload import config_write_layout, symbol_layout, word_layout
from linkcodec.rtl.table import ConfigRegisters
from linkcodec.sim import contract
from linkcodec.rtl.blocks.beats import decoder_beats, frame_words, symbol_beats
from linkcodec.rtl.blocks.description import BlockDescription
from linkcodec.rtl.blocks import BLOCKS, register, unregister
from linkcodec.sim.pair import pairs

CONFIG = config_write_layout(addr_width=1, data_width=8)
LANES = (1, 2, 4)


# -- golden ------------------------------------------------------------------------------

def encode(symbols, key):
    """``(data, nbits)``: every byte XOR ``key``."""
    return (np.asarray(symbols, np.uint8) ^ np.uint8(key)).tobytes(), 8 * len(symbols)


# -- RTL -----------------------------------------------------------------------------------

def _check(lanes, word_width, tables):
    if not isinstance(tables, int) or isinstance(tables, bool):
        raise TypeError(f"tables must be a key byte (int), not {type(tables).__name__}")
    if not 0 <= tables < 256:
        raise ValueError(f"the key is a byte, not {tables}")
    if word_width != 8 * lanes:
        raise ValueError(f"the XOR blocks carry one byte a lane: word_width must be "
                         f"{8 * lanes}, not {word_width}")
    return tables


class _XorBlock(LanedBlock):
    latency = 1

    def __init__(self, ports, *, lanes, word_width=None, tables=None):
        super().__init__(lambda lanes, width: {**ports(lanes, width),
                                               "i_config": In(stream.Signature(CONFIG))},
                         lanes=lanes, word_width=word_width,
                         default_word_width=lambda lanes: 8 * lanes, allowed_lanes=LANES,
                         check=lambda lanes, width: _check(lanes, width,
                                                           0 if tables is None else tables))

    def _key(self, m):
        m.submodules.key = key = ConfigRegisters(shape=8, depth=1, init=[self.tables],
                                                 config_layout=CONFIG)
        m.d.comb += [self.i_config.ready.eq(1), key.config.valid.eq(self.i_config.valid),
                     key.config.payload.eq(self.i_config.payload)]
        return key.entries[0]

    def _count(self, count):
        return Mux(count > self.lanes, self.lanes, count)


class XorEncoder(_XorBlock):
    def __init__(self, **parameters):
        super().__init__(lambda lanes, width: {
            "i": In(stream.Signature(symbol_layout(lanes))),
            "o": Out(stream.Signature(word_layout(width)))}, **parameters)

    def elaborate(self, platform):
        m = Module()
        key, beat = self._key(m), self.i.payload
        count = self._count(beat.count)
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.bits.eq(count * 8),
                         self.o.payload.last.eq(beat.last),
                         # lane 0 is the word's first byte: its top bits
                         self.o.payload.data.eq(Cat(*reversed([
                             Mux(lane < count, symbol ^ key, 0)
                             for lane, symbol in enumerate(beat.symbols)])))]
        return m


class XorDecoder(_XorBlock):
    def __init__(self, **parameters):
        super().__init__(lambda lanes, width: {
            "i": In(stream.Signature(word_layout(width))),
            "o": Out(stream.Signature(symbol_layout(lanes, error=True)))}, **parameters)

    def elaborate(self, platform):
        m = Module()
        key, word = self._key(m), self.i.payload
        count = self._count(word.bits >> 3)
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.count.eq(count),
                         self.o.payload.last.eq(word.last)]
            for lane in range(self.lanes):
                byte = word.data[8 * (self.lanes - 1 - lane):8 * (self.lanes - lane)]
                m.d.sync += self.o.payload.symbols[lane].eq(Mux(lane < count, byte ^ key, 0))
        return m


# -- descriptions ------------------------------------------------------------------------

class _XorDescription(BlockDescription):
    lanes = LANES
    config_ports = ("i_config",)
    component = None

    def default_word_width(self, lanes):
        return 8 * lanes

    def min_word_width(self, lanes):
        return 8 * lanes                # one byte a lane, always

    def default_tables(self):
        return 0

    def example_tables(self):
        return 0x5A

    def fitted_tables(self, frames):
        """The most common byte, so that it codes as 0."""
        counts = sum(np.bincount(self.prepare(frame), minlength=256) for frame in frames)
        return int(np.argmax(counts))

    def build(self, *, lanes, word_width=None, tables=None):
        return self.component(lanes=lanes, word_width=word_width, tables=tables)

    def config_writes(self, tables):
        return {"i_config": [{"addr": 0, "data": tables}]}


class XorEncoderBlock(_XorDescription):
    name, module, component = "xor-encoder", "test_xor_encoder", XorEncoder

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": symbol_beats([frame], lanes)},
                {"o": frame_words(*encode(frame, tables), word_width)})


class XorDecoderBlock(_XorDescription):
    name, module, component = "xor-decoder", "test_xor_decoder", XorDecoder

    def frame_io(self, frame, *, lanes, word_width, tables):
        return ({"i": frame_words(*encode(frame, tables), word_width)},
                {"o": decoder_beats([frame], lanes)})


@pytest.fixture(scope="module")
def registered():
    blocks = [register(XorEncoderBlock()), register(XorDecoderBlock())]
    yield blocks
    for block in blocks:
        unregister(block.name)


GROUP = pytest.mark.xdist_group("xor-codec")


# -- the tests -----------------------------------------------------------------------------

def test_registering_twice_is_refused(registered):
    with pytest.raises(ValueError, match="a block called 'xor-encoder' is already registered"):
        register(XorEncoderBlock())
    assert {"xor-encoder", "xor-decoder"} <= set(BLOCKS)
    assert "xor-pair" in pairs()


@GROUP
def test_linkcodec_sim_runs_it(registered, tmp_path, capsys):
    symbols = np.random.default_rng(1).integers(0, 256, 333, dtype=np.uint8)
    symbols[::3] = 7                                  # the most common byte: the key
    path = tmp_path / "bytes.npy"
    np.save(path, symbols)
    for block in ("xor-encoder", "xor-decoder"):
        assert main(["sim", block, "--lanes", "2", "--idle", "0.3", "--stall", "0.3",
                     "--json", str(path)]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["block"] == block and report["bit_exact"] is True
        assert report["symbols"] == 333 and report["payload_bits"] == 8 * 333
        assert report["compressibility"] == 0.0
    assert main(["sim", "xor-encoder", "--layout", "base", str(path)]) == 2
    assert "--layout is not an option of xor-encoder; it takes none" in capsys.readouterr().err
    assert main(["sim", "xor-decoder", "--fuzz", "5"]) == 2
    assert "--fuzz fuzzes a decoder" in capsys.readouterr().err


@GROUP
@pytest.mark.parametrize("lanes", [1, pytest.param(4, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["xor-encoder", "xor-decoder"])
def test_the_contract_suite_runs_it(registered, name, lanes, seed):
    """The contract suite's checks on the made-up blocks: every pause pattern at 1 lane,
    the random one at 4 (as test_contract.py does; 4 lanes under -m slow, for make test's
    20 minutes: test_linkcodec_sim_runs_it runs them at 2)."""
    block = BLOCKS[name]
    contract.check_parameters(block)
    for pattern in contract.CONTRACT_PATTERNS if lanes == 1 else ("random",):
        contract.check_round_trip(block, lanes, pattern=pattern, seed=seed)
    assert contract.check_latency(block, lanes) == 1
    frame = np.random.default_rng(lanes).integers(0, 256, 2000 * lanes, dtype=np.uint8)
    contract.check_throughput(block, lanes, [frame])
    contract.check_reset_mid_stream(block, lanes, pattern="bursty", seed=seed)
    # (the count clamp at 2 lanes beside 1: its count field holds 3)
    assert contract.check_count_clamp(block, max(lanes, 2), pattern="random", seed=seed) == (
        name == "xor-encoder")
    # Its ready is a register slice's (~o.valid | o.ready): it does not promise that
    # i.ready is free of o.ready, and the check, asked anyway, says so.
    assert not block.ready_independent
    with pytest.raises(contract.ContractError, match="an input's ready changed"):
        contract.check_ready_independence(block, 1, seed=seed)


@GROUP
def test_the_contract_suite_catches_a_broken_made_up_block(registered, seed):
    """The suite can fail: a decoder whose key register resets (a table reset clears)
    breaks the reset contract; one that ignores the key breaks round trips."""

    class ForgetfulDecoder(XorDecoder):
        def _key(self, m):                        # a key register that reset clears
            key = Signal(8, init=self.tables)
            m.d.comb += self.i_config.ready.eq(1)
            with m.If(self.i_config.valid):
                m.d.sync += key.eq(self.i_config.payload.data)
            return key

    class Forgetful(XorDecoderBlock):
        name, module, component = "xor-forgetful", "test_xor_forgetful", ForgetfulDecoder

    with pytest.raises(contract.ContractError, match="after a reset at cycle"):
        contract.check_reset_mid_stream(Forgetful(), 1, pattern="none", seed=seed,
                                        cycles=150)


@GROUP
def test_its_encoder_drives_its_decoder(registered, seed):
    pair = pairs()["xor-pair"]
    contract.check_round_trip(pair, 2, pattern="bursty", seed=seed)
    contract.check_reset_mid_stream(pair, 2, pattern="random", seed=seed)


def test_linkcodec_generate_writes_it(registered, tmp_path, capsys):
    assert main(["generate", "xor-decoder", "-o", str(tmp_path)]) == 0
    verilog = tmp_path / "test_xor_decoder_l1.v"
    assert capsys.readouterr().out.split()[0] == str(verilog)
    assert "module test_xor_decoder_l1" in verilog.read_text()
    assert main(["generate", "xor-encoder", "--lanes", "4", "--axi-stream", "-o",
                 str(tmp_path)]) == 0
    text = (tmp_path / "test_xor_encoder_l4_axis.v").read_text()
    assert "s_axis_tdata" in text and "cfg_ready" in text
