"""The link's blocks under their AXI4-Stream names (``linkcodec generate link-tx|link-rx
--axi-stream``), driven by cocotbext-axi with a pause generator on every port.

- ``LinkTx``: each stream's frames in on ``s_axis_s<k>``; the flits out on ``m_axis``,
  each a frame (``tlast`` on its last word), the flit's first byte in ``tdata[7:0]``
  (``docs/axi.md``'s word mapping): stream by stream, the golden writer's flits.
- ``LinkRx``: the golden writer's flits in on ``s_axis`` (``tuser`` the word's bits, as a
  ``LinkTx`` gives them); each stream's symbols out on ``m_axis_s<k>``, as the golden
  model's frames.
- With retry: the return channel as value ports (``m_axis_ack`` on ``LinkRx``,
  ``s_axis_ack`` on ``LinkTx``) keeps the AXI rules in Amaranth's simulator, and the two
  blocks' Verilog, joined flits to flits and ack to ack (the ack paused, two flits
  spoilt on the way), gives every stream's frames back.

The expected transfers go through ``tests/test_axi.py``'s mapping, written from
``docs/axi.md``, not from the RTL. Seeds are printed (``LINKCODEC_SEED`` replays).
"""

import itertools
import random
import re
from pathlib import Path

import numpy as np
import pytest
from amaranth.hdl import ClockSignal, Module, Shape, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from linkcodec.generate import generate_link
from linkcodec.golden.link import FlitHeader, deal
from linkcodec.rtl.axi import AxiStreamWrapper
from linkcodec.rtl.retry import ack_layout
from linkcodec.rtl.blocks.beats import decoder_beats, symbol_beats
from linkcodec.sim.link import golden_flits, words_of_flits
from linkcodec.link_hardware import link_component

from test_axi import PAUSES, client_bits, frames_of, run_axi, source_frame, transfers

# Both at 2 streams: these tests check the AXI names and word mapping. (LinkTx's flits
# from two groups of streams at its link side, rtl/link/'s LINK_GROUP, are read back
# through the golden FlitReader in test_rtl_link.py's test_link_loads_tables_in_band at 5
# streams; here 5 took 48 s of make test's 20 minutes.)
CODEC, FLIT_BYTES, LINK_BYTES = "qlc", 64, 32
STREAMS = {"link-tx": 2, "link-rx": 2}


def _frames(rng, streams):
    """Frames of none, one and several flits, skewed and incompressible, two a stream."""
    skewed = np.minimum(rng.geometric(0.08, 400), 255).astype(np.uint8)
    kinds = [skewed[:0], skewed[:1], skewed, rng.integers(0, 256, 90, dtype=np.uint8)]
    return deal([kinds[index % len(kinds)] for index in range(2 * streams)], streams)


def _wrapper(kind, **params):
    """The wrapped block, for its signature only."""
    block = link_component(kind, codec=CODEC, streams=STREAMS[kind], flit_bytes=FLIT_BYTES,
                           link_bytes=LINK_BYTES, **params)
    wrapper = AxiStreamWrapper(block)
    for elaboratable in (block, wrapper):
        elaboratable._MustUse__silence = True        # Amaranth's unused-elaboratable check
    return wrapper


def _ports(kind):
    """``{block_port: (prefix, layout, is_output, byte_lanes)}`` of the wrapped block."""
    wrapper = _wrapper(kind)
    return {name: (prefix.rstrip("_"), layout, output,
                   Shape.cast(wrapper.signature.members[prefix + "tkeep"].shape).width)
            for name, prefix, layout, output in wrapper.streams}


def _run(kind, case_ports, seed, tmp_path):
    # (LinkTx's status flits after 65,536 idle cycles, not 1,024: a stream that ends
    # long before the other would send them, and this test counts the flits; they are
    # tested in test_stream_numbers.py.)
    verilog = generate_link(kind, codec=CODEC, streams=STREAMS[kind], flit_bytes=FLIT_BYTES,
                            link_bytes=LINK_BYTES, axi_stream=True, output=tmp_path,
                            **({"status_cycles": 1 << 16} if kind == "link-tx" else {}))[0]
    inputs, outputs = case_ports
    rng = np.random.default_rng(seed)
    start = int(rng.integers(len(PAUSES)))
    pauses = iter(PAUSES[start:] + PAUSES[:start] + PAUSES)
    for port in inputs + outputs:
        port["pause"] = next(pauses)
    print(f"{kind}: pauses " + ", ".join(f"{p['prefix']} {p['pause']}"
                                         for p in inputs + outputs))
    case = {"seed": seed, "cycle_limit": 40000, "inputs": inputs, "outputs": outputs,
            "config": {"writes": [], "pause": {"random": 0.2}}}
    return run_axi(verilog.read_text(), verilog.stem, case)


def _golden(kind, seed):
    """``(frames, per_stream, ports)``: the frames dealt to the streams, each stream's
    flits as the golden writer makes them with ``kind``'s tables, the wrapper's ports."""
    frames = _frames(np.random.default_rng(seed), STREAMS[kind])
    block = link_component(kind, codec=CODEC, streams=STREAMS[kind], flit_bytes=FLIT_BYTES,
                           link_bytes=LINK_BYTES)
    block._MustUse__silence = True
    # The block's own flit format: numbered stream by stream if it numbers them.
    _, per_stream = golden_flits(block.format, frames, block.tables)
    return frames, per_stream, _ports(kind)


def _stream_inputs(ports, frames):
    """The AXI frames of each stream's symbols, for LinkTx's ``s_axis_s<k>`` ports
    (``ports`` as :func:`_ports`)."""
    inputs = []
    for index in range(STREAMS["link-tx"]):
        prefix, layout, _, byte_lanes = ports[f"i_s{index}"]
        mine = [frame for stream, frame in frames if stream == index]
        inputs.append({"prefix": prefix, "frames": [
            dict(source_frame(frame, byte_lanes), after=None)
            for frame in frames_of(transfers(symbol_beats(mine, 1), layout, output=False))]})
    return inputs


def test_link_tx_flits_through_axi_names(seed, tmp_path):
    frames, per_stream, ports = _golden("link-tx", seed)
    inputs = _stream_inputs(ports, frames)
    flits = sum(len(flits) for flits in per_stream.values())
    result = _run("link-tx", (inputs, [{"prefix": ports["o"][0], "frames": flits}]),
                  seed, tmp_path)

    got = {index: [] for index in range(STREAMS["link-tx"])}
    for frame in result["output"][ports["o"][0]]:
        # Every word is whole: all its bytes kept, its tuser the word's bits.
        assert all(keep == (1 << LINK_BYTES) - 1 and user == 8 * LINK_BYTES
                   for _, keep, user, _ in frame)
        flit, nbits = client_bits(frame)
        assert nbits == 8 * FLIT_BYTES
        got[FlitHeader.unpack(flit).stream].append(flit)
    assert got == per_stream, f"seed {seed}"
    assert result["extra_frames"][ports["o"][0]] == 0


def test_link_rx_symbols_through_axi_names(seed, tmp_path):
    frames, per_stream, ports = _golden("link-rx", seed)
    prefix, layout, _, byte_lanes = ports["i"]
    # The streams' flits interleaved, as a link would carry them.
    order = [flit for turn in itertools.zip_longest(*per_stream.values())
             for flit in turn if flit is not None]
    inputs = [{"prefix": prefix, "frames": [
        dict(source_frame(frame, byte_lanes), after=None)
        for frame in frames_of(transfers(words_of_flits(order, LINK_BYTES), layout,
                                         output=False))]}]
    outputs, want = [], {}
    for index in range(STREAMS["link-rx"]):
        out_prefix, out_layout, _, _ = ports[f"o_s{index}"]
        mine = [frame for stream, frame in frames if stream == index]
        want[out_prefix] = frames_of(transfers(decoder_beats(mine, 1), out_layout,
                                               output=True))
        outputs.append({"prefix": out_prefix, "frames": len(want[out_prefix])})
    result = _run("link-rx", (inputs, outputs), seed, tmp_path)
    for out_prefix, wanted in want.items():
        assert result["output"][out_prefix] == wanted, f"seed {seed}: {out_prefix}"
        assert result["extra_frames"][out_prefix] == 0


@pytest.mark.parametrize("kind,ports", [
    ("link-tx", [*(f"s_axis_s{k}_" for k in range(STREAMS["link-tx"])), "s_axis_table_",
                 "m_axis_", "m_axis_table_"]),
    ("link-rx", ["s_axis_", *(f"m_axis_s{k}_" for k in range(STREAMS["link-rx"]))]),
])
def test_link_axi_port_names(kind, ports):
    assert [prefix + "_" for prefix, *_ in _ports(kind).values()] == ports


def test_docs_name_every_axi_port_of_the_link():
    """``docs/axi.md``'s table of the link's blocks has a row for each AXI port of both
    wrapped blocks, with retry and without, and none besides."""
    doc = Path(__file__).resolve().parent.parent / "docs" / "axi.md"
    section = doc.read_text().split("## The link's blocks")[1].split("\n## ")[0]
    rows = set(re.findall(r"^\| `(LinkTx|LinkRx)` `([\w<>]+)`[^|]*\| `([\w<>]+)\*` \|",
                          section, re.M))

    def generic(name):                    # i_s0 -> i_s<k>, m_axis_s1_ -> m_axis_s<k>_
        return re.sub(r"(?<=_s)\d+(?=_|$)", "<k>", name)

    mapped = set()
    for kind, block in (("link-tx", "LinkTx"), ("link-rx", "LinkRx")):
        for params in ({}, {"retry_depth": RETRY_DEPTH}):
            wrapper = _wrapper(kind, **params)
            mapped |= {(block, generic(name), generic(prefix))
                       for name, prefix, *_ in wrapper.streams + wrapper.values}
    assert rows == mapped


# -- retry: the return channel as AXI4-Stream value ports ---------------------------------

RETRY_DEPTH = 4
#: Link words the channel of the retry pair spoils (a bit flip each), counted from reset
#: over every word it carries, sent-again ones included.
SPOILT_WORDS = (3, 11)


class _ValueBlock(wiring.Component):
    """A block with a value port each way, as the link's: ``o_ack`` (a count of cycles
    since reset, so it changes every cycle) and ``i_ack``."""

    o_ack: Out(ack_layout)
    i_ack: In(ack_layout)

    def elaborate(self, platform):
        m = Module()
        count = Signal(Shape.cast(ack_layout).width)
        m.d.sync += count.eq(count + 1)
        m.d.comb += self.o_ack.eq(count)
        return m


def test_value_ports_keep_the_axi_rules(seed):
    """``docs/axi.md``, "The return channel": ``m_axis_ack`` is low in reset, then valid every
    cycle with the value of the cycle, except that a value offered while ``tready`` was
    low holds until taken; ``s_axis_ack`` is always ready, and the block sees ``tdata``
    on a transfer and the last value taken between them (0 after reset)."""
    block = _ValueBlock()
    wrapper = AxiStreamWrapper(block)
    assert [(name, prefix) for name, prefix, *_ in wrapper.values] == [
        ("o_ack", "m_axis_ack_"), ("i_ack", "s_axis_ack_")]
    assert wrapper.streams == []
    top = Module()
    top.submodules.wrapper = wrapper
    top.d.comb += wrapper.aclk.eq(ClockSignal())
    rng = random.Random(seed)
    width = Shape.cast(ack_layout).width
    value_out = block.o_ack.as_value()
    value_in = block.i_ack.as_value()
    checked = {"held": 0, "taken": 0}

    async def testbench(ctx):
        ctx.set(wrapper.aresetn, 0)
        for _ in range(3):
            await ctx.tick()
            assert ctx.get(wrapper.m_axis_ack_tvalid) == 0, "tvalid low in reset"
        ctx.set(wrapper.aresetn, 1)
        await ctx.tick()
        offered, last_in = None, 0
        for cycle in range(400):
            ready = rng.random() < 0.5
            valid = rng.random() < 0.5
            data = rng.getrandbits(16)
            ctx.set(wrapper.m_axis_ack_tready, ready)
            ctx.set(wrapper.s_axis_ack_tvalid, valid)
            ctx.set(wrapper.s_axis_ack_tdata, data)
            assert ctx.get(wrapper.m_axis_ack_tvalid) == 1, cycle
            assert (ctx.get(wrapper.m_axis_ack_tkeep), ctx.get(wrapper.m_axis_ack_tlast)) \
                == (0b11, 1)
            tdata = ctx.get(wrapper.m_axis_ack_tdata)
            if offered is not None:
                assert tdata == offered, f"cycle {cycle}: a value not taken was changed"
                checked["held"] += 1
            else:
                assert tdata == ctx.get(value_out), f"cycle {cycle}: not the cycle's value"
            offered = None if ready else tdata
            assert ctx.get(wrapper.s_axis_ack_tready) == 1
            seen = ctx.get(value_in)
            if valid:
                assert seen == data & ((1 << width) - 1), cycle
                last_in = seen
                checked["taken"] += 1
            else:
                assert seen == last_in, f"cycle {cycle}: the last value taken is held"
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert checked["held"] > 50 and checked["taken"] > 100


def _pair_top(tx, rx, tx_module, rx_module):
    """Verilog of a top, ``link_axi_retry_pair``: ``tx`` (the ``LinkTx`` wrapper,
    module ``tx_module``) drives ``rx`` (``LinkRx``'s): ``m_axis`` to ``s_axis`` with a
    bit of each of :data:`SPOILT_WORDS` flipped, and ``rx``'s ``m_axis_ack`` to ``tx``'s
    ``s_axis_ack``, the ack channel paused in about a quarter of the cycles (an LFSR).
    The top's ports are ``aclk``, ``aresetn``, ``tx``'s ``s_axis_s<k>_*`` and ``rx``'s
    ``m_axis_s<k>_*``; ``tx``'s table ports are idle."""

    def width_of(member):
        width = Shape.cast(member.shape).width
        return f"[{width - 1}:0] " if width > 1 else ""

    ports, decls, body = ["aclk", "aresetn"], ["  input aclk;", "  input aresetn;"], []
    flit_bits = Shape.cast(tx.signature.members["m_axis_tdata"].shape).width
    connections = {"tx": {}, "rx": {}}
    for side, wrapper, outer in (("tx", tx, "s_axis_s"), ("rx", rx, "m_axis_s")):
        for name, member in wrapper.signature.members.items():
            is_input = member.flow == In
            if name in ("aclk", "aresetn") or name.startswith(outer):
                if name not in ports:
                    ports.append(name)
                    decls.append(f"  {'input' if is_input else 'output'} "
                                 f"{width_of(member)}{name};")
                connections[side][name] = name
            elif re.fullmatch(r"[ms]_axis_t[a-z]+", name):      # the flit channel
                connections[side][name] = "flit_" + name.split("_")[-1]
            elif re.fullmatch(r"[ms]_axis_ack_t[a-z]+", name):  # the return channel
                connections[side][name] = "ack_" + name.split("_")[-1]
            elif is_input:                                      # the idle table ports
                width = Shape.cast(member.shape).width
                connections[side][name] = "1'b1" if name.endswith("tready") else f"{width}'d0"
            else:
                connections[side][name] = ""
            if side == "tx" and connections[side][name][:4] in ("flit", "ack_"):
                decls.append(f"  wire {width_of(member)}{connections[side][name]};")
    connections["tx"]["s_axis_ack_tvalid"] = "ack_tvalid & ack_go"
    connections["rx"]["m_axis_ack_tready"] = "ack_tready & ack_go"
    connections["rx"]["s_axis_tdata"] = "flit_tdata ^ flip"
    hit = " | ".join(f"(flit_words == 16'd{word})" for word in SPOILT_WORDS)
    body += [
        "  reg [15:0] flit_words = 16'd0;",
        "  reg [15:0] lfsr = 16'hace1;",
        "  wire ack_go = lfsr[0] | lfsr[1];",
        f"  wire [{flit_bits - 1}:0] flip = ({hit}) ? {flit_bits}'d1 << 9 : {flit_bits}'d0;",
        "  always @(posedge aclk) begin",
        "    lfsr <= {lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5], lfsr[15:1]};",
        "    if (!aresetn) flit_words <= 16'd0;",
        "    else if (flit_tvalid & flit_tready) flit_words <= flit_words + 16'd1;",
        "  end",
    ]
    for side, module in (("tx", tx_module), ("rx", rx_module)):
        pins = ",\n".join(f"    .{name}({net})" for name, net in connections[side].items())
        body.append(f"  {module} {side} (\n{pins}\n  );")
    return "\n".join([f"module link_axi_retry_pair({', '.join(ports)});", *decls, *body,
                      "endmodule", ""])


def test_retry_pair_through_axi_ports(seed, tmp_path):
    """``LinkTx`` driving ``LinkRx``, both with retry and ``--axi-stream``, their Verilog
    as ``linkcodec generate`` writes it, the return channel joined through
    ``m_axis_ack`` and ``s_axis_ack`` (paused) and two flits spoilt on the way: the
    acks and naks come back through the AXI ports, so every stream's frames come back
    exact."""
    params = {"retry_depth": RETRY_DEPTH, "tables_in_band": False}
    texts, modules = [], []
    for kind in ("link-tx", "link-rx"):
        verilog = generate_link(kind, codec=CODEC, streams=STREAMS[kind],
                                flit_bytes=FLIT_BYTES, link_bytes=LINK_BYTES, axi_stream=True,
                                output=tmp_path, **params)[0]
        texts.append(verilog.read_text())
        modules.append(verilog.stem)
    tx, rx = _wrapper("link-tx", **params), _wrapper("link-rx", **params)
    texts.append(_pair_top(tx, rx, *modules))
    (tmp_path / "link_axi_retry_pair.v").write_text(texts[-1])

    frames = _frames(np.random.default_rng(seed), STREAMS["link-tx"])
    block = link_component("link-tx", codec=CODEC, streams=STREAMS["link-tx"],
                           flit_bytes=FLIT_BYTES, link_bytes=LINK_BYTES, **params)
    block._MustUse__silence = True
    flits = sum(len(stream) for stream
                in golden_flits(block.format, frames, block.tables)[1].values())
    words_a_flit = FLIT_BYTES // LINK_BYTES
    # More flits than the retry buffer holds, so the link ends only if acks come back;
    # each spoilt word in a flit's first sending.
    assert flits > RETRY_DEPTH and flits * words_a_flit > max(SPOILT_WORDS)

    ports = {name: (prefix.rstrip("_"), layout, output,
                    Shape.cast(tx.signature.members[prefix + "tkeep"].shape).width)
             for name, prefix, layout, output in tx.streams}
    inputs = _stream_inputs(ports, frames)
    outputs, want = [], {}
    for name, prefix, layout, output in rx.streams:
        if output:                                      # o_s<k>: stream k's symbols
            index, prefix = int(name.removeprefix("o_s")), prefix.rstrip("_")
            mine = [frame for stream, frame in frames if stream == index]
            want[prefix] = frames_of(transfers(decoder_beats(mine, 1), layout, output=True))
            outputs.append({"prefix": prefix, "frames": len(want[prefix])})
    rng = np.random.default_rng(seed)
    start = int(rng.integers(len(PAUSES)))
    pauses = iter(PAUSES[start:] + PAUSES[:start] + PAUSES)
    for port in inputs + outputs:
        port["pause"] = next(pauses)
    print("retry pair: pauses " + ", ".join(f"{p['prefix']} {p['pause']}"
                                            for p in inputs + outputs))
    case = {"seed": seed, "cycle_limit": 40000, "inputs": inputs, "outputs": outputs,
            "config": {"writes": [], "pause": {"random": 0.2}}}
    result = run_axi("\n".join(texts), "link_axi_retry_pair", case)
    for prefix, wanted in want.items():
        assert result["output"][prefix] == wanted, f"seed {seed}: {prefix}"
        assert result["extra_frames"][prefix] == 0
