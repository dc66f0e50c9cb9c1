"""Run any streaming block under Verilator (or Icarus), scored against the golden model.

Two levels:

- :func:`run_beats` runs a component on given beats: a ``dict`` of input beats per input
  stream port, the beats expected on each output stream port, and the config writes
  loaded before any traffic. Port names, directions and payload layouts come from the
  component's own signature; every stream port is driven or watched, so a beat on a port
  that should be quiet is caught. The build directory is keyed on a hash of the
  generated Verilog.
- :func:`run_frames` runs a block from its :class:`~linkcodec.rtl.blocks.description.BlockDescription`
  on frames of symbols: the description builds the block and turns each frame into its
  input and expected beats through the golden model. This is what ``linkcodec sim``,
  ``linkcodec bench`` and the tests call. It returns ``block``, ``lanes``,
  ``word_width``, ``symbols``, ``cycles``, ``symbols_per_cycle``, ``payload_bits``,
  ``compressibility``, ``bit_exact`` and one entry a frame in ``frames``.

Idle cycles on every input and backpressure on every output follow a pattern
(:func:`~linkcodec.sim.stream.pauses`: a chance a cycle, or ``"none"``, ``"random"``,
``"bursty"``, ``"hold"``) drawn from one seed, printed by the testbench, so a failure
replays.

Every output port is watched by a protocol monitor: a break of the stream rules (valid
falling without a transfer, the payload changing while stalled, X or Z in a valid
payload, an output before any input since reset) raises :class:`ProtocolError`.

``simulator="icarus"`` runs the same testbench under Icarus Verilog, a 4-state simulator:
an X or Z on a valid or ready, or in a payload that is transferred, raises
:class:`XZValueError`.
"""

import hashlib
import json
import pickle
import random
import tempfile
import weakref
from pathlib import Path

from amaranth.lib import stream, wiring

from ..rtl.payload import pack, unpack
from ..rtl.verilog import verilog_text
from . import runner
from ..rtl.blocks import get_block
from .stream import check_pattern, pause_share

__all__ = ["ProtocolError", "XZValueError", "compressibility", "first_mismatch",
           "payload_bits", "run_beats", "run_frames", "shared", "shared_build",
           "stream_ports"]


class XZValueError(RuntimeError):
    """A valid, a ready or a transferred payload was X or Z in 4-state simulation.

    :attr:`events` lists each one as the testbench saw it: ``port``, ``cycle`` (counted
    from the port's start, like its transfer cycles) and ``what``.
    """

    def __init__(self, message, events):
        super().__init__(message)
        self.events = events


class ProtocolError(AssertionError):
    """A block broke the stream rules on an output port (see
    :class:`~linkcodec.sim.stream.StreamMonitor`): valid fell without a transfer, the
    payload changed while stalled, a valid payload held X or Z, or an output came before
    any input since reset.

    :attr:`events` lists each break: ``port``, ``cycle``, ``rule`` (a key of
    :data:`~linkcodec.sim.stream.PROTOCOL_RULES`) and ``what``.
    """

    def __init__(self, message, events):
        super().__init__(message)
        self.events = events


def stream_ports(component):
    """``(inputs, outputs)``: ``dict`` from each stream port's name to its payload layout,
    in signature order, read from the component's signature."""
    inputs, outputs = {}, {}
    for name, member in component.signature.members.items():
        if member.is_port or not isinstance(member.signature, stream.Signature):
            continue
        side = inputs if member.flow == wiring.In else outputs
        side[name] = member.signature.members["payload"].shape
    return inputs, outputs


def _span(first_cycles, last_cycles):
    """Cycles from the first input transfer to the last output transfer, inclusive."""
    if not first_cycles or not last_cycles:
        return 0
    return max(last_cycles) - min(first_cycles) + 1


def _slices(counts, taken, cycles):
    """The transfer cycles of one frame's beats on each port (``counts`` beats a port),
    after the ``taken`` beats of earlier frames; ``taken`` is advanced."""
    slices = []
    for port, count in counts.items():
        start = taken.get(port, 0)
        taken[port] = start + count
        seen = cycles.get(port, [])[start:start + count]
        if seen:
            slices.append(seen)
    return slices


def run_beats(component, *, inputs, expected, config=None, idle=0.0, stall=0.0, seed=None,
              build_root=None, name="block", settle=8, simulator="verilator",
              before_reset=None, watch=None, gates=None):
    """Build ``component`` and run it on ``inputs``, scoring against ``expected``.

    ``inputs`` and ``expected`` map stream port names to beats (dicts of the port's
    payload layout); ``config`` maps config port names to writes, loaded one port after
    another before the traffic starts. A stream port left out carries no beats.

    Returns ``output`` and ``expected`` (beats per output port), ``bit_exact``,
    ``input_cycles`` and ``output_cycles`` (per port, the cycle of every transfer),
    ``cycles`` (first input transfer to last output transfer, inclusive), ``seed`` and
    ``build_dir``. After the input is sent and the expected beats are in, the testbench
    watches ``settle`` more cycles for anything extra.

    ``before_reset`` (``(beats, cycles)``: input beats per port, and a cycle count)
    resets the block in mid-stream: after the config is loaded, ``beats`` stream for
    ``cycles`` cycles from the block's first input transfer, then ``rst`` is held for two
    cycles, what the block gave is
    dropped (``dropped_at_reset`` counts it per output port), and only then do
    ``inputs`` stream and ``expected`` get scored. The config is not loaded again: the
    tables must outlive the reset.

    ``watch`` maps the names of streams inside the design to their payload layouts:
    signals ``NAME__valid``, ``NAME__ready`` and ``NAME__payload`` of the top module that
    the design drives and takes itself (``LinkPair``'s ``o`` is LinkTx's link side). The
    testbench only observes them; ``watched`` in the result holds each one's transferred
    payloads, unpacked.

    ``gates`` orders the stream ports against each other: ``{port: {index: (after,
    wait)}}`` holds beat ``index`` of ``port`` (an input's beat is not offered, an
    output's not taken) until every port of ``after`` (``{port: transfers}``, inputs
    streamed or outputs) has made that many transfers, and ``wait`` cycles more; the
    pause pattern applies after that. A config port loaded before the traffic has none.

    ``simulator`` is ``"verilator"`` or ``"icarus"``; each has its own build directory.
    An X or Z on a port that is read raises :class:`XZValueError`; a break of the
    stream rules on an output raises :class:`ProtocolError`.
    """
    config = dict(config or {})
    in_ports, out_ports = stream_ports(component)
    early, early_cycles = before_reset if before_reset is not None else ({}, 0)
    for port in [*inputs, *config, *early]:
        if port not in in_ports:
            raise ValueError(f"{name} has no input stream port {port!r}; it has "
                             f"{', '.join(in_ports) or 'none'}")
    for port in expected:
        if port not in out_ports:
            raise ValueError(f"{name} has no output stream port {port!r}; it has "
                             f"{', '.join(out_ports) or 'none'}")
    gates = _check_gates(gates, [port for port in in_ports if port not in config],
                         list(out_ports), name)
    idle, stall = check_pattern(idle), check_pattern(stall)
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 31)

    text = verilog_text(component, name="top")
    build_root = Path(build_root or runner.BUILD_ROOT)
    # One build per Verilog text, whatever the caller names it: two tests that build the
    # same block under two names share one model (``names`` in the folder lists them).
    build_dir = build_root / f"top-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    if simulator != "verilator":
        build_dir = build_dir.with_name(f"{build_dir.name}-{simulator}")
    with runner.build_lock(build_dir):
        _note_name(build_dir, name)
        return _build_and_run(text, build_dir, name=name, simulator=simulator,
                              in_ports=in_ports, out_ports=out_ports, inputs=inputs,
                              expected=expected, config=config, idle=idle, stall=stall,
                              seed=seed, settle=settle, early=early,
                              early_cycles=early_cycles, watch=dict(watch or {}),
                              gates=gates)


def _note_name(build_dir, name):
    """Add ``name`` to the names of the model in ``build_dir`` (for a reader of ``build/``)."""
    names = build_dir / "names"
    known = names.read_text().split() if names.exists() else []
    if name not in known:
        names.write_text("".join(f"{known_name}\n" for known_name in [*known, name]))


def _check_gates(gates, streams, outputs, name):
    """``gates`` (see :func:`run_beats`) as the testbench takes them: a list of
    ``{"port", "index", "after", "wait"}``; a port that is not streamed is refused."""
    checked = []
    for port, beats in (gates or {}).items():
        for index, (after, wait) in beats.items():
            for named in [port, *after]:
                if named not in streams and named not in outputs:
                    raise ValueError(f"a gate names {named!r}, which {name} does not "
                                     f"stream; it streams {', '.join(streams + outputs)}")
            checked.append({"port": port, "index": int(index), "wait": int(wait),
                            "after": {other: int(count) for other, count in after.items()}})
    return checked


def _build_and_run(text, build_dir, *, name, simulator, in_ports, out_ports,
                   inputs, expected, config, idle, stall, seed, settle, early, early_cycles,
                   watch, gates):
    """:func:`run_beats` once the build folder is this process's alone."""
    sim = runner.build(text, name="top", build_dir=build_dir, simulator=simulator)

    def packed(port, beats):
        layout = in_ports.get(port) or out_ports[port]
        return [pack(layout, beat) for beat in beats]

    streams = [port for port in in_ports if port not in config]
    case = {
        "seed": seed,
        "settle": settle,
        "config": [{"port": port, "beats": packed(port, writes)}
                   for port, writes in config.items()],
        "inputs": [{"port": port, "beats": packed(port, inputs.get(port, ())), "idle": idle}
                   for port in streams],
        "outputs": [{"port": port, "expected": packed(port, expected.get(port, ())),
                     "stall": stall} for port in out_ports],
        "watch": list(watch),
        "gates": gates,
    }
    if early:
        case["before_reset"] = {"cycles": int(early_cycles), "inputs": [
            {"port": port, "beats": packed(port, beats), "idle": idle}
            for port, beats in early.items()]}
    # Generous but finite: every beat may wait out idle and stall cycles.
    (idle_share, idle_extra), (stall_share, stall_extra) = pause_share(idle), pause_share(stall)
    slack = 1.0 / max(1e-3, (1 - idle_share) * (1 - stall_share))
    count = sum(len(port["beats"]) for port in case["inputs"]) + sum(
        len(port["expected"]) for port in case["outputs"])
    case["cycle_limit"] = (int(count * 4 * slack) + 2000 + idle_extra + stall_extra
                           + sum(gate["wait"] for gate in gates))
    with tempfile.TemporaryDirectory(prefix="linkcodec-") as scratch:
        case_path = Path(scratch) / "case.json"
        result_path = Path(scratch) / "result.json"
        case_path.write_text(json.dumps(case))
        runner.run_testbench(sim, name="top", build_dir=build_dir,
                             test_module="linkcodec.sim.stream_tb",
                             extra_env={"LINKCODEC_CASE": str(case_path),
                                        "LINKCODEC_RESULT": str(result_path)},
                             seed=seed)
        if not result_path.exists():
            raise RuntimeError(f"the testbench wrote no result; see {build_dir / 'test.log'}")
        result = json.loads(result_path.read_text())
    for key, error, what in (("xz_events", XZValueError, "X/Z values on ports that are read"),
                             ("protocol_events", ProtocolError, "breaks of the stream rules")):
        events = result.get(key, [])
        if events:
            shown = "; ".join(f"{event['port']} cycle {event['cycle']}: {event['what']}"
                              for event in events[:5])
            raise error(f"{name} under {simulator}, seed {seed}: {len(events)} {what}; "
                        f"first: {shown}; see {build_dir / 'test.log'}", events)

    output = {port: [unpack(out_ports[port], beat) for beat in result["output"][port]]
              for port in out_ports}
    want = {port: list(expected.get(port, ())) for port in out_ports}
    input_cycles, output_cycles = result["input_cycles"], result["output_cycles"]
    return {
        "output": output,
        "expected": want,
        "bit_exact": all(result["output"][port["port"]] == port["expected"]
                         for port in case["outputs"]),
        "input_cycles": input_cycles,
        "output_cycles": output_cycles,
        "cycles": _span([cycles[0] for cycles in input_cycles.values() if cycles],
                        [cycles[-1] for cycles in output_cycles.values() if cycles]),
        "watched": {stream: [unpack(layout, beat) for beat in result["watched"][stream]]
                    for stream, layout in watch.items()},
        "dropped_at_reset": result.get("dropped_at_reset", {}),
        "taken_before_reset": result.get("taken_before_reset", {}),
        "seed": seed,
        "build_dir": str(build_dir),
    }


def first_mismatch(result):
    """Where a :func:`run_beats` or :func:`run_frames` result first departs from what was
    expected, in words: the port, the beat and both values, or a beat count."""
    for port, beats in result["output"].items():
        expected = result["expected"][port]
        for index, (got, want) in enumerate(zip(beats, expected)):
            if got != want:
                return f"{port}: first mismatch at beat {index}: got {got}, expected {want}"
        if len(beats) != len(expected):
            return f"{port}: got {len(beats)} beats, expected {len(expected)}"
    return "no mismatch"


def payload_bits(beats):
    """The bits of coded frames in ``beats`` (``{port: beats}``): the sum of ``bits`` over
    every beat that has it (coded words, as the words carry them)."""
    return sum(int(beat["bits"]) for port_beats in beats.values() for beat in port_beats
               if "bits" in beat)


def compressibility(bits, symbols, value_bits):
    """``1 - bits / (symbols x value_bits)``: the share of the raw bits a code saved
    (0.0 for no symbols)."""
    return round(1 - bits / (symbols * value_bits), 6) if symbols else 0.0


#: The components :func:`run_frames` built, per block description: a run of the same
#: description with the same lanes, word width and elaborated tables takes the same
#: object, so its Verilog is converted once a process (:func:`~linkcodec.rtl.verilog.verilog_text`;
#: the conversion was half the time of a test that reuses a build).
_BUILT = weakref.WeakKeyDictionary()


def shared(owner, make, **params):
    """``make(**params)``, or the object an earlier call with the same ``owner`` (a weak
    key: a block's description, a class) and parameters made, so that a component's
    Verilog is converted once a process (tables, any parameter named ``tables``, compared
    by their pickled bytes; what does not pickle or hash is made every time). For runs
    only: a component to be changed (a planted bug) is made afresh."""
    try:
        key = tuple(sorted((name, hashlib.sha256(pickle.dumps(value)).digest()
                            if name == "tables" else value)
                           for name, value in params.items()))
        hash(key)
        kept = _BUILT.setdefault(owner, {})
    except (TypeError, AttributeError, pickle.PicklingError):
        return make(**params)
    if key not in kept:
        kept[key] = make(**params)
    return kept[key]


def shared_build(block, *, lanes, word_width, tables):
    """``block.build(...)``, or the object an earlier call with the same arguments made
    (:func:`shared`)."""
    return shared(block, block.build, lanes=lanes, word_width=word_width, tables=tables)


def run_frames(block, frames, *, lanes, word_width=None, tables=None, runtime_config=True,
               idle=0.0, stall=0.0, seed=None, build_root=None, simulator="verilator",
               before_reset=None):
    """Run ``block`` (a description or its name) on ``frames``, one frame after another.

    ``tables`` (default: the block's own default) are what the golden model codes with.
    With ``runtime_config`` the block is built with its default tables and ``tables`` are
    loaded through its config port(s) before the frames; otherwise ``tables`` are set at
    elaboration. ``simulator`` is as for :func:`run_beats`. ``before_reset``
    (``(frames, cycles)``) streams other frames for ``cycles`` cycles and resets the
    block in mid-stream before ``frames`` (:func:`run_beats`).

    ``payload_bits`` (in all and a frame) counts the bits of the coded words: those the
    block gives if it gives words, else those it takes (:func:`payload_bits`);
    ``compressibility`` is ``1 - payload_bits / (symbols x value bits)``.
    """
    if isinstance(block, str):
        block = get_block(block)
    block.check_lanes(lanes)
    if word_width is None:
        word_width = block.default_word_width(lanes)
    tables = block.default_tables() if tables is None else tables
    frames = [block.prepare(frame) for frame in frames]
    loaded = runtime_config and bool(block.config_ports)
    component = shared_build(block, lanes=lanes, word_width=word_width,
                       tables=None if loaded else tables)

    inputs, expected, per_frame = {}, {}, []
    for frame in frames:
        frame_in, frame_out = block.frame_io(frame, lanes=lanes, word_width=word_width,
                                             tables=tables)
        coded = payload_bits(frame_out) or payload_bits(frame_in)
        per_frame.append(({port: len(beats) for port, beats in frame_in.items()},
                          {port: len(beats) for port, beats in frame_out.items()}, coded))
        for port, beats in frame_in.items():
            inputs.setdefault(port, []).extend(beats)
        for port, beats in frame_out.items():
            expected.setdefault(port, []).extend(beats)

    early = None
    if before_reset is not None:
        early_frames, early_cycles = before_reset
        early = {}
        for frame in early_frames:
            frame_in, _ = block.frame_io(block.prepare(frame), lanes=lanes,
                                         word_width=word_width, tables=tables)
            for port, beats in frame_in.items():
                early.setdefault(port, []).extend(beats)
        early = (early, early_cycles)
    result = run_beats(component, inputs=inputs, expected=expected,
                       config=block.config_writes(tables) if loaded else None,
                       idle=idle, stall=stall, seed=seed, build_root=build_root,
                       name=block.module_name(lanes=lanes, word_width=word_width),
                       simulator=simulator, before_reset=early)

    result["frames"] = []
    taken_in, taken_out = {}, {}
    for frame, (counts_in, counts_out, coded) in zip(frames, per_frame):
        firsts = [seen[0] for seen in _slices(counts_in, taken_in, result["input_cycles"])]
        lasts = [seen[-1] for seen in _slices(counts_out, taken_out, result["output_cycles"])]
        span = _span(firsts, lasts)
        result["frames"].append({
            "symbols": int(frame.size),
            "cycles": span,
            "symbols_per_cycle": round(frame.size / span, 4) if span else 0.0,
            "payload_bits": coded,
            "compressibility": compressibility(coded, frame.size, block.value_bits),
        })
    symbols = int(sum(frame.size for frame in frames))
    coded = sum(frame[2] for frame in per_frame)
    result.update({
        "block": block.name,
        "lanes": lanes,
        "word_width": word_width,
        "symbols": symbols,
        "symbols_per_cycle": symbols / result["cycles"] if result["cycles"] else 0.0,
        "payload_bits": coded,
        "compressibility": compressibility(coded, symbols, block.value_bits),
    })
    return result
