"""``linkcodec sim huffman-encoder|huffman-decoder``: the same JSON keys as the QLC blocks,
with ``codebook`` (its id) in place of ``layout``; ``--fuzz`` for the decoder. The runs
share the Verilator builds of ``test_rtl_huffman.py`` (and run on its workers)."""

import json

import numpy as np
import pytest

from linkcodec.bundled import bundled_files
from linkcodec.cli import main
from linkcodec.golden.huffman import HuffmanCodebook
from linkcodec.rtl.huffman import default_codebook

QLC_KEYS = {"block", "lanes", "symbols", "cycles", "symbols_per_cycle", "bit_exact",
            "word_width", "seed", "files", "payload_bits", "compressibility"}


@pytest.mark.xdist_group("huffman-encoder-2")
def test_sim_builds_the_codebook_from_the_files(tmp_path, capsys):
    """Without --codebook the codebook is the one `linkcodec codebook build` makes."""
    paths = [str(path) for path in bundled_files("ffn1_act", layers=[0, 1], steps=[0])]
    arrays = [np.load(path).reshape(-1)[:700] for path in paths]
    files = []
    for index, symbols in enumerate(arrays):
        files.append(tmp_path / f"t{index}.npy")
        np.save(files[-1], symbols)
    book_path = tmp_path / "book.json"
    assert main(["codebook", "build", "--from", *map(str, files), "-o", str(book_path)]) == 0
    book = HuffmanCodebook.load(book_path)
    capsys.readouterr()
    assert main(["sim", "huffman-encoder", "--lanes", "2", "--json", *map(str, files)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert QLC_KEYS | {"codebook"} == set(report)
    assert report["codebook"] == book.id and report["bit_exact"] is True
    assert report["symbols"] == 1400 and report["lanes"] == 2
    bits = [book.encode(symbols)[1] for symbols in arrays]
    assert [frame["payload_bits"] for frame in report["files"]] == bits
    assert report["payload_bits"] == sum(bits)
    assert report["compressibility"] == pytest.approx(1 - sum(bits) / (1400 * 8), abs=1e-6)


@pytest.mark.xdist_group("huffman-decoder-1")
def test_sim_decoder_with_a_codebook_and_fuzz(tmp_path, capsys):
    earlier = bundled_files("ffn1_act", layers=[4], steps=[0, 1])
    book_path = tmp_path / "book.json"
    assert main(["codebook", "build", "--from", *map(str, earlier), "-o", str(book_path)]) == 0
    book = HuffmanCodebook.load(book_path)
    path = tmp_path / "later.npy"
    np.save(path, np.load(bundled_files("ffn1_act", layers=[4], steps=[2])[0]).reshape(-1)[:900])
    capsys.readouterr()
    assert main(["sim", "huffman-decoder", "--codebook", str(book_path), str(path)]) == 0
    out = capsys.readouterr().out
    assert f"codebook {book.id}" in out and "bit-exact: yes" in out
    assert main(["sim", "huffman-decoder", "--fuzz", "40", "--json", "--seed", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["codebook"] == default_codebook().id and "layout" not in report
    assert (report["frames"], report["mismatches"], report["hangs"]) == (40, 0, 0)


def test_sim_refuses_a_layout_for_huffman(tmp_path, capsys):
    path = tmp_path / "x.npy"
    np.save(path, np.arange(10, dtype=np.uint8))
    assert main(["sim", "huffman-encoder", "--layout", "base", str(path)]) == 2
    assert "takes --codebook" in capsys.readouterr().err
    assert main(["sim", "huffman-encoder", "--fuzz", "3"]) == 2
    assert "--fuzz fuzzes a decoder" in capsys.readouterr().err
    assert main(["sim", "huffman-decoder", "--lanes", "8", str(path)]) == 2
    assert "huffman-decoder takes lanes 1, 2, 4, not 8" in capsys.readouterr().err
