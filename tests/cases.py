"""Helpers the test files share (not a test module): how a case that needs a block's
Verilator build is marked, how a fuzz report is shown when it fails, and the bf16 frames
the Huffman blocks of 16-bit values are tried on."""

import json

import numpy as np
import pytest

from linkcodec.bundled import bundled_bf16_files
from linkcodec.sim.contract import LARGE_LANES


def block_case(block, lanes, *values, id=None, group=None, slow=False):
    """A ``(block, lanes, *values)`` case on the xdist worker that holds the build
    (``group``, default ``<block>-<lanes>``), so that every case of one build runs there,
    one after another; lane counts of :data:`LARGE_LANES` and up, and cases marked
    ``slow``, are ``slow`` (``linkcodec bench --contract`` and ``pytest -m slow`` run
    them, ``make test`` does not)."""
    marks = [pytest.mark.xdist_group(group or f"{block}-{lanes}")]
    if lanes >= LARGE_LANES or slow:
        marks.append(pytest.mark.slow)
    return pytest.param(block, lanes, *values, marks=marks,
                        id=id or "-".join(map(str, (block, lanes, *values))))


def fuzz_summary(report):
    """An assertion message for a fuzz report: its counts, seeds and first mismatches."""
    shown = {key: report[key] for key in ("frames", "mismatches", "hangs", "hung_frames",
                                          "mismatches_by_kind", "runs", "examples")}
    return json.dumps(shown, default=str)[:3000]


def bf16_steps(kind="ffn1_grad", layer=4):
    """Steps 0-3 of a bundled bf16 tensor, flat uint16 arrays."""
    return [np.load(path).reshape(-1) for path in bundled_bf16_files(kind, layers=[layer])]


def frames_with_escapes(steps, rng):
    """Step 3 cut into frames of 0, 1 and many values, every bf16 pattern's corners, and
    random values (mostly escaped by a codebook of steps 0-2)."""
    late = steps[3]
    corners = np.array([0, 1, 0x7F80, 0x7FFF, 0x8000, 0xFFFF], dtype=np.uint16)
    return [late[:3000], np.zeros(0, np.uint16), late[3000:3001], corners,
            rng.integers(0, 1 << 16, 500).astype(np.uint16), late[3001:4500]]
