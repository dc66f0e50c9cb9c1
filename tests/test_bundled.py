"""The bundled real tensor sample and the helpers that find its files."""

import numpy as np
import pytest

from linkcodec.bundled import (DATA_DIR, KINDS, LAYERS, STEPS, bundled_bf16_files,
                               bundled_files, bundled_scale, file_name, manifest, tensor_kind)
from linkcodec.golden.formats import e4m3_scale


def test_bundled_sample_is_real_and_small():
    files = bundled_files()
    assert len(files) == 96             # 6 layers x 4 kinds x 4 training steps
    assert sum(path.stat().st_size for path in files) <= 8 * 2**20
    kinds = {tensor_kind(path) for path in files}
    assert kinds == {"ffn1_act", "ffn2_act", "ffn1_grad", "ffn2_grad"}
    for path in files:
        assert np.load(path).dtype == np.uint8


def test_kinds_layers_and_steps_are_the_manifests():
    tensors = manifest()["tensors"]
    assert list(LAYERS) == tensors["layers"] and list(STEPS) == tensors["steps"]
    assert set(KINDS) == set(tensors["kinds"])
    assert tensors["naming"] == "minilm_l{layer}_{kind}_s{step}.npy"
    assert len(bundled_files()) == len(LAYERS) * len(KINDS) * len(STEPS)
    assert manifest() is manifest()     # read once


def test_files_filter_and_sort():
    paths = bundled_files("ffn2_grad", layers=[1, 4], steps=[3, 0])
    assert [path.name for path in paths] == [
        file_name(layer, "ffn2_grad", step) for layer in (1, 4) for step in (0, 3)]
    assert all(path.parent == DATA_DIR for path in paths)
    assert bundled_files("ffn9_act") == []


def test_scale_follows_the_manifest_amax():
    for entry in manifest()["files"][:8]:
        assert bundled_scale(DATA_DIR / entry["file"]) == e4m3_scale(entry["amax"])
    with pytest.raises(KeyError, match="other.npy is not a file of the bundled sample"):
        bundled_scale("other.npy")


def test_tensor_kind_of_other_files_is_the_stem():
    assert tensor_kind("x/minilm_l3_ffn2_act_s0.npy") == "ffn2_act"
    assert tensor_kind("x/activations.npy") == "activations"


def test_every_file_matches_its_manifest_hash():
    """No bundled file changed since its capture: e4m3 and bf16 alike."""
    import hashlib

    entries = manifest()["files"] + manifest()["bf16"]["files"]
    assert len(entries) == 96 + 32
    for entry in entries:
        digest = hashlib.sha256((DATA_DIR / entry["file"]).read_bytes()).hexdigest()
        assert digest == entry["sha256"], entry["file"]


def test_bf16_tensors_are_the_e4m3_tensors_rows_and_fit_their_budget():
    """32 bf16 files (layers 1 and 4, every kind and step), at most 2 MB, each the first
    rows of its e4m3 file before the cast: the same signs, and the e4m3 cast of the bf16
    values at the file's scale gives the e4m3 bytes, or (rounded twice: to bf16, then to
    e4m3; about 1.5 % of values) their neighbour."""
    import ml_dtypes

    section = manifest()["bf16"]
    files = bundled_bf16_files()
    assert [path.name for path in files] == sorted(
        (entry["file"] for entry in section["files"]),
        key=lambda name: [int(part[1:]) if part[1:].isdigit() else part
                          for part in name.removesuffix(".npy").split("_")])
    assert len(files) == 2 * 4 * 4 and section["layers"] == [1, 4]
    assert sum(path.stat().st_size for path in files) <= 2 * 10**6
    assert bundled_bf16_files("ffn2_act", layers=[4], steps=[0])[0].name == \
        "minilm_bf16_l4_ffn2_act_s0.npy"
    for entry in section["files"]:
        bits = np.load(DATA_DIR / entry["file"])
        e4m3 = np.load(DATA_DIR / entry["e4m3_file"])[:bits.shape[0]]
        assert bits.dtype == np.uint16 and bits.shape == (32, e4m3.shape[1])
        assert np.array_equal(bits >> 15, (e4m3 >> 7).astype(np.uint16))
        scale = bundled_scale(DATA_DIR / entry["e4m3_file"])
        values = bits.view(ml_dtypes.bfloat16).astype(np.float32) * np.float32(scale)
        recast = values.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        steps = np.abs((recast & 0x7F).astype(int) - (e4m3 & 0x7F).astype(int))
        assert steps.max() <= 1 and np.mean(steps == 0) > 0.97, entry["file"]
