"""Every block and the link under Icarus Verilog, a 4-state event-driven simulator like the
ones users run our Verilog in: the same harness and testbench as under Verilator,
bit-exact against the golden model, with no X or Z on any valid, ready or transferred
payload.

Icarus is not on PyPI: ``.ci/run`` installs it, and these tests skip, saying so, where
``iverilog`` is missing. Random idle and backpressure are on; the seed is printed
(``LINKCODEC_SEED`` replays). Icarus builds have their own directories (``-icarus``), and
each case runs on its own xdist worker group, so no build is shared with another test.
"""

import shutil

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from linkcodec.hardware import hardware_file, sample_frames
from linkcodec.rtl.blocks import BLOCKS
from linkcodec.sim.contract import contract_frames
from linkcodec.sim.harness import XZValueError, first_mismatch, run_beats, run_frames
from linkcodec.sim.link import run_link

pytestmark = pytest.mark.skipif(
    shutil.which("iverilog") is None,
    reason="Icarus Verilog (iverilog) is not installed; .ci/run installs it")


def icarus_lanes(block):
    """4 lanes where the block takes them (every block of today), else its fewest."""
    return 4 if 4 in block.lanes else min(block.lanes)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xdist_group(f"icarus-{name}-{icarus_lanes(block)}"),
                 id=name)
    for name, block in BLOCKS.items()])
def test_block_under_icarus(name, seed):
    """The contract's corner frames and a real tensor, bit-exact against golden with the
    block's run-time tables (its description's ``example_tables``, so a new block needs
    no edit here); an X or Z would raise."""
    block = BLOCKS[name]
    lanes = icarus_lanes(block)
    frames = contract_frames(block, lanes, real=sample_frames(block, 1000), seed=seed)
    result = run_frames(block, frames, lanes=lanes, tables=block.example_tables(),
                        idle="random", stall="random", seed=seed, simulator="icarus")
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    assert "-icarus" in result["build_dir"]


BYTE = data.StructLayout({"byte": 8})


class MiswiredForwarder(wiring.Component):
    """Meant to forward ``i`` to ``o`` through one register stage, but one signal is wired
    from ``spare``'s payload, which the testbench never drives (no beats on ``spare``): Z
    in a 4-state simulator. ``miswired`` is ``"payload"`` (``o``'s payload), ``"valid"``
    (``o``'s valid) or ``"ready"`` (``i``'s ready)."""

    def __init__(self, miswired):
        self.miswired = miswired
        super().__init__({"i": In(stream.Signature(BYTE)), "spare": In(stream.Signature(BYTE)),
                          "o": Out(stream.Signature(BYTE))})

    def elaborate(self, platform):
        m = Module()
        undriven = self.spare.payload.byte
        ready = ~self.o.valid | self.o.ready
        m.d.comb += self.i.ready.eq(undriven[0] if self.miswired == "ready" else ready)
        with m.If(ready):
            m.d.sync += [
                self.o.valid.eq(undriven[0] if self.miswired == "valid" else self.i.valid),
                self.o.payload.eq(undriven if self.miswired == "payload" else self.i.payload),
            ]
        return m


@pytest.mark.parametrize(("miswired", "port"), [
    pytest.param(miswired, port, marks=pytest.mark.xdist_group(f"icarus-miswired-{miswired}"),
                 id=miswired)
    for miswired, port in [("payload", "o"), ("valid", "o"), ("ready", "i")]])
def test_xz_on_a_read_port_fails_the_case(miswired, port, seed, tmp_path):
    """The check is real: an undriven input reaching a valid, a ready or a transferred
    payload fails the run, naming the port, the cycle and what was X or Z."""
    beats = [{"byte": value} for value in range(10)]
    with pytest.raises(XZValueError, match="X/Z values on ports that are read") as caught:
        run_beats(MiswiredForwarder(miswired), inputs={"i": beats}, expected={"o": beats},
                  idle="bursty", stall="bursty", seed=seed, build_root=tmp_path,
                  name=f"miswired_{miswired}", simulator="icarus")
    events = caught.value.events
    assert all(event["cycle"] >= 1 for event in events)
    if miswired == "payload":
        assert {event["port"] for event in events} == {"o"}
        assert all(event["what"].startswith("payload has 8 X/Z of 8 bits (MSB first): ")
                   for event in events)
    else:
        # An X valid also reaches i's ready, through ready = ~o.valid | o.ready.
        assert any(event["port"] == port and event["what"] in (f"{miswired} is X",
                                                               f"{miswired} is Z")
                   for event in events)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xdist_group(f"icarus-{name}-{icarus_lanes(block)}"),
                 id=name)
    for name, block in BLOCKS.items()])
def test_block_under_icarus_with_no_config_write(name, seed):
    """The tables set at elaboration and the config port never written: a reset-less
    table register must come up with its initial value in a 4-state simulator too (one
    whose next value nothing ever computes latches X at its first clock edge)."""
    block = BLOCKS[name]
    lanes = icarus_lanes(block)
    frames = contract_frames(block, lanes, seed=seed)
    result = run_frames(block, frames, lanes=lanes, tables=block.example_tables(),
                        runtime_config=False, idle="bursty", stall="bursty", seed=seed,
                        simulator="icarus")
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


# The link's shapes as tests/test_rtl_link.py runs them under Verilator: flits of 256, 64
# and 128 bytes, link words of 64, 16 and 32.
@pytest.mark.parametrize(("codec", "flit_bytes", "link_bytes"), [
    pytest.param(codec, flit_bytes, link_bytes,
                 marks=pytest.mark.xdist_group(f"icarus-link-{codec}"), id=codec)
    for codec, flit_bytes, link_bytes in [("qlc", 256, 64), ("huffman", 64, 16),
                                          ("exponent", 128, 32)]])
def test_link_under_icarus(codec, flit_bytes, link_bytes, seed):
    """``LinkTx`` driving ``LinkRx``, 2 streams, with random idle cycles, backpressure and
    a pausing channel: every stream bit-exact, ``LinkTx``'s flits the golden writer's
    byte for byte, no X or Z on a valid, a ready or a transferred payload of the pair's
    ports (:class:`XZValueError`) nor in a flit crossing the channel (the testbench fails
    on reading it). A few hundred symbols a stream, in coded and raw flits: Icarus is
    slow."""
    tensor = np.load(hardware_file(f"{codec}-encoder")).reshape(-1)
    rng = np.random.default_rng(seed)
    noise = (rng.integers(0, 1 << 16, 150, dtype=np.uint16) if codec == "exponent"
             else rng.integers(0, 256, 150, dtype=np.uint8))
    frames = [tensor[:250], tensor[250:500], noise, tensor[500:650]]
    result = run_link(frames, codec=codec, streams=2, flit_bytes=flit_bytes,
                      link_bytes=link_bytes, idle="random", stall="random", seed=seed,
                      simulator="icarus")
    assert result["bit_exact"], f"seed {seed}: {result.get('mismatch')}"
    assert result["tx_bit_exact"], f"seed {seed}"
    assert result["flits"] > result["raw_flits"] > 0
