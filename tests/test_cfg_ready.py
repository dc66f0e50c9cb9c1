"""Every promise of a decoder's ``i_config.ready`` (``cfg_ready`` through AXI4-Stream):
the next table's writes never reach a bank whose frames are still inside the decoder.

Every decoder holds its tables in two banks, writes go to the idle one, and a switch
takes effect at a frame boundary. Each promises (its docstring; ``docs/qlc.md``,
``huffman.md``, ``exponent.md``, ``axi.md``) that ``ready`` is low while a switch is
pending and while work of the bank that became idle is still where that bank's tables
are read, which differs by decoder:

- QLC: a word or group before the symbol table's read; the beat waiting in ``o`` has
  read it, so a write may go while the bank's last beat waits there;
- Huffman, e4m3 and bf16 values: a frame of that bank anywhere in the block, ``o``
  included;
- exponent remap: a beat in its escapes stage, the one whose register the table is read
  from; its exponents stage and ``o`` have read it, so a write may go while the bank's
  last two beats wait there. The decoder picks a frame's bank at that stage, not at
  its input, so the frames of a bank are only those that stage has begun.

In the QLC and Huffman decoders a frame's work ends with the loop's end-of-frame group
(``done``), which trails its last beat by a stage or two and gives no beat: writes wait
for it too, so they go a cycle or two after the frame's last beat has left (the QLC
decoder's ``i_config.ready`` is a register, a cycle more).
:data:`WRITE_TAKEN` holds these counts. The Huffman decoders also hold writes while the
working bank's length tables are being derived from its limits (a write to the other
bank's limits would restart that sweep there).

Under Verilator, on the contract suite's builds, with random idle and backpressure (the
seed is printed; :func:`~linkcodec.sim.harness.run_beats`'s gates order the ports):

- for every decoder, frames F of bank A (bank 0, the reset tables) go in with the
  output held, so they stay inside; table B loads into bank 1 and its switch goes in
  once F's words are all in (and :data:`SETTLE` cycles more); A's next table is offered
  at once, its writes that set every code's length first, while the output stays held
  :data:`HOLD` cycles more; frames G of B follow B's switch; once F and G are out, A's
  switch, and frames H of A's new table. Every frame decodes bit-exact with its own
  table (F with A's old one), and A's first write is held until F's last beat has
  passed A's reads and taken once F's work has left;
- for the Huffman decoders, B's limits written last, just before its switch: A's next
  table and the frames of B wait for the sweep, and go together once it is done.
"""

import numpy as np
import pytest

from cases import bf16_steps, block_case

from linkcodec.bundled import bundled_files
from linkcodec.rtl.huffman import LENGTH_BASE, MAX_CODE_LENGTH, split_length_base
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.harness import first_mismatch, run_beats, shared_build

#: ``(waiting, after)`` for each decoder (the module docstring): a write into a bank is
#: taken no earlier than when the bank's last frame has ``waiting`` beats left in the
#: decoder, all past the bank's reads, and no later than ``after`` cycles after that
#: frame's last beat has left.
WRITE_TAKEN = {"qlc-decoder": (1, 3), "huffman-decoder": (0, 2),
               "huffman-decoder-bf16": (0, 2), "exponent-decoder": (2, 1)}
#: Cycles the output stays held after the switch to B, with A's first write offered:
#: more than the 273 that a Huffman decoder may take after B's last limit write (before
#: its switch) to derive B's length tables, while which it holds writes too (tested
#: below), so that when F leaves, only F holds them.
HOLD = 280
#: Cycles after F's last word before the switch to B is offered: time for F's first
#: beat to reach the stage where the decoder picks its bank (the exponent decoder's
#: escapes stage; the others pick it as a frame's first word leaves their queue, which
#: marks the switch).
SETTLE = 16


def e4m3_symbols(layer):
    """A bundled e4m3 tensor (FFN2 activations) of ``layer``, flat."""
    return np.load(bundled_files("ffn2_act", layers=[layer])[0]).reshape(-1)


def scenario(description, lanes):
    """``(tables, frames)``: tables A (the reset ones), B and A's next one, pairwise
    different; frames F, G and H (lists of frames) for them, of real values. F is a
    short frame and one of 5 beats; for the exponent decoder one frame of 3 beats (its
    escapes stage has begun one frame when the switch goes in: see the module
    docstring)."""
    if description.value_bits == 8:
        values, fitted = e4m3_symbols(3), [e4m3_symbols(0)]
    else:
        steps = bf16_steps("ffn1_act")     # exponents near 1.0: most are in the tables
        values, fitted = steps[3], steps[:3]
    tables = (description.default_tables(), description.fitted_tables(fitted),
              description.example_tables())
    taken = [1000]

    def frames(*beats):
        """Frames of ``beats`` beats each, the values after those taken before."""
        cut = []
        for count in beats:
            cut.append(values[taken[0]:taken[0] + count * lanes])
            taken[0] += count * lanes
        return cut

    first = frames(3) if description.name == "exponent-decoder" else frames(1, 5)
    return tables, (first, frames(3, 4), frames(5, 2))


def coded(description, frames, lanes, tables):
    """``(inputs, expected)`` of ``frames`` under ``tables``, as the golden model codes
    and decodes them."""
    inputs, expected = {}, {}
    for frame in frames:
        frame_in, frame_out = description.frame_io(
            frame, lanes=lanes, word_width=description.default_word_width(lanes),
            tables=tables)
        for port, beats in frame_in.items():
            inputs.setdefault(port, []).extend(beats)
        for port, beats in frame_out.items():
            expected.setdefault(port, []).extend(beats)
    return inputs, expected


@pytest.mark.parametrize(("block", "lanes"), [block_case("qlc-decoder", 1),
                                              block_case("huffman-decoder", 1),
                                              block_case("huffman-decoder-bf16", 1),
                                              block_case("exponent-decoder", 4)])
def test_writes_wait_while_frames_of_their_bank_are_inside(block, lanes, seed):
    """Frames F of bank A held inside, the switch to B, A's next table offered at once:
    F decodes with A's old table, the writes wait until F has passed A's reads and go
    once it has left, and the frames after A's switch decode with its new table."""
    description = get_block(block)
    tables, (first, second, third) = scenario(description, lanes)
    assert tables[0] != tables[1] and tables[1] != tables[2] and tables[0] != tables[2]
    runs = [coded(description, frames, lanes, book)
            for frames, book in zip((first, second, third), tables)]
    # A's next table codes F otherwise: a write into A while F is inside would show.
    assert coded(description, first, lanes, tables[2])[0] != runs[0][0]
    writes = [description.config_writes(book)["i_config"] for book in tables[1:]]
    # A's next table from its highest address down, the switch still last: the writes
    # that set every code's length (QLC's areas, Huffman's limits) first, so that one
    # taken while F is inside corrupts F at once.
    writes[1][:-1] = sorted(writes[1][:-1], key=lambda write: -write["addr"])
    to_b = len(writes[0])                     # B's writes, its switch last
    inputs = {port: sum((run[0][port] for run in runs), []) for port in runs[0][0]}
    inputs["i_config"] = writes[0] + writes[1]
    expected = {"o": sum((run[1]["o"] for run in runs), [])}
    f_in = {port: len(beats) for port, beats in runs[0][0].items()}
    g_in = {port: len(beats) for port, beats in runs[1][0].items()}
    f_beats, g_beats = len(runs[0][1]["o"]), len(runs[1][1]["o"])
    every_write = len(inputs["i_config"])
    gates = {
        # B's switch once F's words are in; A's once F and G are out.
        "i_config": {to_b - 1: (f_in, SETTLE),
                     every_write - 1: ({"o": f_beats + g_beats}, 0)},
        # The output held until HOLD cycles after B's switch.
        "o": {0: ({"i_config": to_b}, HOLD)},
    }
    for port in f_in:                         # G after B's switch, H after A's
        gates[port] = {f_in[port]: ({"i_config": to_b}, 0),
                       f_in[port] + g_in[port]: ({"i_config": every_write}, 0)}
    component = shared_build(description, lanes=lanes,
                             word_width=description.default_word_width(lanes), tables=None)
    result = run_beats(component, inputs=inputs, expected=expected, idle="random",
                       stall="random", seed=seed, gates=gates,
                       name=description.module_name(lanes=lanes))
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    made, out = result["input_cycles"]["i_config"], result["output_cycles"]["o"]
    assert len(made) == len(inputs["i_config"])
    switch, write = made[to_b - 1], made[to_b]
    last = f_beats - 1
    waiting, after = WRITE_TAKEN[block]
    print(f"{block}: switch to B in cycle {switch}; F's beats out in {out[:f_beats]}; "
          f"A's first write held until cycle {write}")
    assert switch < out[0]                        # the switch went in with F inside
    assert write > out[last - waiting], (
        f"seed {seed}: a write into bank A in cycle {write}, before F's last beat had "
        f"passed A's reads (F's beats left in cycles {out[:f_beats]})")
    assert write <= out[last] + after, (
        f"seed {seed}: F left in cycle {out[last]}, but the write to A waited until "
        f"cycle {write}")


@pytest.mark.parametrize(("block", "lanes"), [block_case("huffman-decoder", 1),
                                              block_case("huffman-decoder-bf16", 1)])
def test_writes_wait_while_the_working_banks_length_tables_are_derived(block, lanes, seed):
    """A Huffman decoder derives a bank's length tables from its limits in a sweep: two
    cycles to start, a step for each of the 256 prefixes and each threshold passed (14
    at most), a cycle to write the last entries, so 259 to 273 cycles after the bank's
    last limit write. While the bank swept is the working one, writes wait (one to the
    other bank's limits would restart the sweep there) and so do words. B's limits are
    written last, just before its switch, which takes effect at once (no frame inside):
    A's next table, offered at once, and frames G of B both wait for the sweep and go in
    the same cycle once it is done, and G decodes with B."""
    description = get_block(block)
    tables, (_, second, _) = scenario(description, lanes)
    base = (LENGTH_BASE if description.value_bits == 8
            else split_length_base(description.coded_bits))
    limits = range(base + 1, base + MAX_CODE_LENGTH + 1)
    to_b = description.config_writes(tables[1])["i_config"]
    to_b = ([write for write in to_b[:-1] if write["addr"] not in limits]
            + [write for write in to_b if write["addr"] in limits] + to_b[-1:])
    inputs, expected = coded(description, second, lanes, tables[1])
    inputs["i_config"] = to_b + description.config_writes(tables[2])["i_config"][:-1]
    component = shared_build(description, lanes=lanes,
                             word_width=description.default_word_width(lanes), tables=None)
    result = run_beats(component, inputs=inputs, expected=expected, idle="random",
                       stall="random", seed=seed, name=description.module_name(lanes=lanes),
                       gates={"i": {0: ({"i_config": len(to_b)}, 0)}})  # G after B's switch
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    made, words = result["input_cycles"]["i_config"], result["input_cycles"]["i"]
    assert len(made) == len(inputs["i_config"])
    last_limit, write = made[len(to_b) - 2], made[len(to_b)]
    print(f"{block}: B's last limit in cycle {last_limit}, its switch in "
          f"{made[len(to_b) - 1]}; A's first write in {write}, G's first word in {words[0]}")
    assert 259 <= write - last_limit <= 273, (
        f"seed {seed}: B's last limit write in cycle {last_limit}, A's first write taken "
        f"in cycle {write}")
    assert write == words[0], (f"seed {seed}: the sweep let A's first write go in cycle "
                               f"{write} and G's first word in {words[0]}")


def test_a_gate_names_only_ports_that_stream():
    """A gate (:func:`~linkcodec.sim.harness.run_beats`) on or after a port the testbench
    does not stream, a misspelt one or a config port loaded before the traffic, is
    refused before anything is built."""
    description = get_block("exponent-decoder")
    component = shared_build(description, lanes=4, word_width=64, tables=None)
    name = description.module_name(lanes=4)
    with pytest.raises(ValueError, match=f"a gate names 'i_conf', which {name} does not "
                                         f"stream; it streams i, i_escapes, i_config, o"):
        run_beats(component, inputs={}, expected={}, name=name,
                  gates={"o": {0: ({"i_conf": 1}, 0)}})
    loaded = description.config_writes(description.default_tables())
    with pytest.raises(ValueError, match="a gate names 'i_config'"):
        run_beats(component, inputs={}, expected={}, config=loaded, name=name,
                  gates={"i_config": {0: ({"i": 1}, 0)}})
