"""The link's blocks under their AXI4-Stream names (``linkcodec generate link-tx|link-rx
--axi-stream``), driven by cocotbext-axi with a pause generator on every port.

- ``LinkTx``: each stream's frames in on ``s_axis_s<k>``; the flits out on ``m_axis``,
  each a frame (``tlast`` on its last word), the flit's first byte in ``tdata[7:0]``
  (``docs/axi.md``'s word mapping): stream by stream, the golden writer's flits.
- ``LinkRx``: the golden writer's flits in on ``s_axis`` (``tuser`` the word's bits, as a
  ``LinkTx`` gives them); each stream's symbols out on ``m_axis_s<k>``, as the golden
  model's frames.

The expected transfers go through ``tests/test_axi.py``'s mapping, written from
``docs/axi.md``, not from the RTL. Seeds are printed (``LINKCODEC_SEED`` replays).
"""

import itertools

import numpy as np
import pytest
from amaranth.hdl import Shape

from linkcodec.generate import generate_link
from linkcodec.golden.link import FlitHeader, LinkFormat, deal
from linkcodec.rtl.axi import AxiStreamWrapper
from linkcodec.sim.beats import decoder_beats, symbol_beats
from linkcodec.sim.link import golden_flits, words_of_flits
from linkcodec.link_hardware import link_component

from test_axi import PAUSES, client_bits, frames_of, run_axi, source_frame, transfers

# Both at 2 streams: these tests check the AXI names and word mapping. (LinkTx's flits
# from two groups of streams at its link side, rtl/link.py's LINK_GROUP, are read back
# through the golden FlitReader in test_rtl_link.py's test_link_loads_tables_in_band at 5
# streams; here 5 took 48 s of make test's 20 minutes.)
CODEC, FLIT_BYTES, LINK_BYTES = "qlc", 64, 32
STREAMS = {"link-tx": 2, "link-rx": 2}


def _frames(rng, streams):
    """Frames of none, one and several flits, skewed and incompressible, two a stream."""
    skewed = np.minimum(rng.geometric(0.08, 400), 255).astype(np.uint8)
    kinds = [skewed[:0], skewed[:1], skewed, rng.integers(0, 256, 90, dtype=np.uint8)]
    return deal([kinds[index % len(kinds)] for index in range(2 * streams)], streams)


def _ports(kind):
    """``{block_port: (prefix, layout, is_output, byte_lanes)}`` of the wrapped block."""
    block = link_component(kind, codec=CODEC, streams=STREAMS[kind], flit_bytes=FLIT_BYTES,
                           link_bytes=LINK_BYTES)
    wrapper = AxiStreamWrapper(block)
    for elaboratable in (block, wrapper):
        elaboratable._MustUse__silence = True        # Amaranth's unused-elaboratable check
    return {name: (prefix.rstrip("_"), layout, output,
                   Shape.cast(wrapper.signature.members[prefix + "tkeep"].shape).width)
            for name, prefix, layout, output in wrapper.streams}


def _run(kind, case_ports, seed, tmp_path):
    verilog = generate_link(kind, codec=CODEC, streams=STREAMS[kind], flit_bytes=FLIT_BYTES,
                            link_bytes=LINK_BYTES, axi_stream=True, output=tmp_path)[0]
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
    fmt = LinkFormat(CODEC, streams=STREAMS[kind], flit_bytes=FLIT_BYTES)
    frames = _frames(np.random.default_rng(seed), STREAMS[kind])
    block = link_component(kind, codec=CODEC, streams=STREAMS[kind], flit_bytes=FLIT_BYTES,
                           link_bytes=LINK_BYTES)
    block._MustUse__silence = True
    _, per_stream = golden_flits(fmt, frames, block.tables)
    return frames, per_stream, _ports(kind)


def test_link_tx_flits_through_axi_names(seed, tmp_path):
    frames, per_stream, ports = _golden("link-tx", seed)
    inputs = []
    for index in range(STREAMS["link-tx"]):
        prefix, layout, _, byte_lanes = ports[f"i_s{index}"]
        mine = [frame for stream, frame in frames if stream == index]
        inputs.append({"prefix": prefix, "frames": [
            dict(source_frame(frame, byte_lanes), after=None)
            for frame in frames_of(transfers(symbol_beats(mine, 1), layout, output=False))]})
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
