"""The bundled real tensor sample and the helpers that find its files."""

import numpy as np
import pytest

from linkcodec.bundled import (DATA_DIR, KINDS, LAYERS, STEPS, bundled_files, bundled_scale,
                               file_name, manifest, tensor_kind)
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
