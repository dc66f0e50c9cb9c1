"""cocotb testbench of a block's ``--axi-stream`` Verilog, driven by cocotbext-axi.

The interoperability check: the ports are driven and taken by cocotbext-axi's
:class:`~cocotbext.axi.AxiStreamSource` and :class:`~cocotbext.axi.AxiStreamSink`, the
library AXI users test with, not by our own stream drivers. Each has a pause generator
(a repeating pattern or a seeded random one), so every port sees idle cycles or
backpressure. The ``cfg_*`` port is driven here, one write at a time, each held until
``cfg_ready`` (the rule ``docs/axi.md`` gives a client).

The case file named by ``LINKCODEC_CASE`` (JSON, written by the test) gives:

- ``seed``; ``cycle_limit``;
- ``config``: ``writes``, each ``[addr, data, after]`` (``after``: ``null``, or
  ``{"port": prefix, "transfers": n}``: the write is not offered before that input port
  has made ``n`` transfers), and ``pause`` (the driver's idle cycles between writes, as
  for a port);
- ``inputs``: per port, ``prefix`` (``s_axis``, ``s_axis_escapes``), ``pause`` and
  ``frames``, each ``tdata``, ``tkeep``, ``tuser`` (one entry a byte) and ``after``
  (``null`` or a count of config writes that must have been made before the frame is
  queued);
- ``outputs``: per port, ``prefix``, ``pause`` and ``frames``, how many frames to take.

A ``pause`` is ``{"cycle": [1, 1, 1, 0]}`` (repeated) or ``{"random": p}`` (pause with
chance ``p``, from the seed). The result (``LINKCODEC_RESULT``) gives, per output port,
each frame the sink took as its transfers (``tdata``, ``tkeep``, ``tuser``, ``tlast``
integers, one transfer a list) and, for the config port, the cycle of every write and
the number of cycles a write was held (``cfg_we`` high, ``cfg_ready`` low), and every
break of the stream rules seen on an output (``protocol_events``: the protocol monitor of
:mod:`linkcodec.sim.stream`, watching beside the sink).
"""

import itertools
import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Event, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from linkcodec.sim.stream import PortWatcher, ProtocolMonitor


def axi_signals(dut, prefix):
    """``(valid, ready, [payload signals])`` of the AXI4-Stream port ``prefix``."""
    payload = [getattr(dut, f"{prefix}_{name}") for name in ("tdata", "tkeep", "tlast",
                                                              "tuser")
               if hasattr(dut, f"{prefix}_{name}")]
    return getattr(dut, f"{prefix}_tvalid"), getattr(dut, f"{prefix}_tready"), payload


def pause_generator(pause, rng):
    """The pause pattern ``pause`` (see the module docstring) as an endless iterator."""
    if "cycle" in pause:
        return itertools.cycle(pause["cycle"])
    chance = pause["random"]
    return (int(rng.random() < chance) for _ in itertools.count())


class ConfigDriver:
    """Writes ``writes`` through ``cfg_we``/``cfg_addr``/``cfg_data``, each held until
    ``cfg_ready``; ``pause`` idles between writes; a write with an ``after`` waits for
    its input port's transfers (``counters``)."""

    def __init__(self, dut, writes, pause, counters):
        self.dut = dut
        self.writes = [tuple(write) for write in writes]
        self.counters = counters
        self.pause = pause
        self.made = 0
        self.write_cycles = []
        self.held_cycles = 0
        self.progress = Event()
        self.port = hasattr(dut, "cfg_we")      # the link's blocks have none
        if self.port:
            dut.cfg_we.value = 0
        elif self.writes:
            raise ValueError("config writes for a design without a cfg_* port")

    async def run(self, cycle_of):
        if not self.port:
            return
        edge, sample = RisingEdge(self.dut.aclk), ReadOnly()
        pending = False
        while self.made < len(self.writes):
            addr, data, after = self.writes[self.made]
            if not pending and after is not None:
                counter = self.counters[after["port"]]
                await wait_for(counter.progress, lambda: counter.count >= after["transfers"])
            await edge
            if not pending and not next(self.pause):
                self.dut.cfg_addr.value = addr
                self.dut.cfg_data.value = data
                pending = True
            self.dut.cfg_we.value = int(pending)
            await sample
            if pending:
                if self.dut.cfg_ready.value == 1:
                    self.made += 1
                    self.write_cycles.append(cycle_of())
                    pending = False
                    self.progress.set()
                else:
                    self.held_cycles += 1
        await edge
        self.dut.cfg_we.value = 0


class TransferCounter:
    """Counts the transfers of an input port (``tvalid & tready``, sampled as the block
    sees them)."""

    def __init__(self, dut, prefix):
        self.valid = getattr(dut, f"{prefix}_tvalid")
        self.ready = getattr(dut, f"{prefix}_tready")
        self.clock = dut.aclk
        self.count = 0
        self.progress = Event()

    async def run(self):
        edge, sample = RisingEdge(self.clock), ReadOnly()
        while True:
            await edge
            await sample
            if self.valid.value == 1 and self.ready.value == 1:
                self.count += 1
                self.progress.set()


async def wait_for(event, done):
    while not done():
        event.clear()
        await event.wait()


def transfers(frame, byte_lanes):
    """A frame the sink took (not compacted) as its transfers: ``[tdata, tkeep, tuser,
    tlast]`` integers."""
    beats = []
    for start in range(0, len(frame.tdata), byte_lanes):
        data = bytes(frame.tdata[start:start + byte_lanes])
        keep = sum(bit << k for k, bit in enumerate(frame.tkeep[start:start + byte_lanes]))
        user = frame.tuser[start] if frame.tuser else 0
        final = start + byte_lanes >= len(frame.tdata)
        beats.append([int.from_bytes(data, "little"), keep, user, int(final)])
    return beats


@cocotb.test()
async def run_case(dut):
    with open(os.environ["LINKCODEC_CASE"]) as file:
        case = json.load(file)
    seed = case["seed"]
    dut._log.info("seed %d (replay with LINKCODEC_SEED=%d)", seed, seed)
    rng = random.Random(seed)
    cocotb.start_soon(Clock(dut.aclk, 10, unit="ns").start())
    cycle = 0

    def cycle_of():
        return cycle

    def attach(kind, port):
        """A cocotbext-axi source or sink on ``port``, paused by its own pattern."""
        end = kind(AxiStreamBus.from_prefix(dut, port["prefix"]), dut.aclk, dut.aresetn,
                   reset_active_level=False)
        end.set_pause_generator(pause_generator(port["pause"],
                                                random.Random(rng.getrandbits(32))))
        return end

    # Sources first, then sinks: each draws its pause generator's seed in that order.
    sources = {port["prefix"]: attach(AxiStreamSource, port) for port in case["inputs"]}
    counters = {port["prefix"]: TransferCounter(dut, port["prefix"])
                for port in case["inputs"]}
    sinks = {port["prefix"]: attach(AxiStreamSink, port) for port in case["outputs"]}
    config = case["config"]
    driver = ConfigDriver(dut, config["writes"],
                          pause_generator(config["pause"], random.Random(rng.getrandbits(32))),
                          counters)

    # The stream rules on every output (sim/stream.py's monitor, watching only: the
    # cocotbext-axi sink takes the beats), against the inputs' transfers.
    watchers = [PortWatcher(dut, port["prefix"], dut.aclk,
                            signals=axi_signals(dut, port["prefix"]))
                for port in case["inputs"]]
    monitors = [ProtocolMonitor(dut, port["prefix"], dut.aclk,
                                signals=axi_signals(dut, port["prefix"]), reset=dut.aresetn,
                                reset_level=0, after=watchers)
                for port in case["outputs"]]
    for port in [*watchers, *monitors]:
        port.start()
    dut.aresetn.value = 0
    await ClockCycles(dut.aclk, 4)
    dut.aresetn.value = 1
    for counter in counters.values():
        cocotb.start_soon(counter.run())

    async def count_cycles():
        nonlocal cycle
        while True:
            await RisingEdge(dut.aclk)
            cycle += 1

    cocotb.start_soon(count_cycles())

    async def feed(port):
        source = sources[port["prefix"]]
        for frame in port["frames"]:
            if frame["after"] is not None:
                await wait_for(driver.progress, lambda: driver.made >= frame["after"])
            await source.send(AxiStreamFrame(bytearray(frame["tdata"]), tkeep=frame["tkeep"],
                                             tuser=frame["tuser"]))

    configuring = cocotb.start_soon(driver.run(cycle_of))
    for port in case["inputs"]:
        cocotb.start_soon(feed(port))

    taken = {port["prefix"]: [] for port in case["outputs"]}

    async def take(port):
        sink = sinks[port["prefix"]]
        while len(taken[port["prefix"]]) < port["frames"]:
            frame = await sink.recv(compact=False)
            taken[port["prefix"]].append(transfers(frame, sink.byte_lanes))

    takers = [cocotb.start_soon(take(port)) for port in case["outputs"]]
    while cycle < case["cycle_limit"] and not (all(task.done() for task in takers)
                                               and configuring.done()):
        await RisingEdge(dut.aclk)
    # A few more cycles catch a frame the block sends beyond the expectation.
    await ClockCycles(dut.aclk, 16)
    extra = {prefix: sink.count() for prefix, sink in sinks.items()}

    result = {
        "output": taken,
        "extra_frames": extra,
        "write_cycles": driver.write_cycles,
        "writes_made": driver.made,
        "held_cycles": driver.held_cycles,
        "input_transfers": {prefix: counter.count for prefix, counter in counters.items()},
        "timed_out": cycle >= case["cycle_limit"],
        "cycles": cycle,
        "protocol_events": [event for monitor in monitors
                            for event in monitor.protocol_events],
    }
    with open(os.environ["LINKCODEC_RESULT"], "w") as file:
        json.dump(result, file)
    assert not result["timed_out"], (
        f"no result after {cycle} cycles: {driver.made}/{len(driver.writes)} config "
        f"writes, frames taken " + ", ".join(f"{prefix} {len(frames)}"
                                             for prefix, frames in taken.items()))
