"""cocotb testbench shared by every streaming block: config, stimulus, scoreboard.

The case file named by ``LINKCODEC_CASE`` (JSON, written by :mod:`linkcodec.sim.harness`)
holds the packed ``i_config`` writes, the packed input beats, the packed beats the
golden model expects on ``o``, the idle and stall probabilities and the seed. The
testbench loads the config, streams the input with random idle cycles, takes the output
with random backpressure, compares it in order against the expectation (the scoreboard),
and writes what it saw to ``LINKCODEC_RESULT``.
"""

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, ReadOnly

from linkcodec.sim.stream import StreamDriver, StreamMonitor


class TB:
    def __init__(self, dut, case):
        self.dut = dut
        self.case = case
        seed = case["seed"]
        dut._log.info("seed %d (replay with --seed %d)", seed, seed)
        rng = random.Random(seed)
        self.source = StreamDriver(dut, "i", dut.clk, case["input"], idle=case["idle"],
                                   rng=random.Random(rng.getrandbits(32)))
        self.sink = StreamMonitor(dut, "o", dut.clk, stall=case["stall"],
                                  rng=random.Random(rng.getrandbits(32)))
        self.config = StreamDriver(dut, "i_config", dut.clk, case["config"])

    async def reset(self):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 2)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    async def load_config(self):
        if not self.case["config"]:
            return
        self.config.start()
        limit = len(self.case["config"]) + 10
        for _ in range(limit):
            await RisingEdge(self.dut.clk)
            if self.config.done:
                break
        self.config.stop()
        self.dut.i_config__valid.value = 0
        await RisingEdge(self.dut.clk)
        assert self.config.done, "the config port did not take every write"


@cocotb.test()
async def run_case(dut):
    with open(os.environ["LINKCODEC_CASE"]) as file:
        case = json.load(file)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    tb = TB(dut, case)
    await tb.reset()
    await tb.load_config()

    expected = case["expected"]
    tb.sink.start()
    tb.source.start()
    limit = case["cycle_limit"]
    cycles = 0
    while cycles < limit:
        await RisingEdge(dut.clk)
        cycles += 1
        if len(tb.sink.beats) >= len(expected) and tb.source.done:
            break
    # A few more cycles catch anything the block emits beyond the expectation.
    await ClockCycles(dut.clk, case["settle"])
    await ReadOnly()
    tb.source.stop()
    tb.sink.stop()

    result = {
        "output": tb.sink.beats,
        "input_sent": tb.source.sent,
        "input_cycles": tb.source.transfer_cycles,
        "output_cycles": tb.sink.transfer_cycles,
        "timed_out": cycles >= limit,
    }
    with open(os.environ["LINKCODEC_RESULT"], "w") as file:
        json.dump(result, file)

    assert not result["timed_out"], (
        f"no result after {limit} cycles: sent {tb.source.sent}/{len(case['input'])} beats, "
        f"got {len(tb.sink.beats)}/{len(expected)}")
    for index, (got, want) in enumerate(zip(tb.sink.beats, expected)):
        assert got == want, f"beat {index}: got {got:#x}, expected {want:#x}"
    assert len(tb.sink.beats) == len(expected), (
        f"got {len(tb.sink.beats)} beats, expected {len(expected)}")
