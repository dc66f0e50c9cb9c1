"""The bundled real tensor sample (``linkcodec/data``, see docs/data.md).

``linkcodec capture`` wrote it: the FFN activations and gradients of the 6 layers of
all-MiniLM-L6-v2 over 4 consecutive fine-tuning steps, one e4m3 ``uint8`` file a tensor,
named ``minilm_l{layer}_{kind}_s{step}.npy``, and a ``manifest.json`` that says where each
came from and the scale it was cast with.
"""

import functools
import json
import re
from pathlib import Path

__all__ = ["DATA_DIR", "FILE_NAME", "BF16_FILE_NAME", "KINDS", "LAYERS", "STEPS", "file_name",
           "manifest", "bundled_files", "bundled_bf16_files", "bundled_scale", "tensor_kind"]

#: The folder holding the sample's ``.npy`` files and ``manifest.json``.
DATA_DIR = Path(__file__).resolve().parent / "data"

#: How a captured tensor's file is named (``str.format`` fields: layer, kind, step).
FILE_NAME = "minilm_l{layer}_{kind}_s{step}.npy"

#: Tensor kinds in the order tables list them: activations first, then gradients.
KINDS = ("ffn1_act", "ffn2_act", "ffn1_grad", "ffn2_grad")
#: The encoder layers and the training steps the sample holds (as its manifest says).
LAYERS = tuple(range(6))
STEPS = tuple(range(4))

_FILE_STEM = re.compile(r"minilm_l(?P<layer>\d+)_(?P<kind>ffn\d_(?:act|grad))_s(?P<step>\d+)$")
_BF16_STEM = re.compile(
    r"minilm_bf16_l(?P<layer>\d+)_(?P<kind>ffn\d_(?:act|grad))_s(?P<step>\d+)$")

#: How a bf16 tensor's file is named (``linkcodec capture --bf16``): ``uint16`` bf16 bit
#: patterns of the same run as the e4m3 files, the first 32 rows of the e4m3 file's.
BF16_FILE_NAME = "minilm_bf16_l{layer}_{kind}_s{step}.npy"


def file_name(layer, kind, step):
    """``minilm_l{layer}_{kind}_s{step}.npy``, the name of one captured tensor."""
    return FILE_NAME.format(layer=layer, kind=kind, step=step)


@functools.cache
def manifest():
    """The sample's ``manifest.json``, read once. The dict is shared: do not change it."""
    return json.loads((DATA_DIR / "manifest.json").read_text())


def bundled_files(kind=None, layers=None, steps=None):
    """Bundled ``.npy`` files (``minilm_l{layer}_{kind}_s{step}.npy``), optionally only
    one kind (``ffn2_act`` ...), some layers and some training steps; sorted by layer,
    kind, step."""
    return _matching("minilm_l*_*.npy", _FILE_STEM, kind, layers, steps)


def _matching(pattern, stem, kind, layers, steps):
    found = []
    for path in DATA_DIR.glob(pattern):
        match = stem.match(path.stem)
        if match is None:
            continue
        layer, step = int(match["layer"]), int(match["step"])
        if ((kind is None or match["kind"] == kind)
                and (layers is None or layer in layers)
                and (steps is None or step in steps)):
            found.append(((layer, match["kind"], step), path))
    return [path for _, path in sorted(found)]


def bundled_bf16_files(kind=None, layers=None, steps=None):
    """Bundled bf16 ``.npy`` files (``minilm_bf16_l{layer}_{kind}_s{step}.npy``), chosen
    and sorted as :func:`bundled_files` does."""
    return _matching("minilm_bf16_l*_*.npy", _BF16_STEM, kind, layers, steps)


@functools.cache
def _scales_by_file():
    return {entry["file"]: float(entry["scale"]) for entry in manifest()["files"]}


def bundled_scale(path):
    """The factor a bundled file's tensor was multiplied by before its e4m3 cast (448 /
    amax of that step), from the sample's ``manifest.json``."""
    try:
        return _scales_by_file()[Path(path).name]
    except KeyError:
        raise KeyError(f"{Path(path).name} is not a file of the bundled sample") from None


def tensor_kind(path):
    """``ffn2_act`` for ``minilm_l3_ffn2_act_s0.npy``; the file's stem for other files."""
    match = _FILE_STEM.match(Path(path).stem)
    return match["kind"] if match else Path(path).stem
