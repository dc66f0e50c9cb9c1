"""``linkcodec capture`` without torch: the run driven by a NumPy stand-in for torch and
sentence-transformers, so the file writing, delayed-scaling bookkeeping and manifest are
checked where the optional ``capture`` extra is not installed."""

import hashlib
import json
import types

import numpy as np
import pytest

from linkcodec import capture
from linkcodec.bundled import file_name
from linkcodec.golden.formats import e4m3_scale


class FakeTensor:
    """The few tensor methods capture calls, on a NumPy array."""

    def __init__(self, array):
        self.array = np.asarray(array)
        self.hooks = []

    shape = property(lambda self: self.array.shape)

    def view_as(self, other):
        return FakeTensor(self.array)

    def detach(self):
        return FakeTensor(self.array)

    def clone(self):
        return FakeTensor(self.array.copy())

    def register_hook(self, hook):
        self.hooks.append(hook)

    def reshape(self, *shape):
        return FakeTensor(self.array.reshape(*shape))

    def __getitem__(self, index):
        return FakeTensor(self.array[index.array if isinstance(index, FakeTensor) else index])

    def float(self):
        return FakeTensor(self.array.astype(np.float32))

    def numpy(self):
        return self.array

    def bool(self):
        return FakeTensor(self.array.astype(bool))

    def norm(self):
        return FakeTensor(np.sqrt((self.array.astype(np.float64) ** 2).sum()))

    def __float__(self):
        return float(self.array)


class FakeLinear:
    def __init__(self):
        self.pre_hooks = []

    def register_forward_pre_hook(self, hook):
        self.pre_hooks.append(hook)
        return types.SimpleNamespace(remove=lambda: self.pre_hooks.remove(hook))

    def __call__(self, x):
        args = (x,)
        for hook in list(self.pre_hooks):
            args = hook(self, args) or args
        return args[0]


class FakeRun:
    """A 2-layer "model" whose activations grow with every optimizer step (so delayed
    scaling saturates) and whose backward pass sends random gradients to the hooks."""

    def __init__(self, model_dir):
        self.rng, self.updates, self.inputs = None, 0, []
        model_dir.mkdir(exist_ok=True)
        (model_dir / "model.safetensors").write_bytes(b"weights")
        run = self

        class Model:
            def __init__(self, path, device):
                self.layers = [types.SimpleNamespace(
                    intermediate=types.SimpleNamespace(dense=FakeLinear()),
                    output=types.SimpleNamespace(dense=FakeLinear())) for _ in range(2)]
                self.config = types.SimpleNamespace(
                    architectures=["BertModel"], num_hidden_layers=2, hidden_size=8,
                    intermediate_size=32, hidden_act="gelu")
                self.max_seq_length = 128
                self.params = [types.SimpleNamespace(grad=None) for _ in range(3)]
                run.model = self

            def __getitem__(self, index):
                encoder = types.SimpleNamespace(layer=self.layers)
                return types.SimpleNamespace(auto_model=types.SimpleNamespace(
                    encoder=encoder, config=self.config))

            def tokenize(self, texts):
                lengths = [min(len(text.split()) + 2, 16) for text in texts]
                mask = [[1] * n + [0] * (max(lengths) - n) for n in lengths]
                return {"attention_mask": FakeTensor(np.array(mask))}

            def parameters(self):
                return iter(self.params)

            def train(self):
                pass

            def __call__(self, features):
                rows, width = features["attention_mask"].shape
                grow = 1 + 0.5 * run.updates
                run.inputs = []
                for layer in self.layers:
                    x = run.rng.standard_normal((rows, width, 8)) * grow
                    run.inputs.append(layer.intermediate.dense(FakeTensor(x)))
                    h = np.maximum(run.rng.standard_normal((rows, width, 32)), -0.17) * grow
                    run.inputs.append(layer.output.dense(FakeTensor(h)))
                return {"sentence_embedding": FakeTensor(np.zeros((rows, 4)))}

        class Loss:
            def __init__(self, model, scale):
                pass

            def compute_loss_from_embeddings(self, embeddings, labels):
                loss = FakeTensor(np.float32(1 + run.rng.random()))
                loss.backward = run.backward
                return loss

        def adamw(params, lr):
            params = list(params)
            return types.SimpleNamespace(
                zero_grad=lambda: [setattr(p, "grad", None) for p in params],
                step=lambda: setattr(run, "updates", run.updates + 1))

        def manual_seed(seed):
            self.rng, self.updates = np.random.default_rng(seed), 0

        torch = types.SimpleNamespace(
            __version__="fake", get_num_threads=lambda: 1, set_num_threads=lambda n: None,
            are_deterministic_algorithms_enabled=lambda: False,
            use_deterministic_algorithms=lambda flag: None, manual_seed=manual_seed,
            optim=types.SimpleNamespace(AdamW=adamw),
            linalg=types.SimpleNamespace(vector_norm=lambda t: t.norm()),
            stack=lambda ts: FakeTensor([float(t) for t in ts]),
            from_numpy=FakeTensor)
        package = types.SimpleNamespace(get_model_path=lambda: str(model_dir))
        self.deps = (torch, package, Model, Loss)

    def backward(self):
        for alias in self.inputs:
            grad = FakeTensor(self.rng.standard_normal(alias.shape) * 1e-3)
            for hook in alias.hooks:
                hook(grad)
        for param in self.model.params:
            param.grad = FakeTensor(self.rng.standard_normal(4))


def run_capture(tmp_path, monkeypatch, name, **options):
    out = tmp_path / name
    out.mkdir()
    (out / "minilm_l7_ffn1_act_s0.npy").write_bytes(b"stale")
    fake = FakeRun(tmp_path / "model")
    # The one seam to the optional dependencies: hand capture the stand-ins instead.
    monkeypatch.setattr(capture, "_import_capture_deps", lambda: fake.deps)
    return out, capture.capture(out, **options)


def test_files_and_manifest_agree(tmp_path, monkeypatch):
    out, manifest = run_capture(tmp_path, monkeypatch, "current", tokens=5, pairs=3, steps=2)
    names = sorted(path.name for path in out.glob("*.npy"))
    assert names == sorted(file_name(layer, kind, step) for layer in range(2)
                           for kind in capture.KINDS for step in range(2))   # stale one gone
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert manifest["tensors"]["layers"] == [0, 1] and manifest["tensors"]["steps"] == [0, 1]
    assert "scaling" not in manifest["tensors"]
    for entry in manifest["files"]:
        bits = np.load(out / entry["file"])
        assert bits.dtype == np.uint8 and list(bits.shape) == entry["shape"]
        assert entry["shape"][0] == 5
        assert entry["sha256"] == hashlib.sha256((out / entry["file"]).read_bytes()).hexdigest()
        assert entry["scale"] == e4m3_scale(entry["amax"]) and "saturated" not in entry
    for step in manifest["steps"]:
        assert step["tokens_kept"] == 5 == len(step["kept_tokens_row_position"])
        assert step["pairs"] == 3 and step["sentences"] == 6


def test_delayed_scaling_keeps_each_tensors_history(tmp_path, monkeypatch):
    """Step 0 of a delayed capture equals the current one; later steps are scaled by the
    largest amax so far, and the activations that outgrow it saturate."""
    options = dict(tokens=1000, pairs=3, steps=3, seed=4)
    current_out, _ = run_capture(tmp_path, monkeypatch, "current", **options)
    out, manifest = run_capture(tmp_path, monkeypatch, "delayed", scaling="delayed", **options)
    entries = {(e["layer"], e["kind"], e["step"]): e for e in manifest["files"]}
    for (layer, kind, step), entry in entries.items():
        earlier = [entries[layer, kind, s]["amax"] for s in range(step)]
        assert entry["scale_amax"] == max(earlier or [entry["amax"]])
        assert entry["scale"] == e4m3_scale(entry["scale_amax"])
        assert entry["scale_amax_steps"] == (list(range(step)) if step else [0])
        assert entry["saturated_kept"] == entry["saturated"]     # every token kept
        if step == 0:
            assert (out / entry["file"]).read_bytes() == (current_out / entry["file"]).read_bytes()
    assert entries[0, "ffn1_act", 2]["saturated"] > 0
    totals = manifest["tensors"]["scaling"]
    assert totals["saturated_values"] == sum(e["saturated"] for e in entries.values()) > 0


def test_arguments_are_checked_before_anything_runs(tmp_path):
    for options, message in [({"tokens": 0}, "tokens must be at least 1"),
                             ({"pairs": 1}, "pairs must be at least 2"),
                             ({"steps": 0}, "steps must be at least 1"),
                             ({"scaling": "lazy"}, "scaling must be one of current, delayed")]:
        with pytest.raises(ValueError, match=message):
            capture.capture(tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()


def test_bf16_capture_adds_files_and_leaves_the_e4m3_sample_alone(tmp_path, monkeypatch):
    """`capture --bf16` repeats the sample's run: it writes the bf16 files of the kept
    layers (the first rows of the e4m3 files, the values rounded to bf16) and a bf16
    section, checks the e4m3 bytes it would have written against the manifest, and
    changes no e4m3 file and no other part of the manifest."""
    options = dict(tokens=5, pairs=3, steps=2)
    out, manifest = run_capture(tmp_path, monkeypatch, "current", **options)
    before = {path.name: path.read_bytes() for path in out.glob("*.npy")}
    fake = FakeRun(tmp_path / "model2")
    monkeypatch.setattr(capture, "_import_capture_deps", lambda: fake.deps)
    added = capture.capture(out, bf16=True, **options)
    assert {path.name: path.read_bytes() for path in out.glob("minilm_l*.npy")} == before
    assert {key: value for key, value in added.items() if key != "bf16"} == manifest
    assert json.loads((out / "manifest.json").read_text()) == added
    section = added["bf16"]
    assert section["e4m3_reproduced"] == {"files": len(before), "of": len(before),
                                          "differing": []}
    layers = [layer for layer in capture.BF16_LAYERS if layer < 2]
    assert sorted(entry["file"] for entry in section["files"]) == sorted(
        capture.bf16_file_name(layer, kind, step)
        for layer in layers for kind in capture.KINDS for step in range(2))
    for entry in section["files"]:
        bits = np.load(out / entry["file"])
        assert bits.dtype == np.uint16 and list(bits.shape) == entry["shape"]
        assert bits.shape[0] == min(5, capture.BF16_TOKENS)
        assert entry["sha256"] == hashlib.sha256((out / entry["file"]).read_bytes()).hexdigest()
        # the same values as the e4m3 file's rows: same signs, same zeros
        e4m3 = np.load(out / entry["e4m3_file"])[:bits.shape[0]]
        assert np.array_equal(bits >> 15, (e4m3 >> 7).astype(np.uint16))
    # refused: no sample to add to, or a sample captured with other arguments
    with pytest.raises(ValueError, match="does not exist"):
        capture.capture(tmp_path / "empty", bf16=True, **options)
    with pytest.raises(ValueError, match="--bf16 must repeat that capture's run"):
        capture.capture(out, bf16=True, tokens=6, pairs=3, steps=2)
