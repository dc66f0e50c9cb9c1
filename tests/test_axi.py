"""The AXI4-Stream mapping (``rtl/axi.py``, ``docs/axi.md``) of every block.

- cocotbext-axi interoperability: the ``linkcodec generate --axi-stream`` Verilog of
  every block of the registry, at its fewest lanes, driven by cocotbext-axi's source and
  sink with pause generators on every port, against the golden model; decoders also get
  bad words whose golden outcome is an error beat, which must come through the sink.
- a QLC and a Huffman code swap through the AXI names, with ``cfg_ready`` holding writes
  back;
- the mapping under the project's own harness (random idle and backpressure, 4 lanes);
- ``docs/axi.md``'s port tables against the wrapper's signature.

Expected transfers come from the golden model's beats (the description's ``frame_io``)
through :func:`axi_transfer`, the mapping as ``docs/axi.md`` writes it, independent of
the RTL. Seeds are printed (``LINKCODEC_SEED`` replays).
"""

import hashlib
import json
import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from amaranth.hdl import ClockSignal, Module, ResetSignal, Shape
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from linkcodec.generate import axi_port_tables, axi_wrapper, generate
from linkcodec.golden.exponent import wire_decode_words, wire_encode
from linkcodec.golden.words import decode_words
from linkcodec.rtl.axi import AxiStreamWrapper
from linkcodec.rtl.qlc import config_layout as qlc_config_layout
from linkcodec.sim import runner
from linkcodec.rtl.blocks.beats import decoder_beats, frame_words, split_frames
from linkcodec.rtl.blocks import BLOCKS
from linkcodec.rtl.blocks.exponent import wire_words
from linkcodec.sim.harness import first_mismatch, run_beats

DOC = Path(__file__).resolve().parent.parent / "docs" / "axi.md"


# -- the mapping, as docs/axi.md states it ------------------------------------------------

def symbol_transfer(beat, *, lane_bytes, output):
    """The AXI transfer ``[tdata, tkeep, tuser, tlast]`` of a symbol beat: lane 0 in the
    low bits; the bytes of lanes ``0 .. count-1`` kept and, on an output, lane 0's
    always (a beat of ``count = 0`` is a placeholder); ``tuser`` is ``error |
    placeholder << 1`` on an output, none (0) on an input."""
    symbols, count = beat["symbols"], beat["count"]
    tdata = sum(int(symbol) << (8 * lane_bytes * lane) for lane, symbol in enumerate(symbols))
    kept = max(count, 1) if output else count
    tkeep = (1 << (lane_bytes * kept)) - 1
    tuser = (beat["error"] | int(count == 0) << 1) if output else 0
    return [tdata, tkeep, tuser, beat["last"]]


def word_transfer(beat, *, word_bytes):
    """The AXI transfer of a word: its bytes in stream order from ``tdata[7:0]``, the
    bytes that hold ``bits`` kept and byte 0 always, ``tuser`` = ``bits``. An input
    ignores ``tkeep``; a client sends it as an output would."""
    stream_bytes = beat["data"].to_bytes(word_bytes, "big")
    kept = max(1, -(-beat["bits"] // 8))
    return [int.from_bytes(stream_bytes, "little"), (1 << kept) - 1, beat["bits"],
            beat["last"]]


def transfers(beats, layout, *, output):
    """``beats`` of a port with payload ``layout`` as AXI transfers."""
    fields = dict(layout)
    if "symbols" in fields:
        lane_bytes = Shape.cast(fields["symbols"].shape.elem_shape).width // 8
        return [symbol_transfer(beat, lane_bytes=lane_bytes, output=output) for beat in beats]
    return [word_transfer(beat, word_bytes=fields["data"].width // 8) for beat in beats]


def source_frame(frame_transfers, byte_lanes):
    """One frame's transfers as cocotbext-axi's source takes them: every byte with its
    ``tkeep`` bit and the transfer's ``tuser``."""
    tdata, tkeep, tuser = [], [], []
    for data_value, keep, user, _ in frame_transfers:
        tdata += list(data_value.to_bytes(byte_lanes, "little"))
        tkeep += [(keep >> k) & 1 for k in range(byte_lanes)]
        tuser += [user] * byte_lanes
    return {"tdata": tdata, "tkeep": tkeep, "tuser": tuser}


def frames_of(port_transfers):
    """Transfers cut into frames after every ``tlast``."""
    cut = split_frames([{"last": t[3], "t": t} for t in port_transfers])[0]
    return [[beat["t"] for beat in frame] for frame in cut]


# -- what a client does (docs/axi.md, "What a client must do") ----------------------------

def client_symbols(frame_transfers, *, byte_lanes, dtype):
    """A symbol frame as a client reads it: ``(symbols, error)``, the kept bytes of every
    transfer that is not a placeholder (``tuser`` bit 1), as symbols, and ``tuser`` bit 0
    (error) of the frame's last transfer."""
    kept = bytearray()
    for tdata, tkeep, tuser, _ in frame_transfers:
        if tuser & 2:
            continue
        raw = tdata.to_bytes(byte_lanes, "little")
        kept += bytes(raw[k] for k in range(byte_lanes) if tkeep >> k & 1)
    symbols = np.frombuffer(bytes(kept), dtype=np.dtype(dtype).newbyteorder("<"))
    return symbols, bool(frame_transfers[-1][2] & 1)


def client_bits(frame_transfers):
    """A word frame as a client reads it: ``(bytes, nbits)``; each transfer's ``tuser``
    says how many of its bits, from byte 0 on, belong to the frame."""
    data, nbits = bytearray(), 0
    for tdata, tkeep, tuser, _ in frame_transfers:
        assert tkeep & 1, "byte 0 is always kept"
        data += bytes((tdata >> (8 * k)) & 0xFF for k in range(-(-tuser // 8)))
        nbits += tuser
    return bytes(data), nbits


# -- stimulus ------------------------------------------------------------------------------

def symbols_for(description, rng, count):
    """``count`` skewed symbols of the block's kind (e4m3 bytes or bf16 patterns)."""
    if description.symbol_dtype == np.uint16:
        values = rng.standard_normal(count) * np.exp(rng.standard_normal(count))
        return values.astype(ml_dtypes.bfloat16).view(np.uint16)
    return np.minimum(rng.geometric(0.05, count), 255).astype(np.uint8)


def good_frames(description, lanes, rng):
    return [symbols_for(description, rng, 300), np.zeros(0, description.symbol_dtype),
            symbols_for(description, rng, 1), symbols_for(description, rng, lanes + 1),
            symbols_for(description, rng, 3 * lanes)]


def _word_fault(words, width):
    """A non-final word of ``words`` that says it holds half a word: a word fault."""
    words = [dict(word) for word in words]
    words[min(1, len(words) - 2)]["bits"] = width // 2
    return words


def bad_prefix_frames(description, tables, width, rng, *, lanes):
    """Words with a fault, then a good frame, for a decoder: ``(inputs, expected)`` beat
    lists per port, as the golden model decodes them."""
    frame, after = symbols_for(description, rng, 40), symbols_for(description, rng, 5)
    if description.name == "exponent-decoder":
        values, escapes = wire_words(frame, tables, width)
        good_values, good_escapes = wire_words(after, tables, width)
        value_words = _word_fault(values, width) + good_values
        escape_words = escapes + good_escapes
        decoded = wire_decode_words(value_words, escape_words, width, tables)
        inputs = {"i": value_words, "i_escapes": escape_words}
    else:
        words = _word_fault(frame_words(*tables.encode(frame), width), width)
        words += frame_words(*tables.encode(after), width)
        decoded = decode_words(tables, words, width)
        inputs = {"i": words}
    assert [bool(error) for _, error in decoded] == [True, False]
    beats = []
    for symbols, error in decoded:
        beats += decoder_beats([symbols], lanes, error_after=symbols.size if error else None)
    return inputs, {"o": beats}


# -- running the --axi-stream Verilog under cocotbext-axi ----------------------------------

def axi_verilog(description, lanes, tmp_path):
    """The Verilog ``linkcodec generate BLOCK --axi-stream`` writes, and its module."""
    verilog = generate(description.name, lanes=lanes, axi_stream=True, output=tmp_path)[0]
    return verilog.read_text(), verilog.stem


def run_axi(text, module, case):
    """Build ``text`` (one build folder per module and Verilog) and run ``sim/axi_tb.py``
    on ``case``; returns the testbench's result."""
    build_dir = runner.BUILD_ROOT / f"{module}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    with runner.build_lock(build_dir):
        sim = runner.build(text, name=module, build_dir=build_dir)
        with tempfile.TemporaryDirectory(prefix="linkcodec-axi-") as scratch:
            case_path, result_path = Path(scratch) / "case.json", Path(scratch) / "result.json"
            case_path.write_text(json.dumps(case))
            runner.run_testbench(sim, name=module, build_dir=build_dir,
                                 test_module="linkcodec.sim.axi_tb",
                                 extra_env={"LINKCODEC_CASE": str(case_path),
                                            "LINKCODEC_RESULT": str(result_path)},
                                 seed=case["seed"])
            assert result_path.exists(), f"no result; see {build_dir / 'test.log'}"
            result = json.loads(result_path.read_text())
    assert not result["timed_out"], f"seed {case['seed']}: timed out; see {build_dir}"
    assert not result["protocol_events"], (
        f"seed {case['seed']}: breaks of the stream rules: {result['protocol_events'][:3]}")
    return result


def wrapper_ports(description, lanes):
    """``{block_port: (prefix, layout, is_output, byte_lanes)}`` of the block's AXI
    wrapper, from its signature."""
    wrapper = axi_wrapper(description, lanes=lanes)
    ports = {}
    for name, prefix, layout, output in wrapper.streams:
        width = Shape.cast(wrapper.signature.members[prefix + "tkeep"].shape).width
        ports[name] = (prefix.rstrip("_"), layout, output, width)
    return ports


PAUSES = [{"cycle": [1, 1, 1, 0]}, {"cycle": [0, 1]}, {"random": 0.3}, {"cycle": [0, 0, 1]}]


def port_cases(ports, inputs, expected, pauses):
    """The case's ``inputs`` and ``outputs`` entries, and the transfers expected per
    output prefix."""
    case_inputs, case_outputs, want = [], [], {}
    for name, (prefix, layout, output, byte_lanes) in ports.items():
        pause = next(pauses)
        if output:
            frames = frames_of(transfers(expected.get(name, []), layout, output=True))
            case_outputs.append({"prefix": prefix, "pause": pause, "frames": len(frames)})
            want[prefix] = frames
        else:
            frames = frames_of(transfers(inputs.get(name, []), layout, output=False))
            case_inputs.append({"prefix": prefix, "pause": pause, "frames": [
                dict(source_frame(frame, byte_lanes), after=None) for frame in frames]})
    return case_inputs, case_outputs, want


@pytest.mark.parametrize("block", list(BLOCKS))
def test_cocotbext_axi_against_golden(block, seed, tmp_path):
    description = BLOCKS[block]
    lanes = min(description.lanes)
    width = description.default_word_width(lanes)
    rng = np.random.default_rng(seed)
    frames = good_frames(description, lanes, rng)
    tables = description.fitted_tables(frames)
    inputs, expected = {}, {}
    for frame in frames:
        frame_in, frame_out = description.frame_io(frame, lanes=lanes, word_width=width,
                                                   tables=tables)
        for port, beats in frame_in.items():
            inputs.setdefault(port, []).extend(beats)
        for port, beats in frame_out.items():
            expected.setdefault(port, []).extend(beats)
    decoder = "-decoder" in block
    if decoder:
        bad_in, bad_out = bad_prefix_frames(description, tables, width, rng, lanes=lanes)
        for port, beats in bad_in.items():
            inputs[port] += beats
        expected["o"] += bad_out["o"]

    ports = wrapper_ports(description, lanes)
    start = int(rng.integers(len(PAUSES)))
    pauses = iter(PAUSES[start:] + PAUSES[:start] + PAUSES)
    case_inputs, case_outputs, want = port_cases(ports, inputs, expected, pauses)
    writes = [[w["addr"], w["data"], None]
              for w in description.config_writes(tables)["i_config"]]
    for port in case_inputs:                 # the tables are in before any traffic
        port["frames"][0]["after"] = len(writes)
    case = {"seed": seed, "cycle_limit": 40000, "inputs": case_inputs,
            "outputs": case_outputs, "config": {"writes": writes, "pause": {"random": 0.2}}}
    print(f"{block}: pauses " + ", ".join(f"{p['prefix']} {p['pause']}"
                                         for p in case_inputs + case_outputs))
    result = run_axi(*axi_verilog(description, lanes, tmp_path), case)

    for prefix, wanted in want.items():
        got = result["output"][prefix]
        assert got == wanted, f"seed {seed}: {prefix}: {first_difference(got, wanted)}"
        assert result["extra_frames"][prefix] == 0, f"{prefix}: frames beyond the expected"
        # No null transfer anywhere, so no AXI infrastructure may drop one.
        assert all(transfer[1] for frame in got for transfer in frame)

    # A client that follows docs/axi.md gets the golden model's frames back.
    out_prefix, _, _, byte_lanes = ports["o"]
    if decoder:
        got = [client_symbols(frame, byte_lanes=byte_lanes, dtype=description.symbol_dtype)
               for frame in result["output"][out_prefix]]
        want_symbols = [(symbols, False) for symbols in frames]
        assert [(list(s), e) for s, e in got[:len(frames)]] == [
            (list(s), e) for s, e in want_symbols]
        errors = [error for _, error in got[len(frames):]]
        assert errors == [True, False], "the error beat came through cocotbext-axi's sink"
    else:
        got = [client_bits(frame) for frame in result["output"][out_prefix]]
        for frame, (data_bytes, nbits) in zip(frames, got):
            want_bytes, want_bits = (wire_encode(frame, tables)[:2]
                                     if block == "exponent-encoder"
                                     else tables.encode(frame))
            assert nbits == want_bits
            assert data_bytes == bytes(want_bytes)[:-(-nbits // 8)]


def first_difference(got, want):
    for index, (frame, wanted) in enumerate(zip(got, want)):
        if frame != wanted:
            for beat, (a, b) in enumerate(zip(frame, wanted)):
                if a != b:
                    return f"frame {index} transfer {beat}: got {a}, expected {b}"
            return f"frame {index}: got {len(frame)} transfers, expected {len(wanted)}"
    return f"got {len(got)} frames, expected {len(want)}"


# -- the same mapping under the project's harness, at 4 lanes ------------------------------

class AxiAsStreams(wiring.Component):
    """Test adapter: the wrapper's AXI signals as plain streams, so the harness can drive
    them with its random idle and backpressure. ``s_axis`` is stream ``i``, ``m_axis`` is
    ``o`` (payload ``tdata``, ``tkeep``, ``tlast``, ``tuser``), ``cfg_*`` with
    ``cfg_ready`` is ``i_config``; ``aclk``/``aresetn`` follow ``clk``/``rst``."""

    def __init__(self, wrapper):
        self.wrapper = wrapper
        ports = wrapper.signature.members

        def layout(prefix):
            return data.StructLayout({name: ports[prefix + name].shape
                                      for name in ("tdata", "tkeep", "tlast", "tuser")
                                      if prefix + name in ports})

        self.layouts = {"i": layout("s_axis_"), "o": layout("m_axis_")}
        super().__init__({"i": In(stream.Signature(self.layouts["i"])),
                          "o": Out(stream.Signature(self.layouts["o"])),
                          "i_config": In(stream.Signature(qlc_config_layout))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.axi = axi = self.wrapper
        m.d.comb += [axi.aclk.eq(ClockSignal()), axi.aresetn.eq(~ResetSignal())]
        m.d.comb += [axi.s_axis_tvalid.eq(self.i.valid), self.i.ready.eq(axi.s_axis_tready),
                     self.o.valid.eq(axi.m_axis_tvalid), axi.m_axis_tready.eq(self.o.ready),
                     axi.cfg_we.eq(self.i_config.valid), self.i_config.ready.eq(axi.cfg_ready),
                     axi.cfg_addr.eq(self.i_config.payload.addr),
                     axi.cfg_data.eq(self.i_config.payload.data)]
        for name in self.layouts["i"].members:
            m.d.comb += getattr(axi, "s_axis_" + name).eq(getattr(self.i.payload, name))
        for name in self.layouts["o"].members:
            m.d.comb += getattr(self.o.payload, name).eq(getattr(axi, "m_axis_" + name))
        return m


def as_fields(port_transfers, layout):
    """Transfers as payload dicts of an :class:`AxiAsStreams` port."""
    names = ("tdata", "tkeep", "tuser", "tlast")
    return [{name: value for name, value in zip(names, transfer) if name in layout.members}
            for transfer in port_transfers]


@pytest.mark.parametrize("block", ["qlc-encoder", "qlc-decoder"])
def test_axi_mapping_at_four_lanes_under_the_harness(block, seed):
    """4 lanes of 8-bit symbols and 32-bit words under random idle and backpressure;
    a word input's ``tkeep`` is ignored (sent all low here)."""
    description = BLOCKS[block]
    lanes, width = 4, 32
    rng = np.random.default_rng(seed)
    frames = [symbols_for(description, rng, 203), np.array([7], np.uint8),
              np.arange(256, dtype=np.uint8), np.zeros(0, np.uint8),
              symbols_for(description, rng, 2 * lanes)]
    code = description.fitted_tables(frames)
    inputs, expected = {"i": []}, {"o": []}
    for frame in frames:
        frame_in, frame_out = description.frame_io(frame, lanes=lanes, word_width=width,
                                                   tables=code)
        inputs["i"] += frame_in["i"]
        expected["o"] += frame_out["o"]
    if block == "qlc-decoder":
        bad_in, bad_out = bad_prefix_frames(description, code, width, rng, lanes=lanes)
        inputs["i"] += bad_in["i"]
        expected["o"] += bad_out["o"]
    component = description.build(lanes=lanes, word_width=width)
    wrapper = AxiStreamWrapper(component, config_ports=description.config_ports)
    ports = {name: (layout, output) for name, _, layout, output in wrapper.streams}
    adapter = AxiAsStreams(wrapper)
    sent = transfers(inputs["i"], ports["i"][0], output=False)
    if block == "qlc-decoder":
        sent = [[tdata, 0, tuser, tlast] for tdata, _, tuser, tlast in sent]
    wanted = transfers(expected["o"], ports["o"][0], output=True)
    result = run_beats(adapter, inputs={"i": as_fields(sent, adapter.layouts["i"])},
                       expected={"o": as_fields(wanted, adapter.layouts["o"])},
                       config=description.config_writes(code), idle=0.3, stall=0.3,
                       seed=seed, name=f"axi-{block}-l{lanes}")
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


# -- a codebook swap through the AXI names, writes held back by cfg_ready -----------------

def skewed_tables(description, rng, centre):
    """The block's tables fitted to symbols clustered around ``centre``."""
    symbols = (centre + rng.geometric(0.08, 4000) * rng.choice([-1, 1], 4000)) % 256
    return description.fitted_tables([symbols.astype(np.uint8)])


@pytest.mark.parametrize("block", ["qlc-encoder", "qlc-decoder", "huffman-encoder",
                                   "huffman-decoder"])
def test_codebook_swap_with_writes_held_by_cfg_ready(block, seed, tmp_path):
    """Frame 0 (the reset codebook) is in flight when codebook A's writes and its switch
    go in; B's writes follow at once and must wait (``cfg_ready`` low: the switch is
    pending, and in the decoder frame 0 is still in the bank B will overwrite). B's
    switch goes in once the last A frame has started, so it takes effect after it; the B
    frames are sent once it is made. Every frame must come out as the golden model codes
    or decodes it with its own codebook."""
    description = BLOCKS[block]
    lanes = min(description.lanes)
    width = description.default_word_width(lanes)
    rng = np.random.default_rng(seed)
    books = {"reset": description.default_tables(),
             "A": skewed_tables(description, rng, 40),
             "B": skewed_tables(description, rng, 200)}
    assert books["A"] != books["B"]
    plan = [("reset", symbols_for(description, rng, 1500))]
    plan += [("A", (symbols_for(description, rng, 150) + 30).astype(np.uint8))
             for _ in range(2)]
    plan += [("B", (symbols_for(description, rng, 150) + 190).astype(np.uint8))
             for _ in range(2)]

    ports = wrapper_ports(description, lanes)
    in_layout, out_layout = ports["i"][1], ports["o"][1]
    inputs, outputs = [], []
    for book, frame in plan:
        frame_in, frame_out = description.frame_io(frame, lanes=lanes, word_width=width,
                                                   tables=books[book])
        inputs.append(transfers(frame_in["i"], in_layout, output=False))
        outputs.append(transfers(frame_out["o"], out_layout, output=True))

    writes_a = description.config_writes(books["A"])["i_config"]
    writes_b = description.config_writes(books["B"])["i_config"]
    # A goes in once frame 0 is under way; B's switch once the last A frame has started.
    last_a_starts = sum(len(transfer) for transfer in inputs[:2]) + 1
    writes = [[w["addr"], w["data"], None] for w in writes_a + writes_b]
    writes[0][2] = {"port": "s_axis", "transfers": 1}
    writes[-1][2] = {"port": "s_axis", "transfers": last_a_starts}
    gates = [None, len(writes_a), None, len(writes), None]
    byte_lanes = ports["i"][3]
    case = {"seed": seed, "cycle_limit": 60000,
            "config": {"writes": writes, "pause": {"random": 0.2}},
            "inputs": [{"prefix": "s_axis", "pause": {"random": 0.3}, "frames": [
                dict(source_frame(frame, byte_lanes), after=gate)
                for frame, gate in zip(inputs, gates)]}],
            "outputs": [{"prefix": "m_axis", "pause": {"random": 0.2},
                         "frames": len(outputs)}]}
    result = run_axi(*axi_verilog(description, lanes, tmp_path), case)
    print(f"{block}: {result['held_cycles']} cycles with cfg_we high and cfg_ready low, "
          f"{result['cycles']} cycles in all")
    assert result["writes_made"] == len(writes)
    assert result["held_cycles"] > 0, "no write was held back by cfg_ready"
    got = result["output"]["m_axis"]
    assert got == outputs, f"seed {seed}: {first_difference(got, outputs)}"
    assert result["extra_frames"]["m_axis"] == 0


# -- docs/axi.md ---------------------------------------------------------------------------

def test_doc_port_tables_are_the_wrappers():
    """docs/axi.md's port tables are what :func:`axi_port_tables` makes from the wrapper
    of every block of the registry, at every lane count, so the page cannot drift."""
    text = DOC.read_text()
    begin, end = "<!-- axi_port_tables: begin -->\n", "<!-- axi_port_tables: end -->"
    assert begin in text and end in text
    shown = text.split(begin, 1)[1].split(end, 1)[0]
    assert shown == axi_port_tables(), ("docs/axi.md's port tables are stale; rewrite "
                                        "them with linkcodec.generate.axi_port_tables()")
    for block, description in BLOCKS.items():
        section = shown.split(f"### {block}\n", 1)[1].split("\n### ", 1)[0]
        named = [line.split("`")[1] for line in section.splitlines()
                 if line.startswith("| `")]
        wrapper = axi_wrapper(description, lanes=min(description.lanes))
        assert named == list(wrapper.signature.members), block
