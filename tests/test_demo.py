"""``linkcodec demo`` (what ``make demo`` runs): every part prints, the RTL is bit-exact."""

from linkcodec.cli import main
from linkcodec.sim import runner


def test_demo_runs_end_to_end(monkeypatch, capsys):
    # Own build folder (kept between runs): the RTL tests build the same blocks on other
    # xdist workers.
    monkeypatch.setattr(runner, "BUILD_ROOT", runner.BUILD_ROOT / "demo-test")
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) < 40                        # one screen
    # The single-stage table (`bench --codecs` per class): QLC, Huffman, Huffman at
    # step 3's scale, per-shard Huffman, Shannon, QLC / Huffman.
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in out.splitlines()
            if line.startswith("| ffn")}
    assert list(rows) == ["ffn1_act", "ffn2_act", "ffn1_grad", "ffn2_grad"]
    for kind, cells in rows.items():
        symbols, qlc, huffman, at_scale, per_shard, shannon = map(float, cells[:6])
        share = float(cells[6].strip(" %")) / 100
        assert symbols == (589824 if kind.startswith("ffn2") else 147456)
        assert shannon >= per_shard >= max(qlc, huffman, at_scale)
        assert 0.8 <= share < 1 and abs(share - qlc / huffman) < 0.02
        if kind.endswith("_act"):
            assert per_shard - at_scale < 0.5              # issue 3's bar, as printed
    for block in ("qlc-encoder", "qlc-decoder"):
        assert f"{block}: 98304 symbols in " in out and out.count("bit-exact: yes") == 2
