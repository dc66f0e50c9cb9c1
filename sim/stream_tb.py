"""cocotb testbench shared by every streaming block: config, stimulus, scoreboard.

The case file named by ``LINKCODEC_CASE`` (JSON, written by :mod:`linkcodec.sim.harness`)
lists the config ports and their packed writes, every input stream port with its packed
beats and idle probability, every output stream port with the packed beats the golden
model expects and its stall probability, and the seed. The testbench loads the config
ports one after another, streams every input with random idle cycles, takes every output
with random backpressure, compares each output in order against its expectation (the
scoreboard), and writes what it saw to ``LINKCODEC_RESULT``. A port's beat may wait for a
*gate* (``gates`` in the case: other ports' transfers, then a number of cycles;
:meth:`~linkcodec.sim.stream.StreamDriver.gate`). Every output is also
checked against the stream rules (:class:`~linkcodec.sim.stream.StreamMonitor`:
``protocol_events`` in the result). With ``before_reset`` in the case, other inputs
stream first and the block is reset in mid-stream (:meth:`TB.run_then_reset`); only what
comes after the reset is scored. Streams inside the design named in ``watch`` are only
observed: the payload of each of their transfers goes into the result. In a 4-state
simulator it also fails on any X or Z in a valid, a ready or a transferred payload
(``xz_events`` in the result).
"""

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from linkcodec.sim.stream import StreamDriver, StreamMonitor, StreamWatcher

#: The most cycles a mid-stream reset waits for the block's first input transfer.
RESET_WAIT = 4096


class TB:
    def __init__(self, dut, case):
        self.dut = dut
        self.case = case
        seed = case["seed"]
        dut._log.info("seed %d (replay with --seed %d)", seed, seed)
        rng = random.Random(seed)
        # Sources first, then sinks, each with its own generator drawn from the seed.
        self.sources = {
            port["port"]: StreamDriver(dut, port["port"], dut.clk, port["beats"],
                                       idle=port["idle"],
                                       rng=random.Random(rng.getrandbits(32)))
            for port in case["inputs"]}
        self.sinks = {
            port["port"]: StreamMonitor(dut, port["port"], dut.clk, stall=port["stall"],
                                        rng=random.Random(rng.getrandbits(32)),
                                        after=self.sources.values())
            for port in case["outputs"]}
        self.configs = [StreamDriver(dut, port["port"], dut.clk, port["beats"])
                        for port in case["config"]]
        self.watchers = {name: StreamWatcher(dut, name, dut.clk)
                         for name in case.get("watch", ())}
        ports = {**self.sources, **self.sinks}
        for gate in case.get("gates", ()):
            ports[gate["port"]].gate(gate["index"], [(ports[name], transfers) for name,
                                                     transfers in gate["after"].items()],
                                     gate["wait"])
        self.dropped, self.early_taken = {}, {}

    async def reset(self):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 2)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    async def load_config(self):
        for config in self.configs:
            if not config.beats:
                continue
            config.start()
            # A config port may stall, but not for long.
            for _ in range(4 * len(config.beats) + 10):
                await RisingEdge(self.dut.clk)
                if config.done:
                    break
            config.stop()
            config.valid.value = 0
            await RisingEdge(self.dut.clk)
            assert config.done, (f"{config.name} took {config.sent} of "
                                 f"{len(config.beats)} writes")

    async def run_then_reset(self, before):
        """Stream ``before``'s inputs (``{"inputs": [{"port", "beats"}], "cycles": N}``)
        for N cycles from the first input transfer (a block may hold its inputs a while
        after its tables load, as the Huffman decoder does while it derives its length
        tables), then hold ``rst`` for two cycles in mid-stream: whatever the block
        took or gave before it is dropped (the sinks forget their beats), and the tables
        stay as loaded. Returns the cycles this took."""
        rng = random.Random(self.case["seed"] ^ 0x5EED)
        early = [StreamDriver(self.dut, port["port"], self.dut.clk, port["beats"],
                              idle=port.get("idle", 0.0),
                              rng=random.Random(rng.getrandbits(32)))
                 for port in before["inputs"]]
        for sink in self.sinks.values():
            sink.after.extend(early)          # outputs before the reset follow these
        for driver in early:
            driver.start()
        waited = 0
        while early and not any(driver.sent for driver in early) and waited < RESET_WAIT:
            await ClockCycles(self.dut.clk, 1)
            waited += 1
        await ClockCycles(self.dut.clk, before["cycles"])
        for driver in early:
            driver.stop()
            driver.valid.value = 0
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 2)
        self.dut.rst.value = 0
        for sink in [*self.sinks.values(), *self.watchers.values()]:
            self.dropped[sink.name] = len(sink.beats)
            sink.beats.clear()
            sink.transfer_cycles.clear()
        self.early_taken = {driver.name: driver.sent for driver in early}
        return waited + before["cycles"] + 2

    def finished(self):
        return (all(source.done for source in self.sources.values())
                and all(len(self.sinks[port["port"]].beats) >= len(port["expected"])
                        for port in self.case["outputs"]))


@cocotb.test()
async def run_case(dut):
    with open(os.environ["LINKCODEC_CASE"]) as file:
        case = json.load(file)
    # The first rising edge at 5 ns, once the drivers' valid and rst are set: a clock that
    # starts high has an edge at time 0 that a 4-state simulator may take with every input
    # still X, and a reset-less table register would keep the X it latched.
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start(start_high=False))
    tb = TB(dut, case)
    await tb.reset()
    await tb.load_config()

    for sink in [*tb.sinks.values(), *tb.watchers.values()]:
        sink.start()
    before = case.get("before_reset")
    if before:
        elapsed = await tb.run_then_reset(before)
        for source in tb.sources.values():
            source.first_cycle = elapsed
    for source in tb.sources.values():
        source.start()
    limit = case["cycle_limit"]
    cycles = 0
    while cycles < limit:
        await RisingEdge(dut.clk)
        cycles += 1
        if tb.finished():
            break
    # A few more cycles catch anything the block emits beyond the expectation.
    await ClockCycles(dut.clk, case["settle"])
    await ReadOnly()
    for port in [*tb.sources.values(), *tb.sinks.values(), *tb.watchers.values()]:
        port.stop()

    result = {
        "output": {name: sink.beats for name, sink in tb.sinks.items()},
        "watched": {name: watcher.beats for name, watcher in tb.watchers.items()},
        "input_sent": {name: source.sent for name, source in tb.sources.items()},
        "input_cycles": {name: source.transfer_cycles for name, source in tb.sources.items()},
        "output_cycles": {name: sink.transfer_cycles for name, sink in tb.sinks.items()},
        "timed_out": cycles >= limit,
        "dropped_at_reset": tb.dropped,
        "taken_before_reset": tb.early_taken,
        # In cycle order (the stream ports start together; config ports count from
        # their own start, before them), so the first listed is the first seen.
        "xz_events": sorted((event for port in [*tb.configs, *tb.sources.values(),
                                                *tb.sinks.values()]
                             for event in port.xz_events), key=lambda event: event["cycle"]),
        "protocol_events": sorted((event for sink in tb.sinks.values()
                                   for event in sink.protocol_events),
                                  key=lambda event: event["cycle"]),
    }
    with open(os.environ["LINKCODEC_RESULT"], "w") as file:
        json.dump(result, file)

    events = result["xz_events"]
    assert not events, (
        f"{len(events)} X/Z values on ports that are read; first: "
        + "; ".join(f"{event['port']} cycle {event['cycle']}: {event['what']}"
                    for event in events[:5]))
    broken = result["protocol_events"]
    assert not broken, (
        f"{len(broken)} breaks of the stream rules; first: "
        + "; ".join(f"{event['port']} cycle {event['cycle']}: {event['what']}"
                    for event in broken[:5]))
    assert not result["timed_out"], (
        f"no result after {limit} cycles: sent "
        + ", ".join(f"{name} {source.sent}/{len(source.beats)}"
                    for name, source in tb.sources.items())
        + "; got " + ", ".join(f"{port['port']} {len(tb.sinks[port['port']].beats)}/"
                               f"{len(port['expected'])}" for port in case["outputs"]))
    for port in case["outputs"]:
        got, name = tb.sinks[port["port"]].beats, port["port"]
        for index, (beat, want) in enumerate(zip(got, port["expected"])):
            assert beat == want, f"{name} beat {index}: got {beat:#x}, expected {want:#x}"
        assert len(got) == len(port["expected"]), (
            f"{name}: got {len(got)} beats, expected {len(port['expected'])}")
