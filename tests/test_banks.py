"""Two banks of tables: a code loads into the idle bank while traffic flows, and the
switch takes effect at a frame boundary with no idle cycle, for every block that has
them (QLC and Huffman here; the exponent blocks in ``test_rtl_exponent.py``).

Under Verilator, bit-exact against the golden model; the seed is printed (replay with
``LINKCODEC_SEED``). Each case runs in its block's xdist group, so the Verilator build is
the contract suite's.
"""

import numpy as np
import pytest

from cases import block_case

from linkcodec.bundled import bundled_files
from linkcodec.golden.qlc import QlcCode
from linkcodec.rtl.qlc import AREA_BASE, SWITCH_ADDR, config_writes
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.harness import first_mismatch, run_beats


def real_symbols(kind="ffn2_act", layer=3, count=None):
    symbols = np.load(bundled_files(kind, layers=[layer])[0]).reshape(-1)
    return symbols if count is None else symbols[:count]


def _swap_run(block, lanes, frames, tables, *, idle, stall, seed):
    """``frames`` through ``block`` holding ``tables[0]`` (the default, at reset), with
    ``tables[1]``'s writes and the switch sent on ``i_config`` while the first frame
    flows: frame 0 is coded with ``tables[0]``, the rest with ``tables[1]``."""
    description = get_block(block)
    inputs, expected = {"i": []}, {"o": []}
    for index, frame in enumerate(frames):
        frame_in, frame_out = description.frame_io(
            frame, lanes=lanes, word_width=description.default_word_width(lanes),
            tables=tables[0] if index == 0 else tables[1])
        inputs["i"] += frame_in["i"]
        expected["o"] += frame_out["o"]
    inputs["i_config"] = description.config_writes(tables[1])["i_config"]
    component = description.build(lanes=lanes)
    return run_beats(component, inputs=inputs, expected=expected, idle=idle, stall=stall,
                     seed=seed, name=description.module_name(lanes=lanes))


@pytest.mark.parametrize(("block", "lanes"), [block_case("qlc-encoder", 1),
                                              block_case("qlc-decoder", 1),
                                              block_case("huffman-encoder", 1),
                                              block_case("huffman-decoder", 1)])
def test_code_swap_while_traffic_flows(block, lanes, seed):
    """A code loads into the idle bank while frame 0 flows; the switch takes effect at
    the frame boundary, bit-exact, and costs no cycle: with no idle cycles the encoder
    takes a beat every cycle throughout, and the decoder's beats cross the swap's frame
    boundary as fast as they cross the others."""
    description = get_block(block)
    real = real_symbols(count=6000)
    tables = (description.default_tables(), description.fitted_tables([real_symbols(layer=0)]))
    assert tables[1] != tables[0]
    frames = [real[:2000]] + [real[2000 + 200 * index:2200 + 200 * index] for index in range(8)]
    result = _swap_run(block, lanes, frames, tables, idle="bursty", stall="bursty", seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    writes = description.config_writes(tables[1])["i_config"]
    assert len(result["input_cycles"]["i_config"]) == len(writes)
    # every write went in before frame 0's last input: the swap was under traffic
    first_in, _ = description.frame_io(frames[0], lanes=lanes,
                                       word_width=description.default_word_width(lanes),
                                       tables=tables[0])
    last_of_first = result["input_cycles"]["i"][len(first_in["i"]) - 1]
    assert result["input_cycles"]["i_config"][-1] < last_of_first

    result = _swap_run(block, lanes, frames, tables, idle=0.0, stall=0.0, seed=1)
    assert result["bit_exact"], first_mismatch(result)
    if block.endswith("encoder"):
        cycles = result["input_cycles"]["i"]
        assert cycles[-1] - cycles[0] == len(cycles) - 1       # a beat every cycle
    else:
        # The cycle each frame's first and last beats leave.
        beats, cycles = result["output"]["o"], result["output_cycles"]["o"]
        ends = [index for index, beat in enumerate(beats) if beat["last"]]
        gaps = [cycles[end + 1] - cycles[end] for end in ends[:-1]]
        assert gaps[0] <= max(gaps[1:]), gaps


def test_qlc_switch_address_and_writes():
    """The QLC writes load every entry and area into the idle bank, then ask for the
    switch (address 511, past the areas); without ``switch``, no switch."""
    code = QlcCode.from_pmf(np.bincount(real_symbols(layer=0), minlength=256))
    encoder = config_writes(code, block="encoder")
    assert [write["addr"] for write in encoder] == [*range(256), *range(AREA_BASE,
                                                                        AREA_BASE + 8),
                                                    SWITCH_ADDR]
    assert SWITCH_ADDR == 511 and SWITCH_ADDR > AREA_BASE + 7
    assert [write["data"] for write in encoder[:256]] == code.symbol_to_rank.tolist()
    decoder = config_writes(code, block="decoder", switch=False)
    assert [write["addr"] for write in decoder] == [*range(256), *range(AREA_BASE,
                                                                        AREA_BASE + 8)]
    assert [write["data"] for write in decoder[:256]] == code.rank_to_symbol.tolist()
    with pytest.raises(ValueError, match="block must be 'encoder' or 'decoder'"):
        config_writes(code, block="both")


@pytest.mark.parametrize("block", ["qlc-decoder", "huffman-decoder"])
def test_a_switch_keeps_the_frames_sent_before_it(block):
    """A decoder's switch, asked for after a frame's last word went in, takes effect
    after that frame, even while the frame's words all wait in the decoder's queue.
    Rounds of: the output held, a frame of ``n`` symbols (``n`` = 1 .. 24) and a frame of
    two sent (while the decoder takes them), the switch to the other bank, then the
    output let go; each round's frames come coded with the bank before its switch.
    (Before the queue marked the switch, a frame that waited whole in the queue was
    decoded with the new bank: QLC at ``n`` = 7, Huffman at 19.)"""
    from amaranth.sim import Simulator

    description = get_block(block)
    codes = (description.default_tables(), description.fitted_tables([real_symbols(layer=0)]))
    writes = description.config_writes(codes[1])["i_config"]
    loads, switch = writes[:-1], writes[-1]
    real = real_symbols()
    dut = description.build(lanes=1)
    rounds, expected, out = [], [], []
    for n in range(1, 25):
        frames_in = []
        for symbols in (real[100 * n:100 * n + n], real[:2]):
            frame_in, frame_out = description.frame_io(
                symbols, lanes=1, word_width=description.default_word_width(1),
                tables=codes[(n - 1) % 2])
            frames_in += frame_in["i"]
            expected += frame_out["o"]
        rounds.append(frames_in)

    async def put(ctx, port, beat):
        ctx.set(port.valid, 1)
        for key, value in beat.items():
            ctx.set(getattr(port.payload, key), value)
        await ctx.tick().until(port.ready)
        ctx.set(port.valid, 0)

    async def bench(ctx):
        for write in loads:
            await put(ctx, dut.i_config, write)
        for words in rounds:
            ctx.set(dut.o.ready, 0)
            sent, waited = 0, 0
            while sent < len(words) and waited < 8:      # while the decoder takes them
                ctx.set(dut.i.valid, 1)
                for key, value in words[sent].items():
                    ctx.set(getattr(dut.i.payload, key), value)
                taken = ctx.get(dut.i.ready)
                await ctx.tick()
                sent, waited = (sent + 1, 0) if taken else (sent, waited + 1)
            ctx.set(dut.i.valid, 0)
            if sent < len(words):                         # the rest with the output going
                ctx.set(dut.o.ready, 1)
                for word in words[sent:]:
                    await put(ctx, dut.i, word)
            await ctx.tick().repeat(3)
            await put(ctx, dut.i_config, switch)
            ctx.set(dut.o.ready, 1)
            await ctx.tick().repeat(60)

    async def monitor(ctx):
        payload = dut.o.payload
        async for _, _, valid, ready, symbol, count, last, error in ctx.tick().sample(
                dut.o.valid, dut.o.ready, payload.symbols[0], payload.count, payload.last,
                payload.error):
            if valid and ready:
                out.append({"symbols": [symbol], "count": count, "last": last,
                            "error": error})

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_testbench(monitor, background=True)
    sim.run()
    assert len(out) == len(expected)
    wrong = [index for index, (got, want) in enumerate(zip(out, expected)) if got != want]
    assert not wrong, f"beat {wrong[0]}: {out[wrong[0]]}, expected {expected[wrong[0]]}"
