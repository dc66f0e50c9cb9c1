"""What only the exponent-remap blocks promise, under Verilator, bit-exact against the
golden model (``golden.exponent``: ``wire_encode`` for the encoder, ``wire_decode_words``
for the decoder, whatever words it is given): every bf16 bit pattern, tables fitted by
sigma and by histogram, frames where everything escapes, a table swap between frames, bad
input at the beat boundaries, and the decoder's own differential fuzzer (two streams).

The contract every block keeps (round trips with run-time tables at every lane count,
latency, symbols per cycle, parameter errors, counts beyond the lanes, a reset in
mid-stream) is checked once for every block in ``test_contract.py``.

Runs vary the pause pattern (random, bursty, hold-then-release) on every port; the seed
is printed (replay with ``LINKCODEC_SEED``). Every case of one block and lane count shares
one Verilator build with the contract suite (the block with its default table; the tables
under test load through ``i_config``) and runs in its xdist group, so builds never race
and each is made once; 16 lanes run under the ``slow`` marker, as in the contract suite.
"""

import os

import ml_dtypes
import numpy as np
import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from cases import block_case

from linkcodec.bundled import bundled_bf16_files
from linkcodec.golden.exponent import ExponentTable, WireFrame
from linkcodec.golden.exponent import escape_words as golden_escape_words
from linkcodec.golden.exponent import (table_from_histogram, table_from_tensor_sigma,
                                       wire_decode_words, wire_encode)
from linkcodec.rtl.exponent import (DEFAULT_TABLE, SWITCH_ADDR, ExponentRemapDecoder,
                                    ExponentRemapEncoder, config_writes, default_word_width,
                                    switch_write)
from linkcodec.rtl.payload import pack, unpack
from linkcodec.rtl.blocks.beats import decoder_beats, frame_words, symbol_beats
from linkcodec.rtl.blocks import get_block
from linkcodec.rtl.blocks.exponent import wire_words
from linkcodec.sim.fuzz import bad_bits, cut_short, flip_bits
from linkcodec.sim.harness import first_mismatch, run_beats, run_frames, stream_ports
from linkcodec.sim.pair import pairs

LANES = [4, 8, 16]
def bf16(values):
    return np.asarray(values, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)


def real_bf16(count=None, index=0):
    """A real bf16 tensor from the sample when it holds some; otherwise a stand-in of
    Gaussian values with a few outliers (so that some exponents escape)."""
    files = bundled_bf16_files()
    if files:
        values = np.load(files[index % len(files)]).reshape(-1)
        if values.dtype != np.uint16:
            values = bf16(values)
    else:
        rng = np.random.default_rng(index)
        values = rng.standard_normal(40_000) * 0.02
        values[rng.integers(0, values.size, 400)] *= 1000
        values = bf16(values)
    return values if count is None else values[:count]


def all_patterns():
    return np.arange(1 << 16, dtype=np.uint16)


def escaping_table():
    """A table none of whose exponents a frame of ``all_escapes`` holds."""
    return ExponentTable((1, 2, 3, 4, 5, 6, 7))


def all_escapes():
    """Every value escapes under :func:`escaping_table` (exponents 0, 8..255)."""
    rng = np.random.default_rng(7)
    exponents = rng.choice(np.r_[0, 8:256], 300).astype(np.uint16)
    return (rng.integers(0, 2, 300, dtype=np.uint16) << 15) | (exponents << 7) | (
        rng.integers(0, 128, 300, dtype=np.uint16))


def decoder_expected(decoded, lanes):
    """The beats a decoder emits for ``wire_decode_words``'s ``(values, error)`` frames."""
    beats = []
    for values, error in decoded:
        beats += decoder_beats([values], lanes, error_after=values.size if error else None)
    return beats


def run_decoder_words(lanes, value_words, escape_words, table, *, seed, pattern):
    """Any words through the decoder (``table`` loaded through ``i_config``), against the
    golden front end."""
    width = default_word_width(lanes)
    expected = decoder_expected(wire_decode_words(value_words, escape_words, width, table),
                                lanes)
    block = get_block("exponent-decoder")
    return run_beats(block.build(lanes=lanes), inputs={"i": value_words, "i_escapes": escape_words},
                     expected={"o": expected}, config=block.config_writes(table), idle=pattern,
                     stall=pattern, seed=seed, name=block.module_name(lanes=lanes))


# -- through both blocks -----------------------------------------------------------------

@pytest.mark.parametrize(("block", "lanes", "pattern"), [
    # 8 lanes and more under -m slow (make test runs the contract at 4 lanes only)
    block_case(block, lanes, pattern, slow=lanes > 4)
    for block in ("exponent-encoder", "exponent-decoder")
    for lanes, pattern in zip(LANES, ("random", "bursty", "hold"))])
def test_every_bf16_pattern_round_trips(block, lanes, pattern, seed):
    """All 65,536 bit patterns and a real tensor (the contract has the corner frames),
    the table from a real tensor's histogram loaded through ``i_config``."""
    frames = [all_patterns(), real_bf16(3000)]
    result = run_frames(block, frames, lanes=lanes, tables=table_from_histogram(real_bf16()),
                        idle=pattern, stall=pattern, seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    assert result["symbols"] == sum(frame.size for frame in frames)


@pytest.mark.parametrize(("block", "lanes", "fit", "pattern"), [
    block_case(block, 4, fit, pattern) for block in ("exponent-encoder", "exponent-decoder")
    for fit, pattern in [("sigma", "bursty"), ("histogram", "random")]])
def test_real_values_with_a_fitted_table(block, lanes, fit, pattern, seed):
    """Real bf16 values with the table from their sigma and from their histogram; a frame
    where every value escapes; an empty and a one-value frame."""
    values = real_bf16(8000, index=1)
    table = table_from_tensor_sigma(values) if fit == "sigma" else table_from_histogram(values)
    frames = [values[:5000], np.zeros(0, np.uint16), values[5000:5001], values[5001:]]
    result = run_frames(block, frames, lanes=lanes, tables=table, idle=pattern, stall=pattern,
                        seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    everything = all_escapes()
    assert wire_encode(everything, escaping_table()).escapes_bits == 8 * everything.size
    result = run_frames(block, [everything, np.zeros(0, np.uint16), everything[:1]],
                        lanes=lanes, tables=escaping_table(), idle=pattern, stall=pattern,
                        seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


# -- a bank switch while a frame flows (Amaranth's simulator: the writes go mid-frame) ----

def _stream(component, inputs, counts, *, writes=(), write_at=0, stall=0.0, seed=0,
            limit=20000):
    """Drive ``component`` in Amaranth's simulator: the beats of every input port offered
    back to back, each output ``ready`` low with chance ``stall``, and the config
    ``writes`` offered from cycle ``write_at`` on, each held until ``i_config.ready``.
    Returns ``(got, cycles, held)``: the output beats per port, the cycle of every
    transfer per port (inputs and outputs), and the cycles a write waited for ready."""
    in_ports, out_ports = stream_ports(component)
    rng = np.random.default_rng(seed)
    got = {port: [] for port in out_ports}
    cycles = {port: [] for port in [*inputs, *out_ports]}
    held = [0]

    async def bench(ctx):
        pending = {port: list(beats) for port, beats in inputs.items()}
        config = list(writes)
        for cycle in range(limit):
            if not config and not any(pending.values()) and all(
                    len(got[port]) >= counts[port] for port in out_ports):
                break
            offer = bool(config) and cycle >= write_at
            ctx.set(component.i_config.valid, offer)
            if offer:
                ctx.set(component.i_config.payload.as_value(),
                        pack(in_ports["i_config"], config[0]))
            for port, beats in pending.items():
                stream = getattr(component, port)
                ctx.set(stream.valid, bool(beats))
                if beats:
                    ctx.set(stream.payload.as_value(), pack(in_ports[port], beats[0]))
            for port in out_ports:
                ctx.set(getattr(component, port).ready, int(rng.random() >= stall))
            written = offer and ctx.get(component.i_config.ready)
            held[0] += offer and not written
            taken = [port for port, beats in pending.items()
                     if beats and ctx.get(getattr(component, port).ready)]
            for port in out_ports:
                stream = getattr(component, port)
                if ctx.get(stream.valid) and ctx.get(stream.ready):
                    got[port].append(unpack(out_ports[port],
                                            ctx.get(stream.payload.as_value())))
                    cycles[port].append(cycle)
            await ctx.tick()
            if written:
                config.pop(0)
            for port in taken:
                pending[port].pop(0)
                cycles[port].append(cycle)
        else:
            raise AssertionError(f"no end after {limit} cycles: {got}")

    sim = Simulator(component)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return got, cycles, held[0]


def _two_tables():
    """Two tables with the same exponents in another order: a frame escapes the same
    values under both (so its words have the same sizes and a run the same timing), but
    every other value's code differs."""
    table = table_from_histogram(real_bf16())
    return table, ExponentTable(table.exponents[::-1])


@pytest.mark.parametrize("block", ["exponent-encoder", "exponent-decoder"])
def test_bank_switch_while_a_frame_flows(block, seed):
    """The block runs frame 1 under table A while table B goes into the idle bank and the
    switch is asked for (``config_writes(B)``); frame 2, coded with B, follows at once.
    Under random backpressure both frames are bit-exact with the golden model, and the
    writes that come after the switch wait for ``i_config.ready``. With no stalls the
    switch costs no cycle: the encoder takes frame 2's first beat the cycle after frame
    1's last, and every transfer of either block happens in the cycle it does in the same
    run without a switch."""
    lanes, width = 4, default_word_width(4)
    first, second = _two_tables()
    values = real_bf16(1200, index=2)
    frames = [values[:800], values[800:]]
    words = [wire_words(frames[0], first, width, lanes),
             wire_words(frames[1], second, width, lanes)]
    assert words[1] != wire_words(frames[1], first, width, lanes)
    encoder = block == "exponent-encoder"
    if encoder:
        inputs = {"i": symbol_beats(frames, lanes)}
        expected = {"o": words[0][0] + words[1][0], "o_escapes": words[0][1] + words[1][1]}
    else:
        inputs = {"i": words[0][0] + words[1][0], "i_escapes": words[0][1] + words[1][1]}
        expected = {"o": decoder_beats(frames, lanes)}
    counts = {port: len(beats) for port, beats in expected.items()}
    # B's writes, then the switch, then C's first write, which must wait for the switch
    writes = config_writes(second) + config_writes(first)[:1]

    def run(writes, stall, seed):
        component = get_block(block).component(lanes=lanes, tables=first)
        return _stream(component, inputs, counts, writes=writes, write_at=20, stall=stall,
                       seed=seed)

    got, _, held = run(writes, 0.3, seed)
    assert got == expected, f"seed {seed}"
    assert held > 0, "no write waited for the switch: it took effect inside frame 1"
    _, switched, _ = run(writes, 0.0, seed)
    _, plain, _ = run([], 0.0, seed)
    assert switched == plain
    if encoder:
        beats = len(symbol_beats(frames[:1], lanes))
        assert switched["i"][beats] == switched["i"][beats - 1] + 1


# -- an encoder driving its decoder: sparse escapes ----------------------------------------

@pytest.mark.xdist_group("exponent-pair")
@pytest.mark.parametrize("pattern", ["random", "hold"])
def test_pair_with_one_escape_in_thousands(pattern, seed):
    """The encoder drives the decoder with nothing between them (the contract's pair, one
    Verilator build): frames of 4,096 values with a single escape, at the first value,
    the last and in the middle, and one with an escape every 1,000 values, bit-exact.
    Before the escapes port carried a beat's escapes in a word of their own, the
    encoder held a lone escape in a half-full word that the decoder waited for, and
    such a frame stopped after a few beats."""
    ones = np.full(4096, 0x3F80, np.uint16)                     # 1.0: code 1
    frames = []
    for escaped in ([0], [4095], [2048], list(range(0, 4096, 1000))):
        frame = ones.copy()
        frame[escaped] = 0x0080                                  # exponent 1: escapes
        frames.append(frame)
    pair = pairs()["exponent-pair"]
    result = run_frames(pair, frames, lanes=4, tables=DEFAULT_TABLE, idle=pattern,
                        stall=pattern, seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    assert result["symbols"] == 4 * 4096


# -- bad decoder input ---------------------------------------------------------------------

def _words(wire, width):
    """Both streams' words (a stream cut short keeps only the bytes its bits reach)."""
    return (frame_words(wire.values[:-(-wire.values_bits // 8)], wire.values_bits, width),
            frame_words(wire.escapes[:-(-wire.escapes_bits // 8)], wire.escapes_bits, width))


def bad_frames(lanes, table):
    """``(name, values_words, escape_words)`` of frames no valid encoder makes, each with
    its fault at a beat boundary or inside a beat, and a good frame after each."""
    width = default_word_width(lanes)
    rng = np.random.default_rng(lanes)
    inside = np.array(table.exponents, dtype=np.uint16)
    exponents = rng.choice(inside, 4 * lanes)
    exponents[[lanes - 1, lanes, 2 * lanes + 1]] = (0, 255, 3)     # three escapes
    values = (exponents << 7) | rng.integers(0, 128, exponents.size, dtype=np.uint16)
    wire = wire_encode(values, table)
    assert wire.escapes_bits == 24
    good = _words(wire_encode(values[:lanes + 3], table), width)
    cases = []

    def add(name, changed):
        cases.append((name, *_words(changed, width)))
        cases.append((f"{name}, then a good frame", *good))

    for kept in (2 * lanes, lanes + 1, 1, 0):                       # a truncated value
        add(f"cut {kept}", wire._replace(values_bits=11 * kept + 5))
    add("values end at a beat", wire._replace(values_bits=11 * 2 * lanes))
    escapes = wire.escapes
    add("missing last escape", wire._replace(escapes=escapes[:2], escapes_bits=16))
    add("missing second escape", wire._replace(escapes=escapes[:1], escapes_bits=8))
    add("no escapes", wire._replace(escapes=b"", escapes_bits=0))
    add("extra escape", wire._replace(escapes=escapes + b"\x07", escapes_bits=32))
    add("extra bits", wire._replace(escapes=escapes + b"\x00", escapes_bits=28))
    whole = wire_encode(values[:2 * lanes], table)
    add("extra escape after whole beats", whole._replace(escapes=whole.escapes + b"\x09",
                                                         escapes_bits=whole.escapes_bits + 8))
    for index in range(3):                                           # a table exponent
        changed = bytearray(escapes)
        changed[index] = table.exponents[index]
        add(f"table exponent {index}", wire._replace(escapes=bytes(changed)))
    long = wire_encode(np.tile(values, 8), table)
    values_words, escape_words = _words(long, width)
    for index in range(min(3, len(values_words) - 1)):                # word faults
        faulty = [dict(word) for word in values_words]
        faulty[index]["bits"] = width // 2
        cases.append((f"values word {index} short", faulty, escape_words))
        cases.append(("then a good frame", *good))
    faulty = [dict(word) for word in values_words]
    faulty[-1]["bits"] = width + 1
    cases.append(("last values word too long", faulty, escape_words))
    for bits in (0, 12, width + 8):                # escapes-port word faults
        faulty = [dict(word) for word in escape_words]
        faulty[0]["bits"] = bits
        cases.append((f"escape word 0 holds {bits} bits", values_words, faulty))
        cases.append(("then a good frame", *good))
    faulty = [dict(word) for word in escape_words]
    faulty[0]["bits"] = width - 8                    # fine: whole bytes, one short
    cases.append(("escape word 0 a byte short", values_words, faulty))
    add("empty values, one escape", WireFrame(b"", 0, b"\x05", 8))
    cases.append(("good", *good))
    cases.append(("good, a beat's escapes a word", good[0],
                  golden_escape_words(values[:lanes + 3], table, lanes=lanes,
                                      word_width=width)))
    return cases


@pytest.mark.parametrize("lanes", [pytest.param(4, marks=pytest.mark.xdist_group(
    "exponent-decoder-4"))])
def test_bad_input_at_the_boundaries(lanes, seed):
    table = table_from_histogram(real_bf16())
    cases = bad_frames(lanes, table)
    value_words = [word for _, words, _ in cases for word in words]
    escape_words = [word for _, _, words in cases for word in words]
    decoded = wire_decode_words(value_words, escape_words, default_word_width(lanes), table)
    assert sum(error for _, error in decoded) >= len(cases) // 2 - 1
    result = run_decoder_words(lanes, value_words, escape_words, table, seed=seed,
                               pattern="bursty")
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


def regrouped(rng, data, nbits, width):
    """The whole bytes of the escapes ``(data, nbits)`` in words of 1 to ``width / 8``
    bytes each, at random, the last one sometimes followed by an empty last word."""
    raw, size = bytes(data[:nbits // 8]), width // 8
    words, start = [], 0
    while start < len(raw):
        chunk = raw[start:start + int(rng.integers(1, size + 1))]
        start += len(chunk)
        words.append({"data": int.from_bytes(chunk + bytes(size - len(chunk)), "big"),
                      "bits": 8 * len(chunk), "last": 0})
    if not words or rng.random() < 0.3:
        words.append({"data": 0, "bits": 0, "last": 0})
    words[-1]["last"] = 1
    return words


def escape_fault(rng, words, width):
    """``words`` with one word made a fault by the escapes port's rule: bits that are no
    whole number of bytes, more than ``width``, or 0 on a word that is not the last."""
    words = [dict(word) for word in words]
    index = int(rng.integers(0, len(words)))
    kind = int(rng.integers(0, 3))
    if kind == 0:
        words[index]["bits"] = 8 * int(rng.integers(0, width // 8)) + int(rng.integers(1, 8))
    elif kind == 1:
        words[index]["bits"] = int(rng.integers(width + 1, 1 << width.bit_length()))
    elif words[index]["last"]:
        words.insert(index, {"data": 0, "bits": 0, "last": 0})
    else:
        words[index]["bits"] = 0
    return words


def fuzz_words(rng, count, lanes, table):
    """``count`` frames of random or real values, most of them corrupted one of several
    ways: values bits flipped or the values cut short (``sim.fuzz``'s ``flip_bits`` and
    ``cut_short`` on the values stream), escape bytes dropped, added or swapped for a table
    exponent (what only a two-stream frame can get wrong), a word made a fault on either
    stream (``sim.fuzz.bad_bits`` on the values, :func:`escape_fault` on the escapes).
    The escapes travel in full words, a beat's escapes a word (as the encoder sends
    them), or random whole bytes a word (:func:`regrouped`)."""
    width = default_word_width(lanes)
    real = real_bf16()
    value_words, escape_words = [], []
    for _ in range(count):
        size = int(rng.integers(0, 6 * lanes))
        if rng.random() < 0.5:
            start = int(rng.integers(0, real.size - size))
            values = real[start:start + size]
        else:
            values = rng.integers(0, 1 << 16, size, dtype=np.uint16)
        wire = wire_encode(values, table)
        kind = rng.integers(0, 7)
        if kind == 3 and wire.escapes_bits:               # drop escape bytes
            keep = int(rng.integers(0, wire.escapes_bits // 8))
            wire = wire._replace(escapes=wire.escapes[:keep], escapes_bits=8 * keep)
        elif kind == 4:                                   # extra escape bits
            extra = int(rng.integers(1, 17))
            wire = wire._replace(escapes=wire.escapes + bytes(rng.integers(0, 256, 3,
                                                                           dtype=np.uint8)),
                                 escapes_bits=wire.escapes_bits + extra)
        elif kind == 5 and wire.escapes_bits:             # a table exponent escaped
            raw = bytearray(wire.escapes)
            raw[int(rng.integers(0, len(raw)))] = table.exponents[int(rng.integers(0, 7))]
            wire = wire._replace(escapes=bytes(raw))
        values_words, escapes = _words(wire, width)
        grouping = rng.random()
        if grouping < 0.3 and kind in (0, 1, 2, 6):       # as the encoder sends them
            escapes = golden_escape_words(values, table, lanes=lanes, word_width=width)
        elif grouping < 0.6 and wire.escapes_bits % 8 == 0:
            escapes = regrouped(rng, wire.escapes, wire.escapes_bits, width)
        if kind == 1 and wire.values_bits:                # flip bits of the values
            values_words = flip_bits(rng, values_words, width)
        elif kind == 2 and wire.values_bits:              # cut the values short
            values_words = cut_short(rng, wire.values, wire.values_bits, width)
        elif kind == 6:                                   # a word fault on either stream
            if rng.random() < 0.5:
                values_words = bad_bits(rng, values_words, width, faults=1)
            else:
                escapes = escape_fault(rng, escapes, width)
        value_words += values_words
        escape_words += escapes
    return value_words, escape_words


#: Frames a differential fuzz run takes; ``LINKCODEC_FUZZ_FRAMES=10000 pytest
#: tests/test_rtl_exponent.py -k differential_fuzz`` runs a long one.
FUZZ_FRAMES = int(os.environ.get("LINKCODEC_FUZZ_FRAMES", "300"))


@pytest.mark.parametrize(("lanes", "pattern"), [
    pytest.param(lanes, pattern, marks=[pytest.mark.xdist_group(f"exponent-decoder-{lanes}")]
                 + [pytest.mark.slow] * (lanes > 4), id=f"{lanes}-{pattern}")
    for lanes, pattern in [(4, "random"), (8, "bursty")]])
def test_differential_fuzz(lanes, pattern, seed):
    """The exponent decoder's own differential fuzzer: ``sim/fuzz.py`` (and the contract's
    fuzz check) fuzzes decoders of one word stream whose tables decode words
    (``fuzzable`` blocks); this decoder takes two streams, values and escapes, that must
    agree, so its faults (escapes missing, extra or naming a table exponent, values cut
    against escapes) are made here, on ``wire_encode`` frames, and judged by
    ``wire_decode_words``. It reuses ``sim.fuzz``'s word mutations.

    Fuzzed frames (300, or ``LINKCODEC_FUZZ_FRAMES``): 0 mismatches, 0 hangs (a hang would
    leave beats missing). Between a sixth and five sixths of them end in error, so both
    valid and faulty frames are checked."""
    rng = np.random.default_rng(seed)
    table = table_from_histogram(real_bf16())
    value_words, escape_words = fuzz_words(rng, FUZZ_FRAMES, lanes, table)
    decoded = wire_decode_words(value_words, escape_words, default_word_width(lanes), table)
    errors = sum(error for _, error in decoded)
    print(f"{FUZZ_FRAMES} frames at lanes {lanes}, {errors} end in error (golden)")
    assert FUZZ_FRAMES / 6 < errors < FUZZ_FRAMES * 5 / 6
    result = run_decoder_words(lanes, value_words, escape_words, table, seed=seed,
                               pattern=pattern)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


# -- parameters ----------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [ExponentRemapEncoder, ExponentRemapDecoder])
def test_parameters_are_checked(cls):
    """What the contract's parameter check does not say: lanes 2 (a power of two, below
    the fewest the blocks take), a word too narrow for a beat's 11-bit codes, tables of
    the wrong type (named), a word width other than the default, parameters that cannot
    be set."""
    with pytest.raises(ValueError, match="lanes must be 4, 8 or 16, not 2"):
        cls(lanes=2)
    with pytest.raises(ValueError, match="word_width must be at least 11 \\* lanes = 88"):
        cls(lanes=8, word_width=64)
    with pytest.raises(TypeError, match="tables must be an ExponentTable, not tuple"):
        cls(tables=(1, 2, 3, 4, 5, 6, 7))
    block = cls(lanes=8, word_width=96, tables=escaping_table())
    assert (block.lanes, block.word_width, block.table) == (8, 96, escaping_table())
    assert block.table is block.tables
    with pytest.raises(AttributeError):
        block.lanes = 4
    Fragment.get(block, None)


def test_config_writes():
    """The 7 exponents into the idle bank, then the switch (address 7)."""
    table = escaping_table()
    assert config_writes(table) == [{"addr": index, "data": index + 1}
                                    for index in range(7)] + [switch_write()]
    assert switch_write() == {"addr": SWITCH_ADDR, "data": 0} and SWITCH_ADDR == 7
    assert config_writes(None, switch=False) == [
        {"addr": index, "data": exponent} for index, exponent in enumerate(DEFAULT_TABLE.exponents)]
    with pytest.raises(TypeError, match="table must be an ExponentTable"):
        config_writes("table")
