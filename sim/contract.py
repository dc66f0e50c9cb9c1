"""The contract every block of the registry keeps, checked the same way for each.

``tests/test_contract.py`` runs these checks over every block of
:data:`~linkcodec.rtl.blocks.BLOCKS` (and every pair of an encoder driving its decoder,
:func:`~linkcodec.sim.pair.pairs`), every lane count the block takes, crossed with the
pause patterns of :data:`CONTRACT_PATTERNS`; ``linkcodec bench --contract`` runs the
lane counts too large for ``make test`` (:data:`LARGE_LANES` and up). A block defined anywhere else joins by
:func:`~linkcodec.rtl.blocks.register` and is checked the same way. Each check raises
:class:`ContractError` (an ``AssertionError``) naming the block, the lanes and the seed.

- :func:`check_round_trip`: frames at the corners (every value, uniform, zero-heavy,
  empty, one symbol, a partial last beat, real data when given) through the block with
  run-time tables (:meth:`~linkcodec.rtl.blocks.description.BlockDescription.example_tables`),
  bit-exact against the golden model, under a pause pattern on every port; the protocol
  monitor watches every output (:class:`~linkcodec.sim.harness.ProtocolError`);
- :func:`check_latency`: the first input transfer to the first output transfer on every
  output port, no stalls, is the component's ``latency`` property;
- :func:`check_throughput`: symbols per cycle with no stalls, on given frames, at least
  the floor the block declares (``min_symbols_per_lane`` x lanes);
- :func:`check_parameters`: lane counts the block does not take (the nearest on each
  side), a word width that is not a multiple of 8 or is narrower than the block's
  narrowest, and tables of the wrong kind are refused at construction, and the block's
  own defaults and narrowest words build;
- :func:`check_count_clamp`: a symbol beat whose ``count`` is more than the lanes (the
  first such value, and the largest the field holds) is taken as ``lanes`` symbols, for
  every block that takes symbol beats;
- :func:`check_bad_words`: differential fuzzing (:mod:`linkcodec.sim.fuzz`) of the blocks
  that can be fuzzed;
- :func:`check_reset_mid_stream`: reset in the middle of traffic, with no table loaded
  again afterwards: the next frames come out bit-exact (tables keep what was loaded);
- :func:`check_ready_independence`: where a block promises it (``ready_independent``),
  its inputs' ``ready`` reads the same with its outputs' ``ready`` low and high, every
  cycle, in Amaranth's own simulator.
"""

import numpy as np
from amaranth.hdl import Fragment

from ..rtl.blocks.beats import symbol_beats
from .harness import first_mismatch, run_beats, run_frames, shared_build, stream_ports
from .stream import PATTERNS

__all__ = [
    "CONTRACT_PATTERNS",
    "LARGE_LANES",
    "ContractError",
    "check_bad_words",
    "check_count_clamp",
    "check_latency",
    "check_parameters",
    "check_ready_independence",
    "check_reset_mid_stream",
    "check_round_trip",
    "check_throughput",
    "contract_frames",
]

#: The idle and backpressure patterns every block is checked under.
CONTRACT_PATTERNS = PATTERNS
#: Lane counts from this up are the contract's slow part: their models take minutes to
#: build, so ``make test`` leaves them to ``linkcodec bench --contract`` (pytest's
#: ``slow`` marker).
LARGE_LANES = 16


class ContractError(AssertionError):
    """A block broke its contract; the message names the block, lanes, and seed."""


def _fail(block, lanes, seed, what):
    raise ContractError(f"{block.name} at lanes {lanes}"
                        + (f", seed {seed}" if seed is not None else "") + f": {what}")


def contract_frames(block, lanes, *, real=(), seed=0):
    """Frames at the corners for ``block`` (of its symbol type): every 8-bit value (a
    spread over every exponent for 16-bit values), uniform and zero-heavy random ones, an
    empty frame, one symbol, a partial last beat, then ``real`` frames as they are."""
    rng = np.random.default_rng([seed, lanes])
    dtype = np.dtype(block.symbol_dtype)
    top = np.iinfo(dtype).max
    if block.value_bits == 8:
        every = np.arange(256)
        heavy = np.clip(np.abs(rng.normal(0, 6, 500)), 0, 255)
    else:
        every = np.arange(0, top + 1, 97)
        # bf16 patterns of normal values: a handful of exponents, as real tensors have.
        import ml_dtypes
        heavy = rng.normal(0, 1, 500).astype(ml_dtypes.bfloat16).view(np.uint16)
    frames = [every, rng.integers(0, top + 1, 400), heavy, np.zeros(0),
              np.array([top]), rng.integers(0, top + 1, lanes + 1)]
    return [np.asarray(frame).astype(dtype) for frame in frames] + [
        block.prepare(frame) for frame in real]


def check_round_trip(block, lanes, *, pattern, seed, real=(), tables=None, word_width=None):
    """``block`` on :func:`contract_frames` with ``tables`` (default: its example
    tables) loaded at run time, idle and stalls by ``pattern``, at ``word_width``
    (default: the block's): bit-exact."""
    tables = block.example_tables() if tables is None else tables
    result = run_frames(block, contract_frames(block, lanes, real=real, seed=seed),
                        lanes=lanes, tables=tables, idle=pattern, stall=pattern, seed=seed,
                        word_width=word_width)
    if not result["bit_exact"]:
        _fail(block, lanes, seed, f"pattern {pattern}: {first_mismatch(result)}")
    return result


def check_latency(block, lanes):
    """The first input transfer to the first output transfer of every output port, with
    no stalls, on the block's :meth:`latency_frame`, is the ``latency`` property."""
    frame = block.latency_frame(lanes)
    result = run_frames(block, [frame, np.zeros(0, block.symbol_dtype)], lanes=lanes, seed=1)
    if not result["bit_exact"]:
        _fail(block, lanes, 1, f"latency run: {first_mismatch(result)}")
    component = block.build(lanes=lanes)
    Fragment.get(component, None)
    first_in = min(cycles[0] for cycles in result["input_cycles"].values() if cycles)
    seen = {port: cycles[0] - first_in for port, cycles in result["output_cycles"].items()
            if cycles}
    wrong = {port: cycles for port, cycles in seen.items() if cycles != component.latency}
    if not seen or wrong:
        _fail(block, lanes, 1, f"latency {component.latency} by its property, but "
                               f"{seen or 'no output'} measured")
    return component.latency


def check_throughput(block, lanes, frames, *, tables=None):
    """With no stalls, ``frames`` (default tables: fitted to them) go through at least
    ``block.min_symbols_per_lane x lanes`` symbols a cycle. Returns the figure."""
    frames = [block.prepare(frame) for frame in frames]
    tables = block.fitted_tables(frames) if tables is None else tables
    result = run_frames(block, frames, lanes=lanes, tables=tables, seed=1)
    if not result["bit_exact"]:
        _fail(block, lanes, 1, f"throughput run: {first_mismatch(result)}")
    floor = block.min_symbols_per_lane * lanes
    if result["symbols_per_cycle"] < floor:
        _fail(block, lanes, 1, f"{result['symbols_per_cycle']:.4f} symbols a cycle, below "
                               f"the {floor:g} the block declares")
    return result["symbols_per_cycle"]


def _refused(block, error, **parameters):
    try:
        component = block.build(**parameters)
    except error:
        return
    Fragment.get(component, None)
    raise ContractError(f"{block.name} built with {parameters}; it should refuse them "
                        f"with {error.__name__}")


def check_parameters(block):
    """Lane counts next to the ones the block takes, a word width that is not a multiple
    of 8 and tables of the wrong kind are refused at construction; the fewest and the
    most lanes build with their default word widths."""
    allowed = sorted(block.lanes)
    for lanes in {allowed[0] // 2, allowed[0] - 1, allowed[0] + 1, allowed[-1] * 2, 3,
                  0} - set(allowed):
        _refused(block, ValueError, lanes=lanes)
    default = block.default_word_width(allowed[0])
    if default is not None:
        _refused(block, ValueError, lanes=allowed[0], word_width=default + 4)
        _refused(block, ValueError, lanes=allowed[0], word_width=0)
        for lanes in allowed:                 # the narrowest word builds; 8 bits less not
            narrowest = block.min_word_width(lanes)
            if narrowest > 8:
                _refused(block, ValueError, lanes=lanes, word_width=narrowest - 8)
            Fragment.get(block.build(lanes=lanes, word_width=narrowest), None)
    if block.default_tables() is not None:
        _refused(block, TypeError, lanes=allowed[0], tables="the default")
    for lanes in (allowed[0], allowed[-1]):
        component = block.build(lanes=lanes)
        Fragment.get(component, None)
        if component.lanes != lanes or (
                default is not None and component.word_width != block.default_word_width(lanes)):
            _fail(block, lanes, None, "the block does not report the lanes and word width "
                                      "it was built with")


def check_count_clamp(block, lanes, *, pattern, seed):
    """Full beats of a frame sent with ``count`` = lanes + 1 and with the largest count
    the field holds: the block takes them as ``lanes`` symbols (the frame is coded as
    if their count were right). Blocks that take no symbol beats, or whose count field
    cannot exceed the lanes (lanes 1), have nothing to check: returns False."""
    component = shared_build(block, lanes=lanes, word_width=block.default_word_width(lanes),
                             tables=None)
    inputs_layout, _ = stream_ports(component)
    layout = inputs_layout.get("i")
    if layout is None or "count" not in dict(layout):
        Fragment.get(component, None)
        return False
    largest = (1 << layout["count"].shape.width) - 1
    if largest <= lanes:
        Fragment.get(component, None)
        return False
    rng = np.random.default_rng([seed, lanes])
    top = np.iinfo(np.dtype(block.symbol_dtype)).max
    frame = rng.integers(0, top + 1, 6 * lanes + 1).astype(block.symbol_dtype)
    tables = block.example_tables()
    word_width = block.default_word_width(lanes)
    inputs, expected = block.frame_io(frame, lanes=lanes, word_width=word_width,
                                      tables=tables)
    beats = [dict(beat) for beat in inputs["i"]]
    if beats != symbol_beats([frame], lanes):
        raise ContractError(f"{block.name}: its input 'i' is not the frame's symbol beats")
    beats[1]["count"], beats[3]["count"] = lanes + 1, largest
    result = run_beats(component, inputs={**inputs, "i": beats}, expected=expected,
                       config=block.config_writes(tables), idle=pattern, stall=pattern,
                       seed=seed, name=block.module_name(lanes=lanes, word_width=word_width))
    if not result["bit_exact"]:
        _fail(block, lanes, seed, f"counts {lanes + 1} and {largest} not taken as "
                                  f"{lanes}: {first_mismatch(result)}")
    return True


def check_bad_words(block, lanes, *, pattern, seed, frames=60):
    """Differential fuzzing of a block that can be fuzzed: random words, flipped bits,
    frames cut short, bad ``bits`` counts, against the golden model. Returns the report
    (None for a block that cannot be fuzzed)."""
    if not block.fuzzable:
        return None
    from .fuzz import run_fuzz

    report = run_fuzz(frames, lanes=lanes, code=block.example_tables(), seed=seed,
                      idle=pattern, stall=pattern, block=block.name)
    if report["mismatches"] or report["hangs"]:
        _fail(block, lanes, seed, f"pattern {pattern}: {report['mismatches']} mismatches, "
                                  f"{report['hangs']} hangs in {report['frames']} fuzzed "
                                  f"frames (frames {report['mismatched_frames'][:5]})")
    return report


def check_reset_mid_stream(block, lanes, *, pattern, seed, cycles=None):
    """Load the example tables, stream frames, reset the block ``cycles`` cycles in
    (default: a random point in the first few hundred) without loading any table again,
    then stream more frames: bit-exact under the loaded tables, so reset kept them."""
    rng = np.random.default_rng([seed, lanes, 1])
    frames = contract_frames(block, lanes, seed=seed)
    before = [frames[1], frames[0]]
    cycles = int(rng.integers(20, 300)) if cycles is None else cycles
    result = run_frames(block, frames, lanes=lanes, tables=block.example_tables(),
                        idle=pattern, stall=pattern, seed=seed, before_reset=(before, cycles))
    if not result["bit_exact"]:
        _fail(block, lanes, seed, f"after a reset at cycle {cycles} (pattern {pattern}): "
                                  f"{first_mismatch(result)}")
    return result


def check_ready_independence(block, lanes, *, seed, cycles=240):
    """In Amaranth's simulator, with the block's own golden input beats offered on every
    input port and the outputs stalled in long runs: in every cycle each input port's
    ``ready`` reads the same with every output ``ready`` low and high. Returns how many
    cycles an input was held back (so a caller can see backpressure reached the input)."""
    import random

    from amaranth.sim import Simulator

    from ..rtl.payload import pack

    rng = random.Random(seed)
    top = np.iinfo(np.dtype(block.symbol_dtype)).max
    frames = [np.random.default_rng(seed).integers(0, top + 1, 40 * lanes)
              .astype(block.symbol_dtype) for _ in range(4)]
    tables = block.example_tables()
    word_width = block.default_word_width(lanes)
    component = block.build(lanes=lanes, tables=tables)
    in_layouts, out_layouts = stream_ports(component)
    beats = {port: [] for port in in_layouts if port not in block.config_ports}
    for frame in frames:
        inputs, _ = block.frame_io(frame, lanes=lanes, word_width=word_width, tables=tables)
        for port, port_beats in inputs.items():
            beats[port] += [pack(in_layouts[port], beat) for beat in port_beats]
    seen = {"held": 0, "broken": None}

    async def bench(ctx):
        sent = {port: 0 for port in beats}
        for cycle in range(cycles):
            for port, port_beats in beats.items():
                stream_port = getattr(component, port)
                more = sent[port] < len(port_beats)
                ctx.set(stream_port.valid, int(more))
                if more:
                    ctx.set(stream_port.payload.as_value(), port_beats[sent[port]])
            readies = []
            for level in (0, 1):
                for port in out_layouts:
                    ctx.set(getattr(component, port).ready, level)
                readies.append([ctx.get(getattr(component, port).ready) for port in beats])
            if readies[0] != readies[1] and seen["broken"] is None:
                seen["broken"] = cycle
            taking = cycle % 100 >= 60 or rng.random() < 0.3
            for port in out_layouts:
                ctx.set(getattr(component, port).ready, int(taking))
            for port in beats:
                stream_port = getattr(component, port)
                if ctx.get(stream_port.valid) and ctx.get(stream_port.ready):
                    sent[port] += 1
                elif ctx.get(stream_port.valid):
                    seen["held"] += 1
            await ctx.tick()

    simulator = Simulator(component)
    simulator.add_clock(1e-8)
    simulator.add_testbench(bench)
    simulator.run()
    if seen["broken"] is not None:
        _fail(block, lanes, seed, f"an input's ready changed with the outputs' ready in "
                                  f"cycle {seen['broken']}")
    return seen["held"]
