"""Link docs that cannot drift: the worked example of docs/bitstream.md ("Link flits")
byte for byte against golden/link.py, and every output and table docs/link.md pastes
against the command or function that makes it."""

import argparse
import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

from linkcodec import linkmodel
from linkcodec.bundled import bundled_files
from linkcodec.golden.link import FlitHeader, FlitWriter, LinkFormat, flit_crcs
from linkcodec.rtl.blocks import get_block

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _section(page, heading):
    """The text of ``page`` under ``heading`` up to the next heading of its level or
    higher."""
    text = (DOCS / page).read_text()
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    ends = [match.start() for match in re.finditer(rf"\n#{{1,{len(level)}}} ", text)
            if match.start() > start]
    return text[start:ends[0] if ends else len(text)]


def _example_flits():
    """The worked example: a 4-stream QLC link carries minilm_l3_ffn2_act_s3 on stream 2
    with the table fitted to steps 0-2."""
    files = bundled_files(kind="ffn2_act", layers=[3])
    frames = [np.load(path).reshape(-1) for path in files]
    assert [path.name for path in files][-1] == "minilm_l3_ffn2_act_s3.npy"
    writer = FlitWriter(LinkFormat("qlc", streams=4))
    return writer.load(get_block("qlc-encoder").fitted_tables(frames[:3])) \
        + writer.frame(frames[3], stream=2)


def test_the_worked_example_is_what_the_golden_model_makes():
    text = _section("bitstream.md", "### Worked example")
    flits = _example_flits()
    assert f"It makes {len(flits)}" in text
    data = [FlitHeader.unpack(flit) for flit in flits[1:]]
    assert all(not h.table and h.codec == LinkFormat("qlc").codec_id for h in data)
    assert f"then {len(data)} coded data flits" in text
    rows = re.findall(r"^\| (\d+) \| `([0-9a-f ]+)` \| (\d) \(QLC\) \| (\d) \| (\d) \| (\d) "
                      r"\| (\d+) \| (\d+) \| (\d+) \|$", text, re.MULTILINE)
    assert len(rows) == 3
    for index, hexed, *fields in rows:
        flit = flits[int(index)]
        assert flit[:4].hex(" ") == hexed
        header = FlitHeader.unpack(flit)
        assert [int(field) for field in fields] == [
            header.codec, header.table, header.bank, header.last, header.stream,
            header.count, header.bits]
    assert [int(row[0]) for row in rows] == [0, 1, len(flits) - 1]
    bits = re.search(r"header in bits is `([01 ]+)`", text)[1]
    assert bits.replace(" ", "") == format(int.from_bytes(flits[1][:4], "big"), "032b")
    assert [len(part) for part in bits.split()] == [2, 1, 1, 1, 4, 12, 11]
    image = re.search(r"its body begins with the 8 areas, `([0-9a-f ]+)`", text)[1]
    assert flits[0][4:20].hex(" ") == image
    fields = re.findall(r"CRC\s+field is `([0-9a-f ]+)`|Flit 1's is `([0-9a-f ]+)`", text)
    assert [flits[0][-4:].hex(" "), flits[1][-4:].hex(" ")] == [
        first or second for first, second in fields]
    assert f"{flit_crcs(flits[0])[0]:#06x} for bytes 0-127" in text


def test_the_crc_example_is_what_the_golden_model_makes():
    text = _section("bitstream.md", "### CRC")
    fmt = LinkFormat("qlc", flit_bytes=64)
    header = FlitHeader(codec=0, table=False, bank=0, last=True, stream=0, count=3,
                        bits=24)
    flit = fmt.flit(header, bytes([1, 2, 3]))
    assert f"Its header is `{flit[:4].hex(' ')}`" in text
    assert flit[4:7].hex(" ") == "01 02 03" and not any(flit[7:-2])
    assert f"its CRC is {flit_crcs(flit)[0]:#06x}, so the flit ends `{flit[-2:].hex(' ')}`" \
        in text.replace("\n", " ")


def _run(argv):
    parser = argparse.ArgumentParser()
    linkmodel.add_arguments(parser)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        linkmodel.run(parser.parse_args(argv))
    return out.getvalue().rstrip("\n")


def _pasted_runs():
    text = (DOCS / "link.md").read_text()
    return re.findall(r"```\n\$ linkcodec link ([^\n]*)\n(.*?)\n```", text, re.DOTALL)


def test_link_md_pastes_three_links():
    assert len(_pasted_runs()) == 3


@pytest.mark.parametrize("argv,pasted", _pasted_runs())
def test_link_md_pastes_real_output(argv, pasted):
    assert _run(argv.split()) == pasted


def test_link_md_tables_are_the_functions():
    text = (DOCS / "link.md").read_text()
    assert linkmodel.render_measured() in text
    overhead = _section("link.md", "## Flit overhead on the bundled sample")
    assert "`linkcodec bench --link`" in overhead
    assert linkmodel.render_link_overhead(linkmodel.link_overhead_rows()) in overhead
    assert "## The hardware: LinkTx and LinkRx" in text
