"""What reset does to a block's tables: nothing (Amaranth's simulator, no Verilator build).

The rule every block keeps: reset clears stream state and never touches a table. A table
keeps what was last loaded through the config port, and a bank switch pending at reset
takes effect at the reset (a frame boundary), in every encoder and decoder.
Each test loads tables that are not the block's default, pulses reset, and checks the
block against the golden model under the *loaded* tables.
"""

import numpy as np
import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from linkcodec.rtl.payload import pack, unpack
from linkcodec.rtl.blocks.beats import decoder_beats
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.harness import stream_ports

#: Every block at its smallest lane count.
BLOCKS = {"qlc-encoder": 1, "qlc-decoder": 1, "huffman-encoder": 1, "huffman-decoder": 1,
          "exponent-encoder": 4, "exponent-decoder": 4}

#: Encoder and decoder of each codec; the encoder's output ``o*`` feeds the decoder's
#: ``i*`` of the same name.
PAIRS = {"qlc": ("qlc-encoder", "qlc-decoder", 1),
         "huffman": ("huffman-encoder", "huffman-decoder", 1),
         "exponent": ("exponent-encoder", "exponent-decoder", 4)}

_LIMIT = 3000                  # cycles a phase may take before the test gives up


def _frame(block, size, seed):
    """A frame whose statistics are far from what the default tables assume."""
    rng = np.random.default_rng(seed)
    if block.startswith("exponent"):
        # bf16 values with exponents 100..106 mostly (the default table holds 124..130),
        # and a few others that escape under any 7-entry table.
        exponents = rng.choice(np.arange(100, 107), size=size)
        escaped = rng.random(size) < 0.15
        exponents[escaped] = rng.integers(1, 255, size=int(escaped.sum()))
        mantissas = rng.integers(0, 128, size=size)
        signs = rng.integers(0, 2, size=size)
        return ((signs << 15) | (exponents << 7) | mantissas).astype(np.uint16)
    # e4m3 bytes on a few values, very unevenly
    values = np.array([0x38, 0xB8, 0x30, 0xB0, 0x40, 0x3C, 0x01, 0x7E], dtype=np.uint8)
    weights = np.array([40, 30, 12, 8, 4, 3, 2, 1], dtype=float)
    return rng.choice(values, size=size, p=weights / weights.sum())


def _loaded_tables(name, seed=1):
    """Tables fitted to a skewed frame: not the block's default."""
    block = get_block(name)
    return block.fitted_tables([_frame(name, 400, seed)])


class _Bench:
    """Drives a design's stream ports, ``inputs`` and ``outputs`` (``{name: (stream,
    layout)}``), and its reset, ``domain.rst``, from an Amaranth testbench."""

    def __init__(self, ctx, domain, inputs, outputs):
        self.ctx, self.domain = ctx, domain
        self.inputs, self.outputs = inputs, outputs

    async def config(self, port, layout, writes):
        ctx = self.ctx
        for write in writes:
            ctx.set(port.valid, 1)
            ctx.set(port.payload.as_value(), pack(layout, write))
            for _ in range(_LIMIT):
                ready = ctx.get(port.ready)
                await ctx.tick()
                if ready:
                    break
            else:
                raise AssertionError(f"config write {write} never taken")
        ctx.set(port.valid, 0)

    async def reset(self, cycles=2):
        ctx = self.ctx
        for port, _ in self.inputs.values():
            ctx.set(port.valid, 0)
        ctx.set(self.domain.rst, 1)
        for _ in range(cycles):
            await ctx.tick()                # (``repeat`` would raise DomainReset)
        ctx.set(self.domain.rst, 0)

    async def run(self, beats, *, expect=None, stop_after=None, stall=False):
        """Send ``beats`` (``{port: [beat]}``); with ``stop_after`` stop once that many
        beats of every input went in (a frame half in), else once every output gave the
        beats ``expect`` counts and 10 cycles more passed. Returns the output beats."""
        ctx = self.ctx
        pending = {port: list(items) for port, items in beats.items()}
        sent = {port: 0 for port in pending}
        got = {port: [] for port in self.outputs}
        quiet = 0
        for cycle in range(_LIMIT):
            if stop_after is not None:
                if all(sent[port] >= stop_after[port] for port in pending):
                    break
            elif not any(pending.values()) and all(
                    len(got[port]) >= len(expect[port]) for port in self.outputs):
                quiet += 1
                if quiet > 10:
                    break
            for port, items in pending.items():
                stream_port, layout = self.inputs[port]
                ctx.set(stream_port.valid, bool(items))
                if items:
                    ctx.set(stream_port.payload.as_value(), pack(layout, items[0]))
            for stream_port, _ in self.outputs.values():
                ctx.set(stream_port.ready, int(not stall or cycle % 3 == 0))
            taken = [port for port, items in pending.items()
                     if items and ctx.get(self.inputs[port][0].ready)]
            for port, (stream_port, layout) in self.outputs.items():
                if ctx.get(stream_port.valid) and ctx.get(stream_port.ready):
                    got[port].append(unpack(layout, ctx.get(stream_port.payload.as_value())))
            await ctx.tick()
            for port in taken:
                pending[port].pop(0)
                sent[port] += 1
        else:
            raise AssertionError(f"no end after {_LIMIT} cycles; got {got}")
        for stream_port, _ in self.inputs.values():
            ctx.set(stream_port.valid, 0)
        return got


def _simulate(top, inputs, outputs, script):
    """Run ``script(bench)`` (an async function) on ``top`` with a clock and a reset of
    our own; returns what it returns."""
    m = Module()
    m.domains.sync = domain = ClockDomain("sync")
    m.submodules.top = top
    result = []

    async def testbench(ctx):
        result.append(await script(_Bench(ctx, domain, inputs, outputs)))

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return result[0]


def _block_ports(component):
    inputs, outputs = stream_ports(component)
    config = inputs.pop("i_config")
    return ({name: (getattr(component, name), layout) for name, layout in inputs.items()},
            {name: (getattr(component, name), layout) for name, layout in outputs.items()},
            config)


@pytest.mark.parametrize("name", BLOCKS)
def test_reset_keeps_loaded_tables(name):
    """Load tables that are not the default, reset, then a frame codes as the loaded
    tables say (the default tables would give other output)."""
    block, lanes = get_block(name), BLOCKS[name]
    component = block.build(lanes=lanes)
    width = component.word_width
    tables = _loaded_tables(name)
    frame = _frame(name, 60, seed=2)
    beats, expected = block.frame_io(frame, lanes=lanes, word_width=width, tables=tables)
    # the loaded tables code this frame otherwise than the default ones: the test can
    # tell which tables the block used
    assert (beats, expected) != block.frame_io(frame, lanes=lanes, word_width=width,
                                               tables=block.default_tables())
    inputs, outputs, config = _block_ports(component)

    async def script(bench):
        await bench.config(component.i_config, config,
                           block.config_writes(tables)["i_config"])
        await bench.run({}, expect={port: [] for port in outputs})   # a switch settles
        await bench.reset()
        return await bench.run(beats, expect=expected)

    assert _simulate(component, inputs, outputs, script) == expected


@pytest.mark.parametrize("name", BLOCKS)
def test_reset_mid_frame(name):
    """Reset while a frame is half in (outputs stalled now and then), then a whole frame
    after the reset codes bit-exact under the loaded tables; nothing of the cut frame
    comes out."""
    block, lanes = get_block(name), BLOCKS[name]
    component = block.build(lanes=lanes)
    width = component.word_width
    tables = _loaded_tables(name)
    cut, _ = block.frame_io(_frame(name, 80, seed=3), lanes=lanes, word_width=width,
                            tables=tables)
    beats, expected = block.frame_io(_frame(name, 50, seed=4), lanes=lanes,
                                     word_width=width, tables=tables)
    inputs, outputs, config = _block_ports(component)

    async def script(bench):
        await bench.config(component.i_config, config,
                           block.config_writes(tables)["i_config"])
        await bench.run({}, expect={port: [] for port in outputs})
        await bench.run(cut, stop_after={port: len(items) // 2 for port, items in cut.items()},
                        stall=True)
        await bench.reset()
        return await bench.run(beats, expect=expected)

    assert _simulate(component, inputs, outputs, script) == expected


def _pair(codec):
    """The encoder driving the decoder, nothing between them; ``(top, encoder,
    decoder)``."""
    encoder_name, decoder_name, lanes = PAIRS[codec]
    encoder = get_block(encoder_name).build(lanes=lanes)
    decoder = get_block(decoder_name).build(lanes=lanes)
    top = Module()
    top.submodules.encoder, top.submodules.decoder = encoder, decoder
    for name in stream_ports(encoder)[1]:
        wiring.connect(top, getattr(encoder, name), getattr(decoder, "i" + name[1:]))
    return top, encoder, decoder


@pytest.mark.parametrize("codec", PAIRS)
def test_pair_reset_mid_stream(codec):
    """An encoder and its decoder, both loaded with the same non-default tables and reset
    together in mid-stream, with no reload: the next frame comes through whole."""
    encoder_name, decoder_name, lanes = PAIRS[codec]
    top, encoder, decoder = _pair(codec)
    tables = _loaded_tables(encoder_name)
    encoder_block, decoder_block = get_block(encoder_name), get_block(decoder_name)
    first = _frame(encoder_name, 80, seed=5)
    second = _frame(encoder_name, 50, seed=6)
    cut, _ = encoder_block.frame_io(first, lanes=lanes, word_width=encoder.word_width,
                                    tables=tables)
    beats, _ = encoder_block.frame_io(second, lanes=lanes, word_width=encoder.word_width,
                                      tables=tables)
    expected = {"o": decoder_beats([second], lanes)}
    inputs = {"i": (encoder.i, stream_ports(encoder)[0]["i"])}
    outputs = {"o": (decoder.o, stream_ports(decoder)[1]["o"])}
    config = stream_ports(encoder)[0]["i_config"]

    async def script(bench):
        await bench.config(encoder.i_config, config,
                           encoder_block.config_writes(tables)["i_config"])
        await bench.config(decoder.i_config, config,
                           decoder_block.config_writes(tables)["i_config"])
        await bench.run({}, expect={"o": []})
        await bench.run(cut, stop_after={"i": len(cut["i"]) // 2}, stall=True)
        await bench.reset()
        return await bench.run(beats, expect=expected)

    assert _simulate(top, inputs, outputs, script) == expected


@pytest.mark.parametrize("name", BLOCKS)
def test_switch_pending_at_reset_takes_effect(name):
    """A bank switch asked for inside a frame waits for its end; a reset there ends the
    frame, so the switch takes effect at the reset, in every encoder and decoder."""
    block, lanes = get_block(name), BLOCKS[name]
    component = block.build(lanes=lanes)
    width = component.word_width
    tables = _loaded_tables(name)
    writes = block.config_writes(tables)["i_config"]
    assert writes[-1]["data"] == 0 and writes[-1]["addr"] not in [
        write["addr"] for write in writes[:-1]]           # the last write is the switch
    cut, _ = block.frame_io(_frame(name, 80, seed=7), lanes=lanes, word_width=width,
                            tables=block.default_tables())
    beats, expected = block.frame_io(_frame(name, 50, seed=8), lanes=lanes,
                                     word_width=width, tables=tables)
    inputs, outputs, config = _block_ports(component)

    async def script(bench):
        # the tables into the idle bank, no switch yet
        await bench.config(component.i_config, config, writes[:-1])
        await bench.run(cut, stop_after={port: len(items) // 2 for port, items in cut.items()})
        for _ in range(4):                       # let the frame reach the bank logic
            await bench.ctx.tick()
        await bench.config(component.i_config, config, writes[-1:])
        # still inside the frame: the switch is pending and holds config writes back
        pending = not bench.ctx.get(component.i_config.ready)
        await bench.reset()
        return pending, await bench.run(beats, expect=expected)

    pending, got = _simulate(component, inputs, outputs, script)
    assert pending, "the switch took effect before the reset: the test proves nothing"
    assert got == expected


@pytest.mark.parametrize("name", BLOCKS)
def test_loads_back_to_back_between_frames(name):
    """After a frame, two loads, each with its switch, one right behind the other and no
    frame between: the first switch takes effect at once (the block is between frames),
    so the second load's writes are not held for ever, and the next frame codes with
    the second tables (the first would give other output)."""
    block, lanes = get_block(name), BLOCKS[name]
    component = block.build(lanes=lanes)
    width = component.word_width
    first, second = _loaded_tables(name, seed=1), _loaded_tables(name, seed=9)
    before, before_out = block.frame_io(_frame(name, 60, seed=10), lanes=lanes,
                                        word_width=width, tables=block.default_tables())
    frame = _frame(name, 60, seed=11)
    beats, expected = block.frame_io(frame, lanes=lanes, word_width=width, tables=second)
    assert (beats, expected) != block.frame_io(frame, lanes=lanes, word_width=width,
                                               tables=first)
    inputs, outputs, config = _block_ports(component)

    async def script(bench):
        got = await bench.run(before, expect=before_out)
        await bench.config(component.i_config, config, block.config_writes(first)["i_config"])
        await bench.config(component.i_config, config,
                           block.config_writes(second)["i_config"])
        return got, await bench.run(beats, expect=expected)

    got_before, got = _simulate(component, inputs, outputs, script)
    assert got_before == before_out
    assert got == expected
