"""``rtl.bitpack.RegisterSlice``: order, a transfer a cycle, and no path from ``o.ready``
to ``i.ready`` (Amaranth's simulator; random valid and ready, seed printed)."""

import numpy as np
from amaranth.sim import Simulator

from linkcodec.rtl.bitpack import RegisterSlice


def _run(seed, *, idle, stall, count=400):
    """``count`` payloads through a slice with random idle input cycles and random
    backpressure; returns (sent, got, cycles, ready_followed_o_ready)."""
    rng = np.random.default_rng(seed)
    dut = RegisterSlice(16)
    sent, got = list(rng.integers(0, 1 << 16, count)), []
    followed = []
    cycles = [0]

    async def bench(ctx):
        pending = list(sent)
        for cycle in range(20 * count):
            if not pending and len(got) == count:
                cycles[0] = cycle
                return
            offer = bool(pending) and rng.random() >= idle
            ctx.set(dut.i.valid, offer)
            if pending:
                ctx.set(dut.i.payload, int(pending[0]))
            # i.ready must read the same whatever o.ready is in this cycle
            ctx.set(dut.o.ready, 0)
            low = ctx.get(dut.i.ready)
            ctx.set(dut.o.ready, 1)
            high = ctx.get(dut.i.ready)
            followed.append(low != high)
            ctx.set(dut.o.ready, rng.random() >= stall)
            took = offer and ctx.get(dut.i.ready)
            if ctx.get(dut.o.valid) and ctx.get(dut.o.ready):
                got.append(ctx.get(dut.o.payload))
            await ctx.tick()
            if took:
                pending.pop(0)
        raise AssertionError(f"seed {seed}: hung with {len(got)} of {count} out")

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return sent, got, cycles[0], any(followed)


def test_order_under_idle_and_backpressure(seed):
    sent, got, _, followed = _run(seed, idle=0.3, stall=0.4)
    assert [int(x) for x in sent] == got, f"seed {seed}"
    assert not followed, "i.ready changed with o.ready in the same cycle"


def test_a_transfer_a_cycle():
    """No idle, no backpressure: 400 payloads in 401 cycles (the one cycle of latency)."""
    sent, got, cycles, _ = _run(1, idle=0.0, stall=0.0)
    assert [int(x) for x in sent] == got
    assert cycles == len(sent) + 1
