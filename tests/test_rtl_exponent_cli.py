"""``linkcodec sim exponent-encoder|exponent-decoder``: the same JSON keys as the other
blocks, with ``table`` (sigma or histogram) and its ``exponents`` in place of ``layout``.
The table comes from all the FILEs together; a FILE is a ``uint16`` ``.npy`` of bf16 bit
patterns or a float array rounded to bf16. The runs share the Verilator builds of
``test_rtl_exponent.py`` (and run on its workers)."""

import json

import ml_dtypes
import numpy as np
import pytest

from linkcodec.bundled import bundled_bf16_files
from linkcodec.cli import main
from linkcodec.golden.exponent import (table_from_histogram, table_from_tensor_sigma,
                                       wire_encode)

KEYS = {"block", "lanes", "symbols", "cycles", "symbols_per_cycle", "bit_exact",
        "word_width", "seed", "files", "payload_bits", "compressibility"}


def _bf16_slices(tmp_path, count):
    """Two bundled bf16 tensors cut to ``count`` values each, saved as ``uint16`` files."""
    paths = []
    for index, path in enumerate(bundled_bf16_files()[:2]):
        paths.append(tmp_path / f"v{index}.npy")
        np.save(paths[-1], np.load(path).reshape(-1)[index * 5000:index * 5000 + count])
    return paths


@pytest.mark.xdist_group("exponent-encoder-4")
@pytest.mark.parametrize("table", ["sigma", "histogram"])
def test_sim_encoder_table_from_all_files(tmp_path, capsys, table):
    paths = _bf16_slices(tmp_path, 700)
    pooled = np.concatenate([np.load(path) for path in paths])
    wanted = (table_from_tensor_sigma if table == "sigma" else table_from_histogram)(pooled)
    assert main(["sim", "exponent-encoder", "--table", table, "--seed", "5", "--json",
                 *map(str, paths)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert KEYS | {"table", "exponents"} == set(report)
    assert report["lanes"] == 4                      # the exponent blocks' fewest lanes
    assert report["table"] == table and report["exponents"] == list(wanted.exponents)
    assert report["symbols"] == 1400 and report["bit_exact"] is True
    assert [frame["symbols"] for frame in report["files"]] == [700, 700]
    # What the run saved: both streams of the wire format, values and escapes.
    wires = [wire_encode(np.load(path), wanted) for path in paths]
    bits = [wire.values_bits + wire.escapes_bits for wire in wires]
    assert [frame["payload_bits"] for frame in report["files"]] == bits
    assert report["payload_bits"] == sum(bits)
    assert report["compressibility"] == pytest.approx(1 - sum(bits) / (1400 * 16), abs=1e-6)


@pytest.mark.xdist_group("exponent-decoder-4")
def test_sim_decoder_on_floats_rounded_to_bf16(tmp_path, capsys):
    """A float32 file is rounded to bf16 (nearest even); the default table is by sigma."""
    values = np.random.default_rng(11).standard_normal(333).astype(np.float32) * 0.02
    path = tmp_path / "floats.npy"
    np.save(path, values)
    bits = values.astype(ml_dtypes.bfloat16).view(np.uint16)
    assert main(["sim", "exponent-decoder", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["table"] == "sigma"
    assert report["exponents"] == list(table_from_tensor_sigma(bits).exponents)
    assert report["symbols"] == 333 and report["bit_exact"] is True
    assert main(["sim", "exponent-decoder", str(path)]) == 0
    out = capsys.readouterr().out
    assert "table sigma" in out and "333 values" in out and "bit-exact: yes" in out


def test_sim_refuses_what_exponent_blocks_do_not_take(tmp_path, capsys):
    e4m3 = tmp_path / "e4m3.npy"
    np.save(e4m3, np.arange(10, dtype=np.uint8))
    bf16 = tmp_path / "bf16.npy"
    np.save(bf16, np.arange(1000, 1010, dtype=np.uint16))
    assert main(["sim", "exponent-encoder", str(e4m3)]) == 2
    assert "holds e4m3 bytes" in capsys.readouterr().err
    assert main(["sim", "exponent-encoder", "--layout", "base", str(bf16)]) == 2
    assert "--layout" in capsys.readouterr().err
    assert main(["sim", "exponent-decoder", "--codebook", "book.json", str(bf16)]) == 2
    assert "takes --table" in capsys.readouterr().err
    assert main(["sim", "qlc-encoder", "--table", "sigma", str(e4m3)]) == 2
    assert "--table" in capsys.readouterr().err
    assert main(["sim", "exponent-encoder", "--lanes", "2", str(bf16)]) == 2
    assert "lanes" in capsys.readouterr().err
    constant = tmp_path / "constant.npy"
    np.save(constant, np.full(10, 0x3F80, dtype=np.uint16))
    assert main(["sim", "exponent-encoder", str(constant)]) == 2
    assert "sigma is 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sim", "exponent-encoder", "--table", "median", str(bf16)])
