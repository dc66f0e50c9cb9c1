"""Every block under Icarus Verilog, a 4-state event-driven simulator like the ones users
run our Verilog in: the same harness and testbench as under Verilator, bit-exact against
the golden model, with no X or Z on any valid, ready or transferred payload.

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

from linkcodec.bundled import bundled_files
from linkcodec.golden.exponent import ExponentTable
from linkcodec.golden.huffman import HuffmanCodebook
from linkcodec.golden.qlc import QlcCode, QlcLayout
from linkcodec.sim.blocks import BLOCKS
from linkcodec.sim.harness import XZValueError, first_mismatch, run_beats, run_frames

LANES = 4
IDLE, STALL = 0.3, 0.3

pytestmark = pytest.mark.skipif(
    shutil.which("iverilog") is None,
    reason="Icarus Verilog (iverilog) is not installed; .ci/run installs it")


def adapted_qlc_code():
    """A code from a real activation PMF with the optimiser's layout (not the base one)."""
    symbols = np.load(bundled_files("ffn2_act", layers=[0])[0]).reshape(-1)
    code = QlcCode.from_pmf(np.bincount(symbols, minlength=256))
    assert code.layout != QlcLayout.base()
    return code


def real_huffman_codebook():
    """The codebook `linkcodec codebook build` makes from a real activation tensor."""
    symbols = np.load(bundled_files("ffn2_act", layers=[0])[0]).reshape(-1)
    return HuffmanCodebook.from_batches([symbols])


def exponent_table():
    """An exponent table other than the reset-time one, with exponents 0 and 1 (those of
    the small bit patterns below) and a few escaping."""
    return ExponentTable((1, 0, 127, 126, 128, 125, 129))


#: Tables each block loads at run time, other than its reset-time default. A new block
#: adds its own here.
RUNTIME_TABLES = {"qlc-encoder": adapted_qlc_code, "qlc-decoder": adapted_qlc_code,
                  "huffman-encoder": real_huffman_codebook,
                  "huffman-decoder": real_huffman_codebook,
                  "exponent-encoder": exponent_table, "exponent-decoder": exponent_table}


def stimulus_frames(dtype, lanes):
    """Every 8-bit symbol, random and zero-heavy frames, real activations, and the odd
    lengths: an empty frame, one symbol, a partial last beat."""
    rng = np.random.default_rng(lanes)
    real = np.load(bundled_files("ffn2_act", layers=[3])[0]).reshape(-1)[:1000]
    return [np.asarray(frame).astype(dtype) for frame in [
        np.arange(256),
        rng.integers(0, 256, 400),
        np.clip(np.abs(rng.normal(0, 6, 400)), 0, 255),
        np.zeros(0),
        np.array([255]),
        rng.integers(0, 256, lanes + 1),
        real,
    ]]


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xdist_group(f"icarus-{name}-{LANES}"), id=name)
    for name in BLOCKS])
def test_block_under_icarus(name, seed):
    """Bit-exact against golden with run-time tables; an X or Z would raise."""
    if name not in RUNTIME_TABLES:
        pytest.fail(f"{name} has no run-time tables in RUNTIME_TABLES; add them")
    block = BLOCKS[name]
    result = run_frames(block, stimulus_frames(block.symbol_dtype, LANES), lanes=LANES,
                        tables=RUNTIME_TABLES[name](), idle=IDLE, stall=STALL, seed=seed,
                        simulator="icarus")
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
                  idle=IDLE, stall=STALL, seed=seed, build_root=tmp_path,
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
