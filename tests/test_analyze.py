"""``linkcodec analyze`` and ``linkcodec codebook build``: figures against known answers."""

import json
import struct

import ml_dtypes
import numpy as np
import pytest

from linkcodec.analyze import METRICS, analyze_shards
from linkcodec.bundled import bundled_files, bundled_scale
from linkcodec.cli import main
from linkcodec.golden.exponent import encode as remap_encode, split, table_from_tensor_sigma
from linkcodec.golden.huffman import HuffmanCodebook, per_shard_huffman_bits
from linkcodec.golden.qlc import QlcCode, QlcLayout
from linkcodec.inputs import read_shards


def run_json(capsys, *argv):
    assert main(["analyze", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def write_safetensors(path, tensors):
    """A minimal .safetensors writer (header length, JSON header, raw little-endian data)."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, array) in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_json_shape_and_known_answers(capsys):
    files = bundled_files("ffn1_act", layers=[2])
    report = run_json(capsys, *map(str, files))
    assert set(report) == {"files", "total"}
    assert len(report["files"]) == 4
    shards = [np.load(path).reshape(-1) for path in files]
    for index, (row, symbols) in enumerate(zip(report["files"], shards)):
        assert row["file"] == str(files[index]) and row["tensor"] == files[index].stem
        assert set(METRICS) | {"kl_to_average"} <= set(row)
        counts = np.bincount(symbols, minlength=256)
        p = counts[counts > 0] / symbols.size
        assert row["shannon"] == pytest.approx(1 + (p * np.log2(p)).sum() / 8)
        assert row["huffman"] == pytest.approx(1 - per_shard_huffman_bits(symbols) / 8)
        # Leave-one-out: the codebook `codebook build` makes of the other files.
        book = HuffmanCodebook.from_batches(s for j, s in enumerate(shards) if j != index)
        assert row["huffman_fixed"] == pytest.approx(
            1 - book.lengths[symbols].astype(int).sum() / symbols.size / 8)
        base = QlcCode.from_pmf(counts, layout=QlcLayout.base())
        assert row["qlc_base"] == pytest.approx(
            1 - base.length_of[symbols].astype(int).mean() / 8)
        assert row["qlc_optimal"] >= row["qlc_base"]
        assert row["shannon"] >= row["huffman"] >= row["huffman_fixed"] - 0.01
        assert row["exponent_remap"] is None and row["zstd"] > 0 and row["zlib"] > 0
    sizes = [row["symbols"] for row in report["files"]]
    assert report["total"]["symbols"] == sum(sizes)
    assert report["total"]["huffman"] == pytest.approx(
        np.average([row["huffman"] for row in report["files"]], weights=sizes))


def test_fixed_codebook_tracks_per_shard_huffman_on_stable_activations(capsys):
    """The single-stage claim on real data: where a tensor's scale is stable between steps
    (all ffn1_act layers), earlier steps' codebook is within 0.5 points of per-shard."""
    for layer in range(6):
        report = run_json(capsys, *map(str, bundled_files("ffn1_act", layers=[layer])))
        for row in report["files"]:
            assert row["huffman"] - row["huffman_fixed"] < 0.005, row


def test_bf16_safetensors_shards(tmp_path, capsys):
    rng = np.random.default_rng(2)
    weights = (rng.standard_normal((64, 64)) * 0.02).astype(ml_dtypes.bfloat16)
    grads = (rng.standard_normal(3000) * 1e-4).astype(np.float32)
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"w": ("BF16", weights.view(np.uint16)), "g": ("F32", grads)})
    report = run_json(capsys, "--format", "bf16", str(path))
    rows = {row["tensor"]: row for row in report["files"]}
    assert set(rows) == {"w", "g"} and all(row["format"] == "bf16" for row in rows.values())
    w = rows["w"]
    bits = weights.view(np.uint16).reshape(-1)
    remap = remap_encode(bits, table_from_tensor_sigma(weights.reshape(-1)))
    assert w["exponent_remap"] == pytest.approx(1 - remap.bits_per_value() / 16)
    assert w["exponent_huffman"] == pytest.approx(
        1 - (8 + per_shard_huffman_bits(split(bits)[1])) / 16)
    assert w["qlc_base"] is None and 0.2 < w["exponent_remap"] < 0.35
    assert rows["g"]["symbols"] == 3000


def test_uint16_npy_is_bf16_and_float_casts_by_format(tmp_path):
    values = np.linspace(-3, 3, 1000, dtype=np.float32)
    np.save(tmp_path / "bits.npy", values.astype(ml_dtypes.bfloat16).view(np.uint16))
    np.save(tmp_path / "floats.npy", values)
    shards = read_shards([tmp_path / "bits.npy", tmp_path / "floats.npy"], format="bf16")
    assert [s.format for s in shards] == ["bf16", "bf16"]
    assert np.array_equal(shards[0].symbols, shards[1].symbols)
    (e4m3,) = read_shards([tmp_path / "floats.npy"])
    assert e4m3.format == "e4m3" and e4m3.symbols.dtype == np.uint8


def test_codebook_build_then_analyze_with_it(tmp_path, capsys):
    earlier = bundled_files("ffn2_act", layers=[3], steps=[0, 1, 2])
    later = bundled_files("ffn2_act", layers=[3], steps=[3])
    book_path = tmp_path / "book.json"
    assert main(["codebook", "build", "--from", *map(str, earlier), "-o", str(book_path)]) == 0
    capsys.readouterr()
    book = HuffmanCodebook.load(book_path)
    expected = HuffmanCodebook.from_batches([np.load(p).reshape(-1) for p in earlier])
    assert np.array_equal(book.lengths, expected.lengths) and book.id == expected.id
    report = run_json(capsys, "--codebook", str(book_path), str(later[0]))
    (row,) = report["files"]
    symbols = np.load(later[0]).reshape(-1)
    assert row["huffman_fixed"] == pytest.approx(
        1 - book.lengths[symbols].astype(int).mean() / 8)
    assert row["huffman"] - row["huffman_fixed"] < 0.005


def test_codebook_build_at_a_scale(tmp_path, capsys):
    """``--scales``/``--scale``: ffn2_act layer 0, whose step 3 has a new amax. The
    codebook from steps 0-2 carried to step 3's scale is the golden one and within 0.5
    points of per-shard Huffman; built from the codes alone it is 8 points off."""
    paths = bundled_files("ffn2_act", layers=[0])
    scales = [bundled_scale(p) for p in paths]
    book_path = tmp_path / "book.json"
    assert main(["codebook", "build", "--from", *map(str, paths[:3]), "-o", str(book_path),
                 "--scales", *map(repr, scales[:3]), "--scale", repr(scales[3])]) == 0
    assert "at scale" in capsys.readouterr().out
    book = HuffmanCodebook.load(book_path)
    expected = HuffmanCodebook.from_batches([np.load(p) for p in paths[:3]],
                                            scales=scales[:3], scale=scales[3])
    assert book == expected and book.source["scale"] == scales[3]
    (row,) = run_json(capsys, "--codebook", str(book_path), str(paths[3]))["files"]
    assert row["huffman"] - row["huffman_fixed"] < 0.005
    plain = HuffmanCodebook.from_batches([np.load(p) for p in paths[:3]])
    symbols = np.load(paths[3]).reshape(-1)
    assert row["huffman_fixed"] - (1 - plain.lengths[symbols].astype(int).mean() / 8) > 0.05
    for extra, message in [(["--scale", "2"], "give --scales"),
                           (["--scales", "1", "--scale", "2"], "1 --scales for 3 source"),
                           (["--scales", "1", "1", "1", "--scale", "0"], "scale is 0.0"),
                           (["--format", "bf16", "--scales", "1", "1", "1", "--scale", "2"],
                            "bf16 has no scale")]:
        assert main(["codebook", "build", "--from", *map(str, paths[:3]), "-o",
                     str(book_path), *extra]) == 2
        assert message in capsys.readouterr().err


def test_plot_writes_a_png(tmp_path, capsys):
    png = tmp_path / "pmf.png"
    assert main(["analyze", "--plot", str(png),
                 *map(str, bundled_files("ffn1_act", layers=[0], steps=[0, 1]))]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "plot written" in capsys.readouterr().out


def test_bad_inputs_get_clear_errors(tmp_path, capsys):
    np.save(tmp_path / "ints.npy", np.arange(4, dtype=np.int32))
    assert main(["analyze", str(tmp_path / "ints.npy")]) == 2
    assert "neither uint8" in capsys.readouterr().err
    (tmp_path / "bad.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    assert main(["analyze", str(tmp_path / "bad.safetensors")]) == 2
    assert "runs past the file's end" in capsys.readouterr().err
    (tmp_path / "book.json").write_text(json.dumps({"format": "something-else"}))
    assert main(["analyze", "--codebook", str(tmp_path / "book.json"),
                 str(bundled_files()[0])]) == 2
    assert "format" in capsys.readouterr().err
    assert main(["analyze", str(tmp_path / "missing.npy")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_single_file_has_no_leave_one_out():
    (shard,) = read_shards(bundled_files("ffn1_act", layers=[0], steps=[0]))
    rows, total = analyze_shards([shard])
    assert rows[0]["huffman_fixed"] is None and rows[0]["kl_to_average"] is None
    assert total["huffman_fixed"] is None


def test_leave_one_out_at_each_scale(tmp_path, capsys):
    """``--scales``: each step's codebook is the other steps' values at its scale, the
    golden ``from_batches(scales=, scale=)`` one, and within 0.5 points of per-shard
    Huffman on ffn2_act layer 5, where the codes-only codebook is not."""
    paths = bundled_files("ffn2_act", layers=[5])
    scales = [bundled_scale(p) for p in paths]
    report = run_json(capsys, *map(str, paths), "--scales", *map(repr, scales))
    plain = run_json(capsys, *map(str, paths))
    steps = [np.load(p).reshape(-1) for p in paths]
    for index, row in enumerate(report["files"]):
        others = [i for i in range(4) if i != index]
        book = HuffmanCodebook.from_batches([steps[i] for i in others],
                                            scales=[scales[i] for i in others],
                                            scale=scales[index])
        assert row["huffman_fixed"] == pytest.approx(
            1 - book.lengths[steps[index]].astype(int).mean() / 8)
        assert row["huffman"] - row["huffman_fixed"] < 0.005
    assert max(row["huffman"] - row["huffman_fixed"] for row in plain["files"]) > 0.05
    assert main(["analyze", str(paths[0]), str(paths[1]), "--scales", "1"]) == 2
    assert "1 scales for 2 tensors" in capsys.readouterr().err
    HuffmanCodebook.from_batches(steps).save(tmp_path / "book.json")
    assert main(["analyze", "--codebook", str(tmp_path / "book.json"), str(paths[0]),
                 "--scales", "1"]) == 2
    assert "does not apply to a --codebook" in capsys.readouterr().err


def test_an_empty_shard_is_left_out_of_the_leave_one_out_average(tmp_path, capsys):
    np.save(tmp_path / "empty.npy", np.zeros(0, dtype=np.uint8))
    first, second = bundled_files("ffn1_act", layers=[0], steps=[0, 1])
    report = run_json(capsys, str(first), str(tmp_path / "empty.npy"), str(second))
    rows = report["files"]
    assert rows[1]["symbols"] == 0 and rows[1]["huffman_fixed"] is None
    book = HuffmanCodebook.from_batches([np.load(second)])
    symbols = np.load(first).reshape(-1)
    assert rows[0]["huffman_fixed"] == pytest.approx(
        1 - book.lengths[symbols].astype(int).mean() / 8)


def test_byte_plane_is_what_the_entropy_coders_see(tmp_path):
    """e4m3: the bytes themselves; bf16: the exponent bytes. ``read_e4m3_shards`` refuses
    bf16 bit patterns, which the QLC blocks cannot carry."""
    from linkcodec.golden.formats import FormatError
    from linkcodec.inputs import read_e4m3_shards

    values = np.random.default_rng(5).standard_normal(300).astype(np.float32)
    np.save(tmp_path / "values.npy", values)
    (e4m3,) = read_shards([tmp_path / "values.npy"])
    (bf16,) = read_shards([tmp_path / "values.npy"], format="bf16")
    assert e4m3.byte_plane is e4m3.symbols
    assert np.array_equal(bf16.byte_plane, split(bf16.symbols)[1])
    assert bf16.byte_plane.dtype == np.uint8
    np.save(tmp_path / "bf16.npy", bf16.symbols)
    (again,) = read_e4m3_shards([tmp_path / "values.npy"])
    assert np.array_equal(again.symbols, e4m3.symbols)
    with pytest.raises(FormatError, match="holds bf16 bit patterns"):
        read_e4m3_shards([tmp_path / "values.npy", tmp_path / "bf16.npy"])


def test_bf16_huffman_candidates_leave_one_out_and_from_a_codebook(tmp_path, capsys):
    """For bf16 tensors, each split's bf16 Huffman figure is the codebook of the other
    tensors (leave-one-out) at that split, counted on this one; a bf16 codebook file
    replaces it at its own split, and is refused for e4m3 tensors."""
    from linkcodec.bundled import bundled_bf16_files

    files = bundled_bf16_files("ffn1_grad", layers=[1])
    shards = read_shards(files, format="bf16")
    rows, _ = analyze_shards(shards)
    values = [shard.symbols for shard in shards]
    for coded_bits in (8, 11, 12):
        book = HuffmanCodebook.from_batches(values[:3], value_bits=16, coded_bits=coded_bits)
        data, nbits = book.encode(values[3])
        assert rows[3][f"bf16_huffman_k{coded_bits}"] == 1 - nbits / (16 * values[3].size)
    path = tmp_path / "book.json"
    assert main(["codebook", "build", "--value-bits", "16", "--coded-bits", "10", "--from",
                 *map(str, files[:2]), "-o", str(path)]) == 0
    capsys.readouterr()
    out = run_json(capsys, "--format", "bf16", "--codebook", str(path), str(files[3]))
    (row,) = out["files"]
    book = HuffmanCodebook.load(path)
    assert row["bf16_huffman_k10"] == 1 - book.encode(values[3])[1] / (16 * values[3].size)
    assert row["bf16_huffman_k11"] is None and row["huffman_fixed"] is None
    assert main(["analyze", "--codebook", str(path), str(bundled_files()[0])]) != 0
    assert "codes 16-bit values" in capsys.readouterr().err
