"""``linkcodec demo`` (what ``make demo`` runs): every part prints, the RTL is bit-exact."""

import numpy as np

from linkcodec.cli import main
from linkcodec.rtl.blocks import BLOCKS


def test_demo_runs_end_to_end(capsys):
    # The RTL tests build the same blocks (4 lanes, default tables) on the other xdist
    # worker; the build folder's lock makes one wait for the other, and the build is
    # shared.
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
    # bf16: the exponent remap by sigma and by histogram, exponent Huffman, zstd
    bf16 = {line.split("|")[1].strip(): list(map(float, line.split("|")[2:-1]))
            for line in out.splitlines() if line.startswith("| bf16 ")}
    assert list(bf16) == [f"bf16 {kind}" for kind in rows]
    for name, (values, sigma, histogram, huffman, zstd) in bf16.items():
        assert values == (24576 if "ffn1" in name else 98304)   # layers 1 and 4, step 3
        # 11 of 16 bits (31.25 %) at best, less the escapes; Huffman on the exponents
        # does better than 3 bits a code
        assert 15 < min(sigma, histogram) and max(sigma, histogram) < 31.25
        assert huffman > max(sigma, histogram) and zstd > 10
    # every block of the harness runs, bit-exact, on its own kind of tensor
    for block in BLOCKS:
        line = next(line for line in out.splitlines() if line.startswith(f"  {block}: "))
        symbols = 98304 if BLOCKS[block].symbol_dtype == np.uint8 else 49152
        assert line.startswith(f"  {block}: {symbols} symbols in ") and "bit-exact: yes" in line
    assert out.count("bit-exact: yes") == len(BLOCKS)
