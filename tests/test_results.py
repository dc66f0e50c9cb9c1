"""The hardware figures are of this code: every row of docs/results.json (the table
docs/results.md renders) names the SHA-256 of the Verilog it measured, and the code must
still generate that Verilog. A change to a block's RTL lands with `linkcodec bench
--synthesis` run again. No synthesis here: only `linkcodec generate`."""

import pytest

from linkcodec.bench import RESULTS_PATH
from linkcodec.results import (LINK_SHAPES, RESULTS_JSON, SEEDS, read_rows, row_name,
                               stale_rows)
from linkcodec.rtl.blocks import BLOCKS

ROWS = read_rows()


@pytest.mark.parametrize("row", ROWS, ids=[row_name(row) for row in ROWS])
def test_each_row_measured_the_verilog_the_code_makes(row):
    assert stale_rows([row]) == []


def test_the_table_holds_every_block_and_link_shape_at_3_seeds():
    """Every block of the registry at its fewest lanes at least, every link shape of
    LINK_SHAPES, each the median of SEEDS seeds, bit-exact in its throughput run."""
    blocks = {(row["block"], row["lanes"]) for row in ROWS if "codec" not in row}
    for name, block in BLOCKS.items():
        assert (name, min(block.lanes)) in blocks, name
    links = {(row["block"], row["codec"], row["streams"]) for row in ROWS if "codec" in row}
    assert links == set(LINK_SHAPES)
    for row in ROWS:
        assert row["seeds"] == SEEDS and row["bit_exact"], row_name(row)
        if row.get("unmeasured"):         # the flow failed: said why, no figure
            assert row["fmax_mhz"] is row["luts"] is None and not row["fmax_by_seed"]
            continue
        assert len(row["fmax_by_seed"]) == SEEDS, row_name(row)
        assert row["fmax_mhz"] == pytest.approx(sorted(row["fmax_by_seed"])[1], abs=0.01)


def test_the_page_shows_the_rows_of_the_table():
    """docs/results.md shows each row's Verilog hash and median Fmax as results.json has
    them (both are written by the same `linkcodec bench --synthesis`), and links to it."""
    page = RESULTS_PATH.read_text()
    assert f"(../linkcodec/data/{RESULTS_JSON.name})" in page
    for row in ROWS:
        assert f"`{row['verilog_sha256'][:12]}`" in page, row_name(row)
        if row.get("unmeasured"):
            assert f"not measured, the flow failed on its Verilog ({row['unmeasured']})" \
                in page
        else:
            assert f"| {row['fmax_mhz']:,.1f} |" in page, row_name(row)


def change_the_qlc_decoder(monkeypatch):
    """Plant an RTL change in the QLC decoder: one register more."""
    from amaranth.hdl import Signal

    from linkcodec.rtl.qlc import QlcDecoder

    elaborate = QlcDecoder.elaborate

    def changed(self, platform):
        m = elaborate(self, platform)
        extra = Signal(name="changed")
        m.d.sync += extra.eq(~extra)
        return m

    monkeypatch.setattr(QlcDecoder, "elaborate", changed)


def test_a_changed_block_is_named_with_its_stale_row(monkeypatch):
    """Change the QLC decoder's RTL (one register more): the check names the block and
    its row, and only that row."""
    chosen = [row for row in ROWS if (row["block"], row["lanes"]) in
              {("qlc-decoder", 1), ("qlc-encoder", 1)}]
    assert len(chosen) == 2
    assert stale_rows(chosen) == []
    change_the_qlc_decoder(monkeypatch)
    (stale,) = stale_rows(chosen)
    assert stale.startswith("qlc-decoder at 1 lane (module linkcodec_qlc_decoder_l1)")
    decoder = next(row for row in chosen if row["block"] == "qlc-decoder")
    assert decoder["verilog_sha256"][:12] in stale and "linkcodec bench --synthesis" in stale


def test_stale_measures_only_the_changed_rows_again(monkeypatch):
    """`linkcodec bench --synthesis --stale` keeps a row whose Verilog the code still
    makes and measures its shape again only when the block changed (or the row is of
    other seeds); no synthesis here: the measurement is recorded, not run."""
    from linkcodec import hardware
    from linkcodec.bench import synthesis_rows
    from linkcodec.results import current_rows

    measured = []

    def measure(block, lanes, *, seeds):
        measured.append((block, lanes, seeds))
        return {"block": block, "lanes": lanes, "seeds": seeds, "bit_exact": True}

    monkeypatch.setattr(hardware, "report_row", measure)
    chosen = [row for row in ROWS if (row["block"], row["lanes"]) in
              {("qlc-decoder", 1), ("qlc-encoder", 1)}]
    change_the_qlc_decoder(monkeypatch)
    keep = current_rows(chosen)
    assert [row["block"] for row in keep] == ["qlc-encoder"]
    rows = synthesis_rows([1], links=[], keep=keep, progress=False)
    assert ("qlc-decoder", 1, SEEDS) in measured and ("qlc-encoder", 1, SEEDS) not in measured
    assert next(row for row in rows if row["block"] == "qlc-encoder") is keep[0]
    assert len(rows) == sum(1 in block.lanes for block in BLOCKS.values())
    measured.clear()
    synthesis_rows([1], links=[], keep=keep, seeds=SEEDS - 1, progress=False)
    assert ("qlc-encoder", 1, SEEDS - 1) in measured
