"""Stream driver and monitor for Amaranth ``stream.Signature`` ports under cocotb.

A port named ``i`` appears in the Verilog as ``i__valid``, ``i__ready`` and
``i__payload``. Both classes work one cycle at a time: they write just after the rising
edge and sample valid/ready in the read-only phase before the next one, so a transfer is
seen exactly when the hardware sees it.

Idle cycles (driver) and backpressure (monitor) follow a *pattern* (:data:`PATTERNS`,
:func:`pauses`) drawn from a seeded :class:`random.Random`, so a failing run replays
from its seed: a number is the chance of a pause in each cycle (``0.3``: random), or a
name: ``"none"``, ``"random"`` (0.3), ``"bursty"`` (runs of pauses and of go) or
``"hold"`` (paused for the first :data:`HOLD_CYCLES` cycles, then never). A *gate* holds a
given beat back until other ports have made so many transfers (:meth:`StreamDriver.gate`).

In a 4-state simulator (Icarus) every port also checks, each cycle, that ``valid`` and
``ready`` are 0 or 1, and that a transferred payload has no X or Z bit; each miss is kept
in :attr:`xz_events`. Under Verilator (2-state) the check never fires; it costs a read
of ready and a flag test or two a cycle, and nothing extra on a transfer.

A :class:`StreamMonitor` is also the protocol checker of the block's output: every cycle
it checks the stream rules that the block, as the source, must keep, and keeps each break
in :attr:`StreamMonitor.protocol_events`:

- once ``valid`` rises it holds until the transfer (``valid`` fell without a transfer);
- the payload holds while ``valid`` waits for ``ready`` (payload changed while stalled);
- a valid payload has no X or Z bit, transferred or not (4-state simulators only);
- no ``valid`` before the block has taken any input since reset (an output before any
  input), when the monitor is told which drivers feed the block (``after``).
"""

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

__all__ = ["HOLD_CYCLES", "PATTERNS", "PROTOCOL_RULES", "PortWatcher", "ProtocolMonitor",
           "StreamDriver", "StreamMonitor", "StreamWatcher", "check_pattern", "pause_share",
           "pauses"]

#: The named idle and backpressure patterns (a number is a random pattern of its own).
PATTERNS = ("none", "random", "bursty", "hold")
#: The chance of a pause in each cycle of the ``"random"`` pattern.
RANDOM_CHANCE = 0.3
#: How long the ``"hold"`` pattern pauses before it lets everything through.
HOLD_CYCLES = 300
#: ``"bursty"``: the chance, each cycle, of going from go to pause and from pause to go
#: (runs of 20 cycles of go and 6.7 of pause on average).
BURST_START, BURST_END = 0.05, 0.15


def check_pattern(pattern):
    """``pattern`` if it is a pause pattern: a name of :data:`PATTERNS` or a chance in
    [0, 1); anything else is refused."""
    if isinstance(pattern, str):
        if pattern not in PATTERNS:
            raise ValueError(f"unknown pause pattern {pattern!r}; expected a chance in "
                             f"[0, 1) or one of {', '.join(PATTERNS)}")
        return pattern
    if isinstance(pattern, bool) or not isinstance(pattern, (int, float)) \
            or not 0 <= pattern < 1:
        raise ValueError(f"a pause chance must be a number in [0, 1), not {pattern!r}")
    return float(pattern)


def pause_share(pattern):
    """``(share, extra)``: about what share of cycles ``pattern`` pauses, and the cycles
    it pauses besides (for a cycle limit that is generous but finite)."""
    pattern = check_pattern(pattern)
    if pattern == "none":
        return 0.0, 0
    if pattern == "random":
        return RANDOM_CHANCE, 0
    if pattern == "bursty":
        return BURST_START / (BURST_START + BURST_END), 0
    if pattern == "hold":
        return 0.0, HOLD_CYCLES
    return pattern, 0


def pauses(pattern, rng):
    """An endless iterator of booleans, one a cycle: whether ``pattern`` pauses then."""
    pattern = check_pattern(pattern)
    if pattern == "bursty":
        paused = False
        while True:
            paused = rng.random() < (1 - BURST_END if paused else BURST_START)
            yield paused
    if pattern == "hold":
        for _ in range(HOLD_CYCLES):
            yield True
        pattern = 0.0
    chance = {"none": 0.0, "random": RANDOM_CHANCE}.get(pattern, pattern)
    while True:
        yield rng.random() < chance

#: The stream rules a :class:`StreamMonitor` checks, by the name its events carry.
PROTOCOL_RULES = {
    "valid-fell": "valid fell without a transfer",
    "payload-changed": "payload changed while valid waited for ready",
    "payload-xz": "a valid payload had X or Z bits",
    "early-output": "valid rose before the block had taken any input since reset",
}


class _Port:
    """One stream port and the cycle loop its driver or monitor runs.

    Each cycle (its clock's :class:`_Ticker` calls both): :meth:`_drive` right after the
    rising edge, then, in the read-only phase, a transfer is seen when valid and ready are
    both high (:meth:`_took`).
    """

    def __init__(self, dut, name, clock, *, signals=None):
        if signals is None:
            signals = [getattr(dut, f"{name}__{part}") for part in ("valid", "ready",
                                                                    "payload")]
        self.valid, self.ready, self.payload = signals
        self.clock = clock
        self.name = name
        self._ticker = None       # the cycle loop running the port (None: stopped)
        self._cycle = 0
        self._since_time = None
        #: The number of the cycle before :meth:`start`'s first: ports started later than
        #: others count on from their clock (the testbench sets it).
        self.first_cycle = 0
        #: Cycle numbers (counted from :attr:`first_cycle`) of every transfer, in order.
        self.transfer_cycles = []
        #: Every X or Z seen on valid, ready or a transferred payload, as
        #: ``{"port", "cycle", "what"}``.
        self.xz_events = []
        self._gates = {}          # beat index: (after, wait), see gate()
        self._opened = {}         # beat index: the cycle its gate's transfers were all in

    def gate(self, index, after, wait=0):
        """Beat ``index`` (counted from 0: offered by a driver, taken by a monitor) waits
        until every port of ``after`` (``[(port, transfers)]``) has made at least that
        many transfers, and then ``wait`` cycles more. A test orders its ports against
        each other with gates: a config write after a frame's words are in, an output
        held until a write is made."""
        self._gates[index] = (list(after), int(wait))

    def _gated(self, index):
        """Whether beat ``index`` must still wait for its gate (:meth:`gate`)."""
        gate = self._gates.get(index)
        if gate is None:
            return False
        if index not in self._opened:
            after, _ = gate
            if any(len(port.transfer_cycles) < transfers for port, transfers in after):
                return True
            self._opened[index] = self._cycle
        return self._cycle - self._opened[index] < gate[1]

    def start(self):
        """Run the port from the next rising edge of its clock on (one cycle loop, a
        :class:`_Ticker`, serves every started port of a clock)."""
        if self._ticker is None:
            self._cycle = self.first_cycle
            self._ticker = _Ticker.of(self.clock)
            self._ticker.add(self)
        return self

    def stop(self):
        """Take the port off its clock: it drives and samples nothing more."""
        if self._ticker is not None:
            self._ticker.remove(self)
            self._ticker = None

    def _sample(self, cycle):
        """What the port does with a cycle's valid and ready (in the read-only phase)."""
        valid, ready = self.valid.value, self.ready.value
        if valid == 1 and ready == 1:
            self._took(cycle)
            self.transfer_cycles.append(cycle)
        elif not (valid.is_resolvable and ready.is_resolvable):
            # An X valid or ready is neither a transfer nor a quiet cycle: say so.
            for signal, value in (("valid", valid), ("ready", ready)):
                if not value.is_resolvable:
                    self._xz(cycle, f"{signal} is {value}")

    def _xz(self, cycle, what):
        self.xz_events.append({"port": self.name, "cycle": cycle, "what": what})


class _Ticker:
    """The cycle loop of every started port of one clock, in one coroutine.

    Each rising edge it calls every port's ``_drive``, then, in the read-only phase, its
    ``_sample``: two triggers a cycle however many ports run (a coroutine per port took
    two each, and the scheduler's work for them outweighed the Verilated model's). A port
    started at some simulation time runs from the first edge after it, as a coroutine
    started then would; a port stopped between an edge and its read-only phase is not
    sampled.
    """

    _by_clock = {}

    @classmethod
    def of(cls, clock):
        """The ticker of ``clock`` (a signal handle), made at its first use."""
        if clock not in cls._by_clock:
            cls._by_clock[clock] = cls(clock)
        return cls._by_clock[clock]

    def __init__(self, clock):
        self.clock = clock
        self.ports = []
        self._task = None

    def add(self, port):
        port._since_time = get_sim_time()
        self.ports.append(port)
        if self._task is None or self._task.done():
            self._task = cocotb.start_soon(self._run())

    def remove(self, port):
        self.ports.remove(port)

    async def _run(self):
        edge, sample = RisingEdge(self.clock), ReadOnly()
        while True:
            await edge
            now = get_sim_time()
            running = [port for port in self.ports if port._since_time < now]
            for port in running:
                port._cycle += 1
                port._drive()
            await sample
            for port in running:
                if port._ticker is self:
                    port._sample(port._cycle)


class StreamDriver(_Port):
    """Drives ``beats`` (payload integers) into a stream port.

    ``idle`` is the pattern (a chance or a name, see :func:`pauses`) by which the driver
    holds ``valid`` low for a cycle before a beat (0 for a stall-free source). Once
    ``valid`` rises the payload holds until the transfer, as the stream rules require.
    """

    def __init__(self, dut, name, clock, beats, *, idle=0.0, rng=None):
        super().__init__(dut, name, clock)
        self.beats = list(beats)
        self.idle = idle
        self.rng = rng or random.Random(0)
        self._pauses = pauses(idle, self.rng)
        self.sent = 0
        self._offered = False     # a beat is on the port, not yet taken
        self.valid.value = 0

    @property
    def done(self):
        return self.sent == len(self.beats)

    def _drive(self):
        # A beat on offer stays until it is taken; before each new beat the pattern
        # may pause (so idle cycles fall between beats, not only before the first).
        if self._offered:
            return
        if (self.sent < len(self.beats) and not self._gated(self.sent)
                and not next(self._pauses)):
            self.payload.value = self.beats[self.sent]
            self.valid.value = 1
            self._offered = True
        else:
            self.valid.value = 0

    def _sample(self, cycle):
        # valid is what _drive wrote: only ready is read (and checked for X or Z).
        ready = self.ready.value
        if ready == 1:
            if self._offered:
                self.sent += 1
                self._offered = False
                self.transfer_cycles.append(cycle)
        elif not ready.is_resolvable:
            self._xz(cycle, f"ready is {ready}")


class StreamMonitor(_Port):
    """Takes beats from a stream port, with random backpressure, and checks the stream
    rules on it (see the module's docstring).

    ``stall`` is the pattern (a chance or a name, see :func:`pauses`) by which ``ready``
    is low in a cycle (0 for a sink that never stalls). Every transfer's payload integer
    is appended to :attr:`beats`. ``after`` is the drivers whose transfers are the
    block's input: ``valid`` before the first of them since reset is an early output. A
    cycle with the DUT's ``rst`` high (``reset`` at ``reset_level``, if given) is a
    reset: it is not checked, and what came before it is forgotten.
    """

    #: Whether the monitor is the port's sink, driving its ``ready``.
    drives_ready = True

    def __init__(self, dut, name, clock, *, stall=0.0, rng=None, after=(), signals=None,
                 reset=None, reset_level=1):
        super().__init__(dut, name, clock, signals=signals)
        self.stall = stall
        self.rng = rng or random.Random(1)
        self._pauses = pauses(stall, self.rng)
        self.beats = []
        self.after = list(after)
        self.reset = getattr(dut, "rst", None) if reset is None else reset
        self.reset_level = reset_level
        #: Every break of the stream rules, as ``{"port", "cycle", "rule", "what"}``.
        self.protocol_events = []
        self._waiting = None      # the payload (as text) of a valid beat held back
        self._since = 0           # the first cycle after the last reset
        self._fed = not self.after
        if self.drives_ready:
            self.ready.value = 0

    def _drive(self):
        self.ready.value = int(not self._gated(len(self.beats)) and not next(self._pauses))

    def _broke(self, cycle, rule, detail=""):
        what = PROTOCOL_RULES[rule] + (f": {detail}" if detail else "")
        self.protocol_events.append({"port": self.name, "cycle": cycle, "rule": rule,
                                     "what": what})

    def _input_before(self, cycle):
        """Whether a driver in :attr:`after` made a transfer since the last reset and
        before ``cycle``."""
        for driver in self.after:
            for seen in reversed(driver.transfer_cycles):
                if seen < self._since:
                    break
                if seen < cycle:
                    return True
        return False

    def _sample(self, cycle):
        if self.reset is not None and self.reset.value == self.reset_level:
            self._waiting, self._since, self._fed = None, cycle + 1, not self.after
            return
        valid, ready = self.valid.value, self.ready.value
        if not (valid.is_resolvable and ready.is_resolvable):
            for signal, value in (("valid", valid), ("ready", ready)):
                if not value.is_resolvable:
                    self._xz(cycle, f"{signal} is {value}")
            return
        waiting, self._waiting = self._waiting, None
        if valid != 1:
            if waiting is not None:
                self._broke(cycle, "valid-fell")
            return
        if not self._fed:
            self._fed = True              # said once per reset
            if not self._input_before(cycle):
                self._broke(cycle, "early-output")
        payload = self.payload.value
        if waiting is not None and str(payload) != waiting:
            self._broke(cycle, "payload-changed", f"{waiting} then {payload}")
        if not payload.is_resolvable:
            bits = str(payload)
            unknown = sum(bit in "XZUW-" for bit in bits)
            self._broke(cycle, "payload-xz",
                        f"{unknown} X/Z of {len(bits)} bits (MSB first): {bits}")
        if ready == 1:
            self._took(cycle, payload)
            self.transfer_cycles.append(cycle)
        else:
            self._waiting = str(payload)

    def _took(self, cycle, payload):
        try:
            self.beats.append(payload.to_unsigned())
        except ValueError:
            # Keep the beat (X and Z read as 0) so later beats stay in step.
            bits = str(payload)
            unknown = sum(bit in "XZUW-" for bit in bits)
            self._xz(cycle, f"payload has {unknown} X/Z of {len(bits)} bits (MSB first): "
                            f"{bits}")
            self.beats.append(int(bits.translate(str.maketrans("XZUW-LH", "0000001")), 2))


class _Joined:
    """Several signals read as one payload (AXI's ``tdata``, ``tkeep``, ``tlast`` and
    ``tuser``): ``.value`` joins their values, the first signal's in the top bits."""

    def __init__(self, signals):
        self.signals = list(signals)

    @property
    def value(self):
        return _JoinedValue([signal.value for signal in self.signals])


class _JoinedValue:
    def __init__(self, values):
        self.values = values
        self.is_resolvable = all(value.is_resolvable for value in values)

    def __str__(self):
        return "".join(str(value) for value in self.values)

    def to_unsigned(self):
        return int(str(self), 2)


class PortWatcher(_Port):
    """Counts the transfers of a port that something else drives and takes (a library's
    source and sink), in :attr:`transfer_cycles`, so that a :class:`ProtocolMonitor`
    can tell whether the block had an input yet."""

    def _drive(self):
        pass

    def _took(self, cycle):
        pass


class StreamWatcher(PortWatcher):
    """Keeps the payload of every transfer of a stream that the design drives and takes
    itself (a link between two blocks inside the top module), in :attr:`beats`, without
    driving anything."""

    def __init__(self, dut, name, clock):
        super().__init__(dut, name, clock)
        self.beats = []

    def _took(self, cycle):
        self.beats.append(self.payload.value.to_unsigned())


class ProtocolMonitor(StreamMonitor):
    """The stream rules of :class:`StreamMonitor` on an output that something else takes
    (cocotbext-axi's sink under the AXI names): it never drives ``ready`` and keeps no
    beats. ``signals`` is ``(valid, ready, [payload signals])``; ``reset`` at
    ``reset_level`` is the block in reset (``aresetn`` low)."""

    drives_ready = False

    def __init__(self, dut, name, clock, *, signals, reset, reset_level, after=()):
        valid, ready, payload = signals
        super().__init__(dut, name, clock, after=after, reset=reset,
                         reset_level=reset_level, signals=(valid, ready, _Joined(payload)))

    def _drive(self):
        pass

    def _took(self, cycle, payload):
        pass
