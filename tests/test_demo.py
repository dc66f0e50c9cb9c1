"""``linkcodec demo`` (what ``make demo`` runs): every part prints, the RTL is bit-exact."""

from linkcodec.cli import main
from linkcodec.sim import runner


def test_demo_runs_end_to_end(monkeypatch, capsys):
    # Own build folder (kept between runs): the RTL tests build the same blocks on other
    # xdist workers.
    monkeypatch.setattr(runner, "BUILD_ROOT", runner.BUILD_ROOT / "demo-test")
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "| ffn2_act | 24 | 2359296 |" in out          # the QLC class table
    single_stage = next(line for line in out.splitlines() if line.startswith("| ffn2_act |")
                        and "carried" not in line and " gap " in line)
    at_scale_gap = float(single_stage.rsplit("gap", 1)[1].strip(" |"))
    assert 0 <= at_scale_gap < 0.5                          # issue 3's bar, as printed
    for block in ("qlc-encoder", "qlc-decoder"):
        assert f"{block}: 98304 symbols in " in out and out.count("bit-exact: yes") == 2
