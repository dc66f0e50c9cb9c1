"""Docs that cannot drift: every latency the docs quote is the block's ``latency``
property.

Every Markdown table in ``docs/`` and the README with a ``block``, a ``lanes`` and a
``latency (cycles)`` column is read (a cell ``2 → 6``, before and after, counts by its
last figure), and so is every sentence of a codec's page that quotes a latency ("7
cycles at lanes 1", "`5 + log2(lanes)` cycles", "Latency 7 cycles"), for the block that
the heading or bold lead-in above it names.
"""

import re
from pathlib import Path

import pytest
from amaranth.hdl import Fragment

from linkcodec.rtl.blocks import BLOCKS

ROOT = Path(__file__).resolve().parents[1]
#: Every page but history.md, a dated record of what was measured then, not of the code now.
PAGES = sorted(page for page in (ROOT / "docs").glob("*.md") if page.name != "history.md") \
    + [ROOT / "README.md"]


def latency(block, lanes):
    component = BLOCKS[block].build(lanes=lanes)
    Fragment.get(component, None)
    return component.latency


def table_rows(text):
    """``(header, cells)`` of every row of every Markdown table in ``text``."""
    header = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = [cell.lower() for cell in cells]
        elif not all(set(cell) <= set("-: ") for cell in cells):
            yield header, cells


def quoted_latencies():
    """``(page, block, lanes, quoted)`` for every latency a table quotes."""
    found = []
    for page in PAGES:
        for header, cells in table_rows(page.read_text()):
            if not {"block", "lanes", "latency (cycles)"} <= set(header):
                continue
            row = dict(zip(header, cells))
            block = row["block"].strip("`")
            if block not in BLOCKS:
                continue
            figures = re.findall(r"\d+", row["latency (cycles)"])
            found.append((page.name, block, int(row["lanes"]), int(figures[-1])))
    return found


def _sentence_block(page, line, block):
    """The block a line of ``page`` speaks of: the codec from the page's name (qlc.md,
    huffman.md, exponent.md), the side from a heading or a bold lead-in ("**Decoder.**",
    "## How the decoder works") on the line; else the one spoken of before."""
    codec = page.stem
    lead = line.startswith("#") or line.startswith("**")
    for side in ("encoder", "decoder"):
        # "bf16" in the lead-in: the block of bf16 values (huffman-encoder-bf16)
        for name in (f"{codec}-{side}-bf16", f"{codec}-{side}"):
            if (lead and side in line.lower() and name in BLOCKS
                    and name.endswith("-bf16") == ("bf16" in line.lower())):
                return name
    return block


#: "7", or a list "8, 9, 11 and 15".
FIGURES = r"((?:\d+, )*\d+(?: and \d+)?)"


def _figures(text):
    return [int(figure) for figure in re.findall(r"\d+", text)]


def prose_latencies():
    """``(page, block, lanes, quoted)`` for every latency a paragraph quotes: "7 cycles at
    lanes 1" (or lists: "8, 9 and 11 cycles at lanes 1, 2 and 4"), "`5 + log2(lanes)`
    cycles" (each lane count), or "Latency 7 cycles" (each lane count), the block named
    by the nearest heading or bold lead-in above."""
    found = []
    for page in PAGES:
        block = None
        for paragraph in re.split(r"\n\s*\n", page.read_text()):
            for line in paragraph.splitlines():
                block = _sentence_block(page, line, block)
            text = " ".join(paragraph.split())
            if block is None or "atency" not in text:
                continue
            lanes_all = BLOCKS[block].lanes
            for figures, lanes in re.findall(FIGURES + r" cycles at lanes " + FIGURES, text):
                found += [(page.name, block, lane, figure)
                          for figure, lane in zip(_figures(figures), _figures(lanes))]
            for base in re.findall(r"`(\d+) \+ log2\(lanes\)`", text):
                found += [(page.name, block, lanes, int(base) + lanes.bit_length() - 1)
                          for lanes in lanes_all]
            for figure in re.findall(r"[Ll]atency (\d+) cycles(?! at)", text):
                found += [(page.name, block, lanes, int(figure)) for lanes in lanes_all]
    return found


def test_the_docs_quote_latencies():
    """This file would otherwise check nothing: the tables and sentences are found."""
    pages = {page for page, *_ in quoted_latencies()}
    assert {"blocks.md", "qlc.md", "results.md"} <= pages
    assert {block for _, block, *_ in quoted_latencies()} == set(BLOCKS)
    prose = {(page, block) for page, block, *_ in prose_latencies()}
    assert {("huffman.md", "huffman-encoder"), ("huffman.md", "huffman-decoder"),
            ("exponent.md", "exponent-encoder"), ("exponent.md", "exponent-decoder")} <= prose


@pytest.mark.parametrize(("page", "block", "lanes", "quoted"),
                         quoted_latencies() + prose_latencies())
def test_a_quoted_latency_is_the_property(page, block, lanes, quoted):
    assert quoted == latency(block, lanes), (
        f"{page} quotes {quoted} cycles for {block} at lanes {lanes}; its latency "
        f"property says {latency(block, lanes)}")


def test_a_quoted_throughput_floor_is_the_declared_one():
    """Every "at least X x lanes" / ">= X x lanes" the docs and README quote is the floor
    the blocks declare and the contract suite asserts."""
    floors = {block.min_symbols_per_lane for block in BLOCKS.values()}
    quoted = []
    for page in PAGES:
        text = " ".join(page.read_text().split())
        quoted += [(page.name, float(figure)) for figure in re.findall(
            r"(?:>=|at least) `?(\d\.\d+) ?(?:x|\*|×) lanes", text)]
    assert {"README.md", "huffman.md", "exponent.md"} <= {page for page, _ in quoted}
    for page, figure in quoted:
        assert figure in floors, f"{page} quotes {figure} x lanes; the blocks declare {floors}"
